//! The Responses API: `POST /v1/responses`, `GET`/`DELETE /v1/responses/{id}` and
//! `GET /v1/responses/{id}/input_items`.
//!
//! A Responses request runs the same turn as a chat request ([`Agent::turn`]): its items, and
//! those of the chain or conversation it continues, are translated to chat messages ([`input`]),
//! and what the turn produced is encoded as a response object ([`output`]) or as semantic events
//! ([`stream`]). The state is this server's own: a `previous_response_id` or `conversation` is
//! resolved here from the [`ResponseStore`], never forwarded to an upstream model. An upstream
//! model that serves the Responses API gets the turn's items in that API's own terms too
//! ([`ResponsesTurn`]); its answer comes back as a completion or chunks like any upstream's, and
//! is encoded here with this server's own ids and sequence numbers.
//!
//! A request's `mcp` tools name remote MCP servers that the agent lists and calls itself
//! ([`crate::mcp`], [`crate::agent::tools`]): each is checked against `--mcp-allowed-servers`
//! here, before the turn (a refusal is a 400 and nothing connects), and what the tools did comes
//! back as `mcp_list_tools` and `mcp_call` items before the answer's own ([`output`]).
//!
//! A stored response is written after the turn is committed and before the response (or its
//! terminal event) goes out, so an acknowledged response can be retrieved and chained after a
//! restart.
//!
//! [`Agent::turn`]: crate::agent::Agent::turn
//! [`ResponseStore`]: crate::memory::responses::ResponseStore

pub(crate) mod conversations;
pub(crate) mod input;
pub(crate) mod output;
pub(crate) mod stream;

use std::convert::Infallible;
use std::sync::Arc;

use actix_web::{HttpRequest, HttpResponse, web};
use bytes::Bytes;
use futures_util::StreamExt as _;
use protocol::SessionId;
use protocol::headers::{MEMORY_WRITE, MEMORY_WRITE_OFF};
use protocol::openai::responses::ResponseCreateRequest;
use protocol::openai::{ChatCompletionChunk, StreamOptions};
use serde::Deserialize;
use serde_json::{Value, json};

use super::AppState;
use super::auth::ApiKey;
use super::body::read_json;
use super::chat::validate_parameters;
use super::context::turn_memory;
use super::session::{self, Caller, Claims, ok_in};
use super::turn::{self, Turn};
use crate::agent::{StreamEvent, TurnOutput, TurnStream};
use crate::error::ApiError;
use crate::llm::ResponsesTurn;
use crate::memory::MemoryError;
use crate::memory::responses::{ResponseStore, StoredResponse, conversation_additions};
use input::new_id;
use output::{Answer, Head};
use stream::Events;

#[utoipa::path(
    post,
    path = "/v1/responses",
    tag = "responses",
    request_body(content = Object, description = "OpenAI Responses API request: input (string or items), instructions, model, tools (function tools, and mcp: remote MCP servers this server lists and calls itself), tool_choice, temperature, max_output_tokens, store, previous_response_id, conversation, metadata, stream; unknown fields accepted"),
    params(
        ("X-Session-Id" = Option<String>, Header, description = "Session scope of memory; without it, the session of the conversation or previous response, else a new one (named in the X-Session-Id response header)"),
        ("X-Mock-Time" = Option<String>, Header, description = "RFC 3339 time to use as now (time travel)"),
    ),
    responses(
        (status = 200, description = "A response object, or with stream=true server-sent semantic events (response.created ... response.completed)", body = Object),
        (status = 400, description = "Invalid request: malformed items, an unknown previous_response_id, a function_call_output without its call, an mcp tool naming a server --mcp-allowed-servers does not allow (mcp_server_not_allowed) or asking for approvals (mcp_approval_unsupported)", body = protocol::openai::ErrorBody),
        (status = 401, description = "Missing or wrong API key", body = protocol::openai::ErrorBody),
        (status = 404, description = "The conversation does not exist (or belongs to another session)", body = protocol::openai::ErrorBody),
        (status = 409, description = "X-Session-Id names another session than the conversation or previous response; or the session was reset while the turn ran", body = protocol::openai::ErrorBody),
        (status = 503, description = "A memory backend is unavailable", body = protocol::openai::ErrorBody),
    )
)]
pub(crate) async fn create(
    _key: ApiKey,
    caller: Caller,
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let memory = turn_memory(&req)?;
    let write = memory.write;
    let request: ResponseCreateRequest = read_json(&req, payload, state.max_body_bytes).await?;
    // Before anything else: no connection is made to a server the allow-list refuses.
    let mcp = state
        .agent
        .mcp()
        .admit(request.tools.as_deref().unwrap_or_default())?;
    let new_items = input::new_items(&request)?;
    let conversation = conversation_of(&request)?;
    let (bound, prior) = continued(&state, &request, conversation.as_deref()).await?;
    let prior_items: Vec<&Value> = prior.items().collect();
    input::check_outputs_answer_calls(&prior_items, &new_items)?;
    let store = request.store.unwrap_or(true);
    let user = ["user", "safety_identifier"]
        .iter()
        .find_map(|f| request.extra.get(*f).and_then(Value::as_str));
    let session = session::resolve(
        &state,
        &caller,
        Claims {
            bound: bound.as_ref(),
            user,
            may_create: store,
        },
    )?;

    // Borrowed from the stored chain: a continued turn copies no item it does not send on.
    let items: Vec<&Value> = prior_items.into_iter().chain(&new_items).collect();
    let mut chat = input::chat_request(
        &request,
        input::messages(request.instructions.as_deref(), items.iter().copied()),
    )?;
    if request.stream == Some(true) {
        // The relay passes usage on only when asked; the terminal event carries it.
        chat.stream_options = Some(StreamOptions {
            include_usage: Some(true),
            ..StreamOptions::default()
        });
    }
    validate_parameters(&chat)?;
    // The new turn is the last user message; said in this API's terms before the chat rule's.
    if !items.iter().any(|i| i["role"] == "user") {
        return Err(ApiError::invalid(
            "input has no user message (nor has the previous response or conversation); the last user message is the new turn",
            Some("input"),
        ));
    }
    // An upstream model that serves this API takes the turn in its terms (the builtin model
    // answers the chat translation, so it is not kept for it).
    let responses = state
        .agent
        .model()
        .pass_through()
        .is_some()
        .then(|| ResponsesTurn {
            request: request.clone(),
            items: input::upstream_items(items.iter().copied()),
        });

    let Turn { mut input, model } =
        turn::resolve(&state, session.clone(), caller.now, chat, responses, memory)?;
    input.mcp = mcp;
    let head = Head {
        id: new_id("resp"),
        model,
        created_at: chrono::Utc::now(),
        previous_response_id: request.previous_response_id.clone(),
        conversation: conversation.clone(),
        store,
        request: request.clone(),
    };
    let saver = Saver {
        responses: Arc::clone(&state.responses),
        session: session.clone(),
        store,
        id: head.id.clone(),
        previous_id: request.previous_response_id.clone(),
        conversation,
        created_at: head.created_at,
        input: new_items,
    };
    let turned = state.agent.turn(input).await?;

    let mut response = ok_in(session.as_ref());
    if !write {
        // The memory turn was read-only (the response object itself follows `store`).
        response.insert_header((MEMORY_WRITE, MEMORY_WRITE_OFF));
    }
    let mut answer = match turned.output {
        TurnOutput::Reply(reply) => Answer::from_reply(reply),
        TurnOutput::Completion(completion) => Answer::from_completion(completion),
        TurnOutput::Stream(turn) => {
            return Ok(response
                .content_type("text/event-stream")
                .insert_header(("cache-control", "no-cache"))
                .streaming(relayed(turn, Events::start(head), saver)));
        }
    };
    answer.items = output::tool_items(&turned.tools);
    if request.stream == Some(true) {
        let mut events = Events::start(head);
        events.answer(&answer);
        let body = events.close_items();
        saver.save(&body).await?;
        events.finish(body);
        Ok(response
            .content_type("text/event-stream")
            .insert_header(("cache-control", "no-cache"))
            .body(events.take()))
    } else {
        let body = head.finished(&answer);
        saver.save(&body).await?;
        Ok(response.json(body))
    }
}

/// The conversation a request names: `"conv_..."` or `{"id": "conv_..."}`.
fn conversation_of(request: &ResponseCreateRequest) -> Result<Option<String>, ApiError> {
    let conversation = match request.extra.get("conversation") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(id)) => id.clone(),
        Some(Value::Object(o)) => match o.get("id") {
            Some(Value::String(id)) => id.clone(),
            _ => {
                return Err(ApiError::invalid(
                    "conversation.id is missing",
                    Some("conversation"),
                ));
            }
        },
        Some(other) => {
            return Err(ApiError::invalid(
                format!("conversation is {other}; send a conversation id or {{\"id\": ...}}"),
                Some("conversation"),
            ));
        }
    };
    if request.previous_response_id.is_some() {
        return Err(ApiError::invalid(
            "previous_response_id and conversation cannot be used together",
            Some("previous_response_id"),
        ));
    }
    Ok(Some(conversation))
}

/// What a request continues: a `previous_response_id` chain (oldest first, shared with the
/// response store) or a conversation's items; nothing for a new exchange.
#[derive(Default)]
struct Prior {
    chain: Vec<Arc<StoredResponse>>,
    conversation: Vec<Value>,
}

impl Prior {
    /// Its items, oldest first.
    fn items(&self) -> impl Iterator<Item = &Value> {
        self.chain
            .iter()
            .flat_map(|response| response.items())
            .chain(&self.conversation)
    }
}

/// The session of the chain or conversation a request continues, and what it continues.
async fn continued(
    state: &AppState,
    request: &ResponseCreateRequest,
    conversation: Option<&str>,
) -> Result<(Option<SessionId>, Prior), ApiError> {
    if let Some(previous) = &request.previous_response_id {
        let chain = state.responses.chain(previous).await?;
        // A header naming another session is told apart from an unknown id (409, not 400):
        // the client holds the id, so it learns nothing it did not know.
        let Some(last) = chain.last() else {
            return Err(ApiError::invalid(
                format!("previous response with id {previous:?} not found"),
                Some("previous_response_id"),
            ));
        };
        let bound = last.session.clone();
        return Ok((
            Some(bound),
            Prior {
                chain,
                ..Prior::default()
            },
        ));
    }
    if let Some(id) = conversation {
        let found = state.responses.conversation(id).await?;
        // A header of another session is a 409 (in `session::resolve`), not a 404.
        let Some(found) = found else {
            return Err(ApiError::NoSuchObject {
                kind: "conversation",
                id: id.to_owned(),
            });
        };
        let conversation = state.responses.conversation_items(id).await?;
        return Ok((
            Some(found.session),
            Prior {
                conversation,
                ..Prior::default()
            },
        ));
    }
    Ok((None, Prior::default()))
}

/// Stores a finished response (when `store`), or adds it to its conversation.
struct Saver {
    responses: Arc<dyn ResponseStore>,
    session: Option<SessionId>,
    store: bool,
    id: String,
    previous_id: Option<String>,
    conversation: Option<String>,
    created_at: chrono::DateTime<chrono::Utc>,
    input: Vec<Value>,
}

impl Saver {
    async fn save(&self, body: &Value) -> Result<(), MemoryError> {
        let Some(session) = &self.session else {
            return Ok(());
        };
        let response = StoredResponse {
            id: self.id.clone(),
            session: session.clone(),
            previous_id: self.previous_id.clone(),
            conversation: self.conversation.clone(),
            created_at: self.created_at,
            input: self.input.clone(),
            body: body.clone(),
        };
        if self.store {
            self.responses.put_response(Arc::new(response)).await
        } else if let Some(conversation) = &self.conversation {
            self.responses
                .append_items(conversation, &conversation_additions(&response))
                .await
        } else {
            Ok(())
        }
    }
}

/// A relayed upstream stream as semantic events; the terminal event follows the turn's commit
/// (the relay's `Done`) and the response's storage.
fn relayed(
    turn: TurnStream,
    mut events: Events,
    saver: Saver,
) -> impl futures_util::Stream<Item = Result<Bytes, Infallible>> + 'static {
    let opening = events.take();
    let rest = futures_util::stream::unfold(Some((turn, events, saver)), |state| async move {
        let (mut turn, mut events, saver) = state?;
        let batch = turn.next_batch().await?;
        for event in batch {
            match event {
                StreamEvent::Forwarded(data) => {
                    match serde_json::from_str::<ChatCompletionChunk>(&data) {
                        Ok(chunk) => events.chunk(&chunk),
                        Err(e) => {
                            tracing::warn!(error = %e, "an upstream chunk did not parse; skipped")
                        }
                    }
                }
                StreamEvent::Chunk(chunk) => events.chunk(&chunk),
                StreamEvent::Done => {
                    let body = events.close_items();
                    match saver.save(&body).await {
                        Ok(()) => events.finish(body),
                        Err(e) => events.fail(&ApiError::from(e)),
                    }
                    return Some((Ok(events.take()), None));
                }
                StreamEvent::Failed(e) => {
                    events.fail(&ApiError::from(e));
                    return Some((Ok(events.take()), None));
                }
            }
        }
        Some((Ok(events.take()), Some((turn, events, saver))))
    });
    futures_util::stream::iter([Ok(opening)]).chain(rest)
}

/// A stored response the caller may see, else 404 (the same for one that does not exist).
async fn visible(state: &AppState, caller: &Caller, id: &str) -> Result<StoredResponse, ApiError> {
    state
        .responses
        .response(id)
        .await?
        .filter(|r| session::may_see(caller, &r.session))
        .ok_or_else(|| ApiError::NoSuchObject {
            kind: "response",
            id: id.to_owned(),
        })
}

#[utoipa::path(
    get,
    path = "/v1/responses/{response_id}",
    tag = "responses",
    params(
        ("response_id" = String, Path, description = "The response's id"),
        ("X-Session-Id" = Option<String>, Header, description = "When sent, the response must belong to this session"),
    ),
    responses(
        (status = 200, description = "The stored response object", body = Object),
        (status = 404, description = "No such response in this session (or it was created with store: false, deleted, or reset)", body = protocol::openai::ErrorBody),
    )
)]
pub(crate) async fn retrieve(
    _key: ApiKey,
    caller: Caller,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let stored = visible(&state, &caller, &id).await?;
    Ok(ok_in(Some(&stored.session)).json(stored.body))
}

#[utoipa::path(
    delete,
    path = "/v1/responses/{response_id}",
    tag = "responses",
    params(
        ("response_id" = String, Path, description = "The response's id"),
        ("X-Session-Id" = Option<String>, Header, description = "When sent, the response must belong to this session"),
    ),
    responses(
        (status = 200, description = "{\"id\", \"object\": \"response.deleted\", \"deleted\": true}", body = Object),
        (status = 404, description = "No such response in this session", body = protocol::openai::ErrorBody),
    )
)]
pub(crate) async fn delete(
    _key: ApiKey,
    caller: Caller,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let stored = visible(&state, &caller, &id).await?;
    state.responses.delete_response(&stored.id).await?;
    Ok(ok_in(Some(&stored.session))
        .json(json!({"id": stored.id, "object": "response.deleted", "deleted": true})))
}

/// `limit`, `order` and `after` of a list request.
#[derive(Debug, Deserialize)]
pub(crate) struct ListQuery {
    limit: Option<usize>,
    order: Option<String>,
    after: Option<String>,
}

impl ListQuery {
    pub(crate) fn of(req: &HttpRequest) -> Result<Self, ApiError> {
        web::Query::<Self>::from_query(req.query_string())
            .map(web::Query::into_inner)
            .map_err(|e| ApiError::invalid(format!("invalid query: {e}"), None))
    }

    /// A page of `items` (oldest first) as OpenAI's list object; newest first unless
    /// `order=asc`.
    pub(crate) fn page(&self, mut items: Vec<Value>) -> Result<Value, ApiError> {
        let limit = self.limit.unwrap_or(20);
        if !(1..=100).contains(&limit) {
            return Err(ApiError::invalid(
                format!("limit is {limit}; use 1 to 100"),
                Some("limit"),
            ));
        }
        match self.order.as_deref() {
            None | Some("desc") => items.reverse(),
            Some("asc") => {}
            Some(other) => {
                return Err(ApiError::invalid(
                    format!("order is {other:?}; use \"asc\" or \"desc\""),
                    Some("order"),
                ));
            }
        }
        if let Some(after) = &self.after {
            let at = items.iter().position(|i| i["id"] == after.as_str());
            items.drain(..at.map_or(0, |at| at + 1));
        }
        let has_more = items.len() > limit;
        items.truncate(limit);
        let first = items.first().map(|i| i["id"].clone()).unwrap_or(json!(""));
        let last = items.last().map(|i| i["id"].clone()).unwrap_or(json!(""));
        Ok(
            json!({"object": "list", "data": items, "first_id": first, "last_id": last, "has_more": has_more}),
        )
    }
}

#[utoipa::path(
    get,
    path = "/v1/responses/{response_id}/input_items",
    tag = "responses",
    params(
        ("response_id" = String, Path, description = "The response's id"),
        ("limit" = Option<usize>, Query, description = "1 to 100, default 20"),
        ("order" = Option<String>, Query, description = "asc or desc (default)"),
        ("after" = Option<String>, Query, description = "An item id to list after"),
        ("X-Session-Id" = Option<String>, Header, description = "When sent, the response must belong to this session"),
    ),
    responses(
        (status = 200, description = "A list of the response's input items", body = Object),
        (status = 404, description = "No such response in this session", body = protocol::openai::ErrorBody),
    )
)]
pub(crate) async fn input_items(
    _key: ApiKey,
    caller: Caller,
    id: web::Path<String>,
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let query = ListQuery::of(&req)?;
    let stored = visible(&state, &caller, &id).await?;
    let page = query.page(stored.input)?;
    Ok(ok_in(Some(&stored.session)).json(page))
}
