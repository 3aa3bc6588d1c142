//! The two real binaries against each other over HTTP: the `judge` CLI benchmarking the bundled
//! `agent-server` on its embedded defaults.
//!
//! - `judge apps`: the builtin model operates the PayPal app through tool calls, a good share of
//!   the shipped scenarios pass, every run-directory file is there, and the same seed gives
//!   byte-identical audit logs and final states;
//! - `judge ltm`: memory on scores clearly above the `--memory off` baseline, and every test type
//!   stays valid (scored as at short spans) at a 32k-token span.

mod common;

use common::{Server, judge, read_json, run_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Every file below `dir`, as (relative path, bytes), sorted.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let relative = path.strip_prefix(dir).unwrap().to_path_buf();
                out.push((relative, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn judge_apps_against_the_builtin_agent_is_graded_and_reproducible() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &[]);
    let runs: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut dirs = Vec::new();
    for out in &runs {
        let (code, output) = judge(&[
            "apps",
            "--endpoint",
            &server.base_url,
            "--out",
            out.path().to_str().unwrap(),
            "--seed",
            "7",
            "--trials",
            "2",
            "--quiet",
        ]);
        assert_eq!(code, 0, "{output}");
        assert!(output.contains("report.html"), "{output}");
        dirs.push(run_dir(out.path()));
    }
    let dir = &dirs[0];
    for file in ["manifest.json", "results.json", "junit.xml", "report.html"] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }

    let results = read_json(&dir.join("results.json"));
    let scenarios = results["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 14, "every shipped scenario ran");
    let passed = |id: &str| {
        scenarios
            .iter()
            .find(|s| s["id"] == id)
            .unwrap_or_else(|| panic!("scenario {id} missing"))["all_passed"]
            .as_bool()
            .unwrap()
    };
    // Each action and the main failure outcomes, operated by the builtin model through tools.
    for id in [
        "transfer-basic",
        "check-balance",
        "insufficient-funds-recovery",
        "unknown-recipient",
        "request-money",
        "pay-request",
        "decline-request",
        "view-transactions",
        "request-already-resolved",
        "fee-and-split",
    ] {
        assert!(passed(id), "{id} should pass: {:#}", results);
    }
    // What the builtin model cannot do is reported with the reason, not hidden.
    let daily = scenarios.iter().find(|s| s["id"] == "daily-limit").unwrap();
    assert_eq!(daily["all_passed"], false);
    assert!(
        daily["why"][0]
            .as_str()
            .unwrap()
            .contains("/paypal/accounts/alice/balance_cents"),
        "{daily:#}"
    );

    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert_eq!(junit.matches("<testcase ").count(), 14, "{junit}");
    assert!(junit.contains(r#"name="daily-limit"><failure"#), "{junit}");
    let report = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        report.contains("State diff"),
        "the report shows state diffs"
    );
    assert!(
        report.contains("paypal.transfer"),
        "the report shows audit logs"
    );

    // A transfer really ran, in order, through a tool call, and is in the audit log.
    let audit =
        std::fs::read_to_string(dir.join("scenarios/transfer-basic/trial-0/audit.jsonl")).unwrap();
    let entry: Value = serde_json::from_str(audit.lines().next().unwrap()).unwrap();
    assert_eq!(entry["action"], "transfer");
    assert_eq!(entry["params"]["to"], "bob");
    assert_eq!(entry["success"], true);

    // Same seed, same deterministic target: byte-identical scenario files and results.
    let (a, b) = (
        tree(&dirs[0].join("scenarios")),
        tree(&dirs[1].join("scenarios")),
    );
    assert!(!a.is_empty());
    assert_eq!(a.len(), b.len());
    for ((path_a, bytes_a), (path_b, bytes_b)) in a.iter().zip(&b) {
        assert_eq!(path_a, path_b);
        assert!(
            bytes_a == bytes_b,
            "{} differs between runs",
            path_a.display()
        );
    }
    assert_eq!(
        std::fs::read(dirs[0].join("results.json")).unwrap(),
        std::fs::read(dirs[1].join("results.json")).unwrap()
    );
}

#[test]
fn judge_apps_rejects_unknown_scenarios_with_the_known_ones() {
    let (code, output) = judge(&[
        "apps",
        "--endpoint",
        "http://127.0.0.1:9",
        "--only",
        "no-such-scenario",
    ]);
    assert_ne!(code, 0);
    assert!(output.contains("no-such-scenario"), "{output}");
    assert!(output.contains("transfer-basic"), "{output}");
}

/// The results of a run of `judge ltm` (one trial of every type, `span` filler tokens) against a
/// server started with `server_args`.
fn ltm_results(server_args: &[&str], span: &str) -> Value {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), server_args);
    let out = tempfile::tempdir().unwrap();
    let (code, output) = judge(&[
        "ltm",
        "--endpoint",
        &server.base_url,
        "--out",
        out.path().to_str().unwrap(),
        "--trials",
        "1",
        "--span",
        span,
        "--concurrency",
        "8",
        "--quiet",
    ]);
    assert_eq!(code, 0, "{output}");
    read_json(&run_dir(out.path()).join("results.json"))
}

/// The overall LTM score of a short run against a server started with `server_args`.
fn ltm_overall(server_args: &[&str]) -> f64 {
    ltm_results(server_args, "200")["overall"]
        .as_f64()
        .expect("an overall score")
}

/// At a 32k-token span the filler alone moves the session clock by hours: every test type must
/// still be planned against that clock (a reminder due after the filler, "yesterday" the day
/// before the question), so the builtin agent scores every type as it does at short spans.
#[test]
fn every_ltm_type_stays_valid_at_a_32k_span() {
    let results = ltm_results(&[], "32000");
    let types = results["types"].as_array().expect("types");
    assert_eq!(types.len(), 14, "{results}");
    for t in types {
        assert_eq!(
            t["mean"].as_f64(),
            Some(1.0),
            "{} at a 32k span: {t}",
            t["test_type"]
        );
    }
}

#[test]
fn memory_on_scores_clearly_above_the_memory_off_baseline() {
    let on = ltm_overall(&[]);
    let off = ltm_overall(&["--memory", "off"]);
    assert!(on >= 0.8, "agent-server with memory scores {on}");
    assert!(
        on - off >= 0.4,
        "memory on {on} should be clearly above memory off {off}"
    );
}

/// The container args of the first container of a Kubernetes manifest in `deploy/k8s/`.
fn k8s_args(file: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy/k8s")
        .join(file);
    let manifest: Value = serde_norway::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    manifest["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect()
}

/// The Indexed Job's own arguments, run as its pods would (every completion index, `/runs` a
/// temporary folder), then the merge Job's command: the manifests drive the real CLI.
#[test]
fn the_kubernetes_jobs_commands_shard_and_merge_a_benchmark() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &[]);
    let runs = tempfile::tempdir().unwrap();
    let runs_dir = runs.path().to_str().unwrap();
    let job_args = k8s_args("judge-job.yaml");
    let shard_arg = job_args
        .iter()
        .find(|a| a.starts_with("$(JOB_COMPLETION_INDEX)/"))
        .expect("the Job passes its completion index as --shard");
    let count: u32 = shard_arg.rsplit('/').next().unwrap().parse().unwrap();
    for index in 0..count {
        let mut args: Vec<String> = job_args
            .iter()
            .map(|a| {
                a.replace("$(JOB_COMPLETION_INDEX)", &index.to_string())
                    .replace("/runs", runs_dir)
            })
            .collect();
        // Small, so the test is quick; the Job's own flags stay as they are.
        args.extend(["--trials", "1", "--span", "150"].map(str::to_owned));
        args.extend(["--endpoint".to_owned(), server.base_url.clone()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, output) = judge(&args);
        assert_eq!(code, 0, "shard {index}: {output}");
    }

    // `exec judge merge --out /runs/merged /runs/part-*/*/`, with the shell's glob done here.
    let script = &k8s_args("judge-merge-job.yaml")[0];
    let merge_line = script
        .strip_prefix("exec judge ")
        .expect("the merge Job runs judge");
    let mut args: Vec<String> = Vec::new();
    for word in merge_line.split_whitespace() {
        let word = word.replace("/runs", runs_dir);
        if word.contains("part-*") {
            let mut parts: Vec<String> = std::fs::read_dir(runs.path())
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| {
                    p.file_name()
                        .unwrap()
                        .to_string_lossy()
                        .starts_with("part-")
                })
                .flat_map(|p| std::fs::read_dir(p).unwrap().map(|e| e.unwrap().path()))
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            parts.sort();
            assert_eq!(parts.len(), count as usize, "one run directory per shard");
            args.extend(parts);
        } else {
            args.push(word);
        }
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, output) = judge(&args);
    assert_eq!(code, 0, "merge: {output}");
    let merged = run_dir(&runs.path().join("merged"));
    let results = read_json(&merged.join("results.json"));
    assert_eq!(
        results["tests"].as_array().unwrap().len(),
        14,
        "every test type once, from the {count} shards"
    );
    assert!(results["overall"].as_f64().unwrap() >= 0.8, "{results:#}");
}

/// A target that is down from the start still leaves a run directory whose manifest says the run
/// failed and why, and the probe's run log with its `stop_reason` (docs/contracts/run-log.md),
/// rather than nothing (or a half-made directory) and a message on a terminal: for every suite
/// that runs conversations.
#[test]
fn a_run_against_a_target_that_is_down_leaves_a_failed_run_directory() {
    let port = common::free_port();
    let endpoint = format!("http://127.0.0.1:{port}");
    for (suite, mode) in [
        ("ltm", "ltm (history: new)"),
        ("sim", "sim multi-turn (scripted user)"),
        ("apps", "apps (auto mode)"),
    ] {
        let out = tempfile::tempdir().unwrap();
        let mut args = vec![
            suite,
            "--endpoint",
            &endpoint,
            "--retries",
            "0",
            "--out",
            out.path().to_str().unwrap(),
        ];
        if suite != "sim" {
            args.push("--quiet");
        }
        let (code, output) = judge(&args);
        assert_ne!(code, 0, "{suite}: {output}");
        let dir = run_dir(out.path());
        let manifest = read_json(&dir.join("manifest.json"));
        assert_eq!(manifest["state"], "failed", "{suite}: {manifest}");
        assert_eq!(manifest["suite"], suite, "{manifest}");
        let why = manifest["why"].as_str().unwrap_or_default();
        assert!(why.contains("probe"), "{suite}: {manifest}");
        let text = std::fs::read_to_string(dir.join("logs/probe.log")).unwrap();
        let log = judge_client::report::session_log::parse_log(&text).unwrap();
        assert_eq!(log.meta("stop_reason"), Some("infra_error"), "{text}");
        assert_eq!(log.meta("mode"), Some(mode), "{text}");
        let reply = &log.turns.last().unwrap().2;
        assert!(reply.starts_with("[infra_error] "), "{text}");
    }
}
