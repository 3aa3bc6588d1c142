//! The one comparison on LTM and membench runs: the three verdicts with their sentences, the
//! phrasing note, and membench's failed and excluded questions.

use std::collections::BTreeMap;

use super::*;
use crate::endpoint::{Failure, FailureKind};
use crate::suites::HistoryMode;
use crate::suites::ltm::results::{RunResults, TestResult, TestStatus};
use crate::suites::ltm::{Phrasing, TestType};
use crate::suites::membench::dataset::DatasetKind;
use crate::suites::membench::results::{MembenchResults, QuestionResult, summarise_all};

/// An LTM run whose test `i` of a type scored `scores[i]` (`None`: not applicable), 4 types.
fn ltm(scores: &[Option<f64>], phrasing: Phrasing) -> Value {
    let types = [
        TestType::Needle,
        TestType::KnowledgeUpdate,
        TestType::ALL[2],
        TestType::ALL[3],
    ];
    let tests = scores
        .iter()
        .enumerate()
        .map(|(i, score)| TestResult {
            id: format!("test-{i:02}"),
            test_type: types[i % types.len()],
            trial: (i / types.len()) as u32,
            status: match score {
                None => TestStatus::NotApplicable,
                Some(s) if *s >= 1.0 => TestStatus::Passed,
                Some(_) => TestStatus::Failed,
            },
            reason: None,
            failure: None,
            score: *score,
            checks: vec![],
            sessions: vec![],
            filler_tokens: 0,
            transcript: vec![],
        })
        .collect();
    serde_json::to_value(RunResults {
        suite: "ltm".into(),
        seed: 1,
        trials: 1,
        span_tokens: 0,
        history: HistoryMode::New,
        api: crate::endpoint::Api::Chat,
        phrasing,
        overall: None,
        overall_ci: None,
        types: vec![],
        tests,
        diagnosis: vec![],
        grader: None,
    })
    .unwrap()
}

fn run<'a>(id: &'a str, kind: &'a str, results: &'a Value) -> RunRef<'a> {
    RunRef { id, kind, results }
}

fn ltm_pair(a: &Value, b: &Value) -> Comparison {
    compare(run("a", "ltm", a), run("b", "ltm", b), 0.05).unwrap()
}

#[test]
fn a_regression_an_improvement_and_no_difference_with_its_size() {
    let good = ltm(&[Some(1.0); 12], Phrasing::Standard);
    let bad = ltm(&[Some(0.0); 12], Phrasing::Standard);
    let c = ltm_pair(&good, &bad);
    assert_eq!((c.regressions, c.improvements), (12, 0));
    assert!(c.regression && c.direction == Direction::Regression);
    assert!(
        c.verdict
            .starts_with("regression: B scores 100.0 points below A")
    );
    assert!(
        render(&c).contains("verdict: REGRESSION: B scores"),
        "{}",
        render(&c)
    );
    assert_eq!(c.groups.len(), 4);
    assert_eq!(
        (c.groups[0].group.as_str(), c.groups[0].pairs),
        ("needle", 3)
    );

    let c = ltm_pair(&bad, &good);
    assert!(!c.regression && c.direction == Direction::Improvement);
    assert!(
        c.verdict
            .starts_with("improvement: B scores 100.0 points above A")
    );

    // One flip in twelve: not detectable, and the sentence says how many tests would.
    let mut one = vec![Some(1.0); 12];
    one[3] = Some(0.0);
    let c = ltm_pair(&good, &ltm(&one, Phrasing::Standard));
    assert_eq!(c.direction, Direction::NoDifference);
    let n = c.units_to_detect.unwrap();
    assert_eq!(
        c.verdict,
        format!("no difference detectable at this size; about {n} tests would detect 8.3 points")
    );
    assert!(n > 12, "{n}");
    // The interval of the difference is not zero-width.
    let (lo, hi) = c.diff_ci.unwrap();
    assert!(lo < -0.2 && hi > 0.05, "{lo} {hi}");

    // Identical runs whose every trial of a type scored the same: deterministic.
    let c = ltm_pair(&good, &good);
    assert_eq!(c.noise_a, Some(NoiseFloor::Deterministic { units: 12 }));
    assert_eq!(
        c.verdict,
        "no difference: both runs are deterministic and every paired test scored the same"
    );
    // Not-applicable tests are not paired.
    let mut partial = vec![Some(1.0); 12];
    partial[0] = None;
    assert_eq!(
        ltm_pair(&good, &ltm(&partial, Phrasing::Standard)).unpaired,
        1
    );
}

#[test]
fn runs_of_different_phrasings_say_so_and_a_judge_error_is_not_paired() {
    let standard = ltm(&[Some(1.0); 8], Phrasing::Standard);
    let mut heldout = ltm(&[Some(1.0); 8], Phrasing::Heldout);
    heldout["tests"][0]["status"] = "error".into();
    heldout["tests"][0]["score"] = Value::Null;
    let c = ltm_pair(&standard, &heldout);
    assert_eq!((c.pairs.len(), c.excluded, c.unpaired), (7, 1, 0));
    let text = render(&c);
    assert!(
        text.contains("note: the runs differ in phrasing (A standard, B heldout); tests with the same id ask the same kind of thing in other words"),
        "{text}"
    );
    let same = render(&ltm_pair(&standard, &standard));
    assert!(same.contains("phrasing: standard in both runs"), "{same}");
}

fn question(id: &str, category: &str, score: f64, j: Option<f64>) -> QuestionResult {
    QuestionResult {
        id: id.to_owned(),
        conversation: "conv-a".into(),
        category: category.to_owned(),
        order: 0,
        asked: "?".into(),
        gold: "x".into(),
        options: None,
        reply: Some("x".into()),
        scored_reply: None,
        score: Some(score),
        f1_stand_in: None,
        judge: None,
        judge_failure: None,
        judge_score: j,
        evidence: vec![],
        evidence_sessions: vec![],
        recall_excluded: None,
        recalled: None,
        agent_recall: None,
        recall_failure: None,
        bm25_top: vec![],
        bm25_recall: None,
        agent_session_recall: None,
        bm25_session_recall: None,
        latency_ms: Some(5),
        prompt_tokens: None,
        context_truncated: false,
        failure: None,
    }
}

fn failed(mut q: QuestionResult, kind: FailureKind) -> QuestionResult {
    q.reply = None;
    q.score = if kind == FailureKind::JudgeError {
        None
    } else {
        Some(0.0)
    };
    q.judge_score = (kind != FailureKind::JudgeError).then_some(0.0);
    q.failure = Some(Failure {
        kind,
        message: "boom".into(),
        status: None,
        attempts: 1,
    });
    q
}

fn membench(questions: Vec<QuestionResult>) -> MembenchResults {
    let (overall, categories, speed) =
        summarise_all(DatasetKind::Locomo, &questions, &BTreeMap::new(), 1.0);
    MembenchResults {
        summary: crate::suites::membench::results::Summary {
            dataset: DatasetKind::Locomo,
            overall,
            categories,
            speed,
            agent_recall_note: None,
            comparability_note: None,
            score_definition: "F1".into(),
        },
        ingestion: BTreeMap::new(),
        questions,
    }
}

#[test]
fn membench_pairs_failed_questions_as_zero_and_leaves_excluded_ones_out() {
    let a = membench(vec![
        question("q1", "1", 1.0, Some(1.0)),
        question("q2", "1", 0.8, Some(1.0)),
        question("q3", "2", 0.5, Some(0.0)),
        question("q4", "2", 1.0, Some(1.0)),
        failed(question("q5", "2", 0.0, None), FailureKind::JudgeError),
    ]);
    let b = membench(vec![
        failed(question("q1", "1", 0.0, None), FailureKind::Timeout),
        question("q2", "1", 0.8, Some(1.0)),
        question("q3", "2", 0.5, None),
        failed(question("q4", "2", 0.0, None), FailureKind::JudgeError),
        question("q5", "2", 1.0, Some(1.0)),
    ]);
    let (a, b) = (
        serde_json::to_value(a).unwrap(),
        serde_json::to_value(b).unwrap(),
    );
    let c = compare(run("a", "membench", &a), run("b", "membench", &b), 0.05).unwrap();
    // q4 and q5 were spoiled by the judge's side in one run each: not paired, counted.
    assert_eq!((c.pairs.len(), c.excluded, c.unpaired), (3, 2, 0));
    let q1 = &c.pairs[0];
    assert_eq!(
        (q1.score_b, q1.failure_b.as_deref()),
        (0.0, Some("timeout"))
    );
    assert_eq!(c.failed_b.get("timeout"), Some(&1));
    // J is paired over the questions judged in both runs (q1: 1 -> 0, q2: 1 -> 1).
    assert_eq!(c.also.len(), 1);
    assert_eq!((c.also[0].name.as_str(), c.also[0].pairs), ("j", 2));
    assert_eq!(c.groups.iter().map(|g| g.pairs).collect::<Vec<_>>(), [2, 1]);
    let text = render(&c);
    assert!(
        text.contains("membench: 3 questions paired (0 unpaired)"),
        "{text}"
    );
    assert!(text.contains("excluded: 2 questions"), "{text}");
    assert!(text.contains("dataset: LoCoMo in both runs"), "{text}");

    // Runs of two datasets do not compare.
    let mut other = b.clone();
    other["summary"]["dataset"] = "longmemeval".into();
    let err = compare(run("a", "membench", &a), run("b", "membench", &other), 0.05).unwrap_err();
    assert!(err.runs_do_not_match(), "{err}");
    // Nor do runs of two kinds.
    let err = compare(run("a", "membench", &a), run("b", "ltm", &b), 0.05).unwrap_err();
    assert!(err.to_string().contains("membench run"), "{err}");
}
