//! The LLM grader (`judge ltm --grader-endpoint`): a model grades every reached check, PASS or
//! FAIL, from the question, the reply and what a correct reply does ([`Scorer::expectation`]).
//!
//! - Where the rules left a check undecided, the grader settles it: PASS keeps the rules'
//!   score, FAIL makes it 0.
//! - Where the rules decided, the grader's answer changes nothing; the two are compared, and the
//!   report gives their agreement ([`GraderAgreement`]) so a reader can tell how far either is
//!   to be trusted.
//! - A grader answer that stays unusable, or a grader that cannot be reached, is a
//!   `judge_error` ([`crate::suites::model_judge`]): an undecided check keeps the rules' lenient
//!   verdict, and the failure is counted apart, never as a grade.
//! - A check only a model can decide ([`Scorer::Judged`], the held-out phrasing's `episodic`)
//!   has no verdict of the rules: PASS scores 1, FAIL 0, and a grader failure stops the test as
//!   a `judge_error` ([`ungraded`]). A run without a grader does not play such tests: they are
//!   `not_gradable`.

use serde::{Deserialize, Serialize};

use super::results::{CheckResult, TestResult};
use super::scoring::Scorer;
use crate::endpoint::{Credentials, Failure, TargetClient, TargetSettings};
use crate::suites::model_judge::ModelJudge;

/// What the grader said of one check: `passed`, or the failure that left it without a grade.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grade {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
}

pub struct Grader {
    judge: ModelJudge,
}

/// PASS or FAIL, alone (surrounding punctuation and case aside).
fn parse_grade(text: &str) -> Result<bool, String> {
    match text
        .trim()
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_uppercase()
        .as_str()
    {
        "PASS" => Ok(true),
        "FAIL" => Ok(false),
        _ => Err("not PASS or FAIL".to_owned()),
    }
}

impl Grader {
    pub fn new(settings: TargetSettings, credentials: Credentials, seed: u64) -> Self {
        Self {
            judge: ModelJudge::new(
                TargetClient::new(settings, credentials),
                seed,
                "You grade replies of an AI assistant that has a long-term memory of its user. You are strict and literal.",
            ),
        }
    }

    /// Grades the reply to `question`; `label` names the check (its session derives from it).
    pub async fn grade(&self, label: &str, question: &str, reply: &str, scorer: &Scorer) -> Grade {
        let prompt = format!(
            "The user said:\n{question}\n\nThe assistant replied:\n{reply}\n\nA correct reply: {}\n\nIs the assistant's reply correct? Answer with exactly one word: PASS or FAIL.",
            scorer.expectation()
        );
        match self
            .judge
            .ask(&format!("grade/{label}"), prompt, parse_grade)
            .await
        {
            Ok(passed) => Grade {
                passed: Some(passed),
                failure: None,
            },
            Err(e) => Grade {
                passed: None,
                failure: Some(e.into()),
            },
        }
    }
}

/// Applies `grade` to a check: recorded always; it settles the check only when the rules left it
/// undecided. A check only the grader can decide ([`Scorer::Judged`]) scores 1 on PASS.
pub fn apply(check: &mut CheckResult, grade: Grade) {
    if check.undecided
        && let Some(passed) = grade.passed
    {
        check.passed = passed;
        if !passed {
            check.score = 0.0;
        } else if check.scorer.needs_grader() {
            check.score = 1.0;
        }
        check.detail = format!(
            "{}; settled by the grader: {}",
            check.detail,
            if passed { "PASS" } else { "FAIL" }
        );
    }
    check.grade = Some(grade);
}

/// The failure that leaves a check only the grader can decide without a grade: the judge's own
/// (`judge_error`), so the test stops there and is excluded from the target's scores, never
/// scored by the rules' placeholder.
pub fn ungraded(check: &CheckResult) -> Option<&Failure> {
    if !check.scorer.needs_grader() {
        return None;
    }
    check
        .grade
        .as_ref()
        .and_then(|g| g.failure.as_ref().filter(|_| g.passed.is_none()))
}

/// How the grader and the rules compare over a run's reached checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraderAgreement {
    /// Checks both the rules and the grader decided.
    pub both_decided: usize,
    pub agree: usize,
    /// `agree / both_decided`; null when none.
    pub agreement: Option<f64>,
    /// Cohen's kappa over the same checks (agreement beyond chance); null when undefined.
    pub kappa: Option<f64>,
    pub rules_pass_grader_fail: usize,
    pub rules_fail_grader_pass: usize,
    /// Checks the rules left undecided, and how many of them the grader settled.
    pub undecided: usize,
    pub settled: usize,
    /// Checks the grader could not grade (`judge_error`): counted here, never a grade.
    pub judge_errors: usize,
}

/// The agreement over `tests`; `None` when no check was graded (no grader).
pub fn agreement(tests: &[TestResult]) -> Option<GraderAgreement> {
    let graded: Vec<(&CheckResult, &Grade)> = tests
        .iter()
        .flat_map(|t| &t.checks)
        .filter_map(|c| c.grade.as_ref().map(|g| (c, g)))
        .collect();
    if graded.is_empty() {
        return None;
    }
    // (rules passed, grader passed) where both decided.
    let pairs: Vec<(bool, bool)> = graded
        .iter()
        .filter(|(c, _)| !c.undecided)
        .filter_map(|(c, g)| g.passed.map(|p| (c.passed, p)))
        .collect();
    let n = pairs.len();
    let count = |rules: bool, grader: bool| pairs.iter().filter(|p| **p == (rules, grader)).count();
    let agree = count(true, true) + count(false, false);
    let kappa = (n > 0).then_some(()).and_then(|()| {
        let n = n as f64;
        let observed = agree as f64 / n;
        let rules_pass = (count(true, true) + count(true, false)) as f64 / n;
        let grader_pass = (count(true, true) + count(false, true)) as f64 / n;
        let chance = rules_pass * grader_pass + (1.0 - rules_pass) * (1.0 - grader_pass);
        (chance < 1.0).then(|| (observed - chance) / (1.0 - chance))
    });
    let undecided: Vec<&Grade> = graded
        .iter()
        .filter(|(c, _)| c.undecided)
        .map(|(_, g)| *g)
        .collect();
    Some(GraderAgreement {
        both_decided: n,
        agree,
        agreement: (n > 0).then(|| agree as f64 / n as f64),
        kappa,
        rules_pass_grader_fail: count(true, false),
        rules_fail_grader_pass: count(false, true),
        undecided: undecided.len(),
        settled: undecided.iter().filter(|g| g.passed.is_some()).count(),
        judge_errors: graded.iter().filter(|(_, g)| g.failure.is_some()).count(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint::FailureKind;

    fn check(passed: bool, undecided: bool, grade: Option<bool>) -> CheckResult {
        CheckResult {
            label: "q".into(),
            session: "s".into(),
            reached: true,
            score: if passed { 1.0 } else { 0.0 },
            passed,
            detail: "rules".into(),
            scorer: Scorer::Silent { forbidden: vec![] },
            undecided,
            grade: Some(Grade {
                passed: grade,
                failure: grade.is_none().then(|| Failure {
                    kind: FailureKind::JudgeError,
                    message: "unusable".into(),
                    status: None,
                    attempts: 1,
                }),
            }),
        }
    }

    fn test_of(checks: Vec<CheckResult>) -> TestResult {
        let mut t: TestResult = serde_json::from_value(serde_json::json!({
            "id": "t", "test_type": "needle", "trial": 0, "status": "passed", "score": 1.0,
            "checks": [], "sessions": [], "filler_tokens": 0, "transcript": []
        }))
        .unwrap();
        t.checks = checks;
        t
    }

    #[test]
    fn grades_read_pass_or_fail_only() {
        assert_eq!(parse_grade(" pass."), Ok(true));
        assert_eq!(parse_grade("**FAIL**"), Ok(false));
        assert!(parse_grade("PASS, mostly").is_err());
    }

    #[test]
    fn the_grader_settles_only_undecided_checks() {
        let mut undecided = check(true, true, None);
        undecided.grade = None;
        apply(
            &mut undecided,
            Grade {
                passed: Some(false),
                failure: None,
            },
        );
        assert!(!undecided.passed);
        assert_eq!(undecided.score, 0.0);
        assert!(undecided.detail.ends_with("settled by the grader: FAIL"));
        let mut decided = check(true, false, None);
        apply(
            &mut decided,
            Grade {
                passed: Some(false),
                failure: None,
            },
        );
        assert!(
            decided.passed,
            "the rules decided: the grade is only compared"
        );
        assert_eq!(decided.score, 1.0);
    }

    #[test]
    fn agreement_counts_only_checks_both_decided_and_keeps_judge_errors_apart() {
        let tests = [test_of(vec![
            check(true, false, Some(true)),
            check(true, false, Some(true)),
            check(false, false, Some(false)),
            check(true, false, Some(false)),
            check(true, true, Some(true)),
            check(true, true, None),
            check(false, false, None),
        ])];
        let a = agreement(&tests).unwrap();
        assert_eq!((a.both_decided, a.agree), (4, 3));
        assert_eq!(a.agreement, Some(0.75));
        assert_eq!((a.rules_pass_grader_fail, a.rules_fail_grader_pass), (1, 0));
        assert_eq!((a.undecided, a.settled, a.judge_errors), (2, 1, 2));
        // Observed 0.75; chance 0.75 × 0.5 + 0.25 × 0.5 = 0.5; kappa (0.75 − 0.5) / 0.5.
        assert!((a.kappa.unwrap() - 0.5).abs() < 1e-12, "{a:?}");
        assert_eq!(agreement(&[test_of(vec![])]), None);
    }
}
