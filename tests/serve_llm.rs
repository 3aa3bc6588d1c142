//! A simulation started through `judge serve` whose user simulator and judge are LLM endpoints:
//! agent-server's builtin model plays the agent under test, the user and the judge (it is
//! OpenAI-compatible). The same simulation through `judge sim --user-endpoint --judge-endpoint`
//! against a second, fresh agent-server must give the same conversations and scores: the API
//! runs the command line's machinery, not a copy of it. Keys are only variable names and never
//! come back.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use awc::Client;
use common::{Server, binary};
use judge_client::serve::{ServeConfig, bind};
use serde_json::{Value, json};

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn only_run(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

#[actix_rt::test]
async fn an_api_simulation_with_an_llm_user_and_judge_matches_the_command_line() {
    let data_api = tempfile::tempdir().unwrap();
    let data_cli = tempfile::tempdir().unwrap();
    let agent_api = Server::start(data_api.path(), &[]);
    let agent_cli = Server::start(data_cli.path(), &[]);
    let runs = tempfile::tempdir().unwrap();
    let (server, addr) = bind(ServeConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        runs: runs.path().to_path_buf(),
        auth_token: None,
        workers: 1,
    })
    .unwrap();
    let handle = server.handle();
    actix_rt::spawn(server);
    let client = Client::builder().timeout(Duration::from_secs(60)).finish();
    let base = format!("http://{addr}");

    // PATH is set everywhere, so its value is sent as the judge's key: it must never be shown.
    let path_value = std::env::var("PATH").unwrap();
    let url = &agent_api.base_url;
    let yaml = format!(
        "simulation:\n  name: llm user and judge\ntarget:\n  endpoint: {url}\nrun:\n  seed: 7\n  rounds: 2\n  personas: [maya, gus]\nuser_simulator:\n  endpoint: {url}\njudge:\n  endpoint: {url}\n  api_key_env: PATH\n"
    );
    let mut r = client
        .post(format!("{base}/simulations"))
        .insert_header(("Content-Type", "application/yaml"))
        .send_body(yaml)
        .await
        .unwrap();
    let created: Value = r.json().await.unwrap();
    assert_eq!(r.status().as_u16(), 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(
        created["config"]["user_simulator"]["endpoint"],
        url.as_str()
    );

    // A bad LLM section is refused when created, with the field named.
    let mut r = client
        .post(format!("{base}/simulations"))
        .send_json(
            &json!({"simulation": {"name": "x"}, "target": {"endpoint": url},
                           "judge": {"endpoint": "ftp://nope"}}),
        )
        .await
        .unwrap();
    let refused: Value = r.json().await.unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("judge.endpoint"),
        "{refused}"
    );

    let mut r = client
        .post(format!("{base}/simulations/{id}/start"))
        .send_json(&json!({}))
        .await
        .unwrap();
    let started: Value = r.json().await.unwrap();
    assert_eq!(r.status().as_u16(), 202, "{started}");
    let mut sim = Value::Null;
    for _ in 0..600 {
        let mut r = client
            .get(format!("{base}/simulations/{id}"))
            .send()
            .await
            .unwrap();
        sim = r.json().limit(1 << 20).await.unwrap();
        if sim["state"] != "running" {
            break;
        }
        actix_rt::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(sim["state"], "finished", "{sim}");
    assert!(!sim.to_string().contains(&path_value), "the key was echoed");
    let api_dir = runs.path().join(sim["run_id"].as_str().unwrap());
    let api_results = read(&api_dir.join("results.json"));
    assert_eq!(read(&api_dir.join("manifest.json"))["simulator"], "llm");
    assert_eq!(api_results["simulator"], "llm");
    let conversations = api_results["conversations"].as_array().unwrap();
    assert_eq!(conversations.len(), 2);
    for c in conversations {
        // The judge was asked about every conversation (a rubric, or why there is none).
        assert!(
            c.get("rubric").is_some() || c.get("rubric_failure").is_some(),
            "the judge was not asked: {c}"
        );
    }

    // The same simulation on the command line, against a fresh agent-server.
    let out = tempfile::tempdir().unwrap();
    let cli_url = agent_cli.base_url.clone();
    let out_path = out.path().to_path_buf();
    let output = actix_rt::task::spawn_blocking(move || {
        Command::new(binary("judge"))
            .args([
                "sim",
                "--endpoint",
                &cli_url,
                "--seed",
                "7",
                "--rounds",
                "2",
            ])
            .args(["--persona", "maya,gus", "--user-endpoint", &cli_url])
            .args(["--judge-endpoint", &cli_url, "--out"])
            .arg(&out_path)
            .env("JUDGE_JUDGE_API_KEY", "any")
            .output()
            .expect("judge runs")
    })
    .await
    .unwrap();
    // The builtin model playing the user repeats itself, so the simulator-fidelity rules may
    // leave nothing to score: then the run ends "not measured" (exit 4), the same verdict the
    // API's run records. What this test checks is that the two agree.
    assert!(
        matches!(output.status.code(), Some(0 | 4)),
        "judge sim failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let cli_results = read(&only_run(out.path()).join("results.json"));
    assert_eq!(cli_results["simulator"], "llm");
    assert_eq!(api_results["conversations"], cli_results["conversations"]);
    assert_eq!(api_results["summary"], cli_results["summary"]);
    handle.stop(false).await;
}
