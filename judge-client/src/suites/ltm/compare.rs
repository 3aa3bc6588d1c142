//! `judge compare RUN_A RUN_B`: test-by-test comparison of two runs, paired on test ids (the same
//! seed gives the same tests), with McNemar's exact test on pass/fail and a bootstrap interval of
//! the mean score difference.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::results::{RunResults, TestStatus};
use crate::endpoint::TurnMode;
use crate::endpoint::turns;
use crate::report::stats::{PairOutcome, pair_stats};
use crate::suites::ltm::{Phrasing, TestType};

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a results file: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// One test scored in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    pub id: String,
    pub test_type: TestType,
    pub score_a: f64,
    pub score_b: f64,
    pub passed_a: bool,
    pub passed_b: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub seed_a: u64,
    pub seed_b: u64,
    /// How each run sent its turns (API and history).
    #[serde(default)]
    pub turns_a: TurnMode,
    #[serde(default)]
    pub turns_b: TurnMode,
    /// The set of phrasings each run's user turns were written in.
    #[serde(default)]
    pub phrasing_a: Phrasing,
    #[serde(default)]
    pub phrasing_b: Phrasing,
    pub pairs: Vec<Pair>,
    /// Passed in A, not in B.
    pub regressions: usize,
    /// Passed in B, not in A.
    pub improvements: usize,
    /// McNemar's exact two-sided p-value on the discordant pairs.
    pub p_value: f64,
    pub mean_a: Option<f64>,
    pub mean_b: Option<f64>,
    /// Mean of `score_b - score_a`, with its 95 % bootstrap interval.
    pub mean_diff: Option<f64>,
    pub diff_ci: Option<(f64, f64)>,
    /// Tests present in only one run, or scored in only one.
    pub unpaired: usize,
    pub alpha: f64,
    /// B is significantly worse: more regressions than improvements with p < alpha, or a mean
    /// score difference whose whole interval is below zero.
    pub regression: bool,
}

/// Reads `results.json` from a run directory (or the file itself).
pub fn load(path: &Path) -> Result<RunResults, CompareError> {
    let file = if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file).map_err(|source| CompareError::Read {
        path: file.clone(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| CompareError::Parse { path: file, source })
}

pub fn compare(a: &RunResults, b: &RunResults, alpha: f64) -> Comparison {
    let mut pairs = Vec::new();
    let mut unpaired = 0usize;
    for test_a in &a.tests {
        let test_b = b.tests.iter().find(|t| t.id == test_a.id);
        match (test_a.score, test_b.and_then(|t| t.score.map(|s| (t, s)))) {
            (Some(score_a), Some((test_b, score_b))) => pairs.push(Pair {
                id: test_a.id.clone(),
                test_type: test_a.test_type,
                score_a,
                score_b,
                passed_a: test_a.status == TestStatus::Passed,
                passed_b: test_b.status == TestStatus::Passed,
            }),
            _ => unpaired += 1,
        }
    }
    unpaired += b
        .tests
        .iter()
        .filter(|t| !a.tests.iter().any(|x| x.id == t.id))
        .count();
    let outcomes: Vec<PairOutcome> = pairs
        .iter()
        .map(|p| PairOutcome {
            score_a: p.score_a,
            score_b: p.score_b,
            passed_a: p.passed_a,
            passed_b: p.passed_b,
        })
        .collect();
    let stats = pair_stats(&outcomes, alpha);
    Comparison {
        seed_a: a.seed,
        seed_b: b.seed,
        turns_a: a.turns(),
        turns_b: b.turns(),
        phrasing_a: a.phrasing,
        phrasing_b: b.phrasing,
        mean_a: stats.mean_a,
        mean_b: stats.mean_b,
        mean_diff: stats.mean_diff,
        diff_ci: stats.diff_ci,
        pairs,
        regressions: stats.regressions,
        improvements: stats.improvements,
        p_value: stats.p_value,
        unpaired,
        alpha,
        regression: stats.regression,
    }
}

pub fn render(c: &Comparison) -> String {
    let mut out = String::new();
    if c.seed_a != c.seed_b {
        let _ = writeln!(
            out,
            "warning: the runs used different seeds ({} and {}); tests with the same id hold different content",
            c.seed_a, c.seed_b
        );
    }
    if let Some(note) = turns::difference(Some(c.turns_a), Some(c.turns_b)) {
        let _ = writeln!(out, "{note}");
    }
    if c.phrasing_a == c.phrasing_b {
        let _ = writeln!(out, "phrasing: {} in both runs", c.phrasing_a);
    } else {
        let _ = writeln!(
            out,
            "note: the runs used different phrasings (A {}, B {}); tests with the same id ask the same kind of thing in other words, with other values",
            c.phrasing_a, c.phrasing_b
        );
    }
    for p in &c.pairs {
        if p.passed_a != p.passed_b || (p.score_a - p.score_b).abs() > 1e-9 {
            let _ = writeln!(
                out,
                "  {:<24} {:.2} -> {:.2}{}",
                p.id,
                p.score_a,
                p.score_b,
                match (p.passed_a, p.passed_b) {
                    (true, false) => "  REGRESSION",
                    (false, true) => "  improvement",
                    _ => "",
                }
            );
        }
    }
    let mut types: Vec<TestType> = c.pairs.iter().map(|p| p.test_type).collect();
    types.dedup();
    for t in types {
        let of_type: Vec<&Pair> = c.pairs.iter().filter(|p| p.test_type == t).collect();
        let mean_of =
            |f: fn(&Pair) -> f64| of_type.iter().map(|p| f(p)).sum::<f64>() / of_type.len() as f64;
        let (a, b) = (mean_of(|p| p.score_a), mean_of(|p| p.score_b));
        let _ = writeln!(
            out,
            "{:<18} {:.2} -> {:.2} ({} pairs){}",
            t.name(),
            a,
            b,
            of_type.len(),
            if b + 1e-9 < a { "  lower" } else { "" }
        );
    }
    let f = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.3}"));
    let _ = writeln!(
        out,
        "paired tests: {} (unpaired: {})\npassed in A only: {}   passed in B only: {}   McNemar exact p = {:.4}",
        c.pairs.len(),
        c.unpaired,
        c.regressions,
        c.improvements,
        c.p_value
    );
    let _ = writeln!(
        out,
        "mean score A = {}  B = {}  difference B-A = {} (95% CI {})",
        f(c.mean_a),
        f(c.mean_b),
        f(c.mean_diff),
        c.diff_ci
            .map_or("-".to_owned(), |(lo, hi)| format!("{lo:.3} to {hi:.3}"))
    );
    let _ = writeln!(
        out,
        "verdict: {}",
        if c.regression {
            format!("REGRESSION (alpha {})", c.alpha)
        } else {
            "no significant regression".to_owned()
        }
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::HistoryMode;
    use crate::suites::ltm::results::TestResult;

    fn run(scores: &[Option<f64>]) -> RunResults {
        RunResults {
            suite: "ltm".into(),
            seed: 1,
            trials: 1,
            span_tokens: 0,
            history: HistoryMode::New,
            api: crate::endpoint::Api::Chat,
            phrasing: Phrasing::Standard,
            overall: None,
            types: vec![],
            tests: scores
                .iter()
                .enumerate()
                .map(|(i, score)| TestResult {
                    id: format!("needle-{i:02}"),
                    test_type: TestType::Needle,
                    trial: i as u32,
                    status: match score {
                        None => TestStatus::NotApplicable,
                        Some(s) if *s >= 1.0 => TestStatus::Passed,
                        Some(_) => TestStatus::Failed,
                    },
                    reason: None,
                    failure: None,
                    score: *score,
                    checks: vec![],
                    sessions: vec![],
                    filler_tokens: 0,
                    transcript: vec![],
                })
                .collect(),
            diagnosis: vec![],
            grader: None,
        }
    }

    #[test]
    fn a_consistent_drop_is_a_regression_and_noise_is_not() {
        let good = run(&[Some(1.0); 12]);
        let bad = run(&[Some(0.0); 12]);
        let c = compare(&good, &bad, 0.05);
        assert_eq!((c.regressions, c.improvements), (12, 0));
        assert!(c.p_value < 0.001 && c.regression);
        let back = compare(&bad, &good, 0.05);
        assert!(!back.regression);
        // One flip out of twelve is not significant.
        let mut one = vec![Some(1.0); 12];
        one[3] = Some(0.0);
        let noisy = compare(&good, &run(&one), 0.05);
        assert_eq!(noisy.regressions, 1);
        assert!(!noisy.regression, "{noisy:?}");
        // Not-applicable tests are not paired.
        let mut partial = vec![Some(1.0); 12];
        partial[0] = None;
        assert_eq!(compare(&good, &run(&partial), 0.05).unpaired, 1);
    }
}
