//! The checks: their catalogue (name, API, what each requires) and the [`Probe`] they send
//! requests through, which records every exchange for the report.
//!
//! A check function sends what it needs and returns one or more [`CheckResult`]s: checks that
//! judge the same answer from different angles (a stream's chunks, its framing, its `[DONE]`)
//! share one request.

pub mod a2a;
pub mod chat;
pub mod responses;

use awc::http::Method;
use serde_json::Value;

use super::{Api, CAPTURE_LIMIT, CheckResult, CheckStatus, Exchange};
use crate::endpoint::{RawAnswer, TargetClient, TargetError};

/// A check of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckSpec {
    pub name: &'static str,
    pub api: Api,
    pub title: &'static str,
}

const fn spec(name: &'static str, api: Api, title: &'static str) -> CheckSpec {
    CheckSpec { name, api, title }
}

/// Every check, in the order they run and are reported.
pub const CATALOGUE: &[CheckSpec] = &[
    spec(
        "chat.json_shape",
        Api::Chat,
        "A chat completion has id, object \"chat.completion\", created, model, and a choice with an assistant message and a finish_reason",
    ),
    spec(
        "chat.usage",
        Api::Chat,
        "usage has integer prompt_tokens, completion_tokens and total_tokens = prompt + completion",
    ),
    spec(
        "chat.stream_shape",
        Api::Chat,
        "A stream (text/event-stream) is chat.completion.chunk objects sharing one id whose content deltas add up to a reply ending with a finish_reason",
    ),
    spec(
        "chat.sse_framing",
        Api::Chat,
        "The stream is well-framed server-sent events (every event ends with a blank line)",
    ),
    spec(
        "chat.stream_done",
        Api::Chat,
        "The stream ends with exactly one `data: [DONE]`",
    ),
    spec(
        "chat.stream_usage",
        Api::Chat,
        "With stream_options.include_usage, a last chunk before [DONE] has choices [] and the usage",
    ),
    spec(
        "chat.max_tokens",
        Api::Chat,
        "max_tokens is honoured: completion_tokens <= the limit, finish_reason \"length\" when cut",
    ),
    spec(
        "chat.max_completion_tokens",
        Api::Chat,
        "max_completion_tokens is honoured like max_tokens",
    ),
    spec(
        "chat.tool_call",
        Api::Chat,
        "A function tool forced by tool_choice is called: tool_calls with id, type \"function\", the name and JSON arguments",
    ),
    spec(
        "chat.tool_round_trip",
        Api::Chat,
        "The tool result sent back (assistant tool_calls + a tool message) is answered with an assistant message",
    ),
    spec(
        "chat.error_malformed_json",
        Api::Chat,
        "Malformed JSON gets a 4xx in OpenAI's error shape",
    ),
    spec(
        "chat.error_missing_messages",
        Api::Chat,
        "A request without messages gets a 4xx in OpenAI's error shape",
    ),
    spec(
        "responses.json_shape",
        Api::Responses,
        "A response has id, object \"response\", created_at, status \"completed\", model, tools, tool_choice, parallel_tool_calls and an assistant message item with output_text parts",
    ),
    spec(
        "responses.usage",
        Api::Responses,
        "usage has input_tokens, output_tokens, total_tokens = input + output, and the cached/reasoning token details",
    ),
    spec(
        "responses.stream_events",
        Api::Responses,
        "A stream's events come in OpenAI's order (created, in_progress, output_item.added, content_part.added, output_text.delta..., output_text.done, content_part.done, output_item.done, completed) and the deltas add up to the text",
    ),
    spec(
        "responses.stream_sequence",
        Api::Responses,
        "Every streamed event has a sequence_number, strictly increasing",
    ),
    spec(
        "responses.sse_framing",
        Api::Responses,
        "The stream is well-framed server-sent events",
    ),
    spec(
        "responses.stream_usage",
        Api::Responses,
        "response.completed carries the final response with its usage",
    ),
    spec(
        "responses.max_output_tokens",
        Api::Responses,
        "max_output_tokens is honoured: output_tokens <= the limit, status \"incomplete\" (reason max_output_tokens) when cut",
    ),
    spec(
        "responses.function_call",
        Api::Responses,
        "A function tool forced by tool_choice is called: a function_call item with call_id, name and JSON arguments",
    ),
    spec(
        "responses.function_call_round_trip",
        Api::Responses,
        "function_call and function_call_output items sent back as input are answered with a message",
    ),
    spec(
        "responses.previous_response_id",
        Api::Responses,
        "A response chained with previous_response_id is answered and names its predecessor",
    ),
    spec(
        "responses.chain_function_call",
        Api::Responses,
        "A function_call_output chained with previous_response_id to the response holding its function_call is answered",
    ),
    spec(
        "responses.store_false",
        Api::Responses,
        "A response created with store: false cannot be retrieved (404)",
    ),
    spec(
        "responses.retrieve",
        Api::Responses,
        "GET /v1/responses/{id} returns the stored response",
    ),
    spec(
        "responses.input_items",
        Api::Responses,
        "GET /v1/responses/{id}/input_items lists the input as a list object",
    ),
    spec(
        "responses.delete",
        Api::Responses,
        "DELETE /v1/responses/{id} succeeds and the response is then 404",
    ),
    spec(
        "responses.error_malformed_json",
        Api::Responses,
        "Malformed JSON gets a 4xx in OpenAI's error shape",
    ),
    spec(
        "responses.error_missing_input",
        Api::Responses,
        "A request without input gets a 4xx in OpenAI's error shape",
    ),
    spec(
        "responses.error_unknown_previous_response_id",
        Api::Responses,
        "An unknown previous_response_id gets a 4xx in OpenAI's error shape",
    ),
    spec(
        "a2a.agent_card",
        Api::A2a,
        "The agent card at /.well-known/agent-card.json has name, description, version, capabilities, defaultInputModes, defaultOutputModes, skills (id, name, description, tags) and a JSONRPC interface of A2A 1.x in supportedInterfaces",
    ),
    spec(
        "a2a.send_message",
        Api::A2a,
        "SendMessage answers a JSON-RPC 2.0 result with the request's id holding exactly one of task or message; a message has a messageId, role ROLE_AGENT and parts of one content each",
    ),
    spec(
        "a2a.task_state",
        Api::A2a,
        "A returned task has an id, the message's contextId and a TASK_STATE_ name; a blocking SendMessage returns it terminal or interrupted",
    ),
    spec(
        "a2a.get_task",
        Api::A2a,
        "GetTask of the returned task answers that task (same id and contextId; a terminal state unchanged)",
    ),
    spec(
        "a2a.cancel_terminal",
        Api::A2a,
        "CancelTask of a terminal task gets TaskNotCancelableError (-32002)",
    ),
    spec(
        "a2a.stream_events",
        Api::A2a,
        "SendStreamingMessage (the card declares streaming) answers text/event-stream of JSON-RPC results with the request's id: a message alone, or a task then updates of that task, the final event (terminal or interrupted state) last",
    ),
    spec(
        "a2a.sse_framing",
        Api::A2a,
        "The stream is well-framed server-sent events",
    ),
    spec(
        "a2a.stream_unsupported",
        Api::A2a,
        "SendStreamingMessage to an agent whose card does not declare streaming gets UnsupportedOperationError (-32004)",
    ),
    spec(
        "a2a.error_malformed_json",
        Api::A2a,
        "Malformed JSON gets the JSON-RPC parse error (-32700) with id null",
    ),
    spec(
        "a2a.error_invalid_request",
        Api::A2a,
        "A request object without a method gets the JSON-RPC invalid request error (-32600)",
    ),
    spec(
        "a2a.error_unknown_method",
        Api::A2a,
        "An unknown method gets the JSON-RPC method-not-found error (-32601)",
    ),
    spec(
        "a2a.error_invalid_params",
        Api::A2a,
        "SendMessage without a message gets the JSON-RPC invalid params error (-32602)",
    ),
    spec(
        "a2a.error_task_not_found",
        Api::A2a,
        "GetTask of an unknown id gets TaskNotFoundError (-32001)",
    ),
    spec(
        "a2a.error_version_not_supported",
        Api::A2a,
        "A request with A2A-Version 99.0 gets VersionNotSupportedError (-32009)",
    ),
];

/// The catalogue entry named `name`.
pub fn find(name: &str) -> &'static CheckSpec {
    CATALOGUE
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("check {name} is not in the catalogue"))
}

/// How a check came out, before its exchanges are attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    /// A pass with something worth saying (e.g. the answer was not cut by the limit).
    PassNote(String),
    Fail(String),
    NotApplicable(String),
}

impl From<Result<(), String>> for Verdict {
    fn from(outcome: Result<(), String>) -> Self {
        match outcome {
            Ok(()) => Verdict::Pass,
            Err(reason) => Verdict::Fail(reason),
        }
    }
}

/// The result of check `name` with `exchanges` attached.
pub fn result(name: &str, verdict: impl Into<Verdict>, exchanges: &[&Exchange]) -> CheckResult {
    let spec = find(name);
    let (status, reason) = match verdict.into() {
        Verdict::Pass => (CheckStatus::Pass, None),
        Verdict::PassNote(note) => (CheckStatus::Pass, Some(note)),
        Verdict::Fail(reason) => (CheckStatus::Fail, Some(reason)),
        Verdict::NotApplicable(reason) => (CheckStatus::NotApplicable, Some(reason)),
    };
    CheckResult {
        name: spec.name.to_owned(),
        api: spec.api,
        title: spec.title.to_owned(),
        status,
        reason,
        exchanges: exchanges.iter().map(|e| (*e).clone()).collect(),
    }
}

/// One request and what came back.
pub struct Sent {
    pub exchange: Exchange,
    pub answer: Result<RawAnswer, TargetError>,
}

impl Sent {
    pub fn status(&self) -> Option<u16> {
        self.answer.as_ref().ok().map(|a| a.status)
    }

    /// The answer, when it is a 2xx; else why not.
    fn ok_answer(&self) -> Result<&RawAnswer, String> {
        let answer = self.answer.as_ref().map_err(|e| e.to_string())?;
        if (200..300).contains(&answer.status) {
            return Ok(answer);
        }
        Err(format!(
            "{} {} answered HTTP {}: {}",
            self.exchange.method,
            self.exchange.path,
            answer.status,
            super::shape::clip(&String::from_utf8_lossy(&answer.body))
        ))
    }

    /// The body as JSON, when the answer is a 2xx JSON document; else why not.
    pub fn ok_json(&self) -> Result<Value, String> {
        let answer = self.ok_answer()?;
        serde_json::from_slice(&answer.body).map_err(|e| {
            format!(
                "{} {} answered a body that is not JSON ({e}): {}",
                self.exchange.method,
                self.exchange.path,
                super::shape::clip(&String::from_utf8_lossy(&answer.body))
            )
        })
    }

    /// The raw 2xx body of a stream, after checking it is `text/event-stream`.
    pub fn ok_stream(&self) -> Result<&[u8], String> {
        let answer = self.ok_answer()?;
        let content_type = answer.content_type.as_deref().unwrap_or("");
        if !content_type.starts_with("text/event-stream") {
            return Err(format!(
                "the stream's Content-Type is {content_type:?}, not text/event-stream"
            ));
        }
        Ok(&answer.body)
    }

    /// A 4xx answer in OpenAI's error shape.
    pub fn client_error(&self) -> Result<(), String> {
        let answer = self.answer.as_ref().map_err(|e| e.to_string())?;
        if !(400..500).contains(&answer.status) {
            return Err(format!("expected a 4xx status, got HTTP {}", answer.status));
        }
        let body: Value = serde_json::from_slice(&answer.body).map_err(|e| {
            format!(
                "HTTP {} but the body is not JSON ({e}): {}",
                answer.status,
                super::shape::clip(&String::from_utf8_lossy(&answer.body))
            )
        })?;
        super::shape::require(&body, super::shape::ERROR, "the error body")
    }
}

/// Sends the checks' requests through the judge's target client (its timeout and 429 retries)
/// and records each exchange.
pub struct Probe<'a> {
    pub client: &'a TargetClient,
    pub model: String,
}

impl Probe<'_> {
    pub async fn send(&self, method: Method, path: &str, body: Option<Vec<u8>>) -> Sent {
        let request_body = body.as_deref().map(capture);
        let answer = self.client.raw(method.clone(), path, body).await;
        let exchange = Exchange {
            method: method.to_string(),
            path: format!("/v1{path}"),
            request_body,
            status: answer.as_ref().ok().map(|a| a.status),
            content_type: answer.as_ref().ok().and_then(|a| a.content_type.clone()),
            response_body: answer.as_ref().ok().map(|a| capture(&a.body)),
            error: answer.as_ref().err().map(ToString::to_string),
        };
        Sent { exchange, answer }
    }

    pub async fn post(&self, path: &str, body: &Value) -> Sent {
        self.send(Method::POST, path, Some(body.to_string().into_bytes()))
            .await
    }

    pub async fn get(&self, path: &str) -> Sent {
        self.send(Method::GET, path, None).await
    }

    pub async fn delete(&self, path: &str) -> Sent {
        self.send(Method::DELETE, path, None).await
    }

    /// `method` on an absolute `url` (an A2A agent's card or interface) with `headers`.
    pub async fn send_url(
        &self,
        method: Method,
        url: &str,
        body: Option<Vec<u8>>,
        headers: &[(&'static str, String)],
    ) -> Sent {
        let request_body = body.as_deref().map(capture);
        let answer = self
            .client
            .raw_url(method.clone(), url, body, headers)
            .await;
        let exchange = Exchange {
            method: method.to_string(),
            path: url.to_owned(),
            request_body,
            status: answer.as_ref().ok().map(|a| a.status),
            content_type: answer.as_ref().ok().and_then(|a| a.content_type.clone()),
            response_body: answer.as_ref().ok().map(|a| capture(&a.body)),
            error: answer.as_ref().err().map(ToString::to_string),
        };
        Sent { exchange, answer }
    }

    /// A JSON-RPC request to an A2A interface, with `A2A-Version: 1.0`.
    pub async fn post_url(&self, url: &str, body: &Value) -> Sent {
        let version = [(
            protocol::a2a::VERSION_HEADER,
            protocol::a2a::PROTOCOL_VERSION.to_owned(),
        )];
        self.send_url(
            Method::POST,
            url,
            Some(body.to_string().into_bytes()),
            &version,
        )
        .await
    }
}

/// A body as text for the report, clipped at [`CAPTURE_LIMIT`] bytes (on a character boundary).
fn capture(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    if text.len() <= CAPTURE_LIMIT {
        return text.into_owned();
    }
    let mut end = CAPTURE_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [clipped; {} bytes in all]", &text[..end], body.len())
}

/// The function tool every tool check offers and forces.
pub const TOOL_NAME: &str = "get_weather";
pub const TOOL_DESCRIPTION: &str = "Get the current weather in a city.";
pub const TOOL_PROMPT: &str = "What is the weather in Paris right now? Use the tool.";
pub const TOOL_RESULT: &str = "{\"city\":\"Paris\",\"temperature_c\":18,\"sky\":\"clear\"}";

pub fn tool_parameters() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city name."}},
        "required": ["city"],
        "additionalProperties": false
    })
}

/// A prompt long answers follow, so a token limit cuts them.
pub const LONG_PROMPT: &str =
    "Count from 1 to 200 in words, separated by commas, and then explain each number's history.";
