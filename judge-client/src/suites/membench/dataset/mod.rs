//! The two datasets in one shape: conversations of dated sessions of turns, and the questions asked
//! about them. [`locomo`] and [`longmemeval`] read the published files into it; everything after
//! (ingestion, scoring, recall) only sees this module's types.
//!
//! A data problem that concerns one question (a malformed evidence id, no evidence at all) is
//! recorded as a [`DataProblem`] and never fails the file; a file that is not the named dataset,
//! truncated JSON or a session date that cannot be read is a [`DatasetError`] naming the item.

pub mod locomo;
pub mod longmemeval;

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Which published benchmark a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum DatasetKind {
    /// LoCoMo (Maharana et al., ACL 2024): `locomo10.json`.
    Locomo,
    /// LongMemEval (Wu et al., ICLR 2025): `longmemeval_s/_m/_oracle.json`.
    Longmemeval,
}

impl DatasetKind {
    pub fn name(self) -> &'static str {
        match self {
            DatasetKind::Locomo => "LoCoMo",
            DatasetKind::Longmemeval => "LongMemEval",
        }
    }
}

/// Who said a turn, as far as an OpenAI-style message can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A person talking (both LoCoMo speakers; LongMemEval's user).
    User,
    /// LongMemEval's assistant turns.
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// The dataset's own id when it has one (LoCoMo `dia_id`, e.g. `D1:3`), else
    /// `<session id>:<1-based turn number>` (LongMemEval). Sent to the agent with the turn.
    pub id: String,
    pub speaker: String,
    pub role: Role,
    pub text: String,
    /// A shared photo's caption (LoCoMo `blip_caption`), sent in place of the image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    /// LongMemEval's `has_answer`: this turn holds evidence.
    #[serde(default)]
    pub has_answer: bool,
}

impl Turn {
    /// The turn as one line of text: `Speaker: text [shares caption]`. The one rendering every
    /// protocol and the reference retriever use.
    pub fn line(&self) -> String {
        match &self.caption {
            Some(caption) => format!("{}: {} [shares {}]", self.speaker, self.text, caption),
            None => format!("{}: {}", self.speaker, self.text),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub id: String,
    /// When the session took place, taken as UTC.
    pub date: DateTime<Utc>,
    /// The date exactly as the dataset wrote it (shown to the model in `context` mode).
    pub date_text: String,
    pub turns: Vec<Turn>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// LongMemEval's `question_id`; for LoCoMo `<sample_id>-q<1-based index in qa>`.
    pub id: String,
    /// LoCoMo's category number as text (`"1"`..`"5"`) or LongMemEval's `question_type`.
    pub category: String,
    pub question: String,
    /// The gold answer, numbers written as text. For LoCoMo category 5, the adversarial answer is
    /// in `adversarial_answer` and this is "Not mentioned in the conversation".
    pub answer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adversarial_answer: Option<String>,
    /// Evidence turn ids (LoCoMo `evidence`, normalised; LongMemEval `has_answer` turns).
    pub evidence: Vec<String>,
    /// Evidence session ids (LongMemEval `answer_session_ids`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence_sessions: Vec<String>,
    /// LongMemEval abstention question (id ending in `_abs`).
    #[serde(default)]
    pub abstention: bool,
    /// When the question is asked (LongMemEval `question_date`); LoCoMo asks after the last session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_at: Option<DateTime<Utc>>,
    /// Why this question is left out of recall@k (no evidence, or evidence that names no turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall_excluded: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    /// LoCoMo `sample_id`; LongMemEval `question_id` (each item is its own history).
    pub id: String,
    pub speakers: Vec<String>,
    pub sessions: Vec<Session>,
    pub questions: Vec<Question>,
}

impl Conversation {
    pub fn turns(&self) -> impl Iterator<Item = (&Session, &Turn)> {
        self.sessions
            .iter()
            .flat_map(|s| s.turns.iter().map(move |t| (s, t)))
    }

    /// The moment questions are asked: the question's own date, else just after the last session.
    pub fn question_time(&self, question: &Question) -> Option<DateTime<Utc>> {
        question.asked_at.or_else(|| {
            self.sessions
                .iter()
                .map(|s| s.date)
                .max()
                .map(|d| d + chrono::Duration::hours(1))
        })
    }
}

/// A problem with one item that the reader worked around; recorded in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataProblem {
    /// The question (or conversation) concerned.
    pub item: String,
    pub problem: String,
    /// What the reader did about it.
    pub action: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    pub kind: DatasetKind,
    pub conversations: Vec<Conversation>,
    pub problems: Vec<DataProblem>,
}

impl Dataset {
    pub fn questions(&self) -> impl Iterator<Item = (&Conversation, &Question)> {
        self.conversations
            .iter()
            .flat_map(|c| c.questions.iter().map(move |q| (c, q)))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} is truncated: the JSON ends early (line {line}, column {column}); download it again"
    )]
    Truncated {
        path: PathBuf,
        line: usize,
        column: usize,
    },
    #[error("{path} is not valid JSON: {message}")]
    Json { path: PathBuf, message: String },
    #[error("{path} is not a {expected} file: {why}")]
    NotTheDataset {
        path: PathBuf,
        expected: &'static str,
        why: String,
    },
    #[error("{path}: item {item}: {why}")]
    BadItem {
        path: PathBuf,
        item: String,
        why: String,
    },
    #[error(
        "{path}: item {item}: session date {value:?} cannot be read (expected for example {example:?})"
    )]
    BadDate {
        path: PathBuf,
        item: String,
        value: String,
        example: &'static str,
    },
}

/// Reads `path` as the named dataset.
pub fn load(kind: DatasetKind, path: &Path) -> Result<Dataset, DatasetError> {
    let text = std::fs::read_to_string(path).map_err(|source| DatasetError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    match kind {
        DatasetKind::Locomo => locomo::parse(path, &text),
        DatasetKind::Longmemeval => longmemeval::parse(path, &text),
    }
}

/// The file as a JSON list of objects, or the error saying why not.
fn json_items(
    path: &Path,
    text: &str,
    expected: &'static str,
) -> Result<Vec<serde_json::Map<String, serde_json::Value>>, DatasetError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        if e.is_eof() {
            DatasetError::Truncated {
                path: path.to_path_buf(),
                line: e.line(),
                column: e.column(),
            }
        } else {
            DatasetError::Json {
                path: path.to_path_buf(),
                message: e.to_string(),
            }
        }
    })?;
    let not_it = |why: String| DatasetError::NotTheDataset {
        path: path.to_path_buf(),
        expected,
        why,
    };
    let serde_json::Value::Array(items) = value else {
        return Err(not_it("the top level is not a list".to_owned()));
    };
    if items.is_empty() {
        return Err(not_it("the list is empty".to_owned()));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| match item {
            serde_json::Value::Object(map) => Ok(map),
            other => Err(not_it(format!(
                "item {} is {}, not an object",
                i + 1,
                json_type(&other)
            ))),
        })
        .collect()
}

fn json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
    }
}

/// An answer as text: strings as they are, numbers (some LoCoMo answers) written out.
fn answer_text(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! Paths of the fixtures the project writes itself, and of the real files when present.
    use std::path::PathBuf;

    pub fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/membench")
            .join(name)
    }

    /// `../shared/datasets/locomo10.json` relative to the repository root, when present
    /// (`AGENTWALL_DATASETS_DIR` names another folder, for a checkout placed elsewhere).
    pub fn real_locomo() -> Option<PathBuf> {
        let dir = std::env::var_os("AGENTWALL_DATASETS_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/datasets")
            });
        let path = dir.join("locomo10.json");
        path.exists().then_some(path)
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::fixture;
    use super::*;

    fn refusal(kind: DatasetKind, name: &str) -> String {
        load(kind, &fixture(name)).unwrap_err().to_string()
    }

    #[test]
    fn a_file_of_the_other_dataset_is_refused() {
        let message = refusal(DatasetKind::Longmemeval, "locomo_small.json");
        assert!(message.contains("is not a LongMemEval"), "{message}");
        let message = refusal(DatasetKind::Locomo, "longmemeval_small.json");
        assert!(message.contains("is not a LoCoMo"), "{message}");
        assert!(message.contains("sample_id"), "{message}");
    }

    #[test]
    fn truncated_json_is_refused_as_truncated() {
        let message = refusal(DatasetKind::Locomo, "locomo_truncated.json");
        assert!(message.contains("is truncated"), "{message}");
    }

    #[test]
    fn an_unreadable_session_date_names_its_item() {
        let message = refusal(DatasetKind::Locomo, "locomo_bad_date.json");
        assert!(
            message.contains("conv-b session_1_date_time")
                && message.contains("sometime in June 2023"),
            "{message}"
        );
    }
}
