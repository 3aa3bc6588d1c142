//! `POST /v1/chat/completions`: validate the request, run the turn ([`Agent::turn`]), and encode
//! what it produced as JSON or as server-sent events.
//!
//! The builtin model's reply is rendered here; an upstream's own completion goes out as it is;
//! a relayed stream's events are encoded batch by batch as they come ([`TurnStream`] holds the
//! rule that `[DONE]` follows the commit).
//!
//! [`Agent::turn`]: crate::agent::Agent::turn

use std::convert::Infallible;
use std::time::Duration;

use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures_util::StreamExt as _;
use protocol::headers::{MEMORY_WRITE, MEMORY_WRITE_OFF};
use protocol::openai::{
    ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, ChatMessage, Choice, ChunkChoice,
    Delta, Extra, FunctionCallDelta, Role, ToolCall, ToolCallDelta,
};

use super::AppState;
use super::auth::ApiKey;
use super::body::read_json;
use super::context::turn_memory;
use super::session::{self, Caller, Claims, session_header};
use super::turn::{self, Turn};
use crate::agent::{StreamEvent, TurnOutput, TurnStream};
use crate::error::ApiError;
use crate::llm::ModelReply;

#[utoipa::path(
    post,
    path = "/v1/chat/completions",
    tag = "chat",
    request_body = ChatCompletionRequest,
    params(
        ("X-Session-Id" = Option<String>, Header, description = "Session scope of all memory: 1 to 128 characters of [A-Za-z0-9._:-]. Without it (and without --session-from-user), the request is answered without memory and the answer carries X-Memory-Write: off; with --require-session it is a 400"),
        ("X-Mock-Time" = Option<String>, Header, description = "RFC 3339 time to use as now (time travel)"),
        ("X-Turn-Id" = Option<String>, Header, description = "Comma-separated ids of the request's messages, in order; what the turn learns keeps the last one (the new user message) as its source_turn_ids"),
        ("X-Memory-Write" = Option<String>, Header, description = "off: answer with memory read as usual and write nothing (no working memory, no facts); echoed on the answer. Any other value is a 400"),
    ),
    responses(
        (status = 200, description = "A chat completion, or with stream=true server-sent chat.completion.chunk events ending with data: [DONE]", body = ChatCompletion),
        (status = 400, description = "Invalid request or header", body = protocol::openai::ErrorBody),
        (status = 401, description = "Missing or wrong API key", body = protocol::openai::ErrorBody),
        (status = 403, description = "X-Mock-Time sent to a server started with --deny-mock-time", body = protocol::openai::ErrorBody),
        (status = 409, description = "The session was reset while the turn ran; send it again", body = protocol::openai::ErrorBody),
        (status = 413, description = "Body over --max-body-bytes", body = protocol::openai::ErrorBody),
        (status = 429, description = "The upstream model is rate limited; its Retry-After is passed on", body = protocol::openai::ErrorBody),
        (status = 502, description = "The upstream model is unreachable or failed; the message quotes it", body = protocol::openai::ErrorBody),
        (status = 503, description = "A memory backend is unavailable", body = protocol::openai::ErrorBody),
        (status = 504, description = "The upstream model did not answer within --llm-timeout", body = protocol::openai::ErrorBody),
    )
)]
pub(crate) async fn chat_completions(
    _key: ApiKey,
    caller: Caller,
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let memory = turn_memory(&req)?;
    let write = memory.write;
    let request: ChatCompletionRequest = read_json(&req, payload, state.max_body_bytes).await?;
    validate_parameters(&request)?;
    let stream = request.is_stream();
    let include_usage = request.wants_stream_usage();
    let now = caller.now;
    let claims = Claims {
        user: request.user.as_deref(),
        ..Claims::default()
    };
    let session = session::resolve(&state, &caller, claims)?;
    let Turn { input, model } = turn::resolve(&state, session.clone(), now, request, None, memory)?;
    // A chat turn names no MCP server, so it has no tools' work to show.
    let output = state.agent.turn(input).await?.output;
    let mut response = match output {
        TurnOutput::Reply(reply) => {
            let id = format!("chatcmpl-{}", uuid::Uuid::new_v4().simple());
            if stream {
                sse_response(&id, &model, now, &reply, include_usage)
            } else {
                HttpResponse::Ok().json(completion(id, model, now, reply))
            }
        }
        TurnOutput::Completion(completion) => HttpResponse::Ok().json(completion),
        TurnOutput::Stream(turn) => relayed_response(turn).await,
    };
    let (name, value) = session_header(session.as_ref());
    response.headers_mut().insert(name, value);
    if !write {
        // Says that the turn was read-only, so a client can tell a server that honours the
        // header from one that ignores it.
        response.headers_mut().insert(
            HeaderName::from_static(MEMORY_WRITE),
            HeaderValue::from_static(MEMORY_WRITE_OFF),
        );
    }
    Ok(response)
}

/// How long the response head may wait for the first events of a relayed stream, to go out in
/// the same write. An upstream that streams at once (the head alone cost every streamed turn a
/// system call and a wake-up of the client) sends them well within this; behind a model that
/// thinks before its first token, the head goes out on its own after this, as before.
const HEAD_WAITS_FOR_EVENTS: Duration = Duration::from_millis(5);

/// Server-sent events of a relayed stream; the head waits for the first events for up to
/// [`HEAD_WAITS_FOR_EVENTS`].
async fn relayed_response(turn: TurnStream) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-cache"))
        .streaming(relayed_events(turn).await)
}

/// The body of a relayed stream: each batch of the turn's events as one piece of SSE, the first
/// one waited for (up to [`HEAD_WAITS_FOR_EVENTS`]) so that it goes out with the head.
async fn relayed_events(
    mut turn: TurnStream,
) -> impl futures_util::Stream<Item = Result<Bytes, Infallible>> + 'static {
    // `None` if the wait ran out (`next_batch` is cancel-safe: nothing is lost) or the stream ended.
    let first = tokio::time::timeout(HEAD_WAITS_FOR_EVENTS, turn.next_batch())
        .await
        .ok()
        .flatten();
    let rest = futures_util::stream::unfold(turn, |mut turn| async move {
        turn.next_batch().await.map(|batch| (batch, turn))
    });
    futures_util::stream::iter(first)
        .chain(rest)
        .map(|batch| Ok(encode_events(batch)))
}

/// A batch of a relayed turn's events as server-sent events: chunks as Chat Completions chunks,
/// the end as `data: [DONE]`, a failure as an error in OpenAI's shape (what the official SDKs
/// raise as an API error).
fn encode_events(batch: Vec<StreamEvent>) -> Bytes {
    let mut events = Vec::new();
    for event in batch {
        match event {
            StreamEvent::Forwarded(data) => push_event(&mut events, &data),
            StreamEvent::Chunk(chunk) => push_json_event(&mut events, &chunk),
            StreamEvent::Done => events.extend_from_slice(b"data: [DONE]\n\n"),
            StreamEvent::Failed(e) => {
                let e = ApiError::from(e);
                tracing::error!(error = %e, "stream ended with an error");
                push_json_event(&mut events, &e.body());
            }
        }
    }
    Bytes::from(events)
}

/// Appends one server-sent event carrying `data`, one `data:` field per line: an upstream may
/// spread an event's JSON over several lines.
fn push_event(events: &mut Vec<u8>, data: &str) {
    for line in data.split('\n') {
        events.extend_from_slice(b"data: ");
        events.extend_from_slice(line.trim_end_matches('\r').as_bytes());
        events.push(b'\n');
    }
    events.push(b'\n');
}

/// Appends one server-sent event carrying `value` as JSON.
fn push_json_event(events: &mut Vec<u8>, value: &impl serde::Serialize) {
    events.extend_from_slice(b"data: ");
    serde_json::to_writer(&mut *events, value).expect("chunks and error bodies serialise");
    events.extend_from_slice(b"\n\n");
}

pub(super) fn validate_parameters(request: &ChatCompletionRequest) -> Result<(), ApiError> {
    if let Some(t) = request.temperature.filter(|t| !(0.0..=2.0).contains(t)) {
        return Err(ApiError::invalid(
            format!("temperature is {t}; use a value from 0 to 2"),
            Some("temperature"),
        ));
    }
    if let Some(p) = request.top_p.filter(|p| !(0.0..=1.0).contains(p)) {
        return Err(ApiError::invalid(
            format!("top_p is {p}; use a value from 0 to 1"),
            Some("top_p"),
        ));
    }
    if request.token_limit() == Some(0) {
        return Err(ApiError::invalid(
            "max_tokens must be at least 1",
            Some("max_tokens"),
        ));
    }
    if let Some(n) = request
        .extra
        .get("n")
        .and_then(|n| n.as_u64())
        .filter(|n| *n != 1)
    {
        return Err(ApiError::invalid(
            format!("n is {n}; this server returns exactly one choice"),
            Some("n"),
        ));
    }
    Ok(())
}

fn completion(id: String, model: String, now: DateTime<Utc>, reply: ModelReply) -> ChatCompletion {
    ChatCompletion {
        id,
        object: "chat.completion".into(),
        created: now.timestamp(),
        model,
        choices: vec![Choice {
            index: 0,
            message: assistant_message(reply.text, reply.tool_calls),
            finish_reason: Some(reply.finish_reason),
            logprobs: None,
        }],
        usage: Some(reply.usage),
        system_fingerprint: None,
        extra: Extra::new(),
    }
}

/// The reply as an assistant message: a message that only calls tools has `content: null`, as
/// OpenAI sends it.
fn assistant_message(text: String, tool_calls: Vec<ToolCall>) -> ChatMessage {
    let mut message = ChatMessage::assistant(text);
    if !tool_calls.is_empty() {
        if message.text_content().is_none_or(|t| t.is_empty()) {
            message.content = None;
        }
        message.tool_calls = Some(tool_calls);
    }
    message
}

/// Server-sent events for a finished reply: a role chunk, content chunks of a few words each, a
/// finish chunk, an optional usage chunk with `choices: []`, then `data: [DONE]`. The reply is
/// already stored, so the whole stream is written at once.
fn sse_response(
    id: &str,
    model: &str,
    now: DateTime<Utc>,
    reply: &ModelReply,
    include_usage: bool,
) -> HttpResponse {
    let chunk = |delta: Delta, finish| ChatCompletionChunk {
        id: id.to_owned(),
        object: "chat.completion.chunk".into(),
        created: now.timestamp(),
        model: model.to_owned(),
        choices: vec![ChunkChoice {
            index: 0,
            delta,
            finish_reason: finish,
            logprobs: None,
        }],
        usage: None,
        system_fingerprint: None,
        extra: Extra::new(),
    };
    let mut events = vec![chunk(
        Delta {
            role: Some(Role::Assistant),
            content: Some(String::new()),
            ..Delta::default()
        },
        None,
    )];
    for piece in content_pieces(&reply.text) {
        events.push(chunk(
            Delta {
                content: Some(piece),
                ..Delta::default()
            },
            None,
        ));
    }
    for (index, call) in reply.tool_calls.iter().enumerate() {
        events.push(chunk(
            Delta {
                tool_calls: Some(vec![ToolCallDelta {
                    index: u32::try_from(index).unwrap_or(u32::MAX),
                    id: Some(call.id.clone()),
                    kind: Some(call.kind.clone()),
                    function: Some(FunctionCallDelta {
                        name: Some(call.function.name.clone()),
                        arguments: Some(call.function.arguments.clone()),
                    }),
                    extra: Extra::new(),
                }]),
                ..Delta::default()
            },
            None,
        ));
    }
    events.push(chunk(Delta::default(), Some(reply.finish_reason.clone())));
    if include_usage {
        let mut last = chunk(Delta::default(), None);
        last.choices.clear();
        last.usage = Some(reply.usage.clone());
        events.push(last);
    }
    let mut body = String::with_capacity(reply.text.len() * 4 + 512);
    for event in &events {
        body.push_str("data: ");
        body.push_str(&serde_json::to_string(event).expect("chunks serialise"));
        body.push_str("\n\n");
    }
    body.push_str("data: [DONE]\n\n");
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-cache"))
        .body(body)
}

/// Splits text into pieces of up to four words, each keeping its trailing space, so that the
/// pieces concatenate back to exactly the original text.
pub(super) fn content_pieces(text: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut words = 0;
    for (i, c) in text.char_indices() {
        current.push(c);
        let word_ends = c == ' ' && text[..i].chars().last().is_some_and(|p| p != ' ');
        if word_ends {
            words += 1;
            if words == 4 {
                pieces.push(std::mem::take(&mut current));
                words = 0;
            }
        }
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tokio::sync::mpsc;

    proptest! {
        #[test]
        fn stream_pieces_concatenate_to_the_reply(text in "\\PC{0,200}") {
            prop_assert_eq!(content_pieces(&text).concat(), text);
        }
    }

    /// The body `relayed_events` makes of what a relay task sends before it ends (or panics).
    async fn relayed_body(sent: &'static [&'static str], panics: bool) -> Vec<String> {
        let (tx, rx) = mpsc::channel::<Vec<StreamEvent>>(8);
        let relay = crate::task::in_request(async move {
            for event in sent {
                let event = match event.strip_prefix("data: ").unwrap().trim_end() {
                    "[DONE]" => StreamEvent::Done,
                    data => StreamEvent::Forwarded(data.to_owned()),
                };
                tx.send(vec![event]).await.unwrap();
            }
            assert!(!panics, "a bug in the relay");
        });
        let body = relayed_events(TurnStream::from_parts(rx, relay)).await;
        body.map(|event| String::from_utf8(event.unwrap().to_vec()).unwrap())
            .collect()
            .await
    }

    #[tokio::test]
    async fn a_relay_that_panics_ends_its_stream_with_an_error_event() {
        let body = relayed_body(&["data: {\"a\":1}\n\n"], true).await;
        assert_eq!(body.len(), 2, "{body:?}");
        assert_eq!(body[0], "data: {\"a\":1}\n\n");
        assert!(body[1].starts_with("data: {\"error\":"), "{body:?}");
        assert!(body[1].contains("\"code\":\"internal_error\""), "{body:?}");

        // Dying before its first event: the error is the whole body, not an empty 200.
        let body = relayed_body(&[], true).await;
        assert_eq!(body.len(), 1, "{body:?}");
        assert!(body[0].contains("\"type\":\"server_error\""), "{body:?}");
    }

    #[tokio::test]
    async fn a_relay_that_ends_leaves_its_events_as_they_are() {
        let sent = &["data: {\"a\":1}\n\n", "data: [DONE]\n\n"];
        assert_eq!(relayed_body(sent, false).await, sent);
        assert!(relayed_body(&[], false).await.is_empty());
    }
}
