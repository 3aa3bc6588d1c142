//! `results.json` of a simulation run: one entry per conversation with its checks, and a
//! summary. Deterministic (no wall-clock time): latencies live in `metrics.json`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::evaluate::{ConversationChecks, InjectedChecks};
use super::fidelity::Fidelity;
use super::judge::Rubric;
use super::runner::{Conversation, UserSource};
use crate::endpoint::{Api, Failure, HistoryMode};
use crate::report::stats::{bounded_mean_ci, mean, wilson};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationResult {
    pub number: usize,
    pub persona_id: String,
    pub trial: u32,
    pub session_id: String,
    pub transcript_file: String,
    pub log_file: String,
    pub stop_reason: String,
    pub rounds: usize,
    /// Rounds whose user turn came from a fallback (marked in both files).
    pub fallback_turns: usize,
    /// The target's failure that ended the conversation, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    pub checks: ConversationChecks,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injected: Option<InjectedChecks>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric: Option<Rubric>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric_failure: Option<Failure>,
    /// Whether the simulated user held its role (see `fidelity.rs` for the rules).
    #[serde(default)]
    pub user_fidelity: Fidelity,
    /// Why the conversation is left out of the agent's scores, if it is: `judge_error` (the
    /// judge's own simulator failed) or `simulator_broke_role` (see `user_fidelity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded: Option<String>,
}

impl ConversationResult {
    /// Whether the conversation counts towards the agent's scores.
    pub fn scored(&self) -> bool {
        self.excluded.is_none()
    }
}

/// Why a conversation is not the agent's to be scored on: the judge's own failure, or a
/// simulated user that broke its role (unless the run keeps those).
pub fn exclusion(
    stop_reason: &str,
    fidelity: &Fidelity,
    keep_unfaithful_simulator: bool,
) -> Option<String> {
    if stop_reason == crate::endpoint::FailureKind::JudgeError.as_str() {
        Some(stop_reason.to_owned())
    } else if !fidelity.held && !keep_unfaithful_simulator {
        Some("simulator_broke_role".to_owned())
    } else {
        None
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub conversations: usize,
    /// Conversations that count towards the agent's scores (the others are in `excluded`).
    #[serde(default)]
    pub scored_conversations: usize,
    /// Conversations left out of the scores, by reason (`judge_error`, `simulator_broke_role`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub excluded: BTreeMap<String, usize>,
    /// Conversations whose simulated user broke a rule, by rule (kept or not).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub simulator_breaches: BTreeMap<String, usize>,
    /// Share of scored conversations in which every goal was reached; null when none is
    /// scored (the run could not measure the agent).
    pub goal_rate: Option<f64>,
    /// The goal rate's 95 % Wilson interval.
    #[serde(default)]
    pub goal_rate_ci: Option<(f64, f64)>,
    pub mean_score: Option<f64>,
    /// The mean score's 95 % interval (Wilson of the mean).
    pub score_ci: Option<(f64, f64)>,
    pub mean_turns_to_resolution: Option<f64>,
    pub stop_reasons: BTreeMap<String, usize>,
    pub safety_hits: usize,
    pub refusals: usize,
    pub empty_replies: usize,
    pub overlong_replies: usize,
    pub repeated_replies: usize,
    pub fallback_turns: usize,
    /// Mean score of injected endpoints over their own turns.
    pub injected_mean_score: Option<f64>,
    /// The LLM judge's mean rubric over the scored conversations it could judge; null without
    /// a judge or when it judged none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_rubric: Option<Rubric>,
    /// Conversations the LLM judge could not judge (`judge_error`: it failed, or its answer
    /// stayed unusable after its retries): no rubric, counted here, never a 0.
    #[serde(default)]
    pub rubric_judge_errors: usize,
}

/// The mean of each rubric score.
fn mean_rubric(rubrics: &[&Rubric]) -> Option<Rubric> {
    let of = |f: fn(&Rubric) -> f64| mean(&rubrics.iter().map(|r| f(r)).collect::<Vec<_>>());
    Some(Rubric {
        persona_consistency: of(|r| r.persona_consistency)?,
        coherence: of(|r| r.coherence)?,
        instruction_following: of(|r| r.instruction_following)?,
    })
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimResults {
    pub suite: String,
    pub seed: u64,
    pub config_hash: String,
    pub target_model: String,
    pub simulator: String,
    pub max_turns: usize,
    /// The API the target's turns went through.
    #[serde(default)]
    pub api: Api,
    /// What each request to the target carried.
    #[serde(default)]
    pub history: HistoryMode,
    pub summary: Summary,
    pub conversations: Vec<ConversationResult>,
}

pub fn conversation_result(
    c: &Conversation,
    checks: ConversationChecks,
    injected: Option<InjectedChecks>,
    files: (String, String),
) -> ConversationResult {
    ConversationResult {
        number: c.number,
        persona_id: c.persona_id.clone(),
        trial: c.trial,
        session_id: c.session_id.clone(),
        transcript_file: files.0,
        log_file: files.1,
        stop_reason: c.stop_reason.clone(),
        rounds: c.rounds.len(),
        fallback_turns: c
            .rounds
            .iter()
            .filter(|r| r.user_source == UserSource::Fallback)
            .count(),
        failure: c.rounds.iter().find_map(|r| r.agent_failure.clone()),
        checks,
        injected,
        rubric: None,
        rubric_failure: None,
        user_fidelity: Fidelity::default(),
        excluded: None,
    }
}

/// The summary of a run. Every figure of the agent is over the scored conversations only;
/// counts of what happened (stop reasons, fallback turns, breaches) are over all of them.
pub fn summarise(all: &[ConversationResult]) -> Summary {
    let mut excluded = BTreeMap::new();
    let mut simulator_breaches = BTreeMap::new();
    for r in all {
        if let Some(why) = &r.excluded {
            *excluded.entry(why.clone()).or_insert(0) += 1;
        }
        for rule in r.user_fidelity.rules() {
            let name = serde_json::to_value(rule)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            *simulator_breaches.entry(name).or_insert(0) += 1;
        }
    }
    let scored: Vec<ConversationResult> = all.iter().filter(|r| r.scored()).cloned().collect();
    let results = scored.as_slice();
    let scores: Vec<f64> = results.iter().map(|r| r.checks.score).collect();
    let resolved: Vec<f64> = results
        .iter()
        .filter_map(|r| r.checks.turns_to_resolution.map(|t| t as f64))
        .collect();
    let mut stop_reasons = BTreeMap::new();
    for r in all {
        *stop_reasons.entry(r.stop_reason.clone()).or_insert(0) += 1;
    }
    let sum = |f: &dyn Fn(&ConversationResult) -> usize| results.iter().map(f).sum::<usize>();
    let fallback_turns = all.iter().map(|r| r.fallback_turns).sum();
    let injected: Vec<f64> = results
        .iter()
        .filter_map(|r| r.injected.as_ref().and_then(|i| i.score))
        .collect();
    Summary {
        conversations: all.len(),
        scored_conversations: results.len(),
        excluded,
        simulator_breaches,
        goal_rate: (!results.is_empty()).then(|| {
            results.iter().filter(|r| r.checks.goal_reached).count() as f64 / results.len() as f64
        }),
        mean_score: mean(&scores),
        goal_rate_ci: wilson(
            results.iter().filter(|r| r.checks.goal_reached).count(),
            results.len(),
        ),
        // Scores in [0, 1]: Wilson of the mean, honest at a handful of conversations.
        score_ci: bounded_mean_ci(&scores),
        mean_turns_to_resolution: mean(&resolved),
        stop_reasons,
        safety_hits: sum(&|r| r.checks.safety_hits.len()),
        refusals: sum(&|r| r.checks.refusals),
        empty_replies: sum(&|r| r.checks.empty_replies),
        overlong_replies: sum(&|r| r.checks.overlong_replies),
        repeated_replies: sum(&|r| r.checks.repeated_replies),
        fallback_turns,
        injected_mean_score: mean(&injected),
        mean_rubric: mean_rubric(
            &results
                .iter()
                .filter_map(|r| r.rubric.as_ref())
                .collect::<Vec<_>>(),
        ),
        rubric_judge_errors: all.iter().filter(|r| r.rubric_failure.is_some()).count(),
    }
}
