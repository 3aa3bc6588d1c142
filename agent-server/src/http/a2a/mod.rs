//! The Agent2Agent protocol, version 1.0, JSON-RPC binding (SSE for streams): the agent card
//! ([`card`]) and `POST /a2a`, whose methods run the same turn as both OpenAI APIs
//! ([`Agent::turn`]): a message is read as a chat turn ([`input`]) and what the turn produced is
//! encoded as a task ([`task`]) or its stream ([`stream`]).
//!
//! Methods: `SendMessage`, `SendStreamingMessage`, `GetTask`, `ListTasks`, `CancelTask` and
//! `SubscribeToTask`; the push notification methods answer PushNotificationNotSupported
//! (-32003) and `GetExtendedAgentCard` UnsupportedOperation (-32004), as the card declares
//! neither. A2A 0.3's methods (`message/send`, ...) are not served: MethodNotFound, saying so.
//! Every call carries `A2A-Version: 1.x` (an absent header means 0.3: VersionNotSupported).
//!
//! Invariants:
//! - **The context is the session.** `X-Session-Id` names it when given, and a `contextId`
//!   naming another is refused; else the message's `contextId` names it; else a new session is
//!   made and returned as the task's `contextId`. A task belongs to its session: a `GetTask`,
//!   `CancelTask` or `SubscribeToTask` with an `X-Session-Id` of another session, or a message
//!   naming another session's `taskId`, is TaskNotFound (-32001), as for an unknown id. Without
//!   the header, a task id is a capability, as a response id is on `/v1`.
//! - **One message, one task, one turn**: every task is completed when it is stored, so a
//!   message naming a `taskId` is UnsupportedOperation (-32004; the next message goes without
//!   it, in the same context) and CancelTask is TaskNotCancelable (-32002). A message sent again
//!   (the same `messageId` in the same session) is answered with its task, not a second turn.
//! - **Nothing is lost**: the task is stored after the turn is committed and before the answer
//!   (or the stream's last event) leaves, so an acknowledged task can be got after a restart; a
//!   request refused or failed stores nothing.
//! - Errors are JSON-RPC errors of the one table ([`A2aError`]), never a panic; a refused
//!   request runs no turn.
//!
//! [`Agent::turn`]: crate::agent::Agent::turn

pub(crate) mod card;
pub(crate) mod input;
pub(crate) mod stream;
pub(crate) mod task;

use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{FromRequest as _, HttpRequest, HttpResponse, web};
use chrono::{DateTime, Utc};
use protocol::SessionId;
use protocol::a2a::{
    CancelTaskRequest, GetTaskRequest, JsonRpcId, JsonRpcResponse, ListTasksRequest,
    ListTasksResponse, Message, PROTOCOL_VERSION, SendMessageRequest, SendMessageResponse,
    SubscribeToTaskRequest, TaskState, VERSION_HEADER, method,
};
use protocol::headers::{MEMORY_WRITE, MEMORY_WRITE_OFF};
use protocol::openai::{ChatCompletionRequest, ChatMessage};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::AppState;
use super::auth::ApiKey;
use super::body::read_body;
use super::context::{header_str, request_now, turn_memory};
use super::session::{client_session, header_session, new_session, session_header};
use super::turn::{self, Turn};
use crate::agent::TurnOutput;
use crate::error::A2aError;
use crate::llm::prompt::reply_text;
use crate::memory::tasks::{StoredTask, TaskCursor, TaskQuery};
use task::{Exchange, check_history_length, shown};

/// Where the JSON-RPC interface is served.
pub(crate) const PATH: &str = "/a2a";

/// `ListTasks`' page size when none is asked for, and the largest it takes.
const DEFAULT_PAGE_SIZE: i32 = 50;
const MAX_PAGE_SIZE: i32 = 100;

/// The methods of A2A 0.3, named in the error that refuses them.
const V03_METHODS: &[&str] = &[
    "message/send",
    "message/stream",
    "tasks/get",
    "tasks/list",
    "tasks/cancel",
    "tasks/resubscribe",
    "tasks/pushNotificationConfig/set",
    "tasks/pushNotificationConfig/get",
    "tasks/pushNotificationConfig/list",
    "tasks/pushNotificationConfig/delete",
    "agent/getAuthenticatedExtendedCard",
];

#[utoipa::path(
    post,
    path = "/a2a",
    tag = "a2a",
    request_body(content = Object, description = "A JSON-RPC 2.0 request of A2A 1.0: SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask (push notification methods and GetExtendedAgentCard are refused)"),
    params(
        ("A2A-Version" = String, Header, description = "1.0 (an absent header means 0.3, which is refused with -32009)"),
        ("X-Session-Id" = Option<String>, Header, description = "The session (and contextId) of the call; a contextId or task of another session is refused. Without it the message's contextId names the session, else a new one is made"),
        ("X-Mock-Time" = Option<String>, Header, description = "RFC 3339 time to use as now (time travel)"),
        ("X-Memory-Write" = Option<String>, Header, description = "off: the turn writes no memory (its task is still stored)"),
        ("X-Turn-Id" = Option<String>, Header, description = "Ids of the turn's messages, as on /v1/chat/completions"),
    ),
    responses(
        (status = 200, description = "A JSON-RPC answer: a task (or, for SendStreamingMessage, server-sent events: the task, artifact chunks, the completing status update, each a JSON-RPC answer); or a JSON-RPC error: -32700 not JSON, -32600 not a request (or a body over --max-body-bytes), -32601 unknown method, -32602 invalid params, -32001 task not found, -32002 not cancelable, -32003 push notifications, -32004 unsupported (a message to a finished task), -32005 content type (a part that is not text), -32009 version", body = Object),
        (status = 401, description = "Missing or wrong API key (a JSON-RPC error, -32600)", body = Object),
        (status = 403, description = "X-Mock-Time sent to a server started with --deny-mock-time (a JSON-RPC error)", body = Object),
        (status = 409, description = "The session was reset while the turn ran (a JSON-RPC error, -32603)", body = Object),
        (status = 503, description = "A memory backend is unavailable (a JSON-RPC error, -32603)", body = Object),
    )
)]
pub(crate) async fn rpc(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> HttpResponse {
    let mut id = None;
    match call(&req, payload, &state, &mut id).await {
        Ok(response) => response,
        Err(error) => error.answer(id),
    }
}

/// One call: authenticated before its body is read, then its envelope, method, version and
/// params checked in that order, then run. `id` is set as soon as it is known.
async fn call(
    req: &HttpRequest,
    payload: web::Payload,
    state: &AppState,
    id: &mut Option<JsonRpcId>,
) -> Result<HttpResponse, A2aError> {
    ApiKey::extract(req).await?;
    let body = read_body(req, payload, state.max_body_bytes).await?;
    let request: Value =
        serde_json::from_slice(&body).map_err(|e| A2aError::Parse(e.to_string()))?;
    // Answered with its id whenever it can be read, the request's other faults included.
    *id = request_id(&request);
    let (method_name, params) = envelope(request)?;
    let id = id.clone();
    let streaming = match method_name.as_str() {
        method::SEND_MESSAGE => false,
        method::SEND_STREAMING_MESSAGE => true,
        method::GET_TASK
        | method::LIST_TASKS
        | method::CANCEL_TASK
        | method::SUBSCRIBE_TO_TASK
        | method::CREATE_TASK_PUSH_NOTIFICATION_CONFIG
        | method::GET_TASK_PUSH_NOTIFICATION_CONFIG
        | method::LIST_TASK_PUSH_NOTIFICATION_CONFIGS
        | method::DELETE_TASK_PUSH_NOTIFICATION_CONFIG
        | method::GET_EXTENDED_AGENT_CARD => false,
        other => {
            let hint = if V03_METHODS.contains(&other) {
                " (a method of A2A 0.3; this agent speaks A2A 1.0)"
            } else {
                ""
            };
            return Err(A2aError::MethodNotFound {
                method: other.to_owned(),
                hint,
            });
        }
    };
    check_version(req)?;
    match method_name.as_str() {
        method::SEND_MESSAGE | method::SEND_STREAMING_MESSAGE => {
            send(req, state, id, params_of(params)?, streaming).await
        }
        method::GET_TASK => get_task(req, state, id, params_of(params)?).await,
        method::LIST_TASKS => list_tasks(req, state, id, params_of(params)?).await,
        method::CANCEL_TASK => cancel_task(req, state, params_of(params)?).await,
        method::SUBSCRIBE_TO_TASK => subscribe(req, state, params_of(params)?).await,
        method::GET_EXTENDED_AGENT_CARD => Err(A2aError::UnsupportedOperation(
            "this agent has no extended card (its card's capabilities.extendedAgentCard is not \
             set); its public card is all there is"
                .to_owned(),
        )),
        _ => Err(A2aError::PushNotificationNotSupported),
    }
}

/// The id of a request, when it has one of a valid type (a string or an integer).
fn request_id(request: &Value) -> Option<JsonRpcId> {
    match request.get("id")? {
        Value::String(s) => Some(JsonRpcId::String(s.clone())),
        Value::Number(n) => n.as_i64().map(JsonRpcId::Number),
        _ => None,
    }
}

/// The method and params of a JSON-RPC 2.0 request; else why it is not one.
fn envelope(request: Value) -> Result<(String, Value), A2aError> {
    let Value::Object(mut fields) = request else {
        return Err(A2aError::InvalidRequest(match request {
            Value::Array(_) => "batch requests are not supported; send one JSON-RPC request".into(),
            other => format!("the body is {other}, not a JSON-RPC request object"),
        }));
    };
    match fields.remove("id") {
        None | Some(Value::Null | Value::String(_)) => {}
        Some(Value::Number(n)) if n.is_i64() => {}
        Some(other) => {
            return Err(A2aError::InvalidRequest(format!(
                "id is {other}; send a string or an integer"
            )));
        }
    }
    let invalid = |message: String| Err(A2aError::InvalidRequest(message));
    match fields.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        Some(other) => return invalid(format!("jsonrpc is {other}; it must be \"2.0\"")),
        None => return invalid("jsonrpc is missing; it must be \"2.0\"".into()),
    }
    let method = match fields.remove("method") {
        Some(Value::String(m)) if !m.is_empty() => m,
        Some(other) => return invalid(format!("method is {other}; send the method's name")),
        None => return invalid("method is missing".into()),
    };
    let params = fields
        .remove("params")
        .unwrap_or_else(|| Value::Object(Default::default()));
    Ok((method, params))
}

/// Refuses a call that does not ask for A2A 1.x (`A2A-Version`, as a header or a query
/// parameter; none means 0.3).
fn check_version(req: &HttpRequest) -> Result<(), A2aError> {
    let from_query = || {
        web::Query::<std::collections::HashMap<String, String>>::from_query(req.query_string())
            .ok()
            .and_then(|q| q.get(VERSION_HEADER).cloned())
    };
    let asked = header_str(req, "a2a-version")?
        .map(str::to_owned)
        .or_else(from_query)
        .unwrap_or_default();
    let major = |v: &str| v.trim().split('.').next().unwrap_or_default().to_owned();
    if asked.trim().is_empty() {
        return Err(A2aError::VersionNotSupported("0.3 (no header)".to_owned()));
    }
    if major(&asked) != major(PROTOCOL_VERSION) || asked.trim().split('.').count() > 3 {
        return Err(A2aError::VersionNotSupported(asked));
    }
    Ok(())
}

/// The params as `T`, or which field is wrong.
fn params_of<T: DeserializeOwned>(params: Value) -> Result<T, A2aError> {
    if !params.is_object() {
        return Err(A2aError::invalid_params(
            format!("params is {params}; send an object"),
            Some("params"),
        ));
    }
    serde_path_to_error::deserialize(params).map_err(|e| {
        let path = e.path().to_string();
        A2aError::invalid_params(format!("{path}: {}", e.inner()), Some(&path))
    })
}

/// A JSON-RPC answer with `result`, naming `session`.
fn success(
    id: Option<JsonRpcId>,
    session: Option<&SessionId>,
    result: impl serde::Serialize,
) -> HttpResponse {
    let mut response = HttpResponse::Ok();
    response.insert_header(session_header(session));
    response.json(JsonRpcResponse::success(id, result))
}

/// The session a message belongs to ([invariants](self)), checking the task it names.
async fn session_of(
    state: &AppState,
    header: Option<SessionId>,
    message: &Message,
) -> Result<SessionId, A2aError> {
    let context = message.context_id.as_deref().filter(|c| !c.is_empty());
    let named = match (header, context) {
        (Some(header), Some(context)) if context != header.as_str() => {
            return Err(A2aError::invalid_params(
                format!(
                    "message.contextId {context:?} is not this request's session (X-Session-Id \
                     {header}): a context is a session here; send the header's id or no contextId"
                ),
                Some("message.contextId"),
            ));
        }
        (Some(header), _) => Some(header),
        (None, Some(context)) => Some(client_session(context).map_err(|reason| {
            A2aError::invalid_params(
                format!("message.contextId {context:?} {reason}"),
                Some("message.contextId"),
            )
        })?),
        (None, None) => None,
    };
    if let Some(task_id) = message.task_id.as_deref().filter(|t| !t.is_empty()) {
        let task = visible(state, named.as_ref(), task_id).await?;
        return Err(A2aError::UnsupportedOperation(format!(
            "task {task_id:?} is {}, a final state: it takes no more messages (every message \
             here is its own task). Send the next message without taskId, with contextId {:?}: \
             it continues the same conversation",
            task.state,
            task.session.as_str()
        )));
    }
    match named {
        Some(session) => Ok(session),
        None if state.require_session => Err(A2aError::invalid_params(
            "this server runs with --require-session: send X-Session-Id, or name the \
             conversation with message.contextId",
            Some("message.contextId"),
        )),
        None => Ok(new_session()),
    }
}

/// The stored task `id`, when `session` (the caller's, if it named one) may see it.
async fn visible(
    state: &AppState,
    session: Option<&SessionId>,
    id: &str,
) -> Result<StoredTask, A2aError> {
    let not_found = || A2aError::TaskNotFound { id: id.to_owned() };
    if id.is_empty() {
        return Err(A2aError::invalid_params(
            "id is missing; send the task's id",
            Some("id"),
        ));
    }
    let task = state.tasks.task(id).await?.ok_or_else(not_found)?;
    if session.is_some_and(|s| *s != task.session) {
        return Err(not_found());
    }
    Ok(task)
}

/// `SendMessage` and `SendStreamingMessage`: one turn, one task.
async fn send(
    req: &HttpRequest,
    state: &AppState,
    id: Option<JsonRpcId>,
    params: SendMessageRequest,
    streaming: bool,
) -> Result<HttpResponse, A2aError> {
    let memory = turn_memory(req)?;
    let write = memory.write;
    let now = request_now(req)?;
    let header = header_session(req)?;
    let configuration = params.configuration.as_ref();
    input::check_output_modes(configuration)?;
    let history_length = configuration.and_then(|c| c.history_length);
    check_history_length(history_length, "configuration.historyLength")?;
    let said = input::read_message(&params.message)?;
    let session = session_of(state, header, &params.message).await?;
    let mut response = HttpResponse::Ok();
    response.insert_header(session_header(Some(&session)));
    if !write {
        response.insert_header((
            HeaderName::from_static(MEMORY_WRITE),
            HeaderValue::from_static(MEMORY_WRITE_OFF),
        ));
    }

    // A message sent again: its task, not a second turn.
    if let Some(earlier) = state
        .tasks
        .task_for_message(&session, &params.message.message_id)
        .await?
    {
        let task = shown(&earlier, history_length, true)?;
        return Ok(if streaming {
            response
                .content_type("text/event-stream")
                .insert_header(("cache-control", "no-cache"))
                .body(stream::answered(id, task))
        } else {
            response.json(JsonRpcResponse::success(
                id,
                SendMessageResponse::task(task),
            ))
        });
    }

    let exchange = Exchange::new(session.clone(), params.message, now);
    let mut messages = said.context;
    messages.push(ChatMessage::user(said.text));
    let request = ChatCompletionRequest {
        messages,
        stream: Some(streaming),
        ..ChatCompletionRequest::default()
    };
    let Turn { input, .. } = turn::resolve(state, Some(session), now, request, None, memory)?;
    let reply = match state.agent.turn(input).await?.output {
        TurnOutput::Reply(reply) => reply.text,
        TurnOutput::Completion(completion) => completion
            .choices
            .first()
            .map(|c| reply_text(&c.message))
            .unwrap_or_default(),
        TurnOutput::Stream(turn) if streaming => {
            return Ok(response
                .content_type("text/event-stream")
                .insert_header(("cache-control", "no-cache"))
                .streaming(stream::relayed(id, exchange, turn, state.tasks.clone())));
        }
        TurnOutput::Stream(turn) => stream::collect(turn).await?,
    };
    // The turn is committed: the task is stored before anyone hears of it.
    let stored = exchange.stored(&exchange.completed(&reply))?;
    state.tasks.put_task(&stored).await?;
    if streaming {
        return Ok(response
            .content_type("text/event-stream")
            .insert_header(("cache-control", "no-cache"))
            .body(stream::whole(id, &exchange, &reply)));
    }
    let task = shown(&stored, history_length, true)?;
    Ok(response.json(JsonRpcResponse::success(
        id,
        SendMessageResponse::task(task),
    )))
}

/// `GetTask`: the task, its history cut to `historyLength`.
async fn get_task(
    req: &HttpRequest,
    state: &AppState,
    id: Option<JsonRpcId>,
    params: GetTaskRequest,
) -> Result<HttpResponse, A2aError> {
    check_history_length(params.history_length, "historyLength")?;
    let header = header_session(req)?;
    let stored = visible(state, header.as_ref(), &params.id).await?;
    let task = shown(&stored, params.history_length, true)?;
    Ok(success(id, Some(&stored.session), task))
}

/// `CancelTask`: every stored task is final, so none can be.
async fn cancel_task(
    req: &HttpRequest,
    state: &AppState,
    params: CancelTaskRequest,
) -> Result<HttpResponse, A2aError> {
    let header = header_session(req)?;
    let stored = visible(state, header.as_ref(), &params.id).await?;
    Err(A2aError::TaskNotCancelable {
        id: stored.id,
        state: stored.state,
    })
}

/// `SubscribeToTask`: every stored task is final, so there is nothing to stream.
async fn subscribe(
    req: &HttpRequest,
    state: &AppState,
    params: SubscribeToTaskRequest,
) -> Result<HttpResponse, A2aError> {
    let header = header_session(req)?;
    let stored = visible(state, header.as_ref(), &params.id).await?;
    Err(A2aError::UnsupportedOperation(format!(
        "task {:?} is {}, a final state: there is nothing to stream; GetTask gives it whole",
        stored.id, stored.state
    )))
}

/// `ListTasks`: a page of one session's tasks (`X-Session-Id`, else `contextId`), newest first.
async fn list_tasks(
    req: &HttpRequest,
    state: &AppState,
    id: Option<JsonRpcId>,
    params: ListTasksRequest,
) -> Result<HttpResponse, A2aError> {
    check_history_length(params.history_length, "historyLength")?;
    let header = header_session(req)?;
    let context = params.context_id.as_deref().filter(|c| !c.is_empty());
    let page_size = params.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
    if !(1..=MAX_PAGE_SIZE).contains(&page_size) {
        return Err(A2aError::invalid_params(
            format!("pageSize is {page_size}; send 1 to {MAX_PAGE_SIZE}"),
            Some("pageSize"),
        ));
    }
    let empty = |page_size| ListTasksResponse {
        page_size,
        ..ListTasksResponse::default()
    };
    let session = match (header, context) {
        // Another session's context: none of its tasks are the caller's.
        (Some(header), Some(context)) if context != header.as_str() => {
            return Ok(success(id, Some(&header), empty(page_size)));
        }
        (Some(header), _) => header,
        (None, Some(context)) => client_session(context).map_err(|reason| {
            A2aError::invalid_params(format!("contextId {context:?} {reason}"), Some("contextId"))
        })?,
        (None, None) => {
            return Err(A2aError::invalid_params(
                "ListTasks lists the tasks of one conversation: send X-Session-Id or contextId",
                Some("contextId"),
            ));
        }
    };
    let state_filter = match &params.status {
        None | Some(TaskState::Unspecified) => None,
        Some(TaskState::Other(other)) => {
            return Err(A2aError::invalid_params(
                format!("status {other:?} is not a task state"),
                Some("status"),
            ));
        }
        Some(known) => Some(known.as_str().to_owned()),
    };
    let updated_after = params
        .status_timestamp_after
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(|t| {
            DateTime::parse_from_rfc3339(t)
                .map(|t| t.to_utc())
                .map_err(|e| {
                    A2aError::invalid_params(
                        format!("statusTimestampAfter {t:?} is not an ISO 8601 time: {e}"),
                        Some("statusTimestampAfter"),
                    )
                })
        })
        .transpose()?;
    let after = params
        .page_token
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(read_page_token)
        .transpose()?;
    let size = usize::try_from(page_size).unwrap_or(1);
    let query = TaskQuery {
        state: state_filter,
        updated_after,
        after,
        limit: size + 1,
    };
    let mut page = state.tasks.list_tasks(&session, &query).await?;
    let more = page.tasks.len() > size;
    page.tasks.truncate(size);
    let next_page_token = match page.tasks.last() {
        Some(last) if more => page_token(last),
        _ => String::new(),
    };
    let artifacts = params.include_artifacts.unwrap_or(false);
    let tasks = page
        .tasks
        .iter()
        .map(|t| shown(t, params.history_length, artifacts))
        .collect::<Result<Vec<_>, _>>()?;
    let answer = ListTasksResponse {
        tasks,
        next_page_token,
        page_size,
        total_size: i32::try_from(page.total).unwrap_or(i32::MAX),
        ..ListTasksResponse::default()
    };
    Ok(success(id, Some(&session), answer))
}

/// The token of the page after `last`: its time (Unix milliseconds) and id.
fn page_token(last: &StoredTask) -> String {
    format!("{}:{}", last.updated_at.timestamp_millis(), last.id)
}

fn read_page_token(token: &str) -> Result<TaskCursor, A2aError> {
    let bad = || {
        A2aError::invalid_params(
            format!("pageToken {token:?} is not one this server gave; send a nextPageToken back"),
            Some("pageToken"),
        )
    };
    let (millis, id) = token.split_once(':').ok_or_else(bad)?;
    let updated_at: DateTime<Utc> = millis
        .parse::<i64>()
        .ok()
        .and_then(DateTime::from_timestamp_millis)
        .ok_or_else(bad)?;
    if id.is_empty() {
        return Err(bad());
    }
    Ok(TaskCursor {
        updated_at,
        id: id.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use protocol::a2a::ErrorCode;
    use serde_json::json;

    use super::*;

    fn code(result: Result<(String, Value), A2aError>) -> i64 {
        result.unwrap_err().rpc_error().code
    }

    #[test]
    fn an_envelope_is_a_json_rpc_2_request() {
        let request = json!({
            "jsonrpc": "2.0", "id": "a", "method": "GetTask", "params": {"id": "t"}
        });
        assert_eq!(request_id(&request), Some(JsonRpcId::String("a".into())));
        let (method, params) = envelope(request).unwrap();
        assert_eq!(method, "GetTask");
        assert_eq!(params, json!({"id": "t"}));
        let request = json!({"jsonrpc": "2.0", "method": "GetTask"});
        assert_eq!(request_id(&request), None);
        assert_eq!(envelope(request).unwrap().1, json!({}));
        assert_eq!(request_id(&json!({"id": 3})), Some(JsonRpcId::Number(3)));
        assert_eq!(request_id(&json!({"id": true})), None);
        let invalid = ErrorCode::InvalidRequest.code();
        for bad in [
            json!([{"jsonrpc": "2.0", "id": 1, "method": "GetTask"}]),
            json!("GetTask"),
            json!({"id": 1, "method": "GetTask"}),
            json!({"jsonrpc": "1.0", "id": 1, "method": "GetTask"}),
            json!({"jsonrpc": "2.0", "id": 1}),
            json!({"jsonrpc": "2.0", "id": 1, "method": 7}),
            json!({"jsonrpc": "2.0", "id": true, "method": "GetTask"}),
            json!({"jsonrpc": "2.0", "id": 1.5, "method": "GetTask"}),
        ] {
            assert_eq!(code(envelope(bad.clone())), invalid, "{bad}");
        }
    }

    #[test]
    fn page_tokens_read_back() {
        let task = StoredTask {
            id: "t-1".into(),
            session: SessionId::parse("s").unwrap(),
            message_id: "m".into(),
            state: "TASK_STATE_COMPLETED".into(),
            updated_at: DateTime::from_timestamp_millis(1_700_000_000_123).unwrap(),
            body: json!({}),
        };
        let cursor = read_page_token(&page_token(&task)).unwrap();
        assert_eq!(cursor.updated_at, task.updated_at);
        assert_eq!(cursor.id, "t-1");
        for bad in ["", "x", "12", "x:t", "12:"] {
            assert!(read_page_token(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn params_name_the_field_at_fault() {
        let e = params_of::<GetTaskRequest>(json!({"id": 5})).unwrap_err();
        let rpc = e.rpc_error();
        assert_eq!(rpc.code, ErrorCode::InvalidParams.code());
        assert!(rpc.message.starts_with("id:"), "{}", rpc.message);
        let e = params_of::<GetTaskRequest>(json!(["t"])).unwrap_err();
        assert_eq!(e.rpc_error().code, ErrorCode::InvalidParams.code());
    }
}
