//! LoCoMo's published format (`locomo10.json`): a list of samples, each with `sample_id`,
//! `conversation` (`speaker_a`, `speaker_b`, `session_<n>` turn lists and
//! `session_<n>_date_time` such as "1:56 pm on 8 May, 2023") and `qa`.
//!
//! Quirks taken in stride: category-5 items carry `adversarial_answer` and no `answer`; some
//! answers are numbers; dates listed for sessions that have no turns; evidence ids written
//! `"D8:6; D9:17"`, `"D:11:26"`, `"D30:05"` or as space-separated lists (normalised, and noted);
//! evidence that names no turn or no evidence at all (the question is left out of recall@k, and
//! noted).

use std::collections::HashSet;
use std::path::Path;
use std::sync::LazyLock;

use chrono::{DateTime, NaiveDateTime, Utc};
use regex::Regex;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{
    Conversation, DataProblem, Dataset, DatasetError, DatasetKind, Question, Role, Session, Turn,
    answer_text, json_items,
};

/// What the evaluation code offers against the adversarial answer in category 5.
pub const NOT_MENTIONED: &str = "Not mentioned in the conversation";
const EXPECTED: &str = "LoCoMo (locomo10.json)";
const DATE_EXAMPLE: &str = "1:56 pm on 8 May, 2023";

#[derive(Deserialize)]
struct RawTurn {
    speaker: String,
    dia_id: String,
    text: String,
    #[serde(default)]
    blip_caption: Option<String>,
}

#[derive(Deserialize)]
struct RawQa {
    question: String,
    #[serde(default)]
    answer: Option<Value>,
    #[serde(default)]
    adversarial_answer: Option<Value>,
    category: u8,
    #[serde(default)]
    evidence: Vec<String>,
}

/// Parses LoCoMo's session date ("1:56 pm on 8 May, 2023"), taken as UTC.
pub fn parse_date(value: &str) -> Option<DateTime<Utc>> {
    let compact = value.split_whitespace().collect::<Vec<_>>().join(" ");
    NaiveDateTime::parse_from_str(&compact, "%I:%M %p on %d %B, %Y")
        .or_else(|_| NaiveDateTime::parse_from_str(&compact, "%I:%M %p on %d %b, %Y"))
        .ok()
        .map(|t| t.and_utc())
}

pub fn parse(path: &Path, text: &str) -> Result<Dataset, DatasetError> {
    let items = json_items(path, text, EXPECTED)?;
    let first = &items[0];
    if !(first.contains_key("sample_id") && first.contains_key("conversation")) {
        let keys: Vec<&String> = first.keys().take(6).collect();
        return Err(DatasetError::NotTheDataset {
            path: path.to_path_buf(),
            expected: EXPECTED,
            why: format!("its first item has no sample_id and conversation (keys: {keys:?})"),
        });
    }
    let mut problems = Vec::new();
    let conversations = items
        .into_iter()
        .enumerate()
        .map(|(i, item)| sample(path, i, item, &mut problems))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Dataset {
        kind: DatasetKind::Locomo,
        conversations,
        problems,
    })
}

fn sample(
    path: &Path,
    index: usize,
    mut item: Map<String, Value>,
    problems: &mut Vec<DataProblem>,
) -> Result<Conversation, DatasetError> {
    let id = match item.get("sample_id") {
        Some(Value::String(s)) => s.clone(),
        _ => format!("#{}", index + 1),
    };
    let bad = |why: String| DatasetError::BadItem {
        path: path.to_path_buf(),
        item: id.clone(),
        why,
    };
    let Some(Value::Object(conversation)) = item.remove("conversation") else {
        return Err(bad("has no conversation object".to_owned()));
    };
    let speakers: Vec<String> = ["speaker_a", "speaker_b"]
        .iter()
        .filter_map(|k| {
            conversation
                .get(*k)
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect();
    let mut numbers: Vec<u32> = conversation
        .keys()
        .filter_map(|k| k.strip_prefix("session_")?.parse().ok())
        .collect();
    numbers.sort_unstable();
    let mut sessions = Vec::new();
    for n in numbers {
        let key = format!("session_{n}");
        let raw_turns: Vec<RawTurn> = serde_json::from_value(conversation[&key].clone())
            .map_err(|e| bad(format!("{key}: {e}")))?;
        let date_key = format!("{key}_date_time");
        let date_text = conversation
            .get(&date_key)
            .and_then(Value::as_str)
            .ok_or_else(|| bad(format!("{key} has no {date_key}")))?;
        let date = parse_date(date_text).ok_or_else(|| DatasetError::BadDate {
            path: path.to_path_buf(),
            item: format!("{id} {date_key}"),
            value: date_text.to_owned(),
            example: DATE_EXAMPLE,
        })?;
        sessions.push(Session {
            id: format!("S{n}"),
            date,
            date_text: date_text.to_owned(),
            turns: raw_turns
                .into_iter()
                .map(|t| Turn {
                    id: t.dia_id,
                    speaker: t.speaker,
                    role: Role::User,
                    text: t.text,
                    caption: t.blip_caption.filter(|c| !c.trim().is_empty()),
                    has_answer: false,
                })
                .collect(),
        });
    }
    if sessions.is_empty() {
        return Err(bad("has no session_<n> turn lists".to_owned()));
    }
    let known: HashSet<&str> = sessions
        .iter()
        .flat_map(|s| s.turns.iter().map(|t| t.id.as_str()))
        .collect();
    let raw_qa: Vec<RawQa> = serde_json::from_value(item.remove("qa").unwrap_or(Value::Null))
        .map_err(|e| bad(format!("qa: {e}")))?;
    let questions = raw_qa
        .into_iter()
        .enumerate()
        .map(|(i, qa)| question(&id, i, qa, &known, problems))
        .collect::<Result<Vec<_>, String>>()
        .map_err(bad)?;
    Ok(Conversation {
        id,
        speakers,
        sessions,
        questions,
    })
}

fn question(
    sample_id: &str,
    index: usize,
    qa: RawQa,
    known: &HashSet<&str>,
    problems: &mut Vec<DataProblem>,
) -> Result<Question, String> {
    let id = format!("{sample_id}-q{}", index + 1);
    if !(1..=5).contains(&qa.category) {
        return Err(format!("question {id} has category {}", qa.category));
    }
    let (answer, adversarial_answer) = if qa.category == 5 {
        let adversarial = qa
            .adversarial_answer
            .as_ref()
            .or(qa.answer.as_ref())
            .and_then(answer_text)
            .ok_or_else(|| format!("category-5 question {id} has no adversarial_answer"))?;
        (NOT_MENTIONED.to_owned(), Some(adversarial))
    } else {
        let answer = qa
            .answer
            .as_ref()
            .and_then(answer_text)
            .ok_or_else(|| format!("question {id} has no answer"))?;
        (answer, None)
    };
    let (evidence, recall_excluded) = evidence(&id, &qa.evidence, known, problems);
    Ok(Question {
        id,
        category: qa.category.to_string(),
        question: qa.question,
        answer,
        adversarial_answer,
        evidence,
        evidence_sessions: Vec::new(),
        abstention: false,
        asked_at: None,
        recall_excluded,
    })
}

static DIALOG_ID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^D:?(\d+):0*(\d+)$").expect("valid regex"));

/// Normalises one question's evidence ids: splits `;`, `,` and whitespace-separated lists,
/// repairs `D:11:26` and leading zeros. Returns the ids and, when some cannot be used (or there
/// are none), why the question is left out of recall@k.
pub fn evidence(
    question: &str,
    raw: &[String],
    known: &HashSet<&str>,
    problems: &mut Vec<DataProblem>,
) -> (Vec<String>, Option<String>) {
    let mut ids = Vec::new();
    let mut unusable = Vec::new();
    for entry in raw {
        let pieces: Vec<&str> = entry
            .split(|c: char| c == ';' || c == ',' || c.is_whitespace())
            .filter(|p| !p.is_empty())
            .collect();
        let mut normalised = Vec::new();
        for piece in &pieces {
            match DIALOG_ID.captures(piece) {
                Some(c) => normalised.push(format!("D{}:{}", &c[1], &c[2])),
                None => unusable.push(format!("malformed evidence id {piece:?}")),
            }
        }
        let repaired = normalised.len() != 1 || normalised[0] != *entry;
        if repaired && !normalised.is_empty() {
            problems.push(DataProblem {
                item: question.to_owned(),
                problem: format!("evidence entry {entry:?} is not one dialog id"),
                action: format!("read as {normalised:?}"),
            });
        }
        for id in normalised {
            if known.contains(id.as_str()) {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            } else {
                unusable.push(format!("evidence id {id} points at no turn"));
            }
        }
    }
    let excluded = if raw.is_empty() {
        Some("the question has no evidence".to_owned())
    } else if !unusable.is_empty() {
        Some(unusable.join("; "))
    } else {
        None
    };
    if let Some(why) = &excluded {
        problems.push(DataProblem {
            item: question.to_owned(),
            problem: why.clone(),
            action: "left out of recall@k".to_owned(),
        });
    }
    (ids, excluded)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{fixture, real_locomo};
    use super::super::{DatasetKind, load};
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn reads_locomo_dates_as_utc() {
        assert_eq!(
            parse_date("1:56 pm on 8 May, 2023"),
            Some(Utc.with_ymd_and_hms(2023, 5, 8, 13, 56, 0).unwrap())
        );
        assert_eq!(
            parse_date("10:37 am on 27 June, 2023"),
            Some(Utc.with_ymd_and_hms(2023, 6, 27, 10, 37, 0).unwrap())
        );
        assert_eq!(
            parse_date("12:09 am on 13 September, 2023"),
            Some(Utc.with_ymd_and_hms(2023, 9, 13, 0, 9, 0).unwrap())
        );
        assert_eq!(parse_date("8 May 2023"), None);
        assert_eq!(parse_date("25:00 pm on 8 May, 2023"), None);
    }

    fn normalise(raw: &[&str]) -> (Vec<String>, Option<String>, Vec<DataProblem>) {
        let known: HashSet<&str> = ["D8:6", "D9:17", "D11:26", "D30:5", "D1:1", "D4:4"]
            .into_iter()
            .collect();
        let raw: Vec<String> = raw.iter().map(|s| (*s).to_owned()).collect();
        let mut problems = Vec::new();
        let (ids, excluded) = evidence("q", &raw, &known, &mut problems);
        (ids, excluded, problems)
    }

    #[test]
    fn evidence_lists_are_split_and_repaired() {
        let (ids, excluded, problems) = normalise(&["D8:6; D9:17"]);
        assert_eq!(ids, ["D8:6", "D9:17"]);
        assert_eq!(excluded, None);
        assert_eq!(problems.len(), 1, "the repair is reported");
        let (ids, excluded, _) = normalise(&["D1:1 D4:4", "D:11:26", "D30:05"]);
        assert_eq!(ids, ["D1:1", "D4:4", "D11:26", "D30:5"]);
        assert_eq!(excluded, None);
        let (ids, _, problems) = normalise(&["D1:1"]);
        assert_eq!(ids, ["D1:1"]);
        assert!(problems.is_empty(), "a clean id is no problem");
    }

    #[test]
    fn unusable_evidence_leaves_the_question_out_of_recall() {
        let (ids, excluded, problems) = normalise(&["D", "D1:1"]);
        assert_eq!(ids, ["D1:1"]);
        assert!(excluded.unwrap().contains("malformed evidence id \"D\""));
        assert_eq!(problems.last().unwrap().action, "left out of recall@k");
        let (_, excluded, _) = normalise(&["D10:19"]);
        assert!(excluded.unwrap().contains("D10:19 points at no turn"));
        let (ids, excluded, _) = normalise(&[]);
        assert!(ids.is_empty());
        assert_eq!(excluded.unwrap(), "the question has no evidence");
    }

    #[test]
    fn the_fixture_reads_with_its_quirks() {
        let data = load(DatasetKind::Locomo, &fixture("locomo_small.json")).unwrap();
        assert_eq!(data.conversations.len(), 2);
        let c = &data.conversations[0];
        assert_eq!(c.speakers, ["Ana", "Ben"]);
        assert_eq!(
            c.sessions.len(),
            2,
            "a date without a turn list is no session"
        );
        assert_eq!(
            c.sessions[1].date,
            Utc.with_ymd_and_hms(2023, 5, 20, 9, 5, 0).unwrap()
        );
        let photo = c.turns().find(|(_, t)| t.caption.is_some()).unwrap().1;
        assert_eq!(
            photo.line(),
            "Ben: Look at this! [shares a photo of a red kayak]"
        );
        let q = |id: &str| data.questions().find(|(_, q)| q.id == id).unwrap().1;
        assert_eq!(q("conv-a-q1").answer, "2022", "numeric answers as text");
        let adversarial = q("conv-a-q4");
        assert_eq!(adversarial.category, "5");
        assert_eq!(adversarial.answer, NOT_MENTIONED);
        assert_eq!(
            adversarial.adversarial_answer.as_deref(),
            Some("a blue canoe")
        );
        assert_eq!(q("conv-a-q2").evidence, ["D1:3", "D2:2"]);
        assert!(q("conv-a-q3").recall_excluded.is_some(), "no evidence");
        assert!(
            q("conv-a-q5").recall_excluded.is_some(),
            "malformed evidence"
        );
        assert!(data.problems.iter().any(|p| p.item == "conv-a-q5"));
    }

    #[test]
    fn the_real_file_has_the_published_counts() {
        let Some(path) = real_locomo() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "../shared/datasets/locomo10.json is missing in CI"
            );
            eprintln!("../shared/datasets/locomo10.json absent: only the fixtures were read");
            return;
        };
        let data = load(DatasetKind::Locomo, &path).unwrap();
        assert_eq!(data.conversations.len(), 10);
        let sessions: usize = data.conversations.iter().map(|c| c.sessions.len()).sum();
        assert_eq!(sessions, 272);
        let turns: usize = data.conversations.iter().map(|c| c.turns().count()).sum();
        assert_eq!(turns, 5882);
        let questions: Vec<&Question> = data.questions().map(|(_, q)| q).collect();
        assert_eq!(questions.len(), 1986);
        let per_category: Vec<usize> = ["1", "2", "3", "4", "5"]
            .iter()
            .map(|c| questions.iter().filter(|q| q.category == *c).count())
            .collect();
        assert_eq!(per_category, [282, 321, 96, 841, 446]);
        let excluded = questions
            .iter()
            .filter(|q| q.recall_excluded.is_some())
            .count();
        assert!(
            (5..=15).contains(&excluded),
            "about ten questions lack usable evidence, found {excluded}"
        );
    }
}
