//! One plan split across processes: shard `INDEX/COUNT` takes the units whose position `i` in
//! the full plan has `i % COUNT == INDEX` (`judge ltm --shard`, `judge membench --shard`, one
//! pod of a Kubernetes Indexed Job each), and the checks every merge of the parts makes
//! ([`read_parts`]). What a unit is and how its results merge is the suite's
//! (`crate::suites::ltm::shard`, `crate::suites::membench::shard`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{Manifest, RunDirError, RunState, read_manifest};

/// Why the parts of a sharded run do not merge; `E` is the suite's own error (writing the
/// merged run).
#[derive(Debug, thiserror::Error)]
pub enum MergeError<E> {
    #[error("give at least one part to merge (the run directories the shards wrote)")]
    NoParts,
    #[error(transparent)]
    Run(#[from] E),
    #[error(
        "{0} is not complete (state {1:?}): finish it with --resume {0} (and the command's other \
         flags) first"
    )]
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
    #[error("{0} has no result in its part: the part is damaged or was not run to the end")]
    MissingUnit(String),
}

/// What a merge needs of a suite's manifest details.
pub trait PartOf {
    /// The shard the run holds (`None`: not run with `--shard`).
    fn shard(&self) -> Option<Shard>;
    /// Whether `other` is a part of the same plan (seed, configuration).
    fn same_plan(&self, other: &Self) -> bool;
}

/// Reads the parts' manifests and checks they are the complete shards of one plan, each given
/// once and none missing; returns them in shard order (part `i` holds shard `i`).
pub fn read_parts<D, E>(parts: &[PathBuf]) -> Result<Vec<(PathBuf, Manifest<D>)>, MergeError<E>>
where
    D: DeserializeOwned + PartOf,
    E: From<RunDirError>,
{
    let first_dir = parts.first().ok_or(MergeError::NoParts)?;
    let mut read: Vec<(PathBuf, Manifest<D>, Shard)> = Vec::with_capacity(parts.len());
    for dir in parts {
        let manifest: Manifest<D> = read_manifest(dir).map_err(E::from)?;
        if manifest.state != RunState::Complete {
            return Err(MergeError::Incomplete(dir.clone(), manifest.state));
        }
        let shard = manifest
            .details
            .shard()
            .ok_or_else(|| MergeError::NotAShard(dir.clone()))?;
        read.push((dir.clone(), manifest, shard));
    }
    let (_, first, first_shard) = &read[0];
    for (dir, manifest, shard) in &read {
        if !manifest.details.same_plan(&first.details) || shard.count != first_shard.count {
            return Err(MergeError::Mismatch {
                first: first_dir.clone(),
                part: dir.clone(),
            });
        }
    }
    let count = first_shard.count;
    let mut by_index: Vec<Option<(PathBuf, Manifest<D>)>> = (0..count).map(|_| None).collect();
    for (dir, manifest, shard) in read {
        let slot = &mut by_index[shard.index as usize];
        if slot.is_some() {
            return Err(MergeError::DuplicateShard(shard));
        }
        *slot = Some((dir, manifest));
    }
    let missing: Vec<u32> = (0..count)
        .filter(|i| by_index[*i as usize].is_none())
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::MissingShards { missing, count });
    }
    Ok(by_index.into_iter().flatten().collect())
}

/// The part holding the unit at `position` of the full plan, of parts in shard order.
pub fn part_of(parts: &[(PathBuf, impl Sized)], position: usize) -> &Path {
    &parts[position % parts.len()].0
}

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
