//! A/B: the same panel, seed and simulator against two targets; conversations paired by persona
//! and trial; a preference per pair (the LLM judge with position swapping when configured, else
//! the deterministic checks); Bradley-Terry ratings with bootstrap intervals and a paired test.
//!
//! ```text
//! <dir>/manifest.json  the A/B run's own (suite `ab`, state, both targets, seed)
//! <dir>/a/, <dir>/b/   a complete simulation run directory each
//! <dir>/results.json   pairs, ratings, paired test
//! <dir>/report.html    the comparison, with links into a/ and b/
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::judge::{LlmJudge, PairVerdict};
use super::ratings::{Comparison, PairedTest, Preference, Rating, paired_test, rate};
use super::report;
use super::results::ConversationResult;
use super::suite::{SimError, SimOutcome, SimRunConfig, run_sim, write, write_json};
use crate::endpoint::Failure;
use crate::endpoint::{Credentials, TargetClient, TargetSettings};
use crate::rundir::{self, Manifest};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairResult {
    pub persona_id: String,
    pub trial: u32,
    pub score_a: f64,
    pub score_b: f64,
    pub preference: Preference,
    /// `llm_judge`, `checks`, or `judge_error` (the LLM judge failed: the pair is listed, and
    /// left out of the ratings and the paired test).
    pub decided_by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<PairVerdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_failure: Option<Failure>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbResults {
    pub endpoint_a: String,
    pub endpoint_b: String,
    /// Null when no conversation of that side could be scored.
    pub goal_rate_a: Option<f64>,
    pub goal_rate_b: Option<f64>,
    /// Pairs left out because either conversation is not the agent's to be scored on (the
    /// judge's own failure, or a simulated user that broke its role).
    #[serde(default)]
    pub excluded_pairs: usize,
    /// Pairs the LLM judge could not decide (`judge_error`): listed in `pairs`, left out of the
    /// ratings and the paired test.
    #[serde(default)]
    pub judge_error_pairs: usize,
    pub pairs: Vec<PairResult>,
    pub ratings: Vec<Rating>,
    pub test: PairedTest,
    /// Pairs whose LLM verdict flipped when the order was swapped.
    pub position_inconsistent: usize,
}

/// What an A/B run's manifest records beside the envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbDetails {
    pub seed: u64,
    pub target_a: TargetSettings,
    pub target_b: TargetSettings,
}

pub struct AbOutcome {
    pub dir: PathBuf,
    pub a: SimOutcome,
    pub b: SimOutcome,
    pub results: AbResults,
}

/// The deterministic preference: more goals reached wins, then fewer turns to resolution, then
/// fewer issues (repetition included).
pub fn prefer_by_checks(a: &ConversationResult, b: &ConversationResult) -> Preference {
    let key = |r: &ConversationResult| {
        let issues = r.checks.safety_hits.len()
            + r.checks.empty_replies
            + r.checks.overlong_replies
            + r.checks.repeated_replies
            + r.checks.refusals
            + usize::from(r.failure.is_some());
        (
            r.checks.goals_reached.len() as i64,
            -(r.checks.turns_to_resolution.unwrap_or(usize::MAX / 2) as i64),
            -(issues as i64),
        )
    };
    match key(a).cmp(&key(b)) {
        std::cmp::Ordering::Greater => Preference::A,
        std::cmp::Ordering::Less => Preference::B,
        std::cmp::Ordering::Equal => Preference::Tie,
    }
}

pub async fn run_ab(
    config_a: &SimRunConfig,
    target_b: TargetSettings,
    credentials_b: Credentials,
    dir: &Path,
) -> Result<AbOutcome, SimError> {
    let mut config_b = config_a.clone();
    config_b.target = target_b;
    config_b.credentials = credentials_b;
    let details = AbDetails {
        seed: config_a.settings.seed,
        target_a: config_a.target.clone(),
        target_b: config_b.target.clone(),
    };
    let mut manifest = Manifest::running(rundir::run_id(dir), "ab", chrono::Utc::now(), details);
    rundir::write_manifest(dir, &manifest)?;
    let outcome = compare_targets(config_a, &config_b, dir).await;
    match &outcome {
        Ok(_) => {
            manifest.complete();
            rundir::write_manifest(dir, &manifest)?;
        }
        Err(e) => rundir::mark_failed(dir, "ab", &e.to_string())?,
    }
    outcome
}

/// Both simulations, then their pairs compared.
async fn compare_targets(
    config_a: &SimRunConfig,
    config_b: &SimRunConfig,
    dir: &Path,
) -> Result<AbOutcome, SimError> {
    let a = run_sim(config_a, &dir.join("a")).await?;
    let b = run_sim(config_b, &dir.join("b")).await?;
    let judge = config_a.judge.as_ref().map(|(s, c)| {
        LlmJudge::new(
            TargetClient::new(s.clone(), c.clone()),
            config_a.settings.seed,
        )
    });
    let mut pairs = Vec::new();
    let mut excluded_pairs = 0;
    for ra in &a.results.conversations {
        let Some(rb) = b
            .results
            .conversations
            .iter()
            .find(|rb| rb.persona_id == ra.persona_id && rb.trial == ra.trial)
        else {
            continue;
        };
        if !ra.scored() || !rb.scored() {
            excluded_pairs += 1;
            continue;
        }
        let mut pair = PairResult {
            persona_id: ra.persona_id.clone(),
            trial: ra.trial,
            score_a: ra.checks.score,
            score_b: rb.checks.score,
            preference: prefer_by_checks(ra, rb),
            decided_by: "checks".to_owned(),
            verdict: None,
            judge_failure: None,
        };
        if let Some(judge) = &judge {
            let persona = config_a.personas.iter().find(|p| p.id == ra.persona_id);
            let ca = a.conversations.iter().find(|c| c.number == ra.number);
            let cb = b.conversations.iter().find(|c| c.number == rb.number);
            if let (Some(persona), Some(ca), Some(cb)) = (persona, ca, cb) {
                match judge.pairwise(persona, ca, cb).await {
                    Ok(verdict) => {
                        pair.preference = verdict.preference;
                        pair.decided_by = "llm_judge".to_owned();
                        pair.verdict = Some(verdict);
                    }
                    // The judge's failure is not a verdict on either agent, and the checks'
                    // preference would mix a second kind of verdict into the statistics.
                    Err(e) => {
                        pair.decided_by = JUDGE_ERROR.to_owned();
                        pair.judge_failure = Some(e.into());
                    }
                }
            }
        }
        pairs.push(pair);
    }
    let results = summarise_pairs(
        &config_a.target.endpoint,
        &config_b.target.endpoint,
        (&a, &b),
        pairs,
        config_a.settings.seed,
    );
    let results = AbResults {
        excluded_pairs,
        ..results
    };
    write_json(&dir.join("results.json"), &results)?;
    write(
        &dir.join("report.html"),
        report::ab_html(&results, &a.results, &b.results).as_bytes(),
    )?;
    Ok(AbOutcome {
        dir: dir.to_path_buf(),
        a,
        b,
        results,
    })
}

/// `decided_by` of a pair the LLM judge failed on.
const JUDGE_ERROR: &str = "judge_error";

/// Ratings and the paired test over the decided pairs; the pairs the judge failed on are
/// counted apart.
fn summarise_pairs(
    endpoint_a: &str,
    endpoint_b: &str,
    (a, b): (&SimOutcome, &SimOutcome),
    pairs: Vec<PairResult>,
    seed: u64,
) -> AbResults {
    let decided: Vec<&PairResult> = pairs
        .iter()
        .filter(|p| p.decided_by != JUDGE_ERROR)
        .collect();
    let comparisons: Vec<Comparison> = decided
        .iter()
        .map(|p| Comparison {
            first: 0,
            second: 1,
            score: match p.preference {
                Preference::A => 1.0,
                Preference::B => 0.0,
                Preference::Tie => 0.5,
            },
        })
        .collect();
    let preferences: Vec<Preference> = decided.iter().map(|p| p.preference).collect();
    let differences: Vec<f64> = decided.iter().map(|p| p.score_a - p.score_b).collect();
    AbResults {
        endpoint_a: endpoint_a.to_owned(),
        endpoint_b: endpoint_b.to_owned(),
        goal_rate_a: a.results.summary.goal_rate,
        goal_rate_b: b.results.summary.goal_rate,
        excluded_pairs: 0,
        judge_error_pairs: pairs.len() - decided.len(),
        ratings: rate(&["A".to_owned(), "B".to_owned()], &comparisons, seed),
        test: paired_test(&preferences, &differences),
        position_inconsistent: pairs
            .iter()
            .filter(|p| p.verdict.as_ref().is_some_and(|v| !v.position_consistent))
            .count(),
        pairs,
    }
}
