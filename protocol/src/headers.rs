//! Header names of the API wall and parsers for their values.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

/// Required on `/v1/chat/completions` and `/control/*`: the isolation scope of all memory.
pub const SESSION_ID: &str = "x-session-id";
/// Optional: the request's "now" (RFC 3339 with an offset). Moves the agent's clock for time travel.
pub const MOCK_TIME: &str = "x-mock-time";
/// Optional: the id of the dataset turn a request carries (a chat turn, or one injected fact
/// each: several ids comma-separated in the order of the facts). An agent that keeps it can name
/// the turns a memory came from in `POST /control/memory/recall`. Benchmarks send it; agents may
/// ignore it.
pub const TURN_ID: &str = "x-turn-id";
/// Optional: `off` asks the agent to answer this chat turn without storing anything from it, so
/// that benchmark questions do not write memory. An agent honouring it echoes the header back
/// with the value `off` on its answer; the judge probes for that echo.
pub const MEMORY_WRITE: &str = "x-memory-write";
/// The one value of [`MEMORY_WRITE`] defined so far.
pub const MEMORY_WRITE_OFF: &str = "off";
/// W3C trace context.
pub const TRACEPARENT: &str = "traceparent";
pub const TRACESTATE: &str = "tracestate";

/// Longest accepted session id, in characters.
pub const SESSION_ID_MAX_LEN: usize = 128;

/// A validated session id: 1 to 128 characters of `[A-Za-z0-9._:-]`.
///
/// The alphabet is narrow on purpose: session ids become parts of Redis keys, file names and log
/// lines, where spaces, slashes or wildcards would be a hazard.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionId(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionIdError {
    #[error("is empty; send 1 to {SESSION_ID_MAX_LEN} characters of [A-Za-z0-9._:-]")]
    Empty,
    #[error("is {len} characters long; the limit is {SESSION_ID_MAX_LEN}")]
    TooLong { len: usize },
    #[error(
        "contains {found:?} at position {position}; only letters, digits and . _ : - are allowed"
    )]
    InvalidChar { found: char, position: usize },
}

impl SessionId {
    pub fn parse(value: &str) -> Result<Self, SessionIdError> {
        if value.is_empty() {
            return Err(SessionIdError::Empty);
        }
        if let Some((position, found)) = value
            .chars()
            .enumerate()
            .find(|(_, c)| !is_session_id_char(*c))
        {
            return Err(SessionIdError::InvalidChar { found, position });
        }
        // All characters are ASCII here, so bytes == characters.
        if value.len() > SESSION_ID_MAX_LEN {
            return Err(SessionIdError::TooLong { len: value.len() });
        }
        Ok(Self(value.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn is_session_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-')
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for SessionId {
    type Err = SessionIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl TryFrom<String> for SessionId {
    type Error = SessionIdError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<SessionId> for String {
    fn from(id: SessionId) -> Self {
        id.0
    }
}

impl AsRef<str> for SessionId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{value:?} is not an RFC 3339 timestamp with an offset ({reason}); send for example 2026-03-01T09:30:00Z or 2026-03-01T10:30:00+01:00"
)]
pub struct MockTimeError {
    pub value: String,
    pub reason: String,
}

/// Parses an `X-Mock-Time` value: RFC 3339 with an explicit offset (`Z` or `±hh:mm`), converted to
/// UTC. Surrounding whitespace is ignored; anything else is an error, never a silent fallback to the
/// real clock.
pub fn parse_mock_time(value: &str) -> Result<DateTime<Utc>, MockTimeError> {
    DateTime::parse_from_rfc3339(value.trim())
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| MockTimeError {
            value: value.to_owned(),
            reason: e.to_string(),
        })
}

/// Formats a time the way the judge sends `X-Mock-Time`: UTC with a `Z`, sub-seconds only if any.
pub fn format_mock_time(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn session_id_accepts_uuid_and_punctuation() {
        assert!(SessionId::parse("6f1c2a8e-0d1b-4c56-9a3e-2b7c1d0e9f11").is_ok());
        assert!(SessionId::parse("run.7:test_3-a").is_ok());
        assert!(SessionId::parse(&"a".repeat(128)).is_ok());
    }

    #[test]
    fn session_id_rejects_bad_values_with_reason() {
        assert_eq!(SessionId::parse(""), Err(SessionIdError::Empty));
        assert_eq!(
            SessionId::parse(&"a".repeat(129)),
            Err(SessionIdError::TooLong { len: 129 })
        );
        assert_eq!(
            SessionId::parse("a b"),
            Err(SessionIdError::InvalidChar {
                found: ' ',
                position: 1
            })
        );
        assert!(matches!(
            SessionId::parse("key*"),
            Err(SessionIdError::InvalidChar { found: '*', .. })
        ));
        assert!(matches!(
            SessionId::parse("é"),
            Err(SessionIdError::InvalidChar { found: 'é', .. })
        ));
    }

    #[test]
    fn mock_time_converts_offsets_to_utc() {
        let t = parse_mock_time("2026-03-01T10:30:00+01:00").unwrap();
        assert_eq!(format_mock_time(t), "2026-03-01T09:30:00Z");
        let t = parse_mock_time(" 2026-03-01T09:30:00.250Z ").unwrap();
        assert_eq!(format_mock_time(t), "2026-03-01T09:30:00.250Z");
    }

    #[test]
    fn mock_time_rejects_missing_offset_and_garbage() {
        for bad in [
            "2026-03-01T09:30:00",
            "2026-03-01",
            "yesterday",
            "",
            "2026-13-01T00:00:00Z",
        ] {
            let err = parse_mock_time(bad).unwrap_err();
            assert_eq!(err.value, bad);
            assert!(err.to_string().contains("RFC 3339"), "{err}");
        }
    }

    proptest! {
        #[test]
        fn session_id_accepts_exactly_its_alphabet(s in "\\PC{0,140}") {
            let valid = !s.is_empty()
                && s.chars().count() <= SESSION_ID_MAX_LEN
                && s.chars().all(is_session_id_char);
            prop_assert_eq!(SessionId::parse(&s).is_ok(), valid);
        }

        #[test]
        fn session_id_round_trips(s in "[A-Za-z0-9._:-]{1,128}") {
            let id = SessionId::parse(&s).unwrap();
            prop_assert_eq!(id.as_str(), s.as_str());
            let json = serde_json::to_string(&id).unwrap();
            prop_assert_eq!(serde_json::from_str::<SessionId>(&json).unwrap(), id);
        }

        #[test]
        fn mock_time_round_trips_any_instant(secs in -2_000_000_000i64..4_000_000_000i64, millis in 0u32..1000, offset_min in -839i32..=839) {
            let utc = DateTime::from_timestamp(secs, millis * 1_000_000).unwrap();
            let offset = chrono::FixedOffset::east_opt(offset_min * 60).unwrap();
            let sent = utc.with_timezone(&offset).to_rfc3339();
            prop_assert_eq!(parse_mock_time(&sent).unwrap(), utc);
            prop_assert_eq!(parse_mock_time(&format_mock_time(utc)).unwrap(), utc);
        }

        #[test]
        fn mock_time_never_panics(s in "\\PC{0,64}") {
            let _ = parse_mock_time(&s);
        }
    }
}
