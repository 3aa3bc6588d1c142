//! The official OpenAI Python SDK against the real agent-server binary: completions, streams,
//! recall across requests, reset, inject and time travel (tests/python/sdk_check.py).
//! The interpreter comes from AGENTWALL_PYTHON or .venv (scripts/python-env.sh creates it).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn python() -> PathBuf {
    let path = std::env::var_os("AGENTWALL_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python"));
    assert!(
        path.exists(),
        "{} is missing: run scripts/python-env.sh (scripts/test.sh does) to install the OpenAI SDK",
        path.display()
    );
    path
}

#[test]
fn official_openai_python_sdk_drives_the_server() {
    let data = tempfile::tempdir().unwrap();
    let server = common::Server::start(data.path(), &["--working-ttl", "6h"]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/sdk_check.py");
    let output = Command::new(python())
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
