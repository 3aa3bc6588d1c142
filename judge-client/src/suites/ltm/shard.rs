//! Splitting one LTM benchmark across processes (`judge ltm --shard INDEX/COUNT`, one pod of a
//! Kubernetes Indexed Job each) and putting the parts back together (`judge merge`).
//!
//! The plan of a run is a pure function of its configuration (test types × trials, seeded), so
//! every shard computes the same plan and takes the tests whose position `i` has
//! `i % COUNT == INDEX`. Session ids, test content and log file names depend only on the seed
//! and the position in the full plan, never on the shard, so the merged run is the run a single
//! process would have made: same `results.json`, `junit.xml` and logs.

use std::path::{Path, PathBuf};

use super::manifest::LtmManifest;
use super::results::{TestResult, TestTiming};
use super::run::{self, RunError, RunOutcome};
pub use crate::rundir::Shard;
use crate::rundir::{self, RunState};

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("give at least one part to merge (the run directories the shards wrote)")]
    NoParts,
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("{0} is not complete (state {1:?}): finish it with `judge ltm --resume {0}` first")]
    Incomplete(PathBuf, RunState),
    #[error("{0} was not run with --shard; only the parts of one sharded run can be merged")]
    NotAShard(PathBuf),
    #[error(
        "{part} belongs to another benchmark than {first}: seed, configuration or shard count \
         differ (every shard must run with the same flags)"
    )]
    Mismatch { first: PathBuf, part: PathBuf },
    #[error("shard {0} is given twice")]
    DuplicateShard(Shard),
    #[error("shard(s) {missing:?} of {count} are missing; give every part")]
    MissingShards { missing: Vec<u32>, count: u32 },
    #[error("test {0} has no result in its part: the part is damaged or was not run to the end")]
    MissingTest(String),
}

/// Merges the part directories into a new run directory under `out_root`.
pub fn merge(parts: &[PathBuf], out_root: &Path) -> Result<RunOutcome, MergeError> {
    let first_dir = parts.first().ok_or(MergeError::NoParts)?;
    let mut manifests: Vec<(PathBuf, LtmManifest, Shard)> = Vec::with_capacity(parts.len());
    for dir in parts {
        let manifest: LtmManifest = rundir::read_manifest(dir).map_err(RunError::from)?;
        if manifest.state != RunState::Complete {
            return Err(MergeError::Incomplete(dir.clone(), manifest.state));
        }
        let shard = manifest
            .details
            .shard
            .ok_or_else(|| MergeError::NotAShard(dir.clone()))?;
        manifests.push((dir.clone(), manifest, shard));
    }
    let (_, first, first_shard) = &manifests[0];
    for (dir, manifest, shard) in &manifests {
        if manifest.details.config_hash != first.details.config_hash
            || manifest.details.seed != first.details.seed
            || shard.count != first_shard.count
        {
            return Err(MergeError::Mismatch {
                first: first_dir.clone(),
                part: dir.clone(),
            });
        }
    }
    let count = first_shard.count;
    let mut by_index: Vec<Option<&Path>> = vec![None; count as usize];
    for (dir, _, shard) in &manifests {
        let slot = &mut by_index[shard.index as usize];
        if slot.is_some() {
            return Err(MergeError::DuplicateShard(*shard));
        }
        *slot = Some(dir);
    }
    let missing: Vec<u32> = (0..count)
        .filter(|i| by_index[*i as usize].is_none())
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::MissingShards { missing, count });
    }

    let config = first.details.config.clone();
    let specs = config.specs();
    let mut manifest = first.clone();
    manifest.details.shard = None;
    manifest.details.parts = manifests.iter().map(|(_, m, _)| m.run_id.clone()).collect();
    manifest.created_at = manifests
        .iter()
        .map(|(_, m, _)| m.created_at)
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

    let shard_of = |position: usize| Shard {
        index: (position % count as usize) as u32,
        count,
    };
    let mut results = Vec::with_capacity(specs.len());
    for (position, spec) in specs.iter().enumerate() {
        let part = by_index[shard_of(position).index as usize].unwrap_or(first_dir);
        let result: TestResult = run::read_checkpoint(part, spec)
            .ok_or_else(|| MergeError::MissingTest(spec.id.clone()))?;
        run::copy_test_files(part, &dir, spec, &result)?;
        results.push(result);
    }
    let timings: Vec<TestTiming> = specs
        .iter()
        .filter_map(|spec| run::read_timing(&dir, spec))
        .collect();
    Ok(run::finish(dir, manifest, results, timings, 0)?)
}
