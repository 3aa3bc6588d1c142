//! What an A2A turn costs against a Chat Completions turn, in one run: the latency of one turn of
//! the real agent-server binary (release build, builtin model, embedded store) through each API,
//! blocking and streamed, from one client over one keep-alive connection per API.
//!
//! - `chat`: `POST /v1/chat/completions` with `X-Session-Id`;
//! - `a2a`: `SendMessage` on `POST /a2a`, the session named by `contextId` (a task stored per
//!   turn, beside the same memory commit);
//! - `chat-stream`: the chat turn with `stream: true`, read to `[DONE]`;
//! - `a2a-stream`: `SendStreamingMessage`, read to its last event.
//!
//! ```text
//! cargo bench -p agent-server --bench a2a_turns                    # 2,000 turns per mode
//! cargo bench -p agent-server --bench a2a_turns -- --turns 5000 --warmup 500
//! cargo bench -p agent-server --bench a2a_turns -- --data-root /dev/shm   # data in memory:
//!                                                                      # what the fsyncs cost
//! ```
//!
//! The modes take turns one by one (chat, a2a, chat-stream, a2a-stream, chat, ...), so the
//! machine's drift touches them alike; each mode has 8 sessions of its own and alternates a
//! statement ("My item 3 is v17.") with the question that recalls it, as `memory_turns` does, so
//! every mode's sessions grow alike. Every answer is checked (status, and the reply's text) before
//! it counts. Latency is from the request's first byte to the answer's last, in an HDR histogram;
//! the last lines are each mode's median, p90 and p99, and the ratio of the A2A median to the
//! Chat Completions one.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{Value, json};

const SESSIONS: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Chat,
    A2a,
    ChatStream,
    A2aStream,
}

impl Mode {
    const ALL: [Mode; 4] = [Mode::Chat, Mode::A2a, Mode::ChatStream, Mode::A2aStream];

    fn name(self) -> &'static str {
        match self {
            Mode::Chat => "chat",
            Mode::A2a => "a2a",
            Mode::ChatStream => "chat-stream",
            Mode::A2aStream => "a2a-stream",
        }
    }
}

struct Options {
    turns: usize,
    warmup: usize,
    /// Where the server's data directory goes (default: a temporary directory).
    data_root: Option<PathBuf>,
}

fn options() -> Options {
    let mut options = Options {
        turns: 2000,
        warmup: 200,
        data_root: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| -> usize {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} takes a number"))
        };
        match arg.as_str() {
            "--turns" => options.turns = value("--turns"),
            "--warmup" => options.warmup = value("--warmup"),
            "--data-root" => {
                options.data_root = Some(args.next().expect("--data-root takes a directory").into())
            }
            // cargo bench passes --bench.
            "--bench" => {}
            other => panic!("unknown argument {other} (--turns N, --warmup N, --data-root DIR)"),
        }
    }
    options
}

/// The release agent-server of this checkout, built first (`cargo bench` builds the bench in
/// release, not the binary it measures).
fn release_agent_server() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let ok = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "agent-server",
            "--bin",
            "agent-server",
        ])
        .current_dir(&workspace)
        .status()
        .expect("cargo runs")
        .success();
    assert!(ok, "release build of agent-server failed");
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"))
        .join("release/agent-server")
}

/// The server; killed and waited for on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The turn `k` of a session: a statement, then the question that recalls it (and the value its
/// reply must hold). Items cycle through 50 keys, each said again with a new value.
fn turn_text(k: usize) -> (String, Option<String>) {
    let item = (k / 2) % 50;
    if k.is_multiple_of(2) {
        (format!("My item {item} is v{}.", k % 97), None)
    } else {
        (
            format!("What is my item {item}?"),
            Some(format!("v{}.", (k - 1) % 97)),
        )
    }
}

/// One turn of `mode` in `session`; the reply's text, asserting the answer.
async fn turn(client: &awc::Client, base: &str, mode: Mode, session: &str, text: &str) -> String {
    let (path, body) = match mode {
        Mode::Chat | Mode::ChatStream => (
            "/v1/chat/completions",
            json!({"model": "agentwall-builtin", "stream": mode == Mode::ChatStream,
                   "messages": [{"role": "user", "content": text}]}),
        ),
        Mode::A2a | Mode::A2aStream => (
            "/a2a",
            json!({"jsonrpc": "2.0", "id": 1,
                   "method": if mode == Mode::A2a { "SendMessage" } else { "SendStreamingMessage" },
                   "params": {"message": {"messageId": uuid::Uuid::new_v4().to_string(),
                       "role": "ROLE_USER", "contextId": session, "parts": [{"text": text}]}}}),
        ),
    };
    let mut request = client
        .post(format!("{base}{path}"))
        .insert_header(("content-type", "application/json"))
        .insert_header(("a2a-version", "1.0"));
    if matches!(mode, Mode::Chat | Mode::ChatStream) {
        request = request.insert_header(("x-session-id", session));
    }
    let mut response = request
        .send_body(body.to_string())
        .await
        .unwrap_or_else(|e| panic!("{} turn: {e}", mode.name()));
    assert!(
        response.status().is_success(),
        "{}: {}",
        mode.name(),
        response.status()
    );
    let bytes = response.body().limit(1 << 24).await.expect("the body");
    let raw = String::from_utf8_lossy(&bytes);
    match mode {
        Mode::Chat => {
            let v: Value = serde_json::from_str(&raw).expect("JSON");
            v["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .to_owned()
        }
        Mode::A2a => {
            let v: Value = serde_json::from_str(&raw).expect("JSON");
            v["result"]["task"]["artifacts"][0]["parts"][0]["text"]
                .as_str()
                .unwrap_or_else(|| panic!("a task: {raw}"))
                .to_owned()
        }
        Mode::ChatStream => {
            assert!(raw.ends_with("data: [DONE]\n\n"), "{raw}");
            data_lines(&raw)
                .filter(|d| *d != "[DONE]")
                .filter_map(|d| {
                    let v: Value = serde_json::from_str(d).ok()?;
                    v["choices"][0]["delta"]["content"]
                        .as_str()
                        .map(str::to_owned)
                })
                .collect()
        }
        Mode::A2aStream => {
            assert!(raw.contains("TASK_STATE_COMPLETED"), "{raw}");
            data_lines(&raw)
                .filter_map(|d| {
                    let v: Value = serde_json::from_str(d).ok()?;
                    v["result"]["artifactUpdate"]["artifact"]["parts"][0]["text"]
                        .as_str()
                        .map(str::to_owned)
                })
                .collect()
        }
    }
}

fn data_lines(raw: &str) -> impl Iterator<Item = &str> {
    raw.lines().filter_map(|l| l.strip_prefix("data: "))
}

fn main() {
    let options = options();
    let binary = release_agent_server();
    let data = match &options.data_root {
        Some(root) => tempfile::tempdir_in(root).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let port = testkit::process::free_port();
    let mut child = Command::new(&binary)
        .args(["--addr", &format!("127.0.0.1:{port}")])
        .arg("--data-dir")
        .arg(data.path())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("agent-server starts");
    testkit::process::wait_listening(port, &mut child, "agent-server");
    let _server = Server(child);
    let base = format!("http://127.0.0.1:{port}");
    println!(
        "a2a_turns: {} turns per mode after {} warm-up turns each; release agent-server, builtin model, embedded store in {}",
        options.turns,
        options.warmup,
        data.path().display()
    );
    let histograms = actix_rt::System::new().block_on(async move {
        // A client per mode, each keeping its one connection alive (turns are sequential).
        let clients: Vec<awc::Client> = Mode::ALL
            .iter()
            .map(|_| {
                awc::Client::builder()
                    .timeout(Duration::from_secs(30))
                    .finish()
            })
            .collect();
        let mut histograms: Vec<Histogram<u64>> = Mode::ALL
            .iter()
            .map(|_| Histogram::new(3).unwrap())
            .collect();
        let run = uuid::Uuid::new_v4().simple().to_string();
        for n in 0..options.warmup + options.turns {
            let session_no = n % SESSIONS;
            let (text, expected) = turn_text(n / SESSIONS);
            for (i, mode) in Mode::ALL.iter().enumerate() {
                let session = format!("bench-{run}-{}-{session_no}", mode.name());
                let started = Instant::now();
                let reply = turn(&clients[i], &base, *mode, &session, &text).await;
                let took = started.elapsed();
                if let Some(expected) = &expected {
                    assert!(
                        reply.contains(expected.as_str()),
                        "{}: {text} -> {reply}",
                        mode.name()
                    );
                }
                if n >= options.warmup {
                    histograms[i]
                        .record(u64::try_from(took.as_micros()).unwrap_or(u64::MAX))
                        .unwrap();
                }
            }
        }
        histograms
    });
    println!(
        "{:<12} {:>10} {:>10} {:>10}",
        "mode", "p50 µs", "p90 µs", "p99 µs"
    );
    for (mode, h) in Mode::ALL.iter().zip(&histograms) {
        println!(
            "{:<12} {:>10} {:>10} {:>10}",
            mode.name(),
            h.value_at_quantile(0.5),
            h.value_at_quantile(0.9),
            h.value_at_quantile(0.99)
        );
    }
    let median = |i: usize| histograms[i].value_at_quantile(0.5) as f64;
    println!(
        "a2a / chat (medians): {:.3}; a2a-stream / chat-stream: {:.3}",
        median(1) / median(0),
        median(3) / median(2)
    );
}
