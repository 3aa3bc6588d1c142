//! Aggregation of test results into per-type scores, and the plain-text summary table.

use std::fmt::Write;

use super::config::LtmConfig;
use super::grader;
use super::results::TestTiming;
use super::results::{CheckSummary, RunResults, TestResult, TestStatus, TypeSummary};
use crate::report::stats::{bounded_mean_ci, mean, nearest_rank};
use crate::suites::concurrency::{self, RequestSpan};

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
            // Honest at a few trials per type (see `bounded_mean_ci`); a bootstrap is not.
            let ci = bounded_mean_ci(&scores);
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
                applicable: of_type.len()
                    - count(TestStatus::NotApplicable)
                    - count(TestStatus::NotGradable),
                passed,
                failed: count(TestStatus::Failed),
                errors: count(TestStatus::Error),
                not_gradable: count(TestStatus::NotGradable),
                not_applicable_reason: of_type
                    .iter()
                    .find(|r| {
                        matches!(
                            r.status,
                            TestStatus::NotApplicable | TestStatus::NotGradable
                        )
                    })
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
    let diagnosis = diagnose(&tests, config.concurrency);
    RunResults {
        suite: "ltm".to_owned(),
        seed: config.seed,
        trials: config.trials,
        span_tokens: config.span_tokens,
        history: config.history,
        api: config.api,
        phrasing: config.phrasing,
        overall: mean(&means),
        overall_ci: bounded_mean_ci(&tests.iter().filter_map(|t| t.score).collect::<Vec<_>>()),
        types,
        grader: grader::agreement(&tests),
        tests,
        diagnosis,
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
        let note = if t.applicable == 0 && t.not_gradable > 0 {
            "not gradable without --grader-endpoint".to_owned()
        } else if t.applicable == 0 {
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
        "overall score: {}{} (mean of applicable types; {}; {} phrasing)",
        pct(results.overall),
        results.overall_ci.map_or(String::new(), |(lo, hi)| format!(
            ", 95% CI {}-{}",
            pct(Some(lo)),
            pct(Some(hi))
        )),
        results.turns().describe(),
        results.phrasing
    );
    if let Some(g) = &results.grader {
        let _ = writeln!(out, "{}", grader_line(g));
    }
    for note in &results.diagnosis {
        let _ = writeln!(out, "WARNING: {note}");
    }
    out
}

/// The grader's agreement with the rules, in one line (the summary and the report).
pub fn grader_line(g: &grader::GraderAgreement) -> String {
    format!(
        "LLM grader: agrees with the rules on {} of {} checks both decided ({}; Cohen's kappa {}; rules pass/grader fail {}, rules fail/grader pass {}); settled {} of {} undecided; could not grade {} (judge_error)",
        g.agree,
        g.both_decided,
        pct(g.agreement),
        g.kappa.map_or("-".to_owned(), |k| format!("{k:.2}")),
        g.rules_pass_grader_fail,
        g.rules_fail_grader_pass,
        g.settled,
        g.undecided,
        g.judge_errors
    )
}

/// Tests that stopped on timeouts before the judge calls the run its own doing: at least this
/// many, and at least half of the tests that stopped on any failure.
pub const TIMEOUT_DIAGNOSIS_MIN: usize = 2;

/// What the judge can tell about its own part in a run's failures. Most failures being timeouts
/// is the mark of a target the judge overloaded (a local server with one slot answering
/// `--concurrency` tests at once) or a timeout too short for the model: the scores then say more
/// about the set-up than about the agent, and the user should hear so, with what to change.
pub fn diagnose(tests: &[TestResult], concurrency: usize) -> Vec<String> {
    let stopped: Vec<&TestResult> = tests.iter().filter(|t| t.failure.is_some()).collect();
    let timeouts = stopped
        .iter()
        .filter(|t| {
            t.failure
                .as_ref()
                .is_some_and(|f| f.kind == crate::endpoint::FailureKind::Timeout)
        })
        .count();
    if timeouts < TIMEOUT_DIAGNOSIS_MIN || timeouts * 2 < stopped.len() {
        return Vec::new();
    }
    let advice = if concurrency > 1 {
        format!(
            "the judge ran {concurrency} tests at once, and a target that serves one request at a \
             time (a local llama.cpp or Ollama server with one slot) makes each wait for the \
             others: run again with --concurrency 1, or raise --timeout"
        )
    } else {
        "the target answers more slowly than --timeout allows: raise --timeout, or cap replies \
         with --max-tokens"
            .to_owned()
    };
    vec![format!(
        "{timeouts} of {} tests stopped on a timeout, so these scores measure the set-up more \
         than the agent: {advice}",
        tests.len()
    )]
}

/// The rule of [`crate::suites::concurrency`] on a run's chat turns: a warning when latency grew
/// with the turns in flight as if the target served one at a time. Kept out of `results.json`,
/// which holds no wall-clock figure; the summary and the report show it.
pub fn one_at_a_time(timings: &[TestTiming]) -> Option<String> {
    let spans: Vec<RequestSpan> = timings
        .iter()
        .flat_map(|t| t.turn_sent_unix_ms.iter().zip(&t.turn_ms))
        .map(|(sent, latency)| RequestSpan {
            start_ms: *sent as f64,
            latency_ms: *latency as f64,
        })
        .collect();
    concurrency::one_at_a_time(&spans, concurrency::LOWER_CONCURRENCY)
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
            turn_sent_unix_ms: Vec::new(),
        };
        let l = latency(&[timing]).unwrap();
        assert_eq!(
            (l.turns, l.p50_ms, l.p95_ms, l.max_ms, l.retried),
            (100, 50, 95, 100, 2)
        );
        assert_eq!(latency(&[]), None);
    }

    /// Tests run 1, then 2, then 4 at a time; each sends its next turn as its reply arrives, and
    /// a turn takes `latency(in_flight)`.
    fn phased(latency: fn(u64) -> u64) -> Vec<TestTiming> {
        let mut timings = Vec::new();
        let mut at = 1_700_000_000_000u64;
        for in_flight in [1u64, 2, 4] {
            let each = latency(in_flight);
            for test in 0..in_flight {
                timings.push(TestTiming {
                    id: format!("t{in_flight}-{test}"),
                    total_ms: 10 * each,
                    turn_ms: vec![each; 10],
                    turn_attempts: vec![1; 10],
                    turn_sent_unix_ms: (0..10).map(|k| at + k * each).collect(),
                });
            }
            at += 10 * each;
        }
        timings
    }

    #[test]
    fn turns_that_wait_for_each_other_are_told_apart_from_a_slow_target() {
        let note = one_at_a_time(&phased(|n| 100 * n)).unwrap();
        assert!(note.contains("one at a time"), "{note}");
        assert!(note.contains("--concurrency 1"), "{note}");
        assert_eq!(
            one_at_a_time(&phased(|_| 700)),
            None,
            "slow, but in parallel"
        );
        // Timings written before send times were recorded decide nothing.
        let mut old = phased(|n| 100 * n);
        for t in &mut old {
            t.turn_sent_unix_ms.clear();
        }
        assert_eq!(one_at_a_time(&old), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint::{Failure, FailureKind};
    use crate::suites::ltm::types::TestType;

    fn test(failure: Option<FailureKind>) -> TestResult {
        TestResult {
            id: "needle-01".into(),
            test_type: TestType::Needle,
            trial: 1,
            status: if failure.is_some() {
                TestStatus::Error
            } else {
                TestStatus::Passed
            },
            reason: None,
            failure: failure.map(|kind| Failure {
                kind,
                message: "no complete answer within 60000 ms".into(),
                status: None,
                attempts: 1,
            }),
            score: failure.is_none().then_some(1.0),
            checks: vec![],
            sessions: vec![],
            filler_tokens: 0,
            transcript: vec![],
        }
    }

    #[test]
    fn a_run_that_stops_on_timeouts_says_the_judge_may_be_the_problem() {
        // The case seen against a one-slot llama.cpp server: every test stopped on a timeout.
        let tests: Vec<TestResult> = (0..8).map(|_| test(Some(FailureKind::Timeout))).collect();
        let notes = diagnose(&tests, 4);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("8 of 8 tests stopped on a timeout"),
            "{notes:?}"
        );
        assert!(notes[0].contains("--concurrency 1"), "{notes:?}");
        // At concurrency 1 the advice is the timeout or the reply length, not concurrency.
        let alone = diagnose(&tests, 1);
        assert!(alone[0].contains("--timeout") && !alone[0].contains("--concurrency 1"));
    }

    #[test]
    fn other_failures_and_a_lone_timeout_are_not_blamed_on_the_judge() {
        let mut tests: Vec<TestResult> = (0..6).map(|_| test(None)).collect();
        tests.push(test(Some(FailureKind::Timeout)));
        assert!(
            diagnose(&tests, 4).is_empty(),
            "one timeout is the target's"
        );
        tests.extend((0..3).map(|_| test(Some(FailureKind::AgentError))));
        tests.push(test(Some(FailureKind::Timeout)));
        assert!(
            diagnose(&tests, 4).is_empty(),
            "2 timeouts among 5 failures are not most of them"
        );
    }
}
