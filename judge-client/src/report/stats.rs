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
    if n == 0 {
        return None;
    }
    let z = 1.959_964f64;
    let n_f = n as f64;
    let p = k as f64 / n_f;
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

/// Latency figures of a run's chat turns.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Latency {
    pub turns: usize,
    pub p50_ms: u64,
    pub p95_ms: u64,
    pub max_ms: u64,
    /// Turns that needed more than one attempt (429 retries).
    pub retried: usize,
}

/// Nearest-rank percentile of sorted values; `None` when there are none.
pub fn nearest_rank(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

/// Nearest-rank percentiles over every turn. A sorted vector is enough for a few thousand turns;
/// the load suite, with far more samples, is where a histogram crate earns its place.
pub fn latency(timings: &[super::results::TestTiming]) -> Option<Latency> {
    let mut all: Vec<u64> = timings
        .iter()
        .flat_map(|t| t.turn_ms.iter().copied())
        .collect();
    if all.is_empty() {
        return None;
    }
    all.sort_unstable();
    Some(Latency {
        turns: all.len(),
        p50_ms: nearest_rank(&all, 0.50)?,
        p95_ms: nearest_rank(&all, 0.95)?,
        max_ms: all[all.len() - 1],
        retried: timings
            .iter()
            .flat_map(|t| &t.turn_attempts)
            .filter(|a| **a > 1)
            .count(),
    })
}

#[cfg(test)]
mod latency_tests {
    use super::*;
    use crate::report::results::TestTiming;

    #[test]
    fn nearest_rank_percentiles() {
        let timing = TestTiming {
            id: "x".into(),
            total_ms: 0,
            turn_ms: (1..=100).rev().collect(),
            turn_attempts: vec![1, 2, 1, 4],
        };
        let l = latency(&[timing]).unwrap();
        assert_eq!(
            (l.turns, l.p50_ms, l.p95_ms, l.max_ms, l.retried),
            (100, 50, 95, 100, 2)
        );
        assert_eq!(latency(&[]), None);
    }
}
