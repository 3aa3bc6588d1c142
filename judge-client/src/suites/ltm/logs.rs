//! The session logs of an LTM test, in the shared log format of [`crate::report::session_log`].

use chrono::{DateTime, Duration, Utc};

use super::results::{TestResult, TranscriptEntry};
use crate::report::session_log::{LogMeta, LogTurn, render_log};

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
    use crate::endpoint::{Failure, FailureKind};
    use crate::suites::ltm::TestType;
    use crate::suites::ltm::results::{SessionRecord, TestStatus};

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
