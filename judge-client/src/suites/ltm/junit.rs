//! `junit.xml`: one testsuite per test type, one testcase per test; not applicable as skipped,
//! a failed test as a failure carrying its score or its failure class, a judge error as an error.

use std::fmt::Write;

use super::results::{RunResults, TestResult, TestStatus};
use crate::report::escape::escape;

fn failure_text(test: &TestResult) -> (String, String, String) {
    if let Some(f) = &test.failure {
        return (
            format!("{}: {}", f.kind, f.message),
            f.kind.as_str().to_owned(),
            f.message.clone(),
        );
    }
    let details: Vec<String> = test
        .checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| format!("{} [{}]: {}", c.label, c.session, c.detail))
        .collect();
    (
        format!("score {:.2}", test.score.unwrap_or(0.0)),
        "failed".to_owned(),
        details.join("\n"),
    )
}

pub fn render(results: &RunResults) -> String {
    let count = |s: TestStatus| results.tests.iter().filter(|t| t.status == s).count();
    let mut out = String::new();
    let _ = writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        out,
        r#"<testsuites name="agentwall-ltm" tests="{}" failures="{}" errors="{}" skipped="{}">"#,
        results.tests.len(),
        count(TestStatus::Failed),
        count(TestStatus::Error),
        count(TestStatus::NotApplicable) + count(TestStatus::NotGradable)
    );
    for summary in &results.types {
        let tests: Vec<&TestResult> = results
            .tests
            .iter()
            .filter(|t| t.test_type == summary.test_type)
            .collect();
        let _ = writeln!(
            out,
            r#"  <testsuite name="ltm.{}" tests="{}" failures="{}" errors="{}" skipped="{}">"#,
            summary.test_type,
            tests.len(),
            summary.failed,
            summary.errors,
            summary.tests - summary.applicable
        );
        for test in tests {
            let _ = write!(
                out,
                r#"    <testcase classname="ltm.{}" name="{}""#,
                test.test_type,
                escape(&test.id)
            );
            match test.status {
                TestStatus::Passed => {
                    let _ = writeln!(out, "/>");
                }
                TestStatus::NotApplicable | TestStatus::NotGradable => {
                    let _ = writeln!(out, ">");
                    let prefix = if test.status == TestStatus::NotApplicable {
                        "not applicable: "
                    } else {
                        ""
                    };
                    let _ = writeln!(
                        out,
                        r#"      <skipped message="{prefix}{}"/>"#,
                        escape(test.reason.as_deref().unwrap_or(""))
                    );
                    let _ = writeln!(out, "    </testcase>");
                }
                TestStatus::Failed | TestStatus::Error => {
                    let tag = if test.status == TestStatus::Error {
                        "error"
                    } else {
                        "failure"
                    };
                    let (message, kind, body) = failure_text(test);
                    let _ = writeln!(out, ">");
                    let _ = writeln!(
                        out,
                        r#"      <{tag} message="{}" type="{}">{}</{tag}>"#,
                        escape(&message),
                        escape(&kind),
                        escape(&body)
                    );
                    let _ = writeln!(out, "    </testcase>");
                }
            }
        }
        let _ = writeln!(out, "  </testsuite>");
    }
    let _ = writeln!(out, "</testsuites>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_control_characters() {
        assert_eq!(
            escape(r#"a<b & "c" 'd'>"#),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;"
        );
        assert_eq!(escape("x\u{1}y\nz"), "xy\nz");
    }
}
