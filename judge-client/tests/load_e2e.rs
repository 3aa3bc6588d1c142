//! `judge load` end to end: the real binary against a small fake OpenAI server (actix-web on an
//! ephemeral port) that answers some requests with 429, 500 and 502, streams or not, and counts
//! what it was sent.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use bytes::Bytes;
use serde_json::{Value, json};

#[derive(Default)]
struct Seen {
    requests: AtomicU64,
    without_session: AtomicU64,
    /// Per session, in arrival order: the messages of each request and its last user message.
    sessions: Mutex<HashMap<String, Vec<(usize, String)>>>,
}

async fn models() -> HttpResponse {
    HttpResponse::Ok()
        .json(json!({"object": "list", "data": [{"id": "fake-model", "object": "model"}]}))
}

fn error(status: u16, message: &str) -> HttpResponse {
    HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap())
        .json(json!({"error": {"message": message, "type": "fake", "param": null, "code": null}}))
}

/// Request number n (0-based) fails as n % 10 says: 3 → 429, 5 → 502, 7 → 500.
async fn chat(
    req: HttpRequest,
    body: web::Json<Value>,
    seen: web::Data<Arc<Seen>>,
) -> HttpResponse {
    let n = seen.requests.fetch_add(1, Ordering::SeqCst);
    match req
        .headers()
        .get("x-session-id")
        .and_then(|v| v.to_str().ok())
    {
        Some(session) => {
            let messages = body["messages"].as_array().map_or(0, Vec::len);
            let last = body["messages"][messages.max(1) - 1]["content"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            seen.sessions
                .lock()
                .unwrap()
                .entry(session.to_owned())
                .or_default()
                .push((messages, last));
        }
        None => {
            seen.without_session.fetch_add(1, Ordering::SeqCst);
        }
    }
    match n % 10 {
        3 => return error(429, "slow down"),
        5 => return error(502, "bad gateway"),
        7 => return error(500, "boom"),
        _ => {}
    }
    let tokens = body["max_tokens"].as_u64().unwrap_or(1);
    let text: Vec<&str> = (0..tokens).map(|_| "tok").collect();
    if body["stream"] != json!(true) {
        return HttpResponse::Ok().json(json!({
            "id": "c", "object": "chat.completion", "created": 0, "model": "fake-model",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text.join(" ")}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": tokens, "total_tokens": tokens + 3}
        }));
    }
    assert_eq!(body["stream_options"]["include_usage"], json!(true));
    // Role chunk, one chunk per token 2 ms apart, the usage chunk, [DONE].
    let stream = futures_util::stream::unfold(0u64, move |i| async move {
        let event = if i == 0 {
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
        } else if i <= tokens {
            actix_rt::time::sleep(Duration::from_millis(2)).await;
            json!({"choices": [{"index": 0, "delta": {"content": "tok "}}]})
        } else if i == tokens + 1 {
            json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": tokens}})
        } else if i == tokens + 2 {
            return Some((
                Ok::<_, actix_web::Error>(Bytes::from_static(b"data: [DONE]\n\n")),
                i + 1,
            ));
        } else {
            return None;
        };
        Some((Ok(Bytes::from(format!("data: {event}\n\n"))), i + 1))
    });
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .streaming(stream)
}

/// Starts the fake on 127.0.0.1:0 in its own thread; returns its base URL and counters.
fn start_fake() -> (String, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let (tx, rx) = std::sync::mpsc::channel();
    let shared = Arc::clone(&seen);
    std::thread::spawn(move || {
        actix_rt::System::new().block_on(async move {
            let server = HttpServer::new(move || {
                App::new()
                    .app_data(web::Data::new(Arc::clone(&shared)))
                    .route("/v1/models", web::get().to(models))
                    .route("/v1/chat/completions", web::post().to(chat))
            })
            // Without TCP_NODELAY, Nagle's algorithm and delayed ACKs hold each SSE chunk
            // after the first for ~40 ms and the chunks arrive together.
            .on_connect(|conn, _| {
                if let Some(tcp) = conn.downcast_ref::<actix_rt::net::TcpStream>() {
                    tcp.set_nodelay(true).expect("set TCP_NODELAY");
                }
            })
            .workers(1)
            .bind(("127.0.0.1", 0))
            .expect("bind an ephemeral port");
            tx.send(server.addrs()[0].port()).unwrap();
            server.run().await.unwrap();
        });
    });
    let port = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("fake started");
    (format!("http://127.0.0.1:{port}"), seen)
}

fn judge(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_judge"))
        .arg("load")
        .args(args)
        .output()
        .expect("judge runs")
}

fn results_of(output: &Output, out: &Path) -> Value {
    assert!(
        output.status.success(),
        "judge load failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "one run directory");
    let html = std::fs::read_to_string(dirs[0].join("report.html")).unwrap();
    assert!(html.contains("Definitions") && html.contains("Time per output token"));
    assert!(!html.contains("<script"), "self-contained, no script");
    serde_json::from_slice(&std::fs::read(dirs[0].join("results.json")).unwrap()).unwrap()
}

#[test]
fn non_streaming_closed_loop_counts_and_classifies_every_request() {
    let (url, seen) = start_fake();
    let out = tempfile::tempdir().unwrap();
    let output = judge(&[
        "--endpoint",
        &url,
        "--concurrency",
        "4",
        "--requests",
        "200",
        "--output-tokens",
        "5",
        "--threads",
        "2",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let results = results_of(&output, out.path());
    assert_eq!(results["model"], "fake-model", "taken from GET /v1/models");
    assert_eq!(results["stream"], false);
    let step = &results["steps"][0];
    assert_eq!(step["level"], json!({"mode": "closed", "concurrency": 4}));
    let requests = &step["requests"];
    assert_eq!(requests["sent"], 200);
    assert_eq!(requests["ok"], 140);
    assert_eq!(requests["failed"], 60);
    assert_eq!(requests["error_rate"], 0.3);
    assert_eq!(
        requests["errors"],
        json!({"agent_error": 20, "infra_error": 20, "judge_error": 0, "rate_limited": 20, "timeout": 0})
    );
    assert_eq!(step["throughput"]["output_tokens"], 140 * 5);
    assert!(step["throughput"]["requests_per_s"].as_f64().unwrap() > 0.0);
    assert_eq!(
        step["throughput"]["goodput_per_s"],
        Value::Null,
        "no --slo, no goodput"
    );
    assert_eq!(step["latency"]["count"], 140);
    // Non-streamed: TTFT is the latency, and there are no inter-token gaps.
    assert_eq!(step["ttft"], step["latency"]);
    assert_eq!(step["itl"], Value::Null);
    assert_eq!(step["tpot"], Value::Null);
    assert!(step["client"]["cpu_us_per_request"].as_f64().unwrap() > 0.0);
    assert_eq!(step["client"]["requests_including_warmup"], 200);
    for key in [
        "latency",
        "ttft",
        "itl",
        "tpot",
        "goodput_per_s",
        "client_cpu",
    ] {
        assert!(results["definitions"][key].is_string(), "{key} defined");
    }
    assert_eq!(
        seen.requests.load(Ordering::SeqCst),
        200,
        "exactly --requests sent"
    );
    assert_eq!(
        seen.without_session.load(Ordering::SeqCst),
        0,
        "X-Session-Id on every request"
    );
}

#[test]
fn streaming_measures_ttft_itl_tpot_and_goodput() {
    let (url, seen) = start_fake();
    let out = tempfile::tempdir().unwrap();
    let output = judge(&[
        "--endpoint",
        &url,
        "--model",
        "fake-model",
        "--stream",
        "--concurrency",
        "2",
        "--requests",
        "50",
        "--output-tokens",
        "4",
        "--slo",
        "ttft=10s",
        "--slo",
        "tpot=1ms",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let results = results_of(&output, out.path());
    let step = &results["steps"][0];
    assert_eq!(step["requests"]["ok"], 35);
    assert_eq!(step["requests"]["errors"]["rate_limited"], 5);
    assert_eq!(step["throughput"]["output_tokens"], 35 * 4, "from usage");
    // Tokens come 2 ms apart: TTFT ≥ 2 ms, TPOT ≈ 2 ms, so the 1 ms TPOT objective fails
    // every request while a TTFT-only view would pass them all.
    assert!(step["ttft"]["p50_ms"].as_f64().unwrap() >= 2.0);
    let itl = &step["itl"];
    assert!(itl["count"].as_u64().unwrap() >= 35, "{itl}");
    assert!(itl["p50_ms"].as_f64().unwrap() >= 1.5, "{itl}");
    assert!(step["tpot"]["p50_ms"].as_f64().unwrap() >= 1.5);
    assert_eq!(step["tpot"]["count"], 35);
    assert_eq!(step["throughput"]["good_requests"], 0);
    assert_eq!(step["throughput"]["goodput_per_s"], 0.0);
    assert_eq!(results["slos"][1], json!({"metric": "tpot", "limit": 1.0}));
    assert_eq!(seen.requests.load(Ordering::SeqCst), 50);
}

#[test]
fn open_loop_keeps_the_rate_and_excludes_the_warmup() {
    let (url, seen) = start_fake();
    let out = tempfile::tempdir().unwrap();
    let output = judge(&[
        "--endpoint",
        &url,
        "--model",
        "fake-model",
        "--rate",
        "200",
        "--arrivals",
        "constant",
        "--duration",
        "1s",
        "--warmup",
        "500ms",
        "--slo",
        "latency=5s",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let results = results_of(&output, out.path());
    let step = &results["steps"][0];
    assert_eq!(step["target_rate"], 200.0);
    let sent = step["requests"]["sent"].as_u64().unwrap();
    assert!((195..=201).contains(&sent), "1 s at 200/s, got {sent}");
    let achieved = step["achieved_rate"].as_f64().unwrap();
    assert!((achieved - 200.0).abs() < 25.0, "achieved {achieved}");
    let total = seen.requests.load(Ordering::SeqCst);
    assert!(
        total >= sent + 95,
        "warm-up requests were sent too: {total}"
    );
    assert_eq!(step["requests"]["skipped_sends"], 0);
    let ok = step["requests"]["ok"].as_u64().unwrap();
    assert_eq!(step["throughput"]["good_requests"].as_u64().unwrap(), ok);
}

#[test]
fn a_concurrency_sweep_reports_one_step_per_level() {
    let (url, seen) = start_fake();
    let out = tempfile::tempdir().unwrap();
    let output = judge(&[
        "--endpoint",
        &url,
        "--model",
        "fake-model",
        "--concurrency",
        "1,4",
        "--requests",
        "20",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let results = results_of(&output, out.path());
    let steps = results["steps"].as_array().unwrap();
    let labels: Vec<&str> = steps.iter().map(|s| s["label"].as_str().unwrap()).collect();
    assert_eq!(labels, vec!["closed c=1", "closed c=4"]);
    for step in steps {
        assert_eq!(step["requests"]["sent"], 20);
        assert_eq!(
            step["target_rate"],
            Value::Null,
            "a closed loop has no target rate"
        );
    }
    assert_eq!(seen.requests.load(Ordering::SeqCst), 40);
}

/// Conversations: each client holds a session for its turns, one after the other and in order,
/// with the whole history when asked; a failed turn ends its conversation; the figures come by
/// turn index as well as overall.
#[test]
fn conversations_keep_their_turns_in_order_in_one_session_and_report_by_turn() {
    let (url, seen) = start_fake();
    let out = tempfile::tempdir().unwrap();
    let output = judge(&[
        "--endpoint",
        &url,
        "--concurrency",
        "3",
        "--turns",
        "4",
        "--history",
        "full",
        "--prompt-tokens",
        "12",
        "--output-tokens",
        "3",
        "--stream",
        "--requests",
        "60",
        "--threads",
        "1",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let results = results_of(&output, out.path());
    assert_eq!(
        results["workload"]["conversations"],
        json!({"turns": "4", "history": "full"})
    );
    let step = &results["steps"][0];
    assert_eq!(step["requests"]["sent"], 60);
    let bands: Vec<(u64, u64)> = step["by_turn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["first_turn"].as_u64().unwrap(),
                b["last_turn"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(bands, [(1, 1), (2, 2), (3, 4)]);
    let by_turn_total: u64 = step["by_turn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["ok"].as_u64().unwrap() + b["failed"].as_u64().unwrap())
        .sum();
    assert_eq!(by_turn_total, 60, "every measured turn is in a band");
    let prompt = |i: usize| step["by_turn"][i]["mean_prompt_words"].as_f64().unwrap();
    assert!(
        prompt(2) > prompt(1) && prompt(1) > prompt(0),
        "with the whole history, later turns send more"
    );
    let html = std::fs::read_to_string(
        std::fs::read_dir(out.path())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
            .join("report.html"),
    )
    .unwrap();
    assert!(html.contains("By turn index"));

    let sessions = seen.sessions.lock().unwrap();
    let mut completed = 0;
    for (session, requests) in sessions.iter() {
        assert!(session.starts_with("conv-1-w0-c"), "{session}");
        let lengths: Vec<usize> = requests.iter().map(|(n, _)| *n).collect();
        // Turn k carries the k - 1 earlier exchanges and the new message, in order.
        let expected: Vec<usize> = (0..lengths.len()).map(|k| 2 * k + 1).collect();
        assert_eq!(lengths, expected, "{session}");
        assert!(lengths.len() <= 4, "{session}: at most 4 turns");
        completed += usize::from(lengths.len() == 4);
        for (_, message) in requests {
            assert!(
                message.ends_with('.') || message.ends_with('?'),
                "{session}: sentences, not word salad: {message}"
            );
        }
    }
    assert!(completed > 0, "some conversations ran all their turns");
    assert!(sessions.len() >= 60 / 4, "a new session per conversation");
}

/// Memory mode: every turn sends the new message only, in the conversation's session.
#[test]
fn conversations_leave_the_history_to_the_targets_memory_by_default() {
    let (url, seen) = start_fake();
    let out = tempfile::tempdir().unwrap();
    let output = judge(&[
        "--endpoint",
        &url,
        "--concurrency",
        "2",
        "--turns",
        "uniform:2-5",
        "--requests",
        "30",
        "--threads",
        "1",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let results = results_of(&output, out.path());
    assert_eq!(results["workload"]["conversations"]["history"], "memory");
    let sessions = seen.sessions.lock().unwrap();
    assert!(sessions.len() >= 30 / 5);
    for requests in sessions.values() {
        assert!(requests.iter().all(|(n, _)| *n == 1), "{requests:?}");
        assert!(requests.len() <= 5);
    }
}

#[test]
fn bad_arguments_fail_with_clear_messages_before_any_request() {
    let cases: [(&[&str], &str); 7] = [
        (
            &["--endpoint", "http://127.0.0.1:9", "--slo", "ttft=fast"],
            "`fast` is not a duration",
        ),
        (
            &["--endpoint", "http://127.0.0.1:9", "--slo", "p99=1s"],
            "unknown SLO metric `p99`",
        ),
        (
            &["--endpoint", "http://10.1.2.3:9", "--model", "m"],
            "not on this machine",
        ),
        (
            &[
                "--endpoint",
                "http://127.0.0.1:9",
                "--prompt-tokens",
                "uniform:9-2",
            ],
            "min is above max",
        ),
        (
            &[
                "--endpoint",
                "http://127.0.0.1:9",
                "--model",
                "m",
                "--turns",
                "4",
                "--rate",
                "5",
            ],
            "cannot be used with",
        ),
        (
            &[
                "--endpoint",
                "http://127.0.0.1:9",
                "--model",
                "m",
                "--turns",
                "4",
                "--history",
                "full",
                "--api",
                "responses",
            ],
            "use --api chat",
        ),
        (
            &[
                "--endpoint",
                "http://127.0.0.1:9",
                "--model",
                "m",
                "--turns",
                "4",
                "--history",
                "most",
            ],
            "use `memory`",
        ),
    ];
    for (args, want) in cases {
        let output = judge(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} should fail");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}
