//! Every LLM-facing path against a real language model, offline: SmolLM2-135M-Instruct served by
//! llama.cpp's OpenAI-compatible server (`scripts/real-model.sh start`, which `scripts/test.sh`
//! runs and whose `AGENTWALL_REAL_MODEL_URL` these tests read).
//!
//! The model is weak: these tests prove protocol paths, real tokens, real latency and real
//! misbehaviour, never answer quality. They assert what must hold whatever the model says.
//!
//! - agent-server in upstream mode: plain and streamed turns, the model's `usage` passed on, the
//!   recalled memory present in the prompt the model received (seen through a recording proxy),
//!   the official OpenAI Python SDK through agent-server, and a prompt past the model's context
//!   window answered as OpenAI does (400 `context_length_exceeded`);
//! - the judge straight at the llama.cpp server: `probe`, `ltm --history full`, `apps` in both
//!   action modes, `sim` and `load --stream` all finish, every test graded or classified.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse, web};
use common::{Server, judge};
use serde_json::{Value, json};

/// The real model's base URL (no `/v1`) and the name it is served under.
fn real_model() -> (String, String) {
    let url = std::env::var("AGENTWALL_REAL_MODEL_URL").unwrap_or_else(|_| {
        panic!(
            "AGENTWALL_REAL_MODEL_URL is not set: run `eval \"$(scripts/real-model.sh start)\"` \
             first (scripts/test.sh does)"
        )
    });
    let name = std::env::var("AGENTWALL_REAL_MODEL_NAME").unwrap_or_else(|_| "smollm2".into());
    (url.trim_end_matches('/').to_owned(), name)
}

/// Request bodies the model received through the recording proxy.
type Received = Arc<Mutex<Vec<Value>>>;

/// A proxy in front of the real model that records every JSON request body and passes the
/// model's answer back whole (not streamed: the streamed test talks to the model directly).
fn recording_proxy(upstream: String) -> (String, Received) {
    let received: Received = Arc::default();
    let kept = received.clone();
    let port = testkit::http::serve(move |app| {
        app.app_data(web::Data::new(kept.clone()))
            .app_data(web::Data::new(upstream.clone()))
            .app_data(web::PayloadConfig::new(16 * 1024 * 1024))
            .default_service(web::to(forward));
    });
    (format!("http://127.0.0.1:{port}"), received)
}

async fn forward(
    req: HttpRequest,
    body: web::Bytes,
    received: web::Data<Received>,
    upstream: web::Data<String>,
) -> HttpResponse {
    if let Ok(value) = serde_json::from_slice::<Value>(&body) {
        received.lock().unwrap().push(value);
    }
    let client = awc::Client::builder()
        .timeout(Duration::from_secs(120))
        .finish();
    let url = format!("{}{}", upstream.as_str(), req.uri());
    let mut response = match client
        .request(req.method().clone(), url)
        .insert_header(("content-type", "application/json"))
        .send_body(body)
        .await
    {
        Ok(r) => r,
        Err(e) => return HttpResponse::BadGateway().body(e.to_string()),
    };
    let bytes = response.body().limit(16 * 1024 * 1024).await.unwrap();
    HttpResponse::build(response.status())
        .content_type("application/json")
        .body(bytes)
}

fn post(url: &str, session: &str, body: &Value) -> (u16, Value) {
    let response = ureq::post(url)
        .header("X-Session-Id", session)
        .config()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(180)))
        .build()
        .send_json(body)
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    let status = response.status().as_u16();
    let text = response.into_body().read_to_string().unwrap();
    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, value)
}

fn user_turn(model: &str, text: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": text}], "max_tokens": 48, "temperature": 0})
}

#[test]
fn agent_server_gives_a_real_model_memory_and_passes_on_its_usage() {
    let (url, name) = real_model();
    let (proxy, received) = recording_proxy(url);
    let data = tempfile::tempdir().unwrap();
    let llm_base = format!("{proxy}/v1");
    let server = Server::start(
        data.path(),
        &["--llm-base-url", &llm_base, "--llm-model", &name],
    );
    let chat = format!("{}/v1/chat/completions", server.base_url);
    let session = "real-model-memory";

    let (status, told) = post(
        &chat,
        session,
        &user_turn(&name, "My favourite colour is teal."),
    );
    assert_eq!(status, 200, "{told}");
    let reply = told["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(!reply.trim().is_empty(), "the model said nothing: {told}");
    // The model's own token counts, passed on (agent-server's prompt is longer than the turn).
    let usage = &told["usage"];
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 10, "{told}");
    assert!(usage["completion_tokens"].as_u64().unwrap() > 0, "{told}");
    assert_eq!(
        usage["total_tokens"].as_u64(),
        Some(
            usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
        )
    );

    let (status, asked) = post(
        &chat,
        session,
        &user_turn(&name, "What is my favourite colour?"),
    );
    assert_eq!(status, 200, "{asked}");
    // Only the new turn was sent: the colour can reach the model only from agent-server's memory.
    let prompts = received.lock().unwrap().clone();
    assert_eq!(prompts.len(), 2, "{prompts:?}");
    let second = prompts[1]["messages"].to_string();
    assert!(
        second.contains("teal"),
        "the recalled fact is not in the prompt the model received: {second}"
    );
    assert!(
        !prompts[0]["messages"]
            .to_string()
            .contains("What is my favourite colour")
    );
}

#[test]
fn a_prompt_past_the_context_window_is_refused_as_openai_does() {
    let (url, name) = real_model();
    let data = tempfile::tempdir().unwrap();
    let llm_base = format!("{url}/v1");
    let server = Server::start(
        data.path(),
        &["--llm-base-url", &llm_base, "--llm-model", &name],
    );
    // About 9,000 tokens against a 2,048-token window.
    let long = "The quiet harbour faces the old mill. ".repeat(1000);
    let (status, body) = post(
        &format!("{}/v1/chat/completions", server.base_url),
        "real-model-overflow",
        &user_turn(&name, &long),
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "context_length_exceeded", "{body}");
    assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
    assert_eq!(body["error"]["param"], "messages", "{body}");
}

#[test]
fn the_official_sdk_streams_a_real_model_through_agent_server() {
    let (url, name) = real_model();
    let data = tempfile::tempdir().unwrap();
    let llm_base = format!("{url}/v1");
    let server = Server::start(
        data.path(),
        &["--llm-base-url", &llm_base, "--llm-model", &name],
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/sdk_real_model_check.py");
    let output = Command::new(common::python(common::Venv::OpenAi))
        .arg(script)
        .arg(&server.base_url)
        .arg(&name)
        .output()
        .expect("python runs");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "{text}\nagent-server:\n{}",
        server.stderr()
    );
    assert!(text.contains("ok streamed usage"), "{text}");
}

/// Runs the judge; returns its exit code and everything it printed.
/// The results.json of the single run directory below `out`.
fn results(out: &Path) -> Value {
    let dir = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap_or_else(|| panic!("no run directory in {}", out.display()));
    serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap()
}

#[test]
fn the_judge_finishes_every_suite_against_a_real_model_server() {
    let (url, name) = real_model();

    let (code, output) = judge(&["probe", "--endpoint", &url, "--model", &name]);
    assert_eq!(code, 0, "{output}");
    let lower = output.to_lowercase();
    assert!(lower.contains("control"), "{output}");

    // Long-term memory with the whole conversation resent: every test graded or classified.
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().to_str().unwrap();
    let (code, output) = judge(&[
        "ltm",
        "--endpoint",
        &url,
        "--model",
        &name,
        "--history",
        "full",
        "--trials",
        "1",
        "--span",
        "300",
        "--types",
        "needle,knowledge_update,abstention,reset_isolation",
        "--concurrency",
        "1",
        "--timeout",
        "120",
        "--max-tokens",
        "48",
        "--out",
        out_dir,
        "--quiet",
    ]);
    assert_eq!(code, 0, "{output}");
    let ltm = results(out.path());
    for t in ltm["types"].as_array().unwrap() {
        let tests = t["tests"].as_u64().unwrap();
        assert_eq!(tests, 1, "{t}");
        // Graded (passed or failed), or classified (an error kind, or not applicable).
        let counted = t["passed"].as_u64().unwrap()
            + t["failed"].as_u64().unwrap()
            + t["errors"].as_u64().unwrap()
            + (tests - t["applicable"].as_u64().unwrap());
        assert!(counted >= tests, "{t}");
    }
    // The control plane is not there: reset isolation is not applicable, never scored 0.
    let reset = ltm["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["test_type"] == "reset_isolation")
        .unwrap();
    assert_eq!(reset["applicable"], 0, "{reset}");

    for mode in ["tools", "directives"] {
        let out = tempfile::tempdir().unwrap();
        let (code, output) = judge(&[
            "apps",
            "--endpoint",
            &url,
            "--model",
            &name,
            "--action-mode",
            mode,
            "--only",
            "transfer-basic",
            "--trials",
            "1",
            "--timeout",
            "120",
            "--max-tokens",
            "64",
            "--out",
            out.path().to_str().unwrap(),
            "--quiet",
        ]);
        assert!(code == 0 || code == 2, "apps {mode}: {output}");
        let apps = results(out.path());
        assert!(apps.to_string().contains("transfer-basic"), "{apps}");
    }

    let out = tempfile::tempdir().unwrap();
    let (code, output) = judge(&[
        "sim",
        "--endpoint",
        &url,
        "--model",
        &name,
        "--persona",
        "maya,gus",
        "--rounds",
        "2",
        "--trials",
        "1",
        "--concurrency",
        "1",
        "--timeout",
        "120",
        "--max-tokens",
        "48",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{output}");
    let sim = results(out.path());
    assert!(sim.to_string().contains("maya"), "{sim}");

    let out = tempfile::tempdir().unwrap();
    let (code, output) = judge(&[
        "load",
        "--endpoint",
        &url,
        "--model",
        &name,
        "--stream",
        "--concurrency",
        "1",
        "--duration",
        "6s",
        "--warmup",
        "1s",
        "--output-tokens",
        "uniform:8-16",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{output}");
    let load = results(out.path()).to_string();
    // Time to first token, inter-token latency and time per output token from real streams.
    for figure in ["ttft", "itl", "tpot"] {
        assert!(load.contains(figure), "no {figure} in {load}");
    }
}
