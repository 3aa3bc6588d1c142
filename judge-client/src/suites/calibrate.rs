//! The calibration ladder (`judge calibrate`): finished runs of one suite against targets whose
//! order is known by construction (no memory, facts only, episodes, ...), lowest first, read
//! back and checked: does the suite order them, and how far apart are adjacent rungs in units of
//! the noise floor?
//!
//! Each rung's figure is the mean of its run's unit scores (LTM tests, membench questions, or
//! any suite's [`Suite::units`]), with the 95 % Wilson interval of a mean of scores in [0, 1]
//! ([`bounded_mean_ci`]). Two adjacent rungs are compared unpaired: the difference of their
//! means over the noise floor, the smallest difference a two-sided test at 95 % confidence finds
//! with 80 % power given the two runs' standard errors. A separation of at least 1 means the
//! suite tells the two rungs apart at this size; below 1 it cannot, whatever the sign.
//!
//! The judge runs nothing here: `scripts/calibrate.sh` starts the targets and the runs.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Serialize;

use super::ltm::Ltm;
use super::ltm::phrasing::Phrasing;
use super::ltm::results::RunResults;
use super::membench::Membench;
use super::membench::results::MembenchResults;
use super::{Suite, SuiteVisitor, registry};
use crate::report::stats::{bounded_mean_ci, detectable_between};
use crate::rundir::manifest::{Details, RunState};
use crate::rundir::{self, RunDirError};

/// The results file every suite writes.
const RESULTS_FILE: &str = "results.json";

/// Why a ladder could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    #[error("a ladder needs at least two rungs, {0} given")]
    TooFewRungs(usize),
    #[error("`{0}` is not LABEL=RUN_DIR")]
    BadRung(String),
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    #[error("{dir}: the run is {state}, not complete")]
    Incomplete { dir: PathBuf, state: &'static str },
    #[error("{dir}: suite `{kind}` is not one the judge knows")]
    UnknownSuite { dir: PathBuf, kind: String },
    #[error("the rungs mix suites: {first} and {other} ({dir})")]
    MixedSuites {
        first: String,
        other: String,
        dir: PathBuf,
    },
    #[error("the LTM rungs mix phrasings: {first} and {other} ({dir})")]
    MixedPhrasings {
        first: Phrasing,
        other: Phrasing,
        dir: PathBuf,
    },
    #[error("--measure {measure} reads membench runs only, and {dir} is a {kind} run")]
    MeasureNotFor {
        measure: Measure,
        kind: String,
        dir: PathBuf,
    },
    #[error("{dir}: no unit has a {measure} to calibrate with")]
    NoUnits { dir: PathBuf, measure: Measure },
}

/// What a rung is scored by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Measure {
    /// Each unit's score (LTM: a test's mean check score; membench: LoCoMo's F1, LongMemEval's
    /// verdict).
    #[default]
    Score,
    /// membench only: each question's evidence recall@k of the agent's own recall endpoint.
    Recall(usize),
}

impl std::fmt::Display for Measure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Measure::Score => f.write_str("score"),
            Measure::Recall(k) => write!(f, "recall@{k}"),
        }
    }
}

impl Serialize for Measure {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl FromStr for Measure {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s == "score" {
            return Ok(Measure::Score);
        }
        s.strip_prefix("recall@")
            .and_then(|k| k.parse().ok())
            .filter(|k: &usize| *k > 0)
            .map(Measure::Recall)
            .ok_or_else(|| format!("`{s}`: expected `score` or `recall@K` (e.g. recall@8)"))
    }
}

/// One rung as given: its label and its run directory.
#[derive(Debug, Clone, PartialEq)]
pub struct RungRun {
    pub label: String,
    pub dir: PathBuf,
}

impl FromStr for RungRun {
    type Err = CalibrateError;

    fn from_str(s: &str) -> Result<Self, CalibrateError> {
        match s.split_once('=') {
            Some((label, dir)) if !label.trim().is_empty() && !dir.is_empty() => Ok(Self {
                label: label.trim().to_owned(),
                dir: PathBuf::from(dir),
            }),
            _ => Err(CalibrateError::BadRung(s.to_owned())),
        }
    }
}

/// One rung, measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rung {
    pub label: String,
    pub run_dir: PathBuf,
    /// Units with a figure (a unit that was not applicable, not gradable or spoiled by the
    /// judge's side has none and is left out).
    pub units: usize,
    /// Mean of the units' figures.
    pub mean: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// Standard error of the mean (see [`standard_error`]).
    pub standard_error: f64,
    /// The run's own headline figure, for reference (an LTM run's is the mean of its types'
    /// means; it differs from `mean` when types have different numbers of scored tests).
    pub headline: Option<f64>,
}

/// How two adjacent rungs came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepVerdict {
    /// The upper rung scores higher by at least one noise floor.
    ToldApart,
    /// The upper rung scores at least as much, by less than one noise floor.
    NotToldApart,
    /// The upper rung scores less, by less than one noise floor.
    InvertedWithinNoise,
    /// The upper rung scores less by at least one noise floor: the suite orders them wrongly.
    Inverted,
}

impl StepVerdict {
    fn of(difference: f64, separation: f64) -> Self {
        match (difference >= 0.0, separation.abs() >= 1.0) {
            (true, true) => StepVerdict::ToldApart,
            (true, false) => StepVerdict::NotToldApart,
            (false, false) => StepVerdict::InvertedWithinNoise,
            (false, true) => StepVerdict::Inverted,
        }
    }

    pub fn words(self) -> &'static str {
        match self {
            StepVerdict::ToldApart => "told apart",
            StepVerdict::NotToldApart => "not told apart",
            StepVerdict::InvertedWithinNoise => "inverted, within noise",
            StepVerdict::Inverted => "inverted",
        }
    }
}

/// From one rung to the next one up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    pub lower: String,
    pub upper: String,
    /// Upper mean minus lower mean.
    pub difference: f64,
    /// The smallest difference detectable between the two (see [`detectable_between`]).
    pub noise_floor: f64,
    /// `difference / noise_floor`.
    pub separation: f64,
    pub verdict: StepVerdict,
}

/// A whole ladder, lowest rung first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ladder {
    pub suite: String,
    pub measure: Measure,
    /// LTM: the phrasing every rung's run used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phrasing: Option<Phrasing>,
    pub rungs: Vec<Rung>,
    pub steps: Vec<Step>,
    /// Every rung scores at least as much as the one below it.
    pub ordered: bool,
    /// Steps whose separation is at least one noise floor, upward.
    pub told_apart: usize,
}

/// Standard error of the mean of `scores` (each in [0, 1]): the sample standard deviation over
/// √n. When the scores do not vary (every one equal, or only one), the sample has no spread to
/// measure, and a zero would claim a certainty a handful of units cannot give; the standard error
/// is then a proportion's with two successes and two failures added (Agresti and Coull), so 0 of
/// 20 reads as about ±0.04, not ±0.
pub(crate) fn standard_error(scores: &[f64]) -> Option<f64> {
    let n = scores.len();
    if n == 0 {
        return None;
    }
    let n_f = n as f64;
    let mean = scores.iter().sum::<f64>() / n_f;
    let variance = if n > 1 {
        scores.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n_f - 1.0)
    } else {
        0.0
    };
    if variance > 0.0 {
        return Some((variance / n_f).sqrt());
    }
    let adjusted = (mean * n_f + 2.0) / (n_f + 4.0);
    Some((adjusted * (1.0 - adjusted) / (n_f + 4.0)).sqrt())
}

/// A run read back: its suite, figures per unit and headline.
struct RunFigures {
    phrasing: Option<Phrasing>,
    figures: Vec<f64>,
    headline: Option<f64>,
}

/// Reads a run of any suite through its [`Suite`] contract (scores only).
struct ByUnits<'a> {
    dir: &'a Path,
}

impl SuiteVisitor for ByUnits<'_> {
    type Output = Result<RunFigures, CalibrateError>;

    fn visit<S: Suite>(self) -> Self::Output {
        let results: S::Results = rundir::read_json(&self.dir.join(RESULTS_FILE))?;
        Ok(RunFigures {
            phrasing: None,
            figures: S::units(&results)
                .into_iter()
                .filter_map(|u| u.score)
                .collect(),
            headline: S::headline(&results),
        })
    }
}

fn read_run(dir: &Path, kind: &str, measure: Measure) -> Result<RunFigures, CalibrateError> {
    match (kind, measure) {
        (Ltm::KIND, Measure::Score) => {
            let results: RunResults = rundir::read_json(&dir.join(RESULTS_FILE))?;
            Ok(RunFigures {
                phrasing: Some(results.phrasing),
                figures: results.tests.iter().filter_map(|t| t.score).collect(),
                headline: Ltm::headline(&results),
            })
        }
        (Membench::KIND, Measure::Recall(k)) => {
            let results: MembenchResults = rundir::read_json(&dir.join(RESULTS_FILE))?;
            let figures: Vec<f64> = results
                .questions
                .iter()
                .filter_map(|q| q.agent_recall.as_ref()?.get(&k).copied())
                .collect();
            let headline =
                (!figures.is_empty()).then(|| figures.iter().sum::<f64>() / figures.len() as f64);
            Ok(RunFigures {
                phrasing: None,
                figures,
                headline,
            })
        }
        (_, Measure::Recall(_)) => Err(CalibrateError::MeasureNotFor {
            measure,
            kind: kind.to_owned(),
            dir: dir.to_path_buf(),
        }),
        (_, Measure::Score) => {
            registry::visit(kind, ByUnits { dir }).ok_or_else(|| CalibrateError::UnknownSuite {
                dir: dir.to_path_buf(),
                kind: kind.to_owned(),
            })?
        }
    }
}

/// Reads the rungs' runs (lowest first) and measures the ladder.
pub fn ladder(rungs: &[RungRun], measure: Measure) -> Result<Ladder, CalibrateError> {
    if rungs.len() < 2 {
        return Err(CalibrateError::TooFewRungs(rungs.len()));
    }
    let mut suite: Option<String> = None;
    let mut phrasing: Option<Phrasing> = None;
    let mut measured = Vec::with_capacity(rungs.len());
    for rung in rungs {
        let dir = &rung.dir;
        let manifest = rundir::read_manifest::<Details>(dir)?;
        if manifest.state != RunState::Complete {
            return Err(CalibrateError::Incomplete {
                dir: dir.clone(),
                state: manifest.state.as_str(),
            });
        }
        match &suite {
            None => suite = Some(manifest.suite.clone()),
            Some(first) if *first != manifest.suite => {
                return Err(CalibrateError::MixedSuites {
                    first: first.clone(),
                    other: manifest.suite,
                    dir: dir.clone(),
                });
            }
            Some(_) => {}
        }
        let run = read_run(dir, &manifest.suite, measure)?;
        match (phrasing, run.phrasing) {
            (Some(first), Some(other)) if first != other => {
                return Err(CalibrateError::MixedPhrasings {
                    first,
                    other,
                    dir: dir.clone(),
                });
            }
            (None, Some(other)) => phrasing = Some(other),
            _ => {}
        }
        let (Some(standard_error), Some((ci_low, ci_high))) =
            (standard_error(&run.figures), bounded_mean_ci(&run.figures))
        else {
            return Err(CalibrateError::NoUnits {
                dir: dir.clone(),
                measure,
            });
        };
        measured.push(Rung {
            label: rung.label.clone(),
            run_dir: dir.clone(),
            units: run.figures.len(),
            mean: run.figures.iter().sum::<f64>() / run.figures.len() as f64,
            ci_low,
            ci_high,
            standard_error,
            headline: run.headline,
        });
    }
    let steps: Vec<Step> = measured
        .windows(2)
        .map(|pair| {
            let (lower, upper) = (&pair[0], &pair[1]);
            let difference = upper.mean - lower.mean;
            let floor = detectable_between(lower.standard_error, upper.standard_error);
            let separation = difference / floor;
            Step {
                lower: lower.label.clone(),
                upper: upper.label.clone(),
                difference,
                noise_floor: floor,
                separation,
                verdict: StepVerdict::of(difference, separation),
            }
        })
        .collect();
    Ok(Ladder {
        suite: suite.unwrap_or_default(),
        measure,
        phrasing,
        ordered: steps.iter().all(|s| s.difference >= 0.0),
        told_apart: steps
            .iter()
            .filter(|s| s.verdict == StepVerdict::ToldApart)
            .count(),
        rungs: measured,
        steps,
    })
}

fn pct(v: f64) -> String {
    format!("{:.1} %", v * 100.0)
}

impl Ladder {
    /// The ladder as a markdown table, with the verdict below it.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let phrasing = self
            .phrasing
            .map(|p| format!(", phrasing {p}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "Calibration ladder: {} ({}{phrasing}), lowest rung first\n",
            self.suite, self.measure
        );
        out.push_str(
            "| rung | units | mean | 95 % interval | step up | noise floor | separation | verdict |\n",
        );
        out.push_str("|---|---:|---:|---|---:|---:|---:|---|\n");
        for (i, rung) in self.rungs.iter().enumerate() {
            let step = i.checked_sub(1).map(|j| &self.steps[j]);
            let (up, floor, separation, verdict) = match step {
                Some(s) => (
                    format!("{:+.1} pts", s.difference * 100.0),
                    format!("{:.1} pts", s.noise_floor * 100.0),
                    format!("{:.2}", s.separation),
                    s.verdict.words().to_owned(),
                ),
                None => Default::default(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} to {} | {up} | {floor} | {separation} | {verdict} |",
                rung.label,
                rung.units,
                pct(rung.mean),
                pct(rung.ci_low),
                pct(rung.ci_high),
            );
        }
        let _ = writeln!(
            out,
            "\nOrdered: {} ({}). Told apart: {} of {} steps.",
            if self.ordered { "yes" } else { "no" },
            if self.ordered {
                "every rung scores at least the one below it"
            } else {
                "some rung scores below the one under it"
            },
            self.told_apart,
            self.steps.len()
        );
        let not_apart: Vec<String> = self
            .steps
            .iter()
            .filter(|s| s.verdict != StepVerdict::ToldApart)
            .map(|s| {
                let inverted = match s.verdict {
                    StepVerdict::NotToldApart | StepVerdict::ToldApart => "",
                    StepVerdict::InvertedWithinNoise | StepVerdict::Inverted => "inverted, ",
                };
                format!(
                    "{} → {} ({inverted}{:.2} noise floors)",
                    s.lower, s.upper, s.separation
                )
            })
            .collect();
        if !not_apart.is_empty() {
            let _ = writeln!(
                out,
                "Not told apart at this size: {}.",
                not_apart.join("; ")
            );
        }
        out.push_str(
            "\nmean: of the units' figures; interval: Wilson's, for a mean of scores in [0, 1]; \
             noise floor: (1.96 + 0.84) × √(se_lower² + se_upper²), the smallest difference found \
             at 95 % confidence with 80 % power; separation: step up / noise floor (≥ 1: told apart).\n",
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_error_is_the_sample_deviation_over_root_n() {
        // Scores 0 and 1, two each: sample variance 1/3, se = sqrt(1/12).
        let se = standard_error(&[0.0, 1.0, 0.0, 1.0]).unwrap();
        assert!((se - (1.0f64 / 12.0).sqrt()).abs() < 1e-12, "{se}");
        assert_eq!(standard_error(&[]), None);
    }

    #[test]
    fn scores_that_do_not_vary_keep_a_standard_error_above_zero() {
        let zeros = standard_error(&[0.0; 20]).unwrap();
        // (0 + 2) / 24 = 1/12: sqrt(1/12 · 11/12 / 24).
        assert!(
            (zeros - (11.0f64 / 144.0 / 24.0).sqrt()).abs() < 1e-12,
            "{zeros}"
        );
        let ones = standard_error(&[1.0; 20]).unwrap();
        assert!((ones - zeros).abs() < 1e-12);
        assert!(standard_error(&[0.5]).unwrap() > 0.0);
    }

    #[test]
    fn a_step_is_told_apart_from_one_noise_floor_up() {
        assert_eq!(StepVerdict::of(0.2, 1.0), StepVerdict::ToldApart);
        assert_eq!(StepVerdict::of(0.1, 0.99), StepVerdict::NotToldApart);
        assert_eq!(StepVerdict::of(0.0, 0.0), StepVerdict::NotToldApart);
        assert_eq!(
            StepVerdict::of(-0.1, -0.5),
            StepVerdict::InvertedWithinNoise
        );
        assert_eq!(StepVerdict::of(-0.3, -1.5), StepVerdict::Inverted);
    }

    #[test]
    fn measures_and_rungs_parse() {
        assert_eq!("score".parse::<Measure>(), Ok(Measure::Score));
        assert_eq!("recall@8".parse::<Measure>(), Ok(Measure::Recall(8)));
        assert!("recall@0".parse::<Measure>().is_err());
        assert!("f1".parse::<Measure>().is_err());
        let rung: RungRun = "facts only=runs/ltm-x".parse().unwrap();
        assert_eq!(rung.label, "facts only");
        assert_eq!(rung.dir, PathBuf::from("runs/ltm-x"));
        assert!("runs/ltm-x".parse::<RungRun>().is_err());
        assert!("=runs/ltm-x".parse::<RungRun>().is_err());
    }
}
