//! The human and CI views of a `judge apps` run: `junit.xml` (one testcase per scenario) and a
//! self-contained `report.html` (inline CSS and SVG, nothing fetched): the summary, a pass^k chart,
//! and per scenario the failing trials with their state diff, collateral damage, audit log and
//! conversation.

use std::fmt::Write;

use protocol::openai::{ChatMessage, Role};
use serde_json::Value;

use super::runner::{ScenarioOutcome, TrialOutcome, TrialStatus};
use super::suite::{AppsManifest, AppsResults};
use crate::report::chart::{Bar, BarChart, Scale, colour};
use crate::report::escape::escape;
use crate::report::html::{page_head, pct};

/// One testsuite, one testcase per scenario: passed when every trial passed; a failure lists why
/// each other trial did not; a scenario no trial of which could be graded is an error.
pub fn junit(results: &AppsResults) -> String {
    let failures = results
        .scenarios
        .iter()
        .filter(|s| s.graded > 0 && !s.all_passed)
        .count();
    let errors = results.scenarios.iter().filter(|s| s.graded == 0).count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        r#"<testsuites name="agentwall-apps" tests="{n}" failures="{failures}" errors="{errors}">"#,
        n = results.scenarios.len()
    );
    let _ = writeln!(
        out,
        r#"  <testsuite name="apps" tests="{n}" failures="{failures}" errors="{errors}">"#,
        n = results.scenarios.len()
    );
    for s in &results.scenarios {
        let _ = write!(
            out,
            r#"    <testcase classname="apps" name="{}">"#,
            escape(&s.id)
        );
        let why = escape(&s.why.join("\n"));
        if s.graded == 0 {
            let _ = write!(
                out,
                r#"<error message="no trial could be graded">{why}</error>"#
            );
        } else if !s.all_passed {
            let _ = write!(
                out,
                r#"<failure message="{} of {} trials passed (pass^k {})">{why}</failure>"#,
                s.passed,
                s.trials,
                pct(s.pass_hat_k)
            );
        }
        out.push_str("</testcase>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// What the apps report adds to the shared stylesheet: tool and system turns.
const EXTRA_STYLE: &str =
    ".tool{background:#fff7e6}.system{background:#f6f6f6;color:#555}code{font-size:.9em}";

fn status_class(status: TrialStatus) -> &'static str {
    match status {
        TrialStatus::Passed => "passed",
        TrialStatus::Failed => "failed",
        TrialStatus::Error | TrialStatus::NotApplicable => "error",
    }
}

/// Horizontal bars of pass^k per scenario, green when every trial passed.
fn pass_chart(results: &AppsResults) -> String {
    let mut chart = BarChart::new(
        "pass^k per scenario",
        Scale::Fraction(&[0.0, 0.5, 1.0]),
        colour::PASSED,
    );
    (chart.label_width, chart.width, chart.bar_height) = (230.0, 440.0, 16.0);
    for s in &results.scenarios {
        let fill = if s.all_passed {
            colour::PASSED
        } else {
            colour::FAILED
        };
        chart.row(
            s.id.as_str(),
            vec![Bar::new(Some(s.pass_hat_k.unwrap_or(0.0)), pct(s.pass_hat_k)).colour(fill)],
        );
    }
    chart.render()
}

fn json_cell(value: Option<&Value>) -> String {
    value.map_or_else(
        || "<em>missing</em>".to_owned(),
        |v| format!("<code>{}</code>", escape(&v.to_string())),
    )
}

fn trial_section(out: &mut String, trial: &TrialOutcome) {
    let _ = write!(
        out,
        r#"<details><summary><span class="{}">trial {} {:?}</span> <span class="meta">seed {}, session {}</span> — {}</summary>"#,
        status_class(trial.status),
        trial.trial,
        trial.status,
        trial.seed,
        escape(&trial.session_id),
        escape(&trial.why())
    );
    if let Some(grade) = &trial.grade {
        if !grade.mismatches.is_empty() {
            out.push_str("<h4>State diff (expected vs final)</h4><table><tr><th>path</th><th>expected</th><th>final</th></tr>");
            for m in &grade.mismatches {
                let _ = write!(
                    out,
                    "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                    escape(&m.path),
                    json_cell(Some(&m.expected)),
                    json_cell(m.actual.as_ref())
                );
            }
            out.push_str("</table>");
        }
        if !grade.collateral.is_empty() {
            out.push_str("<h4>Collateral changes</h4><table><tr><th>path</th><th>before</th><th>after</th></tr>");
            for c in &grade.collateral {
                let _ = write!(
                    out,
                    "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                    escape(&c.path),
                    json_cell(c.before.as_ref()),
                    json_cell(c.after.as_ref())
                );
            }
            out.push_str("</table>");
        }
        let _ = write!(
            out,
            r#"<p class="meta">final state hash <code>{}</code></p>"#,
            escape(&grade.state_hash)
        );
    }
    out.push_str("<h4>Audit log</h4><table><tr><th>#</th><th>step</th><th>agent</th><th>action</th><th>params</th><th>result</th></tr>");
    for e in trial.audit.entries() {
        let result = match (&e.error, &e.result) {
            (Some(error), _) => format!(r#"<span class="failed">{}</span>"#, escape(error)),
            (None, Some(value)) => format!(
                r#"<span class="passed">ok</span> {}"#,
                json_cell(Some(value))
            ),
            (None, None) => r#"<span class="passed">ok</span>"#.to_owned(),
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}.{}</td><td>{}</td><td>{result}</td></tr>",
            e.seq,
            e.step,
            escape(&e.agent),
            escape(&e.app),
            escape(&e.action),
            json_cell(Some(&e.params))
        );
    }
    out.push_str("</table><h4>Conversation</h4>");
    for message in &trial.transcript {
        conversation_turn(out, message);
    }
    out.push_str("</details>");
}

fn conversation_turn(out: &mut String, message: &ChatMessage) {
    let class = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
        _ => "system",
    };
    let mut text = message.text_content().unwrap_or_default();
    for call in message.tool_calls.iter().flatten() {
        let _ = write!(
            text,
            "\n→ {}({})",
            call.function.name, call.function.arguments
        );
    }
    let _ = write!(
        out,
        r#"<div class="turn {class}"><b>{}</b>: {}</div>"#,
        message.role.as_str(),
        escape(text.trim())
    );
}

/// The whole report page.
pub fn html(
    manifest: &AppsManifest,
    results: &AppsResults,
    outcomes: &[ScenarioOutcome],
) -> String {
    let mut out = page_head(
        &format!("agentwall apps · {}", manifest.run_id),
        EXTRA_STYLE,
    );
    let _ = write!(
        out,
        r#"<h1>Simulated applications</h1><p class="meta">run {} · judge {} · target {} · model {} · seed {} · action mode {:?} · {} API · history {}</p>"#,
        escape(&manifest.run_id),
        escape(&manifest.judge_version),
        escape(&manifest.details.target.endpoint),
        escape(&manifest.details.capabilities.model),
        results.seed,
        results.mode,
        results.api.title(),
        results.history
    );
    let _ = write!(
        out,
        r#"<p><span class="big">{}/{}</span> scenarios passed every trial · mean pass^k {}{}</p><p id="noise-floor">{}</p>"#,
        results.passed_scenarios,
        results.graded_scenarios,
        pct(results.mean_pass_hat_k),
        results
            .mean_pass_hat_k_ci
            .map_or(String::new(), |(lo, hi)| format!(
                " (95 % CI {}–{})",
                pct(Some(lo)),
                pct(Some(hi))
            )),
        crate::suites::compare::run_noise_floor::<super::Apps>(results)
            .map_or(String::new(), |n| escape(&n.sentence("scenario")))
    );
    out.push_str("<p class=\"meta\">pass^k: the chance that all k trials of a scenario pass (every trial must); pass@k: that at least one does.</p>");
    out.push_str(&pass_chart(results));
    out.push_str("<table><tr><th>scenario</th><th>goal</th><th>passed</th><th>pass^k</th><th>pass@k</th><th>why not</th></tr>");
    for s in &results.scenarios {
        let class = if s.all_passed { "passed" } else { "failed" };
        let _ = write!(
            out,
            r##"<tr><td><a href="#{id}" class="{class}">{id}</a><br><span class="meta">{}</span></td><td>{}</td><td>{}/{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"##,
            escape(&s.title),
            escape(&s.goal),
            s.passed,
            s.trials,
            pct(s.pass_hat_k),
            pct(s.pass_at_k),
            escape(&s.why.join("; ")),
            id = escape(&s.id),
        );
    }
    out.push_str("</table>");
    for outcome in outcomes {
        let _ = write!(
            out,
            r#"<h2 id="{}">{}</h2><p>{}</p>"#,
            escape(&outcome.scenario_id),
            escape(&outcome.title),
            escape(&outcome.goal)
        );
        for trial in &outcome.trials {
            trial_section(&mut out, trial);
        }
    }
    out.push_str("</body></html>\n");
    out
}
