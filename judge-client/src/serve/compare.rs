//! `GET /runs/{id}/compare/{other}` for every kind of run: two runs of the same suite, paired
//! unit by unit (LTM tests, sim conversations, apps scenarios, load levels), with the same
//! statistics as `judge compare` (McNemar's exact test on pass/fail, a bootstrap interval of the
//! mean score difference) and their summary metrics side by side.
//!
//! The JSON keeps every field `judge compare` has always served for LTM runs (`seed_a`, `pairs`
//! with `test_type`, `regressions`, ...) and adds `kind`, `run_a`, `run_b`, `unit`, `metrics`,
//! and per pair `group` (and `metrics` for load levels).

use serde::Serialize;
use serde_json::Value;

use super::catalog::RunDetail;
use super::error::ApiError;
use crate::endpoint::TurnMode;
use crate::endpoint::turns;
use crate::report::stats::{PairOutcome, pair_stats};
use crate::suites::ltm::Ltm;
use crate::suites::ltm::compare as ltm;
use crate::suites::ltm::results::RunResults;
use crate::suites::sim::Ab;
use crate::suites::{Better, Figure, Suite, SuiteVisitor, UnitScore, visit};

/// One figure of both runs.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct MetricDiff {
    /// The results' field name (`goal_rate`, `latency_p50_ms`, ...).
    pub name: String,
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// `b - a`, when both are known.
    pub diff: Option<f64>,
    pub better: Better,
    /// `improved`, `regressed` or `unchanged` (B against A), when both are known.
    pub change: Option<String>,
}

impl MetricDiff {
    fn new(name: &str, a: Option<f64>, b: Option<f64>, better: Better) -> Self {
        let diff = a.zip(b).map(|(a, b)| b - a);
        let change = diff.map(|d| {
            let signed = if better == Better::Higher { d } else { -d };
            if signed.abs() < 1e-12 {
                "unchanged"
            } else if signed > 0.0 {
                "improved"
            } else {
                "regressed"
            }
            .to_owned()
        });
        Self {
            name: name.to_owned(),
            a,
            b,
            diff,
            better,
            change,
        }
    }
}

/// One unit scored in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct PairView {
    pub id: String,
    /// LTM runs only: the test type, as `judge compare` writes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub test_type: Option<Value>,
    /// What the unit belongs to: the LTM test type, the sim persona, the apps scenario, the
    /// load level.
    pub group: String,
    /// 0 to 1: LTM test score, sim conversation score, apps pass^k, load success rate.
    pub score_a: f64,
    pub score_b: f64,
    /// LTM test passed, sim goal reached, apps scenario passed every trial, load level
    /// without failed requests.
    pub passed_a: bool,
    pub passed_b: bool,
    /// Load levels only: throughput and latency of both runs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<MetricDiff>,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct RunComparison {
    /// The suite of both runs: `ltm`, `sim`, `apps` or `load`.
    pub kind: String,
    pub run_a: String,
    pub run_b: String,
    /// What a pair is: `test`, `conversation`, `scenario` or `load level`.
    pub unit: String,
    pub seed_a: Option<u64>,
    pub seed_b: Option<u64>,
    /// How each run sent its turns (API and history), for suites that converse; runs that
    /// differ on it still compare, labelled.
    pub turns_a: Option<TurnMode>,
    pub turns_b: Option<TurnMode>,
    pub pairs: Vec<PairView>,
    /// Passed in A, not in B.
    pub regressions: usize,
    /// Passed in B, not in A.
    pub improvements: usize,
    /// McNemar's exact two-sided p-value on the discordant pairs.
    pub p_value: f64,
    pub mean_a: Option<f64>,
    pub mean_b: Option<f64>,
    /// Mean of `score_b - score_a` with its 95 % bootstrap interval.
    pub mean_diff: Option<f64>,
    pub diff_ci: Option<(f64, f64)>,
    /// Units present (or scored) in only one run.
    pub unpaired: usize,
    pub alpha: f64,
    /// B is significantly worse: more regressions than improvements with p < alpha, or a mean
    /// score difference whose whole interval is below zero.
    pub regression: bool,
    /// The runs' summary figures side by side.
    pub metrics: Vec<MetricDiff>,
}

/// One run read through its suite: seed, units and figures.
struct Side {
    seed: Option<u64>,
    turns: Option<TurnMode>,
    units: Vec<UnitScore>,
    figures: Vec<Figure>,
}

fn parse<T: serde::de::DeserializeOwned>(run: &RunDetail) -> Result<T, ApiError> {
    serde_json::from_value(run.results.clone()).map_err(|e| {
        ApiError::Conflict(format!(
            "run `{}` has no usable results yet: {e}",
            run.summary.id
        ))
    })
}

/// `run`'s results typed by suite `S`, read through its [`Suite`] contract.
fn side<S: Suite>(run: &RunDetail) -> Result<Side, ApiError> {
    let results: S::Results = parse(run)?;
    Ok(Side {
        seed: S::seed(&results),
        turns: S::turns(&results),
        units: S::units(&results),
        figures: S::figures(&results),
    })
}

type SideReader = fn(&RunDetail) -> Result<Side, ApiError>;

/// A suite's [`side`] reader and the name of its unit.
struct SideOf;

impl SuiteVisitor for SideOf {
    type Output = (SideReader, &'static str);

    fn visit<S: Suite>(self) -> Self::Output {
        (side::<S>, S::UNIT)
    }
}

fn diffs(a: &[Figure], b: &[Figure]) -> Vec<MetricDiff> {
    let mut out: Vec<MetricDiff> = a
        .iter()
        .map(|fa| {
            let vb = b.iter().find(|f| f.name == fa.name).and_then(|f| f.value);
            MetricDiff::new(fa.name, fa.value, vb, fa.better)
        })
        .collect();
    for fb in b {
        if !a.iter().any(|f| f.name == fb.name) {
            out.push(MetricDiff::new(fb.name, None, fb.value, fb.better));
        }
    }
    out
}

/// The comparison of B against A; both must be of the same suite and have results.
pub fn compare(a: &RunDetail, b: &RunDetail, alpha: f64) -> Result<RunComparison, ApiError> {
    let kind = a.summary.suite.clone();
    if kind != b.summary.suite {
        return Err(ApiError::Unprocessable(format!(
            "run `{}` is a {} run and run `{}` is a {} run: only runs of the same kind compare",
            a.summary.id, a.summary.suite, b.summary.id, b.summary.suite
        )));
    }
    for run in [a, b] {
        if run.results.is_null() {
            return Err(ApiError::Conflict(format!(
                "run `{}` has no usable results yet (it is {})",
                run.summary.id, run.summary.state
            )));
        }
    }
    let readers = (kind != Ab::KIND).then(|| visit(&kind, SideOf)).flatten();
    let Some((side, unit)) = readers else {
        return Err(ApiError::Unprocessable(format!(
            "runs of kind {kind} do not compare here (an ab run is already a comparison of two targets)"
        )));
    };
    let (side_a, side_b) = (side(a)?, side(b)?);
    let metrics = diffs(&side_a.figures, &side_b.figures);
    if kind == Ltm::KIND {
        // The LTM pairing is `judge compare`'s own, so the CLI and the API always agree.
        let (ra, rb): (RunResults, RunResults) = (parse(a)?, parse(b)?);
        let c = ltm::compare(&ra, &rb, alpha);
        return Ok(RunComparison {
            kind,
            run_a: a.summary.id.clone(),
            run_b: b.summary.id.clone(),
            unit: unit.to_owned(),
            seed_a: Some(c.seed_a),
            seed_b: Some(c.seed_b),
            turns_a: side_a.turns,
            turns_b: side_b.turns,
            pairs: c
                .pairs
                .iter()
                .map(|p| PairView {
                    id: p.id.clone(),
                    test_type: serde_json::to_value(p.test_type).ok(),
                    group: p.test_type.name().to_owned(),
                    score_a: p.score_a,
                    score_b: p.score_b,
                    passed_a: p.passed_a,
                    passed_b: p.passed_b,
                    metrics: Vec::new(),
                })
                .collect(),
            regressions: c.regressions,
            improvements: c.improvements,
            p_value: c.p_value,
            mean_a: c.mean_a,
            mean_b: c.mean_b,
            mean_diff: c.mean_diff,
            diff_ci: c.diff_ci,
            unpaired: c.unpaired,
            alpha,
            regression: c.regression,
            metrics,
        });
    }
    let mut pairs = Vec::new();
    let mut unpaired = 0usize;
    for ua in &side_a.units {
        let ub = side_b.units.iter().find(|u| u.id == ua.id);
        match (ua.score, ub.and_then(|u| u.score.map(|s| (u, s)))) {
            (Some(score_a), Some((ub, score_b))) => pairs.push(PairView {
                id: ua.id.clone(),
                test_type: None,
                group: ua.group.clone(),
                score_a,
                score_b,
                passed_a: ua.passed,
                passed_b: ub.passed,
                metrics: if ua.figures.is_empty() {
                    Vec::new()
                } else {
                    diffs(&ua.figures, &ub.figures)
                },
            }),
            _ => unpaired += 1,
        }
    }
    unpaired += side_b
        .units
        .iter()
        .filter(|u| !side_a.units.iter().any(|x| x.id == u.id))
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
    Ok(RunComparison {
        kind,
        run_a: a.summary.id.clone(),
        run_b: b.summary.id.clone(),
        unit: unit.to_owned(),
        seed_a: side_a.seed,
        seed_b: side_b.seed,
        turns_a: side_a.turns,
        turns_b: side_b.turns,
        mean_a: stats.mean_a,
        mean_b: stats.mean_b,
        mean_diff: stats.mean_diff,
        regression: stats.regression,
        diff_ci: stats.diff_ci,
        pairs,
        regressions: stats.regressions,
        improvements: stats.improvements,
        p_value: stats.p_value,
        unpaired,
        alpha,
        metrics,
    })
}

/// The comparison as `judge compare` prints it for people: the pairs that changed, the paired
/// statistics, the summary figures side by side and the verdict.
pub fn render(c: &RunComparison) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} {}s paired ({} unpaired)",
        c.kind,
        c.pairs.len(),
        c.unit,
        c.unpaired
    );
    if c.seed_a != c.seed_b {
        let _ = writeln!(
            out,
            "warning: the runs used different seeds ({:?} and {:?}); units with the same id hold different content",
            c.seed_a, c.seed_b
        );
    }
    if let Some(note) = turns::difference(c.turns_a, c.turns_b) {
        let _ = writeln!(out, "{note}");
    }
    for p in &c.pairs {
        if p.passed_a != p.passed_b || (p.score_a - p.score_b).abs() > 1e-9 {
            let mark = match (p.passed_a, p.passed_b) {
                (true, false) => "  REGRESSION",
                (false, true) => "  improvement",
                _ => "",
            };
            let _ = writeln!(
                out,
                "  {:<32} {:.2} -> {:.2}{mark}",
                p.id, p.score_a, p.score_b
            );
        }
    }
    let pct = |v: Option<f64>| v.map_or("n/a".to_owned(), |v| format!("{:.1}%", v * 100.0));
    let _ = writeln!(
        out,
        "mean score {} -> {}; difference {}{}",
        pct(c.mean_a),
        pct(c.mean_b),
        c.mean_diff
            .map_or("n/a".to_owned(), |d| format!("{:+.1} points", d * 100.0)),
        c.diff_ci.map_or(String::new(), |(lo, hi)| format!(
            " (95% CI {:+.1} to {:+.1})",
            lo * 100.0,
            hi * 100.0
        ))
    );
    let _ = writeln!(
        out,
        "passed in A only: {}, in B only: {} (McNemar p = {:.3})",
        c.regressions, c.improvements, c.p_value
    );
    for m in &c.metrics {
        let value = |v: Option<f64>| v.map_or("n/a".to_owned(), |v| format!("{v:.4}"));
        let _ = writeln!(
            out,
            "  {:<28} {:>12} -> {:<12} {}",
            m.name,
            value(m.a),
            value(m.b),
            m.change.as_deref().unwrap_or("")
        );
    }
    let _ = writeln!(
        out,
        "{}",
        if c.regression {
            "verdict: B is significantly worse than A"
        } else {
            "verdict: no significant regression"
        }
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_is_better_for_latency() {
        let m = MetricDiff::new("latency_p50_ms", Some(100.0), Some(80.0), Better::Lower);
        assert_eq!(m.change.as_deref(), Some("improved"));
        assert_eq!(m.diff, Some(-20.0));
        let m = MetricDiff::new("goal_rate", Some(0.5), Some(0.25), Better::Higher);
        assert_eq!(m.change.as_deref(), Some("regressed"));
        let m = MetricDiff::new("goal_rate", None, Some(0.25), Better::Higher);
        assert_eq!((m.diff, m.change), (None, None));
    }
}
