//! agent-server in upstream mode against a real third-party OpenAI-compatible server running
//! offline: the LiteLLM proxy (PyPI `litellm[proxy]`, in .venv) with a `mock_response` model. The
//! official OpenAI Python SDK streams a reply produced by LiteLLM through agent-server
//! (tests/python/sdk_upstream_check.py).

mod common;

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const MOCK_REPLY: &str = "Hello from the LiteLLM mock upstream.";

fn python() -> PathBuf {
    let path = std::env::var_os("AGENTWALL_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python"));
    assert!(
        path.exists(),
        "{} is missing: run scripts/python-env.sh (scripts/test.sh does)",
        path.display()
    );
    path
}

/// A LiteLLM proxy on 127.0.0.1; killed on drop.
struct LiteLlm {
    child: Child,
    log: PathBuf,
    base_url: String,
}

impl LiteLlm {
    fn start(dir: &Path) -> Self {
        let litellm = python().with_file_name("litellm");
        assert!(
            litellm.exists(),
            "{} is missing: run scripts/python-env.sh (tests/python/requirements.txt has litellm[proxy])",
            litellm.display()
        );
        let config = dir.join("litellm.yaml");
        std::fs::write(
            &config,
            format!(
                "model_list:\n  - model_name: mock-gpt\n    litellm_params:\n      model: openai/mock-gpt\n      \
                 api_key: sk-not-used\n      mock_response: \"{MOCK_REPLY}\"\nlitellm_settings:\n  telemetry: false\n"
            ),
        )
        .unwrap();
        let port = common::free_port();
        let log = dir.join("litellm.log");
        let child = Command::new(&litellm)
            .args([
                "--config",
                config.to_str().unwrap(),
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
            ])
            // Offline: the bundled model cost map instead of fetching it.
            .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            .env("DISABLE_SCHEMA_UPDATE", "True")
            .env_remove("DATABASE_URL")
            .current_dir(dir)
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(Stdio::from(
                std::fs::File::options().append(true).open(&log).unwrap(),
            ))
            .spawn()
            .expect("litellm starts");
        let proxy = Self {
            child,
            log,
            base_url: format!("http://127.0.0.1:{port}"),
        };
        proxy.wait_ready();
        proxy
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(180);
        while Instant::now() < deadline {
            if ureq::get(&format!("{}/health/liveliness", self.base_url))
                .call()
                .is_ok()
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!(
            "LiteLLM did not start within 180 s; its log:\n{}",
            self.log_text()
        );
    }

    fn log_text(&self) -> String {
        let mut text = String::new();
        if let Ok(mut f) = std::fs::File::open(&self.log) {
            let _ = f.read_to_string(&mut text);
        }
        text
    }
}

impl Drop for LiteLlm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn official_sdk_streams_a_reply_produced_by_litellm_through_agent_server() {
    let dir = tempfile::tempdir().unwrap();
    let litellm = LiteLlm::start(dir.path());
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
