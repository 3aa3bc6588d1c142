//! A/B statistics: Bradley-Terry ratings (on the Elo scale) fitted to pairwise preferences, with
//! seeded bootstrap intervals, and a paired significance test (exact sign test on the pairs with a
//! preference, plus an adjusted interval of the mean score difference, `paired_diff_ci`).
//!
//! Hand-written: the fit is Hunter's MM iteration, a dozen lines; a statistics crate would bring a
//! linear-algebra stack for it.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::report::stats::{mcnemar_exact, mean, paired_diff_ci, wilson};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preference {
    A,
    B,
    Tie,
}

/// One comparison between players `first` and `second` (indices), from `first`'s side:
/// 1 win, 0.5 tie, 0 loss.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    pub first: usize,
    pub second: usize,
    pub score: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rating {
    pub player: String,
    /// Elo-scale rating (mean 1500 across players).
    pub rating: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

/// Bradley-Terry strengths by MM iteration. Every pair of players gets one virtual tie (a weak
/// prior), so a player who wins every comparison still has a finite rating.
pub fn bradley_terry(players: usize, comparisons: &[Comparison]) -> Vec<f64> {
    let mut wins = vec![0.0f64; players];
    let mut games = vec![vec![0.0f64; players]; players];
    for c in comparisons {
        wins[c.first] += c.score;
        wins[c.second] += 1.0 - c.score;
        games[c.first][c.second] += 1.0;
        games[c.second][c.first] += 1.0;
    }
    for (i, row) in games.iter_mut().enumerate() {
        for (j, cell) in row.iter_mut().enumerate() {
            if i != j {
                *cell += 1.0;
                wins[i] += 0.5;
            }
        }
    }
    let mut strength = vec![1.0f64; players];
    for _ in 0..500 {
        let next: Vec<f64> = (0..players)
            .map(|i| {
                let denominator: f64 = (0..players)
                    .filter(|j| *j != i)
                    .map(|j| games[i][j] / (strength[i] + strength[j]))
                    .sum();
                if denominator > 0.0 {
                    wins[i] / denominator
                } else {
                    1.0
                }
            })
            .collect();
        // Normalise to geometric mean 1: ratings centre on 1500.
        let log_mean = next.iter().map(|s| s.ln()).sum::<f64>() / players as f64;
        strength = next.iter().map(|s| s / log_mean.exp()).collect();
    }
    strength
        .iter()
        .map(|s| 1500.0 + 400.0 * s.log10())
        .collect()
}

/// Ratings with 95 % percentile-bootstrap intervals (comparisons resampled, fixed seed). When
/// every comparison has the same outcome, every resample does too and the interval collapses to
/// the estimate: [`PairedTest`]'s sign test and Wilson interval carry the uncertainty then.
pub fn rate(names: &[String], comparisons: &[Comparison], seed: u64) -> Vec<Rating> {
    let point = bradley_terry(names.len(), comparisons);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xb7_b007);
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    if !comparisons.is_empty() {
        for _ in 0..1000 {
            let resampled: Vec<Comparison> = (0..comparisons.len())
                .map(|_| comparisons[rng.random_range(0..comparisons.len())])
                .collect();
            for (i, r) in bradley_terry(names.len(), &resampled)
                .into_iter()
                .enumerate()
            {
                samples[i].push(r);
            }
        }
    }
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let s = &mut samples[i];
            s.sort_by(f64::total_cmp);
            let (lo, hi) = if s.is_empty() {
                (point[i], point[i])
            } else {
                (s[(s.len() * 25) / 1000], s[(s.len() * 975) / 1000 - 1])
            };
            Rating {
                player: name.clone(),
                rating: point[i],
                ci_low: lo,
                ci_high: hi,
            }
        })
        .collect()
}

/// The paired test of an A/B run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedTest {
    pub pairs: usize,
    pub wins_a: usize,
    pub wins_b: usize,
    pub ties: usize,
    /// Two-sided exact sign test on the pairs with a preference.
    pub sign_test_p: f64,
    /// A's share of the pairs with a preference, and its 95 % Wilson interval. Unlike the
    /// bootstrap interval of the ratings, it does not collapse when every pair goes one way.
    pub win_share_a: Option<f64>,
    pub win_share_ci: Option<(f64, f64)>,
    /// Mean of score(A) − score(B) over the pairs, and its 95 % interval (`paired_diff_ci`).
    pub mean_difference: Option<f64>,
    pub difference_ci: Option<(f64, f64)>,
}

pub fn paired_test(preferences: &[Preference], differences: &[f64]) -> PairedTest {
    let count = |p: Preference| preferences.iter().filter(|x| **x == p).count();
    let (wins_a, wins_b) = (count(Preference::A), count(Preference::B));
    PairedTest {
        pairs: preferences.len(),
        wins_a,
        wins_b,
        ties: count(Preference::Tie),
        // The exact sign test is McNemar's exact test on the discordant pairs.
        sign_test_p: mcnemar_exact(wins_a, wins_b),
        win_share_a: (wins_a + wins_b > 0).then(|| wins_a as f64 / (wins_a + wins_b) as f64),
        win_share_ci: wilson(wins_a, wins_a + wins_b),
        mean_difference: mean(differences),
        // Scores in [0, 1]: the adjusted paired interval keeps its width at a few pairs.
        difference_ci: paired_diff_ci(differences),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn games(a_wins: usize, b_wins: usize, ties: usize) -> Vec<Comparison> {
        let mut out = Vec::new();
        out.extend((0..a_wins).map(|_| Comparison {
            first: 0,
            second: 1,
            score: 1.0,
        }));
        out.extend((0..b_wins).map(|_| Comparison {
            first: 0,
            second: 1,
            score: 0.0,
        }));
        out.extend((0..ties).map(|_| Comparison {
            first: 0,
            second: 1,
            score: 0.5,
        }));
        out
    }

    #[test]
    fn bradley_terry_matches_the_closed_form_for_two_players() {
        // Two players: strength ratio = wins ratio (prior included): (7 + 0.5) / (3 + 0.5).
        let r = bradley_terry(2, &games(7, 3, 0));
        let expected = 400.0 * (7.5f64 / 3.5).log10();
        assert!(((r[0] - r[1]) - expected).abs() < 1e-6, "{r:?}");
        assert!(((r[0] + r[1]) / 2.0 - 1500.0).abs() < 1e-6);
        let even = bradley_terry(2, &games(0, 0, 6));
        assert!((even[0] - even[1]).abs() < 1e-9);
    }

    #[test]
    fn intervals_cover_the_estimate_and_the_sign_test_is_exact() {
        let names = vec!["A".to_owned(), "B".to_owned()];
        let ratings = rate(&names, &games(12, 2, 2), 1);
        assert!(ratings[0].rating > ratings[1].rating);
        for r in &ratings {
            assert!(r.ci_low <= r.rating && r.rating <= r.ci_high, "{r:?}");
        }
        assert!(
            ratings[0].ci_low > 1500.0,
            "A is clearly stronger: {:?}",
            ratings[0]
        );
        assert_eq!(rate(&names, &games(12, 2, 2), 1), ratings, "seeded");
        let mut prefs = vec![Preference::A; 8];
        prefs.push(Preference::Tie);
        let t = paired_test(&prefs, &[1.0; 9]);
        assert_eq!((t.wins_a, t.wins_b, t.ties), (8, 0, 1));
        assert!((t.sign_test_p - 2.0 * 0.5f64.powi(8)).abs() < 1e-12);
        assert_eq!(t.mean_difference, Some(1.0));
        assert_eq!(t.win_share_a, Some(1.0));
        let (lo, hi) = t.win_share_ci.unwrap();
        assert!(lo > 0.6 && lo < 0.7 && hi == 1.0, "{lo} {hi}");
    }
}
