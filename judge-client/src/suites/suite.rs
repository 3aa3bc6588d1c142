//! The one contract a suite offers to everything that reads its runs: the CLI's summaries,
//! `judge serve`'s run list, its comparisons and its index. A suite names its kind (the `suite`
//! of its manifest and results), its typed `results.json`, the headline figure it is judged on,
//! and how two of its runs compare (paired units, summary figures).
//!
//! A new suite plugs in by implementing [`Suite`] on a marker type in its own module and adding
//! one arm to [`crate::suites::registry`], where readers find a suite by its kind: everything
//! else (the CLI's summaries and `judge merge`, `judge serve`'s catalog and comparisons) reads
//! the trait, so renaming a results field is a compile error wherever it is read, never a
//! silent blank.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::endpoint::FailureKind;

/// Why a suite's merge failed (its own typed error, boxed: `judge merge` serves every suite).
pub type MergeFailure = Box<dyn std::error::Error + Send + Sync>;

/// How a figure is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
}

/// The units of a headline figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Units {
    /// A share from 0 to 1 (a score, a rate).
    Fraction,
}

/// What the one figure a run is judged on is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Headline {
    /// What the figure is, for people (`overall score`).
    pub label: &'static str,
    pub units: Units,
}

/// A named summary figure of a run or of a unit, compared across runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// The results' field name (`goal_rate`, `latency_p50_ms`, ...).
    pub name: &'static str,
    pub value: Option<f64>,
    pub better: Better,
}

impl Figure {
    pub fn new(name: &'static str, value: Option<f64>, better: Better) -> Self {
        Self {
            name,
            value,
            better,
        }
    }
}

/// One unit of a run (a test, a question, a conversation, a scenario, a load level), paired by
/// `id` with the same unit of another run ([`crate::suites::compare`]).
#[derive(Debug, Clone, PartialEq)]
pub struct UnitScore {
    pub id: String,
    /// What the unit belongs to (a test type, a category, a persona, a scenario, a level).
    pub group: String,
    /// 0 to 1; a unit without a score (not applicable, not gradable) is not paired.
    pub score: Option<f64>,
    pub passed: bool,
    /// The target failed the unit (`agent_error`, `timeout`, ...): it keeps its score (0 for
    /// what it did not reach), and the class is counted.
    pub failure: Option<FailureKind>,
    /// Why the judge's own side spoiled the unit: left out of the pairing and counted.
    pub excluded: Option<String>,
    /// Other 0-to-1 scores of the unit, each paired on its own over the units that have it in
    /// both runs (membench's model-judged `j`).
    pub also: Vec<(&'static str, Option<f64>)>,
    /// Per-unit figures (load levels).
    pub figures: Vec<Figure>,
}

impl UnitScore {
    /// A unit with its score and verdict, and nothing else recorded.
    pub fn new(id: String, group: String, score: Option<f64>, passed: bool) -> Self {
        Self {
            id,
            group,
            score,
            passed,
            failure: None,
            excluded: None,
            also: Vec::new(),
            figures: Vec::new(),
        }
    }
}

/// A setting a run was made with that decides what its units mean (LTM's phrasing, membench's
/// dataset): two runs that differ on it compare with a note, or not at all.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    pub name: &'static str,
    pub value: String,
    pub when_different: WhenDifferent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenDifferent {
    /// The runs still pair; the note says what a pair then is.
    Note(&'static str),
    /// The runs do not compare.
    Refuse,
}

/// A benchmark suite, as its runs are read back.
pub trait Suite {
    /// The `suite` field of its manifests and results: `ltm`, `apps`, `sim`, `ab`, `load`.
    const KIND: &'static str;
    /// What one paired unit of a comparison is (`test`, `conversation`, ...).
    const UNIT: &'static str;
    /// `results.json`, typed.
    type Results: DeserializeOwned;

    /// What the suite is judged on; `None` when it has no single figure (a load run's figures
    /// are per level).
    const HEADLINE: Option<Headline>;

    /// The value of [`Suite::HEADLINE`] in `results` (`None` when it has none, e.g. nothing was
    /// graded).
    fn headline(results: &Self::Results) -> Option<f64>;
    /// The seed the run was made with.
    fn seed(results: &Self::Results) -> Option<u64>;
    /// The run's summary figures, side by side when two runs are compared.
    fn figures(results: &Self::Results) -> Vec<Figure>;
    /// The run's units, paired by id when two runs are compared.
    fn units(results: &Self::Results) -> Vec<UnitScore>;

    /// Whether a group's units are repeated trials of one thing (LTM's trials of a test type,
    /// sim's trials of a persona): a run whose every group scored the same in every trial is
    /// deterministic ([`crate::report::stats::NoiseFloor::Deterministic`]).
    const REPEATED_TRIALS: bool = false;

    /// Whether the run's units are a sample whose noise floor means something (not for
    /// conformance checks, nor load levels).
    const NOISE_FLOOR: bool = true;

    /// The settings that decide what the run's units mean (see [`Setting`]).
    fn settings(results: &Self::Results) -> Vec<Setting> {
        let _ = results;
        Vec::new()
    }

    /// How the run's turns were sent (API and history), for a suite that converses with the
    /// target: runs that differ on it still compare, labelled.
    fn turns(results: &Self::Results) -> Option<crate::endpoint::TurnMode> {
        let _ = results;
        None
    }

    /// `judge merge`: the parts of one run made with `--shard`, merged into a new run directory
    /// under `out_root` (returned). `None` for a suite whose runs are not sharded.
    fn merge(parts: &[PathBuf], out_root: &Path) -> Option<Result<PathBuf, MergeFailure>> {
        let _ = (parts, out_root);
        None
    }
}
