//! agent-server in upstream mode against a real third-party OpenAI-compatible server running
//! offline: the LiteLLM proxy (PyPI `litellm[proxy]`, in .venv) with a `mock_response` model. The
//! official OpenAI Python SDK streams a reply produced by LiteLLM through agent-server
//! (tests/python/sdk_upstream_check.py).

mod common;

use std::path::Path;
use std::process::Command;

use common::litellm::{LiteLlm, python};

const MOCK_REPLY: &str = "Hello from the LiteLLM mock upstream.";

#[test]
fn official_sdk_streams_a_reply_produced_by_litellm_through_agent_server() {
    let dir = tempfile::tempdir().unwrap();
    let litellm = LiteLlm::start(dir.path(), MOCK_REPLY);
    let data = tempfile::tempdir().unwrap();
    let upstream = format!("{}/v1", litellm.base_url);
    let server = common::Server::start(
        data.path(),
        &[
            "--llm-base-url",
            &upstream,
            "--llm-model",
            "mock-gpt",
            "--llm-timeout",
            "30s",
        ],
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/sdk_upstream_check.py");
    let output = Command::new(python())
        .arg(&script)
        .arg(&server.base_url)
        .arg(MOCK_REPLY)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("all checks passed"),
        "sdk_upstream_check.py failed\nstdout:\n{stdout}\nstderr:\n{stderr}\nagent-server:\n{}\nlitellm:\n{}",
        server.stderr(),
        litellm.log_text()
    );
}
