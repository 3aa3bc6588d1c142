//! `judge serve` over run directories of every kind: a stopped simulation's run is marked
//! stopped (manifest, catalog, run page), and two runs of the same kind compare (sim, apps,
//! load; LTM is covered by serve_api.rs) while runs of different kinds get 422.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use judge_client::serve::{ServeConfig, bind};
use judge_client::suites::apps::ActionMode;
use judge_client::suites::apps::artifacts::write_outcome;
use judge_client::suites::apps::suite::AppsResults;
use serde_json::{Value, json};

use common::serve::Serve;

/// `judge serve` on a runs folder. Two workers: a stop can arrive on another thread than the one
/// running the run.
fn start_serve(runs: &Path) -> Serve {
    let (server, addr) = bind(ServeConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        runs: runs.to_path_buf(),
        auth_token: None,
        workers: 2,
    })
    .expect("binds on loopback");
    Serve::spawn(server, addr, None)
}

/// Creates and starts a simulation against `target`; returns (simulation id, run id).
async fn simulate(serve: &Serve, target: &str, rounds: usize) -> (String, String) {
    let config = json!({
        "simulation": {"name": "compare"},
        "target": {"endpoint": target, "timeout_seconds": 10},
        "run": {"seed": 3, "rounds": rounds, "personas": ["maya", "gus"], "concurrency": 2}
    });
    let (status, created) = serve.post_json("/simulations", &config).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let (status, started) = serve
        .post_json(&format!("/simulations/{id}/start"), &json!({}))
        .await;
    assert_eq!(status, 202, "{started}");
    (id, started["run_id"].as_str().unwrap().to_owned())
}

#[actix_rt::test]
async fn a_stopped_simulation_leaves_a_run_marked_stopped() {
    let runs = tempfile::tempdir().unwrap();
    let slow =
        common::spawn_with_delay(common::Brain::Stub, false, Duration::from_millis(200)).await;
    let s = start_serve(runs.path());
    let (id, run_id) = simulate(&s, &slow.url, 40).await;
    // Let it write its manifest and run a few rounds.
    actix_rt::time::sleep(Duration::from_millis(1500)).await;
    let (status, stopped) = s
        .post_json(&format!("/simulations/{id}/stop"), &json!({}))
        .await;
    assert_eq!(
        (status, &stopped["state"]),
        (200, &json!("stopped")),
        "{stopped}"
    );
    assert!(stopped["ended_at"].is_string(), "{stopped}");

    let dir = runs.path().join(&run_id);
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["state"], "stopped", "{manifest}");
    assert!(manifest["stopped_at"].is_string(), "{manifest}");
    assert_eq!(
        manifest["conversations_done"],
        stopped["conversations_done"]
    );
    assert_eq!(manifest["conversations_planned"], 2);
    // What `judge sim` wrote stays: the manifest is its own, with the stop added.
    assert_eq!(manifest["suite"], "sim");
    assert!(manifest["config_hash"].is_string(), "{manifest}");
    assert!(
        !dir.join("results.json").exists(),
        "a stopped run has no results"
    );

    // The run does not change after the stop, and every view says it was stopped.
    actix_rt::time::sleep(Duration::from_millis(800)).await;
    let again = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&again).unwrap(), manifest);
    let (_, list) = s.get("/runs").await;
    let line = list
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == run_id.as_str())
        .expect("the stopped run is listed")
        .clone();
    assert_eq!(line["state"], "stopped", "{line}");
    assert!(line["score"].is_null());
    let (status, page) = s.get(&format!("/runs/{run_id}")).await;
    assert_eq!(status, 200);
    assert_eq!(page["state"], "stopped");
    assert_eq!(page["manifest"]["state"], "stopped");
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("simulation.json")).unwrap())
            .unwrap();
    assert_eq!(
        (record["id"].as_str(), record["state"].as_str()),
        (Some(id.as_str()), Some("stopped"))
    );
    s.handle.stop(false).await;
    slow.stop().await;
}

/// An apps run as `judge apps` writes it: scenario folders, manifest, results.
async fn apps_run(root: &Path, id: &str, trials: u32) {
    let outcome = common::play_transfer_scenario(trials).await;
    let dir = root.join(id);
    write_outcome(&dir.join("scenarios"), &outcome).unwrap();
    let results =
        AppsResults::from_outcomes(1, ActionMode::Directives, Default::default(), &[outcome]);
    let manifest = json!({"run_id": id, "suite": "apps", "created_at": "2026-01-05T09:00:00Z"});
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    std::fs::write(
        dir.join("results.json"),
        serde_json::to_string(&results).unwrap(),
    )
    .unwrap();
}

/// `judge load` against `url`, writing one run under `out`.
fn load_run(url: &str, out: &Path, concurrency: &str) {
    let output = Command::new(env!("CARGO_BIN_EXE_judge"))
        .args([
            "load",
            "--endpoint",
            url,
            "--concurrency",
            concurrency,
            "--requests",
            "20",
            "--output-tokens",
            "4",
            "--threads",
            "1",
            "--quiet",
            "--out",
        ])
        .arg(out)
        .output()
        .expect("judge runs");
    assert!(
        output.status.success(),
        "judge load failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn metric<'a>(cmp: &'a Value, name: &str) -> &'a Value {
    cmp["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no metric {name} in {cmp}"))
}

#[actix_rt::test]
async fn runs_of_every_kind_compare_and_kinds_do_not_mix() {
    let runs = tempfile::tempdir().unwrap();
    let good = common::amnesiac().await;
    let other = common::stub().await;
    let s = start_serve(runs.path());

    // Two sim runs of the same seed against two targets.
    let (sim_a, run_a) = simulate(&s, &good.url, 2).await;
    let (sim_b, run_b) = simulate(&s, &other.url, 2).await;
    assert_eq!(s.wait_over(&sim_a).await["state"], "finished");
    assert_eq!(s.wait_over(&sim_b).await["state"], "finished");
    let (status, cmp) = s.get(&format!("/runs/{run_a}/compare/{run_b}")).await;
    assert_eq!(status, 200, "{cmp}");
    assert_eq!(
        (cmp["kind"].as_str(), cmp["unit"].as_str()),
        (Some("sim"), Some("conversation"))
    );
    assert_eq!(
        (cmp["run_a"].as_str(), cmp["run_b"].as_str()),
        (Some(run_a.as_str()), Some(run_b.as_str()))
    );
    let pairs = cmp["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2, "{cmp}");
    assert_eq!(cmp["unpaired"], 0);
    let (_, page_a) = s.get(&format!("/runs/{run_a}")).await;
    let maya = pairs
        .iter()
        .find(|p| p["id"] == "maya#1")
        .expect("maya's conversation");
    assert_eq!(maya["group"], "maya");
    let maya_a = page_a["results"]["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["persona_id"] == "maya")
        .unwrap();
    assert_eq!(maya["score_a"], maya_a["checks"]["score"]);
    assert_eq!(maya["passed_a"], maya_a["checks"]["goal_reached"]);
    let goal = metric(&cmp, "goal_rate");
    assert_eq!(goal["a"], page_a["results"]["summary"]["goal_rate"]);
    assert_eq!(goal["better"], "higher");
    for field in [
        "regressions",
        "improvements",
        "p_value",
        "alpha",
        "regression",
        "seed_a",
    ] {
        assert!(cmp.get(field).is_some(), "{field} missing: {cmp}");
    }
    // A run compared with itself: every pair equal, nothing regressed.
    let (_, same) = s.get(&format!("/runs/{run_a}/compare/{run_a}")).await;
    assert_eq!(
        (same["regressions"].as_u64(), same["mean_diff"].as_f64()),
        (Some(0), Some(0.0))
    );
    assert_eq!(metric(&same, "mean_score")["change"], "unchanged");

    // Apps runs: pairs per scenario, pass^k.
    apps_run(runs.path(), "apps-a", 2).await;
    apps_run(runs.path(), "apps-b", 3).await;
    let (status, cmp) = s.get("/runs/apps-a/compare/apps-b").await;
    assert_eq!(status, 200, "{cmp}");
    assert_eq!(
        (cmp["kind"].as_str(), cmp["unit"].as_str()),
        (Some("apps"), Some("scenario"))
    );
    assert_eq!(cmp["pairs"][0]["id"], "transfer-basic");
    let (_, apps_b) = s.get("/runs/apps-b").await;
    let scenario_b = &apps_b["results"]["scenarios"][0];
    assert_eq!(
        cmp["pairs"][0]["score_b"], scenario_b["pass_hat_k"],
        "{cmp}"
    );
    assert_eq!(cmp["pairs"][0]["passed_b"], scenario_b["all_passed"]);
    assert_eq!(
        metric(&cmp, "mean_pass_hat_k")["b"],
        apps_b["results"]["mean_pass_hat_k"]
    );

    // Load runs: pairs per load level, with their figures.
    let (load_a, load_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let url = other.url.clone();
    let (pa, pb) = (load_a.path().to_path_buf(), load_b.path().to_path_buf());
    actix_rt::task::spawn_blocking(move || {
        load_run(&url, &pa, "2");
        load_run(&url, &pb, "2");
    })
    .await
    .unwrap();
    let mut load_ids = Vec::new();
    for dir in [load_a.path(), load_b.path()] {
        let run = std::fs::read_dir(dir).unwrap().next().unwrap().unwrap();
        let id = format!("{}-{}", run.file_name().to_string_lossy(), load_ids.len());
        std::fs::rename(run.path(), runs.path().join(&id)).unwrap();
        load_ids.push(id);
    }
    let (status, cmp) = s
        .get(&format!("/runs/{}/compare/{}", load_ids[0], load_ids[1]))
        .await;
    assert_eq!(status, 200, "{cmp}");
    assert_eq!(
        (cmp["kind"].as_str(), cmp["unit"].as_str()),
        (Some("load"), Some("load level"))
    );
    let level = &cmp["pairs"][0];
    assert_eq!(level["score_a"], 1.0, "no failed request: {cmp}");
    let rps = level["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "requests_per_s")
        .expect("requests/s per level");
    assert!(
        rps["a"].as_f64().unwrap() > 0.0 && rps["b"].as_f64().unwrap() > 0.0,
        "{rps}"
    );
    assert_eq!(metric(&cmp, "latency_p50_ms")["better"], "lower");

    // Kinds do not mix; unknown runs are 404.
    let (status, body) = s.get(&format!("/runs/{run_a}/compare/apps-a")).await;
    assert_eq!(status, 422, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("sim run") && message.contains("apps run"),
        "{message}"
    );
    assert_eq!(s.get("/runs/apps-a/compare/nope").await.0, 404);
    s.handle.stop(false).await;
    good.stop().await;
    other.stop().await;
}

/// A membench results file: question `i` of `scores` scored `Some(f1)`, failed on the target's
/// side (`Err("timeout")`) or spoiled by the judge's (`Err("judge_error")`).
fn membench_run(runs: &Path, id: &str, scores: &[Result<f64, &str>]) {
    use judge_client::suites::membench::dataset::DatasetKind;
    use judge_client::suites::membench::results::{
        MembenchResults, QuestionResult, Summary, summarise_all,
    };
    let questions: Vec<QuestionResult> = scores
        .iter()
        .enumerate()
        .map(|(i, score)| {
            let (score, failure) = match score {
                Ok(f1) => (json!(f1), Value::Null),
                Err(kind) => (
                    if *kind == "judge_error" {
                        Value::Null
                    } else {
                        json!(0.0)
                    },
                    json!({"kind": kind, "message": "x", "attempts": 1}),
                ),
            };
            serde_json::from_value(json!({
                "id": format!("conv-a-q{i}"), "conversation": "conv-a",
                "category": if i % 2 == 0 { "1" } else { "2" }, "order": i,
                "asked": "?", "gold": "x", "reply": "x", "score": score, "failure": failure,
                "judge_score": if failure.is_null() { score.clone() } else { Value::Null },
                "evidence": [], "agent_recall": null, "bm25_top": [], "bm25_recall": null,
                "latency_ms": 5, "prompt_tokens": null
            }))
            .unwrap()
        })
        .collect();
    let (overall, categories, speed) =
        summarise_all(DatasetKind::Locomo, &questions, &Default::default(), 1.0);
    let results = MembenchResults {
        summary: Summary {
            dataset: DatasetKind::Locomo,
            overall,
            categories,
            speed,
            agent_recall_note: None,
            comparability_note: None,
            score_definition: "F1".into(),
        },
        ingestion: Default::default(),
        questions,
    };
    let dir = runs.join(id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("manifest.json"),
        json!({"run_id": id, "suite": "membench", "state": "complete", "created_at": "2025-01-01T00:00:00Z"})
            .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("results.json"),
        serde_json::to_string(&results).unwrap(),
    )
    .unwrap();
}

/// `judge compare --json` on two run directories: its exit code and its JSON.
fn cli_compare(a: &Path, b: &Path) -> (i32, Value) {
    let output = Command::new(env!("CARGO_BIN_EXE_judge"))
        .arg("compare")
        .arg("--json")
        .args([a, b])
        .output()
        .expect("judge runs");
    let text = String::from_utf8_lossy(&output.stdout);
    let json = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text}\n{}", String::from_utf8_lossy(&output.stderr)));
    (output.status.code().unwrap(), json)
}

#[actix_rt::test]
async fn membench_runs_pair_the_same_in_the_cli_and_in_serve() {
    let runs = tempfile::tempdir().unwrap();
    let f1 = |v: f64| Ok::<f64, &str>(v);
    // A: every question answered; q11 spoiled by the judge's side.
    let mut a: Vec<Result<f64, &str>> = vec![f1(1.0); 12];
    a[11] = Err("judge_error");
    // B: the same, but 9 questions worse, two of them timeouts (F1 0 for the target).
    let mut b = a.clone();
    for (i, v) in b.iter_mut().enumerate().take(9) {
        *v = if i < 2 { Err("timeout") } else { f1(0.25) };
    }
    // C: A with one question a little worse (no difference detectable).
    let mut c = a.clone();
    c[0] = f1(0.5);
    membench_run(runs.path(), "mb-a", &a);
    membench_run(runs.path(), "mb-b", &b);
    membench_run(runs.path(), "mb-c", &c);
    let s = start_serve(runs.path());
    for (x, y, direction, code) in [
        ("mb-a", "mb-b", "regression", 3),
        ("mb-b", "mb-a", "improvement", 0),
        ("mb-a", "mb-c", "no_difference", 0),
    ] {
        let (status, served) = s.get(&format!("/runs/{x}/compare/{y}")).await;
        assert_eq!(status, 200, "{served}");
        let (dx, dy) = (runs.path().join(x), runs.path().join(y));
        let (exit, printed) = actix_rt::task::spawn_blocking(move || cli_compare(&dx, &dy))
            .await
            .unwrap();
        // One comparison: the same JSON, so the same pairs and the same verdict.
        assert_eq!(printed, served, "{x} vs {y}");
        assert_eq!(served["direction"], direction, "{served}");
        assert_eq!(exit, code, "{served}");
        assert_eq!(
            (
                served["pairs"].as_array().unwrap().len(),
                &served["excluded"]
            ),
            (11, &json!(1))
        );
    }
    let (_, regression) = s.get("/runs/mb-a/compare/mb-b").await;
    assert_eq!(regression["failed_b"]["timeout"], 2, "{regression}");
    let (_, none) = s.get("/runs/mb-a/compare/mb-c").await;
    let verdict = none["verdict"].as_str().unwrap();
    assert!(
        verdict.starts_with("no difference detectable at this size; about ")
            && verdict.ends_with("questions would detect 4.5 points"),
        "{verdict}"
    );
    s.handle.stop(false).await;
}
