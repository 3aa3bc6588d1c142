//! Small statistics: means, a seeded bootstrap interval, Wilson's interval and McNemar's exact
//! test. Hand-written (a few lines each) rather than pulling in a statistics crate with a linear
//! algebra stack; all of it is deterministic, so reports stay reproducible.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// 95 % percentile-bootstrap interval of the mean (2000 resamples, fixed seed).
pub fn bootstrap_ci(values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_b007);
    let mut means: Vec<f64> = (0..2000)
        .map(|_| (0..n).map(|_| values[rng.random_range(0..n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    Some((means[49], means[1949]))
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

/// One paired unit's outcome in runs A and B.
#[derive(Debug, Clone, Copy)]
pub struct PairOutcome {
    pub score_a: f64,
    pub score_b: f64,
    pub passed_a: bool,
    pub passed_b: bool,
}

/// The statistics of a paired comparison; `judge compare` and `judge serve` both use these.
#[derive(Debug, Clone, PartialEq)]
pub struct PairStats {
    /// Passed in A, not in B.
    pub regressions: usize,
    /// Passed in B, not in A.
    pub improvements: usize,
    /// McNemar's exact two-sided p-value on the discordant pairs.
    pub p_value: f64,
    pub mean_a: Option<f64>,
    pub mean_b: Option<f64>,
    /// Mean of `score_b - score_a`, with its 95 % bootstrap interval.
    pub mean_diff: Option<f64>,
    pub diff_ci: Option<(f64, f64)>,
    /// B is significantly worse: more regressions than improvements with p < alpha, or a mean
    /// score difference whose whole interval is below zero.
    pub regression: bool,
}

pub fn pair_stats(pairs: &[PairOutcome], alpha: f64) -> PairStats {
    let regressions = pairs.iter().filter(|p| p.passed_a && !p.passed_b).count();
    let improvements = pairs.iter().filter(|p| !p.passed_a && p.passed_b).count();
    let p_value = mcnemar_exact(regressions, improvements);
    let diffs: Vec<f64> = pairs.iter().map(|p| p.score_b - p.score_a).collect();
    let diff_ci = bootstrap_ci(&diffs);
    PairStats {
        regressions,
        improvements,
        p_value,
        mean_a: mean(&pairs.iter().map(|p| p.score_a).collect::<Vec<_>>()),
        mean_b: mean(&pairs.iter().map(|p| p.score_b).collect::<Vec<_>>()),
        mean_diff: mean(&diffs),
        diff_ci,
        regression: (regressions > improvements && p_value < alpha)
            || diff_ci.is_some_and(|(_, hi)| hi < 0.0),
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
        let (lo, hi) = bootstrap_ci(&[1.0, 1.0, 1.0]).unwrap();
        assert_eq!((lo, hi), (1.0, 1.0));
        let values = [0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0];
        let (lo, hi) = bootstrap_ci(&values).unwrap();
        assert!(lo < 0.625 && 0.625 < hi, "{lo} {hi}");
        assert_eq!(bootstrap_ci(&values), Some((lo, hi)));
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
}
