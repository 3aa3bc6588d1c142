//! Request-scoped inputs taken from headers: the session and its clock. Extractors, so a handler's
//! signature says what it needs and a missing or malformed header is rejected before it runs.

use std::future::{Ready, ready};

use actix_web::{FromRequest, HttpRequest, dev::Payload, web};
use chrono::{DateTime, Utc};
use protocol::SessionId;
use protocol::headers::{MOCK_TIME, SESSION_ID, parse_mock_time};

use super::AppState;
use crate::error::ApiError;

/// The session a request belongs to and its "now".
#[derive(Debug, Clone)]
pub struct SessionContext {
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
pub fn request_now(req: &HttpRequest) -> Result<DateTime<Utc>, ApiError> {
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
