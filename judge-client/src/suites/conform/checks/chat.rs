//! The Chat Completions checks (`POST /v1/chat/completions`).

use serde_json::{Value, json};

use super::{
    LONG_PROMPT, Probe, TOOL_DESCRIPTION, TOOL_NAME, TOOL_PROMPT, TOOL_RESULT, Verdict, result,
    tool_parameters,
};
use crate::suites::conform::events::{chat_chunks, chat_done};
use crate::suites::conform::shape::{self, CHAT_COMPLETION, CHAT_TOOL_CALL, CHAT_USAGE, require};
use crate::suites::conform::sse;
use crate::suites::conform::{CheckResult, Exchange};

const PATH: &str = "/chat/completions";
const FINISH_REASONS: &[&str] = &[
    "stop",
    "length",
    "tool_calls",
    "content_filter",
    "function_call",
];

/// Every chat check, in catalogue order.
pub async fn run(probe: &Probe<'_>) -> Vec<CheckResult> {
    let mut out = basic(probe).await;
    out.extend(stream(probe).await);
    out.push(stream_usage(probe).await);
    out.push(limit(probe, "max_tokens", "chat.max_tokens").await);
    out.push(limit(probe, "max_completion_tokens", "chat.max_completion_tokens").await);
    out.extend(tools(probe).await);
    out.push(malformed_json(probe).await);
    out.push(missing_messages(probe).await);
    out
}

fn user(probe: &Probe<'_>, text: &str) -> Value {
    json!({"model": probe.model, "messages": [{"role": "user", "content": text}]})
}

/// `chat.json_shape` and `chat.usage` on one plain completion.
async fn basic(probe: &Probe<'_>) -> Vec<CheckResult> {
    let sent = probe
        .post(PATH, &user(probe, "Say hello in one short sentence."))
        .await;
    let body = sent.ok_json();
    let shape = body.clone().and_then(|b| completion_shape(&b));
    let usage = body.and_then(|b| usage_consistent(&b));
    vec![
        result("chat.json_shape", shape, &[&sent.exchange]),
        result("chat.usage", usage, &[&sent.exchange]),
    ]
}

fn completion_shape(body: &Value) -> Result<(), String> {
    require(body, CHAT_COMPLETION, "the chat completion")?;
    if body["object"] != "chat.completion" {
        return Err(format!(
            "object is {}, not \"chat.completion\"",
            body["object"]
        ));
    }
    let choice = &body["choices"][0];
    if choice["message"]["role"] != "assistant" {
        return Err(format!(
            "choices[0].message.role is {}, not \"assistant\"",
            choice["message"]["role"]
        ));
    }
    if !choice["message"]["content"].is_string() {
        return Err(format!(
            "choices[0].message.content is {}, not the reply's text",
            choice["message"]["content"]
        ));
    }
    let finish = choice["finish_reason"].as_str().unwrap_or_default();
    if !FINISH_REASONS.contains(&finish) {
        return Err(format!(
            "finish_reason {finish:?} is not one of {FINISH_REASONS:?}"
        ));
    }
    Ok(())
}

/// `usage` is there and adds up.
fn usage_consistent(body: &Value) -> Result<(), String> {
    shape::usage_adds_up(body, CHAT_USAGE, "prompt_tokens", "completion_tokens")
}

/// `chat.stream_shape`, `chat.sse_framing` and `chat.stream_done` on one stream.
async fn stream(probe: &Probe<'_>) -> Vec<CheckResult> {
    let mut body = user(probe, "Say hello in one short sentence.");
    body["stream"] = json!(true);
    let sent = probe.post(PATH, &body).await;
    let exchanges = [&sent.exchange];
    let parsed = sent.ok_stream().map(sse::parse);
    let shape = parsed.clone().and_then(|s| {
        let chunks = chat_chunks(&s)?;
        let text: String = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
            .collect();
        let finish = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["finish_reason"].as_str())
            .next_back();
        match finish {
            None => Err("no chunk carries a finish_reason".to_owned()),
            Some(_) if text.trim().is_empty() => {
                Err("the content deltas add up to no text".to_owned())
            }
            Some(f) if !FINISH_REASONS.contains(&f) => Err(format!(
                "finish_reason {f:?} is not one of {FINISH_REASONS:?}"
            )),
            Some(_) => Ok(()),
        }
    });
    let framing = parsed.clone().and_then(|s| match s.problems.as_slice() {
        [] => Ok(()),
        problems => Err(problems.join("; ")),
    });
    let done = parsed.and_then(|s| chat_done(&s));
    vec![
        result("chat.stream_shape", shape, &exchanges),
        result("chat.sse_framing", framing, &exchanges),
        result("chat.stream_done", done, &exchanges),
    ]
}

/// `chat.stream_usage`: the usage chunk `stream_options.include_usage` asks for.
async fn stream_usage(probe: &Probe<'_>) -> CheckResult {
    let mut body = user(probe, "Say hello in one short sentence.");
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let sent = probe.post(PATH, &body).await;
    let verdict = sent.ok_stream().map(sse::parse).and_then(|s| {
        let chunks = chat_chunks(&s)?;
        let last = chunks.last().expect("chat_chunks returns at least one");
        let choices = shape::clip(&last["choices"].to_string());
        match (last.get("usage").is_some_and(|u| u.is_object()), last["choices"].as_array()) {
            (true, Some(c)) if c.is_empty() => {}
            (true, _) => {
                return Err(format!(
                    "the usage arrives on a chunk with choices {choices}; OpenAI sends it on a chunk of its own with choices []"
                ));
            }
            (false, _) => {
                return Err(format!(
                    "no usage chunk: the last chunk before [DONE] has no usage (choices {choices})"
                ));
            }
        }
        usage_consistent(last)
    });
    result("chat.stream_usage", verdict, &[&sent.exchange])
}

/// `max_tokens` or `max_completion_tokens` honoured.
async fn limit(probe: &Probe<'_>, field: &str, name: &str) -> CheckResult {
    const LIMIT: u64 = 8;
    let mut body = user(probe, LONG_PROMPT);
    body[field] = json!(LIMIT);
    let sent = probe.post(PATH, &body).await;
    let verdict = match sent.ok_json() {
        Err(reason) => Verdict::Fail(reason),
        Ok(body) => match require(&body, CHAT_USAGE, "usage (needed to verify the limit)") {
            Err(reason) => Verdict::Fail(reason),
            Ok(()) => {
                let used = body["usage"]["completion_tokens"]
                    .as_u64()
                    .unwrap_or_default();
                let finish = body["choices"][0]["finish_reason"]
                    .as_str()
                    .unwrap_or_default();
                if used > LIMIT {
                    Verdict::Fail(format!(
                        "{field} {LIMIT} but usage.completion_tokens is {used} (finish_reason {finish:?})"
                    ))
                } else if finish == "length" {
                    Verdict::Pass
                } else if used == LIMIT {
                    Verdict::Fail(format!(
                        "the reply used all {LIMIT} tokens of {field} but finish_reason is {finish:?}, not \"length\""
                    ))
                } else {
                    Verdict::PassNote(format!(
                        "the reply ended on its own within the limit ({used} of {LIMIT} tokens, finish_reason {finish:?})"
                    ))
                }
            }
        },
    };
    result(name, verdict, &[&sent.exchange])
}

/// `chat.tool_call` (the model's call of a forced tool) and `chat.tool_round_trip` (its result
/// sent back). A model that answers with text instead is not conformance evidence either way, so
/// `chat.tool_call` is then not applicable, and the round trip uses a call made up by the judge.
async fn tools(probe: &Probe<'_>) -> Vec<CheckResult> {
    let tools = json!([{
        "type": "function",
        "function": {"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "parameters": tool_parameters()}
    }]);
    let mut body = user(probe, TOOL_PROMPT);
    body["tools"] = tools.clone();
    body["tool_choice"] = json!({"type": "function", "function": {"name": TOOL_NAME}});
    let sent = probe.post(PATH, &body).await;
    let (call_verdict, call) = match sent.ok_json() {
        Err(reason) => (Verdict::Fail(reason), None),
        Ok(answer) => judge_tool_call(&answer),
    };
    let mut results = vec![result("chat.tool_call", call_verdict, &[&sent.exchange])];

    let (call, made_up) = match call {
        Some(call) => (call, false),
        None => (
            json!({"id": "call_conform_1", "type": "function",
                   "function": {"name": TOOL_NAME, "arguments": "{\"city\":\"Paris\"}"}}),
            true,
        ),
    };
    let call_id = call["id"].as_str().unwrap_or_default().to_owned();
    let round_trip = json!({
        "model": probe.model,
        "tools": tools,
        "messages": [
            {"role": "user", "content": TOOL_PROMPT},
            {"role": "assistant", "content": null, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": TOOL_RESULT}
        ]
    });
    let back = probe.post(PATH, &round_trip).await;
    let mut exchanges: Vec<&Exchange> = Vec::new();
    if !made_up {
        exchanges.push(&sent.exchange);
    }
    exchanges.push(&back.exchange);
    let verdict = match back.ok_json().and_then(|b| completion_shape(&b)) {
        Err(reason) => Verdict::Fail(reason),
        Ok(()) if made_up => Verdict::PassNote(
            "the model made no call, so the judge sent back a call of its own making".to_owned(),
        ),
        Ok(()) => Verdict::Pass,
    };
    results.push(result("chat.tool_round_trip", verdict, &exchanges));
    results
}

/// The verdict on a forced tool call, and the call to send back.
fn judge_tool_call(answer: &Value) -> (Verdict, Option<Value>) {
    let message = &answer["choices"][0]["message"];
    let Some(call) = message["tool_calls"].as_array().and_then(|c| c.first()) else {
        return (
            Verdict::NotApplicable(format!(
                "the model answered with text instead of calling the forced tool {TOOL_NAME} \
                 (a model that cannot call tools; inconclusive): {}",
                shape::clip(&message["content"].to_string())
            )),
            None,
        );
    };
    let verdict = require(call, CHAT_TOOL_CALL, "tool_calls[0]").and_then(|()| {
        if call["type"] != "function" {
            return Err(format!(
                "tool_calls[0].type is {}, not \"function\"",
                call["type"]
            ));
        }
        if call["function"]["name"] != TOOL_NAME {
            return Err(format!(
                "the forced tool is {TOOL_NAME} but the call names {}",
                call["function"]["name"]
            ));
        }
        let arguments = call["function"]["arguments"].as_str().unwrap_or_default();
        serde_json::from_str::<Value>(arguments)
            .map_err(|e| format!("the arguments {arguments:?} are not JSON ({e})"))?;
        // OpenAI says "stop" when tool_choice names the function, "tool_calls" otherwise.
        let finish = answer["choices"][0]["finish_reason"]
            .as_str()
            .unwrap_or_default();
        if !matches!(finish, "tool_calls" | "stop") {
            return Err(format!("finish_reason is {finish:?} for a tool call"));
        }
        Ok(())
    });
    (verdict.into(), Some(call.clone()))
}

async fn malformed_json(probe: &Probe<'_>) -> CheckResult {
    let sent = probe
        .send(
            awc::http::Method::POST,
            PATH,
            Some(br#"{"model": "x", "messages": [{"role": "user", "content": "hi"}"#.to_vec()),
        )
        .await;
    result(
        "chat.error_malformed_json",
        sent.client_error(),
        &[&sent.exchange],
    )
}

async fn missing_messages(probe: &Probe<'_>) -> CheckResult {
    let sent = probe.post(PATH, &json!({"model": probe.model})).await;
    result(
        "chat.error_missing_messages",
        sent.client_error(),
        &[&sent.exchange],
    )
}
