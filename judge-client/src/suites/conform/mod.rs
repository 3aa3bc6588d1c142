//! `judge conform`: does an OpenAI-compatible server speak Chat Completions and the Responses API
//! the way OpenAI's clients expect, and does an A2A agent speak A2A 1.0 over JSON-RPC as the
//! specification says? Each check is a named test that records the exchanges it made, so a
//! failure shows the request and the offending answer.
//!
//! - [`sse`]: strict server-sent-event framing of a captured stream;
//! - [`events`]: chat chunks and `[DONE]`; the Responses event order and sequence numbers;
//! - [`shape`]: the JSON fields an OpenAI client reads;
//! - `checks`: the checks of each API (the catalogue, and the requests they send);
//! - [`runner`]: runs the checks against a target and writes the run directory;
//! - [`report`]: `junit.xml` and `report.html`.

mod checks;
pub mod events;
pub mod report;
pub mod runner;
pub mod shape;
pub mod sse;

use serde::{Deserialize, Serialize};

pub use checks::{CATALOGUE, CheckSpec};
pub use runner::{ConformConfig, ConformError, ConformRun, run};

/// The API a check is about.
pub use crate::endpoint::Api;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Pass,
    Fail,
    /// The check could not be decided on this target (for example: the model never called the
    /// tool it was told to call); `reason` says why. Neither a pass nor a failure.
    NotApplicable,
}

impl CheckStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Pass => "pass",
            CheckStatus::Fail => "fail",
            CheckStatus::NotApplicable => "not_applicable",
        }
    }
}

/// One HTTP exchange of a check, as sent and answered (bodies clipped to [`CAPTURE_LIMIT`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    pub method: String,
    /// Below the API base, e.g. `/v1/responses`; for A2A the URL called.
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_body: Option<String>,
    /// `None` when no answer came (see `error`).
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_body: Option<String>,
    /// A transport failure (refused, timed out), classified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Bodies longer than this many bytes are clipped in `results.json` (the length is noted).
pub const CAPTURE_LIMIT: usize = 8 * 1024;

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// Stable name, `<api>.<check>` (e.g. `responses.stream_events`).
    pub name: String,
    pub api: Api,
    /// What the check requires, in one sentence.
    pub title: String,
    pub status: CheckStatus,
    /// Why it failed or was not applicable; for a pass, a note when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub exchanges: Vec<Exchange>,
}

/// Per API: whether it is served at all, and the counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiSummary {
    pub api: Api,
    /// `false` when the first request to it answered 404 (every check then fails with that
    /// reason).
    pub served: bool,
    pub passed: usize,
    pub failed: usize,
    pub not_applicable: usize,
}

/// `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConformResults {
    pub suite: String,
    pub endpoint: String,
    pub model: String,
    pub apis: Vec<ApiSummary>,
    pub passed: usize,
    pub failed: usize,
    pub not_applicable: usize,
    pub checks: Vec<CheckResult>,
}

impl ConformResults {
    pub fn new(endpoint: String, model: String, apis: &[Api], checks: Vec<CheckResult>) -> Self {
        let count = |api: Option<Api>, status: CheckStatus| {
            checks
                .iter()
                .filter(|c| api.is_none_or(|a| c.api == a) && c.status == status)
                .count()
        };
        let summaries = apis
            .iter()
            .map(|&api| ApiSummary {
                api,
                served: !checks
                    .iter()
                    .any(|c| c.api == api && c.reason.as_deref().is_some_and(is_not_served)),
                passed: count(Some(api), CheckStatus::Pass),
                failed: count(Some(api), CheckStatus::Fail),
                not_applicable: count(Some(api), CheckStatus::NotApplicable),
            })
            .collect();
        Self {
            suite: "conform".to_owned(),
            endpoint,
            model,
            apis: summaries,
            passed: count(None, CheckStatus::Pass),
            failed: count(None, CheckStatus::Fail),
            not_applicable: count(None, CheckStatus::NotApplicable),
            checks,
        }
    }
}

/// The reason every check of an API gets when the API is not served at all.
pub const NOT_SERVED: &str = "endpoint not served";

fn is_not_served(reason: &str) -> bool {
    reason.starts_with(NOT_SERVED)
}

/// The conformance suite ([`crate::suites::Suite`]): judged on the share of applicable checks
/// that pass, compared check by check.
pub struct Conform;

impl crate::suites::Suite for Conform {
    const KIND: &'static str = "conform";
    const UNIT: &'static str = "check";
    type Results = ConformResults;

    const HEADLINE: Option<crate::suites::Headline> = Some(crate::suites::Headline {
        label: "applicable checks passed",
        units: crate::suites::Units::Fraction,
    });

    /// A check is not a sample of the server's behaviour.
    const NOISE_FLOOR: bool = false;

    fn headline(r: &Self::Results) -> Option<f64> {
        let applicable = r.passed + r.failed;
        (applicable > 0).then(|| r.passed as f64 / applicable as f64)
    }

    /// Checks are not seeded.
    fn seed(_: &Self::Results) -> Option<u64> {
        None
    }

    fn figures(r: &Self::Results) -> Vec<crate::suites::Figure> {
        use crate::suites::{Better, Figure};
        vec![
            Figure::new("pass_rate", Self::headline(r), Better::Higher),
            Figure::new("failed", Some(r.failed as f64), Better::Lower),
        ]
    }

    fn units(r: &Self::Results) -> Vec<crate::suites::UnitScore> {
        r.checks
            .iter()
            .map(|c| {
                crate::suites::UnitScore::new(
                    c.name.clone(),
                    c.api.as_str().to_owned(),
                    match c.status {
                        CheckStatus::Pass => Some(1.0),
                        CheckStatus::Fail => Some(0.0),
                        CheckStatus::NotApplicable => None,
                    },
                    c.status == CheckStatus::Pass,
                )
            })
            .collect()
    }
}
