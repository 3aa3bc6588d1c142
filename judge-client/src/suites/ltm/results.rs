//! The shapes of `results.json`, per-test progress files and `timing.json`.
//!
//! Everything here except [`TestTiming`] is a pure function of the seed, the configuration and the
//! target's replies: no wall-clock time, no randomness. Latencies live in `timing.json` only.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::TestType;
use super::grader::{Grade, GraderAgreement};
use super::phrasing::Phrasing;
use super::scoring::Scorer;
use crate::endpoint::Failure;
use crate::endpoint::{Api, TurnMode};
use crate::suites::HistoryMode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestStatus {
    Passed,
    Failed,
    /// The judge failed (`judge_error`): excluded from the target's scores.
    Error,
    /// The target lacks a capability the test needs: excluded, never scored 0.
    NotApplicable,
    /// Only the LLM grader can grade the test and the run has none: excluded, never scored.
    NotGradable,
}

impl TestStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TestStatus::Passed => "passed",
            TestStatus::Failed => "failed",
            TestStatus::Error => "error",
            TestStatus::NotApplicable => "not_applicable",
            TestStatus::NotGradable => "not_gradable",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    pub label: String,
    pub session: String,
    /// Whether the scored turn was reached (a failure earlier in the test leaves it unreached: 0).
    pub reached: bool,
    pub score: f64,
    pub passed: bool,
    pub detail: String,
    pub scorer: Scorer,
    /// The rules could not tell (`detail` says why); the grader settles it when there is one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub undecided: bool,
    /// The LLM grader's grade (`--grader-endpoint`); see [`super::grader`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grade: Option<Grade>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum TranscriptEntry {
    Turn {
        session: String,
        /// Virtual time of the user turn (the reply is logged one second later).
        at: DateTime<Utc>,
        user: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failure: Option<Failure>,
        /// Label of the check scoring this reply.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        check: Option<String>,
    },
    Advance {
        session: String,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    },
    Reset {
        session: String,
        at: DateTime<Utc>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        working_items_removed: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        facts_removed: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failure: Option<Failure>,
    },
    Inject {
        session: String,
        at: DateTime<Utc>,
        facts: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failure: Option<Failure>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub label: String,
    pub session_id: String,
    /// The session's log, relative to the run directory (neutral name).
    pub log_file: String,
    pub planned_turns: usize,
    /// `completed`, a failure class, `aborted` (another session failed first) or `not_run`.
    pub stop_reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    pub id: String,
    pub test_type: TestType,
    pub trial: u32,
    pub status: TestStatus,
    /// Why a test is not applicable, or not gradable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// Mean of the check scores; `None` when not applicable or a judge error.
    pub score: Option<f64>,
    pub checks: Vec<CheckResult>,
    pub sessions: Vec<SessionRecord>,
    pub filler_tokens: u32,
    pub transcript: Vec<TranscriptEntry>,
}

/// Wall-clock measurements of one test, kept apart from the results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestTiming {
    pub id: String,
    pub total_ms: u64,
    /// Latency of each chat turn, in order.
    pub turn_ms: Vec<u64>,
    /// Attempts of each chat turn (more than 1 after `429` retries).
    pub turn_attempts: Vec<u32>,
    /// When each chat turn was sent, in Unix milliseconds (wall clock, so the turns of tests run
    /// by different invocations or shards can be laid side by side; see
    /// [`crate::suites::concurrency`]). Absent in runs made before it was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turn_sent_unix_ms: Vec<u64>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckSummary {
    pub label: String,
    pub n: usize,
    pub mean: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypeSummary {
    pub test_type: TestType,
    pub title: String,
    pub tests: usize,
    pub applicable: usize,
    pub passed: usize,
    pub failed: usize,
    pub errors: usize,
    /// Tests only the LLM grader can grade, in a run without one (counted in `tests`, not in
    /// `applicable`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_gradable: usize,
    /// Why the type's tests are not applicable, or not gradable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_applicable_reason: Option<String>,
    pub mean: Option<f64>,
    /// 95 % bootstrap interval of the mean score.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub pass_rate: Option<f64>,
    /// Mean per check label (the retention curve reads "after 1h" ... "after 30d" from here).
    pub checks: Vec<CheckSummary>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResults {
    pub suite: String,
    pub seed: u64,
    pub trials: u32,
    pub span_tokens: u32,
    pub history: HistoryMode,
    /// The API the turns went through.
    #[serde(default)]
    pub api: Api,
    /// The set of phrasings the user turns were written in (`standard` in runs made before the
    /// choice existed).
    #[serde(default)]
    pub phrasing: Phrasing,
    /// Mean of the applicable types' mean scores.
    pub overall: Option<f64>,
    /// Its 95 % interval: Wilson of the mean over the scored tests (see
    /// [`crate::report::stats::bounded_mean_ci`]).
    #[serde(default)]
    pub overall_ci: Option<(f64, f64)>,
    pub types: Vec<TypeSummary>,
    pub tests: Vec<TestResult>,
    /// What the judge noticed about the run itself, in words a user acts on (e.g. that it
    /// overloaded the target); empty when nothing was off.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnosis: Vec<String>,
    /// How the LLM grader and the rules compare, when the run had a grader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grader: Option<GraderAgreement>,
}

impl RunResults {
    /// How the run's turns were sent.
    pub fn turns(&self) -> TurnMode {
        TurnMode {
            api: self.api,
            history: self.history,
        }
    }
}
