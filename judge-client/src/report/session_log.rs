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

/// The log of session `index` of a test.
pub fn render(result: &TestResult, index: usize, mode: &str) -> String {
    let session = &result.sessions[index];
    let mut out = String::new();
    let _ = writeln!(out, "Run metadata:");
    let _ = writeln!(out, "- session_id: {}", session.session_id);
    let _ = writeln!(out, "- mode: {mode}");
    let _ = writeln!(out, "- scenario: {}", result.id);
    let _ = writeln!(out, "- max_turns: {}", session.planned_turns);
    let _ = writeln!(out, "- stop_reason: {}", session.stop_reason);
    let _ = writeln!(out);
    let _ = writeln!(out, "Conversation:");
    let _ = writeln!(out);
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
            let _ = writeln!(out, " - user [{}]:", stamp(*at));
            let _ = writeln!(out, "{}", indented(user));
            let _ = writeln!(out, " - assistant [{}]:", stamp(*at + Duration::seconds(1)));
            let _ = writeln!(out, "{}", indented(&assistant));
        }
    }
    out
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
