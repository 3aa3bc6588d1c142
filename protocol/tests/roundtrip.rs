//! Round trips of real payload shapes: parse with the protocol types, serialize again, and compare
//! with the original JSON. `null` and an absent field mean the same on this wire, so both sides are
//! compared with null-valued keys removed; every other byte of meaning must survive.

use std::path::Path;

use pretty_assertions::assert_eq;
use protocol::openai::{
    ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, ErrorBody, ErrorCode, FinishReason,
    Role, ToolChoice,
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

fn fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn strip_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, strip_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(strip_nulls).collect()),
        other => other,
    }
}

fn round_trip<T: DeserializeOwned + Serialize>(name: &str) -> T {
    let original = fixture(name);
    let parsed: T = serde_json::from_value(original.clone())
        .unwrap_or_else(|e| panic!("{name} does not parse: {e}"));
    let again = serde_json::to_value(&parsed).unwrap();
    assert_eq!(strip_nulls(again), strip_nulls(original), "{name}");
    parsed
}

#[test]
fn request_keeps_unknown_fields_and_typed_tools() {
    let req: ChatCompletionRequest = round_trip("request_tools_and_unknown_fields.json");
    assert_eq!(req.model.as_deref(), Some("gpt-4o-mini"));
    assert!(req.is_stream() && req.wants_stream_usage());
    assert_eq!(req.token_limit(), Some(256));
    assert_eq!(req.messages[0].role, Role::Developer);
    assert_eq!(
        req.messages[1].text_content().as_deref(),
        Some("What's the weather in Boston?")
    );
    assert_eq!(req.messages[2].content, None);
    assert_eq!(
        req.messages[2].tool_calls.as_ref().unwrap()[0]
            .function
            .name,
        "get_weather"
    );
    assert_eq!(req.tools.as_ref().unwrap()[0].function.strict, Some(true));
    assert_eq!(req.tool_choice, Some(ToolChoice::Mode("auto".into())));
    for kept in ["parallel_tool_calls", "logit_bias", "metadata"] {
        assert!(req.extra.contains_key(kept), "{kept} was dropped");
    }
}

#[test]
fn request_with_named_tool_choice_and_legacy_max_tokens() {
    let req: ChatCompletionRequest = round_trip("request_named_tool_choice.json");
    assert!(matches!(req.tool_choice, Some(ToolChoice::Named(_))));
    assert_eq!(req.token_limit(), Some(16));
    assert!(!req.is_stream());
}

#[test]
fn completion_with_usage_details_and_vendor_fields() {
    let c: ChatCompletion = round_trip("completion_basic.json");
    assert_eq!(
        c.first_text().as_deref(),
        Some("Hello! How can I assist you today?")
    );
    assert_eq!(c.choices[0].finish_reason, Some(FinishReason::Stop));
    assert_eq!(c.usage.as_ref().unwrap().total_tokens, 29);
    assert!(c.extra.contains_key("service_tier"));
}

#[test]
fn completion_that_only_calls_tools() {
    let c: ChatCompletion = round_trip("completion_tool_calls.json");
    assert_eq!(c.first_text(), None);
    assert_eq!(c.choices[0].finish_reason, Some(FinishReason::ToolCalls));
}

#[test]
fn stream_chunks_in_every_shape_servers_send() {
    let first: ChatCompletionChunk = round_trip("chunk_first_with_role.json");
    assert_eq!(first.choices[0].delta.role, Some(Role::Assistant));

    let no_role: ChatCompletionChunk = round_trip("chunk_first_without_role.json");
    assert_eq!(no_role.choices[0].delta.role, None);
    assert_eq!(no_role.choices[0].delta.content.as_deref(), Some("Hel"));

    let tool: ChatCompletionChunk = round_trip("chunk_tool_call_fragment.json");
    let call = &tool.choices[0].delta.tool_calls.as_ref().unwrap()[0];
    assert_eq!(call.index, 0);
    assert_eq!(call.id, None);

    let finish: ChatCompletionChunk = round_trip("chunk_finish.json");
    assert_eq!(finish.choices[0].finish_reason, Some(FinishReason::Stop));
    assert_eq!(finish.usage, None);

    let usage: ChatCompletionChunk = round_trip("chunk_usage_empty_choices.json");
    assert!(usage.choices.is_empty());
    assert_eq!(usage.usage.as_ref().unwrap().completion_tokens, 12);
}

#[test]
fn error_bodies_with_string_numeric_and_missing_codes() {
    let e: ErrorBody = round_trip("error_string_code.json");
    assert_eq!(
        e.error.code,
        Some(ErrorCode::Text("invalid_api_key".into()))
    );
    assert_eq!(e.error.kind, "invalid_request_error");

    let e: ErrorBody = round_trip("error_numeric_code.json");
    assert_eq!(e.error.code, Some(ErrorCode::Number(429)));

    let e: ErrorBody = serde_json::from_value(fixture("error_without_type.json")).unwrap();
    assert_eq!(e.error.kind, "");
    assert_eq!(e.error.code, None);
}

#[test]
fn unknown_finish_reason_is_kept_not_rejected() {
    let json = r#"{"index":0,"delta":{},"finish_reason":"eos_token"}"#;
    let choice: protocol::openai::ChunkChoice = serde_json::from_str(json).unwrap();
    assert_eq!(
        choice.finish_reason,
        Some(FinishReason::Other("eos_token".into()))
    );
    assert_eq!(serde_json::to_string(&choice).unwrap(), json);
}

#[test]
fn unknown_role_is_rejected_with_the_allowed_roles() {
    let err = serde_json::from_str::<ChatCompletionRequest>(
        r#"{"messages":[{"role":"robot","content":"hi"}]}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("robot") && err.contains("user"), "{err}");
}
