//! Turns per second of the real agent-server binary (release build, builtin model, embedded
//! store) through each API under the same load, in one run:
//!
//! - `chat`: Chat Completions turns;
//! - `responses`: Responses turns, each on its own (`input` only, stored as usual);
//! - `unstored`: the same with `store: false`, so the response is not kept (the turn still
//!   writes memory): the difference to `responses` is the cost of storing the response object;
//! - `chained`: Responses turns that continue a `previous_response_id` chain of `--depth`
//!   responses (10 by default): before the measured time, each session gets a chain that deep;
//!   every measured turn then names that chain's last response, so each one reads the whole chain
//!   and stores one more response beside it (a branch), and the depth stays the same throughout;
//! - `resent`: the same turns with the chain's items sent in `input` instead of named by id (as
//!   `--history full` does): the same history for the agent to read, without the stored-response
//!   read, so `chained` against `resent` is what reading the chain costs.
//!
//! ```text
//! cargo bench --bench responses_turns                       # 64 connections, 8 s, 3 rounds
//! cargo bench --bench responses_turns -- --rounds 5 --seconds 10 --concurrency 64 --depth 10
//! cargo bench --bench responses_turns -- --data-root /dev/shm   # data directories in memory:
//!                                                                # what the disk's fsyncs cost
//! AGENTWALL_BENCH_BASELINE=/tmp/agent-server-before cargo bench --bench responses_turns
//!     # also every mode of another agent-server binary, interleaved: before/after ratios
//! ```
//!
//! Every run starts a server on a fresh data directory; the runs of a round go in the order of
//! the modes, the next round in the reverse order (A B C, C B A, ...), so that the machine's drift
//! touches every mode alike. Each client task owns 8 sessions and alternates a statement ("My item
//! 3 is v17.") with the question that recalls it, as `memory_turns` does; the first second is
//! warm-up. The last lines are each mode's median turns/s and the ratios between them.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{Value, json};

mod support;

const SESSIONS_PER_TASK: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Mode {
    Chat,
    Responses,
    Unstored,
    Chained,
    Resent,
}

impl Mode {
    const ALL: [Mode; 5] = [
        Mode::Chat,
        Mode::Responses,
        Mode::Unstored,
        Mode::Chained,
        Mode::Resent,
    ];

    fn name(self) -> &'static str {
        match self {
            Mode::Chat => "chat",
            Mode::Responses => "responses",
            Mode::Unstored => "unstored",
            Mode::Chained => "chained",
            Mode::Resent => "resent",
        }
    }
}

struct Options {
    seconds: u64,
    concurrency: usize,
    rounds: usize,
    depth: usize,
    /// Where the runs' data directories go (default: a temporary directory).
    data_root: Option<PathBuf>,
    modes: Vec<Mode>,
}

fn options() -> Options {
    let mut o = Options {
        seconds: 8,
        concurrency: 64,
        rounds: 3,
        depth: 10,
        data_root: None,
        modes: Mode::ALL.to_vec(),
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = || args.get(i + 1).and_then(|v| v.parse().ok());
        match args[i].as_str() {
            "--seconds" => o.seconds = value().expect("--seconds N") as u64,
            "--concurrency" => o.concurrency = value().expect("--concurrency N"),
            "--rounds" => o.rounds = value().expect("--rounds N"),
            "--depth" => o.depth = value().expect("--depth N"),
            "--data-root" => o.data_root = Some(args.get(i + 1).expect("--data-root DIR").into()),
            "--modes" => {
                let names = args
                    .get(i + 1)
                    .expect("--modes chat,responses,unstored,chained,resent");
                o.modes = names
                    .split(',')
                    .map(|name| {
                        Mode::ALL
                            .into_iter()
                            .find(|m| m.name() == name)
                            .unwrap_or_else(|| panic!("unknown mode {name:?}"))
                    })
                    .collect();
            }
            "--help" => {
                println!(
                    "responses_turns [--seconds 8] [--concurrency 64] [--rounds 3] [--depth 10] [--data-root DIR] [--modes chat,responses,unstored,chained,resent]"
                );
                std::process::exit(0);
            }
            // cargo bench passes --bench; ignore anything else it adds.
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    assert!(o.depth >= 1, "--depth is at least 1");
    o
}

/// The text of turn `k` of a task: a statement, or the question that recalls it.
fn text(k: u64) -> String {
    let item = (k / 16) % 50;
    if (k / 8).is_multiple_of(2) {
        format!("My item {item} is v{}.", k % 97)
    } else {
        format!("What is my item {item}?")
    }
}

/// What a session's turns continue: a chain's last response (`chained`), or its items (`resent`).
#[derive(Debug, Clone, Default)]
struct Prior {
    tip: Option<String>,
    items: Vec<Value>,
}

/// One turn: its path and body, continuing `prior` (see [`Prior`]).
fn turn(mode: Mode, text: &str, prior: &Prior) -> (&'static str, String) {
    let tip = prior.tip.as_deref();
    let body = match mode {
        Mode::Chat => {
            json!({"model": "agentwall-builtin", "messages": [{"role": "user", "content": text}]})
        }
        Mode::Responses => json!({"model": "agentwall-builtin", "input": text}),
        Mode::Unstored => json!({"model": "agentwall-builtin", "input": text, "store": false}),
        Mode::Chained => {
            json!({"model": "agentwall-builtin", "input": text, "previous_response_id": tip})
        }
        Mode::Resent => {
            let mut input = prior.items.clone();
            input.push(json!({"role": "user", "content": text}));
            json!({"model": "agentwall-builtin", "input": input})
        }
    };
    let path = if mode == Mode::Chat {
        "/v1/chat/completions"
    } else {
        "/v1/responses"
    };
    (path, body.to_string())
}

async fn post(
    client: &awc::Client,
    url: &str,
    session: &str,
    path: &str,
    body: String,
) -> Result<actix_web::web::Bytes, String> {
    let mut response = client
        .post(format!("{url}{path}"))
        .insert_header(("content-type", "application/json"))
        .insert_header(("x-session-id", session))
        .send_body(body)
        .await
        .map_err(|e| e.to_string())?;
    let body = response
        .body()
        .limit(1 << 20)
        .await
        .map_err(|e| e.to_string())?;
    if response.status().is_success() {
        Ok(body)
    } else {
        Err(format!(
            "{}: {}",
            response.status(),
            String::from_utf8_lossy(&body)
        ))
    }
}

/// A chain of `depth` responses in `session`: its last response's id, and its items as
/// messages (each turn's text and reply).
async fn chain(client: &awc::Client, url: &str, session: &str, depth: usize) -> Prior {
    let mut prior = Prior::default();
    for k in 0..depth as u64 {
        let mode = if prior.tip.is_some() {
            Mode::Chained
        } else {
            Mode::Responses
        };
        let (path, body) = turn(mode, &text(k), &prior);
        let body = post(client, url, session, path, body)
            .await
            .unwrap_or_else(|e| panic!("building a chain failed: {e}"));
        let response: Value = serde_json::from_slice(&body).unwrap();
        prior.tip = Some(response["id"].as_str().unwrap().to_owned());
        prior
            .items
            .push(json!({"role": "user", "content": text(k)}));
        prior
            .items
            .push(json!({"role": "assistant", "content": response["output_text"]}));
    }
    prior
}

struct Measured {
    turns_per_second: f64,
    /// The server's CPU time per measured turn: on a shared machine, steadier than turns/s.
    cpu_ms_per_turn: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: u64,
}

fn run(server: &support::Server, mode: Mode, o: &Options, tag: &str) -> Measured {
    let url = server.url.as_str();
    actix_rt::System::new().block_on(async move {
        let client = awc::Client::builder()
            .timeout(Duration::from_secs(30))
            .connector(awc::Connector::new().limit(o.concurrency.max(1) * 2))
            .finish();
        // Sessions, and for `chained` their chains' tips, before the clock starts.
        let sessions: Vec<Vec<(String, Prior)>> = {
            let mut setup = Vec::new();
            for task in 0..o.concurrency {
                let (client, url) = (client.clone(), url.to_owned());
                let tag = tag.to_owned();
                let depth = o.depth;
                setup.push(actix_rt::spawn(async move {
                    let mut mine = Vec::new();
                    for s in 0..SESSIONS_PER_TASK {
                        let session = format!("bench-{tag}-{task}-{s}");
                        let prior = match mode {
                            Mode::Chained => chain(&client, &url, &session, depth).await,
                            Mode::Resent => Prior {
                                tip: None,
                                ..chain(&client, &url, &session, depth).await
                            },
                            _ => Prior::default(),
                        };
                        mine.push((session, prior));
                    }
                    mine
                }));
            }
            let mut all = Vec::new();
            for task in setup {
                all.push(task.await.expect("setup task"));
            }
            all
        };
        let histogram = Rc::new(RefCell::new(
            Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap(),
        ));
        let errors = Rc::new(RefCell::new(0u64));
        let first_error: Rc<RefCell<Option<String>>> = Rc::new(RefCell::new(None));
        let start = Instant::now();
        let measure_from = start + Duration::from_secs(1);
        let end = measure_from + Duration::from_secs(o.seconds);
        let mut tasks = Vec::new();
        for mine in sessions {
            let (client, url) = (client.clone(), url.to_owned());
            let (histogram, errors, first_error) =
                (histogram.clone(), errors.clone(), first_error.clone());
            tasks.push(actix_rt::spawn(async move {
                let mut k = 0u64;
                while Instant::now() < end {
                    let (session, prior) = &mine[k as usize % mine.len()];
                    let (path, body) = turn(mode, &text(k), prior);
                    let sent = Instant::now();
                    let result = post(&client, &url, session, path, body).await;
                    if sent >= measure_from && Instant::now() <= end {
                        match &result {
                            Ok(_) => {
                                let micros = sent.elapsed().as_micros() as u64;
                                histogram.borrow_mut().record(micros.max(1)).unwrap();
                            }
                            Err(_) => *errors.borrow_mut() += 1,
                        }
                    }
                    if let Err(e) = result {
                        first_error.borrow_mut().get_or_insert(e);
                    }
                    k += 1;
                }
            }));
        }
        actix_rt::time::sleep_until(measure_from.into()).await;
        let cpu_before = server.cpu_time();
        actix_rt::time::sleep_until(end.into()).await;
        let cpu = server.cpu_time().saturating_sub(cpu_before);
        for t in tasks {
            let _ = t.await;
        }
        if let Some(e) = first_error.borrow().as_ref() {
            eprintln!("first error ({}): {e}", mode.name());
        }
        let h = histogram.borrow();
        Measured {
            turns_per_second: h.len() as f64 / o.seconds as f64,
            cpu_ms_per_turn: cpu.as_secs_f64() * 1000.0 / (h.len() as f64).max(1.0),
            p50_ms: h.value_at_quantile(0.50) as f64 / 1000.0,
            p99_ms: h.value_at_quantile(0.99) as f64 / 1000.0,
            errors: *errors.borrow(),
        }
    })
}

/// The figures of one binary's runs in one mode.
#[derive(Default)]
struct Runs {
    rates: Vec<f64>,
    cpu: Vec<f64>,
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn main() {
    let o = options();
    let binary = support::release_agent_server();
    let baseline = std::env::var_os("AGENTWALL_BENCH_BASELINE").map(PathBuf::from);
    // The baseline first in each round, so that a slower start of the machine does not favour
    // the change.
    let binaries: Vec<(&str, PathBuf)> = baseline
        .into_iter()
        .map(|b| ("base", b))
        .chain([("this", binary)])
        .collect();
    let data = match &o.data_root {
        Some(root) => tempfile::tempdir_in(root).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    println!(
        "agent-server release, builtin model, embedded store in {}; {} connections, {} s per run after 1 s of warm-up, chains {} deep, {} rounds",
        data.path().display(),
        o.concurrency,
        o.seconds,
        o.depth,
        o.rounds
    );
    println!(
        "{:<6} {:<6} {:<10} {:>10} {:>9} {:>9} {:>7} {:>12}",
        "round", "binary", "mode", "turns/s", "p50 ms", "p99 ms", "errors", "cpu ms/turn"
    );
    let mut results: BTreeMap<(&str, Mode), Runs> = BTreeMap::new();
    let mut n = 0;
    for round in 0..o.rounds {
        let mut order: Vec<(&str, &Path, Mode)> = Vec::new();
        for &mode in &o.modes {
            for (name, binary) in &binaries {
                order.push((name, binary, mode));
            }
        }
        if round % 2 == 1 {
            order.reverse();
        }
        for (name, binary, mode) in order {
            n += 1;
            let dir = data.path().join(format!("run-{n}"));
            let server = support::start(
                binary,
                &["--data-dir".to_owned(), dir.display().to_string()],
            );
            let tag = format!("{}-{n}-{}", mode.name(), std::process::id());
            let m = run(&server, mode, &o, &tag);
            drop(server);
            println!(
                "{:<6} {:<6} {:<10} {:>10.0} {:>9.2} {:>9.2} {:>7} {:>12.3}",
                round + 1,
                name,
                mode.name(),
                m.turns_per_second,
                m.p50_ms,
                m.p99_ms,
                m.errors,
                m.cpu_ms_per_turn
            );
            let runs = results.entry((name, mode)).or_default();
            runs.rates.push(m.turns_per_second);
            runs.cpu.push(m.cpu_ms_per_turn);
        }
    }
    let mut medians = BTreeMap::new();
    for ((name, mode), runs) in &mut results {
        let m = median(&mut runs.rates);
        medians.insert((*name, *mode), m);
        println!(
            "median {name:<6} {:<10} {m:>10.0} turns/s {:>8.3} cpu ms/turn",
            mode.name(),
            median(&mut runs.cpu)
        );
    }
    for (name, _) in binaries.iter().filter(|_| o.modes.len() == Mode::ALL.len()) {
        let get = |mode| medians.get(&(*name, mode)).copied().unwrap_or(0.0);
        let (chat, responses) = (get(Mode::Chat), get(Mode::Responses));
        let (unstored, chained) = (get(Mode::Unstored), get(Mode::Chained));
        let resent = get(Mode::Resent);
        println!(
            "{name}: responses/chat {:.3}, unstored/chat {:.3}, chained/responses {:.3} (chained {:.1} % slower than unchained), chained/resent {:.3} (reading the chain: {:.1} %)",
            responses / chat,
            unstored / chat,
            chained / responses,
            (1.0 - chained / responses) * 100.0,
            chained / resent,
            (1.0 - chained / resent) * 100.0
        );
    }
    if binaries.len() == 2 {
        for &mode in &o.modes {
            let ratio = medians[&("this", mode)] / medians[&("base", mode)];
            println!("{}: this/base {ratio:.3}", mode.name());
        }
    }
}
