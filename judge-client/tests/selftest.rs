//! The whole LTM suite against fake targets: an oracle passes everything applicable, an amnesiac
//! fails the memory tests, a plain stub gets not-applicable (never 0) for control-plane tests.
//! Also determinism, resume, history modes, failure reporting, the CLI's exit codes and the
//! held-out phrasing.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use common::{Behaviour, amnesiac, oracle, scripted, slow_oracle, stub};
use judge_client::endpoint::{Credentials, FailureKind, RetryPolicy, TargetSettings};
use judge_client::suites::ltm::results::TestStatus;
use judge_client::suites::ltm::run::{self, RunOutcome, Silent};
use judge_client::suites::ltm::summary::render_table;
use judge_client::suites::ltm::{Phrasing, Step, TestType};
use judge_client::{HistoryMode, LtmConfig};

fn settings(url: &str, timeout_ms: u64) -> TargetSettings {
    TargetSettings {
        timeout_ms,
        retry: RetryPolicy {
            max_retries: 3,
            base_ms: 10,
            max_wait_ms: 100,
        },
        ..TargetSettings::new(url)
    }
}

fn config(seed: u64, trials: u32) -> LtmConfig {
    LtmConfig {
        seed,
        trials,
        span_tokens: 300,
        filler_turn_tokens: 120,
        history: HistoryMode::New,
        api: Default::default(),
        phrasing: Default::default(),
        concurrency: 3,
        types: TestType::ALL.to_vec(),
    }
}

async fn run_against(url: &str, config: LtmConfig, out: &Path) -> RunOutcome {
    run::start(
        settings(url, 10_000),
        Credentials::default(),
        config,
        out,
        &Silent,
    )
    .await
    .expect("run completes")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn not_applicable_without_control() -> BTreeSet<TestType> {
    [
        TestType::Episodic,
        TestType::RelativeDate,
        TestType::Reminder,
        TestType::Retention,
        TestType::ResetIsolation,
        TestType::InjectedRecall,
    ]
    .into()
}

#[actix_rt::test]
async fn oracle_passes_every_applicable_test() {
    let config = config(11, 2);
    let fake = oracle(&config.specs()).await;
    let out = tempfile::tempdir().unwrap();
    let outcome = run_against(&fake.url, config.clone(), out.path()).await;
    let caps = &outcome.manifest.capabilities;
    assert!(
        caps.reset && caps.inject && caps.memory_view && caps.mock_time,
        "{caps:?}"
    );
    assert_eq!(outcome.results.tests.len(), 28);
    for test in &outcome.results.tests {
        assert_eq!(
            test.status,
            TestStatus::Passed,
            "{} failed: {:?} {:?}",
            test.id,
            test.failure,
            test.checks
        );
        assert_eq!(test.score, Some(1.0));
    }
    assert_eq!(outcome.results.overall, Some(1.0));
    // Every request carried the wall's headers, and every chat turn a mock time.
    assert!(fake.state.header_problems.lock().unwrap().is_empty());
    let chats = fake.chats();
    let mocked = fake
        .state
        .mock_times
        .load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        chats - 1,
        mocked,
        "every chat but the probe's hello carries X-Mock-Time"
    );
    // Filler was actually there.
    assert!(outcome.results.tests.iter().all(|t| t.filler_tokens > 0));
    // The outputs.
    let dir = &outcome.dir;
    for file in [
        "manifest.json",
        "results.json",
        "junit.xml",
        "report.html",
        "timing.json",
    ] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
    let junit = read(&dir.join("junit.xml"));
    assert!(!junit.contains("<failure") && !junit.contains("<skipped"));
    assert_eq!(junit.matches("<testcase").count(), 28);
    let html = read(&dir.join("report.html"));
    assert!(html.contains("<svg") && html.contains("Retention curve"));
    assert!(
        !html.contains("src=\"http"),
        "report must be self-contained"
    );
    let sessions: usize = outcome.results.tests.iter().map(|t| t.sessions.len()).sum();
    assert_eq!(
        std::fs::read_dir(dir.join("logs")).unwrap().count(),
        sessions
    );
    let first_log = read(&dir.join("logs/session-0001.log"));
    assert!(first_log.starts_with("Run metadata:\n- session_id: "));
    assert!(first_log.contains("\nConversation:\n\n - user ["));
    assert!(first_log.contains("- stop_reason: completed"));
    fake.stop().await;
}

#[actix_rt::test]
async fn amnesiac_fails_the_memory_tests() {
    let fake = amnesiac().await;
    let out = tempfile::tempdir().unwrap();
    let outcome = run_against(&fake.url, config(12, 2), out.path()).await;
    for test in &outcome.results.tests {
        let expected = if test.test_type.needs_memory() {
            TestStatus::Failed
        } else {
            TestStatus::Passed
        };
        assert_eq!(test.status, expected, "{}: {:?}", test.id, test.checks);
        assert!(
            test.failure.is_none(),
            "a wrong answer is not a transport failure"
        );
    }
    let overall = outcome.results.overall.unwrap();
    assert!(overall < 0.35, "amnesiac scored {overall}");
    fake.stop().await;
}

#[actix_rt::test]
async fn stub_without_control_plane_gets_not_applicable_never_zero() {
    let fake = stub().await;
    let out = tempfile::tempdir().unwrap();
    let trials = 2;
    let outcome = run_against(&fake.url, config(13, trials), out.path()).await;
    let caps = &outcome.manifest.capabilities;
    assert!(
        !caps.reset && !caps.inject && !caps.memory_view && !caps.mock_time,
        "{caps:?}"
    );
    let expected = not_applicable_without_control();
    for test in &outcome.results.tests {
        if expected.contains(&test.test_type) {
            assert_eq!(test.status, TestStatus::NotApplicable, "{}", test.id);
            assert_eq!(test.score, None);
            assert!(test.reason.as_deref().unwrap().contains("does not offer"));
            assert!(test.transcript.is_empty());
        } else {
            assert_ne!(test.status, TestStatus::NotApplicable, "{}", test.id);
            assert!(test.score.is_some());
        }
    }
    for summary in &outcome.results.types {
        assert_eq!(
            summary.mean.is_none(),
            expected.contains(&summary.test_type)
        );
    }
    let junit = read(&outcome.dir.join("junit.xml"));
    assert_eq!(
        junit.matches("<skipped").count(),
        expected.len() * trials as usize
    );
    // The overall score averages only applicable types.
    let applicable = outcome
        .results
        .types
        .iter()
        .filter(|t| t.mean.is_some())
        .count();
    assert_eq!(applicable, 14 - expected.len());
    fake.stop().await;
}

#[actix_rt::test]
async fn same_seed_gives_byte_identical_results_and_logs() {
    let config = config(21, 1);
    let fake = oracle(&config.specs()).await;
    let amnesia = amnesiac().await;
    for url in [&fake.url, &amnesia.url] {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let first = run_against(url, config.clone(), a.path()).await;
        let second = run_against(url, config.clone(), b.path()).await;
        assert_eq!(
            read(&first.dir.join("results.json")),
            read(&second.dir.join("results.json"))
        );
        assert_eq!(
            read(&first.dir.join("junit.xml")),
            read(&second.dir.join("junit.xml"))
        );
        for entry in std::fs::read_dir(first.dir.join("logs")).unwrap() {
            let name = entry.unwrap().file_name();
            assert_eq!(
                read(&first.dir.join("logs").join(&name)),
                read(&second.dir.join("logs").join(&name))
            );
        }
    }
    // A different seed gives different content.
    let c = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    let one = run_against(&amnesia.url, config.clone(), c.path()).await;
    let other = run_against(&amnesia.url, LtmConfig { seed: 22, ..config }, d.path()).await;
    assert_ne!(
        read(&one.dir.join("results.json")),
        read(&other.dir.join("results.json"))
    );
    fake.stop().await;
    amnesia.stop().await;
}

#[actix_rt::test]
async fn resume_finishes_a_run_without_repeating_finished_tests() {
    let config = config(31, 1);
    let specs = config.specs();
    let fake = oracle(&specs).await;
    let out = tempfile::tempdir().unwrap();
    let full = run_against(&fake.url, config.clone(), out.path()).await;
    let original = read(&full.dir.join("results.json"));
    // Simulate a crash after all but three tests: their checkpoints and the final files are gone.
    let lost = ["needle-01", "shopping_list-01", "reset_isolation-01"];
    for id in lost {
        std::fs::remove_file(full.dir.join("tests").join(format!("{id}.json"))).unwrap();
    }
    for file in ["results.json", "junit.xml", "report.html"] {
        std::fs::remove_file(full.dir.join(file)).unwrap();
    }
    let before = fake.chats();
    let resumed = run::resume(
        &full.dir,
        None,
        Credentials::default(),
        Credentials::default(),
        &Silent,
    )
    .await
    .expect("resume completes");
    assert_eq!(resumed.executed, lost.len());
    let says: usize = specs
        .iter()
        .filter(|s| lost.contains(&s.id.as_str()))
        .flat_map(|s| &s.steps)
        .filter(|s| matches!(s, Step::Say { .. }))
        .count();
    assert_eq!(
        fake.chats() - before,
        says + 1,
        "only the lost tests (and the probe's hello)"
    );
    assert_eq!(read(&resumed.dir.join("results.json")), original);
    assert!(resumed.dir.join("report.html").is_file());
    assert_eq!(resumed.manifest.resumed_at.len(), 1);
    fake.stop().await;
}

#[actix_rt::test]
async fn history_mode_decides_what_each_request_carries() {
    for (history, expect_many) in [(HistoryMode::New, false), (HistoryMode::Full, true)] {
        let fake = stub().await;
        let out = tempfile::tempdir().unwrap();
        let config = LtmConfig {
            history,
            types: vec![TestType::Needle],
            ..config(41, 1)
        };
        let outcome = run_against(&fake.url, config, out.path()).await;
        assert_eq!(outcome.results.history, history);
        let max = fake
            .state
            .max_messages
            .load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(max > 1, expect_many, "{history}: {max} messages");
        fake.stop().await;
    }
}

#[actix_rt::test]
async fn a_failed_turn_is_reported_with_its_class_and_still_logged() {
    let fake = scripted(vec![
        Behaviour::Reply("Noted.".into()),
        Behaviour::Hang(std::time::Duration::from_secs(3)),
    ])
    .await;
    let out = tempfile::tempdir().unwrap();
    let config = LtmConfig {
        span_tokens: 0,
        types: vec![TestType::Needle],
        ..config(51, 1)
    };
    let outcome = run::start(
        settings(&fake.url, 400),
        Credentials::default(),
        config,
        out.path(),
        &Silent,
    )
    .await
    .unwrap();
    let test = &outcome.results.tests[0];
    assert_eq!(test.status, TestStatus::Failed);
    assert_eq!(test.failure.as_ref().unwrap().kind, FailureKind::Timeout);
    assert_eq!(test.score, Some(0.0));
    assert!(!test.checks[0].reached);
    let log = read(&outcome.dir.join(&test.sessions[0].log_file));
    assert!(log.contains("- stop_reason: timeout"), "{log}");
    assert!(log.contains("[timeout] no complete answer"), "{log}");
    let junit = read(&outcome.dir.join("junit.xml"));
    assert!(junit.contains(r#"type="timeout""#), "{junit}");
    fake.stop().await;
}

fn judge(args: Vec<String>) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_judge"))
        .args(args)
        .output()
        .expect("judge runs")
}

fn only_dir(root: &Path) -> std::path::PathBuf {
    let mut dirs: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1);
    dirs.remove(0)
}

#[actix_rt::test]
async fn cli_fail_under_and_compare_exit_codes() {
    let cli_config = LtmConfig {
        seed: 61,
        trials: 1,
        span_tokens: 100,
        filler_turn_tokens: 250,
        history: HistoryMode::New,
        api: Default::default(),
        phrasing: Default::default(),
        concurrency: 3,
        types: TestType::ALL.to_vec(),
    };
    let good = oracle(&cli_config.specs()).await;
    let bad = amnesiac().await;
    let good_out = tempfile::tempdir().unwrap();
    let bad_out = tempfile::tempdir().unwrap();
    let args = |url: &str, out: &Path| -> Vec<String> {
        [
            "ltm",
            "--endpoint",
            url,
            "--seed",
            "61",
            "--trials",
            "1",
            "--span",
            "100",
            "--backoff-ms",
            "10",
            "--quiet",
            "--fail-under",
            "0.9",
            "--out",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([out.display().to_string()])
        .collect()
    };
    let (good_url, bad_url) = (good.url.clone(), bad.url.clone());
    let (good_path, bad_path) = (good_out.path().to_owned(), bad_out.path().to_owned());
    let (good_run, bad_run) = actix_rt::task::spawn_blocking(move || {
        (
            judge(args(&good_url, &good_path)),
            judge(args(&bad_url, &bad_path)),
        )
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&good_run.stdout);
    assert_eq!(
        good_run.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&good_run.stderr)
    );
    assert!(stdout.contains("overall score: 100%"), "{stdout}");
    assert!(stdout.contains("report.html"), "{stdout}");
    assert_eq!(
        bad_run.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&bad_run.stdout)
    );

    let good_dir = only_dir(good_out.path()).display().to_string();
    let bad_dir = only_dir(bad_out.path()).display().to_string();
    let regression = judge(vec!["compare".into(), good_dir.clone(), bad_dir.clone()]);
    let text = String::from_utf8_lossy(&regression.stdout);
    assert_eq!(regression.status.code(), Some(3), "{text}");
    assert!(text.contains("McNemar exact p = "), "{text}");
    let improvement = judge(vec!["compare".into(), bad_dir, good_dir.clone()]);
    assert_eq!(improvement.status.code(), Some(0));
    let same = judge(vec!["compare".into(), good_dir.clone(), good_dir.clone()]);
    assert_eq!(same.status.code(), Some(0));

    // --baseline: a run that regresses against an earlier one exits 3.
    let third_out = tempfile::tempdir().unwrap();
    let mut baseline_args = args(&bad.url, third_out.path());
    baseline_args.retain(|a| a != "--fail-under" && a != "0.9");
    baseline_args.extend(["--baseline".to_owned(), good_dir.clone()]);
    // --resume through the CLI: one lost checkpoint is run again, the rest kept.
    std::fs::remove_file(Path::new(&good_dir).join("tests/needle-01.json")).unwrap();
    let before = good.chats();
    let resume_args: Vec<String> = vec![
        "ltm".into(),
        "--resume".into(),
        good_dir.clone(),
        "--quiet".into(),
    ];
    let (baseline_run, resumed) =
        actix_rt::task::spawn_blocking(move || (judge(baseline_args), judge(resume_args)))
            .await
            .unwrap();
    let text = String::from_utf8_lossy(&baseline_run.stdout);
    assert_eq!(baseline_run.status.code(), Some(3), "{text}");
    assert!(text.contains("REGRESSION"), "{text}");
    let text = String::from_utf8_lossy(&resumed.stdout);
    assert_eq!(resumed.status.code(), Some(0), "{text}");
    assert!(text.contains("overall score: 100%"), "{text}");
    let needle_turns = cli_config.specs()[0]
        .steps
        .iter()
        .filter(|s| matches!(s, Step::Say { .. }))
        .count();
    assert_eq!(good.chats() - before, needle_turns + 1);
    good.stop().await;
    bad.stop().await;
}

#[actix_rt::test]
async fn a_killed_cli_run_resumes_to_the_same_results() {
    let config = LtmConfig {
        seed: 71,
        trials: 1,
        span_tokens: 100,
        filler_turn_tokens: 250,
        history: HistoryMode::New,
        api: Default::default(),
        phrasing: Default::default(),
        concurrency: 4,
        types: TestType::ALL.to_vec(),
    };
    let fake = slow_oracle(&config.specs(), std::time::Duration::from_millis(40)).await;
    let killed_out = tempfile::tempdir().unwrap();
    let url = fake.url.clone();
    let out = killed_out.path().to_owned();
    // Start the CLI, kill it (SIGKILL) once a few tests are checkpointed, then resume it.
    let (resumed, run_dir) = actix_rt::task::spawn_blocking(move || {
        let mut child = Command::new(env!("CARGO_BIN_EXE_judge"))
            .args([
                "ltm",
                "--endpoint",
                &url,
                "--seed",
                "71",
                "--trials",
                "1",
                "--span",
                "100",
            ])
            .args(["--quiet", "--out"])
            .arg(&out)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let run_dir = loop {
            assert!(
                std::time::Instant::now() < deadline,
                "no checkpoints appeared"
            );
            let dirs: Vec<_> = std::fs::read_dir(&out)
                .map(|d| d.map(|e| e.unwrap().path()).collect())
                .unwrap_or_default();
            if let Some(dir) = dirs.first() {
                let done = std::fs::read_dir(dir.join("tests"))
                    .map(|d| {
                        d.filter(|e| {
                            let name = e.as_ref().unwrap().file_name();
                            let name = name.to_string_lossy();
                            name.ends_with(".json") && !name.ends_with(".timing.json")
                        })
                        .count()
                    })
                    .unwrap_or(0);
                if done >= 3 {
                    break dir.clone();
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(
            !run_dir.join("results.json").exists(),
            "the run finished before the kill"
        );
        let resumed = judge(vec![
            "ltm".into(),
            "--resume".into(),
            run_dir.display().to_string(),
            "--quiet".into(),
        ]);
        (resumed, run_dir)
    })
    .await
    .unwrap();
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    // An uninterrupted run of the same seed gives the same results, byte for byte.
    let clean_out = tempfile::tempdir().unwrap();
    let clean = run_against(&fake.url, config, clean_out.path()).await;
    assert_eq!(
        read(&run_dir.join("results.json")),
        read(&clean.dir.join("results.json"))
    );
    fake.stop().await;
}

fn trace_ids(fake: &common::Fake) -> BTreeSet<String> {
    fake.state
        .traceparents
        .lock()
        .unwrap()
        .iter()
        .map(|t| t.split('-').nth(1).unwrap().to_owned())
        .collect()
}

#[actix_rt::test]
async fn spans_are_exported_and_their_context_is_the_traceparent() {
    let config = LtmConfig {
        seed: 81,
        trials: 1,
        span_tokens: 0,
        filler_turn_tokens: 250,
        history: HistoryMode::New,
        api: Default::default(),
        phrasing: Default::default(),
        concurrency: 4,
        types: vec![TestType::Needle, TestType::ResetIsolation],
    };
    let target = oracle(&config.specs()).await;
    let collector = stub().await;
    let out = tempfile::tempdir().unwrap();
    let (url, collector_url, path) = (
        target.url.clone(),
        collector.url.clone(),
        out.path().to_owned(),
    );
    let run = actix_rt::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_judge"))
            .args([
                "ltm",
                "--endpoint",
                &url,
                "--seed",
                "81",
                "--trials",
                "1",
                "--span",
                "0",
            ])
            .args(["--types", "needle,reset_isolation", "--quiet", "--out"])
            .arg(&path)
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector_url)
            .env_remove("OTEL_SDK_DISABLED")
            .env_remove("OTEL_TRACES_EXPORTER")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        collector
            .state
            .trace_exports
            .load(std::sync::atomic::Ordering::SeqCst)
            >= 1,
        "no spans reached the collector"
    );
    // The probe's own requests aside, every test's turns belong to the run's one trace, across
    // sessions (without export each session has its own derived trace id).
    let exported = trace_ids(&target);
    assert!(exported.len() <= 2, "{exported:?}");

    let plain_out = tempfile::tempdir().unwrap();
    let plain = oracle(&config.specs()).await;
    run_against(&plain.url, config, plain_out.path()).await;
    assert!(
        trace_ids(&plain).len() >= 4,
        "derived ids: one trace per session"
    );
    target.stop().await;
    collector.stop().await;
    plain.stop().await;
}

#[actix_rt::test]
async fn replies_are_escaped_in_the_report() {
    let hostile = "<script>alert('x')</script> & \"quotes\"".to_owned();
    let fake = scripted(vec![
        Behaviour::Reply(hostile.clone()),
        Behaviour::Reply(hostile.clone()),
    ])
    .await;
    let out = tempfile::tempdir().unwrap();
    let config = LtmConfig {
        span_tokens: 0,
        types: vec![TestType::Needle],
        ..config(91, 1)
    };
    let outcome = run_against(&fake.url, config, out.path()).await;
    let html = read(&outcome.dir.join("report.html"));
    assert!(!html.contains("<script"), "unescaped reply in report.html");
    assert!(
        html.contains("&lt;script&gt;alert(&apos;x&apos;)&lt;/script&gt; &amp; &quot;quotes&quot;")
    );
    let results = read(&outcome.dir.join("results.json"));
    assert!(
        results.contains("<script>alert('x')</script>"),
        "results keep the raw reply"
    );
    fake.stop().await;
}

/// The LLM grader grades every reached check beside the rules, and the results say how often
/// the two agree; a grader whose answers stay unusable is a judge_error, counted apart, and
/// changes no score.
#[actix_rt::test]
async fn the_llm_grader_is_compared_with_the_rules_and_its_failures_are_counted_apart() {
    let config = LtmConfig {
        types: vec![
            TestType::Needle,
            TestType::KnowledgeUpdate,
            TestType::ShoppingList,
        ],
        ..config(5, 1)
    };
    let target = oracle(&config.specs()).await;
    let ungraded = run_against(
        &target.url,
        config.clone(),
        tempfile::tempdir().unwrap().path(),
    )
    .await;
    let checks: usize = ungraded.results.tests.iter().map(|t| t.checks.len()).sum();
    assert!(checks >= 3);
    assert_eq!(ungraded.results.grader, None);

    let graded = |grader_url: String| {
        let config = config.clone();
        let target = settings(&target.url, 10_000);
        async move {
            let out = tempfile::tempdir().unwrap();
            let outcome = run::start_shard(
                target,
                Credentials::default(),
                config,
                None,
                Some((TargetSettings::new(grader_url), Credentials::default())),
                out.path(),
                &Silent,
            )
            .await
            .expect("run completes");
            (outcome, out)
        }
    };
    let agreeing = scripted(vec![Behaviour::Reply("PASS".to_owned()); 200]).await;
    let (outcome, out) = graded(agreeing.url.clone()).await;
    let a = outcome.results.grader.clone().unwrap();
    assert_eq!(
        (a.both_decided, a.agree, a.judge_errors),
        (checks, checks, 0)
    );
    assert_eq!(a.agreement, Some(1.0));
    assert_eq!(outcome.results.overall, ungraded.results.overall);
    assert_eq!(
        outcome
            .manifest
            .details
            .grader
            .as_ref()
            .map(|g| g.endpoint.as_str()),
        Some(agreeing.url.as_str())
    );
    let report = read(&outcome.dir.join("report.html"));
    assert!(
        report.contains(&format!("agrees with the rules on {checks} of {checks}")),
        "{report}"
    );
    drop(out);

    // Answers "Noted." to everything: three tries per check, then a judge_error.
    let garbage = scripted(vec![]).await;
    let before = garbage.chats();
    let (outcome, _out) = graded(garbage.url.clone()).await;
    let a = outcome.results.grader.clone().unwrap();
    assert_eq!((a.both_decided, a.judge_errors), (0, checks));
    assert_eq!(a.agreement, None, "never a 0");
    assert_eq!(
        garbage.chats() - before,
        checks * 3,
        "three tries per check"
    );
    assert_eq!(
        outcome.results.overall, ungraded.results.overall,
        "scores are the rules' own"
    );
    let failure = outcome.results.tests[0].checks[0]
        .grade
        .as_ref()
        .and_then(|g| g.failure.as_ref())
        .unwrap();
    assert_eq!(failure.kind, FailureKind::JudgeError);
}

/// The held-out phrasing end to end: an oracle passes every test the rules grade; the episodic
/// tests, which only the LLM grader grades, are not gradable without one (excluded, never 0) and
/// decided by one; the phrasing is recorded in the manifest, the results, the summary and the
/// report.
#[actix_rt::test]
async fn the_heldout_phrasing_is_recorded_and_its_episodic_tests_need_the_grader() {
    let config = LtmConfig {
        phrasing: Phrasing::Heldout,
        ..config(13, 2)
    };
    let target = oracle(&config.specs()).await;
    let out = tempfile::tempdir().unwrap();
    let outcome = run_against(&target.url, config.clone(), out.path()).await;
    assert_eq!(outcome.results.phrasing, Phrasing::Heldout);
    assert_eq!(outcome.manifest.details.config.phrasing, Phrasing::Heldout);
    let manifest = read(&outcome.dir.join("manifest.json"));
    assert!(manifest.contains(r#""phrasing": "heldout""#), "{manifest}");
    assert_eq!(outcome.results.tests.len(), 28);
    for test in &outcome.results.tests {
        if test.test_type == TestType::Episodic {
            assert_eq!(test.status, TestStatus::NotGradable, "{}", test.id);
            assert_eq!(test.score, None);
            assert!(test.transcript.is_empty(), "not played");
            assert!(
                test.reason
                    .as_deref()
                    .unwrap()
                    .contains("--grader-endpoint")
            );
        } else {
            assert_eq!(
                test.status,
                TestStatus::Passed,
                "{} failed: {:?} {:?}",
                test.id,
                test.failure,
                test.checks
            );
        }
    }
    let episodic = outcome
        .results
        .types
        .iter()
        .find(|t| t.test_type == TestType::Episodic)
        .unwrap();
    assert_eq!(
        (episodic.applicable, episodic.not_gradable, episodic.mean),
        (0, 2, None)
    );
    assert_eq!(outcome.results.overall, Some(1.0));
    let table = render_table(&outcome.results);
    assert!(table.contains("heldout phrasing"), "{table}");
    assert!(
        table.contains("not gradable without --grader-endpoint"),
        "{table}"
    );
    let html = read(&outcome.dir.join("report.html"));
    assert!(
        html.contains("<th>phrasing</th><td>heldout"),
        "phrasing in the header"
    );
    let junit = read(&outcome.dir.join("junit.xml"));
    assert_eq!(junit.matches("<skipped").count(), 2);

    // With a grader, the grader decides them.
    let config = LtmConfig {
        types: vec![TestType::Episodic, TestType::Needle],
        ..config
    };
    let graded = |grader: String| {
        let config = config.clone();
        let target = settings(&target.url, 10_000);
        async move {
            let out = tempfile::tempdir().unwrap();
            let outcome = run::start_shard(
                target,
                Credentials::default(),
                config,
                None,
                Some((TargetSettings::new(grader), Credentials::default())),
                out.path(),
                &Silent,
            )
            .await
            .expect("run completes");
            outcome.results
        }
    };
    let episodes = |results: &judge_client::suites::ltm::results::RunResults| {
        results
            .tests
            .iter()
            .filter(|t| t.test_type == TestType::Episodic)
            .map(|t| (t.status, t.score))
            .collect::<Vec<_>>()
    };
    let pass = scripted(vec![Behaviour::Reply("PASS".to_owned()); 50]).await;
    let results = graded(pass.url.clone()).await;
    assert_eq!(episodes(&results), vec![(TestStatus::Passed, Some(1.0)); 2]);
    assert_eq!(results.overall, Some(1.0));
    let fail = scripted(vec![Behaviour::Reply("FAIL".to_owned()); 50]).await;
    let results = graded(fail.url.clone()).await;
    assert_eq!(episodes(&results), vec![(TestStatus::Failed, Some(0.0)); 2]);
    // A grader that cannot grade is the judge's failure: excluded, never a score.
    let garbage = scripted(vec![]).await;
    let results = graded(garbage.url.clone()).await;
    assert_eq!(episodes(&results), vec![(TestStatus::Error, None); 2]);
    for test in results
        .tests
        .iter()
        .filter(|t| t.test_type == TestType::Episodic)
    {
        assert_eq!(test.failure.as_ref().unwrap().kind, FailureKind::JudgeError);
    }
    assert_eq!(results.overall, Some(1.0), "the needle alone");
    target.stop().await;
}
