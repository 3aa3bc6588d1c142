//! The dashboard in a real browser: headless Chromium (Debian's `chromium`; `$CHROMIUM` to use
//! another binary) loads every page of `judge serve` over real run directories and a simulation
//! run through the API, and the DOM it renders after the page's script ran is checked. A
//! screenshot of each main page is taken; `UPDATE_SCREENSHOTS=1` keeps them in `docs/`
//! (`docs/dashboard-*.png`).
//!
//! Chromium is driven by its own command line (`--dump-dom`, `--screenshot`): each page load is
//! a fresh browser, which is enough to check what each page shows; clicks are not simulated (the
//! buttons call the same API the HTTP tests cover).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use judge_client::config::{HistoryMode, LtmConfig};
use judge_client::run::{self, Silent};
use judge_client::serve::{ServeConfig, bind};
use judge_client::suites::ltm::TestType;
use judge_client::target::{Credentials, RetryPolicy, TargetSettings};
use serde_json::{Value, json};

fn chromium() -> String {
    let path = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    assert!(
        Path::new(&path).exists(),
        "{path} is missing: install Debian's chromium (apt-get install -y chromium) or set CHROMIUM"
    );
    path
}

/// Flags for a quiet, sandbox-free headless browser that talks to nothing but the test server.
fn browser(profile: &Path) -> Command {
    let mut cmd = Command::new(chromium());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--window-size=1280,1000",
        // Virtual time lets the page's fetches finish before the DOM is taken. It never runs
        // out while a request is open, so only pages whose event stream ends are loaded here
        // (a finished simulation's stream replays and closes).
        "--virtual-time-budget=3000",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

/// The DOM of `url` after its script ran.
fn render(url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = browser(profile.path())
        .arg("--dump-dom")
        .arg(url)
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed on {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Screenshots go to `docs/` with `UPDATE_SCREENSHOTS=1` (so a plain test run leaves the tree
/// clean), to a temporary folder otherwise; either way each must be a real picture.
fn screenshot(url: &str, name: &str, scratch: &Path) {
    let dir = if std::env::var_os("UPDATE_SCREENSHOTS").is_some() {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs")
    } else {
        scratch.to_path_buf()
    };
    let path = dir.join(format!("dashboard-{name}.png"));
    let profile = tempfile::tempdir().unwrap();
    let out = browser(profile.path())
        .arg(format!("--screenshot={}", path.display()))
        .arg(url)
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "screenshot of {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    assert!(size > 5_000, "{} is empty", path.display());
}

/// Runs `f` (a blocking browser call) off the runtime, so the servers keep answering it.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.await.expect("the browser thread finishes")
}

fn ltm_config(seed: u64) -> LtmConfig {
    LtmConfig {
        seed,
        trials: 1,
        span_tokens: 200,
        filler_turn_tokens: 100,
        history: HistoryMode::New,
        concurrency: 3,
        types: TestType::ALL[..4].to_vec(),
    }
}

async fn ltm_run(url: &str, out: &Path) -> String {
    let settings = TargetSettings {
        timeout_ms: 10_000,
        retry: RetryPolicy {
            max_retries: 1,
            base_ms: 10,
            max_wait_ms: 50,
        },
        ..TargetSettings::new(url)
    };
    run::start(
        settings,
        Credentials::default(),
        ltm_config(4),
        out,
        &Silent,
    )
    .await
    .expect("ltm run")
    .manifest
    .run_id
}

async fn call(method: &str, url: String, body: Option<Value>) -> Value {
    let client = awc::Client::builder()
        .timeout(Duration::from_secs(30))
        .finish();
    let mut response = match (method, body) {
        ("POST", Some(body)) => client.post(url).send_json(&body).await.unwrap(),
        ("POST", None) => client.post(url).send().await.unwrap(),
        _ => client.get(url).send().await.unwrap(),
    };
    assert!(response.status().is_success(), "{}", response.status());
    response.json().limit(16 << 20).await.unwrap()
}

#[actix_rt::test]
async fn every_dashboard_page_renders_what_the_runs_hold() {
    let runs = tempfile::tempdir().unwrap();
    let oracle = common::oracle(&ltm_config(4).specs()).await;
    let amnesiac = common::amnesiac().await;
    let maya = common::stub().await;
    let a = ltm_run(&oracle.url, runs.path()).await;
    let b = ltm_run(&amnesiac.url, runs.path()).await;
    let (server, addr) = bind(ServeConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        runs: runs.path().to_path_buf(),
        auth_token: None,
        workers: 2,
    })
    .unwrap();
    let handle = server.handle();
    actix_rt::spawn(server);
    let base = format!("http://{addr}");

    // A simulation with an injected endpoint, created, injected and started through the API.
    let config = json!({"simulation": {"name": "browser sim"},
        "target": {"endpoint": amnesiac.url}, "run": {"rounds": 3, "personas": ["maya", "gus"]}});
    let sim = call("POST", format!("{base}/simulations"), Some(config)).await;
    let id = sim["id"].as_str().unwrap().to_owned();
    call(
        "POST",
        format!("{base}/simulations/{id}/inject-agent"),
        Some(json!({
        "agent_id": "maya", "endpoint_url": maya.url, "protocol": "openai"})),
    )
    .await;
    call("POST", format!("{base}/simulations/{id}/start"), None).await;
    let mut finished = Value::Null;
    for _ in 0..100 {
        finished = call("GET", format!("{base}/simulations/{id}"), None).await;
        if finished["state"] == "finished" {
            break;
        }
        actix_rt::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(finished["state"], "finished", "{finished}");
    let run_id = finished["run_id"].as_str().unwrap().to_owned();
    let rounds = finished["rounds_done"].as_u64().unwrap() as usize;

    let base2 = base.clone();
    let (a2, b2, id2, run2) = (a.clone(), b.clone(), id.clone(), run_id.clone());
    let pages = blocking(move || {
        let base = base2;
        let transcript = "transcripts/conversation-0001.json";
        vec![
            render(&format!("{base}/")),
            render(&format!("{base}/#/run/{a2}")),
            render(&format!("{base}/#/run/{run2}")),
            render(&format!("{base}/#/transcript/{run2}/{transcript}")),
            render(&format!("{base}/#/compare/{a2}/{b2}")),
            render(&format!("{base}/#/simulations")),
            render(&format!("{base}/#/sim/{id2}")),
        ]
    })
    .await;
    let [
        runs_page,
        ltm_page,
        sim_run,
        transcript,
        compare,
        sims,
        live,
    ] = <[String; 7]>::try_from(pages).unwrap();

    // Runs list: both LTM runs and the simulation's run, with scores, and the compare picker.
    for run in [&a, &b, &run_id] {
        assert!(
            runs_page.contains(&format!(r#"data-run="{run}""#)),
            "{run} missing: {runs_page}"
        );
    }
    assert!(
        runs_page.contains("cmp-go") && runs_page.contains("%"),
        "{runs_page}"
    );
    // The LTM run: a chart and one row per test.
    assert!(
        ltm_page.contains("<svg") && ltm_page.contains("Mean score per test type"),
        "{ltm_page}"
    );
    let tests = ltm_config(4).specs().len();
    assert_eq!(ltm_page.matches("data-test=").count(), tests, "{ltm_page}");
    // The sim run: one row per conversation, the injected endpoint's metrics.
    assert_eq!(
        sim_run.matches("data-conversation=").count(),
        2,
        "{sim_run}"
    );
    assert!(sim_run.contains(r#"data-agent="maya""#), "{sim_run}");
    // The transcript: maya played by the endpoint, the target's replies.
    assert!(transcript.contains("maya@injected"), "{transcript}");
    assert!(
        transcript.contains("Hello there.") && transcript.contains("Noted."),
        "{transcript}"
    );
    // The comparison: the amnesiac regresses against the oracle.
    assert!(compare.contains("B regresses against A"), "{compare}");
    assert_eq!(compare.matches("<tr").count(), tests + 1, "{compare}");
    // Simulations, and the live page replaying a finished run: every round, the end state.
    assert!(sims.contains(&format!(r#"data-sim="{id}""#)), "{sims}");
    assert!(
        live.contains(r#"id="sim-state" class="finished""#),
        "{live}"
    );
    assert_eq!(
        live.matches(r#"class="turn user round""#).count(),
        rounds,
        "{live}"
    );
    assert!(live.contains(&format!("#/run/{run_id}")), "{live}");

    let shots = vec![
        (format!("{base}/"), "runs"),
        (format!("{base}/#/run/{a}"), "ltm-run"),
        (format!("{base}/#/run/{run_id}"), "sim-run"),
        (
            format!("{base}/#/transcript/{run_id}/transcripts/conversation-0001.json"),
            "transcript",
        ),
        (format!("{base}/#/compare/{a}/{b}"), "compare"),
        (format!("{base}/#/sim/{id}"), "live-sim"),
    ];
    let scratch = tempfile::tempdir().unwrap();
    let scratch_path = scratch.path().to_path_buf();
    blocking(move || {
        for (url, name) in shots {
            screenshot(&url, name, &scratch_path);
        }
    })
    .await;
    handle.stop(false).await;
    for fake in [oracle, amnesiac, maya] {
        fake.stop().await;
    }
}
