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
use crate::report::html::{escape, page_head, pct};

/// Horizontal bars of per-type mean scores with 95 % interval whiskers.
fn score_chart(types: &[TypeSummary]) -> String {
    let (left, width, row) = (190.0, 480.0, 26.0);
    let height = row * types.len() as f64 + 30.0;
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{height}" role="img" aria-label="Score per test type">"#,
        left + width + 60.0
    );
    for tick in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let x = left + tick * width;
        let _ = write!(
            svg,
            r##"<line x1="{x}" y1="0" x2="{x}" y2="{}" stroke="#ddd"/><text x="{x}" y="{}" font-size="11" text-anchor="middle">{:.0}%</text>"##,
            height - 20.0,
            height - 6.0,
            tick * 100.0
        );
    }
    for (i, t) in types.iter().enumerate() {
        let y = i as f64 * row + 4.0;
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" font-size="12" text-anchor="end">{}</text>"#,
            left - 8.0,
            y + 14.0,
            escape(t.test_type.name())
        );
        match t.mean {
            Some(mean) => {
                let _ = write!(
                    svg,
                    r##"<rect x="{left}" y="{y}" width="{:.1}" height="18" fill="#3b82f6"/><text x="{:.1}" y="{}" font-size="11">{}</text>"##,
                    mean * width,
                    left + width + 6.0,
                    y + 14.0,
                    pct(Some(mean))
                );
                if let (Some(lo), Some(hi)) = (t.ci_low, t.ci_high) {
                    let _ = write!(
                        svg,
                        r##"<line x1="{:.1}" y1="{}" x2="{:.1}" y2="{}" stroke="#111" stroke-width="1.5"/>"##,
                        left + lo * width,
                        y + 9.0,
                        left + hi * width,
                        y + 9.0
                    );
                }
            }
            None => {
                let _ = write!(
                    svg,
                    r##"<text x="{}" y="{}" font-size="11" fill="#777">not applicable</text>"##,
                    left + 4.0,
                    y + 14.0
                );
            }
        }
    }
    svg.push_str("</svg>");
    svg
}

/// The retention curve: mean recall per horizon.
fn retention_chart(summary: &TypeSummary) -> Option<String> {
    let points: Vec<(String, f64)> = summary
        .checks
        .iter()
        .map(|c| (c.label.clone(), c.mean))
        .collect();
    if points.is_empty() {
        return None;
    }
    let (left, width, top, height) = (50.0, 420.0, 10.0, 160.0);
    let step = width / (points.len().max(2) - 1) as f64;
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" role="img" aria-label="Retention curve">"#,
        left + width + 40.0,
        top + height + 40.0
    );
    for tick in [0.0, 0.5, 1.0] {
        let y = top + (1.0 - tick) * height;
        let _ = write!(
            svg,
            r##"<line x1="{left}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" font-size="11" text-anchor="end">{:.0}%</text>"##,
            left + width,
            left - 6.0,
            y + 4.0,
            tick * 100.0
        );
    }
    let coords: Vec<(f64, f64)> = points
        .iter()
        .enumerate()
        .map(|(i, (_, v))| (left + i as f64 * step, top + (1.0 - v) * height))
        .collect();
    let path: Vec<String> = coords
        .iter()
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect();
    let _ = write!(
        svg,
        r##"<polyline points="{}" fill="none" stroke="#3b82f6" stroke-width="2"/>"##,
        path.join(" ")
    );
    for ((x, y), (label, _)) in coords.iter().zip(&points) {
        let _ = write!(
            svg,
            r##"<circle cx="{x:.1}" cy="{y:.1}" r="4" fill="#3b82f6"/><text x="{x:.1}" y="{}" font-size="11" text-anchor="middle">{}</text>"##,
            top + height + 18.0,
            escape(label)
        );
    }
    svg.push_str("</svg>");
    Some(svg)
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
        let _ = write!(out, "<p>Not applicable: {}</p>", escape(reason));
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
    if !test.sessions.is_empty() && test.status != TestStatus::NotApplicable {
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
        r#"{}<p><span class="big">{}</span> overall score (mean of applicable test types)</p>
<table><tr><th>target</th><td>{}</td></tr><tr><th>model</th><td>{}</td></tr>
<tr><th>history mode</th><td>{} ({})</td></tr>
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
        escape(&manifest.details.target.endpoint),
        escape(&caps.model),
        results.history,
        match results.history {
            crate::suites::HistoryMode::New =>
                "only the new user turn is sent; memory must come from the agent",
            crate::suites::HistoryMode::Full => "the whole conversation is sent with every turn",
        },
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
    out.push_str("<table><tr><th>type</th><th>description</th><th>passed</th><th>score</th><th>95% CI</th><th>note</th></tr>");
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
