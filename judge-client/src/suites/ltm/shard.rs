//! Splitting one LTM benchmark across processes (`judge ltm --shard INDEX/COUNT`, one pod of a
//! Kubernetes Indexed Job each) and putting the parts back together (`judge merge`).
//!
//! The plan of a run is a pure function of its configuration (test types × trials, seeded), so
//! every shard computes the same plan and takes the tests whose position `i` has
//! `i % COUNT == INDEX`. Session ids, test content and log file names depend only on the seed
//! and the position in the full plan, never on the shard, so the merged run is the run a single
//! process would have made: same `results.json`, `junit.xml` and logs.

use std::path::{Path, PathBuf};

use super::manifest::{LtmDetails, LtmManifest};
use super::results::{TestResult, TestTiming};
use super::run::{self, RunError, RunOutcome};
pub use crate::rundir::Shard;
use crate::rundir::shard::{PartOf, part_of, read_parts};

/// Why the parts do not merge (the checks every suite's merge makes, and the LTM run's own
/// errors).
pub type MergeError = crate::rundir::shard::MergeError<RunError>;

impl PartOf for LtmDetails {
    fn shard(&self) -> Option<Shard> {
        self.shard
    }

    fn same_plan(&self, other: &Self) -> bool {
        self.config_hash == other.config_hash && self.seed == other.seed
    }
}

/// Merges the part directories into a new run directory under `out_root`.
pub fn merge(parts: &[PathBuf], out_root: &Path) -> Result<RunOutcome, MergeError> {
    let parts = read_parts::<LtmDetails, RunError>(parts)?;
    let first: &LtmManifest = &parts[0].1;
    let config = first.details.config.clone();
    let specs = config.specs();
    let mut manifest = first.clone();
    manifest.details.shard = None;
    manifest.details.parts = parts.iter().map(|(_, m)| m.run_id.clone()).collect();
    manifest.created_at = parts
        .iter()
        .map(|(_, m)| m.created_at)
        .min()
        .unwrap_or(first.created_at);
    manifest.details.resumed_at = Vec::new();
    let base = format!(
        "ltm-{}-seed{}-merged",
        manifest.created_at.format("%Y%m%dT%H%M%SZ"),
        manifest.details.seed
    );
    let dir = run::create_run_dir(out_root, &base)?;
    manifest.run_id = dir
        .file_name()
        .map_or(base, |n| n.to_string_lossy().into_owned());

    let mut results = Vec::with_capacity(specs.len());
    for (position, spec) in specs.iter().enumerate() {
        let part = part_of(&parts, position);
        let result: TestResult = run::read_checkpoint(part, spec)
            .ok_or_else(|| MergeError::MissingUnit(format!("test {}", spec.id)))?;
        run::copy_test_files(part, &dir, spec, &result)?;
        results.push(result);
    }
    let timings: Vec<TestTiming> = specs
        .iter()
        .filter_map(|spec| run::read_timing(&dir, spec))
        .collect();
    Ok(run::finish(dir, manifest, results, timings, 0)?)
}
