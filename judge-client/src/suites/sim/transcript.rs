//! The two per-conversation files: the JSON transcript of docs/contracts/transcript.md and the plain-text log of
//! docs/contracts/run-log.md (rendered by [`crate::report::session_log`], shared with the LTM suite).
//!
//! docs/contracts/transcript.md names the two sides `system` and `user`. Here `user<i>` is the simulated user's
//! (persona's) message of round `i` and `system<i>` the reply of the agent under test; the user
//! speaks first, so `user<i>` precedes `system<i>`. Rounds not reached are empty strings, as in
//! the document. Extra keys: `stop_reason`, and `turn_marks` naming every turn that is not what it
//! seems (a fallback, a failed reply).

use chrono::Duration;
use serde_json::{Map, Value};

use super::runner::{Conversation, UserSource};
use crate::report::session_log::{LogMeta, LogTurn, render_log};

/// The transcript (docs/contracts/transcript.md) of a conversation, keys in the document's order.
pub fn transcript_json(c: &Conversation, system_agent_id: &str, notes: &str) -> String {
    let mut fields: Vec<(String, Value)> = vec![
        ("session".into(), Value::from(c.session_id.clone())),
        (
            "datetime".into(),
            Value::from(
                c.rounds
                    .first()
                    .map(|r| r.at.format("%Y-%m-%dT%H:%M:%S%.6f").to_string())
                    .unwrap_or_default(),
            ),
        ),
        ("notes".into(), Value::from(notes)),
        ("system_agent_id".into(), Value::from(system_agent_id)),
        ("user_agent_id".into(), Value::from(user_agent_id(c))),
        ("max_turns".into(), Value::from(c.max_turns)),
    ];
    let mut marks = Map::new();
    for i in 0..c.max_turns {
        let round = c.rounds.get(i);
        let user = round.map(|r| r.user.clone()).unwrap_or_default();
        let system = round.map(system_text).unwrap_or_default();
        if let Some(r) = round {
            if let Some(f) = &r.fallback {
                marks.insert(
                    format!("user{i}"),
                    Value::from(format!(
                        "fallback:{} after {} (circuit {})",
                        f.strategy.as_str(),
                        f.kind,
                        f.circuit_state
                    )),
                );
            }
            if let Some(f) = &r.agent_failure {
                marks.insert(
                    format!("system{i}"),
                    Value::from(format!("failed:{}", f.kind)),
                );
            }
        }
        fields.push((format!("user{i}"), Value::from(user)));
        fields.push((format!("system{i}"), Value::from(system)));
    }
    fields.push(("stop_reason".into(), Value::from(c.stop_reason.clone())));
    fields.push(("turn_marks".into(), Value::Object(marks)));
    // Written field by field so the order is the document's whatever serde_json's map does.
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| {
            format!(
                "  {}: {}",
                Value::from(k.as_str()),
                serde_json::to_string(v).unwrap_or_default()
            )
        })
        .collect();
    format!("{{\n{}\n}}\n", body.join(",\n"))
}

fn user_agent_id(c: &Conversation) -> String {
    match &c.injected {
        Some(_) => format!("{}@injected", c.persona_id),
        None => format!("{}@{}", c.persona_id, c.simulator),
    }
}

fn system_text(r: &super::runner::Round) -> String {
    match (&r.agent, &r.agent_failure) {
        (Some(text), _) => text.clone(),
        (None, Some(f)) => format!("[{}] {}", f.kind, f.message),
        (None, None) => String::new(),
    }
}

/// The run log (docs/contracts/run-log.md) of a conversation.
pub fn log_text(c: &Conversation, mode: &str) -> String {
    let texts: Vec<(chrono::DateTime<chrono::Utc>, String, Option<String>)> = c
        .rounds
        .iter()
        .map(|r| {
            let user = match r.user_source {
                // The log is plain text: the mark says which fallback, why, and the circuit state.
                UserSource::Fallback => match &r.fallback {
                    Some(f) => format!(
                        "{} [fallback: {} after {}, circuit {}]",
                        r.user,
                        f.strategy.as_str(),
                        f.kind,
                        f.circuit_state
                    ),
                    None => r.user.clone(),
                },
                _ => r.user.clone(),
            };
            let assistant =
                (r.agent.is_some() || r.agent_failure.is_some()).then(|| system_text(r));
            (r.at, user, assistant)
        })
        .collect();
    let mut turns = Vec::new();
    for (at, user, assistant) in &texts {
        turns.push(LogTurn {
            role: "user",
            at: *at,
            text: user,
        });
        if let Some(a) = assistant {
            turns.push(LogTurn {
                role: "assistant",
                at: *at + Duration::seconds(1),
                text: a,
            });
        }
    }
    render_log(
        &LogMeta {
            session_id: &c.session_id,
            mode,
            scenario: &c.persona_id,
            max_turns: c.max_turns,
            stop_reason: &c.stop_reason,
        },
        &turns,
    )
}

/// A transcript read back and checked against the shape of docs/contracts/transcript.md.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedTranscript {
    pub session: String,
    pub max_turns: usize,
    pub system_agent_id: String,
    pub user_agent_id: String,
    /// `(user<i>, system<i>)` for every round up to `max_turns`.
    pub rounds: Vec<(String, String)>,
    pub stop_reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("not a transcript (docs/contracts/transcript.md): {0}")]
pub struct TranscriptError(pub String);

/// Parses a transcript and checks every required key and type, and that the round keys are
/// exactly `user0..user<max_turns-1>` and `system0..`.
pub fn parse_transcript(text: &str) -> Result<ParsedTranscript, TranscriptError> {
    let err = |m: String| TranscriptError(m);
    let value: Value = serde_json::from_str(text).map_err(|e| err(e.to_string()))?;
    let map = value
        .as_object()
        .ok_or_else(|| err("not an object".into()))?;
    let string = |key: &str| {
        map.get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| err(format!("`{key}` missing or not a string")))
    };
    let datetime = string("datetime")?;
    if chrono::NaiveDateTime::parse_from_str(&datetime, "%Y-%m-%dT%H:%M:%S%.f").is_err() {
        return Err(err(format!("datetime `{datetime}` is not ISO 8601")));
    }
    string("notes")?;
    let max_turns =
        map.get("max_turns")
            .and_then(Value::as_u64)
            .ok_or_else(|| err("`max_turns` missing or not a number".into()))? as usize;
    let mut rounds = Vec::new();
    for i in 0..max_turns {
        rounds.push((string(&format!("user{i}"))?, string(&format!("system{i}"))?));
    }
    for key in map.keys() {
        for prefix in ["user", "system"] {
            if let Some(n) = key
                .strip_prefix(prefix)
                .and_then(|n| n.parse::<usize>().ok())
                && n >= max_turns
            {
                return Err(err(format!("`{key}` is beyond max_turns {max_turns}")));
            }
        }
    }
    Ok(ParsedTranscript {
        session: string("session")?,
        max_turns,
        system_agent_id: string("system_agent_id")?,
        user_agent_id: string("user_agent_id")?,
        rounds,
        stop_reason: map
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::super::injection::FallbackStrategy;
    use super::super::runner::{FallbackMark, Round};
    use super::*;
    use crate::endpoint::FailureKind;
    use crate::report::session_log::parse_log;
    use chrono::{DateTime, Utc};

    fn conversation() -> Conversation {
        let at: DateTime<Utc> = "2026-01-05T09:00:00Z".parse().unwrap();
        Conversation {
            number: 1,
            persona_id: "maya".into(),
            trial: 1,
            session_id: "s-1".into(),
            simulator: "scripted".into(),
            injected: Some("http://x".into()),
            max_turns: 3,
            stop_reason: "stop_token".into(),
            rounds: vec![
                Round {
                    index: 0,
                    at,
                    user: "Hello!\nIt's me.".into(),
                    user_source: UserSource::Injected,
                    fallback: None,
                    sent: true,
                    agent: Some("Hi.".into()),
                    agent_failure: None,
                    timing: None,
                },
                Round {
                    index: 1,
                    at: at + Duration::minutes(1),
                    user: "[timeout] no answer".into(),
                    user_source: UserSource::Fallback,
                    fallback: Some(FallbackMark {
                        strategy: FallbackStrategy::ErrorMessage,
                        kind: FailureKind::Timeout,
                        message: "no answer".into(),
                        circuit_state: "CLOSED".into(),
                    }),
                    sent: false,
                    agent: None,
                    agent_failure: None,
                    timing: None,
                },
            ],
        }
    }

    #[test]
    fn transcript_has_document_003_shape_and_parses_back() {
        let c = conversation();
        let text = transcript_json(&c, "agentwall-builtin", "test");
        let parsed = parse_transcript(&text).unwrap();
        assert_eq!(parsed.max_turns, 3);
        assert_eq!(parsed.rounds[0], ("Hello!\nIt's me.".into(), "Hi.".into()));
        assert_eq!(parsed.rounds[2], (String::new(), String::new()));
        assert_eq!(parsed.user_agent_id, "maya@injected");
        let order: Vec<usize> = [
            "\"session\"",
            "\"datetime\"",
            "\"notes\"",
            "\"max_turns\"",
            "\"user0\"",
            "\"system0\"",
        ]
        .iter()
        .map(|k| text.find(k).unwrap())
        .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert!(
            v["turn_marks"]["user1"]
                .as_str()
                .unwrap()
                .starts_with("fallback:error_message")
        );
        assert!(parse_transcript(&text.replace("\"user2\"", "\"user9\"")).is_err());
        assert!(parse_transcript("{}").is_err());
    }

    #[test]
    fn log_has_document_001_shape_and_marks_fallbacks() {
        let log = log_text(&conversation(), "sim");
        let parsed = parse_log(&log).unwrap();
        assert_eq!(parsed.meta("stop_reason"), Some("stop_token"));
        assert_eq!(parsed.meta("max_turns"), Some("3"));
        let roles: Vec<&str> = parsed.turns.iter().map(|t| t.0.as_str()).collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(parsed.turns[0].2, "Hello!\nIt's me.");
        assert!(
            parsed.turns[2]
                .2
                .ends_with("[fallback: error_message after timeout, circuit CLOSED]")
        );
    }
}
