//! `judge membench`: the field's memory benchmarks, LoCoMo and LongMemEval, through the API wall.
//!
//! - [`dataset`]: the published files read into one shape, with their quirks noted per item;
//! - [`scoring`]: the authors' answer scoring (LoCoMo token F1 per category);
//! - [`judge`]: the optional model judge (LongMemEval accuracy, LoCoMo's "J");
//! - [`bm25`]: the reference retriever and recall@k;
//! - [`ingest`], [`runner`], [`results`], [`report`]: a run from ingestion to its files;
//!   [`run`]: its run directory, checkpointed per conversation (`--resume`, `--shard`, `judge
//!   merge`);
//!
//! [`Membench`] is the suite as its runs are read back ([`Suite`]).

#[cfg(test)]
mod accounting_tests;
pub mod bm25;
pub mod dataset;
pub mod ingest;
pub mod judge;
pub mod report;
pub mod results;
pub mod run;
pub mod runner;
pub mod scoring;

use crate::suites::{Better, Figure, Headline, Setting, Suite, UnitScore, Units, WhenDifferent};
use results::Outcome;

/// The memory benchmarks' suite ([`Suite`]): judged on the overall score (LoCoMo's token F1,
/// LongMemEval's judged accuracy), compared question by question.
pub struct Membench;

impl Suite for Membench {
    const KIND: &'static str = "membench";
    const UNIT: &'static str = "question";
    type Results = results::MembenchResults;

    const HEADLINE: Option<Headline> = Some(Headline {
        label: "overall score",
        units: Units::Fraction,
    });

    fn headline(r: &Self::Results) -> Option<f64> {
        r.summary.overall.score
    }

    /// The seed is the manifest's (`config.seed`); the results do not repeat it.
    fn seed(_: &Self::Results) -> Option<u64> {
        None
    }

    fn figures(r: &Self::Results) -> Vec<Figure> {
        let overall = &r.summary.overall;
        vec![
            Figure::new("score", overall.score, Better::Higher),
            Figure::new("judge_accuracy", overall.judge_accuracy, Better::Higher),
            Figure::new(
                "latency_p50_ms",
                r.summary.speed.latency_p50_ms.map(|v| v as f64),
                Better::Lower,
            ),
        ]
    }

    /// Questions by id, grouped by category, scored by F1 (LongMemEval: the judged verdict),
    /// with LoCoMo's J beside it: a question the target failed is a 0 in its run, one the
    /// judge's side spoiled is left out of the pairing.
    fn units(r: &Self::Results) -> Vec<UnitScore> {
        r.questions
            .iter()
            .map(|q| {
                let mut unit = UnitScore::new(
                    q.id.clone(),
                    q.category.clone(),
                    q.score,
                    report::passed(r.summary.dataset, q),
                );
                match q.outcome() {
                    Outcome::Answered => {}
                    Outcome::Failed(kind) => unit.failure = Some(kind),
                    Outcome::Excluded(kind) => unit.excluded = Some(kind.as_str().to_owned()),
                }
                if r.summary.dataset == dataset::DatasetKind::Locomo {
                    unit.also = vec![("j", q.judge_score)];
                }
                unit
            })
            .collect()
    }

    /// Only runs of one dataset pair.
    fn settings(r: &Self::Results) -> Vec<Setting> {
        vec![Setting {
            name: "dataset",
            value: r.summary.dataset.name().to_owned(),
            when_different: WhenDifferent::Refuse,
        }]
    }

    fn merge(
        parts: &[std::path::PathBuf],
        out_root: &std::path::Path,
    ) -> Option<Result<std::path::PathBuf, crate::suites::suite::MergeFailure>> {
        Some(run::merge(parts, out_root).map_err(Into::into))
    }
}
