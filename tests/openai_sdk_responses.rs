//! The official OpenAI Python SDK against the real agent-server binary's Responses and
//! Conversations APIs, without X-Session-Id, on both memory backends: plain, streamed, a function
//! tool round trip, store=False, conversations, and a `previous_response_id` chain and a
//! conversation continued across a restart (tests/python/sdk_responses_check.py).
//! The interpreter comes from AGENTWALL_PYTHON or .venv (scripts/python-env.sh creates it).

mod common;

use std::path::Path;
use std::process::Command;

use common::{Server, create_database};

/// Runs one phase of the script against `server`.
fn phase(name: &str, server: &Server, state: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/sdk_responses_check.py");
    let output = Command::new(common::python(common::Venv::OpenAi))
        .arg(&script)
        .args([name, &server.base_url])
        .arg(state)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("all checks passed"),
        "sdk_responses_check.py {name} failed\nstdout:\n{stdout}\nstderr:\n{stderr}\nserver:\n{}",
        server.stderr()
    );
}

/// Both phases, with agent-server stopped (SIGTERM) and started again between them.
fn before_and_after_a_restart(args: &[&str]) {
    let data = tempfile::tempdir().unwrap();
    let state = data.path().join("sdk-state.json");
    let mut server = Server::start(data.path(), args);
    phase("before", &server, &state);
    let status = server.stop_with(nix::sys::signal::Signal::SIGTERM);
    assert!(status.success(), "{status}\n{}", server.stderr());
    let server = Server::start(data.path(), args);
    phase("after", &server, &state);
}

#[test]
fn the_sdks_responses_and_conversations_survive_a_restart_on_the_embedded_store() {
    before_and_after_a_restart(&[]);
}

#[test]
fn the_sdks_responses_and_conversations_survive_a_restart_on_redis_and_postgres() {
    let redis = std::env::var("AGENTWALL_TEST_REDIS_URL")
        .expect("AGENTWALL_TEST_REDIS_URL (eval \"$(scripts/test-services.sh start)\")");
    let admin = std::env::var("AGENTWALL_TEST_DATABASE_URL")
        .expect("AGENTWALL_TEST_DATABASE_URL (eval \"$(scripts/test-services.sh start)\")");
    let database = create_database(
        &admin,
        &format!("responses_{}", uuid::Uuid::new_v4().simple()),
    );
    before_and_after_a_restart(&["--redis-url", &redis, "--database-url", &database]);
}
