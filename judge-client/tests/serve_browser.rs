//! The dashboard in a real browser. This test starts the real binaries: two agent-servers (memory
//! on, memory off), `judge ltm` against each and `judge apps` against the first (so the runs
//! folder holds two comparable LTM runs and an apps run with app actions), an endpoint that
//! accepts connections and never answers (the injected agent whose circuit breaker opens), and
//! `judge serve --auth-token`. Then `tests/browser/dashboard.test.mjs` drives headless Chromium
//! (Debian's `chromium`, `$CHROMIUM` for another) with playwright-core: the token prompt, every
//! page, a simulation started from the UI and watched live to its end, its run page and
//! transcript, an apps transcript with its actions, two runs side by side, the circuit breakers.
//!
//! Screenshots of the main pages go to a temporary folder, or with `UPDATE_SCREENSHOTS=1` to
//! `docs/screenshots/` (so a plain test run leaves the tree clean).
//!
//! Needs node and `npm ci` in `judge-client/tests/browser/` (scripts/test.sh does both). The
//! agent-server binary is built through cargo like the workspace's cross-process tests do: a
//! process this test talks to over HTTP, not a dependency of judge-client.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use testkit::process::{free_port, wait_listening, workspace_binary};

const TOKEN: &str = "browser-test-token-5f1c";

/// A child process killed when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn agent_server(binary: &Path, data: &Path, memory: &str) -> (Running, String) {
    let port = free_port();
    let mut child = Command::new(binary)
        .arg("--addr")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--data-dir")
        .arg(data)
        .args(["--memory", memory])
        .env_remove("REDIS_URL")
        .env_remove("DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("agent-server starts");
    wait_listening(port, &mut child, "agent-server");
    (Running(child), format!("http://127.0.0.1:{port}"))
}

/// Runs `judge <args>` to its end; returns the run directory it added under `runs`.
fn judge_run(runs: &Path, args: &[&str]) -> String {
    let before: Vec<_> = std::fs::read_dir(runs)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    let out = Command::new(env!("CARGO_BIN_EXE_judge"))
        .args(args)
        .arg("--out")
        .arg(runs)
        .arg("--quiet")
        .output()
        .expect("judge runs");
    assert!(
        out.status.success(),
        "judge {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let added: Vec<String> = std::fs::read_dir(runs)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|name| !before.contains(name))
        .map(|name| name.to_string_lossy().into_owned())
        .collect();
    assert_eq!(added.len(), 1, "judge {args:?} added {added:?}");
    added.into_iter().next().unwrap()
}

/// An endpoint that accepts every connection and never answers: each call to it times out.
fn hanging_endpoint() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    format!("http://127.0.0.1:{port}")
}

/// `judge serve --auth-token` on a free loopback port; its URL is the line it prints.
fn judge_serve(runs: &Path) -> (Running, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_judge"))
        .args(["serve", "--addr", "127.0.0.1:0", "--auth-token", TOKEN])
        .arg("--runs")
        .arg(runs)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("judge serve starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("judge serve prints its address");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .trim_end_matches('/')
        .to_owned();
    (Running(child), url)
}

fn browser_project() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    assert!(
        dir.join("node_modules/playwright-core/package.json")
            .is_file(),
        "playwright-core is not installed: run `npm ci` in {} (scripts/test.sh does; needs node 20+ and npm)",
        dir.display()
    );
    dir
}

fn chromium() -> String {
    let path = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    assert!(
        Path::new(&path).exists(),
        "{path} is missing: install Debian's chromium (apt-get install -y chromium) or set CHROMIUM"
    );
    path
}

#[test]
fn the_dashboard_follows_runs_and_a_live_simulation_in_chromium() {
    let browser = browser_project();
    let chromium = chromium();
    let scratch = tempfile::tempdir().unwrap();
    let runs = scratch.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();

    let binary = workspace_binary("agent-server");
    let (_with_memory, agent) = agent_server(&binary, &scratch.path().join("on"), "on");
    let (_without_memory, amnesiac) = agent_server(&binary, &scratch.path().join("off"), "off");
    let ltm = |url: &str| {
        judge_run(
            &runs,
            &[
                "ltm",
                "--endpoint",
                url,
                "--seed",
                "3",
                // Three trials of five types: enough paired tests for memory off's losses to be a
                // regression the exact tests can tell from chance, as the compare step asserts.
                "--trials",
                "3",
                "--span",
                "200",
                "--filler-turn-tokens",
                "100",
                "--types",
                "needle,knowledge_update,shopping_list,trigger_rule,abstention",
            ],
        )
    };
    let ltm_a = ltm(&agent);
    // Run ids hold the second: B must be newer than A for the trend.
    std::thread::sleep(Duration::from_millis(1100));
    let ltm_b = ltm(&amnesiac);
    let apps = judge_run(
        &runs,
        &["apps", "--endpoint", &agent, "--trials", "1", "--seed", "2"],
    );
    let hang = hanging_endpoint();
    let (_serve, url) = judge_serve(&runs);

    let shots = if std::env::var_os("UPDATE_SCREENSHOTS").is_some() {
        workspace().join("docs/screenshots")
    } else {
        scratch.path().join("screenshots")
    };
    let out = Command::new("node")
        .arg("dashboard.test.mjs")
        .current_dir(&browser)
        .env("DASHBOARD_URL", &url)
        .env("DASHBOARD_TOKEN", TOKEN)
        .env("AGENT_URL", &agent)
        .env("HANG_URL", &hang)
        .env("LTM_A", &ltm_a)
        .env("LTM_B", &ltm_b)
        .env("APPS_RUN", &apps)
        .env("SCREENSHOTS", &shots)
        .env("CHROMIUM", &chromium)
        .output()
        .expect("node runs (install node 20+: apt-get install -y nodejs npm)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the browser checks failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("all dashboard checks passed"), "{stdout}");
    // Each main page was photographed, and is a real picture rather than a blank one.
    for name in [
        "token",
        "runs",
        "ltm-run",
        "compare",
        "live-sim",
        "sim-run",
        "transcript",
        "apps-transcript",
        "circuit-breakers",
    ] {
        let path = shots.join(format!("{name}.png"));
        let bytes = std::fs::read(&path).unwrap_or_default();
        assert!(
            bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000,
            "{} is missing or blank",
            path.display()
        );
    }
}
