//! The Conversations API, so that a Responses request's `conversation` works:
//! `POST /v1/conversations`, `GET`/`POST`/`DELETE /v1/conversations/{id}`, and
//! `GET`/`POST /v1/conversations/{id}/items`, `GET`/`DELETE /v1/conversations/{id}/items/{item_id}`.
//!
//! A conversation belongs to one session: `X-Session-Id`, or the `user` session with
//! `--session-from-user`, else a new one (named in the `X-Session-Id` response header). Responses
//! that name it add their input and output items to it.

use actix_web::{HttpRequest, HttpResponse, web};
use protocol::openai::responses::Item;
use serde::Deserialize;
use serde_json::{Value, json};

use super::ListQuery;
use super::input::{new_id, normalise_items};
use crate::error::ApiError;
use crate::http::AppState;
use crate::http::auth::ApiKey;
use crate::http::body::read_json;
use crate::http::session::{self, Caller, Claims, ok_in};
use crate::memory::responses::Conversation;

/// Most items one request may add, as OpenAI allows.
const MAX_NEW_ITEMS: usize = 20;

#[derive(Debug, Default, Deserialize)]
pub(crate) struct CreateConversation {
    #[serde(default)]
    items: Option<Vec<Item>>,
    #[serde(default)]
    metadata: Option<Value>,
    /// The OpenAI `user` field, for `--session-from-user`.
    #[serde(default)]
    user: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct UpdateConversation {
    metadata: Value,
}

#[derive(Debug, Deserialize)]
pub(crate) struct AddItems {
    items: Vec<Item>,
}

fn object(conversation: &Conversation) -> Value {
    json!({
        "id": conversation.id,
        "object": "conversation",
        "created_at": conversation.created_at.timestamp(),
        "metadata": conversation.metadata,
    })
}

fn checked_metadata(metadata: Option<Value>) -> Result<Value, ApiError> {
    match metadata {
        None | Some(Value::Null) => Ok(json!({})),
        Some(Value::Object(map)) if map.len() <= 16 && map.values().all(Value::is_string) => {
            Ok(Value::Object(map))
        }
        Some(_) => Err(ApiError::invalid(
            "metadata must be an object of at most 16 string values",
            Some("metadata"),
        )),
    }
}

fn checked_items(items: Vec<Item>) -> Result<Vec<Value>, ApiError> {
    if items.len() > MAX_NEW_ITEMS {
        return Err(ApiError::invalid(
            format!(
                "items has {} entries; send at most {MAX_NEW_ITEMS}",
                items.len()
            ),
            Some("items"),
        ));
    }
    normalise_items(items, "items")
}

/// A conversation the caller may see, else 404.
async fn visible(state: &AppState, caller: &Caller, id: &str) -> Result<Conversation, ApiError> {
    state
        .responses
        .conversation(id)
        .await?
        .filter(|c| session::may_see(caller, &c.session))
        .ok_or_else(|| ApiError::NoSuchObject {
            kind: "conversation",
            id: id.to_owned(),
        })
}

fn answer(conversation: &Conversation, body: Value) -> HttpResponse {
    ok_in(Some(&conversation.session)).json(body)
}

#[utoipa::path(
    post,
    path = "/v1/conversations",
    tag = "conversations",
    request_body(content = Object, description = "{\"items\": [...], \"metadata\": {...}}, both optional"),
    params(("X-Session-Id" = Option<String>, Header, description = "The session the conversation belongs to; without it, a new one (named in the X-Session-Id response header)")),
    responses(
        (status = 200, description = "The conversation object", body = Object),
        (status = 400, description = "Malformed items or metadata", body = protocol::openai::ErrorBody),
    )
)]
pub(crate) async fn create(
    _key: ApiKey,
    caller: Caller,
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let body: CreateConversation = read_json(&req, payload, state.max_body_bytes).await?;
    let items = checked_items(body.items.unwrap_or_default())?;
    let metadata = checked_metadata(body.metadata)?;
    let claims = Claims {
        bound: None,
        user: body.user.as_deref(),
        may_create: true,
    };
    let session = session::resolve(&state, &caller, claims)?.ok_or(ApiError::Internal(
        "no session was made for a new conversation",
    ))?;
    let conversation = Conversation {
        id: new_id("conv"),
        session,
        created_at: chrono::Utc::now(),
        metadata,
    };
    state
        .responses
        .put_conversation(&conversation, &items)
        .await?;
    Ok(answer(&conversation, object(&conversation)))
}

#[utoipa::path(
    get,
    path = "/v1/conversations/{conversation_id}",
    tag = "conversations",
    params(("conversation_id" = String, Path, description = "The conversation's id")),
    responses(
        (status = 200, description = "The conversation object", body = Object),
        (status = 404, description = "No such conversation in this session", body = protocol::openai::ErrorBody),
    )
)]
pub(crate) async fn retrieve(
    _key: ApiKey,
    caller: Caller,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let conversation = visible(&state, &caller, &id).await?;
    Ok(answer(&conversation, object(&conversation)))
}

#[utoipa::path(
    post,
    path = "/v1/conversations/{conversation_id}",
    tag = "conversations",
    request_body(content = Object, description = "{\"metadata\": {...}}"),
    params(("conversation_id" = String, Path, description = "The conversation's id")),
    responses(
        (status = 200, description = "The updated conversation object", body = Object),
        (status = 404, description = "No such conversation in this session", body = protocol::openai::ErrorBody),
    )
)]
pub(crate) async fn update(
    _key: ApiKey,
    caller: Caller,
    id: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let body: UpdateConversation = read_json(&req, payload, state.max_body_bytes).await?;
    let metadata = checked_metadata(Some(body.metadata))?;
    let mut conversation = visible(&state, &caller, &id).await?;
    state
        .responses
        .update_conversation(&conversation.id, &metadata)
        .await?;
    conversation.metadata = metadata;
    Ok(answer(&conversation, object(&conversation)))
}

#[utoipa::path(
    delete,
    path = "/v1/conversations/{conversation_id}",
    tag = "conversations",
    params(("conversation_id" = String, Path, description = "The conversation's id")),
    responses(
        (status = 200, description = "{\"id\", \"object\": \"conversation.deleted\", \"deleted\": true}", body = Object),
        (status = 404, description = "No such conversation in this session", body = protocol::openai::ErrorBody),
    )
)]
pub(crate) async fn delete(
    _key: ApiKey,
    caller: Caller,
    id: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let conversation = visible(&state, &caller, &id).await?;
    state
        .responses
        .delete_conversation(&conversation.id)
        .await?;
    let body = json!({"id": conversation.id, "object": "conversation.deleted", "deleted": true});
    Ok(answer(&conversation, body))
}

#[utoipa::path(
    get,
    path = "/v1/conversations/{conversation_id}/items",
    tag = "conversations",
    params(
        ("conversation_id" = String, Path, description = "The conversation's id"),
        ("limit" = Option<usize>, Query, description = "1 to 100, default 20"),
        ("order" = Option<String>, Query, description = "asc or desc (default)"),
        ("after" = Option<String>, Query, description = "An item id to list after"),
    ),
    responses(
        (status = 200, description = "A list of the conversation's items", body = Object),
        (status = 404, description = "No such conversation in this session", body = protocol::openai::ErrorBody),
    )
)]
pub(crate) async fn list_items(
    _key: ApiKey,
    caller: Caller,
    id: web::Path<String>,
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let query = ListQuery::of(&req)?;
    let conversation = visible(&state, &caller, &id).await?;
    let items = state.responses.conversation_items(&conversation.id).await?;
    Ok(answer(&conversation, query.page(items)?))
}

#[utoipa::path(
    post,
    path = "/v1/conversations/{conversation_id}/items",
    tag = "conversations",
    request_body(content = Object, description = "{\"items\": [...]}: up to 20 items"),
    params(("conversation_id" = String, Path, description = "The conversation's id")),
    responses(
        (status = 200, description = "A list of the added items", body = Object),
        (status = 400, description = "Malformed items", body = protocol::openai::ErrorBody),
        (status = 404, description = "No such conversation in this session", body = protocol::openai::ErrorBody),
    )
)]
pub(crate) async fn add_items(
    _key: ApiKey,
    caller: Caller,
    id: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let body: AddItems = read_json(&req, payload, state.max_body_bytes).await?;
    let items = checked_items(body.items)?;
    let conversation = visible(&state, &caller, &id).await?;
    state
        .responses
        .append_items(&conversation.id, &items)
        .await?;
    let first = items.first().map(|i| i["id"].clone());
    let last = items.last().map(|i| i["id"].clone());
    let body = json!({"object": "list", "data": items, "first_id": first, "last_id": last, "has_more": false});
    Ok(answer(&conversation, body))
}

#[utoipa::path(
    get,
    path = "/v1/conversations/{conversation_id}/items/{item_id}",
    tag = "conversations",
    params(
        ("conversation_id" = String, Path, description = "The conversation's id"),
        ("item_id" = String, Path, description = "The item's id"),
    ),
    responses(
        (status = 200, description = "The item", body = Object),
        (status = 404, description = "No such conversation in this session, or no such item in it", body = protocol::openai::ErrorBody),
    )
)]
pub(crate) async fn retrieve_item(
    _key: ApiKey,
    caller: Caller,
    path: web::Path<(String, String)>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (id, item_id) = path.into_inner();
    let conversation = visible(&state, &caller, &id).await?;
    let item = state
        .responses
        .conversation_items(&conversation.id)
        .await?
        .into_iter()
        .find(|i| i["id"] == item_id.as_str())
        .ok_or(ApiError::NoSuchObject {
            kind: "conversation item",
            id: item_id,
        })?;
    Ok(answer(&conversation, item))
}

#[utoipa::path(
    delete,
    path = "/v1/conversations/{conversation_id}/items/{item_id}",
    tag = "conversations",
    params(
        ("conversation_id" = String, Path, description = "The conversation's id"),
        ("item_id" = String, Path, description = "The item's id"),
    ),
    responses(
        (status = 200, description = "The conversation object", body = Object),
        (status = 404, description = "No such conversation in this session, or no such item in it", body = protocol::openai::ErrorBody),
    )
)]
pub(crate) async fn delete_item(
    _key: ApiKey,
    caller: Caller,
    path: web::Path<(String, String)>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (id, item_id) = path.into_inner();
    let conversation = visible(&state, &caller, &id).await?;
    if !state
        .responses
        .delete_item(&conversation.id, &item_id)
        .await?
    {
        return Err(ApiError::NoSuchObject {
            kind: "conversation item",
            id: item_id,
        });
    }
    Ok(answer(&conversation, object(&conversation)))
}
