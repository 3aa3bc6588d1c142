//! One log per session in the conversation-log format of docs/contracts/run-log.md: a `Run metadata:`
//! block, then `Conversation:` with `role [YYYY-MM-DD HH:MM:SS]` turns. Written for every session
//! that ran, failures included; times are the session's virtual clock.

use std::fmt::Write;

use chrono::{DateTime, Utc};

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

/// A whole log in the format of docs/contracts/run-log.md; every suite's logs go through here.
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

/// A log read back: its metadata and its turns, as the evaluator of docs/contracts/run-log.md sees them.
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

/// Why a text is not a run log (docs/contracts/run-log.md).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("not a conversation log (line {line}): {reason}")]
pub struct LogParseError {
    pub line: usize,
    pub reason: String,
}

/// Reads a log in the format of docs/contracts/run-log.md back, strictly: both headers, `- key: value` metadata,
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
