//! The official OpenAI Python SDK against the real agent-server binary: completions, streams,
//! recall across requests, reset, inject and time travel (tests/python/sdk_check.py).
//! The interpreter comes from AGENTWALL_PYTHON or .venv (scripts/python-env.sh creates it).

mod common;

use std::path::Path;
use std::process::Command;

#[test]
fn official_openai_python_sdk_drives_the_server() {
    let data = tempfile::tempdir().unwrap();
    let server = common::Server::start(data.path(), &["--working-ttl", "6h"]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/sdk_check.py");
    let output = Command::new(common::python(common::Venv::OpenAi))
        .arg(&script)
        .arg(&server.base_url)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "sdk_check.py failed\nstdout:\n{stdout}\nstderr:\n{stderr}\nserver:\n{}",
        server.stderr()
    );
    assert!(stdout.contains("all checks passed"), "{stdout}");
}
