//! Which session a request of the OpenAI APIs belongs to, when the client may send no
//! `X-Session-Id` (docs/agent-server.md, "Sessions", holds the threat model).
//!
//! In order:
//! 1. `X-Session-Id`; a conversation or previous response the request names must belong to it
//!    (else 409: the client mixed two sessions);
//! 2. the session of the request's `conversation` or `previous_response_id`;
//! 3. with `--session-from-user`, the OpenAI `user` (or `safety_identifier`) field, namespaced and
//!    hashed with the API key ([`from_user`]);
//! 4. a new session, for a Responses request that stores (so a client without the header can
//!    chain with `previous_response_id`);
//! 5. none: the request is answered without memory and nothing is stored (`X-Memory-Write: off`
//!    on the answer says so).
//!
//! `--require-session` turns all of this off: a request without `X-Session-Id` is a 400.

use std::future::{Ready, ready};

use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{FromRequest, HttpRequest, HttpResponse, HttpResponseBuilder, dev::Payload, web};
use chrono::{DateTime, Utc};
use protocol::SessionId;
use protocol::headers::{MEMORY_WRITE, MEMORY_WRITE_OFF, SESSION_ID};
use sha2::{Digest as _, Sha256};

use super::AppState;
use super::context::{header_str, request_now};
use crate::error::ApiError;

/// Prefix of sessions made for a client that named none. Such an id is a capability like a
/// response id: unguessable, and usable as an `X-Session-Id` afterwards.
pub(crate) const NEW_SESSION_PREFIX: &str = "auto:";
/// Prefix of sessions derived from the `user` field; refused in `X-Session-Id`, so a client
/// cannot name another user's derived session.
pub(crate) const USER_SESSION_PREFIX: &str = "user:";

/// The request's session header, if any, and its "now". With `--require-session`, the header
/// is required.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub header: Option<SessionId>,
    pub now: DateTime<Utc>,
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(caller(req))
    }
}

fn caller(req: &HttpRequest) -> Result<Caller, ApiError> {
    let require = req
        .app_data::<web::Data<AppState>>()
        .is_some_and(|s| s.require_session);
    let header = header_session(req)?;
    if header.is_none() && require {
        return Err(ApiError::MissingHeader {
            header: SESSION_ID,
            hint: "this server runs with --require-session: send X-Session-Id with 1 to 128 characters of [A-Za-z0-9._:-], for example a UUID",
        });
    }
    Ok(Caller {
        header,
        now: request_now(req)?,
    })
}

/// The session `X-Session-Id` names, if the request carries it.
pub(crate) fn header_session(req: &HttpRequest) -> Result<Option<SessionId>, ApiError> {
    header_str(req, SESSION_ID)?
        .map(|raw| {
            client_session(raw).map_err(|reason| ApiError::InvalidHeader {
                header: SESSION_ID,
                reason,
            })
        })
        .transpose()
}

/// A session a client names (in `X-Session-Id`, or an A2A `contextId`); else why it cannot be
/// one. Sessions derived from the `user` field cannot be named.
pub(crate) fn client_session(raw: &str) -> Result<SessionId, String> {
    let session = SessionId::parse(raw).map_err(|e| e.to_string())?;
    if session.as_str().starts_with(USER_SESSION_PREFIX) {
        return Err(format!(
            "starts with {USER_SESSION_PREFIX:?}, which names sessions derived from the user field; choose another id"
        ));
    }
    Ok(session)
}

/// What a request says about its session besides the header.
#[derive(Debug, Default)]
pub(crate) struct Claims<'a> {
    /// The session of the conversation or previous response the request continues.
    pub bound: Option<&'a SessionId>,
    /// The OpenAI `user` or `safety_identifier` field.
    pub user: Option<&'a str>,
    /// Whether a new session may be made (a Responses request that stores).
    pub may_create: bool,
}

/// The session a request belongs to; `None`: answer without memory.
pub(crate) fn resolve(
    state: &AppState,
    caller: &Caller,
    claims: Claims<'_>,
) -> Result<Option<SessionId>, ApiError> {
    if let Some(header) = &caller.header {
        return match claims.bound {
            Some(bound) if bound != header => Err(ApiError::SessionMismatch),
            _ => Ok(Some(header.clone())),
        };
    }
    if let Some(bound) = claims.bound {
        return Ok(Some(bound.clone()));
    }
    if state.session_from_user
        && let Some(user) = claims.user.filter(|u| !u.is_empty())
    {
        return Ok(Some(from_user(state.api_key.as_deref(), user)));
    }
    Ok(claims.may_create.then(new_session))
}

/// Whether `caller` may see state of `owner`: a caller with a header only its own session's;
/// one without, anything it holds the id of (ids are capabilities; docs/agent-server.md).
pub(crate) fn may_see(caller: &Caller, owner: &SessionId) -> bool {
    caller.header.as_ref().is_none_or(|h| h == owner)
}

/// A new, unguessable session.
pub(crate) fn new_session() -> SessionId {
    let id = format!("{NEW_SESSION_PREFIX}{}", uuid::Uuid::new_v4().simple());
    SessionId::parse(&id).expect("a prefix and hex digits form a session id")
}

/// The session of an OpenAI `user` value: hashed with the API key, so that the same `user` under
/// another key is another session and the value cannot be read back from the id.
pub(crate) fn from_user(api_key: Option<&str>, user: &str) -> SessionId {
    let mut hash = Sha256::new();
    hash.update(api_key.unwrap_or_default().as_bytes());
    hash.update([0]);
    hash.update(user.as_bytes());
    let digest = hash.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    SessionId::parse(&format!("{USER_SESSION_PREFIX}{hex}"))
        .expect("a prefix and hex digits form a session id")
}

/// The header naming the session on an answer: `X-Session-Id`, or `X-Memory-Write: off` when
/// the request was answered without memory.
pub(crate) fn session_header(session: Option<&SessionId>) -> (HeaderName, HeaderValue) {
    match session {
        Some(session) => (
            HeaderName::from_static(SESSION_ID),
            HeaderValue::from_str(session.as_str()).expect("session ids are visible ASCII"),
        ),
        None => (
            HeaderName::from_static(MEMORY_WRITE),
            HeaderValue::from_static(MEMORY_WRITE_OFF),
        ),
    }
}

/// A 200 answer naming `session` ([`session_header`]).
pub(crate) fn ok_in(session: Option<&SessionId>) -> HttpResponseBuilder {
    let mut response = HttpResponse::Ok();
    response.insert_header(session_header(session));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_sessions_are_namespaced_hashed_and_keyed() {
        let a = from_user(None, "alice");
        assert!(a.as_str().starts_with(USER_SESSION_PREFIX));
        assert!(!a.as_str().contains("alice"));
        assert_eq!(a, from_user(None, "alice"));
        assert_ne!(a, from_user(None, "bob"));
        assert_ne!(a, from_user(Some("key"), "alice"));
    }

    #[test]
    fn new_sessions_differ() {
        assert_ne!(new_session(), new_session());
        assert!(new_session().as_str().starts_with(NEW_SESSION_PREFIX));
    }
}
