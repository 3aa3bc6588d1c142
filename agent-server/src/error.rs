//! Every error a client can see, and the one table that maps each to its HTTP status, OpenAI error
//! type and code. Handlers return [`ApiError`]; nothing else builds an error response.
//!
//! The A2A endpoint answers in JSON-RPC's shape instead ([`A2aError`]): the protocol's own errors
//! have their A2A codes, and every [`ApiError`] keeps its row of the table, rendered as a
//! JSON-RPC error ([`A2aError::answer`], the one place that renders one).

use actix_web::http::{StatusCode, header};
use actix_web::{HttpResponse, ResponseError};
use protocol::a2a::{ErrorCode, JsonRpcError, JsonRpcId, JsonRpcResponse};
use protocol::openai::ErrorBody;
use serde_json::{Value, json};

use crate::agent::AgentError;
use crate::llm::LlmError;
use crate::mcp::McpRefusal;
use crate::memory::MemoryError;

#[derive(Debug, thiserror::Error)]
pub(crate) enum ApiError {
    /// The body or a query parameter is wrong; `param` names the field at fault.
    #[error("{message}")]
    InvalidRequest {
        message: String,
        param: Option<String>,
    },
    #[error("the {header} header is required: {hint}")]
    MissingHeader {
        header: &'static str,
        hint: &'static str,
    },
    #[error("the {header} header {reason}")]
    InvalidHeader {
        header: &'static str,
        reason: String,
    },
    #[error("request body is {size} bytes; the limit is {limit} bytes (--max-body-bytes)")]
    PayloadTooLarge { size: usize, limit: usize },
    #[error("unsupported content type {0:?}; send application/json")]
    UnsupportedMediaType(String),
    #[error("{0}")]
    Unauthorized(&'static str),
    #[error(
        "X-Mock-Time is refused by this server (--deny-mock-time); send the request without it"
    )]
    MockTimeDenied,
    #[error("no route for {method} {path}; see GET /openapi.json for the API")]
    NotFound { method: String, path: String },
    /// A response or conversation that does not exist, or that the caller may not see (the two
    /// are not told apart: ids are capabilities).
    #[error("no {kind} with id {id:?}")]
    NoSuchObject { kind: &'static str, id: String },
    #[error(
        "the request names a conversation or previous response of another session than its X-Session-Id; send it without the header, or with that session's id"
    )]
    SessionMismatch,
    #[error("{method} is not allowed on {path}; allowed: {allowed}")]
    MethodNotAllowed {
        method: String,
        path: String,
        allowed: &'static str,
    },
    /// A bug: something that cannot fail did. Says what, for the server's log.
    #[error("internal error: {0}; this is a bug, please report it with the server's log")]
    Internal(&'static str),
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error(transparent)]
    Model(#[from] LlmError),
    /// A request's `mcp` tool this server will not use.
    #[error(transparent)]
    Mcp(#[from] McpRefusal),
}

impl From<AgentError> for ApiError {
    fn from(e: AgentError) -> Self {
        match e {
            AgentError::Memory(e) => ApiError::Memory(e),
            AgentError::Model(e) => ApiError::Model(e),
            AgentError::RelayFailed => ApiError::Internal("relaying the upstream stream failed"),
        }
    }
}

/// One row of the error table.
struct Row {
    status: StatusCode,
    kind: &'static str,
    code: &'static str,
}

const fn row(status: StatusCode, kind: &'static str, code: &'static str) -> Row {
    Row { status, kind, code }
}

impl ApiError {
    /// The error table. Types follow OpenAI's (`invalid_request_error`, `authentication_error`, ...);
    /// codes are stable strings clients may match on.
    fn row(&self) -> Row {
        use StatusCode as S;
        match self {
            ApiError::InvalidRequest { .. } => {
                row(S::BAD_REQUEST, "invalid_request_error", "invalid_request")
            }
            ApiError::MissingHeader { .. } => {
                row(S::BAD_REQUEST, "invalid_request_error", "missing_header")
            }
            ApiError::InvalidHeader { .. } => {
                row(S::BAD_REQUEST, "invalid_request_error", "invalid_header")
            }
            ApiError::PayloadTooLarge { .. } => row(
                S::PAYLOAD_TOO_LARGE,
                "invalid_request_error",
                "payload_too_large",
            ),
            ApiError::UnsupportedMediaType(_) => row(
                S::UNSUPPORTED_MEDIA_TYPE,
                "invalid_request_error",
                "unsupported_media_type",
            ),
            ApiError::Unauthorized(_) => {
                row(S::UNAUTHORIZED, "authentication_error", "invalid_api_key")
            }
            ApiError::MockTimeDenied => row(S::FORBIDDEN, "permission_error", "mock_time_denied"),
            ApiError::NotFound { .. } => row(S::NOT_FOUND, "invalid_request_error", "not_found"),
            ApiError::NoSuchObject { .. } => {
                row(S::NOT_FOUND, "invalid_request_error", "not_found")
            }
            ApiError::SessionMismatch => row(S::CONFLICT, "conflict_error", "session_mismatch"),
            ApiError::MethodNotAllowed { .. } => row(
                S::METHOD_NOT_ALLOWED,
                "invalid_request_error",
                "method_not_allowed",
            ),
            ApiError::Internal(_) => {
                row(S::INTERNAL_SERVER_ERROR, "server_error", "internal_error")
            }
            ApiError::Memory(MemoryError::Unavailable { .. }) => row(
                S::SERVICE_UNAVAILABLE,
                "service_unavailable_error",
                "dependency_unavailable",
            ),
            ApiError::Memory(MemoryError::SessionReset) => {
                row(S::CONFLICT, "conflict_error", "session_reset")
            }
            ApiError::Memory(MemoryError::Corrupt { .. }) => {
                row(S::INTERNAL_SERVER_ERROR, "server_error", "memory_corrupt")
            }
            ApiError::Memory(MemoryError::Backend { .. }) => {
                row(S::INTERNAL_SERVER_ERROR, "server_error", "memory_error")
            }
            ApiError::Model(LlmError::Upstream { .. }) => {
                row(S::BAD_GATEWAY, "upstream_error", "upstream_error")
            }
            ApiError::Model(LlmError::RateLimited { .. }) => row(
                S::TOO_MANY_REQUESTS,
                "rate_limit_error",
                "upstream_rate_limited",
            ),
            ApiError::Model(LlmError::Timeout { .. }) => {
                row(S::GATEWAY_TIMEOUT, "upstream_error", "upstream_timeout")
            }
            ApiError::Model(LlmError::Unreachable { .. }) => {
                row(S::BAD_GATEWAY, "upstream_error", "upstream_unreachable")
            }
            ApiError::Model(LlmError::Status { .. }) => {
                row(S::BAD_GATEWAY, "upstream_error", "upstream_status")
            }
            ApiError::Model(LlmError::ContextLengthExceeded { .. }) => row(
                S::BAD_REQUEST,
                "invalid_request_error",
                "context_length_exceeded",
            ),
            ApiError::Model(LlmError::BadResponse { .. }) => {
                row(S::BAD_GATEWAY, "upstream_error", "upstream_bad_response")
            }
            ApiError::Mcp(McpRefusal::NotAllowed { .. }) => row(
                S::BAD_REQUEST,
                "invalid_request_error",
                "mcp_server_not_allowed",
            ),
            ApiError::Mcp(McpRefusal::ApprovalUnsupported { .. }) => row(
                S::BAD_REQUEST,
                "invalid_request_error",
                "mcp_approval_unsupported",
            ),
            ApiError::Mcp(McpRefusal::Invalid { .. }) => {
                row(S::BAD_REQUEST, "invalid_request_error", "invalid_request")
            }
        }
    }

    fn param(&self) -> Option<String> {
        match self {
            ApiError::InvalidRequest { param, .. } => param.clone(),
            ApiError::MissingHeader { header, .. } | ApiError::InvalidHeader { header, .. } => {
                Some((*header).to_owned())
            }
            ApiError::MockTimeDenied => Some(protocol::headers::MOCK_TIME.to_owned()),
            ApiError::Model(LlmError::ContextLengthExceeded { .. }) => Some("messages".to_owned()),
            ApiError::Mcp(refusal) => Some(refusal.param()),
            _ => None,
        }
    }

    pub(crate) fn invalid(message: impl Into<String>, param: Option<&str>) -> Self {
        ApiError::InvalidRequest {
            message: message.into(),
            param: param.map(str::to_owned),
        }
    }

    /// The body clients receive.
    pub(crate) fn body(&self) -> ErrorBody {
        let row = self.row();
        ErrorBody::new(self.to_string(), row.kind, self.param(), Some(row.code))
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.row().status
    }

    fn error_response(&self) -> HttpResponse {
        let status = self.status_code();
        log(self, status);
        let mut response = HttpResponse::build(status);
        self.headers(&mut response);
        response.json(self.body())
    }
}

fn log(error: &dyn std::error::Error, status: StatusCode) {
    if status.is_server_error() {
        tracing::error!(error = %error, status = status.as_u16(), "request failed");
    } else {
        tracing::debug!(error = %error, status = status.as_u16(), "request rejected");
    }
}

impl ApiError {
    /// The headers its status comes with: the auth challenge, and when to try again.
    fn headers(&self, response: &mut actix_web::HttpResponseBuilder) {
        match self {
            ApiError::Unauthorized(_) => {
                response.insert_header((header::WWW_AUTHENTICATE, "Bearer"));
            }
            ApiError::Memory(MemoryError::Unavailable { .. }) => {
                response.insert_header((header::RETRY_AFTER, "1"));
            }
            // The upstream's own Retry-After, passed on unchanged.
            ApiError::Model(LlmError::RateLimited {
                retry_after: Some(after),
                ..
            }) => {
                response.insert_header((header::RETRY_AFTER, after.as_str()));
            }
            _ => {}
        }
    }
}

/// The domain of the `google.rpc.ErrorInfo` of an error this server defines (an [`ApiError`]
/// rendered for the A2A endpoint); the A2A errors' own is the specification's.
const AGENTWALL_DOMAIN: &str = "agentwall";
const A2A_DOMAIN: &str = "a2a-protocol.org";

/// An A2A request refused or failed, as the JSON-RPC binding of A2A 1.0 answers it: the
/// protocol's own errors, and every [`ApiError`] of the request (body, headers, memory, model).
#[derive(Debug, thiserror::Error)]
pub(crate) enum A2aError {
    /// The body is not JSON.
    #[error("the body is not JSON: {0}")]
    Parse(String),
    /// JSON, but not a JSON-RPC 2.0 request this endpoint takes.
    #[error("{0}")]
    InvalidRequest(String),
    #[error(
        "no method {method:?}{hint}; the methods of A2A 1.0 are SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask and the push notification ones"
    )]
    MethodNotFound { method: String, hint: &'static str },
    /// The params are wrong; `field` names the one at fault.
    #[error("{message}")]
    InvalidParams {
        message: String,
        field: Option<String>,
    },
    /// No such task, or one of another session (the two are not told apart).
    #[error("no task with id {id:?} in this session")]
    TaskNotFound { id: String },
    #[error("task {id:?} is {state}, a final state: it cannot be canceled")]
    TaskNotCancelable { id: String, state: String },
    #[error(
        "push notifications are not served (the agent card's capabilities.pushNotifications is false); poll with GetTask or stream with SendStreamingMessage"
    )]
    PushNotificationNotSupported,
    #[error("{0}")]
    UnsupportedOperation(String),
    /// A part of a media type the agent does not read, or an output mode it cannot give.
    #[error("{message}")]
    ContentTypeNotSupported {
        message: String,
        field: Option<String>,
    },
    #[error(
        "A2A-Version {0:?} is not served: this agent speaks A2A 1.0; send the header A2A-Version: 1.0 (an absent header means 0.3)"
    )]
    VersionNotSupported(String),
    /// An error of the request that every API shares, kept with its row of the table.
    #[error(transparent)]
    Api(#[from] ApiError),
}

impl From<crate::memory::MemoryError> for A2aError {
    fn from(e: crate::memory::MemoryError) -> Self {
        A2aError::Api(e.into())
    }
}

impl From<AgentError> for A2aError {
    fn from(e: AgentError) -> Self {
        A2aError::Api(e.into())
    }
}

impl A2aError {
    pub(crate) fn invalid_params(message: impl Into<String>, field: Option<&str>) -> Self {
        A2aError::InvalidParams {
            message: message.into(),
            field: field.map(str::to_owned),
        }
    }

    /// Its JSON-RPC code and HTTP status. An error of the request itself is answered with 200,
    /// as JSON-RPC over HTTP (and the official SDK's server) does; HTTP keeps what it says
    /// better: a missing or wrong key (401) or a refused clock (403), and the failures of the
    /// server or what it depends on (409 a reset raced the turn, 429, 500, 502, 503, 504), which
    /// keep the status of the table (and its `Retry-After`), so that a client can tell an outage
    /// worth retrying from a refusal. Those are `-32603`; an oversized or non-JSON body is
    /// `-32600`, as in the SDK; any other refusal of the table is `-32602`.
    fn code_and_status(&self) -> (ErrorCode, StatusCode) {
        let ok = StatusCode::OK;
        match self {
            A2aError::Parse(_) => (ErrorCode::ParseError, ok),
            A2aError::InvalidRequest(_) => (ErrorCode::InvalidRequest, ok),
            A2aError::MethodNotFound { .. } => (ErrorCode::MethodNotFound, ok),
            A2aError::InvalidParams { .. } => (ErrorCode::InvalidParams, ok),
            A2aError::TaskNotFound { .. } => (ErrorCode::TaskNotFound, ok),
            A2aError::TaskNotCancelable { .. } => (ErrorCode::TaskNotCancelable, ok),
            A2aError::PushNotificationNotSupported => (ErrorCode::PushNotificationNotSupported, ok),
            A2aError::UnsupportedOperation(_) => (ErrorCode::UnsupportedOperation, ok),
            A2aError::ContentTypeNotSupported { .. } => (ErrorCode::ContentTypeNotSupported, ok),
            A2aError::VersionNotSupported(_) => (ErrorCode::VersionNotSupported, ok),
            A2aError::Api(e) => {
                let status = e.row().status;
                match e {
                    ApiError::Unauthorized(_) | ApiError::MockTimeDenied => {
                        (ErrorCode::InvalidRequest, status)
                    }
                    ApiError::PayloadTooLarge { .. } | ApiError::UnsupportedMediaType(_) => {
                        (ErrorCode::InvalidRequest, ok)
                    }
                    _ if status.is_server_error()
                        || status == StatusCode::CONFLICT
                        || status == StatusCode::TOO_MANY_REQUESTS =>
                    {
                        (ErrorCode::InternalError, status)
                    }
                    _ => (ErrorCode::InvalidParams, ok),
                }
            }
        }
    }

    /// The JSON-RPC error object: its code, this error's message, and `data` as A2A asks: a
    /// `google.rpc.ErrorInfo` naming the error (the A2A error's name, or the table's code of an
    /// [`ApiError`]), and a `google.rpc.BadRequest` naming the field at fault, if one is known.
    pub(crate) fn rpc_error(&self) -> JsonRpcError {
        let (code, _) = self.code_and_status();
        let mut data = Vec::new();
        let info = |reason: String, domain: &str, metadata: Value| {
            let mut info = json!({
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": reason,
                "domain": domain,
            });
            if metadata.as_object().is_some_and(|m| !m.is_empty()) {
                info["metadata"] = metadata;
            }
            info
        };
        match self {
            A2aError::Api(e) => {
                data.push(info(
                    e.row().code.to_ascii_uppercase(),
                    AGENTWALL_DOMAIN,
                    json!({}),
                ));
            }
            _ if code.code() > -32100 && code.code() < -32000 => {
                let reason = code.name().trim_end_matches("Error").chars().fold(
                    String::new(),
                    |mut out, c| {
                        if c.is_ascii_uppercase() && !out.is_empty() {
                            out.push('_');
                        }
                        out.push(c.to_ascii_uppercase());
                        out
                    },
                );
                let metadata = match self {
                    A2aError::TaskNotFound { id } | A2aError::TaskNotCancelable { id, .. } => {
                        json!({ "taskId": id })
                    }
                    _ => json!({}),
                };
                data.push(info(reason, A2A_DOMAIN, metadata));
            }
            _ => {}
        }
        let field = match self {
            A2aError::InvalidParams { field, .. }
            | A2aError::ContentTypeNotSupported { field, .. } => field.clone(),
            A2aError::Api(e) => e.param(),
            _ => None,
        };
        if let Some(field) = field {
            data.push(json!({
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [{"field": field, "description": self.to_string()}],
            }));
        }
        JsonRpcError {
            code: code.code(),
            message: self.to_string(),
            data: (!data.is_empty()).then_some(Value::Array(data)),
        }
    }

    /// The whole answer to the request `id` (`None` when it could not be read): the JSON-RPC
    /// error at its HTTP status, with the table's headers for an [`ApiError`].
    pub(crate) fn answer(&self, id: Option<JsonRpcId>) -> HttpResponse {
        let (_, status) = self.code_and_status();
        log(self, status);
        let mut response = HttpResponse::build(status);
        if let A2aError::Api(e) = self {
            e.headers(&mut response);
        }
        response.json(JsonRpcResponse::<Value>::failure(id, self.rpc_error()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_gives_openai_shape_with_status_type_code_and_param() {
        let e = ApiError::MissingHeader {
            header: "x-session-id",
            hint: "send a session id",
        };
        assert_eq!(e.status_code(), StatusCode::BAD_REQUEST);
        let body = serde_json::to_value(e.body()).unwrap();
        assert_eq!(body["error"]["type"], "invalid_request_error");
        assert_eq!(body["error"]["code"], "missing_header");
        assert_eq!(body["error"]["param"], "x-session-id");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("x-session-id")
        );
    }

    #[test]
    fn dependency_outage_is_503_naming_the_dependency() {
        let e = ApiError::from(MemoryError::Unavailable {
            dependency: "redis",
            reason: "connection refused".into(),
        });
        assert_eq!(e.status_code(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(e.to_string().starts_with("redis is unavailable"));
        let response = e.error_response();
        assert_eq!(response.headers().get(header::RETRY_AFTER).unwrap(), "1");
    }

    #[test]
    fn upstream_failures_keep_their_meaning_and_say_it_was_the_upstream() {
        let cases = [
            (
                LlmError::RateLimited {
                    message: "slow down".into(),
                    retry_after: Some("7".into()),
                },
                429,
                "upstream_rate_limited",
            ),
            (
                LlmError::Timeout {
                    after: std::time::Duration::from_secs(3),
                },
                504,
                "upstream_timeout",
            ),
            (
                LlmError::Unreachable {
                    url: "http://x".into(),
                    reason: "refused".into(),
                },
                502,
                "upstream_unreachable",
            ),
            (
                LlmError::Status {
                    status: 500,
                    message: "boom".into(),
                },
                502,
                "upstream_status",
            ),
            (
                LlmError::BadResponse {
                    reason: "not JSON".into(),
                },
                502,
                "upstream_bad_response",
            ),
            // As OpenAI answers a prompt past the context window: the client's error, 400.
            (
                LlmError::ContextLengthExceeded {
                    message: "Requested tokens (4100) exceed context window of 2048".into(),
                },
                400,
                "context_length_exceeded",
            ),
        ];
        for (e, status, code) in cases {
            let e = ApiError::from(e);
            assert_eq!(e.status_code().as_u16(), status, "{e}");
            let body = serde_json::to_value(e.body()).unwrap();
            assert_eq!(body["error"]["code"], code);
            assert!(
                body["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("upstream"),
                "{body}"
            );
        }
        let response = ApiError::from(LlmError::RateLimited {
            message: "m".into(),
            retry_after: Some("7".into()),
        })
        .error_response();
        assert_eq!(response.headers().get(header::RETRY_AFTER).unwrap(), "7");
    }

    #[test]
    fn refused_mcp_servers_are_400s_naming_the_field_and_the_flag() {
        let e = ApiError::from(McpRefusal::NotAllowed {
            index: 2,
            url: "http://10.1.2.3:9/mcp".into(),
        });
        assert_eq!(e.status_code(), StatusCode::BAD_REQUEST);
        let body = serde_json::to_value(e.body()).unwrap();
        assert_eq!(body["error"]["code"], "mcp_server_not_allowed");
        assert_eq!(body["error"]["param"], "tools[2].server_url");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("--mcp-allowed-servers"),
            "{body}"
        );
        let approval = ApiError::from(McpRefusal::ApprovalUnsupported {
            index: 0,
            value: "\"always\"".into(),
        });
        let body = serde_json::to_value(approval.body()).unwrap();
        assert_eq!(body["error"]["code"], "mcp_approval_unsupported");
        assert_eq!(body["error"]["param"], "tools[0].require_approval");
    }

    #[test]
    fn reset_race_is_a_retryable_conflict() {
        assert_eq!(
            ApiError::from(MemoryError::SessionReset).status_code(),
            StatusCode::CONFLICT
        );
    }
}
