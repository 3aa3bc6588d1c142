//! What serving the apps over MCP costs (`judge apps --action-mode mcp`): the judge's MCP server
//! against the same action run in process, in one run.
//!
//! - `in-process`: `World::execute` of `paypal.check_balance`, as directives and tool calls run;
//! - `mcp, 1 client`: the same action as an MCP `tools/call` over HTTP/1.1 keep-alive, one call
//!   at a time: the latency a call adds, as an agent's MCP client sees it;
//! - `mcp, N clients`: N keep-alive clients calling at once: the calls per second the server
//!   sustains (one trial, so every call takes the world's lock).
//!
//! ```text
//! cargo bench --bench mcp_calls                      # 3 rounds of 5 s, 4 clients
//! cargo bench --bench mcp_calls -- --rounds 5 --seconds 10 --clients 8
//! ```
//!
//! The calls are the stateless JSON-RPC POSTs the server answers (protocol version 2025-11-25,
//! `Accept: application/json, text/event-stream`), made with a blocking HTTP client so the
//! client's own cost is small and the same in every round. The last lines are the medians over
//! rounds.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use judge_client::suites::apps::mcp::McpServer;
use judge_client::suites::apps::runner::prepare_world;
use judge_client::suites::apps::world::SharedWorld;
use judge_client::suites::apps::{AppRegistry, Params, shipped};
use serde_json::{Value, json};

struct Options {
    rounds: usize,
    seconds: u64,
    clients: usize,
}

fn options() -> Options {
    let mut options = Options {
        rounds: 3,
        seconds: 5,
        clients: 4,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| -> u64 {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} takes a number"))
        };
        match arg.as_str() {
            "--rounds" => options.rounds = value("--rounds") as usize,
            "--seconds" => options.seconds = value("--seconds"),
            "--clients" => options.clients = value("--clients") as usize,
            // cargo bench passes --bench.
            "--bench" => {}
            other => panic!("unknown argument {other} (--rounds N, --seconds S, --clients C)"),
        }
    }
    options
}

fn world() -> SharedWorld {
    let scenario = shipped::scenarios()
        .unwrap()
        .into_iter()
        .find(|s| s.id == "check-balance")
        .unwrap();
    SharedWorld::new(prepare_world(&AppRegistry::builtin(), &scenario, 1).unwrap())
}

/// Calls per second and latency histogram (µs) of `seconds` of in-process executions.
fn in_process(seconds: u64) -> (f64, Histogram<u64>) {
    let world = world();
    let params = Params::new();
    let mut histogram = Histogram::new(3).unwrap();
    let end = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut calls = 0u64;
    while Instant::now() < end {
        let t = Instant::now();
        let result = world.with(|w| w.execute("alice", "paypal", "check_balance", &params));
        histogram.record(t.elapsed().as_nanos() as u64).unwrap();
        assert!(result.success);
        calls += 1;
    }
    (calls as f64 / started.elapsed().as_secs_f64(), histogram)
}

fn call_body(id: u64) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "paypal__check_balance", "arguments": {}}}))
    .unwrap()
}

/// Calls per second and latency histogram (ns) of `clients` keep-alive clients calling at once.
fn over_mcp(url: &str, clients: usize, seconds: u64) -> (f64, Histogram<u64>) {
    let stop = Arc::new(AtomicBool::new(false));
    let total = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let (url, stop, total) = (url.to_owned(), stop.clone(), total.clone());
            std::thread::spawn(move || {
                let agent = ureq::Agent::new_with_defaults();
                let mut histogram = Histogram::<u64>::new(3).unwrap();
                let mut id = 0;
                while !stop.load(Ordering::Relaxed) {
                    id += 1;
                    let t = Instant::now();
                    let mut response = agent
                        .post(&url)
                        .header("Content-Type", "application/json")
                        .header("Accept", "application/json, text/event-stream")
                        .header("MCP-Protocol-Version", "2025-11-25")
                        .send(&call_body(id)[..])
                        .expect("the MCP server answers");
                    let body: Value = response.body_mut().read_json().unwrap();
                    histogram.record(t.elapsed().as_nanos() as u64).unwrap();
                    assert_eq!(body["result"]["isError"], false, "{body}");
                    total.fetch_add(1, Ordering::Relaxed);
                }
                histogram
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    let mut histogram = Histogram::<u64>::new(3).unwrap();
    for thread in threads {
        histogram.add(thread.join().unwrap()).unwrap();
    }
    let rate = total.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    (rate, histogram)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let options = options();
    let server = McpServer::start("127.0.0.1:0".parse().unwrap(), None).unwrap();
    let world = world();
    let trial = server.open("bench", "alice", world);
    let url = trial.url().to_owned();
    // Warm-up: connections, the runtime, the allocator.
    over_mcp(&url, 1, 1);

    let names = [
        "in-process".to_owned(),
        "mcp, 1 client".to_owned(),
        format!("mcp, {} clients", options.clients),
    ];
    let mut rates = vec![Vec::new(); 3];
    let mut p50 = vec![Vec::new(); 3];
    let mut p99 = vec![Vec::new(); 3];
    println!(
        "{:<18} {:>12} {:>12} {:>12}",
        "round/mode", "calls/s", "p50 µs", "p99 µs"
    );
    for round in 0..options.rounds {
        let mut order = vec![0, 1, 2];
        if round % 2 == 1 {
            order.reverse();
        }
        for mode in order {
            let (rate, histogram) = match mode {
                0 => in_process(options.seconds),
                1 => over_mcp(&url, 1, options.seconds),
                _ => over_mcp(&url, options.clients, options.seconds),
            };
            let (q50, q99) = (
                histogram.value_at_quantile(0.5) as f64 / 1000.0,
                histogram.value_at_quantile(0.99) as f64 / 1000.0,
            );
            println!(
                "{:<18} {rate:>12.0} {q50:>12.1} {q99:>12.1}",
                format!("{round}/{}", names[mode])
            );
            rates[mode].push(rate);
            p50[mode].push(q50);
            p99[mode].push(q99);
        }
    }
    println!(
        "\nmedians over {} rounds of {} s:",
        options.rounds, options.seconds
    );
    for (mode, name) in names.iter().enumerate() {
        println!(
            "{name:<18} {:>12.0} {:>12.1} {:>12.1}",
            median(rates[mode].clone()),
            median(p50[mode].clone()),
            median(p99[mode].clone())
        );
    }
    println!(
        "added per call (p50, 1 client): {:.1} µs",
        median(p50[1].clone()) - median(p50[0].clone())
    );
    drop(trial);
}
