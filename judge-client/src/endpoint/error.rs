//! How a request to the target failed: the five failure classes of design.md, and the error type
//! the client returns.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The class of a failure. Every failed request is put in exactly one class, and the class is
/// reported with the test (never hidden behind a score of 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The target answered, but not with a usable reply: an HTTP error status, a body that is not
    /// a chat completion, a completion without text.
    AgentError,
    /// No complete answer within the per-request timeout.
    Timeout,
    /// Still `429 Too Many Requests` after every retry.
    RateLimited,
    /// The network or a gateway in front of the target failed (connection refused, reset, 502-504).
    InfraError,
    /// The judge itself failed (a request it could not build, a file it could not write).
    JudgeError,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::AgentError => "agent_error",
            FailureKind::Timeout => "timeout",
            FailureKind::RateLimited => "rate_limited",
            FailureKind::InfraError => "infra_error",
            FailureKind::JudgeError => "judge_error",
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed request to the target, classified.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct TargetError {
    pub kind: FailureKind,
    pub message: String,
    /// HTTP status of the last answer, when there was one.
    pub status: Option<u16>,
    /// How many attempts were made (1 when the request was not retried).
    pub attempts: u32,
}

impl TargetError {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            status: None,
            attempts: 1,
        }
    }

    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    pub fn with_attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts;
        self
    }
}

/// A classified failure, as reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    pub attempts: u32,
}

impl From<TargetError> for Failure {
    fn from(e: TargetError) -> Self {
        Self {
            kind: e.kind,
            message: e.message,
            status: e.status,
            attempts: e.attempts,
        }
    }
}
