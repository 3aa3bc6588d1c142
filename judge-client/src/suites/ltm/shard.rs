//! Splitting one LTM benchmark across processes (`judge ltm --shard INDEX/COUNT`, one pod of a
//! Kubernetes Indexed Job each) and putting the parts back together (`judge merge`).
//!
//! The plan of a run is a pure function of its configuration (test types × trials, seeded), so
//! every shard computes the same plan and takes the tests whose position `i` has
//! `i % COUNT == INDEX`. Session ids, test content and log file names depend only on the seed
//! and the position in the full plan, never on the shard, so the merged run is the run a single
//! process would have made: same `results.json`, `junit.xml` and logs.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::suites::ltm::manifest::{Manifest, RunState};
use crate::suites::ltm::results::{TestResult, TestTiming};
use crate::suites::ltm::run::{self, RunError, RunOutcome};

/// Shard `index` of `count` (`0 <= index < count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// Whether the test at `position` of the full plan belongs to this shard.
    pub fn includes(&self, position: usize) -> bool {
        position % self.count as usize == self.index as usize
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let usage = || {
            format!(
                "`{s}` is not a shard: write INDEX/COUNT with 0 <= INDEX < COUNT, e.g. 0/4 (the \
                 first of four); in a Kubernetes Indexed Job: $(JOB_COMPLETION_INDEX)/4"
            )
        };
        let (index, count) = s.trim().split_once('/').ok_or_else(usage)?;
        let index: u32 = index.trim().parse().map_err(|_| usage())?;
        let count: u32 = count.trim().parse().map_err(|_| usage())?;
        if count == 0 || index >= count {
            return Err(usage());
        }
        Ok(Self { index, count })
    }
}

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
    let mut manifests: Vec<(PathBuf, Manifest, Shard)> = Vec::with_capacity(parts.len());
    for dir in parts {
        let manifest = run::read_manifest(dir)?;
        if manifest.state != RunState::Complete {
            return Err(MergeError::Incomplete(dir.clone(), manifest.state));
        }
        let shard = manifest
            .shard
            .ok_or_else(|| MergeError::NotAShard(dir.clone()))?;
        manifests.push((dir.clone(), manifest, shard));
    }
    let (_, first, first_shard) = &manifests[0];
    for (dir, manifest, shard) in &manifests {
        if manifest.config_hash != first.config_hash
            || manifest.seed != first.seed
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

    let config = first.config.clone();
    let specs = config.specs();
    let mut manifest = first.clone();
    manifest.shard = None;
    manifest.parts = manifests.iter().map(|(_, m, _)| m.run_id.clone()).collect();
    manifest.created_at = manifests
        .iter()
        .map(|(_, m, _)| m.created_at)
        .min()
        .unwrap_or(first.created_at);
    manifest.resumed_at = Vec::new();
    let base = format!(
        "ltm-{}-seed{}-merged",
        manifest.created_at.format("%Y%m%dT%H%M%SZ"),
        manifest.seed
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_index_over_count_and_explains_mistakes() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        assert_eq!(" 0 / 1 ".parse::<Shard>(), Ok(Shard { index: 0, count: 1 }));
        for bad in ["4/4", "1/0", "-1/4", "a/4", "2", "", "1/2/3"] {
            let err = bad.parse::<Shard>().unwrap_err();
            assert!(err.contains("INDEX/COUNT"), "{bad}: {err}");
        }
    }

    #[test]
    fn shards_partition_the_plan() {
        let count = 3;
        for position in 0..20 {
            let owners = (0..count)
                .filter(|&index| Shard { index, count }.includes(position))
                .count();
            assert_eq!(owners, 1, "position {position}");
        }
    }
}
