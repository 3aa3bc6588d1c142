//! What a membench run records per question, and the summary over them: per-category scores
//! with intervals, the agent's and the reference retriever's recall@k, cost and speed.
//!
//! Failures are counted as docs/judge.md ("How failures are counted") says: a question the
//! target failed to answer (its error status, no answer in time) is `failed`, scored 0 and
//! counted; one the judge's own side spoiled (a `judge_error`) is `excluded` from the scores and
//! counted apart. Every summary's `answered + failed + excluded` is its `questions`.

use std::collections::BTreeMap;

use protocol::recall::RecalledItem;
use serde::{Deserialize, Serialize};

use super::bm25::RECALL_KS;
use super::dataset::DatasetKind;
use super::ingest::Ingestion;
use super::judge::Verdict;
use super::scoring::{TwoOptions, locomo_category_name};
use crate::endpoint::{Failure, FailureKind};
use crate::report::stats::{bounded_mean_ci, mean, nearest_rank, wilson};

/// One question asked and scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionResult {
    pub id: String,
    pub conversation: String,
    pub category: String,
    /// Position in the conversation's seeded question order (0-based).
    pub order: usize,
    /// The question exactly as sent (with its per-category words; in `context` mode without the
    /// history around it).
    pub asked: String,
    pub gold: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<TwoOptions>,
    /// The agent's reply; `None` when the request failed (see `failure`).
    pub reply: Option<String>,
    /// The reply as scored (category 5: mapped back from a one-letter answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scored_reply: Option<String>,
    /// LoCoMo: the authors' F1 score. LongMemEval: the judge's verdict as 1/0, `None` without a
    /// judge (accuracy not applicable). 0 when the target failed the question; `None` when the
    /// judge's side spoiled it (excluded, see [`QuestionResult::outcome`]).
    pub score: Option<f64>,
    /// LongMemEval without a judge: token F1, a stand-in labelled as such.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub f1_stand_in: Option<f64>,
    /// The model judge (LongMemEval accuracy; LoCoMo's J, categories 1-4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<Verdict>,
    /// Why the model judge gave no verdict (always `judge_error`: its call failed, or its
    /// answer stayed unreadable): the question is left out of J (LongMemEval: of the score).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_failure: Option<Failure>,
    /// LoCoMo's J for this question: 1 judged correct, 0 judged wrong or no answer from the
    /// target; `None` when not judged (category 5, no judge, a `judge_failure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_score: Option<f64>,
    pub evidence: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence_sessions: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall_excluded: Option<String>,
    /// What the agent recalled for the question, when it offers recall.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recalled: Option<Vec<RecalledItem>>,
    /// The agent's evidence recall@k; `None` when not applicable (and when the judge's side
    /// spoiled the recall request); 0 at every k when the target failed it.
    pub agent_recall: Option<BTreeMap<usize, f64>>,
    /// How the recall request (`POST /control/memory/recall`) failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall_failure: Option<Failure>,
    /// The reference retriever's top turns and its recall@k.
    pub bm25_top: Vec<String>,
    pub bm25_recall: Option<BTreeMap<usize, f64>>,
    /// LongMemEval: session-level recall@k (answer_session_ids), agent and reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session_recall: Option<BTreeMap<usize, f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bm25_session_recall: Option<BTreeMap<usize, f64>>,
    pub latency_ms: Option<u64>,
    pub prompt_tokens: Option<u32>,
    /// `context` mode: whether the history was cut to fit `--context-tokens`.
    #[serde(default)]
    pub context_truncated: bool,
    /// How the question's request failed, if it did (the target's failure, or a `judge_error`
    /// when the judge could not send it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
}

/// What became of a question, for the counts every summary gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Scored on the target's reply.
    Answered,
    /// The target failed it (`agent_error`, `timeout`, `rate_limited`, `infra_error`): scored
    /// 0, counted against the target.
    Failed(FailureKind),
    /// The judge's own side spoiled it (`judge_error`): left out of the scores, counted apart.
    Excluded(FailureKind),
}

impl QuestionResult {
    pub fn outcome(&self) -> Outcome {
        match &self.failure {
            Some(f) if f.kind == FailureKind::JudgeError => Outcome::Excluded(f.kind),
            Some(f) => Outcome::Failed(f.kind),
            // LongMemEval's score is the judge's verdict: without one, nothing to score.
            None => match &self.judge_failure {
                Some(f) if self.score.is_none() => Outcome::Excluded(f.kind),
                _ => Outcome::Answered,
            },
        }
    }
}

/// One category's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategorySummary {
    pub category: String,
    pub name: String,
    /// Every question of the category: `answered + failed + excluded`.
    pub questions: usize,
    /// Scored on the target's reply.
    #[serde(default)]
    pub answered: usize,
    /// The target failed them: scored 0, in the score's mean.
    #[serde(default)]
    pub failed: usize,
    /// The judge's own side spoiled them: not in the score's mean.
    #[serde(default)]
    pub excluded: usize,
    /// `failed` and `excluded` by failure class (`agent_error`, `timeout`, `rate_limited`,
    /// `infra_error`, `judge_error`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failures: BTreeMap<String, usize>,
    /// Mean score (LoCoMo F1, LongMemEval judge accuracy); `None` when not applicable.
    pub score: Option<f64>,
    pub score_ci: Option<(f64, f64)>,
    /// LongMemEval without a judge: mean token F1, a stand-in.
    pub f1_stand_in: Option<f64>,
    /// Judge accuracy (LoCoMo J; LongMemEval's accuracy is `score`).
    pub judge_accuracy: Option<f64>,
    /// Questions in J's mean (LoCoMo).
    #[serde(default)]
    pub judged: usize,
    /// Verdicts the model judge could not give (`judge_error`): left out of J (LongMemEval: of
    /// the score, so they are among `excluded`).
    #[serde(default)]
    pub judge_errors: usize,
    /// Questions counted in recall@k.
    pub recall_questions: usize,
    /// Recall requests that failed: the target's failures are in recall@k as 0, a
    /// `judge_error`'s are not.
    #[serde(default)]
    pub recall_failures: usize,
    pub agent_recall: Option<BTreeMap<usize, f64>>,
    pub bm25_recall: Option<BTreeMap<usize, f64>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Speed {
    pub ingested_turns: usize,
    pub ingestion_seconds: f64,
    /// Summed over conversations ingested at once, so with `--concurrency` above 1 this is the
    /// rate per conversation stream, not wall-clock throughput.
    pub turns_per_second: Option<f64>,
    pub wall_seconds: f64,
    pub latency_p50_ms: Option<u64>,
    pub latency_p95_ms: Option<u64>,
    pub mean_prompt_tokens: Option<f64>,
    pub failed_requests: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub dataset: DatasetKind,
    pub overall: CategorySummary,
    pub categories: Vec<CategorySummary>,
    pub speed: Speed,
    /// Why the agent's recall@k is not applicable, when it is not.
    pub agent_recall_note: Option<String>,
    /// What is not comparable with a full run, when anything is.
    pub comparability_note: Option<String>,
    /// How the score column is defined.
    pub score_definition: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MembenchResults {
    pub summary: Summary,
    pub ingestion: BTreeMap<String, Ingestion>,
    pub questions: Vec<QuestionResult>,
}

fn mean_recall<'a>(
    maps: impl Iterator<Item = &'a Option<BTreeMap<usize, f64>>>,
) -> Option<BTreeMap<usize, f64>> {
    let maps: Vec<&BTreeMap<usize, f64>> = maps.flatten().collect();
    if maps.is_empty() {
        return None;
    }
    Some(
        RECALL_KS
            .iter()
            .filter_map(|k| {
                let values: Vec<f64> = maps.iter().filter_map(|m| m.get(k).copied()).collect();
                Some((*k, mean(&values)?))
            })
            .collect(),
    )
}

fn category_name(dataset: DatasetKind, category: &str) -> String {
    match dataset {
        DatasetKind::Locomo if category != "all" => {
            format!("{category} {}", locomo_category_name(category))
        }
        _ => category.to_owned(),
    }
}

fn summarise(
    dataset: DatasetKind,
    category: &str,
    questions: &[&QuestionResult],
) -> CategorySummary {
    let scores: Vec<f64> = questions.iter().filter_map(|q| q.score).collect();
    let mut answered = 0;
    let mut failed = 0;
    let mut excluded = 0;
    let mut failures = BTreeMap::new();
    for q in questions {
        let kind = match q.outcome() {
            Outcome::Answered => {
                answered += 1;
                continue;
            }
            Outcome::Failed(kind) => {
                failed += 1;
                kind
            }
            Outcome::Excluded(kind) => {
                excluded += 1;
                kind
            }
        };
        *failures.entry(kind.as_str().to_owned()).or_insert(0) += 1;
    }
    let score_ci = match dataset {
        // F1 in [0, 1]: Wilson of the mean, honest at a handful of questions.
        DatasetKind::Locomo => bounded_mean_ci(&scores),
        DatasetKind::Longmemeval => {
            let passed = scores.iter().filter(|s| **s >= 1.0).count();
            wilson(passed, scores.len())
        }
    };
    let f1: Vec<f64> = questions.iter().filter_map(|q| q.f1_stand_in).collect();
    let judged: Vec<f64> = questions.iter().filter_map(|q| q.judge_score).collect();
    let in_recall: Vec<&&QuestionResult> = questions
        .iter()
        .filter(|q| q.recall_excluded.is_none())
        .collect();
    CategorySummary {
        category: category.to_owned(),
        name: category_name(dataset, category),
        questions: questions.len(),
        answered,
        failed,
        excluded,
        failures,
        score: mean(&scores),
        score_ci,
        f1_stand_in: mean(&f1),
        judge_accuracy: match dataset {
            DatasetKind::Locomo => mean(&judged),
            DatasetKind::Longmemeval => None,
        },
        judged: match dataset {
            DatasetKind::Locomo => judged.len(),
            DatasetKind::Longmemeval => 0,
        },
        judge_errors: questions
            .iter()
            .filter(|q| q.judge_failure.is_some())
            .count(),
        recall_questions: in_recall.len(),
        recall_failures: questions
            .iter()
            .filter(|q| q.recall_failure.is_some())
            .count(),
        agent_recall: mean_recall(in_recall.iter().map(|q| &q.agent_recall)),
        bm25_recall: mean_recall(in_recall.iter().map(|q| &q.bm25_recall)),
    }
}

/// The summary over every question, per category in the dataset's order.
pub fn summarise_all(
    dataset: DatasetKind,
    questions: &[QuestionResult],
    ingestion: &BTreeMap<String, Ingestion>,
    wall_seconds: f64,
) -> (CategorySummary, Vec<CategorySummary>, Speed) {
    let mut categories: Vec<String> = questions.iter().map(|q| q.category.clone()).collect();
    categories.sort();
    categories.dedup();
    let per_category = categories
        .iter()
        .map(|c| {
            let qs: Vec<&QuestionResult> = questions.iter().filter(|q| &q.category == c).collect();
            summarise(dataset, c, &qs)
        })
        .collect();
    let all: Vec<&QuestionResult> = questions.iter().collect();
    let overall = summarise(dataset, "all", &all);
    let mut latencies: Vec<u64> = questions.iter().filter_map(|q| q.latency_ms).collect();
    latencies.sort_unstable();
    let tokens: Vec<f64> = questions
        .iter()
        .filter_map(|q| q.prompt_tokens.map(f64::from))
        .collect();
    let ingested_turns = ingestion.values().map(|i| i.turns).sum();
    let ingestion_seconds: f64 = ingestion.values().map(|i| i.seconds).sum();
    let speed = Speed {
        ingested_turns,
        ingestion_seconds,
        turns_per_second: (ingestion_seconds > 0.0 && ingested_turns > 0)
            .then(|| ingested_turns as f64 / ingestion_seconds),
        wall_seconds,
        latency_p50_ms: nearest_rank(&latencies, 0.50),
        latency_p95_ms: nearest_rank(&latencies, 0.95),
        mean_prompt_tokens: mean(&tokens),
        failed_requests: ingestion.values().map(|i| i.errors.len()).sum::<usize>()
            + questions
                .iter()
                .map(|q| usize::from(q.failure.is_some()) + usize::from(q.recall_failure.is_some()))
                .sum::<usize>(),
    };
    (overall, per_category, speed)
}
