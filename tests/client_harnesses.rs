//! Real client harnesses against agent-server, run as their users run them, sending no
//! `X-Session-Id`: inspect_ai (UK AISI's evaluation framework) evaluates it as an `openai/...`
//! model, and promptfoo through its `openai:responses:` and `openai:chat:` providers.
//!
//! inspect_ai comes from .venv (scripts/python-env.sh); promptfoo from `npm ci` in
//! tests/clients/promptfoo (pinned to 0.121.20, the newest release that runs on Node 20). Both are
//! provisioned by scripts/test.sh.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::Server;
use serde_json::Value;

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// The `method route` requests agent-server has answered, by status, from its `/metrics`.
fn requests_to(base_url: &str, method: &str, route: &str) -> Vec<(String, u64)> {
    let metrics = ureq::get(&format!("{base_url}/metrics"))
        .call()
        .unwrap()
        .into_body()
        .read_to_string()
        .unwrap();
    metrics
        .lines()
        .filter(|l| l.starts_with("agentwall_http_requests_total{"))
        .filter(|l| {
            l.contains(&format!("route=\"{route}\"")) && l.contains(&format!("method=\"{method}\""))
        })
        .map(|l| {
            let status = l
                .split("status=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            let count = l.rsplit(' ').next().unwrap().parse::<u64>().unwrap();
            (status.to_owned(), count)
        })
        .collect()
}

/// Asserts every `method route` request was answered 200 and returns how many there were.
fn all_ok(base_url: &str, method: &str, route: &str) -> u64 {
    let by_status = requests_to(base_url, method, route);
    assert!(
        by_status.iter().all(|(status, _)| status == "200"),
        "{method} {route}: {by_status:?}"
    );
    by_status.iter().map(|(_, n)| n).sum()
}

fn describe(output: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn inspect_ai_evaluates_agent_server_through_the_responses_api_by_default() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &[]);
    let logs = tempfile::tempdir().unwrap();
    let inspect = common::litellm::python().with_file_name("inspect");
    // inspect_ai sends models of the GPT-5 family to the Responses API by default; agent-server
    // serves whatever model name it is asked for.
    let output = Command::new(&inspect)
        // inspect_ai takes the task file relative to the working directory.
        .args(["eval", "inspect_task.py"])
        .current_dir(clients_dir())
        .args(["--model", "openai/gpt-5-nano", "--log-format", "json"])
        .args(["--display", "plain", "--no-score-display", "--log-dir"])
        .arg(logs.path())
        .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url))
        .env("OPENAI_API_KEY", "sk-not-checked")
        .env_remove("OPENAI_ORG_ID")
        .output()
        .expect("inspect runs");
    assert!(output.status.success(), "{}", describe(&output));

    let log = std::fs::read_dir(logs.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("inspect wrote its log");
    let log: Value = serde_json::from_str(&std::fs::read_to_string(log).unwrap()).unwrap();
    assert_eq!(log["status"], "success", "{}", log["error"]);
    assert_eq!(log["eval"]["model"], "openai/gpt-5-nano");
    let accuracy = &log["results"]["scores"][0]["metrics"]["accuracy"]["value"];
    assert_eq!(
        accuracy, 1.0,
        "both samples answered from what the message itself says: {}",
        log["samples"]
    );
    // One request per sample; inspect_ai 0.3.285 sends one more of its own (its log records a
    // single model call per sample).
    let responses = all_ok(&server.base_url, "POST", "/v1/responses");
    assert!(
        (2..=3).contains(&responses),
        "{responses} Responses requests"
    );
    assert!(requests_to(&server.base_url, "POST", "/v1/chat/completions").is_empty());
}

#[test]
fn promptfoo_evaluates_agent_server_through_both_apis() {
    let promptfoo = clients_dir().join("promptfoo/node_modules/.bin/promptfoo");
    assert!(
        promptfoo.exists(),
        "{} is missing: run `npm ci` in tests/clients/promptfoo (scripts/test.sh does)",
        promptfoo.display()
    );
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &[]);
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("promptfooconfig.yaml");
    let base = format!("{}/v1", server.base_url);
    std::fs::write(
        &config,
        format!(
            "description: agentwall client check\n\
             providers:\n  \
               - id: openai:responses:builtin\n    config:\n      apiBaseUrl: {base}\n  \
               - id: openai:chat:builtin\n    config:\n      apiBaseUrl: {base}\n\
             prompts:\n  - \"{{{{question}}}}\"\n\
             tests:\n  \
               - vars:\n      question: My favourite colour is teal. What is my favourite colour?\n    \
                 assert:\n      - type: icontains\n        value: teal\n  \
               - vars:\n      question: My dog is called Pixel. What is my dog called?\n    \
                 assert:\n      - type: icontains\n        value: pixel\n"
        ),
    )
    .unwrap();
    let results = work.path().join("results.json");
    let output = Command::new(&promptfoo)
        .args(["eval", "--no-cache", "--no-progress-bar", "-c"])
        .arg(&config)
        .arg("-o")
        .arg(&results)
        .current_dir(work.path())
        // Offline and private: no telemetry, no update check, no sharing; its database in `work`.
        .env("PROMPTFOO_DISABLE_TELEMETRY", "1")
        .env("PROMPTFOO_DISABLE_UPDATE", "1")
        .env("PROMPTFOO_DISABLE_SHARING", "1")
        .env("PROMPTFOO_CONFIG_DIR", work.path())
        .env("OPENAI_API_KEY", "sk-not-checked")
        .output()
        .expect("promptfoo runs");
    assert!(results.exists(), "{}", describe(&output));
    let results: Value = serde_json::from_str(&std::fs::read_to_string(results).unwrap()).unwrap();
    let stats = &results["results"]["stats"];
    assert_eq!(stats["errors"], 0, "{}", describe(&output));
    assert_eq!(stats["failures"], 0, "{}", results["results"]["results"]);
    assert_eq!(stats["successes"], 4, "two questions through each API");
    assert_eq!(all_ok(&server.base_url, "POST", "/v1/responses"), 2);
    assert_eq!(all_ok(&server.base_url, "POST", "/v1/chat/completions"), 2);
}
