//! The `judge` CLI speaking the Responses API (`--api responses`, `--history new|full|chain`) to
//! the real agent-server, with a recording proxy between them where the requests themselves are
//! the evidence:
//!
//! - `ltm`: the builtin agent scores what it scores over Chat Completions; every turn goes to
//!   `/v1/responses` (agent-server's `/metrics` counts them); a chain names the session's last
//!   response as `previous_response_id` (the stored response says so too) and starts over after
//!   a reset; the run records its API and history, and `judge compare` labels the difference;
//! - `apps` in tool mode: the same scenarios pass with the same final states, tools in the
//!   Responses shape and results as `function_call_output` items, chained or not;
//! - `sim` holds the same conversations; `load` streams through the Responses events (TTFT and
//!   inter-token latency from `response.output_text.delta`) from an upstream model that streams;
//! - `judge probe` reports which APIs a target serves, and a run on an API the target lacks
//!   fails at once and says which API to use; `--history chain` needs `--api responses`.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use actix_web::web::Bytes;
use actix_web::{App, HttpResponse, HttpServer, web};
use common::recording::{Exchange, RecordingProxy};
use common::{Server, judge, read_json, run_dir};
use serde_json::{Value, json};

/// Runs `judge <suite> --endpoint <endpoint> --out <out>/<label> <args>`, which must succeed;
/// returns its run directory.
fn run(suite: &str, endpoint: &str, out: &Path, label: &str, args: &[&str]) -> PathBuf {
    let dir = out.join(label);
    let mut all = vec![
        suite,
        "--endpoint",
        endpoint,
        "--out",
        dir.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let (code, output) = judge(&all);
    assert_eq!(code, 0, "judge {all:?}: {output}");
    run_dir(&dir)
}

/// The `POST /v1/responses` exchanges among `exchanges`.
fn responses_posts(exchanges: &[Exchange]) -> Vec<&Exchange> {
    exchanges
        .iter()
        .filter(|e| e.method == "POST" && e.path == "/v1/responses")
        .collect()
}

/// agent-server's count of answered `POST /v1/responses` requests, from `/metrics`.
fn responses_served(base_url: &str) -> u64 {
    let text = ureq::get(&format!("{base_url}/metrics"))
        .call()
        .unwrap()
        .into_body()
        .read_to_string()
        .unwrap();
    text.lines()
        .filter(|l| l.starts_with("agentwall_http_requests_total{"))
        .filter(|l| {
            l.contains(r#"route="/v1/responses""#)
                && l.contains(r#"method="POST""#)
                && l.contains(r#"status="200""#)
        })
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap() as u64)
        .sum()
}

#[test]
fn ltm_over_the_responses_api_scores_like_chat_and_chains_on_the_server() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &[]);
    let proxy = RecordingProxy::start(&server.base_url);
    let out = tempfile::tempdir().unwrap();
    let ltm = |label: &str, args: &[&str]| {
        proxy.clear();
        let mut all = vec!["--trials", "1", "--quiet"];
        all.extend_from_slice(args);
        let dir = run("ltm", &proxy.url, out.path(), label, &all);
        (dir, proxy.exchanges())
    };
    let (chat, chat_sent) = ltm("chat", &[]);
    let (new, new_sent) = ltm("new", &["--api", "responses"]);
    let (chain, chain_sent) = ltm("chain", &["--api", "responses", "--history", "chain"]);

    for (dir, api, history) in [
        (&chat, "chat", "new"),
        (&new, "responses", "new"),
        (&chain, "responses", "chain"),
    ] {
        let results = read_json(&dir.join("results.json"));
        assert_eq!(results["overall"], 1.0, "{api}/{history}: {results:#}");
        assert_eq!(
            (results["api"].as_str(), results["history"].as_str()),
            (Some(api), Some(history))
        );
        let manifest = read_json(&dir.join("manifest.json"));
        let config = &manifest["config"];
        assert_eq!(
            (config["api"].as_str(), config["history"].as_str()),
            (Some(api), Some(history)),
            "{manifest:#}"
        );
        let served = &manifest["capabilities"][api];
        assert_eq!(served, true, "the probe asked the run's API: {manifest:#}");
    }
    let report = std::fs::read_to_string(chain.join("report.html")).unwrap();
    assert!(
        report.contains("Responses · chain"),
        "the report names API and history"
    );

    // Chat Completions only in the chat run; the Responses API only in the others.
    assert!(responses_posts(&chat_sent).is_empty());
    assert!(chat_sent.iter().any(|e| e.path == "/v1/chat/completions"));
    for sent in [&new_sent, &chain_sent] {
        assert!(sent.iter().all(|e| e.path != "/v1/chat/completions"));
        assert!(responses_posts(sent).iter().all(|e| e.status == 200));
    }
    assert_eq!(
        responses_served(&server.base_url),
        (responses_posts(&new_sent).len() + responses_posts(&chain_sent).len()) as u64,
        "agent-server counted every Responses request the judge sent, and no other"
    );

    // `new`: the new turn alone, never chained nor stored.
    let turns = responses_posts(&new_sent);
    assert!(turns.len() > 100, "{} turns", turns.len());
    for e in &turns {
        assert!(
            e.request.get("previous_response_id").is_none(),
            "{:#}",
            e.request
        );
        assert_eq!(e.request["store"], false);
        assert_eq!(
            e.request["input"].as_array().unwrap().len(),
            1,
            "{:#}",
            e.request
        );
    }

    // `chain`: each turn names its session's last response, and a reset starts a new chain.
    let mut head: HashMap<String, Option<String>> = HashMap::new();
    let (mut chained, mut restarted) = (0, 0);
    let mut last_chained = None;
    for e in &chain_sent {
        let Some(session) = e.session.clone() else {
            continue; // the model list
        };
        if e.path == "/control/session/reset" {
            if head.get(&session).is_some_and(Option::is_some) {
                restarted += 1;
            }
            head.insert(session, None);
            continue;
        }
        if e.method != "POST" || e.path != "/v1/responses" {
            continue;
        }
        let previous = e.request["previous_response_id"]
            .as_str()
            .map(str::to_owned);
        assert_eq!(
            previous,
            head.get(&session).cloned().flatten(),
            "session {session}: {:#}",
            e.request
        );
        if previous.is_some() {
            chained += 1;
            assert_eq!(e.request["store"], true);
            assert_eq!(
                e.request["input"].as_array().unwrap().len(),
                1,
                "only the new turn: {:#}",
                e.request
            );
            last_chained = Some(e);
        }
        head.insert(session, e.response["id"].as_str().map(str::to_owned));
    }
    assert!(chained > 80, "{chained} chained turns");
    assert!(restarted > 0, "reset_isolation resets a session mid-test");
    let last = last_chained.unwrap();
    let id = last.response["id"].as_str().unwrap();
    let stored: Value = ureq::get(&format!("{}/v1/responses/{id}", server.base_url))
        .call()
        .unwrap()
        .body_mut()
        .read_json()
        .unwrap();
    assert_eq!(
        stored["previous_response_id"], last.request["previous_response_id"],
        "the server holds the chain: {stored:#}"
    );

    // Runs that sent their turns differently still compare, labelled.
    let (code, output) = judge(&["compare", chat.to_str().unwrap(), chain.to_str().unwrap()]);
    assert_eq!(code, 0, "{output}");
    assert!(
        output.contains("sent their turns differently (A: api chat, history new; B: api responses, history chain)"),
        "{output}"
    );
}

/// Per scenario: whether every trial passed.
fn passes(dir: &Path) -> BTreeMap<String, bool> {
    let results = read_json(&dir.join("results.json"));
    results["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_owned(),
                s["all_passed"] == true,
            )
        })
        .collect()
}

/// A trial's file, for every scenario.
fn trial_files(dir: &Path, name: &str) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir.join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            let id = p.file_name().unwrap().to_string_lossy().into_owned();
            (id, std::fs::read(p.join("trial-0").join(name)).unwrap())
        })
        .collect()
}

#[test]
fn apps_tools_over_the_responses_api_pass_what_chat_passes() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &[]);
    let proxy = RecordingProxy::start(&server.base_url);
    let out = tempfile::tempdir().unwrap();
    let apps = |label: &str, args: &[&str]| {
        proxy.clear();
        let mut all = vec!["--action-mode", "tools", "--trials", "1", "--quiet"];
        all.extend_from_slice(args);
        let dir = run("apps", &proxy.url, out.path(), label, &all);
        (dir, proxy.exchanges())
    };
    let (chat, _) = apps("chat", &[]);
    let (full, full_sent) = apps("full", &["--api", "responses"]);
    let (chain, chain_sent) = apps("chain", &["--api", "responses", "--history", "chain"]);

    let expected = passes(&chat);
    assert!(
        expected.values().filter(|p| **p).count() >= 10,
        "the builtin agent operates the app through tools: {expected:?}"
    );
    for (dir, history) in [(&full, "full"), (&chain, "chain")] {
        assert_eq!(passes(dir), expected, "{history}");
        // The same actions, in the same order, leave the same state.
        for file in ["audit.jsonl", "final_state.json"] {
            assert_eq!(
                trial_files(dir, file),
                trial_files(&chat, file),
                "{history}: {file}"
            );
        }
        let results = read_json(&dir.join("results.json"));
        assert_eq!(
            (results["api"].as_str(), results["history"].as_str()),
            (Some("responses"), Some(history))
        );
    }

    // Tools go in the Responses shape; results answer the calls by call_id.
    let posts = responses_posts(&full_sent);
    let tools = &posts[1].request["tools"];
    assert_eq!(tools.as_array().unwrap().len(), 6, "{tools:#}");
    assert!(
        tools[0]["name"].is_string() && tools[0].get("function").is_none(),
        "{tools:#}"
    );
    let answered = posts.iter().find_map(|e| {
        let input = e.request["input"].as_array()?;
        let output = input.iter().find(|i| i["type"] == "function_call_output")?;
        let call = input
            .iter()
            .find(|i| i["type"] == "function_call" && i["call_id"] == output["call_id"]);
        Some((output.clone(), call.cloned()))
    });
    let (output, call) = answered.expect("a tool result went back");
    assert!(
        call.is_some(),
        "with the whole conversation, its call precedes it: {output:#}"
    );
    assert!(
        output["output"].as_str().unwrap().contains("success"),
        "{output:#}"
    );

    // Chained: a tool round sends only the results, after the response that made the calls.
    let posts = responses_posts(&chain_sent);
    let round = posts
        .iter()
        .find(|e| {
            e.request["input"]
                .as_array()
                .is_some_and(|i| i.iter().all(|i| i["type"] == "function_call_output"))
        })
        .expect("a chained tool round");
    let previous = round.request["previous_response_id"].as_str().unwrap();
    let caller = posts
        .iter()
        .find(|e| e.response["id"] == previous)
        .expect("the response it continues");
    let calls: HashSet<&str> = caller.response["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call")
        .map(|i| i["call_id"].as_str().unwrap())
        .collect();
    for output in round.request["input"].as_array().unwrap() {
        assert!(
            calls.contains(output["call_id"].as_str().unwrap()),
            "{output:#}"
        );
    }
    assert!(
        round.request["instructions"].is_string(),
        "instructions are not carried over a chain"
    );

    let (code, output) = judge(&["compare", chat.to_str().unwrap(), chain.to_str().unwrap()]);
    assert_eq!(code, 0, "{output}");
    assert!(
        output.contains("(A: api chat, history full; B: api responses, history chain)"),
        "{output}"
    );
}

/// The conversation of every session log, without the run's description.
fn conversations(dir: &Path) -> Vec<String> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir.join("logs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    logs.sort();
    logs.iter()
        .map(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .filter(|l| !l.starts_with("- mode:"))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

#[test]
fn sim_over_the_responses_api_holds_the_same_conversations() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &[]);
    let out = tempfile::tempdir().unwrap();
    let args = ["--rounds", "4", "--persona", "maya,gus"];
    let chat = run("sim", &server.base_url, out.path(), "chat", &args);
    for history in ["new", "chain", "full"] {
        let mut all = args.to_vec();
        all.extend(["--api", "responses", "--history", history]);
        let dir = run("sim", &server.base_url, out.path(), history, &all);
        let results = read_json(&dir.join("results.json"));
        assert_eq!(
            (results["api"].as_str(), results["history"].as_str()),
            (Some("responses"), Some(history))
        );
        let stops: Vec<&str> = results["conversations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["stop_reason"].as_str().unwrap())
            .collect();
        assert_eq!(stops, ["max_turns", "max_turns"], "{results:#}");
        assert_eq!(conversations(&dir), conversations(&chat), "{history}");
    }
}

/// An upstream model that streams `TOKENS` chunks a few milliseconds apart (or answers whole).
const TOKENS: usize = 6;

async fn upstream_chat(body: web::Json<Value>) -> HttpResponse {
    let usage =
        json!({"prompt_tokens": 5, "completion_tokens": TOKENS, "total_tokens": TOKENS + 5});
    if body["stream"] != true {
        return HttpResponse::Ok().json(json!({
            "id": "c", "object": "chat.completion", "created": 0, "model": "up",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "tok ".repeat(TOKENS)}}],
            "usage": usage
        }));
    }
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "up",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let stream = futures_util::stream::unfold(0usize, move |i| {
        let usage = usage.clone();
        async move {
            let event = match i {
                0 => chunk(json!({"role": "assistant", "content": ""}), Value::Null),
                i if i <= TOKENS => {
                    actix_rt::time::sleep(Duration::from_millis(3)).await;
                    chunk(json!({"content": "tok "}), Value::Null)
                }
                i if i == TOKENS + 1 => chunk(json!({}), json!("stop")),
                i if i == TOKENS + 2 => {
                    json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "up", "choices": [], "usage": usage})
                }
                i if i == TOKENS + 3 => {
                    return Some((
                        Ok::<_, actix_web::Error>(Bytes::from_static(b"data: [DONE]\n\n")),
                        i + 1,
                    ));
                }
                _ => return None,
            };
            Some((Ok(Bytes::from(format!("data: {event}\n\n"))), i + 1))
        }
    });
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .streaming(stream)
}

/// Starts the streaming upstream on a free loopback port; returns its base URL with `/v1`.
fn start_upstream() -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        actix_rt::System::new().block_on(async move {
            let server = HttpServer::new(|| {
                App::new().route("/v1/chat/completions", web::post().to(upstream_chat))
            })
            // Without TCP_NODELAY the chunks after the first wait for an ACK and arrive together.
            .on_connect(|conn, _| {
                if let Some(tcp) = conn.downcast_ref::<actix_rt::net::TcpStream>() {
                    tcp.set_nodelay(true).expect("set TCP_NODELAY");
                }
            })
            .workers(1)
            .bind(("127.0.0.1", 0))
            .expect("bind a loopback port");
            tx.send(server.addrs()[0].port()).unwrap();
            server.run().await.unwrap();
        });
    });
    let port = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    format!("http://127.0.0.1:{port}/v1")
}

#[test]
fn load_streams_through_the_responses_events() {
    let upstream = start_upstream();
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(
        data.path(),
        &["--llm-base-url", &upstream, "--llm-model", "up"],
    );
    let out = tempfile::tempdir().unwrap();
    let base = [
        "--api",
        "responses",
        "--concurrency",
        "2",
        "--prompt-tokens",
        "8",
        "--output-tokens",
        "8",
        "--quiet",
    ];
    let mut streamed = base.to_vec();
    streamed.extend(["--stream", "--requests", "12"]);
    let dir = run("load", &server.base_url, out.path(), "stream", &streamed);
    let results = read_json(&dir.join("results.json"));
    assert_eq!(results["api"], "responses");
    let step = &results["steps"][0];
    assert_eq!(
        (
            step["requests"]["ok"].as_u64(),
            step["requests"]["failed"].as_u64()
        ),
        (Some(12), Some(0)),
        "{step:#}"
    );
    assert!(step["ttft"]["p50_ms"].as_f64().unwrap() > 0.0, "{step:#}");
    assert!(
        step["itl"]["count"].as_u64().unwrap() >= 12 * (TOKENS as u64 - 1),
        "a gap between every two deltas: {step:#}"
    );
    assert!(
        step["itl"]["p50_ms"].as_f64().unwrap() > 1.0,
        "the upstream's pace: {step:#}"
    );
    assert_eq!(
        step["throughput"]["output_tokens"].as_u64(),
        Some(12 * TOKENS as u64),
        "usage.output_tokens of response.completed: {step:#}"
    );
    assert!(
        std::fs::read_to_string(dir.join("report.html"))
            .unwrap()
            .contains("Responses API"),
        "the report names the API"
    );

    let mut whole = base.to_vec();
    whole.extend(["--requests", "6"]);
    let dir = run("load", &server.base_url, out.path(), "whole", &whole);
    let step = &read_json(&dir.join("results.json"))["steps"][0];
    assert_eq!(
        (
            step["requests"]["ok"].as_u64(),
            step["requests"]["failed"].as_u64()
        ),
        (Some(6), Some(0)),
        "{step:#}"
    );
    assert!(
        step["latency"]["p50_ms"].as_f64().unwrap() > 0.0,
        "{step:#}"
    );
}

/// A chat-only server: `/v1/models` and `/v1/chat/completions`, 404 for everything else.
fn start_chat_only() -> String {
    let port = testkit::http::serve(|app| {
        app.route(
            "/v1/models",
            web::get().to(|| async {
                HttpResponse::Ok().json(
                    json!({"object": "list", "data": [{"id": "chat-only", "object": "model"}]}),
                )
            }),
        )
        .route(
            "/v1/chat/completions",
            web::post().to(|| async {
                HttpResponse::Ok().json(json!({
                    "id": "c", "object": "chat.completion", "created": 0, "model": "chat-only",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": "Hello there."}}]
                }))
            }),
        );
    });
    format!("http://127.0.0.1:{port}")
}

#[test]
fn probe_reports_the_apis_served_and_a_run_on_a_missing_one_fails_at_once() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &[]);
    let probe = |endpoint: &str| {
        let (code, output) = judge(&["probe", "--endpoint", endpoint]);
        assert_eq!(code, 0, "{output}");
        let json = output.split("\n--- stderr ---").next().unwrap();
        serde_json::from_str::<Value>(json).unwrap_or_else(|e| panic!("{e}: {output}"))
    };
    let both = probe(&server.base_url);
    assert_eq!(
        (both["chat"].as_bool(), both["responses"].as_bool()),
        (Some(true), Some(true)),
        "{both:#}"
    );

    let chat_only = start_chat_only();
    let one = probe(&chat_only);
    assert_eq!(
        (one["chat"].as_bool(), one["responses"].as_bool()),
        (Some(true), Some(false)),
        "{one:#}"
    );
    assert!(
        one["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("POST /v1/responses failed")),
        "{one:#}"
    );

    let out = tempfile::tempdir().unwrap();
    let (code, output) = judge(&[
        "ltm",
        "--endpoint",
        &chat_only,
        "--api",
        "responses",
        "--out",
        out.path().to_str().unwrap(),
        "--quiet",
    ]);
    assert_ne!(code, 0, "{output}");
    assert!(
        output.contains("does not serve the Responses API"),
        "{output}"
    );
    assert!(output.contains("use --api chat"), "{output}");
    let manifest = read_json(&run_dir(out.path()).join("manifest.json"));
    assert_eq!(manifest["state"], "failed");
    assert!(
        manifest["why"].as_str().unwrap().contains("use --api chat"),
        "{manifest:#}"
    );
}

#[test]
fn a_chain_over_chat_completions_is_a_usage_error() {
    for suite in ["ltm", "apps", "sim"] {
        let out = tempfile::tempdir().unwrap();
        let runs = out.path().join("runs");
        let (code, output) = judge(&[
            suite,
            "--endpoint",
            "http://127.0.0.1:9",
            "--api",
            "chat",
            "--history",
            "chain",
            "--out",
            runs.to_str().unwrap(),
        ]);
        assert_eq!(code, 1, "{suite}: {output}");
        assert!(
            output.contains("--history chain needs --api responses"),
            "{suite}: {output}"
        );
        assert!(!runs.exists(), "{suite}: nothing was started");
    }
    // Fixtures hold Chat Completions requests, which `judge replay` sends again.
    let out = tempfile::tempdir().unwrap();
    let runs = out.path().join("runs");
    let (code, output) = judge(&[
        "sim",
        "--endpoint",
        "http://127.0.0.1:9",
        "--api",
        "responses",
        "--record",
        "--out",
        runs.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{output}");
    assert!(output.contains("record with --api chat"), "{output}");
    assert!(!runs.exists(), "nothing was started");
}
