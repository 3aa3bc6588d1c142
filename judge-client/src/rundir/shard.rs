//! One plan split across processes: shard `INDEX/COUNT` takes the units whose position `i` in
//! the full plan has `i % COUNT == INDEX` (`judge ltm --shard`, one pod of a Kubernetes Indexed
//! Job each). What a unit is and how parts merge is the suite's (`crate::suites::ltm::shard`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

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
