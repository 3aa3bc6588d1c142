//! agent-server in upstream mode against a real third-party OpenAI-compatible server running
//! offline: the LiteLLM proxy (PyPI `litellm[proxy]`, in .venv) with a `mock_response` model. The
//! official OpenAI Python SDK streams a reply produced by LiteLLM through agent-server
//! (tests/python/sdk_upstream_check.py). LiteLLM serves the Responses API too, so under
//! `--llm-api auto` Responses turns reach it as Responses requests: plain, streamed and chained.

mod common;

use std::path::Path;
use std::process::Command;

use common::litellm::{BRIDGED_MODEL, LiteLlm, MODEL};
use serde_json::{Value, json};

const MOCK_REPLY: &str = "Hello from the LiteLLM mock upstream.";

/// One LiteLLM for both checks: it takes a minute or more to start on a busy machine.
#[test]
fn litellm_answers_through_agent_server_on_both_apis() {
    let dir = tempfile::tempdir().unwrap();
    let litellm = LiteLlm::start(dir.path(), MOCK_REPLY);
    official_sdk_streams_a_reply_produced_by_litellm_through_agent_server(&litellm);
    responses_turns_reach_litellm_as_responses_requests_plain_streamed_and_chained(&litellm);
}

fn official_sdk_streams_a_reply_produced_by_litellm_through_agent_server(litellm: &LiteLlm) {
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
    let output = Command::new(common::python(common::Venv::OpenAi))
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

fn respond(base_url: &str, body: &Value) -> String {
    let mut response = ureq::post(&format!("{base_url}/v1/responses"))
        .header("X-Session-Id", "litellm-responses")
        .send_json(body)
        .unwrap_or_else(|e| panic!("POST /v1/responses {body} failed: {e}"));
    response.body_mut().read_to_string().unwrap()
}

fn responses_turns_reach_litellm_as_responses_requests_plain_streamed_and_chained(
    litellm: &LiteLlm,
) {
    let data = tempfile::tempdir().unwrap();
    let upstream = format!("{}/v1", litellm.base_url);
    // `--llm-api auto` (the default), and no `--llm-model`: each request's model goes upstream.
    let server = common::Server::start(
        data.path(),
        &["--llm-base-url", &upstream, "--llm-timeout", "30s"],
    );
    let context = || {
        format!(
            "agent-server:\n{}\nlitellm:\n{}",
            server.stderr(),
            litellm.log_text()
        )
    };

    let first: Value = serde_json::from_str(&respond(
        &server.base_url,
        &json!({"model": MODEL, "input": "My kayak is green.", "metadata": {"run": "litellm"}}),
    ))
    .unwrap();
    assert_eq!(first["output_text"], MOCK_REPLY, "{first}\n{}", context());
    assert_eq!(first["status"], "completed");
    let second: Value = serde_json::from_str(&respond(
        &server.base_url,
        &json!({"model": MODEL, "input": "What colour is my kayak?", "previous_response_id": first["id"]}),
    ))
    .unwrap();
    assert_eq!(second["output_text"], MOCK_REPLY, "{second}\n{}", context());
    assert_eq!(second["previous_response_id"], first["id"]);

    let raw = respond(
        &server.base_url,
        &json!({"model": BRIDGED_MODEL, "input": "And its name?", "stream": true,
            "previous_response_id": second["id"]}),
    );
    let events: Vec<Value> = raw
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let deltas: String = events
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, MOCK_REPLY, "{raw}\n{}", context());
    assert!(
        events
            .iter()
            .filter(|e| e["type"] == "response.output_text.delta")
            .count()
            > 1,
        "the reply did not stream: {raw}"
    );
    let done = events.last().unwrap();
    assert_eq!(done["type"], "response.completed", "{raw}\n{}", context());
    assert_eq!(done["response"]["previous_response_id"], second["id"]);
    // The chain holds the streamed turn too: it was stored before the stream completed.
    let third = ureq::get(&format!(
        "{}/v1/responses/{}",
        server.base_url,
        done["response"]["id"].as_str().unwrap()
    ))
    .call()
    .map(|mut r| r.body_mut().read_json::<Value>().unwrap())
    .unwrap();
    assert_eq!(third["output_text"], MOCK_REPLY);

    // Where the calls went: LiteLLM's request log, agent-server's log and metrics. The probe and
    // three turns reached /v1/responses (the bridged model's own chat call is LiteLLM's).
    let log = litellm.log_text();
    let native = log.matches(r#""POST /v1/responses HTTP/1.1" 200"#).count();
    assert_eq!(native, 3, "{}", context());
    assert_eq!(
        log.matches(r#""POST /v1/responses HTTP/1.1" 400"#).count(),
        1,
        "{}",
        context()
    );
    assert!(
        server
            .stderr()
            .contains("the upstream serves the Responses API"),
        "{}",
        context()
    );
    let metrics = ureq::get(&format!("{}/metrics", server.base_url))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    for line in [
        r#"agentwall_upstream_request_duration_seconds_count{api="responses",mode="json",outcome="ok"} 2"#,
        r#"agentwall_upstream_request_duration_seconds_count{api="responses",mode="stream",outcome="ok"} 1"#,
    ] {
        assert!(metrics.contains(line), "{line} missing from\n{metrics}");
    }
    assert!(
        !metrics.contains(r#"api="chat""#),
        "a turn went as chat:\n{metrics}"
    );
}
