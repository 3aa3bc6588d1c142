//! `report.html`: one self-contained page (inline CSS and SVG, no script, nothing fetched) with
//! the summary, a chart of per-type scores with their intervals, the retention curve, and every
//! conversation.

use std::fmt::Write;

use super::TestType;
use super::filler::FILLER_PREFIX;
use super::manifest::LtmManifest;
use super::results::{
    RunResults, TestResult, TestStatus, TestTiming, TranscriptEntry, TypeSummary,
};
use super::summary::{grader_line, latency, one_at_a_time};
use crate::report::chart::{Bar, BarChart, Scale, colour, fraction_line};
use crate::report::html::{escape, page_head, pct};

/// Horizontal bars of per-type mean scores with 95 % interval whiskers.
fn score_chart(types: &[TypeSummary]) -> String {
    let mut chart = BarChart::new(
        "Score per test type",
        Scale::Fraction(&[0.0, 0.25, 0.5, 0.75, 1.0]),
        colour::BLUE,
    );
    chart.missing = "not applicable";
    for t in types {
        chart.row(
            t.test_type.name(),
            vec![Bar::new(t.mean, pct(t.mean)).interval(t.ci_low.zip(t.ci_high))],
        );
    }
    chart.render()
}

/// The retention curve: mean recall per horizon.
fn retention_chart(summary: &TypeSummary) -> Option<String> {
    let points: Vec<(String, f64)> = summary
        .checks
        .iter()
        .map(|c| (c.label.clone(), c.mean))
        .collect();
    fraction_line("Retention curve", &points)
}

fn transcript(test: &TestResult) -> String {
    let mut out = String::new();
    for entry in &test.transcript {
        match entry {
            TranscriptEntry::Turn {
                session,
                at,
                user,
                reply,
                failure,
                check,
            } => {
                if user.starts_with(FILLER_PREFIX) {
                    // Filler is long and says nothing about the user: folded by default.
                    let _ = write!(
                        out,
                        r#"<details class="turn user"><summary class="meta">user · session {} · {} · filler, {} words</summary>{}</details>"#,
                        escape(session),
                        at.format("%Y-%m-%d %H:%M"),
                        user.split_whitespace().count(),
                        escape(user)
                    );
                } else {
                    let _ = write!(
                        out,
                        r#"<div class="turn user"><span class="meta">user · session {} · {}</span>
{}</div>"#,
                        escape(session),
                        at.format("%Y-%m-%d %H:%M"),
                        escape(user)
                    );
                }
                let scored = check
                    .as_ref()
                    .map(|c| format!(" · scored: {}", escape(c)))
                    .unwrap_or_default();
                match (reply, failure) {
                    (Some(reply), _) => {
                        let _ = write!(
                            out,
                            r#"<div class="turn assistant"><span class="meta">assistant{scored}</span>
{}</div>"#,
                            escape(reply)
                        );
                    }
                    (None, failure) => {
                        let text = failure
                            .as_ref()
                            .map(|f| format!("{}: {}", f.kind, f.message))
                            .unwrap_or_default();
                        let _ = write!(
                            out,
                            r#"<div class="turn assistant fail"><span class="meta">no reply{scored}</span>
{}</div>"#,
                            escape(&text)
                        );
                    }
                }
            }
            TranscriptEntry::Advance { session, from, to } => {
                let _ = write!(
                    out,
                    r#"<div class="event">session {}: clock jumps {} → {}</div>"#,
                    escape(session),
                    from.format("%Y-%m-%d %H:%M"),
                    to.format("%Y-%m-%d %H:%M")
                );
            }
            TranscriptEntry::Reset {
                session, failure, ..
            } => {
                let _ = write!(
                    out,
                    r#"<div class="event">session {}: reset{}</div>"#,
                    escape(session),
                    failure
                        .as_ref()
                        .map(|f| format!(" failed ({}: {})", f.kind, escape(&f.message)))
                        .unwrap_or_default()
                );
            }
            TranscriptEntry::Inject {
                session,
                facts,
                failure,
                ..
            } => {
                let _ = write!(
                    out,
                    r#"<div class="event">session {}: injected {}{}</div>"#,
                    escape(session),
                    escape(&facts.join(" | ")),
                    failure
                        .as_ref()
                        .map(|f| format!(" — failed ({}: {})", f.kind, escape(&f.message)))
                        .unwrap_or_default()
                );
            }
        }
    }
    out
}

fn test_section(test: &TestResult) -> String {
    let mut out = String::new();
    let status = test.status.as_str();
    let _ = write!(
        out,
        r#"<details><summary><b>{}</b> · <span class="{status}">{}</span> · score {}</summary>"#,
        escape(&test.id),
        status.replace('_', " "),
        pct(test.score)
    );
    if let Some(reason) = &test.reason {
        let _ = write!(
            out,
            "<p>{}{}</p>",
            if test.status == TestStatus::NotApplicable {
                "Not applicable: "
            } else {
                ""
            },
            escape(reason)
        );
    }
    if let Some(f) = &test.failure {
        let _ = write!(
            out,
            r#"<p class="failed">Stopped on {}: {} (attempts: {})</p>"#,
            f.kind,
            escape(&f.message),
            f.attempts
        );
    }
    if !test.checks.is_empty() {
        out.push_str(
            "<table><tr><th>check</th><th>session</th><th>score</th><th>verdict</th><th>grader</th></tr>",
        );
        for c in &test.checks {
            let grade = c
                .grade
                .as_ref()
                .map_or(String::new(), |g| match (g.passed, &g.failure) {
                    (Some(true), _) => "PASS".to_owned(),
                    (Some(false), _) => "FAIL".to_owned(),
                    (None, Some(f)) => format!("[{}] {}", f.kind, f.message),
                    (None, None) => String::new(),
                });
            let _ = write!(
                out,
                r#"<tr><td>{}</td><td>{}</td><td class="{}">{:.2}</td><td>{}</td><td>{}</td></tr>"#,
                escape(&c.label),
                escape(&c.session),
                if c.passed { "passed" } else { "failed" },
                c.score,
                escape(&c.detail),
                escape(&grade)
            );
        }
        out.push_str("</table>");
    }
    if !test.sessions.is_empty()
        && !matches!(
            test.status,
            TestStatus::NotApplicable | TestStatus::NotGradable
        )
    {
        let logs: Vec<String> = test
            .sessions
            .iter()
            .map(|s| {
                format!(
                    "{} → {} ({})",
                    escape(&s.label),
                    escape(&s.log_file),
                    escape(&s.stop_reason)
                )
            })
            .collect();
        let _ = write!(out, r#"<p class="meta">Logs: {}</p>"#, logs.join("; "));
    }
    out.push_str(&transcript(test));
    out.push_str("</details>");
    out
}

pub fn render(manifest: &LtmManifest, results: &RunResults, timings: &[TestTiming]) -> String {
    let mut out = page_head(&format!("agentwall LTM report · {}", manifest.run_id), "");
    let _ = write!(
        out,
        r#"<h1>Long-term-memory benchmark</h1><p class="meta">run {} · judge {} · {}</p>"#,
        escape(&manifest.run_id),
        escape(&manifest.judge_version),
        manifest.created_at.format("%Y-%m-%d %H:%M UTC")
    );
    let caps = &manifest.details.capabilities;
    let yes = |b: bool| if b { "yes" } else { "no" };
    let _ = write!(
        out,
        r#"{}<p><span class="big">{}</span> overall score (mean of applicable test types){}</p><p id="noise-floor">{}</p>
<table><tr><th>target</th><td>{}</td></tr><tr><th>model</th><td>{}</td></tr>
<tr><th>API · history mode</th><td>{} · {} ({})</td></tr>
<tr><th>phrasing</th><td>{} ({})</td></tr>
<tr><th>seed · trials · span</th><td>{} · {} per type · {} tokens (cl100k)</td></tr>
<tr><th>capabilities</th><td>reset: {} · inject: {} · memory view: {} · X-Mock-Time: {}</td></tr></table>"#,
        results
            .diagnosis
            .iter()
            .chain(&one_at_a_time(timings))
            .map(|note| format!(
                r#"<p class="warn"><strong>The judge may be the problem:</strong> {}</p>"#,
                escape(note)
            ))
            .collect::<String>(),
        pct(results.overall),
        results.overall_ci.map_or(String::new(), |(lo, hi)| format!(
            "; 95 % CI {}–{}",
            pct(Some(lo)),
            pct(Some(hi))
        )),
        crate::suites::compare::run_noise_floor::<super::Ltm>(results)
            .map_or(String::new(), |n| escape(&n.sentence("test"))),
        escape(&manifest.details.target.endpoint),
        escape(&caps.model),
        results.api.title(),
        results.history,
        results.history.meaning(),
        results.phrasing,
        results.phrasing.meaning(),
        results.seed,
        results.trials,
        results.span_tokens,
        yes(caps.reset),
        yes(caps.inject),
        yes(caps.memory_view),
        yes(caps.mock_time),
    );
    let _ = write!(
        out,
        "<details><summary>Probe evidence</summary><ul>{}</ul></details>",
        caps.notes
            .iter()
            .map(|n| format!("<li>{}</li>", escape(n)))
            .collect::<String>()
    );
    if let Some(g) = &results.grader {
        let _ = write!(out, r#"<p class="meta">{}</p>"#, escape(&grader_line(g)));
    }
    out.push_str("<h2>Scores per test type</h2>");
    out.push_str(&score_chart(&results.types));
    out.push_str("<table><tr><th>type</th><th>description</th><th>passed</th><th>score</th><th>95% CI (Wilson)</th><th>note</th></tr>");
    for t in &results.types {
        let ci = match (t.ci_low, t.ci_high) {
            (Some(lo), Some(hi)) => format!("{}–{}", pct(Some(lo)), pct(Some(hi))),
            _ => "–".to_owned(),
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}/{}</td><td>{}</td><td>{ci}</td><td>{}</td></tr>",
            t.test_type,
            escape(&t.title),
            t.passed,
            t.applicable,
            pct(t.mean),
            escape(t.not_applicable_reason.as_deref().unwrap_or(""))
        );
    }
    out.push_str("</table>");
    if let Some(chart) = results
        .types
        .iter()
        .find(|t| t.test_type == TestType::Retention)
        .and_then(retention_chart)
    {
        out.push_str("<h2>Retention curve</h2>");
        out.push_str(&chart);
    }
    if let Some(l) = latency(timings) {
        let _ = write!(
            out,
            "<h2>Latency</h2><p>{} chat turns: p50 {} ms · p95 {} ms · max {} ms · {} turn(s) retried after 429 (wall clock; not part of the scores)</p>",
            l.turns, l.p50_ms, l.p95_ms, l.max_ms, l.retried
        );
    }
    out.push_str("<h2>Every test and conversation</h2>");
    for test in &results.tests {
        out.push_str(&test_section(test));
    }
    out.push_str("</body></html>\n");
    out
}
