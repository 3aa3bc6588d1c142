//! LongMemEval's published format (`longmemeval_s/_m/_oracle.json`): a list of items with
//! `question_id`, `question_type`, `question`, `answer`, `question_date`,
//! `haystack_session_ids`, `haystack_dates` ("2023/05/20 (Sat) 02:21"), `haystack_sessions`
//! (lists of `{role, content, has_answer?}` turns) and `answer_session_ids`. A question id ending
//! in `_abs` is an abstention question. Each item is its own chat history, so each becomes one
//! [`Conversation`] with one question.

use std::path::Path;
use std::sync::LazyLock;

use chrono::{DateTime, NaiveDate, Utc};
use regex::Regex;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{
    Conversation, DataProblem, Dataset, DatasetError, DatasetKind, Question, Role, Session, Turn,
    answer_text, json_items,
};

const EXPECTED: &str = "LongMemEval (longmemeval_s/_m/_oracle.json)";
const DATE_EXAMPLE: &str = "2023/05/20 (Sat) 02:21";

#[derive(Deserialize)]
struct RawItem {
    question_id: String,
    question_type: String,
    question: String,
    answer: Value,
    question_date: String,
    haystack_session_ids: Vec<String>,
    haystack_dates: Vec<String>,
    haystack_sessions: Vec<Vec<RawTurn>>,
    #[serde(default)]
    answer_session_ids: Vec<String>,
}

#[derive(Deserialize)]
struct RawTurn {
    role: String,
    content: String,
    #[serde(default)]
    has_answer: bool,
}

static DATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(\d{4})/(\d{1,2})/(\d{1,2})(?:\s*\([A-Za-z]+\))?(?:\s+(\d{1,2}):(\d{2}))?$")
        .expect("valid regex")
});

/// Parses LongMemEval's date ("2023/05/20 (Sat) 02:21", the weekday and time optional), as UTC.
pub fn parse_date(value: &str) -> Option<DateTime<Utc>> {
    let c = DATE.captures(value.trim())?;
    let number = |i: usize| c.get(i).map_or(Some(0), |m| m.as_str().parse::<u32>().ok());
    let year = c[1].parse::<i32>().ok()?;
    NaiveDate::from_ymd_opt(year, number(2)?, number(3)?)?
        .and_hms_opt(number(4)?, number(5)?, 0)
        .map(|t| t.and_utc())
}

pub fn parse(path: &Path, text: &str) -> Result<Dataset, DatasetError> {
    let items = json_items(path, text, EXPECTED)?;
    if !(items[0].contains_key("question_id") && items[0].contains_key("haystack_sessions")) {
        let keys: Vec<&String> = items[0].keys().take(6).collect();
        return Err(DatasetError::NotTheDataset {
            path: path.to_path_buf(),
            expected: EXPECTED,
            why: format!(
                "its first item has no question_id and haystack_sessions (keys: {keys:?})"
            ),
        });
    }
    let mut problems = Vec::new();
    let conversations = items
        .into_iter()
        .enumerate()
        .map(|(i, item)| conversation(path, i, item, &mut problems))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Dataset {
        kind: DatasetKind::Longmemeval,
        conversations,
        problems,
    })
}

fn conversation(
    path: &Path,
    index: usize,
    item: Map<String, Value>,
    problems: &mut Vec<DataProblem>,
) -> Result<Conversation, DatasetError> {
    let name = match item.get("question_id") {
        Some(Value::String(s)) => s.clone(),
        _ => format!("#{}", index + 1),
    };
    let bad = |why: String| DatasetError::BadItem {
        path: path.to_path_buf(),
        item: name.clone(),
        why,
    };
    let raw: RawItem =
        serde_json::from_value(Value::Object(item)).map_err(|e| bad(e.to_string()))?;
    let n = raw.haystack_sessions.len();
    if raw.haystack_session_ids.len() != n || raw.haystack_dates.len() != n {
        return Err(bad(format!(
            "{} sessions but {} session ids and {} dates",
            n,
            raw.haystack_session_ids.len(),
            raw.haystack_dates.len()
        )));
    }
    let bad_date = |item: String, value: &str| DatasetError::BadDate {
        path: path.to_path_buf(),
        item,
        value: value.to_owned(),
        example: DATE_EXAMPLE,
    };
    let mut sessions = Vec::with_capacity(n);
    let mut evidence = Vec::new();
    for ((id, date_text), turns) in raw
        .haystack_session_ids
        .into_iter()
        .zip(raw.haystack_dates)
        .zip(raw.haystack_sessions)
    {
        let date = parse_date(&date_text)
            .ok_or_else(|| bad_date(format!("{name} session {id}"), &date_text))?;
        let turns = turns
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                let role = match t.role.as_str() {
                    "user" => Role::User,
                    "assistant" => Role::Assistant,
                    other => {
                        return Err(bad(format!("session {id} turn {}: role {other:?}", i + 1)));
                    }
                };
                let turn = Turn {
                    id: format!("{id}:{}", i + 1),
                    speaker: t.role,
                    role,
                    text: t.content,
                    caption: None,
                    has_answer: t.has_answer,
                };
                if turn.has_answer {
                    evidence.push(turn.id.clone());
                }
                Ok(turn)
            })
            .collect::<Result<Vec<_>, _>>()?;
        sessions.push(Session {
            id,
            date,
            date_text,
            turns,
        });
    }
    let asked_at = parse_date(&raw.question_date)
        .ok_or_else(|| bad_date(format!("{name} question_date"), &raw.question_date))?;
    let answer = answer_text(&raw.answer).ok_or_else(|| bad("answer is not text".to_owned()))?;
    let abstention = raw.question_id.ends_with("_abs");
    let recall_excluded = if abstention {
        Some("abstention question: nothing to recall".to_owned())
    } else if evidence.is_empty() && raw.answer_session_ids.is_empty() {
        problems.push(DataProblem {
            item: raw.question_id.clone(),
            problem: "no has_answer turn and no answer_session_ids".to_owned(),
            action: "left out of recall@k".to_owned(),
        });
        Some("the question has no evidence".to_owned())
    } else {
        None
    };
    Ok(Conversation {
        id: raw.question_id.clone(),
        speakers: vec!["user".to_owned(), "assistant".to_owned()],
        sessions,
        questions: vec![Question {
            id: raw.question_id,
            category: raw.question_type,
            question: raw.question,
            answer,
            adversarial_answer: None,
            evidence,
            evidence_sessions: raw.answer_session_ids,
            abstention,
            asked_at: Some(asked_at),
            recall_excluded,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::fixture;
    use super::super::{DatasetKind, load};
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn reads_longmemeval_dates() {
        assert_eq!(
            parse_date("2023/05/20 (Sat) 02:21"),
            Some(Utc.with_ymd_and_hms(2023, 5, 20, 2, 21, 0).unwrap())
        );
        assert_eq!(
            parse_date("2023/05/30"),
            Some(Utc.with_ymd_and_hms(2023, 5, 30, 0, 0, 0).unwrap())
        );
        assert_eq!(parse_date("2023/13/30 (Sat) 02:21"), None);
        assert_eq!(parse_date("May 30, 2023"), None);
    }

    #[test]
    fn the_fixture_reads_with_evidence_turns_and_sessions() {
        let data = load(DatasetKind::Longmemeval, &fixture("longmemeval_small.json")).unwrap();
        assert_eq!(data.conversations.len(), 3);
        let c = &data.conversations[0];
        let q = &c.questions[0];
        assert_eq!(q.category, "single-session-user");
        assert_eq!(q.evidence, ["answer_s2:1"]);
        assert_eq!(q.evidence_sessions, ["answer_s2"]);
        assert_eq!(q.recall_excluded, None);
        assert_eq!(
            q.asked_at,
            Some(Utc.with_ymd_and_hms(2023, 5, 30, 23, 40, 0).unwrap())
        );
        assert_eq!(c.sessions[1].turns[1].role, Role::Assistant);
        let numeric = &data.conversations[1].questions[0];
        assert_eq!(numeric.answer, "3");
        let abstention = &data.conversations[2].questions[0];
        assert!(abstention.abstention);
        assert!(abstention.recall_excluded.is_some());
    }
}
