//! inspect_ai (UK AISI's evaluation framework) evaluates agent-server as an `openai/<model>` model
//! with its defaults, as a new user would point it at the server: no X-Session-Id, and the
//! Responses API, which is its default for OpenAI models. The server's request metrics show the
//! route it used. inspect_ai lives in .venv/inspect (scripts/python-env.sh).

mod common;

use std::path::Path;
use std::process::Command;

#[test]
fn inspect_ai_evaluates_agent_server_through_the_responses_api() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let inspect = root.join(".venv/inspect/bin/inspect");
    assert!(
        inspect.exists(),
        "{} is missing: run scripts/python-env.sh (scripts/test.sh does)",
        inspect.display()
    );
    let data = tempfile::tempdir().unwrap();
    let server = common::Server::start(data.path(), &[]);
    let logs = data.path().join("inspect-logs");
    // inspect_ai takes a task file by a path relative to where it runs.
    std::fs::copy(
        root.join("tests/python/inspect_task.py"),
        data.path().join("inspect_task.py"),
    )
    .unwrap();
    let output = Command::new(&inspect)
        .args(["eval", "inspect_task.py"])
        .args(["--model", "openai/agentwall-builtin", "--display", "plain"])
        .arg("--log-dir")
        .arg(&logs)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url))
        .env("OPENAI_API_KEY", "unused")
        // Nothing leaves the machine: inspect_ai reports nothing by default; this keeps any
        // hook configured in the environment out.
        .env_remove("INSPECT_TELEMETRY")
        .current_dir(data.path())
        .output()
        .expect("inspect runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report = format!(
        "stdout:\n{stdout}\nstderr:\n{stderr}\nserver:\n{}",
        server.stderr()
    );
    assert!(output.status.success(), "{report}");
    assert!(
        stdout.contains("accuracy  1.000") || stdout.contains("accuracy 1.000"),
        "{report}"
    );

    let metrics = ureq::get(&format!("{}/metrics", server.base_url))
        .call()
        .unwrap()
        .into_body()
        .read_to_string()
        .unwrap();
    let requests = |route: &str| -> u64 {
        metrics
            .lines()
            .filter(|l| l.starts_with("agentwall_http_request_duration_seconds_count"))
            .filter(|l| l.contains(&format!("route=\"{route}\"")))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    };
    assert!(requests("/v1/responses") >= 1, "{metrics}");
    assert_eq!(requests("/v1/chat/completions"), 0, "{metrics}");
}
