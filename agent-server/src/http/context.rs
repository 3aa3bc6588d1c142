//! Request-scoped inputs taken from headers: the session and its clock. Extractors, so a handler's
//! signature says what it needs and a missing or malformed header is rejected before it runs.

use std::future::{Ready, ready};

use actix_web::{FromRequest, HttpRequest, dev::Payload, web};
use chrono::{DateTime, Utc};
use protocol::SessionId;
use protocol::headers::{
    MEMORY_WRITE, MEMORY_WRITE_OFF, MOCK_TIME, SESSION_ID, TURN_ID, parse_mock_time,
};

use super::AppState;
use crate::agent::TurnMemory;
use crate::error::ApiError;

/// The session a request belongs to and its "now".
#[derive(Debug, Clone)]
pub(crate) struct SessionContext {
    pub session: SessionId,
    pub now: DateTime<Utc>,
}

impl FromRequest for SessionContext {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(session_context(req))
    }
}

pub(super) fn header_str<'r>(
    req: &'r HttpRequest,
    name: &'static str,
) -> Result<Option<&'r str>, ApiError> {
    req.headers()
        .get(name)
        .map(|v| {
            v.to_str().map_err(|_| ApiError::InvalidHeader {
                header: name,
                reason: "is not visible ASCII".into(),
            })
        })
        .transpose()
}

fn session_context(req: &HttpRequest) -> Result<SessionContext, ApiError> {
    let raw = header_str(req, SESSION_ID)?.ok_or(ApiError::MissingHeader {
        header: SESSION_ID,
        hint: "send X-Session-Id with 1 to 128 characters of [A-Za-z0-9._:-], for example a UUID",
    })?;
    let session = SessionId::parse(raw).map_err(|e| ApiError::InvalidHeader {
        header: SESSION_ID,
        reason: e.to_string(),
    })?;
    Ok(SessionContext {
        session,
        now: request_now(req)?,
    })
}

/// The request's "now": `X-Mock-Time` when present and allowed, else the real clock.
pub(crate) fn request_now(req: &HttpRequest) -> Result<DateTime<Utc>, ApiError> {
    let Some(raw) = header_str(req, MOCK_TIME)? else {
        return Ok(Utc::now());
    };
    let deny = req
        .app_data::<web::Data<AppState>>()
        .is_some_and(|s| s.deny_mock_time);
    if deny {
        return Err(ApiError::MockTimeDenied);
    }
    parse_mock_time(raw).map_err(|e| ApiError::InvalidHeader {
        header: MOCK_TIME,
        reason: e.to_string(),
    })
}

/// Most ids one `X-Turn-Id` may name, and the longest id.
pub(crate) const MAX_TURN_IDS: usize = 1000;
pub(crate) const MAX_TURN_ID_CHARS: usize = 128;

/// The ids `X-Turn-Id` names: comma-separated, in message (or fact) order; none without it.
pub(crate) fn turn_ids(req: &HttpRequest) -> Result<Vec<String>, ApiError> {
    let Some(raw) = header_str(req, TURN_ID)? else {
        return Ok(Vec::new());
    };
    let ids: Vec<String> = raw.split(',').map(|id| id.trim().to_owned()).collect();
    let bad = |reason: String| ApiError::InvalidHeader {
        header: TURN_ID,
        reason,
    };
    if ids.len() > MAX_TURN_IDS {
        return Err(bad(format!(
            "names {} ids; send at most {MAX_TURN_IDS}",
            ids.len()
        )));
    }
    if let Some(i) = ids.iter().position(|id| id.is_empty()) {
        return Err(bad(format!(
            "id {} of {} is empty; send comma-separated ids",
            i + 1,
            ids.len()
        )));
    }
    if let Some(id) = ids.iter().find(|id| id.chars().count() > MAX_TURN_ID_CHARS) {
        return Err(bad(format!(
            "id {id:?} is longer than {MAX_TURN_ID_CHARS} characters"
        )));
    }
    Ok(ids)
}

/// Whether a turn may write memory: `X-Memory-Write: off` answers it without storing anything;
/// no header, the default, writes. Any other value is refused rather than guessed at.
pub(crate) fn memory_write(req: &HttpRequest) -> Result<bool, ApiError> {
    match header_str(req, MEMORY_WRITE)? {
        None => Ok(true),
        Some(value) if value.trim().eq_ignore_ascii_case(MEMORY_WRITE_OFF) => Ok(false),
        Some(value) => Err(ApiError::InvalidHeader {
            header: MEMORY_WRITE,
            reason: format!("is {value:?}; the one value defined is \"{MEMORY_WRITE_OFF}\""),
        }),
    }
}

/// What a turn may do with memory, from `X-Memory-Write` and `X-Turn-Id`: the same for a chat
/// turn and a Responses turn.
pub(crate) fn turn_memory(req: &HttpRequest) -> Result<TurnMemory, ApiError> {
    Ok(TurnMemory {
        write: memory_write(req)?,
        turn_ids: turn_ids(req)?,
    })
}
