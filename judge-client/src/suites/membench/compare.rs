//! `judge compare` between two membench runs: paired per question id (the same dataset file,
//! any protocol or target), McNemar on pass/fail and a bootstrap interval on the score difference,
//! via the same [`pair_stats`] as the LTM suite; plus per-category means.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use serde::Serialize;

use super::dataset::DatasetKind;
use super::report::PASS_F1;
use super::results::{MembenchResults, QuestionResult};
use crate::report::stats::{PairOutcome, pair_stats};

#[derive(Debug, thiserror::Error)]
pub enum MembenchCompareError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a membench results.json: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error("run A is {a:?} and run B is {b:?}: only runs of one dataset compare")]
    Datasets { a: DatasetKind, b: DatasetKind },
}

pub fn load(dir: &Path) -> Result<MembenchResults, MembenchCompareError> {
    let path = dir.join("results.json");
    let text = std::fs::read_to_string(&path).map_err(|source| MembenchCompareError::Io {
        path: path.display().to_string(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| MembenchCompareError::Json {
        path: path.display().to_string(),
        source,
    })
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CategoryDelta {
    pub category: String,
    pub pairs: usize,
    pub mean_a: Option<f64>,
    pub mean_b: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MembenchComparison {
    pub dataset: DatasetKind,
    pub pairs: usize,
    /// Questions scored in only one of the runs.
    pub unpaired: usize,
    pub regressions: usize,
    pub improvements: usize,
    pub p_value: f64,
    pub mean_a: Option<f64>,
    pub mean_b: Option<f64>,
    pub mean_diff: Option<f64>,
    pub diff_ci: Option<(f64, f64)>,
    pub alpha: f64,
    pub regression: bool,
    pub categories: Vec<CategoryDelta>,
}

fn passed(dataset: DatasetKind, score: f64) -> bool {
    match dataset {
        DatasetKind::Locomo => score >= PASS_F1,
        DatasetKind::Longmemeval => score >= 1.0,
    }
}

/// Pairs the two runs' scored questions by id.
pub fn compare(
    a: &MembenchResults,
    b: &MembenchResults,
    alpha: f64,
) -> Result<MembenchComparison, MembenchCompareError> {
    let dataset = a.summary.dataset;
    if b.summary.dataset != dataset {
        return Err(MembenchCompareError::Datasets {
            a: dataset,
            b: b.summary.dataset,
        });
    }
    let scored = |r: &MembenchResults| -> BTreeMap<String, (String, f64)> {
        r.questions
            .iter()
            .filter_map(|q: &QuestionResult| Some((q.id.clone(), (q.category.clone(), q.score?))))
            .collect()
    };
    let (in_a, in_b) = (scored(a), scored(b));
    let mut pairs: Vec<(String, PairOutcome)> = Vec::new();
    for (id, (category, score_a)) in &in_a {
        if let Some((_, score_b)) = in_b.get(id) {
            pairs.push((
                category.clone(),
                PairOutcome {
                    score_a: *score_a,
                    score_b: *score_b,
                    passed_a: passed(dataset, *score_a),
                    passed_b: passed(dataset, *score_b),
                },
            ));
        }
    }
    let unpaired = in_a.len() + in_b.len() - 2 * pairs.len();
    let outcomes: Vec<PairOutcome> = pairs.iter().map(|(_, p)| *p).collect();
    let stats = pair_stats(&outcomes, alpha);
    let mut categories: Vec<String> = pairs.iter().map(|(c, _)| c.clone()).collect();
    categories.sort();
    categories.dedup();
    let categories = categories
        .into_iter()
        .map(|category| {
            let of: Vec<PairOutcome> = pairs
                .iter()
                .filter(|(c, _)| *c == category)
                .map(|(_, p)| *p)
                .collect();
            let s = pair_stats(&of, alpha);
            CategoryDelta {
                category,
                pairs: of.len(),
                mean_a: s.mean_a,
                mean_b: s.mean_b,
            }
        })
        .collect();
    Ok(MembenchComparison {
        dataset,
        pairs: outcomes.len(),
        unpaired,
        regressions: stats.regressions,
        improvements: stats.improvements,
        p_value: stats.p_value,
        mean_a: stats.mean_a,
        mean_b: stats.mean_b,
        mean_diff: stats.mean_diff,
        diff_ci: stats.diff_ci,
        alpha,
        regression: stats.regression,
        categories,
    })
}

pub fn render(c: &MembenchComparison) -> String {
    let pct = |v: Option<f64>| v.map_or("n/a".to_owned(), |v| format!("{:.1}", v * 100.0));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} questions paired ({} unpaired); mean score A {} B {} (B - A {}{})",
        c.dataset.name(),
        c.pairs,
        c.unpaired,
        pct(c.mean_a),
        pct(c.mean_b),
        pct(c.mean_diff),
        c.diff_ci.map_or(String::new(), |(lo, hi)| format!(
            ", 95 % CI {:.1} to {:.1}",
            lo * 100.0,
            hi * 100.0
        ))
    );
    let _ = writeln!(
        out,
        "passed only in A {} · only in B {} · McNemar p = {:.4}",
        c.regressions, c.improvements, c.p_value
    );
    for d in &c.categories {
        let _ = writeln!(
            out,
            "  {:<28} {:>5} pairs  A {:>5}  B {:>5}",
            d.category,
            d.pairs,
            pct(d.mean_a),
            pct(d.mean_b)
        );
    }
    let _ = writeln!(
        out,
        "{}",
        if c.regression {
            "REGRESSION: run B is significantly worse than run A"
        } else {
            "no significant regression"
        }
    );
    out
}
