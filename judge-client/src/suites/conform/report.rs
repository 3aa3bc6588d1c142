//! The CI and human views of a `judge conform` run: `junit.xml` (one testsuite per API, one
//! testcase per check; not applicable is skipped) and a self-contained `report.html` (a summary
//! per API, then every failure with the exchanges it captured).

use std::fmt::Write;

use super::runner::ConformManifest;
use super::{Api, CheckResult, CheckStatus, ConformResults, Exchange};
use crate::report::escape::escape;
use crate::report::html::page_head;

pub fn junit(results: &ConformResults) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        r#"<testsuites name="agentwall-conform" tests="{}" failures="{}" errors="0" skipped="{}">"#,
        results.checks.len(),
        results.failed,
        results.not_applicable
    );
    for summary in &results.apis {
        let checks: Vec<&CheckResult> = results
            .checks
            .iter()
            .filter(|c| c.api == summary.api)
            .collect();
        let _ = writeln!(
            out,
            r#"  <testsuite name="conform.{}" tests="{}" failures="{}" errors="0" skipped="{}">"#,
            summary.api.as_str(),
            checks.len(),
            summary.failed,
            summary.not_applicable
        );
        for check in checks {
            let _ = write!(
                out,
                r#"    <testcase classname="conform.{}" name="{}">"#,
                check.api.as_str(),
                escape(&check.name)
            );
            let reason = escape(check.reason.as_deref().unwrap_or(""));
            match check.status {
                CheckStatus::Pass => {}
                CheckStatus::NotApplicable => {
                    let _ = write!(out, r#"<skipped message="not applicable: {reason}"/>"#);
                }
                CheckStatus::Fail => {
                    let _ = write!(
                        out,
                        r#"<failure message="{reason}" type="nonconformant">{}</failure>"#,
                        escape(&exchanges_text(&check.exchanges))
                    );
                }
            }
            out.push_str("</testcase>\n");
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

fn exchanges_text(exchanges: &[Exchange]) -> String {
    let mut out = String::new();
    for e in exchanges {
        let _ = writeln!(out, "{} {}", e.method, e.path);
        if let Some(body) = &e.request_body {
            let _ = writeln!(out, "{body}");
        }
        match (e.status, &e.error) {
            (Some(status), _) => {
                let _ = writeln!(
                    out,
                    "-> HTTP {status} {}",
                    e.content_type.as_deref().unwrap_or("")
                );
            }
            (None, Some(error)) => {
                let _ = writeln!(out, "-> {error}");
            }
            (None, None) => {}
        }
        if let Some(body) = &e.response_body {
            let _ = writeln!(out, "{body}");
        }
    }
    out
}

const EXTRA_STYLE: &str = "pre{white-space:pre-wrap;background:#f6f6f6;padding:.5em;border-radius:4px;max-height:24em;overflow:auto}
.pass{color:#17803d}.fail{color:#b42318}";

pub fn html(manifest: &ConformManifest, results: &ConformResults) -> String {
    let mut out = page_head(
        &format!("agentwall conform · {}", manifest.run_id),
        EXTRA_STYLE,
    );
    let _ = write!(
        out,
        r#"<h1>OpenAI API conformance</h1><p class="meta">run {} · judge {} · target {} · model {} · {}</p>"#,
        escape(&manifest.run_id),
        escape(&manifest.judge_version),
        escape(&results.endpoint),
        escape(&results.model),
        manifest.created_at.format("%Y-%m-%d %H:%M UTC")
    );
    let _ = write!(
        out,
        r#"<p><span class="big">{}/{}</span> applicable checks pass · {} not applicable</p>"#,
        results.passed,
        results.passed + results.failed,
        results.not_applicable
    );
    out.push_str("<table><tr><th>API</th><th>served</th><th>pass</th><th>fail</th><th>not applicable</th></tr>");
    for s in &results.apis {
        let _ = write!(
            out,
            r#"<tr><td>{}</td><td>{}</td><td class="pass">{}</td><td class="fail">{}</td><td>{}</td></tr>"#,
            s.api.title(),
            if s.served { "yes" } else { "no (404)" },
            s.passed,
            s.failed,
            s.not_applicable
        );
    }
    out.push_str("</table>");
    for api in [Api::Chat, Api::Responses, Api::A2a] {
        let checks: Vec<&CheckResult> = results.checks.iter().filter(|c| c.api == api).collect();
        if checks.is_empty() {
            continue;
        }
        let _ = write!(out, "<h2>{}</h2>", api.title());
        if let Some(summary) = results.apis.iter().find(|s| s.api == api && !s.served) {
            let reason = checks
                .first()
                .and_then(|c| c.reason.as_deref())
                .unwrap_or("");
            let _ = write!(
                out,
                r#"<p class="fail">Not served: {}. All {} checks of this API fail with this reason.</p>"#,
                escape(reason),
                summary.failed
            );
            if let Some(first) = checks.first() {
                exchanges_html(&mut out, &first.exchanges);
            }
            continue;
        }
        out.push_str(
            "<table><tr><th>check</th><th>status</th><th>requires</th><th>reason</th></tr>",
        );
        for c in &checks {
            let _ = write!(
                out,
                r##"<tr><td><a href="#{name}">{name}</a></td><td class="{status}">{status}</td><td>{}</td><td>{}</td></tr>"##,
                escape(&c.title),
                escape(c.reason.as_deref().unwrap_or("")),
                name = escape(&c.name),
                status = c.status.as_str(),
            );
        }
        out.push_str("</table>");
        for c in checks.iter().filter(|c| c.status != CheckStatus::Pass) {
            let _ = write!(
                out,
                r#"<details id="{name}" {open}><summary><b>{name}</b> <span class="{status}">{status}</span>: {}</summary>"#,
                escape(c.reason.as_deref().unwrap_or("")),
                name = escape(&c.name),
                status = c.status.as_str(),
                open = if c.status == CheckStatus::Fail {
                    "open"
                } else {
                    ""
                },
            );
            exchanges_html(&mut out, &c.exchanges);
            out.push_str("</details>");
        }
    }
    out.push_str("</body></html>\n");
    out
}

fn exchanges_html(out: &mut String, exchanges: &[Exchange]) {
    for e in exchanges {
        let answer = match (e.status, &e.error) {
            (Some(status), _) => {
                format!("HTTP {status} {}", e.content_type.as_deref().unwrap_or(""))
            }
            (None, Some(error)) => error.clone(),
            (None, None) => String::new(),
        };
        let _ = write!(
            out,
            r#"<p class="meta">{} {} → {}</p>"#,
            escape(&e.method),
            escape(&e.path),
            escape(&answer)
        );
        if let Some(body) = &e.request_body {
            let _ = write!(out, "<pre>{}</pre>", escape(body));
        }
        if let Some(body) = &e.response_body {
            let _ = write!(out, "<pre>{}</pre>", escape(body));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::conform::checks::{Verdict, result};

    #[test]
    fn junit_has_one_testcase_per_check_with_skips_and_escaped_failures() {
        let exchange = Exchange {
            method: "POST".into(),
            path: "/v1/responses".into(),
            request_body: Some("{\"input\":\"<hi>\"}".into()),
            status: Some(500),
            content_type: Some("application/json".into()),
            response_body: Some("oops & more".into()),
            error: None,
        };
        let checks = vec![
            result("chat.json_shape", Verdict::Pass, &[&exchange]),
            result(
                "chat.tool_call",
                Verdict::NotApplicable("no call".into()),
                &[&exchange],
            ),
            result(
                "responses.json_shape",
                Verdict::Fail("status <500>".into()),
                &[&exchange],
            ),
        ];
        let results = ConformResults::new(
            "http://x".into(),
            "m".into(),
            &[Api::Chat, Api::Responses],
            checks,
        );
        assert_eq!(
            (results.passed, results.failed, results.not_applicable),
            (1, 1, 1)
        );
        let xml = junit(&results);
        assert_eq!(xml.matches("<testcase ").count(), 3);
        assert!(
            xml.contains(r#"<skipped message="not applicable: no call"/>"#),
            "{xml}"
        );
        assert!(
            xml.contains(r#"<failure message="status &lt;500&gt;""#),
            "{xml}"
        );
        assert!(xml.contains("oops &amp; more"), "{xml}");
        assert!(xml.contains(r#"<testsuite name="conform.responses" tests="1" failures="1""#));
    }
}
