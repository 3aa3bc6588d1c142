//! A LiteLLM proxy (PyPI `litellm[proxy]`, in .venv made by scripts/python-env.sh) serving a
//! `mock_response` model offline: a real third-party OpenAI-compatible server for tests, on both
//! Chat Completions and the Responses API.
//!
//! LiteLLM answers a `mock_response` model's Responses requests only unstreamed: a streamed one
//! fails inside the proxy (HTTP 500, "'async for' requires an object with __aiter__ method, got
//! ResponsesAPIResponse", LiteLLM 1.83). [`BRIDGED_MODEL`] streams the same mock reply over the
//! Responses API: LiteLLM serves it by translating to Chat Completions, which it sends to its own
//! mock model, whose chat streams work.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The name of the proxy's `mock_response` model.
pub const MODEL: &str = "mock-gpt";

/// A model whose Responses requests LiteLLM turns into Chat Completions requests to [`MODEL`] (on
/// this same proxy): LiteLLM's own Responses API code, streamed events included, with the mock
/// reply.
pub const BRIDGED_MODEL: &str = "bridged-gpt";

/// A LiteLLM proxy on 127.0.0.1; killed on drop.
pub struct LiteLlm {
    child: Child,
    log: PathBuf,
    pub base_url: String,
}

impl LiteLlm {
    /// Starts the proxy in `dir`; its model answers every request with `mock_reply`.
    pub fn start(dir: &Path, mock_reply: &str) -> Self {
        let litellm = super::python(super::Venv::OpenAi).with_file_name("litellm");
        assert!(
            litellm.exists(),
            "{} is missing: run scripts/python-env.sh (tests/python/requirements.txt has litellm[proxy])",
            litellm.display()
        );
        let port = super::free_port();
        let config = dir.join("litellm.yaml");
        // `custom_openai` has no Responses API of its own in LiteLLM, so LiteLLM translates.
        std::fs::write(
            &config,
            format!(
                "model_list:\n  - model_name: {MODEL}\n    litellm_params:\n      model: openai/mock-gpt\n      \
                 api_key: sk-not-used\n      mock_response: \"{mock_reply}\"\n  \
                 - model_name: {BRIDGED_MODEL}\n    litellm_params:\n      model: custom_openai/{MODEL}\n      \
                 api_base: http://127.0.0.1:{port}/v1\n      api_key: sk-not-used\n\
                 litellm_settings:\n  telemetry: false\n"
            ),
        )
        .unwrap();
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

    pub fn log_text(&self) -> String {
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
