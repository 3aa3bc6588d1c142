//! Bearer-key checks: `--api-key` guards `/v1`, `--admin-token` guards `/control`. Extractors, so
//! the guard is visible in each handler's signature. Keys are compared in constant time.

use std::future::{Ready, ready};

use actix_web::http::header::AUTHORIZATION;
use actix_web::{FromRequest, HttpRequest, dev::Payload, web};

use super::AppState;
use crate::error::ApiError;

/// Admin token may also come in this header, so a client can send its API key and the admin token
/// on the same connection.
pub(crate) const ADMIN_TOKEN_HEADER: &str = "x-admin-token";

fn bearer(req: &HttpRequest) -> Option<&str> {
    req.headers()
        .get(AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

fn matches(expected: &str, given: Option<&str>) -> bool {
    given.is_some_and(|g| constant_time_eq::constant_time_eq(expected.as_bytes(), g.as_bytes()))
}

fn state(req: &HttpRequest) -> &AppState {
    req.app_data::<web::Data<AppState>>()
        .expect("AppState is registered by http::configure")
}

/// Passes when no `--api-key` is set, or the request carries it as a Bearer token.
pub(crate) struct ApiKey;

impl FromRequest for ApiKey {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let result = match &state(req).api_key {
            None => Ok(ApiKey),
            Some(key) if matches(key, bearer(req)) => Ok(ApiKey),
            Some(_) if bearer(req).is_none() => Err(ApiError::Unauthorized(
                "missing API key: send Authorization: Bearer <key> (the server's --api-key)",
            )),
            Some(_) => Err(ApiError::Unauthorized("incorrect API key")),
        };
        ready(result)
    }
}

/// Passes when no `--admin-token` is set, or the request carries it (Bearer or X-Admin-Token).
pub(crate) struct AdminToken;

impl FromRequest for AdminToken {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let header = req
            .headers()
            .get(ADMIN_TOKEN_HEADER)
            .and_then(|v| v.to_str().ok());
        let result = match &state(req).admin_token {
            None => Ok(AdminToken),
            Some(token) if matches(token, header) || matches(token, bearer(req)) => Ok(AdminToken),
            Some(_) => Err(ApiError::Unauthorized(
                "missing or incorrect admin token: send Authorization: Bearer <token> or X-Admin-Token (the server's --admin-token)",
            )),
        };
        ready(result)
    }
}
