//! The one comparison of two runs of a suite, served by `judge compare`, `judge serve`'s
//! `GET /runs/{id}/compare/{other}` and the `--baseline` gate. Both runs are read through their
//! [`Suite`]: units are paired by id, and what is special about a suite is data of its units
//! (the group a unit belongs to, a target failure, an exclusion, other scores such as LoCoMo's
//! J) and of its settings (LTM's phrasing, membench's dataset).
//!
//! Pairing follows docs/judge.md ("How failures are counted"): a unit the target failed keeps
//! its score (0 for what it did not reach) and its class is counted; a unit the judge's side
//! spoiled in either run is left out of the pairing and counted in `excluded`; a unit scored in
//! only one run (not applicable, absent) is `unpaired`. The statistics are
//! [`crate::report::stats::pair_stats`]; the verdict is `regression`, `improvement` or "no
//! difference detectable at this size" with the number of units that would detect the
//! difference seen.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::{Better, Figure, Suite, SuiteVisitor, UnitScore, WhenDifferent, visit};
use crate::endpoint::TurnMode;
use crate::endpoint::turns;
use crate::report::stats::{Direction, NoiseFloor, PairOutcome, mean, noise_floor, pair_stats};

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(
        "run `{a}` is a {kind_a} run and run `{b}` is a {kind_b} run: only runs of the same kind compare"
    )]
    Kinds {
        a: String,
        kind_a: String,
        b: String,
        kind_b: String,
    },
    #[error("runs of kind {0} do not compare (an ab run is already a comparison of two targets)")]
    NotComparable(String),
    #[error("run `{run}` has no usable results yet: {why}")]
    NoResults { run: String, why: String },
    #[error("run A's {name} is {a} and run B's is {b}: only runs of one {name} compare")]
    Setting {
        name: &'static str,
        a: String,
        b: String,
    },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not JSON: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
}

impl CompareError {
    /// Whether the runs themselves do not go together (as opposed to one lacking results).
    pub fn runs_do_not_match(&self) -> bool {
        matches!(
            self,
            Self::Kinds { .. } | Self::NotComparable(_) | Self::Setting { .. }
        )
    }
}

/// One run as the comparison reads it: its id, its suite's kind and its `results.json`.
#[derive(Debug, Clone, Copy)]
pub struct RunRef<'a> {
    pub id: &'a str,
    pub kind: &'a str,
    pub results: &'a Value,
}

/// A run read from its directory (or from its `results.json`, given as a file).
#[derive(Debug, Clone)]
pub struct LoadedRun {
    pub id: String,
    pub kind: String,
    pub results: Value,
}

impl LoadedRun {
    pub fn as_ref(&self) -> RunRef<'_> {
        RunRef {
            id: &self.id,
            kind: &self.kind,
            results: &self.results,
        }
    }
}

fn read_json(path: &Path) -> Result<Value, CompareError> {
    let text = std::fs::read_to_string(path).map_err(|source| CompareError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| CompareError::Json {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads a run: its kind is its manifest's `suite`, or the results' own `suite` field.
pub fn load(path: &Path) -> Result<LoadedRun, CompareError> {
    let (dir, file) = if path.is_dir() {
        (path.to_path_buf(), path.join("results.json"))
    } else {
        let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        (dir, path.to_path_buf())
    };
    let results = read_json(&file)?;
    let kind = read_json(&dir.join("manifest.json"))
        .ok()
        .and_then(|m| m.get("suite").and_then(Value::as_str).map(str::to_owned))
        .or_else(|| {
            results
                .get("suite")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_default();
    let id = dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    Ok(LoadedRun { id, kind, results })
}

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

/// Another score of a pair (membench's `j`), as each run gave it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct AlsoPair {
    pub name: String,
    pub a: Option<f64>,
    pub b: Option<f64>,
}

/// One unit scored in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct PairView {
    pub id: String,
    /// What the unit belongs to: the LTM test type, the membench category, the sim persona,
    /// the apps scenario, the load level.
    pub group: String,
    /// 0 to 1: LTM test score, membench F1 (LongMemEval: judged), sim conversation score, apps
    /// pass^k, load success rate.
    pub score_a: f64,
    pub score_b: f64,
    pub passed_a: bool,
    pub passed_b: bool,
    /// The target's failure class in each run, when it failed the unit (scored as reached).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_a: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_b: Option<String>,
    /// Other scores of the unit (membench: `j`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<AlsoPair>,
    /// Load levels only: throughput and latency of both runs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<MetricDiff>,
}

/// The pairs of one group (an LTM test type, a membench category).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct GroupDiff {
    pub group: String,
    pub pairs: usize,
    pub mean_a: Option<f64>,
    pub mean_b: Option<f64>,
}

/// Another score (membench's `j`) paired over the units that have it in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ScoreDiff {
    pub name: String,
    pub pairs: usize,
    pub mean_a: Option<f64>,
    pub mean_b: Option<f64>,
    pub mean_diff: Option<f64>,
    pub diff_ci: Option<(f64, f64)>,
    pub direction: Direction,
}

/// A setting of both runs (LTM's phrasing, membench's dataset).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct SettingPair {
    pub name: String,
    pub a: String,
    pub b: String,
    /// What a pair is when they differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Two runs of one suite, B against A.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Comparison {
    /// The suite of both runs: `ltm`, `membench`, `sim`, `apps`, `load` or `conform`.
    pub kind: String,
    pub run_a: String,
    pub run_b: String,
    /// What a pair is: `test`, `question`, `conversation`, `scenario`, `load level`, `check`.
    pub unit: String,
    pub seed_a: Option<u64>,
    pub seed_b: Option<u64>,
    /// How each run sent its turns (API and history), for suites that converse; runs that
    /// differ on it still compare, labelled.
    pub turns_a: Option<TurnMode>,
    pub turns_b: Option<TurnMode>,
    pub settings: Vec<SettingPair>,
    pub pairs: Vec<PairView>,
    /// Per group, in the order the groups first appear.
    pub groups: Vec<GroupDiff>,
    /// Units present (or scored) in only one run.
    pub unpaired: usize,
    /// Units the judge's own side spoiled in either run: not paired.
    pub excluded: usize,
    /// Target failures among the pairs, by class, in each run (scored as reached).
    pub failed_a: BTreeMap<String, usize>,
    pub failed_b: BTreeMap<String, usize>,
    /// Passed in A, not in B.
    pub regressions: usize,
    /// Passed in B, not in A.
    pub improvements: usize,
    /// McNemar's exact two-sided p-value on the discordant pass/fail pairs.
    pub p_value: f64,
    /// Pairs scoring lower in B, and higher.
    pub lower: usize,
    pub higher: usize,
    /// The exact two-sided sign test on the score differences.
    pub sign_p: f64,
    pub mean_a: Option<f64>,
    pub mean_b: Option<f64>,
    /// Mean of `score_b - score_a`, with its 95 % interval (Agresti-Min adjusted).
    pub mean_diff: Option<f64>,
    pub diff_ci: Option<(f64, f64)>,
    /// Other scores, paired on their own (membench: `j`).
    pub also: Vec<ScoreDiff>,
    pub alpha: f64,
    /// `regression`, `improvement` or `no_difference`.
    pub direction: Direction,
    /// `direction` is `regression`: `judge compare` and `--baseline` exit 3.
    pub regression: bool,
    /// The smallest mean difference these pairs could detect (95 % confidence, 80 % power).
    pub mde: Option<f64>,
    /// Paired units that would detect the difference seen, when none was detectable.
    pub units_to_detect: Option<usize>,
    /// What each run alone could tell apart against a run of its size.
    #[schema(value_type = Option<Object>)]
    pub noise_a: Option<NoiseFloor>,
    #[schema(value_type = Option<Object>)]
    pub noise_b: Option<NoiseFloor>,
    /// The verdict in a sentence: "regression: ...", "improvement: ..." or "no difference
    /// detectable at this size; about N tests would detect D points".
    pub verdict: String,
    /// The runs' summary figures side by side.
    pub metrics: Vec<MetricDiff>,
}

/// One run read through its suite.
struct Side {
    seed: Option<u64>,
    turns: Option<TurnMode>,
    units: Vec<UnitScore>,
    figures: Vec<Figure>,
    settings: Vec<super::Setting>,
    noise: Option<NoiseFloor>,
}

fn side<S: Suite>(run: RunRef<'_>) -> Result<Side, CompareError> {
    let results: S::Results =
        serde_json::from_value(run.results.clone()).map_err(|e| CompareError::NoResults {
            run: run.id.to_owned(),
            why: e.to_string(),
        })?;
    Ok(Side {
        seed: S::seed(&results),
        turns: S::turns(&results),
        units: S::units(&results),
        figures: S::figures(&results),
        settings: S::settings(&results),
        noise: run_noise_floor::<S>(&results),
    })
}

type SideReader = for<'a> fn(RunRef<'a>) -> Result<Side, CompareError>;

struct SideOf;

impl SuiteVisitor for SideOf {
    type Output = Option<(SideReader, &'static str)>;

    fn visit<S: Suite>(self) -> Self::Output {
        // An A/B run has no units of its own: it is already a comparison.
        (S::KIND != super::sim::Ab::KIND).then_some((side::<S> as SideReader, S::UNIT))
    }
}

/// The noise floor of a run of suite `S` (see [`NoiseFloor`]), from its scored units:
/// deterministic when the suite's groups are repeated trials and every group with at least two
/// of them scored the same in each.
pub fn run_noise_floor<S: Suite>(results: &S::Results) -> Option<NoiseFloor> {
    if !S::NOISE_FLOOR {
        return None;
    }
    let units: Vec<UnitScore> = S::units(results)
        .into_iter()
        .filter(|u| u.excluded.is_none() && u.score.is_some())
        .collect();
    let scores: Vec<f64> = units.iter().filter_map(|u| u.score).collect();
    let mut groups: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for u in &units {
        groups.entry(&u.group).or_default().extend(u.score);
    }
    let deterministic = S::REPEATED_TRIALS
        && groups.values().any(|g| g.len() > 1)
        && groups
            .values()
            .all(|g| g.iter().all(|s| (s - g[0]).abs() < 1e-12));
    noise_floor(&scores, deterministic)
}

/// The noise floor of a run of kind `kind` read from its results, with its unit's name (`None`
/// for a suite without one, or results that do not parse).
pub fn noise_floor_of(kind: &str, results: &Value) -> Option<(NoiseFloor, &'static str)> {
    struct Floor<'a>(&'a Value);
    impl SuiteVisitor for Floor<'_> {
        type Output = Option<(NoiseFloor, &'static str)>;
        fn visit<S: Suite>(self) -> Self::Output {
            let results = serde_json::from_value(self.0.clone()).ok()?;
            Some((run_noise_floor::<S>(&results)?, S::UNIT))
        }
    }
    visit(kind, Floor(results)).flatten()
}

/// The noise-floor sentence of the run in `dir`, as its summary prints it.
pub fn noise_floor_in(dir: &Path) -> Option<String> {
    let run = load(dir).ok()?;
    let (floor, unit) = noise_floor_of(&run.kind, &run.results)?;
    Some(floor.sentence(unit))
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

/// Run B against run A; both must be of the same suite and have results.
pub fn compare(a: RunRef<'_>, b: RunRef<'_>, alpha: f64) -> Result<Comparison, CompareError> {
    if a.kind != b.kind {
        return Err(CompareError::Kinds {
            a: a.id.to_owned(),
            kind_a: a.kind.to_owned(),
            b: b.id.to_owned(),
            kind_b: b.kind.to_owned(),
        });
    }
    for run in [a, b] {
        if run.results.is_null() {
            return Err(CompareError::NoResults {
                run: run.id.to_owned(),
                why: "it has no results.json".to_owned(),
            });
        }
    }
    let (reader, unit) = visit(a.kind, SideOf)
        .flatten()
        .ok_or_else(|| CompareError::NotComparable(a.kind.to_owned()))?;
    let (side_a, side_b) = (reader(a)?, reader(b)?);
    let mut settings = Vec::new();
    for sa in &side_a.settings {
        let Some(sb) = side_b.settings.iter().find(|s| s.name == sa.name) else {
            continue;
        };
        let note = match (sa.value == sb.value, sa.when_different) {
            (true, _) => None,
            (false, WhenDifferent::Refuse) => {
                return Err(CompareError::Setting {
                    name: sa.name,
                    a: sa.value.clone(),
                    b: sb.value.clone(),
                });
            }
            (false, WhenDifferent::Note(note)) => Some(note.to_owned()),
        };
        settings.push(SettingPair {
            name: sa.name.to_owned(),
            a: sa.value.clone(),
            b: sb.value.clone(),
            note,
        });
    }

    let by_id_b: BTreeMap<&str, &UnitScore> = side_b
        .units
        .iter()
        .rev()
        .map(|u| (u.id.as_str(), u))
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    let (mut pairs, mut unpaired, mut excluded) = (Vec::new(), 0usize, 0usize);
    let (mut failed_a, mut failed_b) = (BTreeMap::new(), BTreeMap::new());
    for ua in &side_a.units {
        if !seen.insert(ua.id.as_str()) {
            continue;
        }
        let Some(ub) = by_id_b.get(ua.id.as_str()) else {
            unpaired += 1;
            continue;
        };
        if ua.excluded.is_some() || ub.excluded.is_some() {
            excluded += 1;
            continue;
        }
        let (Some(score_a), Some(score_b)) = (ua.score, ub.score) else {
            unpaired += 1;
            continue;
        };
        for (unit, counts) in [(ua, &mut failed_a), (ub, &mut failed_b)] {
            if let Some(kind) = unit.failure {
                *counts.entry(kind.as_str().to_owned()).or_insert(0) += 1;
            }
        }
        pairs.push(PairView {
            id: ua.id.clone(),
            group: ua.group.clone(),
            score_a,
            score_b,
            passed_a: ua.passed,
            passed_b: ub.passed,
            failure_a: ua.failure.map(|k| k.as_str().to_owned()),
            failure_b: ub.failure.map(|k| k.as_str().to_owned()),
            also: ua
                .also
                .iter()
                .map(|(name, va)| AlsoPair {
                    name: (*name).to_owned(),
                    a: *va,
                    b: ub
                        .also
                        .iter()
                        .find(|(n, _)| n == name)
                        .and_then(|(_, v)| *v),
                })
                .collect(),
            metrics: if ua.figures.is_empty() {
                Vec::new()
            } else {
                diffs(&ua.figures, &ub.figures)
            },
        });
    }
    unpaired += side_b
        .units
        .iter()
        .filter(|u| !seen.contains(u.id.as_str()))
        .map(|u| u.id.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len();

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

    let mut groups: Vec<GroupDiff> = Vec::new();
    for p in &pairs {
        if groups.iter().any(|g| g.group == p.group) {
            continue;
        }
        let of: Vec<&PairView> = pairs.iter().filter(|q| q.group == p.group).collect();
        groups.push(GroupDiff {
            group: p.group.clone(),
            pairs: of.len(),
            mean_a: mean(&of.iter().map(|q| q.score_a).collect::<Vec<_>>()),
            mean_b: mean(&of.iter().map(|q| q.score_b).collect::<Vec<_>>()),
        });
    }
    let mut names: Vec<&str> = pairs
        .iter()
        .flat_map(|p| p.also.iter().map(|x| x.name.as_str()))
        .collect();
    names.dedup();
    let also = names
        .iter()
        .map(|name| {
            let both: Vec<PairOutcome> = pairs
                .iter()
                .filter_map(|p| p.also.iter().find(|x| x.name == *name))
                .filter_map(|x| Some((x.a?, x.b?)))
                .map(|(a, b)| PairOutcome {
                    score_a: a,
                    score_b: b,
                    passed_a: a >= 1.0,
                    passed_b: b >= 1.0,
                })
                .collect();
            let s = pair_stats(&both, alpha);
            ScoreDiff {
                name: (*name).to_owned(),
                pairs: both.len(),
                mean_a: s.mean_a,
                mean_b: s.mean_b,
                mean_diff: s.mean_diff,
                diff_ci: s.diff_ci,
                direction: s.direction,
            }
        })
        .collect();

    let units_to_detect = (stats.direction == Direction::NoDifference)
        .then(|| stats.trials_to_detect())
        .flatten();
    let verdict = verdict(unit, &stats, units_to_detect, side_a.noise, side_b.noise);
    Ok(Comparison {
        kind: a.kind.to_owned(),
        run_a: a.id.to_owned(),
        run_b: b.id.to_owned(),
        unit: unit.to_owned(),
        seed_a: side_a.seed,
        seed_b: side_b.seed,
        turns_a: side_a.turns,
        turns_b: side_b.turns,
        settings,
        groups,
        unpaired,
        excluded,
        failed_a,
        failed_b,
        regressions: stats.regressions,
        improvements: stats.improvements,
        p_value: stats.p_value,
        lower: stats.lower,
        higher: stats.higher,
        sign_p: stats.sign_p,
        mean_a: stats.mean_a,
        mean_b: stats.mean_b,
        mean_diff: stats.mean_diff,
        diff_ci: stats.diff_ci,
        also,
        alpha,
        direction: stats.direction,
        regression: stats.direction == Direction::Regression,
        mde: stats.mde(),
        units_to_detect,
        noise_a: side_a.noise,
        noise_b: side_b.noise,
        verdict,
        metrics: diffs(&side_a.figures, &side_b.figures),
        pairs,
    })
}

fn points(v: f64) -> String {
    format!("{:.1} points", v.abs() * 100.0)
}

fn verdict(
    unit: &str,
    stats: &crate::report::stats::PairStats,
    units_to_detect: Option<usize>,
    noise_a: Option<NoiseFloor>,
    noise_b: Option<NoiseFloor>,
) -> String {
    let Some(diff) = stats.mean_diff else {
        return format!("nothing to compare: no {unit} was scored in both runs");
    };
    let tests = format!(
        "passed in A only {}, in B only {}, McNemar exact p = {:.4}; scored lower {}, higher {}, sign test p = {:.4}",
        stats.regressions,
        stats.improvements,
        stats.p_value,
        stats.lower,
        stats.higher,
        stats.sign_p
    );
    match stats.direction {
        Direction::Regression => {
            format!("regression: B scores {} below A ({tests})", points(diff))
        }
        Direction::Improvement => {
            format!("improvement: B scores {} above A ({tests})", points(diff))
        }
        Direction::NoDifference => {
            let deterministic =
                |n: Option<NoiseFloor>| matches!(n, Some(NoiseFloor::Deterministic { .. }));
            match units_to_detect {
                Some(n) => format!(
                    "no difference detectable at this size; about {n} {unit}s would detect {}",
                    points(diff)
                ),
                None if deterministic(noise_a) && deterministic(noise_b) => format!(
                    "no difference: both runs are deterministic and every paired {unit} scored the same"
                ),
                None => format!(
                    "no difference detectable at this size; every paired {unit} scored the same, and {} {unit}s could detect {} or more",
                    stats.pairs,
                    points(stats.mde().unwrap_or(1.0))
                ),
            }
        }
    }
}

/// The comparison as `judge compare` prints it: settings and notes, the pairs that changed, the
/// groups, the paired statistics, the summary figures side by side and the verdict.
pub fn render(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} {}s paired ({} unpaired)",
        c.kind,
        c.pairs.len(),
        c.unit,
        c.unpaired
    );
    if c.excluded > 0 {
        let _ = writeln!(
            out,
            "excluded: {} {}s the judge's own side spoiled in either run (not paired)",
            c.excluded, c.unit
        );
    }
    if c.seed_a != c.seed_b {
        let _ = writeln!(
            out,
            "warning: the runs used different seeds ({} and {}); units with the same id hold different content",
            c.seed_a.map_or("-".to_owned(), |s| s.to_string()),
            c.seed_b.map_or("-".to_owned(), |s| s.to_string()),
        );
    }
    if let Some(note) = turns::difference(c.turns_a, c.turns_b) {
        let _ = writeln!(out, "{note}");
    }
    for s in &c.settings {
        match &s.note {
            None => {
                let _ = writeln!(out, "{}: {} in both runs", s.name, s.a);
            }
            Some(note) => {
                let _ = writeln!(
                    out,
                    "note: the runs differ in {} (A {}, B {}); {note}",
                    s.name, s.a, s.b
                );
            }
        }
    }
    for (side, failed) in [("A", &c.failed_a), ("B", &c.failed_b)] {
        if !failed.is_empty() {
            let classes: Vec<String> = failed.iter().map(|(k, n)| format!("{k} {n}")).collect();
            let _ = writeln!(
                out,
                "target failures in {side} among the pairs (scored as reached): {}",
                classes.join(", ")
            );
        }
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
    if c.groups.len() > 1 || c.groups.iter().any(|g| g.pairs > 1) {
        for g in &c.groups {
            let lower = matches!((g.mean_a, g.mean_b), (Some(a), Some(b)) if b + 1e-9 < a);
            let _ = writeln!(
                out,
                "  {:<28} {:>5} pairs  A {:>6}  B {:>6}{}",
                g.group,
                g.pairs,
                pct(g.mean_a),
                pct(g.mean_b),
                if lower { "  lower" } else { "" }
            );
        }
    }
    let interval = |ci: Option<(f64, f64)>| {
        ci.map_or(String::new(), |(lo, hi)| {
            format!(" (95% CI {:+.1} to {:+.1})", lo * 100.0, hi * 100.0)
        })
    };
    let signed =
        |d: Option<f64>| d.map_or("n/a".to_owned(), |d| format!("{:+.1} points", d * 100.0));
    let _ = writeln!(
        out,
        "mean score A {} B {}; difference B-A {}{}",
        pct(c.mean_a),
        pct(c.mean_b),
        signed(c.mean_diff),
        interval(c.diff_ci)
    );
    let _ = writeln!(
        out,
        "passed in A only: {}   passed in B only: {}   McNemar exact p = {:.4}   sign test p = {:.4}",
        c.regressions, c.improvements, c.p_value, c.sign_p
    );
    for s in &c.also {
        let _ = writeln!(
            out,
            "{} over {} pairs: A {} B {}; difference {}{}",
            s.name,
            s.pairs,
            pct(s.mean_a),
            pct(s.mean_b),
            signed(s.mean_diff),
            interval(s.diff_ci)
        );
    }
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
    for (side, noise) in [("A", c.noise_a), ("B", c.noise_b)] {
        if let Some(noise) = noise {
            let _ = writeln!(out, "run {side}: {}", noise.sentence(&c.unit));
        }
    }
    let _ = writeln!(
        out,
        "verdict: {}{}",
        if c.regression { "REGRESSION: " } else { "" },
        c.verdict.strip_prefix("regression: ").unwrap_or(&c.verdict)
    );
    out
}

#[cfg(test)]
mod tests;
