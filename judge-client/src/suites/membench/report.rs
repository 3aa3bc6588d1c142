//! What a `judge membench` run writes (the run directory itself is [`super::run`]'s):
//! `manifest.json`'s details (dataset, protocol, exclusions, data problems, capabilities),
//! `junit.xml` (one testcase per question) and a self-contained `report.html` (per-category
//! chart, each question's evidence, recalled items, answer and verdict).

use std::collections::HashMap;
use std::fmt::Write;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::bm25::RECALL_KS;
use super::dataset::{DataProblem, Dataset, DatasetKind};
use super::results::{CategorySummary, MembenchResults, Outcome, QuestionResult};
use super::runner::{MembenchCapabilities, MembenchConfig};
use crate::endpoint::TargetSettings;
use crate::report::chart::{Bar, BarChart, Scale, Series, colour};
use crate::report::escape::escape;
use crate::report::html::{page_head, pct};
use crate::rundir::{Manifest, Shard};

/// How the judge names the turns it sends; recorded so a reader knows what recall@k compares.
pub const TURN_ID_DESIGN: &str = "Every ingested turn travels with its id in the X-Turn-Id request header (LoCoMo dia_id such as D1:3; LongMemEval <session id>:<turn number>), comma-separated in message or fact order when a request carries several. An agent that keeps it names the turns in POST /control/memory/recall's source_turn_ids.";

/// A LoCoMo reply counts as a passed testcase in junit.xml from this F1 on.
pub const PASS_F1: f64 = 0.5;

/// A membench run's manifest: the envelope every run has ([`Manifest`]) and these details.
pub type MembenchManifest = Manifest<MembenchDetails>;

/// What a membench run records in its manifest beside the envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MembenchDetails {
    pub dataset: DatasetKind,
    pub dataset_file: String,
    pub dataset_sha256: String,
    pub config: MembenchConfig,
    /// The ingestion protocol, described.
    pub protocol: String,
    pub turn_ids: String,
    pub target: TargetSettings,
    pub capabilities: MembenchCapabilities,
    /// The judge model behind `--judge-endpoint`, when one scored.
    pub judge_model: Option<String>,
    pub questions_planned: usize,
    /// Question ids left out by `--exclude`.
    pub excluded: Vec<String>,
    /// Problems of single items the reader worked around.
    pub data_problems: Vec<DataProblem>,
    /// What this harness does not do yet.
    pub not_supported: Vec<String>,
    /// Wall time spent running, summed over the run's invocations (`--resume`); a merged run's
    /// is its slowest part's.
    #[serde(default)]
    pub wall_seconds: f64,
    /// Times the run was resumed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumed_at: Vec<DateTime<Utc>>,
    /// Set when this run is one shard of a benchmark (`judge membench --shard`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// The run ids of the shards a merged run was made from (`judge merge`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<String>,
}

/// SHA-256 of the dataset file, so two runs can tell they read the same data.
pub fn file_sha256(path: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    Ok(Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Whether the question counts as passed (junit.xml's and the report's verdict).
pub fn passed(dataset: DatasetKind, q: &QuestionResult) -> bool {
    verdict(dataset, q).0 == "passed"
}

/// Passed, failed, not applicable or error, as junit.xml and the report show it: a question the
/// target failed is a failure carrying its failure class, one the judge's side spoiled an error.
fn verdict(dataset: DatasetKind, q: &QuestionResult) -> (&'static str, String) {
    match (q.outcome(), &q.failure, &q.judge_failure) {
        (Outcome::Failed(_), Some(f), _) => {
            return ("failed", format!("no answer: {}: {}", f.kind, f.message));
        }
        (Outcome::Excluded(_), Some(f), _) | (Outcome::Excluded(_), None, Some(f)) => {
            return ("error", format!("excluded: {}: {}", f.kind, f.message));
        }
        _ => {}
    }
    match (dataset, q.score) {
        (DatasetKind::Locomo, Some(score)) if score >= PASS_F1 => {
            ("passed", format!("F1 {score:.2}"))
        }
        (DatasetKind::Locomo, Some(score)) => ("failed", format!("F1 {score:.2} below {PASS_F1}")),
        (DatasetKind::Longmemeval, Some(score)) if score >= 1.0 => {
            ("passed", "judged correct".to_owned())
        }
        (DatasetKind::Longmemeval, Some(_)) => ("failed", "judged wrong".to_owned()),
        (_, None) => (
            "not_applicable",
            format!(
                "accuracy needs a model judge (--judge-endpoint); token-F1 stand-in {:.2}",
                q.f1_stand_in.unwrap_or(0.0)
            ),
        ),
    }
}

pub fn junit(manifest: &MembenchManifest, results: &MembenchResults) -> String {
    let dataset = manifest.dataset;
    let count = |status: &str| {
        results
            .questions
            .iter()
            .filter(|q| verdict(dataset, q).0 == status)
            .count()
    };
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        r#"<testsuites name="agentwall-membench-{}" tests="{}" failures="{}" errors="{}" skipped="{}">"#,
        dataset.name(),
        results.questions.len(),
        count("failed"),
        count("error"),
        count("not_applicable")
    );
    for category in &results.summary.categories {
        let questions: Vec<&QuestionResult> = results
            .questions
            .iter()
            .filter(|q| q.category == category.category)
            .collect();
        let _ = writeln!(
            out,
            r#"  <testsuite name="{} {}" tests="{}">"#,
            dataset.name(),
            escape(&category.name),
            questions.len()
        );
        for q in questions {
            let (status, detail) = verdict(dataset, q);
            let _ = write!(
                out,
                r#"    <testcase classname="membench.{}.{}" name="{}" time="{:.3}">"#,
                dataset.name(),
                escape(&q.conversation),
                escape(&q.id),
                q.latency_ms.unwrap_or(0) as f64 / 1000.0
            );
            match status {
                "failed" => {
                    let _ = write!(out, r#"<failure message="{}"/>"#, escape(&detail));
                }
                "error" => {
                    let _ = write!(out, r#"<error message="{}"/>"#, escape(&detail));
                }
                "not_applicable" => {
                    let _ = write!(out, r#"<skipped message="{}"/>"#, escape(&detail));
                }
                _ => {}
            }
            let _ = writeln!(
                out,
                "<system-out>{}</system-out></testcase>",
                escape(&format!(
                    "Q: {}\nGold: {}\nReply: {}",
                    q.asked,
                    q.gold,
                    q.reply.as_deref().unwrap_or("(none)")
                ))
            );
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

/// How the questions were counted, in one line: the counts add up to `questions`, with the
/// failure classes and the judge's own failures named.
pub fn accounting(c: &CategorySummary) -> String {
    let classes = if c.failures.is_empty() {
        String::new()
    } else {
        format!(
            " ({})",
            c.failures
                .iter()
                .map(|(kind, n)| format!("{kind} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let mut line = format!(
        "{} questions: {} answered, {} failed by the target (scored 0), {} excluded by the judge's own failure{classes}",
        c.questions, c.answered, c.failed, c.excluded
    );
    if c.judge_errors > 0 {
        let _ = write!(
            line,
            "; the model judge gave no verdict on {} (judge_error, left out of its score)",
            c.judge_errors
        );
    }
    if c.recall_failures > 0 {
        let _ = write!(line, "; {} recall requests failed", c.recall_failures);
    }
    line
}

fn recall_cells(recall: &Option<std::collections::BTreeMap<usize, f64>>) -> String {
    RECALL_KS
        .iter()
        .map(|k| {
            format!(
                "<td>{}</td>",
                recall
                    .as_ref()
                    .and_then(|r| r.get(k))
                    .map_or("n/a".to_owned(), |v| pct(Some(*v)))
            )
        })
        .collect()
}

fn category_row(c: &CategorySummary, longmemeval: bool) -> String {
    let score = match (c.score, c.score_ci) {
        (Some(s), Some((lo, hi))) => {
            format!("{} ({}–{})", pct(Some(s)), pct(Some(lo)), pct(Some(hi)))
        }
        (Some(s), None) => pct(Some(s)),
        (None, _) => "n/a".to_owned(),
    };
    let second = if longmemeval {
        c.f1_stand_in.map_or("–".to_owned(), |v| pct(Some(v)))
    } else {
        c.judge_accuracy.map_or("–".to_owned(), |v| pct(Some(v)))
    };
    let judge_errors = if c.judge_errors > 0 {
        format!(" ({} judge_error)", c.judge_errors)
    } else {
        String::new()
    };
    format!(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{score}</td><td>{second}{judge_errors}</td><td>{}</td>{}{}</tr>",
        escape(&c.name),
        c.questions,
        c.answered,
        c.failed,
        c.excluded,
        c.recall_questions,
        recall_cells(&c.agent_recall),
        recall_cells(&c.bm25_recall)
    )
}

/// Bars per category: score, agent recall@8 and BM25 recall@8.
fn chart(categories: &[CategorySummary]) -> String {
    let mut chart = BarChart::new(
        "Score and recall per category",
        Scale::Fraction(&[]),
        colour::BLUE,
    );
    (chart.label_width, chart.width, chart.bar_height) = (170.0, 460.0, 9.0);
    chart.series = vec![
        Series {
            name: "score",
            colour: colour::BLUE,
        },
        Series {
            name: "agent recall@8",
            colour: colour::GREEN,
        },
        Series {
            name: "BM25 recall@8",
            colour: colour::GREY,
        },
    ];
    for c in categories {
        let values = [
            c.score.or(c.f1_stand_in),
            c.agent_recall.as_ref().and_then(|r| r.get(&8).copied()),
            c.bm25_recall.as_ref().and_then(|r| r.get(&8).copied()),
        ];
        chart.row(
            c.name.as_str(),
            values.into_iter().map(|v| Bar::new(v, pct(v))).collect(),
        );
    }
    chart.render()
}

pub fn html(manifest: &MembenchManifest, results: &MembenchResults, dataset: &Dataset) -> String {
    let summary = &results.summary;
    let longmemeval = manifest.dataset == DatasetKind::Longmemeval;
    let lines: HashMap<(&str, &str), String> = dataset
        .conversations
        .iter()
        .flat_map(|c| {
            c.turns()
                .map(move |(_, t)| ((c.id.as_str(), t.id.as_str()), t.line()))
        })
        .collect();
    let mut out = page_head(
        &format!(
            "agentwall {} report · {}",
            manifest.dataset.name(),
            manifest.run_id
        ),
        ".ev{background:#f0fdf4}.rc{background:#eef4ff}",
    );
    let _ = write!(
        out,
        r#"<h1>{} through the API wall</h1><p class="meta">run {} · judge {} · protocol <b>{}</b> · target {} · model {} · seed {}</p>"#,
        manifest.dataset.name(),
        escape(&manifest.run_id),
        escape(&manifest.judge_version),
        manifest.config.protocol.name(),
        escape(&manifest.target.endpoint),
        escape(&manifest.capabilities.base.model),
        manifest.config.seed
    );
    let _ = write!(
        out,
        r#"<p class="big">{}</p><p>{}{}</p><p id="noise-floor">{}</p>"#,
        summary
            .overall
            .score
            .map_or("n/a".to_owned(), |s| pct(Some(s))),
        escape(&summary.score_definition),
        summary
            .overall
            .score_ci
            .map_or(String::new(), |(lo, hi)| format!(
                " (95 % CI {}–{})",
                pct(Some(lo)),
                pct(Some(hi))
            )),
        crate::suites::compare::run_noise_floor::<super::Membench>(results)
            .map_or(String::new(), |n| escape(&n.sentence("question")))
    );
    for note in summary
        .agent_recall_note
        .iter()
        .chain(&summary.comparability_note)
    {
        let _ = write!(out, r#"<p class="error">{}</p>"#, escape(note));
    }
    out.push_str(&chart(&summary.categories));
    let second = if longmemeval { "F1 stand-in" } else { "J" };
    let ks: String = RECALL_KS.iter().map(|k| format!("<th>@{k}</th>")).collect();
    let _ = write!(
        out,
        r#"<table><tr><th rowspan="2">category</th><th rowspan="2">questions</th><th rowspan="2">answered</th><th rowspan="2">failed by the target</th><th rowspan="2">excluded (judge_error)</th><th rowspan="2">score (95 % CI)</th><th rowspan="2">{second}</th><th rowspan="2">in recall</th><th colspan="3">agent recall</th><th colspan="3">BM25 recall</th></tr><tr>{ks}{ks}</tr>"#
    );
    for c in &summary.categories {
        out.push_str(&category_row(c, longmemeval));
    }
    out.push_str(&category_row(&summary.overall, longmemeval));
    out.push_str("</table>");
    let _ = write!(
        out,
        r#"<p class="meta">{}</p>"#,
        escape(&accounting(&summary.overall))
    );
    let s = &summary.speed;
    let _ = write!(
        out,
        "<h2>Cost and speed</h2><table><tr><td>ingested turns</td><td>{}</td></tr><tr><td>ingestion time</td><td>{:.1} s ({} turns/s)</td></tr><tr><td>question latency p50 / p95</td><td>{} / {} ms</td></tr><tr><td>prompt tokens per question</td><td>{}</td></tr><tr><td>failed requests</td><td>{}</td></tr><tr><td>wall time</td><td>{:.1} s</td></tr></table>",
        s.ingested_turns,
        s.ingestion_seconds,
        s.turns_per_second
            .map_or("–".to_owned(), |t| format!("{t:.1}")),
        s.latency_p50_ms.map_or("–".to_owned(), |v| v.to_string()),
        s.latency_p95_ms.map_or("–".to_owned(), |v| v.to_string()),
        s.mean_prompt_tokens
            .map_or("not reported".to_owned(), |v| format!("{v:.0}")),
        s.failed_requests,
        s.wall_seconds
    );
    let _ = write!(
        out,
        "<h2>Data problems ({})</h2><ul>",
        manifest.data_problems.len()
    );
    for p in &manifest.data_problems {
        let _ = write!(
            out,
            "<li>{}: {} — {}</li>",
            escape(&p.item),
            escape(&p.problem),
            escape(&p.action)
        );
    }
    out.push_str("</ul><h2>Questions</h2>");
    for q in &results.questions {
        let (status, detail) = verdict(manifest.dataset, q);
        let _ = write!(
            out,
            r#"<details><summary><span class="{status}">{status}</span> {} [{}] {}</summary><p class="meta">{}</p><div class="turn user">{}</div><div class="turn assistant">{}</div><p>gold: <b>{}</b></p>"#,
            escape(&q.id),
            escape(&q.category),
            escape(&q.asked),
            escape(&detail),
            escape(&q.asked),
            escape(q.reply.as_deref().unwrap_or("(no reply)")),
            escape(&q.gold)
        );
        if let Some(v) = &q.judge {
            let _ = write!(
                out,
                "<p class=\"meta\">judge: {} ({})</p>",
                if v.correct { "correct" } else { "wrong" },
                escape(&v.reply)
            );
        }
        if let Some(f) = &q.judge_failure {
            let _ = write!(
                out,
                "<p class=\"error\">judge: no verdict ({}: {}); left out of {}</p>",
                f.kind,
                escape(&f.message),
                if longmemeval { "the score" } else { "J" }
            );
        }
        if let Some(f) = &q.recall_failure {
            let _ = write!(
                out,
                "<p class=\"error\">agent recall failed ({}: {})</p>",
                f.kind,
                escape(&f.message)
            );
        }
        out.push_str("<p>evidence:</p>");
        for id in &q.evidence {
            let line = lines
                .get(&(q.conversation.as_str(), id.as_str()))
                .map_or("", String::as_str);
            let _ = write!(
                out,
                r#"<div class="turn ev">{} · {}</div>"#,
                escape(id),
                escape(line)
            );
        }
        if let Some(why) = &q.recall_excluded {
            let _ = write!(
                out,
                r#"<p class="meta">not in recall@k: {}</p>"#,
                escape(why)
            );
        }
        match &q.recalled {
            Some(items) => {
                let _ = write!(out, "<p>agent recalled ({}):</p>", items.len());
                for item in items.iter().take(8) {
                    let _ = write!(
                        out,
                        r#"<div class="turn rc">[{}] {}</div>"#,
                        escape(&item.source_turn_ids.join(", ")),
                        escape(&item.text)
                    );
                }
            }
            None => out.push_str(r#"<p class="meta">agent recall: not applicable</p>"#),
        }
        let _ = write!(
            out,
            r#"<p class="meta">BM25 top 5: {}</p></details>"#,
            escape(
                &q.bm25_top
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        );
    }
    out.push_str("</body></html>");
    out
}
