//! Retry, backoff and failure classification toward the target.
//!
//! Only requests that the target certainly did not process are retried: a `429` (rate limited) and
//! a connection that could not be opened. A timeout or a `5xx` is never retried, because a chat turn
//! is not idempotent for a stateful agent: the turn may already be in its memory.

use std::time::Duration;

use awc::error::{ConnectError, SendRequestError};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::error::FailureKind;

/// Backoff settings. Design default: waits of 1 s, 2 s, 4 s, at most 3 retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryPolicy {
    pub max_retries: u32,
    /// Wait before the first retry; doubled for each further retry.
    pub base_ms: u64,
    /// Upper bound of any single wait, including one a `Retry-After` header asks for.
    pub max_wait_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_ms: 1_000,
            max_wait_ms: 60_000,
        }
    }
}

impl RetryPolicy {
    /// Wait before retry number `retry` (0-based): `Retry-After` when the target sent one,
    /// otherwise `base * 2^retry`; capped at `max_wait_ms`.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let exponential = self
            .base_ms
            .saturating_mul(1u64.checked_shl(retry).unwrap_or(u64::MAX));
        let wanted = retry_after.unwrap_or(Duration::from_millis(exponential));
        wanted.min(Duration::from_millis(self.max_wait_ms))
    }
}

/// Parses a `Retry-After` value: delay seconds, or an HTTP date (relative to `now`).
pub fn parse_retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = DateTime::parse_from_rfc2822(value).ok()?;
    let delta = date.with_timezone(&Utc) - now;
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

/// Class of an HTTP error status (anything but 2xx).
pub fn classify_status(status: u16) -> FailureKind {
    match status {
        429 => FailureKind::RateLimited,
        502..=504 => FailureKind::InfraError,
        _ => FailureKind::AgentError,
    }
}

/// Class of a transport error, and whether retrying is safe (the request never reached the target).
pub fn classify_send_error(error: &SendRequestError) -> (FailureKind, bool) {
    match error {
        SendRequestError::Timeout => (FailureKind::Timeout, false),
        SendRequestError::Connect(ConnectError::Timeout) => (FailureKind::Timeout, true),
        SendRequestError::Connect(_) => (FailureKind::InfraError, true),
        SendRequestError::Url(_) | SendRequestError::Http(_) | SendRequestError::Body(_) => {
            (FailureKind::JudgeError, false)
        }
        SendRequestError::Response(_) => (FailureKind::AgentError, false),
        _ => (FailureKind::InfraError, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_from_the_base_and_are_capped() {
        let policy = RetryPolicy::default();
        let waits: Vec<u64> = (0..4)
            .map(|r| policy.delay(r, None).as_millis() as u64)
            .collect();
        assert_eq!(waits, vec![1_000, 2_000, 4_000, 8_000]);
        let small = RetryPolicy {
            max_retries: 3,
            base_ms: 5,
            max_wait_ms: 12,
        };
        assert_eq!(small.delay(0, None), Duration::from_millis(5));
        assert_eq!(small.delay(2, None), Duration::from_millis(12));
        assert_eq!(small.delay(63, None), Duration::from_millis(12));
    }

    #[test]
    fn retry_after_wins_over_backoff_but_not_over_the_cap() {
        let policy = RetryPolicy::default();
        assert_eq!(
            policy.delay(0, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(
            policy.delay(0, Some(Duration::from_secs(600))),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn retry_after_parses_seconds_and_http_dates() {
        let now = DateTime::parse_from_rfc3339("2015-10-21T07:28:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(parse_retry_after(" 7 ", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:05 GMT", now),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }

    #[test]
    fn statuses_are_classified() {
        assert_eq!(classify_status(429), FailureKind::RateLimited);
        assert_eq!(classify_status(500), FailureKind::AgentError);
        assert_eq!(classify_status(400), FailureKind::AgentError);
        assert_eq!(classify_status(503), FailureKind::InfraError);
        assert_eq!(classify_status(502), FailureKind::InfraError);
    }

    #[test]
    fn transport_errors_are_classified() {
        assert_eq!(
            classify_send_error(&SendRequestError::Timeout),
            (FailureKind::Timeout, false)
        );
        assert_eq!(
            classify_send_error(&SendRequestError::Connect(ConnectError::Disconnected)),
            (FailureKind::InfraError, true)
        );
    }
}
