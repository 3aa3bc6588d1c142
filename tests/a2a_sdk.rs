//! The official A2A Python SDK's client (a2a-sdk, A2A 1.0 over JSON-RPC) against the real
//! agent-server binary: it resolves the agent card, sends a message and streams the next, is
//! refused another session's task and context, and after agent-server restarts on the same data
//! gets the task back (tests/python/a2a_sdk_check.py).
//! The interpreter is .venv/a2a's (scripts/python-env.sh installs tests/python/a2a-requirements.txt).

mod common;

use std::path::Path;
use std::process::Command;

/// Runs one step of the check against `server`; asserts it passed.
fn step(server: &common::Server, name: &str, state: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/a2a_sdk_check.py");
    let output = Command::new(common::python(common::Venv::A2a))
        .arg(&script)
        .arg(&server.base_url)
        .arg(name)
        .arg(state)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("all checks passed"),
        "a2a_sdk_check.py {name} failed\nstdout:\n{stdout}\nstderr:\n{stderr}\nserver:\n{}",
        server.stderr()
    );
}

#[test]
fn the_official_a2a_sdk_client_drives_agent_server_across_a_restart() {
    let data = tempfile::tempdir().unwrap();
    let state = data.path().join("a2a-check.json");
    let mut server = common::Server::start(&data.path().join("server"), &[]);
    step(&server, "before", &state);
    let status = server.stop_with(nix::sys::signal::Signal::SIGTERM);
    assert!(status.success(), "agent-server stopped: {status}");
    let server = common::Server::start(&data.path().join("server"), &[]);
    step(&server, "after", &state);
}
