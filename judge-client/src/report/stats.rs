//! Small statistics: means, intervals, exact tests and noise floors. Hand-written (a few lines
//! each) rather than pulling in a statistics crate with a linear algebra stack; all of it is
//! deterministic, so reports stay reproducible. docs/judge.md ("Intervals, verdicts and noise
//! floors") says which method serves which figure and why.
//!
//! - a pass rate: [`wilson`]; a mean of scores in [0, 1]: [`bounded_mean_ci`] (Wilson of the
//!   mean). Neither has zero width at a handful of trials, as a bootstrap over equal scores has.
//! - two runs paired unit by unit: [`pair_stats`]: McNemar's exact test on pass/fail, the exact
//!   sign test on the scores, and [`paired_diff_ci`] for the size of the difference.
//! - what a run can tell apart: [`noise_floor`] (against another run of its size) and
//!   [`PairStats::trials_to_detect`] (how many paired units a difference needs).

use serde::{Deserialize, Serialize};

pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Wilson score interval (95 %) of a proportion `k / n`.
pub fn wilson(k: usize, n: usize) -> Option<(f64, f64)> {
    wilson_of(k as f64, n)
}

/// 95 % interval of the mean of scores in [0, 1] that stays honest at a handful of trials: the
/// Wilson interval with the scores' sum as the count of successes. A score bounded by 0 and 1
/// with mean p varies at most as much as a pass/fail one (variance at most p(1 − p)), so this is
/// the pass/fail case's interval or wider. A bootstrap has zero width whenever every trial scored
/// the same (three passes of three: 100-100 %), where three passes are consistent with a true
/// rate as low as 44 %.
pub fn bounded_mean_ci(scores: &[f64]) -> Option<(f64, f64)> {
    debug_assert!(scores.iter().all(|s| (0.0..=1.0).contains(s)), "{scores:?}");
    wilson_of(scores.iter().sum(), scores.len())
}

fn wilson_of(successes: f64, n: usize) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    let z = 1.959_964f64;
    let n_f = n as f64;
    let p = successes / n_f;
    let denominator = 1.0 + z * z / n_f;
    let centre = (p + z * z / (2.0 * n_f)) / denominator;
    let half = z * ((p * (1.0 - p) / n_f + z * z / (4.0 * n_f * n_f)).sqrt()) / denominator;
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
}

/// z of a two-sided 95 % interval (and of a test at 5 %).
pub const Z_95: f64 = 1.959_963_984_540_054;
/// z of 80 % power.
pub const Z_POWER_80: f64 = 0.841_621_233_572_914_3;

/// The smallest difference between the means of two runs that a two-sided test at 95 %
/// confidence detects with 80 % power, given each mean's standard error:
/// (1.96 + 0.84) × √(se_a² + se_b²). `judge calibrate` separates adjacent rungs with it.
pub fn detectable_between(se_a: f64, se_b: f64) -> f64 {
    (Z_95 + Z_POWER_80) * (se_a * se_a + se_b * se_b).sqrt()
}

/// Two-sided exact McNemar test on the discordant pairs `b` and `c`: the probability, under "no
/// difference", of a split at least as uneven (binomial with p = 1/2).
pub fn mcnemar_exact(b: usize, c: usize) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let k = b.min(c);
    let ln_half_n = n as f64 * 0.5f64.ln();
    let mut ln_choose = 0.0f64;
    let mut tail = 0.0f64;
    for i in 0..=k {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        tail += (ln_choose + ln_half_n).exp();
    }
    (2.0 * tail).min(1.0)
}

/// 95 % interval of the mean paired difference `d_i = b_i - a_i` of scores in [0, 1], honest at a
/// handful of pairs: Agresti and Min's adjusted interval for paired proportions, applied to
/// differences in [-1, 1]. Half a pseudo-pair is added at -1 and at +1 and one at 0 (their
/// "add 0.5 to every cell"), and the Wald interval is taken on the `n + 2` weighted values. For
/// pass/fail pairs it is exactly Agresti-Min; twelve identical pairs give ±14 points, not the
/// zero width a bootstrap gives. Clamped to [-1, 1]. `None` without pairs.
pub fn paired_diff_ci(diffs: &[f64]) -> Option<(f64, f64)> {
    let (centre, sd, n) = adjusted_diffs(diffs)?;
    let half = Z_95 * sd / n.sqrt();
    Some(((centre - half).max(-1.0), (centre + half).min(1.0)))
}

/// The adjusted mean, standard deviation and weight (`n + 2`) of paired differences, as
/// [`paired_diff_ci`] takes them.
fn adjusted_diffs(diffs: &[f64]) -> Option<(f64, f64, f64)> {
    if diffs.is_empty() {
        return None;
    }
    let n = diffs.len() as f64 + 2.0;
    // The pseudo-pairs: 0.5 at -1, 0.5 at +1, 1 at 0.
    let centre = diffs.iter().sum::<f64>() / n;
    let square = (diffs.iter().map(|d| d * d).sum::<f64>() + 1.0) / n;
    let variance = (square - centre * centre).max(0.0);
    Some((centre, variance.sqrt(), n))
}

/// Units needed for a difference of `difference` to be found at 95 % confidence with 80 %
/// power, when one unit's score (or paired difference) has standard deviation `sd` and the
/// test compares `arms` means (1: paired differences, 2: two independent runs of that size).
pub fn units_to_detect(sd: f64, difference: f64, arms: f64) -> Option<usize> {
    (difference.abs() > 0.0 && sd > 0.0).then(|| {
        let n = arms * ((Z_95 + Z_POWER_80) * sd / difference.abs()).powi(2);
        n.ceil().max(1.0) as usize
    })
}

/// What one run can tell apart: the smallest difference of its mean score a second run of the
/// same size would be found to differ by (two-sided 95 % confidence, 80 % power), from the run's
/// own unit scores.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum NoiseFloor {
    /// `mde = (z_0.975 + z_0.8) · sd · √(2 / n)`, with `sd` the standard deviation of the unit
    /// scores plus one pseudo-unit scoring 0 and one scoring 1 (so that a handful of equal
    /// scores does not claim zero noise).
    Detectable { units: usize, sd: f64, mde: f64 },
    /// Every repeated trial of every unit scored the same: the target is deterministic here,
    /// and any difference a rerun of the same tests shows is the target's, not noise.
    Deterministic { units: usize },
}

impl NoiseFloor {
    /// The sentence a summary prints.
    pub fn sentence(&self, unit: &str) -> String {
        match self {
            Self::Detectable { units, mde, .. } => format!(
                "noise floor: against a baseline of the same size ({units} {unit}s) this run could detect a difference of {:.1} points or more (95 % confidence, 80 % power)",
                mde * 100.0
            ),
            Self::Deterministic { units } => format!(
                "noise floor: deterministic: every repeated trial of the {units} {unit}s scored the same, so any difference a rerun shows is real"
            ),
        }
    }
}

/// The noise floor of a run whose units scored `scores` (in [0, 1]); `deterministic` when the
/// run's repeated trials were all identical (see [`NoiseFloor::Deterministic`]). `None` without
/// scores.
pub fn noise_floor(scores: &[f64], deterministic: bool) -> Option<NoiseFloor> {
    let units = scores.len();
    if units == 0 {
        return None;
    }
    if deterministic {
        return Some(NoiseFloor::Deterministic { units });
    }
    let sd = plus_two_sd(scores);
    Some(NoiseFloor::Detectable {
        units,
        sd,
        mde: ((Z_95 + Z_POWER_80) * sd * (2.0 / units as f64).sqrt()).min(1.0),
    })
}

/// Sample standard deviation of `scores` with a 0 and a 1 added (Agresti and Caffo's "add one
/// success and one failure").
fn plus_two_sd(scores: &[f64]) -> f64 {
    let values: Vec<f64> = scores.iter().copied().chain([0.0, 1.0]).collect();
    let m = values.iter().sum::<f64>() / values.len() as f64;
    let ss: f64 = values.iter().map(|v| (v - m).powi(2)).sum();
    (ss / (values.len() - 1) as f64).sqrt()
}

/// One paired unit's outcome in runs A and B.
#[derive(Debug, Clone, Copy)]
pub struct PairOutcome {
    pub score_a: f64,
    pub score_b: f64,
    pub passed_a: bool,
    pub passed_b: bool,
}

/// Which way B differs from A, if a test at the comparison's level finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Regression,
    Improvement,
    NoDifference,
}

/// The statistics of a paired comparison; every comparison (`judge compare`, `judge serve`, the
/// `--baseline` gate) uses these.
#[derive(Debug, Clone, PartialEq)]
pub struct PairStats {
    pub pairs: usize,
    /// Passed in A, not in B.
    pub regressions: usize,
    /// Passed in B, not in A.
    pub improvements: usize,
    /// McNemar's exact two-sided p-value on the discordant pass/fail pairs.
    pub p_value: f64,
    /// Pairs that scored lower in B, and higher.
    pub lower: usize,
    pub higher: usize,
    /// The exact two-sided sign test on the score differences.
    pub sign_p: f64,
    pub mean_a: Option<f64>,
    pub mean_b: Option<f64>,
    /// Mean of `score_b - score_a`, with its 95 % interval ([`paired_diff_ci`]).
    pub mean_diff: Option<f64>,
    pub diff_ci: Option<(f64, f64)>,
    /// Standard deviation of the adjusted paired differences (see [`paired_diff_ci`]).
    pub diff_sd: Option<f64>,
    /// Regression when either exact test finds B worse at `alpha` (pass/fail or scores),
    /// improvement when either finds it better and neither worse.
    pub direction: Direction,
}

impl PairStats {
    /// The smallest mean difference these pairs could detect (95 % confidence, 80 % power).
    pub fn mde(&self) -> Option<f64> {
        let sd = self.diff_sd?;
        Some(((Z_95 + Z_POWER_80) * sd / (self.pairs as f64).sqrt()).min(1.0))
    }

    /// Paired units that would detect the difference seen (`None` when there is none).
    pub fn trials_to_detect(&self) -> Option<usize> {
        units_to_detect(self.diff_sd?, self.mean_diff?, 1.0)
    }
}

pub fn pair_stats(pairs: &[PairOutcome], alpha: f64) -> PairStats {
    let regressions = pairs.iter().filter(|p| p.passed_a && !p.passed_b).count();
    let improvements = pairs.iter().filter(|p| !p.passed_a && p.passed_b).count();
    let p_value = mcnemar_exact(regressions, improvements);
    let diffs: Vec<f64> = pairs.iter().map(|p| p.score_b - p.score_a).collect();
    let lower = diffs.iter().filter(|d| **d < -1e-9).count();
    let higher = diffs.iter().filter(|d| **d > 1e-9).count();
    // The exact sign test is the same binomial as McNemar's, on the scores' signs.
    let sign_p = mcnemar_exact(lower, higher);
    let worse =
        (regressions > improvements && p_value < alpha) || (lower > higher && sign_p < alpha);
    let better =
        (improvements > regressions && p_value < alpha) || (higher > lower && sign_p < alpha);
    PairStats {
        pairs: pairs.len(),
        regressions,
        improvements,
        p_value,
        lower,
        higher,
        sign_p,
        mean_a: mean(&pairs.iter().map(|p| p.score_a).collect::<Vec<_>>()),
        mean_b: mean(&pairs.iter().map(|p| p.score_b).collect::<Vec<_>>()),
        mean_diff: mean(&diffs),
        diff_ci: paired_diff_ci(&diffs),
        diff_sd: adjusted_diffs(&diffs).map(|(_, sd, _)| sd),
        direction: if worse {
            Direction::Regression
        } else if better {
            Direction::Improvement
        } else {
            Direction::NoDifference
        },
    }
}

/// Nearest-rank percentile of sorted values; `None` when there are none.
pub fn nearest_rank(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn means_and_intervals() {
        assert_eq!(mean(&[]), None);
        assert_eq!(mean(&[1.0, 0.0]), Some(0.5));
        // Three passes of three: not 100-100 %, but about 44-100 % (Wilson).
        let (lo, hi) = bounded_mean_ci(&[1.0, 1.0, 1.0]).unwrap();
        assert!((lo - 0.4385).abs() < 1e-3 && hi == 1.0, "{lo} {hi}");
        assert_eq!(bounded_mean_ci(&[1.0, 0.0]), wilson(1, 2));
        // Partial scores are at least as uncertain as pass/fail ones of the same mean.
        let (plo, phi) = bounded_mean_ci(&[0.5, 0.5, 0.5, 0.5]).unwrap();
        let (blo, bhi) = wilson(2, 4).unwrap();
        assert!((plo - blo).abs() < 1e-12 && (phi - bhi).abs() < 1e-12);
        assert_eq!(bounded_mean_ci(&[]), None);
        let (lo, hi) = wilson(5, 10).unwrap();
        assert!((lo - 0.2366).abs() < 1e-3 && (hi - 0.7634).abs() < 1e-3);
        assert_eq!(wilson(0, 0), None);
    }

    #[test]
    fn mcnemar_matches_the_binomial() {
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        // b = 0, c = 5: 2 * 0.5^5.
        assert!((mcnemar_exact(0, 5) - 0.0625).abs() < 1e-12);
        // b = 1, c = 9: 2 * (1 + 10) / 1024.
        assert!((mcnemar_exact(9, 1) - 22.0 / 1024.0).abs() < 1e-12);
        assert_eq!(mcnemar_exact(3, 3), 1.0);
        assert!(mcnemar_exact(0, 40) < 1e-9);
    }

    #[test]
    fn the_paired_interval_is_agresti_min_and_never_zero_width() {
        // 20 pairs: 3 passed in A only (-1), 9 in B only (+1), 8 equal. Agresti-Min:
        // (c - b) / (n + 2) ± z √(((b + c + 1) - (c - b)² / (n + 2)) / (n + 2)²).
        let mut diffs = vec![-1.0; 3];
        diffs.extend([1.0; 9]);
        diffs.extend([0.0; 8]);
        let (lo, hi) = paired_diff_ci(&diffs).unwrap();
        assert!(
            (lo + 0.027_593).abs() < 1e-5 && (hi - 0.573_047).abs() < 1e-5,
            "{lo} {hi}"
        );
        // Twelve identical pairs: ±z/14, not 0-0.
        let (lo, hi) = paired_diff_ci(&[0.0; 12]).unwrap();
        assert!(
            (hi - 0.139_997).abs() < 1e-5 && (lo + hi).abs() < 1e-12,
            "{lo} {hi}"
        );
        assert_eq!(paired_diff_ci(&[]), None);
        // Clamped to what a difference of scores can be.
        assert_eq!(paired_diff_ci(&[1.0; 200]).unwrap().1, 1.0);
    }

    #[test]
    fn noise_floors_have_known_values() {
        // 50 zeros and 50 ones (plus a 0 and a 1): sd² = 0.25 · 102 / 101,
        // mde = 2.8016 · sd · √(2 / 100) = 0.1991.
        let mut scores = vec![0.0; 50];
        scores.extend([1.0; 50]);
        let Some(NoiseFloor::Detectable { units, sd, mde }) = noise_floor(&scores, false) else {
            panic!("detectable");
        };
        assert_eq!(units, 100);
        assert!(
            (sd * sd - 0.252_475).abs() < 1e-6 && (mde - 0.199_080).abs() < 1e-5,
            "{mde}"
        );
        // Three passes: the plus-two sd is √0.2 and nothing under 100 points is detectable.
        let Some(NoiseFloor::Detectable { mde, sd, .. }) = noise_floor(&[1.0; 3], false) else {
            panic!("detectable");
        };
        assert!((sd * sd - 0.2).abs() < 1e-12 && mde == 1.0, "{sd} {mde}");
        assert_eq!(
            noise_floor(&[1.0; 3], true),
            Some(NoiseFloor::Deterministic { units: 3 })
        );
        assert_eq!(noise_floor(&[], false), None);
        // sd 0.5, 10 points, paired: (2.8016 · 0.5 / 0.1)² = 196.2 -> 197; two runs twice that.
        assert_eq!(units_to_detect(0.5, 0.1, 1.0), Some(197));
        assert_eq!(units_to_detect(0.5, -0.1, 2.0), Some(393));
        assert_eq!(units_to_detect(0.5, 0.0, 1.0), None);
    }

    fn pairs(a: &[f64], b: &[f64]) -> Vec<PairOutcome> {
        a.iter()
            .zip(b)
            .map(|(a, b)| PairOutcome {
                score_a: *a,
                score_b: *b,
                passed_a: *a >= 1.0,
                passed_b: *b >= 1.0,
            })
            .collect()
    }

    #[test]
    fn the_direction_takes_an_exact_test() {
        let stats = pair_stats(&pairs(&[1.0; 12], &[0.0; 12]), 0.05);
        assert_eq!(
            (stats.regressions, stats.direction),
            (12, Direction::Regression)
        );
        assert_eq!(
            pair_stats(&pairs(&[0.0; 12], &[1.0; 12]), 0.05).direction,
            Direction::Improvement
        );
        // Partial scores that all drop a little: no pass flips, the sign test finds it.
        let stats = pair_stats(&pairs(&[0.9; 10], &[0.8; 10]), 0.05);
        assert_eq!((stats.regressions, stats.lower), (0, 10));
        assert!((stats.sign_p - 2.0 / 1024.0).abs() < 1e-12);
        assert_eq!(stats.direction, Direction::Regression);
        // Three of three flipped: p = 0.25, not detectable; 1 flip in 12 neither.
        assert_eq!(
            pair_stats(&pairs(&[1.0; 3], &[0.0; 3]), 0.05).direction,
            Direction::NoDifference
        );
        let mut one = vec![1.0; 12];
        one[3] = 0.0;
        let stats = pair_stats(&pairs(&[1.0; 12], &one), 0.05);
        assert_eq!(stats.direction, Direction::NoDifference);
        // The adjusted sd of 1 flip in 12 is √(2/14 - 1/196); 12 pairs detect 2.8016 · sd / √12.
        let sd = (2.0f64 / 14.0 - 1.0 / 196.0).sqrt();
        assert!((stats.diff_sd.unwrap() - sd).abs() < 1e-12);
        assert!((stats.mde().unwrap() - 2.801_585 * sd / 12f64.sqrt()).abs() < 1e-5);
        // The difference seen, -1/12, needs (2.8016 · sd / (1/12))² pairs.
        let needed = ((2.801_585 * sd * 12.0).powi(2)).ceil() as usize;
        assert_eq!(stats.trials_to_detect(), Some(needed));
    }

    #[test]
    fn the_difference_detectable_between_two_runs_is_two_point_eight_combined_standard_errors() {
        assert!((detectable_between(0.03, 0.04) - (Z_95 + Z_POWER_80) * 0.05).abs() < 1e-12);
        assert_eq!(detectable_between(0.0, 0.0), 0.0);
        // Symmetric in its runs.
        assert_eq!(
            detectable_between(0.01, 0.07),
            detectable_between(0.07, 0.01)
        );
    }
}
