//! The A2A target (docs/contracts/a2a.md): an agent served over the Agent2Agent protocol,
//! version 1.0, JSON-RPC binding, reached the way any other target is.
//!
//! - Discovery: the agent card at `{base}/.well-known/agent-card.json` (the endpoint without
//!   `/v1`), read once per client and kept; its first `JSONRPC` interface of protocol version
//!   1.x is where every call goes (with the interface's `tenant`, when it names one).
//! - A turn is one `SendMessage` (blocking, the default): a user message whose `contextId` is
//!   the judge's session id, a fresh UUID as `messageId`, and the parts [`turn_message`] lays out
//!   from the suite's transcript. Every call carries `A2A-Version: 1.0` beside the wall's own
//!   headers (`X-Session-Id`, `X-Mock-Time`, `traceparent`): the control plane and the clock stay
//!   HTTP extensions at the base URL, probed as for any target.
//! - The answer: a message is the reply; a task is the reply once `TASK_STATE_COMPLETED` (its
//!   artifacts' parts, else its status message's), polled with `GetTask` while it is submitted or
//!   working (an agent that answers before the task is done), until the per-request timeout.
//!   The reply's text is its text parts concatenated; tool calls come from a `tool_calls` data
//!   part (agentwall's tools extension, [`TOOLS_EXTENSION`]).
//!
//! Invariants: a failed, rejected, canceled, input-required or auth-required task, a JSON-RPC
//! error and a malformed answer are the target's failures (`agent_error`), never a reply; a task
//! still unfinished at the timeout is a `timeout`; HTTP statuses and transport failures are
//! classified as for any request. Tools are offered only to an agent whose card declares the
//! tools extension: a turn that would need it elsewhere is refused before it is sent, as the
//! judge's own (`judge_error`: not applicable), never played without its tools.

use std::time::{Duration, Instant};

use awc::http::Method;
use protocol::a2a::{
    AGENT_CARD_PATH, AgentCard, BINDING_JSONRPC, EXTENSIONS_HEADER, ErrorCode, GetTaskRequest,
    JsonRpcError, JsonRpcId, JsonRpcRequest, JsonRpcResponse, Message, PROTOCOL_VERSION, Part,
    Reply, Role as A2aRole, SendMessageRequest, SendMessageResponse, TOOLS_EXTENSION, Task,
    TaskState, VERSION_HEADER, method, part_kind, text_of, tools_data,
};
use protocol::openai::{ChatMessage, Role, Tool, ToolCall};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::client::{Call, ChatReply, Plane, RawResponse, RequestContext, TargetClient, snippet};
use super::error::{FailureKind, TargetError};
use super::resilience::classify_status;
use super::turns::{Api, HistoryMode};

/// Longest a task is polled between two `GetTask` calls.
const MAX_POLL_WAIT: Duration = Duration::from_secs(1);

/// The `A2A-Version` header of every call.
fn version_header() -> (&'static str, String) {
    (VERSION_HEADER, PROTOCOL_VERSION.to_owned())
}

/// What the judge found at an A2A target: its card and the interface it talks to.
#[derive(Debug, Clone, PartialEq)]
pub struct A2aTarget {
    pub card: AgentCard,
    pub card_url: String,
    /// The `JSONRPC` interface's URL, absolute.
    pub url: String,
    pub protocol_version: String,
    /// Sent as every request's `tenant`, when the interface names one.
    pub tenant: Option<String>,
}

impl A2aTarget {
    /// `capabilities.streaming`: `SendStreamingMessage` may be used.
    pub fn streaming(&self) -> bool {
        self.card.capabilities.streaming == Some(true)
    }

    /// The card declares agentwall's tools extension: tools and tool results go as data parts.
    pub fn carries_tools(&self) -> bool {
        self.card.declares_extension(TOOLS_EXTENSION)
    }

    /// What the probe reports of the card.
    pub fn summary(&self) -> AgentCardSummary {
        let card = &self.card;
        AgentCardSummary {
            name: card.name.clone(),
            description: card.description.clone(),
            version: card.version.clone(),
            url: self.url.clone(),
            protocol_version: self.protocol_version.clone(),
            streaming: self.streaming(),
            push_notifications: card.capabilities.push_notifications == Some(true),
            input_modes: card.default_input_modes.clone(),
            output_modes: card.default_output_modes.clone(),
            skills: card
                .skills
                .iter()
                .map(|s| SkillSummary {
                    id: s.id.clone(),
                    name: s.name.clone(),
                    tags: s.tags.clone(),
                })
                .collect(),
            extensions: card
                .capabilities
                .extensions
                .iter()
                .map(|e| e.uri.clone())
                .collect(),
            tools: self.carries_tools(),
        }
    }
}

/// What an agent card declares, as the probe reports it (in the capabilities of every run over
/// A2A, and of `judge probe`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentCardSummary {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub version: String,
    /// The JSON-RPC interface the judge talks to.
    pub url: String,
    pub protocol_version: String,
    /// `capabilities.streaming`.
    pub streaming: bool,
    /// `capabilities.pushNotifications`.
    pub push_notifications: bool,
    /// `defaultInputModes`.
    pub input_modes: Vec<String>,
    /// `defaultOutputModes`.
    pub output_modes: Vec<String>,
    pub skills: Vec<SkillSummary>,
    /// The URIs of `capabilities.extensions`.
    pub extensions: Vec<String>,
    /// The tools extension is declared: `judge apps` can offer tools.
    pub tools: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillSummary {
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// A failure the target caused, after `raw` came back.
fn failed(raw: &RawResponse, message: impl Into<String>) -> TargetError {
    TargetError::new(FailureKind::AgentError, message)
        .with_status(raw.status)
        .with_attempts(raw.attempts)
}

/// A JSON-RPC error in words: its code, the name A2A gives it, its message, and what it usually
/// means for the judge.
pub(crate) fn describe_rpc_error(error: &JsonRpcError) -> String {
    let hint = match error.known() {
        Some(ErrorCode::MethodNotFound) => {
            " (an agent of A2A 0.3 knows `message/send`, not the 1.0 methods the judge calls)"
        }
        Some(ErrorCode::VersionNotSupported) => " (the judge speaks A2A 1.0)",
        Some(ErrorCode::ContentTypeNotSupported) => {
            " (the agent refuses a part's media type: text/plain, or the tools extension's JSON)"
        }
        _ => "",
    };
    match error.known() {
        Some(code) => format!("{} {}: {}{hint}", error.code, code.name(), error.message),
        None => format!("{}: {}", error.code, error.message),
    }
}

/// The class of a JSON-RPC error answer: always the target's (`agent_error`). The judge's
/// requests follow the specification (and are checked against the official SDK); a target that
/// refuses one, cannot find the task it created, or fails inside is the target that failed. The
/// message keeps the code, so a judge that sent something wrong would show.
pub(crate) fn rpc_failure_kind(_error: &JsonRpcError) -> FailureKind {
    FailureKind::AgentError
}

/// The JSON-RPC `result` of `raw` as `T`, answering request `id`; any other answer classified.
fn rpc_result<T: DeserializeOwned>(
    raw: &RawResponse,
    id: &JsonRpcId,
    what: &str,
) -> Result<T, TargetError> {
    let envelope = serde_json::from_slice::<JsonRpcResponse>(&raw.body);
    if !(200..300).contains(&raw.status) {
        let detail = envelope
            .ok()
            .and_then(|e| e.error)
            .map(|e| format!("JSON-RPC error {}", describe_rpc_error(&e)))
            .unwrap_or_else(|| snippet(&raw.body));
        return Err(TargetError::new(
            classify_status(raw.status),
            format!("HTTP {}: {detail}", raw.status),
        )
        .with_status(raw.status)
        .with_attempts(raw.attempts));
    }
    let envelope = envelope.map_err(|e| {
        failed(
            raw,
            format!(
                "expected a JSON-RPC answer with {what}, got {:?} ({e})",
                snippet(&raw.body)
            ),
        )
    })?;
    if let Some(error) = envelope.error {
        return Err(TargetError::new(
            rpc_failure_kind(&error),
            format!("JSON-RPC error {}", describe_rpc_error(&error)),
        )
        .with_status(raw.status)
        .with_attempts(raw.attempts));
    }
    if let Some(got) = envelope.id.as_ref().filter(|got| *got != id) {
        return Err(failed(
            raw,
            format!("the JSON-RPC answer's id {got} is not the request's {id}"),
        ));
    }
    let Some(result) = envelope.result else {
        return Err(failed(
            raw,
            "the JSON-RPC answer has neither a result nor an error",
        ));
    };
    serde_json::from_value(result.clone()).map_err(|e| {
        failed(
            raw,
            format!(
                "expected {what} as the result, got {:?} ({e})",
                snippet(result.to_string().as_bytes())
            ),
        )
    })
}

/// The parts of a task's answer, when it completed; else why there is no answer.
pub(crate) fn completed_parts(task: &Task) -> Result<Vec<Part>, String> {
    let status_text = task
        .status
        .message
        .as_ref()
        .map(Message::text)
        .filter(|t| !t.trim().is_empty())
        .map(|t| format!(": {t:?}"))
        .unwrap_or_default();
    let id = &task.id;
    let why = match &task.status.state {
        TaskState::Completed => return Ok(task.answer_parts().into_iter().cloned().collect()),
        TaskState::Failed => format!("the task {id} failed{status_text}"),
        TaskState::Rejected => format!("the agent rejected the task {id}{status_text}"),
        TaskState::Canceled => format!("the task {id} was canceled{status_text}"),
        TaskState::InputRequired => format!(
            "the task {id} asks for more input (input-required){status_text}; the judge continues \
             no task (each turn is a new message), so the turn has no answer"
        ),
        TaskState::AuthRequired => format!(
            "the task {id} asks for authorization (auth-required){status_text}; the judge gives \
             none beyond its bearer key"
        ),
        TaskState::Unspecified => format!("the task {id} has no state"),
        state => format!("the task {id} ended in state {state}{status_text}"),
    };
    Err(why)
}

/// The reply that `parts` make: their text concatenated, and the tool calls of a `tool_calls`
/// data part; neither is the target's failure.
pub(crate) fn reply_from_parts(parts: &[Part]) -> Result<(String, Vec<ToolCall>), String> {
    let text = text_of(parts);
    let mut tool_calls = Vec::new();
    for data in parts.iter().filter_map(|p| p.data.as_ref()) {
        if let Some(calls) = data.get(tools_data::TOOL_CALLS) {
            let calls: Vec<ToolCall> = serde_json::from_value(calls.clone()).map_err(|e| {
                format!("the tool_calls data part is not a list of tool calls ({e}): {calls}")
            })?;
            tool_calls.extend(calls);
        }
    }
    if text.trim().is_empty() && tool_calls.is_empty() {
        return Err("the reply has no text part and no tool call".to_owned());
    }
    Ok((text, tool_calls))
}

/// Resolves an interface URL the card gives relative to where the card was found.
fn absolute(url: &str, base: &str) -> String {
    if url.starts_with("http://") || url.starts_with("https://") {
        return url.to_owned();
    }
    // The origin of the base: scheme and authority.
    let origin_end = base
        .find("://")
        .and_then(|scheme| base[scheme + 3..].find('/').map(|p| scheme + 3 + p))
        .unwrap_or(base.len());
    if url.starts_with('/') {
        format!("{}{url}", &base[..origin_end])
    } else {
        format!("{}/{url}", base.trim_end_matches('/'))
    }
}

/// The target the card in `raw` (fetched from `card_url`) describes.
fn read_card(raw: &RawResponse, card_url: &str, base: &str) -> Result<A2aTarget, TargetError> {
    if !(200..300).contains(&raw.status) {
        return Err(TargetError::new(
            classify_status(raw.status),
            format!(
                "GET {card_url} answered HTTP {}: no agent card ({})",
                raw.status,
                snippet(&raw.body)
            ),
        )
        .with_status(raw.status)
        .with_attempts(raw.attempts));
    }
    target_from_card(&raw.body, card_url, base).map_err(|why| failed(raw, why))
}

/// The target a card (the body fetched from `card_url`, the target's base URL `base`) describes;
/// else why it describes none the judge can talk to.
pub(crate) fn target_from_card(
    body: &[u8],
    card_url: &str,
    base: &str,
) -> Result<A2aTarget, String> {
    let card: AgentCard = serde_json::from_slice(body)
        .map_err(|e| format!("{card_url} is not an agent card ({e}): {:?}", snippet(body)))?;
    let Some(interface) = card.interface(BINDING_JSONRPC) else {
        let declared: Vec<String> = card
            .supported_interfaces
            .iter()
            .map(|i| format!("{} {}", i.protocol_binding, i.protocol_version))
            .collect();
        return Err(format!(
            "the agent card at {card_url} declares no JSONRPC interface of A2A {PROTOCOL_VERSION} \
             (supportedInterfaces: {}); the judge speaks A2A {PROTOCOL_VERSION} over JSON-RPC",
            if declared.is_empty() {
                "none".to_owned()
            } else {
                declared.join(", ")
            }
        ));
    };
    Ok(A2aTarget {
        url: absolute(&interface.url, base),
        protocol_version: interface.protocol_version.clone(),
        tenant: interface.tenant.clone().filter(|t| !t.is_empty()),
        card_url: card_url.to_owned(),
        card,
    })
}

impl TargetClient {
    /// The A2A target, when its card has been read (by the probe or a first turn).
    pub fn a2a_known(&self) -> Option<&A2aTarget> {
        self.a2a.get()
    }

    /// Whether a turn through `api` can offer tools: always through the OpenAI APIs; over A2A
    /// only when the card (read by the probe) declares the tools extension.
    pub fn carries_tools(&self, api: Api) -> bool {
        match api {
            Api::Chat | Api::Responses => true,
            Api::A2a => self.a2a.get().is_some_and(A2aTarget::carries_tools),
        }
    }

    /// The A2A target: its card read once (`GET /.well-known/agent-card.json` at the base URL)
    /// and kept. A card that is missing, unreadable or offers no JSON-RPC interface of A2A 1.x is
    /// the target's failure (and is asked for again next time).
    pub async fn a2a_target(&self) -> Result<&A2aTarget, TargetError> {
        if let Some(target) = self.a2a.get() {
            return Ok(target);
        }
        let card_url = format!("{}{AGENT_CARD_PATH}", self.base_url());
        let headers = [version_header()];
        let raw = self
            .execute(Call {
                method: Method::GET,
                url: card_url.clone(),
                plane: Plane::Data,
                ctx: None,
                body: None,
                extra_headers: &headers,
            })
            .await?;
        let target = read_card(&raw, &card_url, self.base_url())?;
        Ok(self.a2a.get_or_init(|| target))
    }

    /// One JSON-RPC call to the target's interface.
    async fn rpc<P: Serialize>(
        &self,
        url: &str,
        ctx: &RequestContext,
        id: &JsonRpcId,
        method: &str,
        params: &P,
        headers: &[(&'static str, String)],
    ) -> Result<RawResponse, TargetError> {
        let body =
            serde_json::to_vec(&JsonRpcRequest::new(id.clone(), method, params)).map_err(|e| {
                TargetError::new(
                    FailureKind::JudgeError,
                    format!("cannot encode the {method} request: {e}"),
                )
            })?;
        self.execute(Call {
            method: Method::POST,
            url: url.to_owned(),
            plane: Plane::Data,
            ctx: Some(ctx),
            body: Some(body),
            extra_headers: headers,
        })
        .await
    }

    /// Sends one turn as `SendMessage` in the session of `ctx` (its id as the `contextId`), with
    /// `extra_headers` beside the wall's own and `A2A-Version`, and reads the reply.
    pub async fn a2a_turn(
        &self,
        ctx: &RequestContext,
        mut request: SendMessageRequest,
        extra_headers: &[(&'static str, String)],
    ) -> Result<ChatReply, TargetError> {
        let target = self.a2a_target().await?;
        let uses_tools = request
            .message
            .extensions
            .iter()
            .any(|e| e == TOOLS_EXTENSION);
        if uses_tools && !target.carries_tools() {
            return Err(TargetError::new(
                FailureKind::JudgeError,
                format!(
                    "not applicable: the turn offers tools, but the agent card declares no way to \
                     carry them (the extension {TOOLS_EXTENSION}, docs/contracts/a2a.md); use \
                     --action-mode directives"
                ),
            ));
        }
        request.message.context_id = Some(ctx.session_id.clone());
        if request.message.message_id.is_empty() {
            // Unique per message: an agent may take a repeated id for a duplicate, and a rerun of
            // the same seed is not one.
            request.message.message_id = uuid::Uuid::new_v4().to_string();
        }
        request.tenant.clone_from(&target.tenant);
        let mut headers = vec![version_header()];
        if uses_tools {
            headers.push((EXTENSIONS_HEADER, TOOLS_EXTENSION.to_owned()));
        }
        headers.extend_from_slice(extra_headers);
        let started = Instant::now();
        let id = JsonRpcId::Number(i64::try_from(ctx.request_no).unwrap_or(i64::MAX));
        let raw = self
            .rpc(
                &target.url,
                ctx,
                &id,
                method::SEND_MESSAGE,
                &request,
                &headers,
            )
            .await?;
        let answer: SendMessageResponse = rpc_result(&raw, &id, "a SendMessage answer")?;
        let payload = answer.payload().map_err(|e| {
            failed(
                &raw,
                format!("the SendMessage answer is neither a task nor a message: {e}"),
            )
        })?;
        let parts = match payload {
            Reply::Message(message) => message.parts,
            Reply::Task(task) => {
                // Only a task on its way is waited for; any other state is read as it is.
                let task = if matches!(task.status.state, TaskState::Submitted | TaskState::Working)
                {
                    self.await_task(target, ctx, task, started, &headers[..1])
                        .await?
                } else {
                    task
                };
                completed_parts(&task).map_err(|why| failed(&raw, why))?
            }
        };
        let (text, tool_calls) = reply_from_parts(&parts).map_err(|why| failed(&raw, why))?;
        Ok(ChatReply {
            text,
            tool_calls,
            attempts: raw.attempts,
            usage: None,
            headers: raw.headers,
            response_id: None,
        })
    }

    /// Polls `GetTask` while `task` is submitted or working, at most until the per-request
    /// timeout (counted from `started`), waiting 50 ms, then twice as long each time, at most
    /// [`MAX_POLL_WAIT`].
    async fn await_task(
        &self,
        target: &A2aTarget,
        ctx: &RequestContext,
        mut task: Task,
        started: Instant,
        headers: &[(&'static str, String)],
    ) -> Result<Task, TargetError> {
        let timeout = Duration::from_millis(self.settings().timeout_ms);
        let mut wait = Duration::from_millis(50);
        let mut polls = 0u32;
        loop {
            let elapsed = started.elapsed();
            if elapsed >= timeout {
                return Err(TargetError::new(
                    FailureKind::Timeout,
                    format!(
                        "the task {} was still {} after {} ms ({polls} GetTask polls)",
                        task.id,
                        task.status.state,
                        timeout.as_millis()
                    ),
                ));
            }
            actix_rt::time::sleep(wait.min(timeout - elapsed)).await;
            if started.elapsed() >= timeout {
                continue;
            }
            polls += 1;
            let id = JsonRpcId::String(format!("get-task-{}-{polls}", ctx.request_no));
            let params = GetTaskRequest {
                tenant: target.tenant.clone(),
                id: task.id.clone(),
                history_length: Some(0),
                ..GetTaskRequest::default()
            };
            let raw = self
                .rpc(&target.url, ctx, &id, method::GET_TASK, &params, headers)
                .await?;
            task = rpc_result(&raw, &id, "a task")?;
            if !matches!(task.status.state, TaskState::Submitted | TaskState::Working) {
                return Ok(task);
            }
            wait = (wait * 2).min(MAX_POLL_WAIT);
        }
    }
}

/// The message a turn sends, from the suite's transcript (chat messages: leading system
/// messages, the user's turns, the agent's replies and tool calls, tool results), in this order:
///
/// 1. the leading system messages, joined, as one text part marked `instructions` (with every
///    request, as Chat Completions sends them);
/// 2. with `history` [`HistoryMode::Full`]: everything before what is new to the agent, as one
///    text part marked `history` ("Earlier in this conversation:" and a line per message:
///    `User: ...`, `Agent: ...`, `Agent called NAME(ARGS) [call ID]`, `Tool result [call ID]:
///    ...`); with `new` nothing: the agent keeps the conversation by `contextId`;
/// 3. the tools offered, as a data part `{"tools": [...]}` (Chat Completions tools) marked
///    `tools`;
/// 4. what is new to the agent (after its last reply): tool results as a data part
///    `{"tool_results": [{"tool_call_id", "content"}...]}` marked `tool_results`, then the user's
///    words as plain text parts, the new turn last.
///
/// The message names the tools extension when it carries tools or tool results.
pub(crate) fn turn_message(
    history: HistoryMode,
    transcript: &[ChatMessage],
    tools: Option<&[Tool]>,
) -> Message {
    let system = transcript
        .iter()
        .take_while(|m| m.role == Role::System)
        .count();
    let new_from = transcript
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .map_or(system, |i| i + 1)
        .max(system);
    let mut parts = Vec::new();
    let instructions: Vec<String> = transcript[..system]
        .iter()
        .filter_map(ChatMessage::text_content)
        .collect();
    if !instructions.is_empty() {
        parts.push(
            Part::text(instructions.join("\n\n"))
                .with_metadata(part_kind::KEY, part_kind::INSTRUCTIONS),
        );
    }
    if history == HistoryMode::Full && new_from > system {
        parts.push(
            Part::text(render_history(&transcript[system..new_from]))
                .with_metadata(part_kind::KEY, part_kind::HISTORY),
        );
    }
    let tools = tools.filter(|t| !t.is_empty());
    if let Some(tools) = tools {
        parts.push(
            Part::data(json!({ tools_data::TOOLS: tools }))
                .with_metadata(part_kind::KEY, part_kind::TOOLS),
        );
    }
    let new = &transcript[new_from..];
    let results: Vec<Value> = new
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| {
            json!({
                "tool_call_id": m.tool_call_id.clone().unwrap_or_default(),
                "content": m.text_content().unwrap_or_default(),
            })
        })
        .collect();
    let carries_results = !results.is_empty();
    if carries_results {
        parts.push(
            Part::data(json!({ tools_data::TOOL_RESULTS: results }))
                .with_metadata(part_kind::KEY, part_kind::TOOL_RESULTS),
        );
    }
    for message in new.iter().filter(|m| m.role != Role::Tool) {
        parts.push(Part::text(message.text_content().unwrap_or_default()));
    }
    let mut message = Message::new(A2aRole::User, String::new(), parts);
    if tools.is_some() || carries_results {
        message.extensions = vec![TOOLS_EXTENSION.to_owned()];
    }
    message
}

/// Earlier messages as the `history` part's text.
fn render_history(messages: &[ChatMessage]) -> String {
    let mut out = String::from("Earlier in this conversation:");
    for message in messages {
        let text = message.text_content().unwrap_or_default();
        match message.role {
            Role::User => out.push_str(&format!("\nUser: {text}")),
            Role::Assistant => {
                if !text.is_empty() {
                    out.push_str(&format!("\nAgent: {text}"));
                }
                for call in message.tool_calls.iter().flatten() {
                    out.push_str(&format!(
                        "\nAgent called {}({}) [call {}]",
                        call.function.name, call.function.arguments, call.id
                    ));
                }
            }
            Role::Tool => out.push_str(&format!(
                "\nTool result [call {}]: {text}",
                message.tool_call_id.as_deref().unwrap_or_default()
            )),
            role => out.push_str(&format!("\n{}: {text}", capitalised(role.as_str()))),
        }
    }
    out
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use protocol::a2a::{Artifact, TaskStatus};
    use protocol::openai::{FunctionCall, FunctionDefinition};

    use super::*;

    fn transcript() -> Vec<ChatMessage> {
        let mut call = ChatMessage::assistant("");
        call.content = None;
        call.tool_calls = Some(vec![ToolCall {
            id: "call_1".into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "paypal__transfer".into(),
                arguments: "{\"to\":\"bob\"}".into(),
            },
        }]);
        let mut result = ChatMessage::text(Role::Tool, "{\"success\":true}");
        result.tool_call_id = Some("call_1".into());
        vec![
            ChatMessage::system("You operate apps."),
            ChatMessage::user("My favourite colour is teal."),
            ChatMessage::assistant("Noted."),
            ChatMessage::user("Send bob 5."),
            call,
            result,
        ]
    }

    fn kinds(message: &Message) -> Vec<String> {
        message
            .parts
            .iter()
            .map(|p| {
                p.metadata
                    .as_ref()
                    .and_then(|m| m.get(part_kind::KEY))
                    .and_then(Value::as_str)
                    .unwrap_or("turn")
                    .to_owned()
            })
            .collect()
    }

    #[test]
    fn new_sends_the_instructions_and_what_is_new_to_the_agent() {
        let all = transcript();
        let first = turn_message(HistoryMode::New, &all[..2], None);
        assert_eq!(kinds(&first), ["instructions", "turn"]);
        assert_eq!(first.parts[0].text.as_deref(), Some("You operate apps."));
        assert_eq!(
            first.parts[1].text.as_deref(),
            Some("My favourite colour is teal.")
        );
        assert_eq!(first.role, A2aRole::User);
        assert!(first.extensions.is_empty());
        let second = turn_message(HistoryMode::New, &all[..4], None);
        assert_eq!(kinds(&second), ["instructions", "turn"]);
        assert_eq!(second.parts[1].text.as_deref(), Some("Send bob 5."));
        // A tool round: only the results are new.
        let round = turn_message(HistoryMode::New, &all, None);
        assert_eq!(kinds(&round), ["instructions", "tool_results"]);
        assert_eq!(
            round.parts[1].data,
            Some(
                json!({"tool_results": [{"tool_call_id": "call_1", "content": "{\"success\":true}"}]})
            )
        );
        assert_eq!(round.extensions, [TOOLS_EXTENSION]);
    }

    #[test]
    fn full_carries_the_earlier_conversation_in_a_history_part() {
        let all = transcript();
        let tool = Tool::function(FunctionDefinition {
            name: "paypal__transfer".into(),
            description: None,
            parameters: Some(json!({"type": "object"})),
            strict: None,
        });
        let message = turn_message(HistoryMode::Full, &all, Some(std::slice::from_ref(&tool)));
        assert_eq!(
            kinds(&message),
            ["instructions", "history", "tools", "tool_results"]
        );
        assert_eq!(
            message.parts[1].text.as_deref(),
            Some(
                "Earlier in this conversation:\nUser: My favourite colour is teal.\nAgent: Noted.\n\
                 User: Send bob 5.\nAgent called paypal__transfer({\"to\":\"bob\"}) [call call_1]"
            )
        );
        assert_eq!(
            message.parts[2].data.as_ref().unwrap()["tools"][0]["function"]["name"],
            "paypal__transfer"
        );
        // The first turn has nothing earlier.
        assert_eq!(
            kinds(&turn_message(HistoryMode::Full, &all[..2], None)),
            ["instructions", "turn"]
        );
    }

    fn task(state: TaskState, artifacts: &[&str], status: Option<&str>) -> Task {
        Task {
            id: "t-1".into(),
            status: TaskStatus {
                state,
                message: status.map(|s| Message::new(A2aRole::Agent, "m", vec![Part::text(s)])),
                ..TaskStatus::default()
            },
            artifacts: artifacts
                .iter()
                .map(|t| Artifact {
                    artifact_id: "a".into(),
                    parts: vec![Part::text(*t)],
                    ..Artifact::default()
                })
                .collect(),
            ..Task::default()
        }
    }

    #[test]
    fn a_completed_task_answers_with_its_artifacts_else_its_status_message() {
        let parts = completed_parts(&task(TaskState::Completed, &["Teal", "."], Some("done")));
        assert_eq!(text_of(&parts.unwrap()), "Teal.");
        let parts = completed_parts(&task(TaskState::Completed, &[], Some("Teal.")));
        assert_eq!(text_of(&parts.unwrap()), "Teal.");
    }

    #[test]
    fn other_states_say_why_there_is_no_answer() {
        for (state, words) in [
            (TaskState::Failed, "failed"),
            (TaskState::Rejected, "rejected"),
            (TaskState::Canceled, "canceled"),
            (TaskState::InputRequired, "input-required"),
            (TaskState::AuthRequired, "auth-required"),
            (TaskState::Unspecified, "no state"),
            (TaskState::Other("paused".into()), "paused"),
        ] {
            let why = completed_parts(&task(state, &["ignored"], Some("because"))).unwrap_err();
            assert!(why.contains(words), "{why}");
        }
    }

    #[test]
    fn replies_need_text_or_a_tool_call() {
        let calls = Part::data(json!({"tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ]}));
        let (text, tool_calls) = reply_from_parts(&[calls]).unwrap();
        assert_eq!(text, "");
        assert_eq!(tool_calls[0].function.name, "f");
        assert!(reply_from_parts(&[Part::text("  ")]).is_err());
        assert!(reply_from_parts(&[Part::data(json!({"tool_calls": "f()"}))]).is_err());
        assert_eq!(
            reply_from_parts(&[Part::text("a"), Part::data(json!({})), Part::text("b")])
                .unwrap()
                .0,
            "ab"
        );
    }

    #[test]
    fn interface_urls_resolve_against_the_base() {
        assert_eq!(absolute("http://x/a2a", "http://h:1"), "http://x/a2a");
        assert_eq!(absolute("/a2a", "http://h:1/agent"), "http://h:1/a2a");
        assert_eq!(absolute("a2a", "http://h:1/agent/"), "http://h:1/agent/a2a");
    }

    #[test]
    fn rpc_errors_are_the_targets_and_named() {
        let error = JsonRpcError::with_message(ErrorCode::MethodNotFound, "Method not found");
        assert_eq!(rpc_failure_kind(&error), FailureKind::AgentError);
        let text = describe_rpc_error(&error);
        assert!(text.starts_with("-32601 MethodNotFoundError"), "{text}");
        assert!(text.contains("0.3"), "{text}");
        let custom = JsonRpcError {
            code: -32042,
            message: "busy".into(),
            data: None,
        };
        assert_eq!(describe_rpc_error(&custom), "-32042: busy");
    }
}
