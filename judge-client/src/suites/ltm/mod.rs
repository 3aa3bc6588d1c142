//! The long-term-memory suite: seeded generators, deterministic scorers, the runner, and its run
//! directory from start (or resume) to its final files, sharded or not.
//!
//! - [`types`], [`generators`], [`filler`], [`vocab`], [`script`]: the seeded test plan, in
//!   the [`phrasing`] the run asked for;
//! - [`runner`] plays one test, [`scoring`] scores its replies;
//! - [`run`] takes a run directory from start (or `--resume`) to its final files, [`shard`]
//!   splits the plan across processes and merges the parts (`judge merge`);
//! - [`config`], [`manifest`], [`results`], [`summary`]: what a run is asked and what it writes;
//!   [`html`], [`junit`], [`logs`] render it.

pub mod config;
pub mod filler;
pub mod generators;
pub mod grader;
pub mod html;
pub mod junit;
pub mod logs;
pub mod manifest;
pub mod phrasing;
pub mod results;
pub mod run;
pub mod runner;
pub mod scoring;
pub mod script;
pub mod shard;
pub mod summary;
pub mod types;
pub mod vocab;

pub use config::LtmConfig;
pub use phrasing::Phrasing;
pub use script::{GenParams, Step, TestSpec};
pub use types::{TestType, generate_all};

use crate::endpoint::FailureKind;
use crate::suites::{Figure, Headline, Setting, Suite, UnitScore, Units, WhenDifferent};
use results::TestStatus;

/// The long-term-memory suite ([`Suite`]): judged on the overall score, compared test by test.
pub struct Ltm;

impl Suite for Ltm {
    const KIND: &'static str = "ltm";
    const UNIT: &'static str = "test";
    type Results = results::RunResults;

    const HEADLINE: Option<Headline> = Some(Headline {
        label: "overall score",
        units: Units::Fraction,
    });

    fn headline(r: &Self::Results) -> Option<f64> {
        r.overall
    }

    fn seed(r: &Self::Results) -> Option<u64> {
        Some(r.seed)
    }

    fn figures(r: &Self::Results) -> Vec<Figure> {
        let mut figures = vec![Figure::new(
            "overall",
            r.overall,
            crate::suites::Better::Higher,
        )];
        // Each test type's mean score, named by the type.
        for t in &r.types {
            figures.push(Figure::new(
                t.test_type.name(),
                t.mean,
                crate::suites::Better::Higher,
            ));
        }
        figures
    }

    /// Trials of one test type are repeated trials.
    const REPEATED_TRIALS: bool = true;

    /// Tests by id, grouped by test type: a test the judge's side spoiled (`error`) is left
    /// out of the pairing; one the target failed keeps the score of what it reached.
    fn units(r: &Self::Results) -> Vec<UnitScore> {
        r.tests
            .iter()
            .map(|t| {
                let mut unit = UnitScore::new(
                    t.id.clone(),
                    t.test_type.name().to_owned(),
                    t.score,
                    t.status == TestStatus::Passed,
                );
                if t.status == TestStatus::Error {
                    unit.excluded = Some(FailureKind::JudgeError.as_str().to_owned());
                } else {
                    unit.failure = t
                        .failure
                        .as_ref()
                        .map(|f| f.kind)
                        .filter(|k| *k != FailureKind::JudgeError);
                }
                unit
            })
            .collect()
    }

    /// Runs of different phrasings still pair by test id.
    fn settings(r: &Self::Results) -> Vec<Setting> {
        vec![Setting {
            name: "phrasing",
            value: r.phrasing.to_string(),
            when_different: WhenDifferent::Note(
                "tests with the same id ask the same kind of thing in other words, with other values",
            ),
        }]
    }

    fn turns(r: &Self::Results) -> Option<crate::endpoint::TurnMode> {
        Some(r.turns())
    }

    fn merge(
        parts: &[std::path::PathBuf],
        out_root: &std::path::Path,
    ) -> Option<Result<std::path::PathBuf, crate::suites::suite::MergeFailure>> {
        Some(
            shard::merge(parts, out_root)
                .map(|outcome| outcome.dir)
                .map_err(Into::into),
        )
    }
}
