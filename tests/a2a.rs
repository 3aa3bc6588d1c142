//! The judge over A2A against what we did not write: an agent built with the official A2A Python
//! SDK (a2a-sdk 1.3.0: A2A 1.0, JSON-RPC, SSE), wrapping a scripted model that remembers what it
//! is told in a context (tests/python/a2a_agent.py), benchmarked by `judge ltm` with both history
//! modes and `judge sim` over `--api a2a`; its failures (a task failed, rejected, asking for
//! input) classified; `judge membench`, `judge conform --api a2a` and `judge load --api a2a
//! --stream` against it.
//! The interpreter is .venv/a2a's (scripts/python-env.sh).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::{free_port, judge, read_json, run_dir};
use serde_json::Value;

/// The SDK agent, killed when the test ends, however it ends.
struct Agent {
    child: Child,
    url: String,
}

impl Agent {
    fn start(args: &[&str]) -> Self {
        let port = free_port();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/a2a_agent.py");
        let mut child = Command::new(common::python(common::Venv::A2a))
            .arg(&script)
            .arg(port.to_string())
            .args(args)
            .stdout(Stdio::null())
            // The SDK logs every refused request of the conformance checks with its traceback.
            .stderr(Stdio::null())
            .spawn()
            .expect("the A2A agent starts");
        testkit::process::wait_listening(port, &mut child, "the A2A SDK agent");
        Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `judge ltm` over A2A with `history`: the run's results and manifest.
fn ltm(agent: &Agent, history: &str, extra: &[&str]) -> (Value, Value) {
    let out = tempfile::tempdir().unwrap();
    let mut args = vec![
        "ltm",
        "--endpoint",
        &agent.url,
        "--api",
        "a2a",
        "--history",
        history,
        "--trials",
        "1",
        "--span",
        "300",
        "--timeout",
        "20",
        "--out",
        out.path().to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let (code, output) = judge(&args);
    assert_eq!(code, 0, "{output}");
    let dir = run_dir(out.path());
    (
        read_json(&dir.join("results.json")),
        read_json(&dir.join("manifest.json")),
    )
}

fn status_of<'r>(results: &'r Value, test_type: &str) -> &'r str {
    results["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["test_type"] == test_type)
        .and_then(|t| t["status"].as_str())
        .unwrap_or_else(|| panic!("no {test_type} test in {results:#}"))
}

#[test]
fn judge_ltm_over_a2a_scores_an_sdk_agents_memory_with_either_history_mode() {
    let agent = Agent::start(&["--control"]);
    for history in ["full", "new"] {
        let (results, manifest) = ltm(&agent, history, &[]);
        assert_eq!(results["api"], "a2a");
        assert_eq!(results["history"], history);
        let overall = results["overall"].as_f64().unwrap();
        // The scripted model keeps facts, lists and who lives where, and nothing of time or
        // rules: far from nothing, far from everything.
        assert!(
            (0.4..0.95).contains(&overall),
            "history {history}: overall {overall}\n{results:#}"
        );
        for passes in ["needle", "multi_hop", "abstention"] {
            assert_eq!(status_of(&results, passes), "passed", "{history}: {passes}");
        }
        assert_eq!(status_of(&results, "relative_date"), "failed");
        // The control plane and the clock are HTTP extensions at the base URL, probed: this
        // agent serves a reset and honours X-Mock-Time, and has no inject.
        let capabilities = &manifest["capabilities"];
        assert_eq!(capabilities["a2a"], true);
        assert_eq!(capabilities["reset"], true);
        assert_eq!(capabilities["mock_time"], true, "{capabilities:#}");
        assert_eq!(capabilities["inject"], false);
        assert_ne!(status_of(&results, "reset_isolation"), "not_applicable");
        assert_eq!(status_of(&results, "injected_recall"), "not_applicable");
        let card = &capabilities["agent_card"];
        assert_eq!(card["name"], "scripted-memo");
        assert_eq!(card["streaming"], true);
        assert_eq!(card["protocol_version"], "1.0");
        assert_eq!(card["skills"][0]["id"], "remember");
        assert!(card["url"].as_str().unwrap().ends_with("/a2a"));
        for test in results["tests"].as_array().unwrap() {
            assert!(test.get("failure").is_none_or(Value::is_null), "{test:#}");
        }
    }
}

#[test]
fn history_full_carries_the_conversation_to_an_agent_that_keeps_nothing() {
    // Stateless, without a control plane, answering with direct messages.
    let agent = Agent::start(&["--stateless", "--reply", "message", "--no-streaming"]);
    let (full, manifest) = ltm(&agent, "full", &[]);
    let (new, _) = ltm(&agent, "new", &[]);
    let (full, new) = (
        full["overall"].as_f64().unwrap(),
        new["overall"].as_f64().unwrap(),
    );
    assert!(full >= 0.4, "full {full}");
    assert!(
        full > new + 0.2,
        "the earlier conversation reaches the agent only with full: full {full}, new {new}"
    );
    assert_eq!(manifest["capabilities"]["reset"], false);
    assert_eq!(manifest["capabilities"]["agent_card"]["streaming"], false);
}

#[test]
fn an_sdk_agents_failures_are_classified_never_scored_as_answers() {
    for state in ["failed", "rejected", "input-required"] {
        let agent = Agent::start(&["--control", "--fail-every", "6", "--fail-state", state]);
        let (results, _) = ltm(&agent, "new", &[]);
        let failures: Vec<&Value> = results["tests"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t.get("failure").filter(|f| !f.is_null()))
            .collect();
        assert!(!failures.is_empty(), "{state}: {results:#}");
        for failure in failures {
            assert_eq!(failure["kind"], "agent_error", "{state}: {failure}");
            assert!(
                failure["message"].as_str().unwrap().contains(state),
                "{state}: {failure}"
            );
            assert!(
                failure["message"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("scripted {state}")),
                "the agent's status message is kept: {failure}"
            );
        }
    }
}

#[test]
fn judge_sim_over_a2a_completes_and_scores_every_conversation() {
    let agent = Agent::start(&[]);
    let out = tempfile::tempdir().unwrap();
    let (code, output) = judge(&[
        "sim",
        "--endpoint",
        &agent.url,
        "--api",
        "a2a",
        "--rounds",
        "4",
        "--seed",
        "3",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{output}");
    let results = read_json(&run_dir(out.path()).join("results.json"));
    assert_eq!(results["api"], "a2a");
    let summary = &results["summary"];
    assert!(
        summary["conversations"].as_u64().unwrap() >= 8,
        "{summary:#}"
    );
    assert_eq!(summary["conversations"], summary["scored_conversations"]);
    assert_eq!(
        summary["stop_reasons"]["max_turns"],
        summary["conversations"]
    );
    assert_eq!(summary["empty_replies"], 0);
    let score = summary["mean_score"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&score), "{summary:#}");

    // An agent that fails a task: the conversation stops on the failure's class, and is scored.
    let failing = Agent::start(&["--fail-every", "3", "--fail-state", "rejected"]);
    let out = tempfile::tempdir().unwrap();
    let (code, output) = judge(&[
        "sim",
        "--endpoint",
        &failing.url,
        "--api",
        "a2a",
        "--rounds",
        "4",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{output}");
    let results = read_json(&run_dir(out.path()).join("results.json"));
    let summary = &results["summary"];
    assert!(
        summary["stop_reasons"]["agent_error"].as_u64().unwrap() >= 1,
        "{summary:#}"
    );
    assert_eq!(summary["conversations"], summary["scored_conversations"]);
}

#[test]
fn judge_conform_and_load_over_a2a_against_the_sdk() {
    for (args, streaming) in [
        (&[][..], true),
        (&["--no-streaming", "--reply", "message"][..], false),
    ] {
        let agent = Agent::start(args);
        let out = tempfile::tempdir().unwrap();
        let (code, output) = judge(&[
            "conform",
            "--endpoint",
            &agent.url,
            "--api",
            "a2a",
            "--out",
            out.path().to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "every applicable check passes:\n{output}");
        let results = read_json(&run_dir(out.path()).join("results.json"));
        let status = |name: &str| {
            results["checks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["name"] == name)
                .map(|c| c["status"].as_str().unwrap().to_owned())
                .unwrap()
        };
        assert_eq!(results["failed"], 0, "{results:#}");
        for always in [
            "a2a.agent_card",
            "a2a.send_message",
            "a2a.error_malformed_json",
            "a2a.error_unknown_method",
            "a2a.error_invalid_params",
            "a2a.error_task_not_found",
            "a2a.error_version_not_supported",
        ] {
            assert_eq!(status(always), "pass", "{always}");
        }
        if streaming {
            for name in ["a2a.stream_events", "a2a.get_task", "a2a.cancel_terminal"] {
                assert_eq!(status(name), "pass", "{name}");
            }
            // Streamed load: the first artifact chunk is the first token.
            let out = tempfile::tempdir().unwrap();
            let (code, output) = judge(&[
                "load",
                "--endpoint",
                &agent.url,
                "--api",
                "a2a",
                "--stream",
                "--concurrency",
                "2",
                "--requests",
                "30",
                "--out",
                out.path().to_str().unwrap(),
                "--quiet",
            ]);
            assert_eq!(code, 0, "{output}");
            let load = read_json(&run_dir(out.path()).join("results.json"));
            assert_eq!(load["api"], "a2a");
            assert_eq!(
                load["model"], "scripted-memo",
                "the agent's name stands for a model"
            );
            let step = &load["steps"][0];
            assert_eq!(step["requests"]["ok"], 30, "{step:#}");
            assert_eq!(step["requests"]["failed"], 0, "{step:#}");
            assert!(step["ttft"]["p50_ms"].as_f64().unwrap() > 0.0, "{step:#}");
        } else {
            assert_eq!(status("a2a.stream_unsupported"), "pass");
            assert_eq!(status("a2a.task_state"), "not_applicable");
        }
    }
}

#[test]
fn judge_membench_over_a2a_ingests_turn_by_turn_and_asks_every_question() {
    let agent = Agent::start(&[]);
    let data = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("judge-client/tests/fixtures/membench/locomo_small.json");
    let out = tempfile::tempdir().unwrap();
    let (code, output) = judge(&[
        "membench",
        "--endpoint",
        &agent.url,
        "--api",
        "a2a",
        "--dataset",
        "locomo",
        "--data",
        data.to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 0, "{output}");
    let dir = run_dir(out.path());
    let manifest = read_json(&dir.join("manifest.json"));
    assert_eq!(manifest["config"]["api"], "a2a");
    let results = read_json(&dir.join("results.json"));
    let overall = &results["summary"]["overall"];
    assert_eq!(overall["answered"], overall["questions"], "{overall:#}");
    assert_eq!(overall["failed"], 0);
    for (conversation, ingestion) in results["ingestion"].as_object().unwrap() {
        assert_eq!(
            ingestion["turns"], ingestion["requests"],
            "{conversation}: one SendMessage per turn"
        );
        assert!(
            ingestion
                .get("errors")
                .is_none_or(|e| e.as_array().unwrap().is_empty()),
            "{ingestion:#}"
        );
    }
    for question in results["questions"].as_array().unwrap() {
        assert!(question["reply"].is_string(), "{question:#}");
    }
}

#[test]
fn judge_apps_over_a2a_plays_directives_and_refuses_tools_to_an_agent_without_the_extension() {
    let data = tempfile::tempdir().unwrap();
    let server = common::Server::start(data.path(), &[]);
    let apps = |mode: &str, out: &Path| {
        let (code, output) = judge(&[
            "apps",
            "--endpoint",
            &server.base_url,
            "--api",
            "a2a",
            "--action-mode",
            mode,
            "--only",
            "transfer-basic,check-balance",
            "--trials",
            "1",
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ]);
        assert_eq!(code, 0, "{mode}: {output}");
        read_json(&run_dir(out).join("results.json"))
    };
    // agent-server's card declares no tools extension: auto plays directives, and they pass.
    let out = tempfile::tempdir().unwrap();
    let auto = apps("auto", out.path());
    assert_eq!(auto["mode"], "directives", "{auto:#}");
    assert_eq!(auto["passed_scenarios"], 2, "{auto:#}");
    // tools mode is not applicable there: not graded, never a 0.
    let out = tempfile::tempdir().unwrap();
    let tools = apps("tools", out.path());
    assert_eq!(tools["graded_scenarios"], 0, "{tools:#}");
    assert!(tools["mean_pass_hat_k"].is_null(), "{tools:#}");
}

/// `judge SUITE --endpoint URL --api API ARGS...`: the run directory.
fn run_over(suite: &str, url: &str, api: &str, args: &[&str], out: &Path) -> PathBuf {
    let mut all = vec![suite, "--endpoint", url, "--api", api];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", out.to_str().unwrap()]);
    let (code, output) = judge(&all);
    assert_eq!(code, 0, "{suite} over {api}: {output}");
    run_dir(out)
}

#[test]
fn agent_server_scores_over_a2a_what_it_scores_over_chat_completions() {
    let data = tempfile::tempdir().unwrap();
    let server = common::Server::start(data.path(), &[]);
    let ltm_args = ["--trials", "1", "--seed", "5", "--span", "300"];
    let sim_args = ["--rounds", "4", "--seed", "3"];
    for (suite, args) in [("ltm", &ltm_args[..]), ("sim", &sim_args[..])] {
        let (out_chat, out_a2a) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let chat = run_over(suite, &server.base_url, "chat", args, out_chat.path());
        let a2a = run_over(suite, &server.base_url, "a2a", args, out_a2a.path());
        let (code, output) = judge(&["compare", chat.to_str().unwrap(), a2a.to_str().unwrap()]);
        assert_eq!(code, 0, "{suite}: {output}");
        assert!(
            output.contains("every paired") || output.contains("no difference"),
            "{suite}: {output}"
        );
        let (a, b) = (
            read_json(&chat.join("results.json")),
            read_json(&a2a.join("results.json")),
        );
        let score = |r: &Value| {
            if suite == "ltm" {
                r["overall"].clone()
            } else {
                r["summary"]["mean_score"].clone()
            }
        };
        assert_eq!(score(&a), score(&b), "{suite}: {a:#} against {b:#}");
        assert!(score(&a).is_number(), "{suite}: {a:#}");
    }
}
