//! Aggregation of test results into per-type scores, and the plain-text summary table.

use std::fmt::Write;

use super::config::LtmConfig;
use super::results::TestTiming;
use super::results::{CheckSummary, RunResults, TestResult, TestStatus, TypeSummary};
use crate::report::stats::{bootstrap_ci, mean, nearest_rank};

/// Per-type summaries and the overall score, in the configuration's type order.
pub fn aggregate(config: &LtmConfig, tests: Vec<TestResult>) -> RunResults {
    let types: Vec<TypeSummary> = config
        .types
        .iter()
        .map(|t| {
            let of_type: Vec<&TestResult> = tests.iter().filter(|r| r.test_type == *t).collect();
            let scored: Vec<&TestResult> = of_type
                .iter()
                .copied()
                .filter(|r| r.score.is_some())
                .collect();
            let scores: Vec<f64> = scored.iter().filter_map(|r| r.score).collect();
            let ci = bootstrap_ci(&scores);
            let count = |s: TestStatus| of_type.iter().filter(|r| r.status == s).count();
            let passed = count(TestStatus::Passed);
            let mut checks: Vec<CheckSummary> = Vec::new();
            for check in scored.iter().flat_map(|r| &r.checks) {
                match checks.iter_mut().find(|c| c.label == check.label) {
                    Some(c) => {
                        c.mean = (c.mean * c.n as f64 + check.score) / (c.n + 1) as f64;
                        c.n += 1;
                    }
                    None => checks.push(CheckSummary {
                        label: check.label.clone(),
                        n: 1,
                        mean: check.score,
                    }),
                }
            }
            TypeSummary {
                test_type: *t,
                title: t.title().to_owned(),
                tests: of_type.len(),
                applicable: of_type.len() - count(TestStatus::NotApplicable),
                passed,
                failed: count(TestStatus::Failed),
                errors: count(TestStatus::Error),
                not_applicable_reason: of_type
                    .iter()
                    .find(|r| r.status == TestStatus::NotApplicable)
                    .and_then(|r| r.reason.clone()),
                mean: mean(&scores),
                ci_low: ci.map(|c| c.0),
                ci_high: ci.map(|c| c.1),
                pass_rate: (!scores.is_empty()).then(|| passed as f64 / scores.len() as f64),
                checks,
            }
        })
        .collect();
    let means: Vec<f64> = types.iter().filter_map(|t| t.mean).collect();
    RunResults {
        suite: "ltm".to_owned(),
        seed: config.seed,
        trials: config.trials,
        span_tokens: config.span_tokens,
        history: config.history,
        overall: mean(&means),
        types,
        tests,
    }
}

fn pct(value: Option<f64>) -> String {
    value.map_or("-".to_owned(), |v| format!("{:.0}%", v * 100.0))
}

/// The summary table printed at the end of a run.
pub fn render_table(results: &RunResults) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<18} {:>6} {:>7} {:>7} {:>13}  note",
        "test type", "tests", "passed", "score", "95% CI"
    );
    for t in &results.types {
        let ci = match (t.ci_low, t.ci_high) {
            (Some(lo), Some(hi)) => format!("{:.0}-{:.0}%", lo * 100.0, hi * 100.0),
            _ => "-".to_owned(),
        };
        let note = if t.applicable == 0 {
            "not applicable".to_owned()
        } else if t.errors > 0 {
            format!("{} judge error(s)", t.errors)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{:<18} {:>6} {:>7} {:>7} {:>13}  {note}",
            t.test_type.name(),
            t.tests,
            format!("{}/{}", t.passed, t.applicable),
            pct(t.mean),
            ci,
        );
    }
    let _ = writeln!(
        out,
        "overall score: {} (mean of applicable types; history mode: {})",
        pct(results.overall),
        results.history
    );
    out
}

/// Latency figures of a run's chat turns.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Latency {
    pub turns: usize,
    pub p50_ms: u64,
    pub p95_ms: u64,
    pub max_ms: u64,
    /// Turns that needed more than one attempt (429 retries).
    pub retried: usize,
}

/// Nearest-rank percentiles over every turn. A sorted vector is enough for a few thousand turns;
/// the load suite, with far more samples, is where a histogram crate earns its place.
pub fn latency(timings: &[TestTiming]) -> Option<Latency> {
    let mut all: Vec<u64> = timings
        .iter()
        .flat_map(|t| t.turn_ms.iter().copied())
        .collect();
    if all.is_empty() {
        return None;
    }
    all.sort_unstable();
    Some(Latency {
        turns: all.len(),
        p50_ms: nearest_rank(&all, 0.50)?,
        p95_ms: nearest_rank(&all, 0.95)?,
        max_ms: all[all.len() - 1],
        retried: timings
            .iter()
            .flat_map(|t| &t.turn_attempts)
            .filter(|a| **a > 1)
            .count(),
    })
}

#[cfg(test)]
mod latency_tests {
    use super::*;
    use crate::suites::ltm::results::TestTiming;

    #[test]
    fn nearest_rank_percentiles() {
        let timing = TestTiming {
            id: "x".into(),
            total_ms: 0,
            turn_ms: (1..=100).rev().collect(),
            turn_attempts: vec![1, 2, 1, 4],
        };
        let l = latency(&[timing]).unwrap();
        assert_eq!(
            (l.turns, l.p50_ms, l.p95_ms, l.max_ms, l.retried),
            (100, 50, 95, 100, 2)
        );
        assert_eq!(latency(&[]), None);
    }
}
