//! What every suite's command prints after its own table, through the suite's contract
//! ([`Suite`]): where the run's files are, and the `--fail-under` verdict on its headline.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use judge_client::rundir::{self, AnyManifest};
use judge_client::suites::{Suite, SuiteVisitor, compare, visit};

use super::EXIT_BELOW_THRESHOLD;

/// The run's noise floor (what it could tell apart against a run of its size), its directory
/// and its report: the last lines of every run's summary.
pub fn print_files(dir: &Path) {
    if let Some(sentence) = compare::noise_floor_in(dir) {
        println!("{sentence}");
    }
    println!("run directory: {}", dir.display());
    println!("report: {}", dir.join("report.html").display());
}

/// `--fail-under`: exit [`EXIT_BELOW_THRESHOLD`] when suite `S`'s headline figure is below
/// `threshold` (a run without one counts as 0). `None` when there is no threshold or it is met.
pub fn fail_under<S: Suite>(results: &S::Results, threshold: Option<f64>) -> Option<ExitCode> {
    let threshold = threshold?;
    let label = S::HEADLINE?.label;
    let value = S::headline(results).unwrap_or(0.0);
    (value < threshold).then(|| {
        println!("FAIL: {label} {value:.3} is below --fail-under {threshold}");
        ExitCode::from(EXIT_BELOW_THRESHOLD)
    })
}

/// Suite `S`'s headline read from a run directory's `results.json`.
struct HeadlineIn<'a>(&'a Path);

impl SuiteVisitor for HeadlineIn<'_> {
    type Output = anyhow::Result<Option<(&'static str, Option<f64>)>>;

    fn visit<S: Suite>(self) -> Self::Output {
        let Some(headline) = S::HEADLINE else {
            return Ok(None);
        };
        let results: S::Results = rundir::read_json(&self.0.join("results.json"))?;
        Ok(Some((headline.label, S::headline(&results))))
    }
}

/// A finished run of any suite, summarised through its contract: its headline, then its files.
pub fn print_run(dir: &Path) -> anyhow::Result<()> {
    let manifest: AnyManifest = rundir::read_manifest(dir)?;
    if let Some((label, value)) = visit(&manifest.suite, HeadlineIn(dir))
        .transpose()?
        .flatten()
    {
        let value = value.map_or("not measured".to_owned(), |v| format!("{v:.3}"));
        println!(
            "{} run {}: {label} {value}",
            manifest.suite, manifest.run_id
        );
    }
    print_files(dir);
    Ok(())
}

/// Suite `S`'s merge of `parts` into a run directory under `out`.
struct MergeInto<'a> {
    parts: &'a [std::path::PathBuf],
    out: &'a Path,
}

impl SuiteVisitor for MergeInto<'_> {
    type Output = Option<anyhow::Result<std::path::PathBuf>>;

    fn visit<S: Suite>(self) -> Self::Output {
        S::merge(self.parts, self.out).map(|merged| merged.map_err(|e| anyhow::anyhow!(e)))
    }
}

/// `judge merge`: the suite the first part names merges every part.
pub fn merge(parts: &[std::path::PathBuf], out: &Path) -> anyhow::Result<std::path::PathBuf> {
    let first = parts
        .first()
        .context("give at least one part to merge (the run directories the shards wrote)")?;
    let manifest: AnyManifest = rundir::read_manifest(first)?;
    visit(&manifest.suite, MergeInto { parts, out })
        .flatten()
        .with_context(|| {
            format!(
                "{} runs are not sharded, so there is nothing to merge",
                manifest.suite
            )
        })?
        .context("merging the shards")
}
