//! Starting the real binaries for cross-process tests.

#![allow(dead_code)] // each test binary uses a different subset

pub mod litellm;
pub mod recording;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use testkit::process::{free_port, workspace_binary as binary};

/// The virtualenvs `scripts/python-env.sh` makes, by the clients they hold.
#[derive(Debug, Clone, Copy)]
pub enum Venv {
    /// `.venv`: the OpenAI SDK, LiteLLM's proxy, numpy (`AGENTWALL_PYTHON` names another).
    OpenAi,
    /// `.venv/agents`: the MCP SDK and the OpenAI Agents SDK.
    Agents,
    /// `.venv/a2a`: the A2A SDK.
    A2a,
}

/// The Python interpreter of `venv`; panics, saying how to make it, when it is missing.
pub fn python(venv: Venv) -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = match venv {
        Venv::OpenAi => std::env::var_os("AGENTWALL_PYTHON")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace.join(".venv/bin/python")),
        Venv::Agents => workspace.join(".venv/agents/bin/python"),
        Venv::A2a => workspace.join(".venv/a2a/bin/python"),
    };
    assert!(
        path.exists(),
        "{} is missing: run scripts/python-env.sh (scripts/test.sh does) to install the {venv:?} \
         clients (tests/python/*requirements.txt)",
        path.display()
    );
    path
}

/// A running agent-server process; killed on drop if still running.
pub struct Server {
    child: Child,
    pub base_url: String,
    stderr: Arc<Mutex<String>>,
}

impl Server {
    pub fn start(data_dir: &Path, extra_args: &[&str]) -> Self {
        Self::start_with_env(data_dir, extra_args, &[])
    }

    /// [`Server::start`] with environment variables set; any `OTEL_*` of the test's own
    /// environment is left out.
    pub fn start_with_env(data_dir: &Path, extra_args: &[&str], env: &[(&str, &str)]) -> Self {
        let port = free_port();
        let mut command = Command::new(binary("agent-server"));
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("OTEL_") {
                command.env_remove(name);
            }
        }
        let mut child = command
            .arg("--addr")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--data-dir")
            .arg(data_dir)
            .args(extra_args)
            .envs(env.iter().copied())
            .env_remove("REDIS_URL")
            .env_remove("DATABASE_URL")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("agent-server starts");
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let pipe = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        let server = Self {
            child,
            base_url: format!("http://127.0.0.1:{port}"),
            stderr,
        };
        server.wait_ready();
        server
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if ureq::get(&format!("{}/healthz", self.base_url))
                .call()
                .is_ok()
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "agent-server did not become healthy; stderr:\n{}",
            self.stderr()
        );
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap()
    }

    /// Sends `signal` and waits (bounded) for the process to exit.
    pub fn stop_with(&mut self, signal: nix::sys::signal::Signal) -> ExitStatus {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid()), signal)
            .expect("signal sent");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // Let the reader thread drain the last lines.
                std::thread::sleep(Duration::from_millis(100));
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "agent-server did not exit after {signal}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One chat turn with only the new user message; returns the reply text.
pub fn say(base_url: &str, session: &str, text: &str) -> String {
    let body = serde_json::json!({"model": "agentwall-builtin", "messages": [{"role": "user", "content": text}]});
    let mut response = ureq::post(&format!("{base_url}/v1/chat/completions"))
        .header("X-Session-Id", session)
        .send_json(&body)
        .unwrap_or_else(|e| panic!("turn {text:?} failed: {e}"));
    let value: serde_json::Value = response.body_mut().read_json().unwrap();
    value["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Runs the `judge` CLI with `args`: its exit code, and its stdout and stderr (after a line
/// `--- stderr ---`).
pub fn judge(args: &[&str]) -> (i32, String) {
    let output = Command::new(binary("judge"))
        .args(args)
        .output()
        .expect("judge runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    (
        output.status.code().unwrap_or(-1),
        format!("{stdout}\n--- stderr ---\n{stderr}"),
    )
}

/// The single run directory below `out`.
pub fn run_dir(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "one run directory in {}", out.display());
    dirs.into_iter().next().unwrap()
}

pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Creates a database of its own on the test Postgres with its `psql`.
pub fn create_database(admin_url: &str, name: &str) -> String {
    let bindir = std::env::var("AGENTWALL_TEST_PG_BINDIR")
        .expect("AGENTWALL_TEST_PG_BINDIR (scripts/test-services.sh start)");
    let status = Command::new(Path::new(&bindir).join("psql"))
        .args([admin_url, "-q", "-c", &format!("CREATE DATABASE {name}")])
        .status()
        .expect("psql runs");
    assert!(status.success(), "CREATE DATABASE {name}");
    let (base, _) = admin_url.rsplit_once('/').expect("a database in the URL");
    format!("{base}/{name}")
}
