//! The one table from API errors to HTTP statuses. Every error a client of `judge serve` sees
//! goes through it and has the body `{"error": {"message", "code"}}`, so a dashboard or a script
//! can show the message as it is.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde_json::json;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Input that can never succeed as sent: the message says what to change.
    #[error("{0}")]
    BadRequest(String),
    #[error("{what} `{id}` does not exist")]
    NotFound { what: &'static str, id: String },
    /// Valid input the resource's current state refuses (starting a running simulation).
    #[error("{0}")]
    Conflict(String),
    /// Well-formed input that names things which cannot go together (comparing an LTM run with
    /// a load run).
    #[error("{0}")]
    Unprocessable(String),
    /// A service the request needs is down (the index database): retry later.
    #[error("{0}")]
    Unavailable(String),
    #[error(
        "this server requires `Authorization: Bearer <token>` (the --auth-token it was started with)"
    )]
    Unauthorized,
    /// The server failed (a run directory it cannot read): never the client's fault.
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    pub fn bad(message: impl Into<String>) -> Self {
        Self::BadRequest(message.into())
    }

    pub fn not_found(what: &'static str, id: impl Into<String>) -> Self {
        Self::NotFound {
            what,
            id: id.into(),
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Self::BadRequest(_) => "bad_request",
            Self::NotFound { .. } => "not_found",
            Self::Conflict(_) => "conflict",
            Self::Unprocessable(_) => "unprocessable",
            Self::Unavailable(_) => "unavailable",
            Self::Unauthorized => "unauthorized",
            Self::Internal(_) => "internal",
        }
    }
}

/// A comparison that cannot be made: 422 for runs that do not go together, 409 for a run
/// without usable results.
impl From<crate::suites::compare::CompareError> for ApiError {
    fn from(e: crate::suites::compare::CompareError) -> Self {
        if e.runs_do_not_match() {
            Self::Unprocessable(e.to_string())
        } else {
            Self::Conflict(e.to_string())
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::NotFound { .. } => StatusCode::NOT_FOUND,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status_code());
        match self {
            Self::Unauthorized => {
                response.insert_header(("WWW-Authenticate", "Bearer"));
            }
            Self::Unavailable(_) => {
                response.insert_header(("Retry-After", "5"));
            }
            _ => {}
        }
        response.json(json!({"error": {"message": self.to_string(), "code": self.code()}}))
    }
}

/// actix-web's own extractor errors (a malformed JSON body, a bad query string) in the same shape.
pub fn from_actix(err: impl std::fmt::Display) -> actix_web::Error {
    ApiError::bad(err.to_string()).into()
}
