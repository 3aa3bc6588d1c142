//! One log per session in the conversation-log format of design document 001: a `Run metadata:`
//! block, then `Conversation:` with `role [YYYY-MM-DD HH:MM:SS]` turns. Written for every session
//! that ran, failures included; times are the session's virtual clock.

use std::fmt::Write;

use chrono::{DateTime, Duration, Utc};

use super::results::{TestResult, TranscriptEntry};

fn stamp(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M:%S").to_string()
}

fn indented(text: &str) -> String {
    let lines: Vec<String> = text.lines().map(|l| format!("  {l}")).collect();
    if lines.is_empty() {
        "  ".to_owned()
    } else {
        lines.join("\n")
    }
}

/// The `Run metadata:` block of a log.
#[derive(Debug, Clone, PartialEq)]
pub struct LogMeta<'a> {
    pub session_id: &'a str,
    pub mode: &'a str,
    pub scenario: &'a str,
    pub max_turns: usize,
    pub stop_reason: &'a str,
}

/// One line of the `Conversation:` block: `role [timestamp]:` and the indented text.
#[derive(Debug, Clone, PartialEq)]
pub struct LogTurn<'a> {
    /// `user` or `assistant`.
    pub role: &'a str,
    pub at: DateTime<Utc>,
    pub text: &'a str,
}

/// A whole log in document 001's format; every suite's logs go through here.
pub fn render_log(meta: &LogMeta<'_>, turns: &[LogTurn<'_>]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Run metadata:");
    let _ = writeln!(out, "- session_id: {}", meta.session_id);
    let _ = writeln!(out, "- mode: {}", meta.mode);
    let _ = writeln!(out, "- scenario: {}", meta.scenario);
    let _ = writeln!(out, "- max_turns: {}", meta.max_turns);
    let _ = writeln!(out, "- stop_reason: {}", meta.stop_reason);
    let _ = writeln!(out);
    let _ = writeln!(out, "Conversation:");
    let _ = writeln!(out);
    for turn in turns {
        let _ = writeln!(out, " - {} [{}]:", turn.role, stamp(turn.at));
        let _ = writeln!(out, "{}", indented(turn.text));
    }
    out
}

/// The log of session `index` of a test.
pub fn render(result: &TestResult, index: usize, mode: &str) -> String {
    let session = &result.sessions[index];
    let mut lines: Vec<(DateTime<Utc>, String, String)> = Vec::new();
    for entry in &result.transcript {
        if let TranscriptEntry::Turn {
            session: label,
            at,
            user,
            reply,
            failure,
            ..
        } = entry
        {
            if *label != session.label {
                continue;
            }
            let assistant = match (reply, failure) {
                (Some(reply), _) => reply.clone(),
                (None, Some(f)) => format!("[{}] {}", f.kind, f.message),
                (None, None) => "[agent_error] no reply".to_owned(),
            };
            lines.push((*at, user.clone(), assistant));
        }
    }
    let turns: Vec<LogTurn<'_>> = lines
        .iter()
        .flat_map(|(at, user, assistant)| {
            [
                LogTurn {
                    role: "user",
                    at: *at,
                    text: user,
                },
                LogTurn {
                    role: "assistant",
                    at: *at + Duration::seconds(1),
                    text: assistant,
                },
            ]
        })
        .collect();
    let meta = LogMeta {
        session_id: &session.session_id,
        mode,
        scenario: &result.id,
        max_turns: session.planned_turns,
        stop_reason: &session.stop_reason,
    };
    render_log(&meta, &turns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::results::{Failure, SessionRecord, TestStatus};
    use crate::suites::ltm::TestType;
    use crate::target::FailureKind;

    #[test]
    fn log_has_the_contract_shape_even_on_failure() {
        let at = DateTime::parse_from_rfc3339("2026-03-02T09:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let result = TestResult {
            id: "needle-01".into(),
            test_type: TestType::Needle,
            trial: 1,
            status: TestStatus::Failed,
            reason: None,
            failure: None,
            score: Some(0.0),
            checks: vec![],
            sessions: vec![SessionRecord {
                label: "main".into(),
                session_id: "abc".into(),
                log_file: "logs/session-0001.log".into(),
                planned_turns: 3,
                stop_reason: "timeout".into(),
            }],
            filler_tokens: 0,
            transcript: vec![
                TranscriptEntry::Turn {
                    session: "main".into(),
                    at,
                    user: "My favourite colour is teal.".into(),
                    reply: Some("Noted.\nThanks.".into()),
                    failure: None,
                    check: None,
                },
                TranscriptEntry::Turn {
                    session: "main".into(),
                    at: at + Duration::seconds(60),
                    user: "What is my favourite colour?".into(),
                    reply: None,
                    failure: Some(Failure {
                        kind: FailureKind::Timeout,
                        message: "no complete answer within 100 ms".into(),
                        status: None,
                        attempts: 1,
                    }),
                    check: None,
                },
            ],
        };
        let log = render(&result, 0, "ltm (history: new)");
        let expected = "Run metadata:
- session_id: abc
- mode: ltm (history: new)
- scenario: needle-01
- max_turns: 3
- stop_reason: timeout

Conversation:

 - user [2026-03-02 09:00:00]:
  My favourite colour is teal.
 - assistant [2026-03-02 09:00:01]:
  Noted.
  Thanks.
 - user [2026-03-02 09:01:00]:
  What is my favourite colour?
 - assistant [2026-03-02 09:01:01]:
  [timeout] no complete answer within 100 ms
";
        assert_eq!(log, expected);
    }
}

/// A log read back: its metadata and its turns, as document 001's evaluator sees them.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedLog {
    /// `Run metadata:` entries, in order.
    pub meta: Vec<(String, String)>,
    /// `(role, "YYYY-MM-DD HH:MM:SS", text)` of each turn.
    pub turns: Vec<(String, String, String)>,
}

impl ParsedLog {
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.meta
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Why a text is not a document 001 log.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("not a conversation log (line {line}): {reason}")]
pub struct LogParseError {
    pub line: usize,
    pub reason: String,
}

/// Reads a log in document 001's format back, strictly: both headers, `- key: value` metadata,
/// ` - role [YYYY-MM-DD HH:MM:SS]:` turn heads each followed by lines indented by two spaces.
pub fn parse_log(text: &str) -> Result<ParsedLog, LogParseError> {
    let fail = |line: usize, reason: &str| LogParseError {
        line: line + 1,
        reason: reason.to_owned(),
    };
    let lines: Vec<&str> = text.lines().collect();
    if lines.first() != Some(&"Run metadata:") {
        return Err(fail(0, "expected `Run metadata:`"));
    }
    let mut meta = Vec::new();
    let mut i = 1;
    while i < lines.len() && lines[i].starts_with("- ") {
        let (key, value) = lines[i][2..]
            .split_once(": ")
            .ok_or_else(|| fail(i, "metadata line without `key: value`"))?;
        meta.push((key.to_owned(), value.to_owned()));
        i += 1;
    }
    if lines.get(i) != Some(&"") || lines.get(i + 1) != Some(&"Conversation:") {
        return Err(fail(i, "expected a blank line and `Conversation:`"));
    }
    i += 2;
    if lines.get(i) == Some(&"") {
        i += 1;
    }
    let mut turns: Vec<(String, String, String)> = Vec::new();
    while i < lines.len() {
        let head = lines[i];
        let rest = head
            .strip_prefix(" - ")
            .and_then(|r| r.strip_suffix("]:"))
            .ok_or_else(|| fail(i, "expected ` - role [YYYY-MM-DD HH:MM:SS]:`"))?;
        let (role, stamp) = rest
            .split_once(" [")
            .ok_or_else(|| fail(i, "turn head without a timestamp"))?;
        if !matches!(role, "user" | "assistant") {
            return Err(fail(i, "role is neither user nor assistant"));
        }
        if chrono::NaiveDateTime::parse_from_str(stamp, "%Y-%m-%d %H:%M:%S").is_err() {
            return Err(fail(i, "timestamp is not YYYY-MM-DD HH:MM:SS"));
        }
        i += 1;
        let mut body = Vec::new();
        while i < lines.len() && lines[i].starts_with("  ") {
            body.push(&lines[i][2..]);
            i += 1;
        }
        if body.is_empty() {
            return Err(fail(i, "turn without an indented text line"));
        }
        turns.push((role.to_owned(), stamp.to_owned(), body.join("\n")));
    }
    Ok(ParsedLog { meta, turns })
}
