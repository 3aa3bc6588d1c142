//! `junit.xml` and `report.html` of simulation and A/B runs, in the LTM report's style (shared
//! stylesheet and escaping from [`crate::report`]).

use std::fmt::Write;

use super::ab::AbResults;
use super::injection::EndpointMetrics;
use super::results::SimResults;
use super::runner::{Conversation, UserSource};
use crate::report::escape::escape;
use crate::report::html::page_head;

const FAILURE_CLASSES: [&str; 5] = [
    "agent_error",
    "timeout",
    "rate_limited",
    "infra_error",
    "judge_error",
];

/// One testcase per conversation: a failure when a goal was missed, an error when the
/// conversation ended on a failure.
pub fn junit(results: &SimResults) -> String {
    let mut out = String::new();
    let errors = results
        .conversations
        .iter()
        .filter(|c| FAILURE_CLASSES.contains(&c.stop_reason.as_str()))
        .count();
    let failures = results
        .conversations
        .iter()
        .filter(|c| !c.checks.goal_reached && !FAILURE_CLASSES.contains(&c.stop_reason.as_str()))
        .count();
    let _ = writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        out,
        r#"<testsuites name="agentwall-sim" tests="{}" failures="{failures}" errors="{errors}">"#,
        results.conversations.len()
    );
    let _ = writeln!(
        out,
        r#"  <testsuite name="sim" tests="{}" failures="{failures}" errors="{errors}">"#,
        results.conversations.len()
    );
    for c in &results.conversations {
        let _ = write!(
            out,
            r#"    <testcase classname="sim.{}" name="trial-{}""#,
            escape(&c.persona_id),
            c.trial
        );
        if FAILURE_CLASSES.contains(&c.stop_reason.as_str()) {
            let message = c
                .failure
                .as_ref()
                .map_or(String::new(), |f| f.message.clone());
            let _ = writeln!(
                out,
                ">\n      <error type=\"{}\" message=\"{}\"/>\n    </testcase>",
                escape(&c.stop_reason),
                escape(&message)
            );
        } else if !c.checks.goal_reached {
            let _ = writeln!(
                out,
                ">\n      <failure type=\"goal_missed\" message=\"goals reached {}/{}\"/>\n    </testcase>",
                c.checks.goals_reached.len(),
                c.checks.goals_total
            );
        } else {
            let _ = writeln!(out, "/>");
        }
    }
    let _ = writeln!(out, "  </testsuite>\n</testsuites>");
    out
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("–".to_owned(), |v| format!("{v:.digits$}"))
}

/// A share as a whole percentage; "n/a" when nothing could be scored.
fn percent(v: Option<f64>) -> String {
    v.map_or("n/a".to_owned(), |v| format!("{:.0}%", v * 100.0))
}

fn page(title: &str, body: &str) -> String {
    format!("{}\n{body}</body></html>\n", page_head(title, ""))
}

fn summary_table(out: &mut String, r: &SimResults) {
    let s = &r.summary;
    let _ = writeln!(
        out,
        "<table><tr><th>conversations</th><th>goal rate (95% CI)</th><th>mean score (95% CI)</th><th>turns to resolution</th><th>safety hits</th><th>refusals</th><th>empty</th><th>overlong</th><th>repeated</th><th>fallback turns</th></tr>"
    );
    let goal_ci = s
        .goal_rate_ci
        .map_or(String::new(), |(lo, hi)| format!(" ({lo:.2}–{hi:.2})"));
    let ci = s
        .score_ci
        .map_or(String::new(), |(lo, hi)| format!(" ({lo:.2}–{hi:.2})"));
    let _ = writeln!(
        out,
        "<tr><td>{}</td><td>{}{goal_ci}</td><td>{}{ci}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr></table>",
        s.conversations,
        percent(s.goal_rate),
        opt(s.mean_score, 2),
        opt(s.mean_turns_to_resolution, 1),
        s.safety_hits,
        s.refusals,
        s.empty_replies,
        s.overlong_replies,
        s.repeated_replies,
        s.fallback_turns
    );
    let reasons: Vec<String> = s
        .stop_reasons
        .iter()
        .map(|(k, v)| format!("{} × {v}", escape(k)))
        .collect();
    let _ = writeln!(
        out,
        "<p class=\"meta\">stop reasons: {}</p>",
        reasons.join(", ")
    );
    if let Some(m) = &s.mean_rubric {
        let _ = writeln!(
            out,
            "<p class=\"meta\">LLM judge's mean rubric (0–1): persona consistency {:.2}, coherence {:.2}, instruction following {:.2}</p>",
            m.persona_consistency, m.coherence, m.instruction_following
        );
    }
    if s.rubric_judge_errors > 0 {
        let _ = writeln!(
            out,
            "<p class=\"meta\">the LLM judge could not judge {} conversation(s) (judge_error): no rubric for them, and no score</p>",
            s.rubric_judge_errors
        );
    }
    if !s.excluded.is_empty() || !s.simulator_breaches.is_empty() {
        let list = |m: &std::collections::BTreeMap<String, usize>| {
            m.iter()
                .map(|(k, v)| format!("{} × {v}", escape(k)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "<p class=\"meta\">scored: {} of {} conversations; left out of the agent's scores: {}; simulated user broke its role (rule × conversations): {}</p>",
            s.scored_conversations,
            s.conversations,
            if s.excluded.is_empty() {
                "none".to_owned()
            } else {
                list(&s.excluded)
            },
            if s.simulator_breaches.is_empty() {
                "never".to_owned()
            } else {
                list(&s.simulator_breaches)
            },
        );
    }
}

fn conversation_table(out: &mut String, r: &SimResults, prefix: &str) {
    let _ = writeln!(
        out,
        "<table><tr><th>#</th><th>persona</th><th>trial</th><th>rounds</th><th>stop</th><th>goals</th><th>score</th><th>resolution</th><th>fallbacks</th><th>files</th></tr>"
    );
    for c in &r.conversations {
        let class = if c.checks.goal_reached {
            "passed"
        } else {
            "failed"
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{class}\">{}/{}</td><td>{:.2}</td><td>{}</td><td>{}</td><td><a href=\"{prefix}{}\">log</a> · <a href=\"{prefix}{}\">transcript</a></td></tr>",
            c.number,
            escape(&c.persona_id),
            c.trial,
            c.rounds,
            escape(&c.stop_reason),
            c.checks.goals_reached.len(),
            c.checks.goals_total,
            c.checks.score,
            c.checks
                .turns_to_resolution
                .map_or("–".to_owned(), |t| t.to_string()),
            c.fallback_turns,
            escape(&c.log_file),
            escape(&c.transcript_file)
        );
    }
    let _ = writeln!(out, "</table>");
}

/// The report of one simulation run.
pub fn html(
    r: &SimResults,
    conversations: &[Conversation],
    metrics: &[EndpointMetrics],
    warnings: &[String],
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<h1>Persona simulation</h1><p class=\"meta\">seed {} · model {} · {} user · max {} turns · {} API · history {} · config {}</p>",
        r.seed,
        escape(&r.target_model),
        escape(&r.simulator),
        r.max_turns,
        r.api.title(),
        r.history,
        escape(&r.config_hash)
    );
    for note in warnings {
        let _ = writeln!(
            out,
            r#"<p class="warn"><strong>The judge may be the problem:</strong> {}</p>"#,
            escape(note)
        );
    }
    summary_table(&mut out, r);
    let _ = writeln!(out, "<h2>Conversations</h2>");
    conversation_table(&mut out, r, "");
    if !metrics.is_empty() {
        let _ = writeln!(
            out,
            "<h2>Injected endpoints</h2><table><tr><th>agent</th><th>calls</th><th>p50 ms</th><th>p99 ms</th><th>error rate</th><th>timeout rate</th><th>429</th><th>invalid</th><th>rejected (open)</th><th>circuit</th><th>transitions</th></tr>"
        );
        for m in metrics {
            let transitions: Vec<String> = m
                .transitions
                .iter()
                .map(|t| format!("{}→{} @{}", t.from, t.to, t.call))
                .collect();
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&m.agent_id),
                m.calls,
                m.latency_p50_ms.map_or("–".into(), |v| v.to_string()),
                m.latency_p99_ms.map_or("–".into(), |v| v.to_string()),
                m.error_rate,
                m.timeout_rate,
                m.rate_limited,
                m.invalid_responses,
                m.circuit_rejections,
                escape(&m.circuit_state),
                escape(&transitions.join(", "))
            );
        }
        let _ = writeln!(out, "</table>");
    }
    let _ = writeln!(out, "<h2>Transcripts</h2>");
    for c in conversations {
        let _ = writeln!(
            out,
            "<details><summary>#{} {} (trial {}) · {}</summary>",
            c.number,
            escape(&c.persona_id),
            c.trial,
            escape(&c.stop_reason)
        );
        for round in &c.rounds {
            let mark = match (&round.user_source, &round.fallback) {
                (UserSource::Fallback, Some(f)) => format!(
                    " fail\" title=\"fallback {} after {}",
                    f.strategy.as_str(),
                    f.kind
                ),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "<div class=\"turn user{mark}\">{}</div>",
                escape(&round.user)
            );
            if let Some(a) = &round.agent {
                let _ = writeln!(out, "<div class=\"turn assistant\">{}</div>", escape(a));
            }
            if let Some(f) = &round.agent_failure {
                let _ = writeln!(
                    out,
                    "<div class=\"turn assistant fail\">[{}] {}</div>",
                    f.kind,
                    escape(&f.message)
                );
            }
        }
        let _ = writeln!(out, "</details>");
    }
    page("agentwall persona simulation", &out)
}

/// The report of an A/B run.
pub fn ab_html(ab: &AbResults, a: &SimResults, b: &SimResults) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<h1>A/B comparison</h1><p class=\"meta\">A = {} · B = {}</p>",
        escape(&ab.endpoint_a),
        escape(&ab.endpoint_b)
    );
    let t = &ab.test;
    let _ = writeln!(
        out,
        "<table><tr><th>pairs</th><th>A wins</th><th>B wins</th><th>ties</th><th>sign test p</th><th>A's share of decisive pairs (95% Wilson)</th><th>mean score A−B (95% CI)</th><th>goal rate A</th><th>goal rate B</th><th>position-inconsistent</th><th>left out: not scorable</th><th>left out: judge_error</th></tr><tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"big\">{:.6}</td><td>{}{}</td><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr></table>",
        t.pairs,
        t.wins_a,
        t.wins_b,
        t.ties,
        t.sign_test_p,
        opt(t.win_share_a, 2),
        t.win_share_ci
            .map_or(String::new(), |(lo, hi)| format!(" ({lo:.2}–{hi:.2})")),
        opt(t.mean_difference, 2),
        t.difference_ci
            .map_or(String::new(), |(lo, hi)| format!(" ({lo:.2}–{hi:.2})")),
        percent(ab.goal_rate_a),
        percent(ab.goal_rate_b),
        ab.position_inconsistent,
        ab.excluded_pairs,
        ab.judge_error_pairs
    );
    let _ = writeln!(
        out,
        "<h2>Bradley-Terry ratings (Elo scale, 95% bootstrap CI)</h2><table><tr><th>agent</th><th>rating</th><th>CI</th></tr>"
    );
    for r in &ab.ratings {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{:.0}</td><td>{:.0}–{:.0}</td></tr>",
            escape(&r.player),
            r.rating,
            r.ci_low,
            r.ci_high
        );
    }
    let _ = writeln!(
        out,
        "</table><h2>Pairs</h2><table><tr><th>persona</th><th>trial</th><th>score A</th><th>score B</th><th>preference</th><th>decided by</th></tr>"
    );
    for p in &ab.pairs {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{:?}</td><td>{}</td></tr>",
            escape(&p.persona_id),
            p.trial,
            p.score_a,
            p.score_b,
            p.preference,
            escape(&p.decided_by)
        );
    }
    let _ = writeln!(out, "</table><h2>Run A</h2>");
    summary_table(&mut out, a);
    conversation_table(&mut out, a, "a/");
    let _ = writeln!(out, "<h2>Run B</h2>");
    summary_table(&mut out, b);
    conversation_table(&mut out, b, "b/");
    page("agentwall A/B comparison", &out)
}
