//! `judge membench` end to end: the real `judge` binary against the real `agent-server` (embedded
//! and Redis + Postgres backends) and against a stateless target with no control plane; bad
//! dataset files refused with nothing written; a LiteLLM proxy as a real server with no control
//! plane.
//!
//! The Redis + Postgres test needs `AGENTWALL_TEST_REDIS_URL`, `AGENTWALL_TEST_DATABASE_URL` and
//! `AGENTWALL_TEST_PG_BINDIR` (`eval "$(scripts/test-services.sh start)"`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use actix_web::{HttpRequest, HttpResponse, web};
use common::{Server, binary, create_database};
use serde_json::{Value, json};

const FIXTURES: &str = "judge-client/tests/fixtures/membench";

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(FIXTURES)
        .join(name)
        .display()
        .to_string()
}

/// The real LoCoMo file, `../shared/datasets/locomo10.json` beside the checkout, when present.
fn real_locomo() -> Option<String> {
    let dir = std::env::var_os("AGENTWALL_DATASETS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/datasets"));
    let path = dir.join("locomo10.json");
    path.exists().then(|| path.display().to_string())
}

fn judge(args: &[&str]) -> (i32, String) {
    let output = Command::new(binary("judge"))
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .output()
        .expect("judge runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    (
        output.status.code().unwrap_or(-1),
        format!("{stdout}\n--- stderr ---\n{stderr}"),
    )
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Runs `judge membench` into a fresh folder; returns the run directory.
fn membench(
    endpoint: &str,
    data: &str,
    protocol: &str,
    extra: &[&str],
) -> (PathBuf, tempfile::TempDir) {
    let out = tempfile::tempdir().unwrap();
    let mut args = vec![
        "membench",
        "--endpoint",
        endpoint,
        "--dataset",
        "locomo",
        "--data",
        data,
        "--protocol",
        protocol,
        "--seed",
        "3",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let (code, output) = judge(&args);
    assert_eq!(code, 0, "{output}");
    let dirs: Vec<PathBuf> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(
        dirs.len(),
        1,
        "one run directory and nothing else: {dirs:?}"
    );
    (dirs[0].clone(), out)
}

/// How many turns agent-server has committed to memory, from its `/metrics`.
fn commits(endpoint: &str) -> u64 {
    let text = ureq::get(format!("{endpoint}/metrics"))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    text.lines()
        .filter(|l| l.contains("memory_operation_duration_seconds_count"))
        .filter(|l| l.contains("operation=\"commit\""))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap() as u64)
        .sum()
}

/// Runs membench with `protocol` against agent-server and checks what every such run passes;
/// with `inject`, also that the questions wrote nothing: they go through `X-Memory-Write: off`,
/// so the run commits one turn only, the capability probe's.
fn membench_agent_server(
    endpoint: &str,
    data: &str,
    protocol: &str,
) -> (PathBuf, tempfile::TempDir) {
    let before = commits(endpoint);
    let (dir, out) = membench(endpoint, data, protocol, &[]);
    assert_agent_server_run(&dir, protocol, 7, 9);
    if protocol == "inject" {
        assert_eq!(
            commits(endpoint) - before,
            1,
            "one turn committed: the capability probe's plain turn, on its own session (reset \
             after); the 7 questions, read-only, left memory unchanged"
        );
    }
    (dir, out)
}

/// The checks every run against agent-server passes, whatever its backend.
fn assert_agent_server_run(dir: &Path, protocol: &str, questions: usize, turns: u64) {
    for file in ["manifest.json", "results.json", "junit.xml", "report.html"] {
        assert!(dir.join(file).is_file(), "{file} written");
    }
    let manifest = read_json(&dir.join("manifest.json"));
    assert_eq!(manifest["config"]["protocol"], protocol);
    assert!(manifest["protocol"].as_str().unwrap().starts_with(protocol));
    assert_eq!(manifest["capabilities"]["base"]["mock_time"], true);
    // agent-server offers recall and read-only questions (X-Memory-Write: off).
    assert_eq!(manifest["capabilities"]["recall"], true, "{manifest}");
    assert_eq!(manifest["capabilities"]["read_only_questions"], true);
    let results = read_json(&dir.join("results.json"));
    let summary = &results["summary"];
    assert_eq!(summary["speed"]["ingested_turns"], turns);
    assert_eq!(summary["speed"]["failed_requests"], 0);
    assert!(
        summary["agent_recall_note"].is_null(),
        "the agent's recall@k is measured: {summary}"
    );
    let asked = results["questions"].as_array().unwrap();
    assert_eq!(asked.len(), questions);
    for q in asked {
        assert!(q["reply"].is_string(), "every question answered: {q}");
        assert!(q["score"].as_f64().is_some());
        assert!(q["prompt_tokens"].as_u64().is_some(), "usage recorded");
        // Measured wherever the reference retriever's is: never n/a against agent-server.
        assert_eq!(
            q["agent_recall"]["5"].as_f64().is_some(),
            q["bm25_recall"]["5"].as_f64().is_some(),
            "agent recall@5 measured where BM25's is: {q}"
        );
        if !q["recall_excluded"].is_null() {
            assert!(q["agent_recall"].is_null(), "left out of recall@k: {q}");
        }
    }
    // What recall returned names the dataset's turns: every item, since every turn sent had an
    // id; and with `inject`, where every turn is a fact, the questions recall something.
    let recalled: Vec<&Value> = asked
        .iter()
        .filter_map(|q| q["recalled"].as_array())
        .flatten()
        .collect();
    assert!(
        recalled
            .iter()
            .all(|i| !i["source_turn_ids"].as_array().unwrap().is_empty()),
        "recalled items carry source_turn_ids: {recalled:?}"
    );
    if protocol == "inject" {
        assert!(!recalled.is_empty(), "inject: questions recall facts");
    }
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert_eq!(junit.matches("<testcase ").count(), questions);
}

/// Every question's id and score, in the order of `results.json`.
fn scores(dir: &Path) -> Vec<(String, Value)> {
    read_json(&dir.join("results.json"))["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| (q["id"].as_str().unwrap().to_owned(), q["score"].clone()))
        .collect()
}

/// `--shard` splits the conversations, `judge merge` puts the parts back into the run one
/// process makes, and `--resume` finishes a run from its conversation checkpoints.
#[test]
fn shards_merge_into_the_whole_run_and_an_interrupted_run_resumes() {
    let data_dir = tempfile::tempdir().unwrap();
    let server = Server::start(data_dir.path(), &[]);
    let url = server.base_url.as_str();
    let data = fixture("locomo_small.json");
    let (whole, _whole_out) = membench(url, &data, "inject", &[]);
    let (part0, _out0) = membench(url, &data, "inject", &["--shard", "0/2"]);
    let (part1, _out1) = membench(url, &data, "inject", &["--shard", "1/2"]);
    for (part, conversation) in [(&part0, "conv-a"), (&part1, "conv-b")] {
        let questions = scores(part);
        assert!(!questions.is_empty());
        assert!(
            questions.iter().all(|(id, _)| id.starts_with(conversation)),
            "{part:?} holds {conversation} only: {questions:?}"
        );
        assert_eq!(read_json(&part.join("manifest.json"))["shard"]["count"], 2);
    }

    let merged_out = tempfile::tempdir().unwrap();
    let (code, output) = judge(&[
        "merge",
        "--out",
        merged_out.path().to_str().unwrap(),
        part1.to_str().unwrap(),
        part0.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{output}");
    assert!(output.contains("overall score"), "{output}");
    let merged: Vec<PathBuf> = std::fs::read_dir(merged_out.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let merged = &merged[0];
    assert_eq!(scores(merged), scores(&whole), "the merge is the whole run");
    let manifest = read_json(&merged.join("manifest.json"));
    assert_eq!(manifest["state"], "complete");
    assert_eq!(manifest["parts"].as_array().unwrap().len(), 2);
    assert!(manifest.get("shard").is_none());
    assert_eq!(
        manifest["questions_planned"],
        read_json(&whole.join("manifest.json"))["questions_planned"]
    );

    // A run stopped after its first conversation: its checkpoint is kept, the rest is run.
    let kept = scores(&whole);
    for file in [
        "results.json",
        "junit.xml",
        "report.html",
        "tests/conv-b.json",
    ] {
        std::fs::remove_file(whole.join(file)).unwrap();
    }
    let mut manifest = read_json(&whole.join("manifest.json"));
    manifest["state"] = json!("running");
    manifest.as_object_mut().unwrap().remove("finished_at");
    std::fs::write(
        whole.join("manifest.json"),
        serde_json::to_string(&manifest).unwrap(),
    )
    .unwrap();
    let (code, output) = judge(&[
        "membench",
        "--resume",
        whole.to_str().unwrap(),
        "--endpoint",
        url,
        "--quiet",
    ]);
    assert_eq!(code, 0, "{output}");
    let resumed = scores(&whole);
    let ids = |s: &[(String, Value)]| s.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&resumed), ids(&kept));
    let conv_a = |s: &[(String, Value)]| {
        s.iter()
            .filter(|(id, _)| id.starts_with("conv-a"))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(conv_a(&resumed), conv_a(&kept), "the checkpoint is kept");
    let manifest = read_json(&whole.join("manifest.json"));
    assert_eq!(manifest["state"], "complete");
    assert_eq!(manifest["resumed_at"].as_array().unwrap().len(), 1);
    for file in [
        "results.json",
        "junit.xml",
        "report.html",
        "tests/conv-b.json",
    ] {
        assert!(whole.join(file).is_file(), "{file} written again");
    }

    let (code, output) = judge(&["membench", "--resume", whole.to_str().unwrap(), "--quiet"]);
    assert_ne!(code, 0);
    assert!(output.contains("complete already"), "{output}");
}

#[test]
fn the_fixture_through_chat_and_inject_on_the_embedded_backend() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &[]);
    let locomo = fixture("locomo_small.json");
    let mut runs = Vec::new();
    for protocol in ["chat", "inject"] {
        let (dir, out) = membench_agent_server(&server.base_url, &locomo, protocol);
        runs.push((dir.clone(), out));
        let results = read_json(&dir.join("results.json"));
        let by_id = |id: &str| {
            results["questions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|q| q["id"] == id)
                .unwrap()
                .clone()
        };
        // The builtin model repeats what it stored: Lisbon comes back from memory.
        let lisbon = by_id("conv-a-q5");
        assert!(
            lisbon["reply"].as_str().unwrap().contains("Lisbon"),
            "{lisbon}"
        );
        assert!(lisbon["score"].as_f64().unwrap() > 0.0);
        assert!(
            lisbon["recall_excluded"]
                .as_str()
                .unwrap()
                .contains("malformed")
        );
        assert!(lisbon["bm25_recall"].is_null(), "left out of recall@k");
        let pixel = by_id("conv-b-q1");
        assert_eq!(pixel["bm25_recall"]["5"], 1.0, "BM25 finds the dog's name");
        let canoe = by_id("conv-a-q4");
        assert!(
            canoe["asked"]
                .as_str()
                .unwrap()
                .contains("Select the correct answer: (a)")
        );
        let manifest = read_json(&dir.join("manifest.json"));
        let problems = manifest["data_problems"].as_array().unwrap();
        assert!(problems.iter().any(|p| p["item"] == "conv-a-q5"));
        let summary = &results["summary"];
        assert!(
            summary["comparability_note"].is_null(),
            "a full run is its own reference"
        );
    }
    // The two runs paired per question by `judge compare`.
    let (code, output) = judge(&[
        "compare",
        runs[0].0.to_str().unwrap(),
        runs[1].0.to_str().unwrap(),
    ]);
    assert!(code == 0 || code == 3, "{output}");
    assert!(
        output.contains("membench: 7 questions paired (0 unpaired)")
            && output.contains("dataset: LoCoMo in both runs"),
        "{output}"
    );
    let (dir, _out) = membench(
        &server.base_url,
        &locomo,
        "chat",
        &["--only", "conv-b", "--exclude", "conv-b-q2"],
    );
    let results = read_json(&dir.join("results.json"));
    assert_eq!(results["questions"].as_array().unwrap().len(), 1);
    assert!(
        results["summary"]["comparability_note"].is_null(),
        "agent-server honours X-Memory-Write: off, so an --only run is comparable with a full one"
    );
    let manifest = read_json(&dir.join("manifest.json"));
    assert_eq!(manifest["excluded"], json!(["conv-b-q2"]));
}

#[test]
fn the_real_files_first_conversation_limited() {
    let Some(locomo) = real_locomo() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "../shared/datasets/locomo10.json is missing in CI"
        );
        eprintln!("../shared/datasets/locomo10.json absent: the fixture tests stand alone");
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &[]);
    let limits = [
        "--limit-conversations",
        "1",
        "--limit-sessions",
        "2",
        "--limit-questions",
        "6",
    ];
    for protocol in ["chat", "inject"] {
        let (dir, _out) = membench(&server.base_url, &locomo, protocol, &limits);
        // conv-26's first two sessions: 18 + 17 turns.
        assert_agent_server_run(&dir, protocol, 6, 35);
        let manifest = read_json(&dir.join("manifest.json"));
        assert_eq!(manifest["questions_planned"], 6);
        assert_eq!(manifest["dataset_file"], locomo);
    }
}

#[test]
fn the_fixture_through_chat_and_inject_on_redis_and_postgres() {
    let redis = std::env::var("AGENTWALL_TEST_REDIS_URL")
        .expect("AGENTWALL_TEST_REDIS_URL (eval \"$(scripts/test-services.sh start)\")");
    let admin = std::env::var("AGENTWALL_TEST_DATABASE_URL")
        .expect("AGENTWALL_TEST_DATABASE_URL (eval \"$(scripts/test-services.sh start)\")");
    let database = create_database(
        &admin,
        &format!("membench_{}", uuid::Uuid::new_v4().simple()),
    );
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(
        data.path(),
        &["--redis-url", &redis, "--database-url", &database],
    );
    let locomo = fixture("locomo_small.json");
    for protocol in ["chat", "inject"] {
        membench_agent_server(&server.base_url, &locomo, protocol);
    }
}

/// A stateless OpenAI-compatible target with no control plane (as a LiteLLM proxy is): it
/// answers "Lisbon" when its prompt mentions Lisbon, "yes" to LongMemEval's judge prompts, and
/// reports prompt tokens as words.
fn stateless_target() -> String {
    async fn chat(body: web::Json<Value>) -> HttpResponse {
        let prompt: String = body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["content"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let reply = if prompt.contains("Answer yes or no only.") {
            "yes"
        } else if prompt.contains("Lisbon") {
            "Lisbon"
        } else {
            "I do not know."
        };
        HttpResponse::Ok().json(json!({
            "id": "fake", "object": "chat.completion", "created": 0, "model": "fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt.split_whitespace().count(), "completion_tokens": 1, "total_tokens": 1}
        }))
    }
    async fn models(_: HttpRequest) -> HttpResponse {
        HttpResponse::Ok()
            .json(json!({"object": "list", "data": [{"id": "fake", "object": "model"}]}))
    }
    let port = testkit::http::serve(|app| {
        app.route("/v1/chat/completions", web::post().to(chat))
            .route("/v1/models", web::get().to(models));
    });
    format!("http://127.0.0.1:{port}")
}

#[test]
fn a_stateless_target_in_context_mode_with_capabilities_not_applicable() {
    let endpoint = stateless_target();
    let locomo = fixture("locomo_small.json");
    let (dir, _out) = membench(&endpoint, &locomo, "context", &["--context-tokens", "2000"]);
    let results = read_json(&dir.join("results.json"));
    let lisbon = results["questions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["id"] == "conv-a-q5")
        .unwrap();
    assert_eq!(
        lisbon["score"], 1.0,
        "the history reached the prompt: {lisbon}"
    );
    assert_eq!(lisbon["context_truncated"], false);
    assert!(lisbon["prompt_tokens"].as_u64().unwrap() > 50);
    assert_eq!(results["summary"]["speed"]["ingested_turns"], 0);
    let manifest = read_json(&dir.join("manifest.json"));
    let capabilities = &manifest["capabilities"];
    assert_eq!(capabilities["base"]["inject"], false);
    assert_eq!(capabilities["recall"], false);
    assert!(
        results["questions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|q| q["agent_recall"].is_null())
    );

    // chat still runs without a control plane; inject cannot and says so, writing nothing.
    let (dir, _out) = membench(&endpoint, &locomo, "chat", &["--limit-questions", "1"]);
    assert!(dir.join("results.json").is_file());
    let out = tempfile::tempdir().unwrap();
    let (code, output) = judge(&[
        "membench",
        "--endpoint",
        &endpoint,
        "--dataset",
        "locomo",
        "--data",
        &locomo,
        "--protocol",
        "inject",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(
        output.contains("needs POST /control/memory/inject"),
        "{output}"
    );
    assert_eq!(
        std::fs::read_dir(out.path()).unwrap().count(),
        0,
        "nothing written"
    );
}

#[test]
fn bad_files_are_refused_with_nothing_written() {
    let cases = [
        (
            "locomo",
            fixture("longmemeval_small.json"),
            "is not a LoCoMo",
        ),
        (
            "longmemeval",
            fixture("locomo_small.json"),
            "is not a LongMemEval",
        ),
        ("locomo", fixture("locomo_truncated.json"), "is truncated"),
        (
            "locomo",
            fixture("locomo_bad_date.json"),
            "conv-b session_1_date_time",
        ),
        ("locomo", fixture("no_such_file.json"), "cannot read"),
    ];
    for (dataset, data, expected) in cases {
        let parent = tempfile::tempdir().unwrap();
        let out = parent.path().join("runs");
        // The endpoint is never contacted: the file is checked first.
        let (code, output) = judge(&[
            "membench",
            "--endpoint",
            "http://127.0.0.1:9",
            "--dataset",
            dataset,
            "--data",
            &data,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_ne!(code, 0, "{data}");
        assert!(output.contains(expected), "{data}: {output}");
        assert!(!output.contains("panicked"), "{output}");
        assert!(!out.exists(), "nothing created for {data}");
    }
}

#[test]
fn longmemeval_accuracy_needs_the_model_judge() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &[]);
    let judge_endpoint = stateless_target();
    let longmemeval = fixture("longmemeval_small.json");
    let run = |extra: &[&str]| {
        let out = tempfile::tempdir().unwrap();
        let mut args = vec![
            "membench",
            "--endpoint",
            &server.base_url,
            "--dataset",
            "longmemeval",
            "--data",
            &longmemeval,
            "--protocol",
            "chat",
            "--quiet",
            "--out",
            out.path().to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let (code, output) = judge(&args);
        assert_eq!(code, 0, "{output}");
        let dir = std::fs::read_dir(out.path())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        (
            read_json(&dir.join("results.json")),
            read_json(&dir.join("manifest.json")),
            out,
        )
    };
    let (results, manifest, _out) = run(&[]);
    assert!(manifest["judge_model"].is_null());
    assert!(
        results["summary"]["overall"]["score"].is_null(),
        "accuracy not applicable"
    );
    assert!(
        results["summary"]["overall"]["f1_stand_in"]
            .as_f64()
            .is_some()
    );
    assert!(
        results["summary"]["score_definition"]
            .as_str()
            .unwrap()
            .contains("stand-in")
    );
    let first = &results["questions"][0];
    assert_eq!(first["evidence"], json!(["answer_s2:1"]));
    assert_eq!(first["bm25_recall"]["5"], 1.0);

    let (results, manifest, _out) = run(&["--judge-endpoint", &judge_endpoint]);
    assert_eq!(manifest["judge_model"], "fake");
    assert_eq!(
        results["summary"]["overall"]["score"], 1.0,
        "the judge said yes to all"
    );
    for q in results["questions"].as_array().unwrap() {
        assert_eq!(q["judge"]["reply"], "yes", "{q}");
    }
}

/// A real third-party server with no control plane: a LiteLLM proxy. `chat` and `context` run;
/// everything that needs the control plane (inject, the agent's recall@k, read-only questions) is
/// not applicable and says so, and the reference retriever is still scored from the dataset.
#[test]
fn a_litellm_proxy_without_a_control_plane() {
    let dir = tempfile::tempdir().unwrap();
    let proxy = common::litellm::LiteLlm::start(dir.path(), "I do not remember that.");
    let locomo = fixture("locomo_small.json");
    let model = ["--model", common::litellm::MODEL, "--only", "conv-a"];
    let (run, _out) = membench(&proxy.base_url, &locomo, "chat", &model);
    let manifest = read_json(&run.join("manifest.json"));
    let capabilities = &manifest["capabilities"];
    assert_eq!(capabilities["base"]["inject"], false, "{capabilities}");
    assert_eq!(capabilities["base"]["reset"], false, "{capabilities}");
    assert_eq!(capabilities["recall"], false, "{capabilities}");
    assert_eq!(capabilities["read_only_questions"], false, "{capabilities}");
    let results = read_json(&run.join("results.json"));
    let summary = &results["summary"];
    assert_eq!(summary["speed"]["ingested_turns"], 7, "conv-a's turns sent");
    assert_eq!(summary["speed"]["failed_requests"], 0);
    assert!(
        summary["agent_recall_note"]
            .as_str()
            .unwrap()
            .contains("not applicable"),
        "{summary}"
    );
    assert!(
        summary["comparability_note"]
            .as_str()
            .unwrap()
            .contains("not comparable"),
        "an --only run against a target that may store questions: {summary}"
    );
    let questions = results["questions"].as_array().unwrap();
    assert_eq!(questions.len(), 5);
    for q in questions {
        assert_eq!(q["reply"], "I do not remember that.", "{q}");
        assert!(q["agent_recall"].is_null(), "never 0 when not applicable");
    }
    assert!(
        questions.iter().any(|q| q["bm25_recall"]["5"].is_number()),
        "the reference retriever needs no control plane"
    );

    // `context` needs no control plane either. (LiteLLM's mock_response reports a fixed usage,
    // not the prompt's size, so the usage is checked as recorded, not as a measure of the prompt.)
    let (run, _out) = membench(
        &proxy.base_url,
        &locomo,
        "context",
        &[&model[..], &["--limit-questions", "1"]].concat(),
    );
    let results = read_json(&run.join("results.json"));
    let asked = &results["questions"][0];
    assert_eq!(asked["context_truncated"], false, "{asked}");
    assert!(
        asked["prompt_tokens"].as_u64().is_some(),
        "usage recorded: {asked}"
    );
    assert_eq!(
        results["summary"]["speed"]["ingested_turns"], 0,
        "nothing ingested"
    );
}
