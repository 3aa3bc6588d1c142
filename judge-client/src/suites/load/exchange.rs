//! One request of the load (a chat completion, a response of the Responses API, or an A2A
//! `SendMessage`), streamed (SSE) or not, timed and classified. Only what the figures need is
//! parsed: whether a chunk or event carries output text, the usage, and where the stream ends.
//!
//! Over A2A (docs/contracts/a2a.md) a stream's events are JSON-RPC answers holding a
//! `StreamResponse`: output text is an artifact update's text (a message's, or a status
//! message's when no artifact came), the stream ends at a message or a completed task, and a
//! failed, rejected, canceled, input-required or auth-required task or a JSON-RPC error is an
//! `agent_error`. A non-streamed answer must be a message or a completed task: the load does not
//! poll a task the agent left working.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use awc::http::header::{AUTHORIZATION, CONTENT_TYPE, HeaderName, HeaderValue};
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use protocol::a2a::{
    JsonRpcResponse, PROTOCOL_VERSION, Reply, SendMessageResponse, StreamEvent, StreamResponse,
    TaskState, VERSION_HEADER, text_of,
};
use protocol::headers::SESSION_ID;
use protocol::openai::responses::{Response, event};
use serde::Deserialize;

use super::metrics::{RequestTimes, StreamTimer};
use crate::endpoint::resilience::{classify_send_error, classify_status};
use crate::endpoint::{Api, FailureKind};

/// Largest non-streamed body, and largest single SSE line, the load reads.
const BODY_LIMIT: usize = 8 * 1024 * 1024;

/// Where the load goes and how each request is sent. One per worker thread.
pub struct Endpoint {
    pub client: awc::Client,
    /// `…/v1/chat/completions`.
    pub url: awc::http::Uri,
    pub authorization: Option<HeaderValue>,
    pub api: Api,
    pub stream: bool,
    pub timeout: Duration,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    completion_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ChunkChoice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
}

/// What the load reads of a stream chunk (OpenAI's `chat.completion.chunk`).
#[derive(Deserialize)]
struct ChunkPeek<'a> {
    #[serde(default, borrow)]
    choices: Vec<ChunkChoice<'a>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow)]
    message: Message<'a>,
}

/// What the load reads of a whole `chat.completion`.
#[derive(Deserialize)]
struct CompletionPeek<'a> {
    #[serde(borrow)]
    choices: Vec<Choice<'a>>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct ResponseUsagePeek {
    #[serde(default)]
    output_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct ResponsePeek {
    #[serde(default)]
    usage: Option<ResponseUsagePeek>,
}

/// What the load reads of a Responses API streaming event.
#[derive(Deserialize)]
struct EventPeek<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    /// Lifecycle events: the response as it stands (the terminal one with its usage).
    #[serde(default)]
    response: Option<ResponsePeek>,
}

/// What one `data:` line of a stream says.
#[derive(Debug, Default, PartialEq)]
struct Peeked {
    /// It carries output text.
    output: bool,
    /// Output tokens, when it reports the usage.
    tokens: Option<u64>,
    /// It ends the stream (`[DONE]`, or the Responses API's terminal event).
    done: bool,
}

/// What a stream has shown so far that the reading of a later event depends on.
#[derive(Debug, Default)]
struct StreamState {
    /// An A2A artifact update came: the answer is the artifacts, not a status message.
    artifacts: bool,
}

/// A task of an A2A stream or answer, by its state: `Ok(true)` completed, `Ok(false)` not done
/// yet, an error when it ended or stopped without an answer.
fn a2a_state(state: &TaskState) -> Result<bool, FailureKind> {
    match state {
        TaskState::Completed => Ok(true),
        TaskState::Submitted | TaskState::Working => Ok(false),
        _ => Err(FailureKind::AgentError),
    }
}

/// Reads one `data:` line of a stream through `api`; appends its output text to `reply`, if given.
fn peek(
    api: Api,
    data: &[u8],
    reply: Option<&mut String>,
    state: &mut StreamState,
) -> Result<Peeked, FailureKind> {
    match api {
        Api::A2a => {
            let answer: JsonRpcResponse<StreamResponse> =
                serde_json::from_slice(data).map_err(|_| FailureKind::AgentError)?;
            if answer.error.is_some() {
                return Err(FailureKind::AgentError);
            }
            let event = answer
                .result
                .ok_or(FailureKind::AgentError)?
                .event()
                .map_err(|_| FailureKind::AgentError)?;
            let (text, done) = match &event {
                StreamEvent::Message(message) => (message.text(), true),
                StreamEvent::ArtifactUpdate(update) => {
                    state.artifacts = true;
                    (text_of(&update.artifact.parts), false)
                }
                StreamEvent::Task(task) => {
                    let done = a2a_state(&task.status.state)?;
                    let text = if done && !state.artifacts {
                        text_of(&task.answer_parts().into_iter().cloned().collect::<Vec<_>>())
                    } else {
                        String::new()
                    };
                    (text, done)
                }
                StreamEvent::StatusUpdate(update) => {
                    let done = a2a_state(&update.status.state)?;
                    let text = match &update.status.message {
                        Some(message) if done && !state.artifacts => message.text(),
                        _ => String::new(),
                    };
                    (text, done)
                }
            };
            if let Some(reply) = reply {
                reply.push_str(&text);
            }
            Ok(Peeked {
                output: !text.is_empty(),
                tokens: None,
                done,
            })
        }
        Api::Chat => {
            if data == b"[DONE]" {
                return Ok(Peeked {
                    done: true,
                    ..Peeked::default()
                });
            }
            let peek: ChunkPeek =
                serde_json::from_slice(data).map_err(|_| FailureKind::AgentError)?;
            if peek.error.is_some() {
                return Err(FailureKind::AgentError);
            }
            if let Some(reply) = reply {
                for choice in &peek.choices {
                    if let Some(text) = choice.delta.as_ref().and_then(|d| d.content.as_deref()) {
                        reply.push_str(text);
                    }
                }
            }
            Ok(Peeked {
                output: peek.has_output(),
                tokens: peek.usage.and_then(|u| u.completion_tokens),
                done: false,
            })
        }
        Api::Responses => {
            // OpenAI ends a Responses stream with its terminal event, not `[DONE]`; a server
            // that sends one too is not cut off for it.
            if data == b"[DONE]" {
                return Ok(Peeked::default());
            }
            let peek: EventPeek =
                serde_json::from_slice(data).map_err(|_| FailureKind::AgentError)?;
            match peek.kind.as_ref() {
                event::FAILED | event::ERROR => Err(FailureKind::AgentError),
                event::COMPLETED | event::INCOMPLETE => Ok(Peeked {
                    output: false,
                    tokens: peek
                        .response
                        .and_then(|r| r.usage)
                        .and_then(|u| u.output_tokens),
                    done: true,
                }),
                event::OUTPUT_TEXT_DELTA => {
                    if let (Some(reply), Some(delta)) = (reply, peek.delta.as_deref()) {
                        reply.push_str(delta);
                    }
                    Ok(Peeked {
                        output: peek.delta.is_some_and(|d| !d.is_empty()),
                        ..Peeked::default()
                    })
                }
                _ => Ok(Peeked::default()),
            }
        }
    }
}

/// The output text and the output tokens (as reported) of a whole answer through `api`.
fn whole(api: Api, bytes: &[u8]) -> Result<(String, Option<u64>), FailureKind> {
    match api {
        Api::A2a => {
            let answer: JsonRpcResponse<SendMessageResponse> =
                serde_json::from_slice(bytes).map_err(|_| FailureKind::AgentError)?;
            if answer.error.is_some() {
                return Err(FailureKind::AgentError);
            }
            let reply = answer
                .result
                .ok_or(FailureKind::AgentError)?
                .payload()
                .map_err(|_| FailureKind::AgentError)?;
            match reply {
                Reply::Message(message) => Ok((message.text(), None)),
                Reply::Task(task) if a2a_state(&task.status.state)? => Ok((
                    text_of(&task.answer_parts().into_iter().cloned().collect::<Vec<_>>()),
                    None,
                )),
                Reply::Task(_) => Err(FailureKind::AgentError),
            }
        }
        Api::Chat => {
            let completion: CompletionPeek =
                serde_json::from_slice(bytes).map_err(|_| FailureKind::AgentError)?;
            let Some(choice) = completion.choices.first() else {
                return Err(FailureKind::AgentError);
            };
            let text = choice.message.content.as_deref().unwrap_or_default();
            Ok((
                text.to_owned(),
                completion.usage.and_then(|u| u.completion_tokens),
            ))
        }
        Api::Responses => {
            let response: Response =
                serde_json::from_slice(bytes).map_err(|_| FailureKind::AgentError)?;
            if response.status.as_deref() == Some("failed") || response.error.is_some() {
                return Err(FailureKind::AgentError);
            }
            Ok((
                response.output_text(),
                response.usage.map(|u| u64::from(u.output_tokens)),
            ))
        }
    }
}

impl ChunkPeek<'_> {
    fn has_output(&self) -> bool {
        self.choices.iter().any(|c| {
            c.delta.as_ref().is_some_and(|d| {
                d.content.as_deref().is_some_and(|t| !t.is_empty())
                    || d.reasoning_content
                        .as_deref()
                        .is_some_and(|t| !t.is_empty())
            })
        })
    }
}

/// Sends one request. `on_itl` gets every inter-token gap as it happens; `reply`, when given,
/// gets the reply's text (a conversation with full history sends it back).
pub async fn send(
    endpoint: &Endpoint,
    body: Bytes,
    session: HeaderValue,
    sent: Instant,
    on_itl: impl FnMut(Duration),
    reply: Option<&mut String>,
) -> Result<RequestTimes, FailureKind> {
    match actix_rt::time::timeout(
        endpoint.timeout,
        exchange(endpoint, body, session, sent, on_itl, reply),
    )
    .await
    {
        Ok(result) => result,
        Err(_) => Err(FailureKind::Timeout),
    }
}

async fn exchange(
    endpoint: &Endpoint,
    body: Bytes,
    session: HeaderValue,
    sent: Instant,
    mut on_itl: impl FnMut(Duration),
    mut reply: Option<&mut String>,
) -> Result<RequestTimes, FailureKind> {
    let mut request = endpoint
        .client
        .post(endpoint.url.clone())
        .insert_header((CONTENT_TYPE, HeaderValue::from_static("application/json")))
        .insert_header((HeaderName::from_static(SESSION_ID), session));
    if let Some(auth) = &endpoint.authorization {
        request = request.insert_header((AUTHORIZATION, auth.clone()));
    }
    if endpoint.api == Api::A2a {
        request = request.insert_header((VERSION_HEADER, PROTOCOL_VERSION));
    }
    let mut response = request
        .send_body(body)
        .await
        .map_err(|e| classify_send_error(&e).0)?;
    let status = response.status().as_u16();
    if !(200..300).contains(&status) {
        // Read the (small) error body so the connection can be kept alive.
        let _ = response.body().limit(64 * 1024).await;
        return Err(classify_status(status));
    }
    if !endpoint.stream {
        let bytes = response
            .body()
            .limit(BODY_LIMIT)
            .await
            .map_err(|_| FailureKind::InfraError)?;
        let end = Instant::now();
        let (text, tokens) = whole(endpoint.api, &bytes)?;
        // No usage: count words, the closest guess without a tokenizer.
        let tokens = tokens.unwrap_or_else(|| text.split_whitespace().count() as u64);
        if let Some(reply) = reply {
            *reply = text;
        }
        return Ok(StreamTimer::whole(sent, end, tokens));
    }

    let mut timer = StreamTimer::new(sent);
    let mut state = StreamState::default();
    let mut usage_tokens = None;
    let mut pending = BytesMut::new();
    let mut done = false;
    while let Some(chunk) = response.next().await {
        let chunk = chunk.map_err(|_| FailureKind::InfraError)?;
        let arrived = Instant::now();
        pending.extend_from_slice(&chunk);
        while let Some(newline) = pending.iter().position(|b| *b == b'\n') {
            let line = pending.split_to(newline + 1);
            let line = trim_line(&line);
            let Some(data) = line.strip_prefix(b"data:") else {
                continue; // comments, `event:` lines, blank separators
            };
            let peeked = peek(
                endpoint.api,
                data.trim_ascii(),
                reply.as_deref_mut(),
                &mut state,
            )?;
            done |= peeked.done;
            if peeked.output
                && let Some(gap) = timer.output_chunk(arrived)
            {
                on_itl(gap);
            }
            if let Some(tokens) = peeked.tokens {
                usage_tokens = Some(tokens);
            }
        }
        if pending.len() > BODY_LIMIT {
            return Err(FailureKind::AgentError);
        }
    }
    if !done {
        // The stream ended without its terminator (`[DONE]`, the Responses API's terminal
        // event, A2A's message or completed task): the reply was cut off.
        return Err(FailureKind::InfraError);
    }
    Ok(timer.finish(Instant::now(), usage_tokens))
}

fn trim_line(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One line read on its own (a fresh stream).
    fn peek(api: Api, data: &[u8], reply: Option<&mut String>) -> Result<Peeked, FailureKind> {
        super::peek(api, data, reply, &mut StreamState::default())
    }

    #[test]
    fn a2a_streams_give_output_and_end_at_a_completed_task() {
        let mut state = StreamState::default();
        let mut reply = String::new();
        let lines: [&[u8]; 4] = [
            br#"{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_SUBMITTED"}}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"artifactUpdate":{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"text":"Lis"}]}}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"artifactUpdate":{"taskId":"t","contextId":"c","append":true,"artifact":{"artifactId":"a","parts":[{"text":"bon"}]}}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"done"}]}}}}}"#,
        ];
        let read: Vec<Peeked> = lines
            .iter()
            .map(|l| super::peek(Api::A2a, l, Some(&mut reply), &mut state).unwrap())
            .collect();
        let flags: Vec<(bool, bool)> = read.iter().map(|p| (p.output, p.done)).collect();
        assert_eq!(
            flags,
            [(false, false), (true, false), (true, false), (false, true)]
        );
        assert_eq!(reply, "Lisbon", "the artifacts are the answer");
        // Without artifacts, the final status message is.
        let mut alone = String::new();
        let end = super::peek(
            Api::A2a,
            lines[3],
            Some(&mut alone),
            &mut StreamState::default(),
        );
        assert_eq!(end.map(|p| (p.output, p.done)), Ok((true, true)));
        assert_eq!(alone, "done");
        let message = peek(
            Api::A2a,
            br#"{"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"Hi"}]}}}"#,
            None,
        );
        assert_eq!(message.map(|p| (p.output, p.done)), Ok((true, true)));
        for bad in [
            br#"{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_FAILED"}}}}"#.as_slice(),
            br#"{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_INPUT_REQUIRED"}}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            b"not json",
        ] {
            assert_eq!(peek(Api::A2a, bad, None), Err(FailureKind::AgentError));
        }
    }

    #[test]
    fn a2a_answers_are_a_message_or_a_completed_task() {
        let message = whole(
            Api::A2a,
            br#"{"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"a b"}]}}}"#,
        );
        assert_eq!(message, Ok(("a b".to_owned(), None)));
        let task = whole(
            Api::A2a,
            br#"{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"text":"x"}]}]}}}"#,
        );
        assert_eq!(task, Ok(("x".to_owned(), None)));
        for bad in [
            br#"{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","status":{"state":"TASK_STATE_WORKING"}}}}"#.as_slice(),
            br#"{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","status":{"state":"TASK_STATE_REJECTED"}}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found"}}"#,
        ] {
            assert_eq!(whole(Api::A2a, bad), Err(FailureKind::AgentError));
        }
    }

    #[test]
    fn chunk_peek_sees_output_and_usage() {
        let text: ChunkPeek = serde_json::from_slice(
            br#"{"id":"x","choices":[{"index":0,"delta":{"content":"Hi \"there\""}}]}"#,
        )
        .unwrap();
        assert!(text.has_output());
        let role_only: ChunkPeek =
            serde_json::from_slice(br#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#)
                .unwrap();
        assert!(!role_only.has_output());
        let usage: ChunkPeek = serde_json::from_slice(
            br#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":7}}"#,
        )
        .unwrap();
        assert!(!usage.has_output());
        assert_eq!(usage.usage.and_then(|u| u.completion_tokens), Some(7));
        assert_eq!(
            peek(Api::Chat, b"[DONE]", None),
            Ok(Peeked {
                done: true,
                ..Peeked::default()
            })
        );
    }

    #[test]
    fn a_streamed_reply_is_collected_when_asked_for() {
        let mut chat = String::new();
        for line in [
            br#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#.as_slice(),
            br#"{"choices":[{"delta":{"content":"Lisbon, "}}]}"#,
            br#"{"choices":[{"delta":{"content":"last weekend."}}]}"#,
        ] {
            peek(Api::Chat, line, Some(&mut chat)).unwrap();
        }
        assert_eq!(chat, "Lisbon, last weekend.");
        let mut responses = String::new();
        peek(
            Api::Responses,
            br#"{"type":"response.output_text.delta","delta":"Hi"}"#,
            Some(&mut responses),
        )
        .unwrap();
        assert_eq!(responses, "Hi");
    }

    #[test]
    fn responses_events_give_output_usage_and_the_end() {
        let delta = peek(
            Api::Responses,
            br#"{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi"}"#, None
        );
        assert_eq!(
            delta,
            Ok(Peeked {
                output: true,
                ..Peeked::default()
            })
        );
        let created = peek(
            Api::Responses,
            br#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}}"#, None
        );
        assert_eq!(created, Ok(Peeked::default()));
        let completed = peek(
            Api::Responses,
            br#"{"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","status":"completed","usage":{"input_tokens":3,"output_tokens":12,"total_tokens":15}}}"#, None
        );
        assert_eq!(
            completed,
            Ok(Peeked {
                output: false,
                tokens: Some(12),
                done: true
            })
        );
        assert_eq!(
            peek(
                Api::Responses,
                br#"{"type":"response.failed","response":{"id":"r","error":{"code":"x"}}}"#,
                None
            ),
            Err(FailureKind::AgentError)
        );
        assert_eq!(peek(Api::Responses, b"[DONE]", None), Ok(Peeked::default()));
        let (text, tokens) = whole(
            Api::Responses,
            br#"{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a b c"}]}],"usage":{"input_tokens":1,"output_tokens":3,"total_tokens":4}}"#,
        )
        .unwrap();
        assert_eq!((text.as_str(), tokens), ("a b c", Some(3)));
    }
}
