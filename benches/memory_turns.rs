//! Chat-turn throughput and latency of the real agent-server binary (release build), per memory
//! backend and client concurrency, with the server's own memory timings (from `/metrics`) so the
//! share of each turn spent in memory is visible.
//!
//! ```text
//! cargo bench --bench memory_turns                         # embedded; redis+postgres too when
//!                                                          # AGENTWALL_TEST_REDIS_URL and
//!                                                          # AGENTWALL_TEST_DATABASE_URL are set
//! cargo bench --bench memory_turns -- --seconds 10 --concurrency 1,16,64
//! cargo bench --bench memory_turns -- --backends redis+postgres --repeats 3
//! AGENTWALL_BENCH_BASELINE=/tmp/agent-server-main cargo bench --bench memory_turns
//!     # also every backend of another agent-server binary (e.g. built from main), on its own
//!     # fresh data directory or database, in the same run: before/after ratios
//! ```
//!
//! Databases it creates (`bench_<pid>_<n>`) are dropped at the end.
//!
//! Each client task owns 8 sessions and alternates a statement ("My item 3 is v17.") with the
//! question that recalls it, so every turn does real recall and commit work. Sessions are fresh
//! per run. Latencies go into an HDR histogram; the first second of each run is warm-up.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::process::Command;
use std::rc::Rc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

mod support;

use support::start;

struct Options {
    seconds: u64,
    concurrency: Vec<usize>,
    /// `embedded` and/or `redis+postgres`.
    backends: Vec<String>,
    /// Rounds over every backend.
    repeats: usize,
}

fn options() -> Options {
    let mut o = Options {
        seconds: 5,
        concurrency: vec![1, 16, 64],
        backends: vec!["embedded".into(), "redis+postgres".into()],
        repeats: 1,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--seconds" => o.seconds = args[i + 1].parse().expect("--seconds N"),
            "--concurrency" => {
                o.concurrency = args[i + 1]
                    .split(',')
                    .map(|c| c.parse().expect("--concurrency 1,16,64"))
                    .collect();
            }
            "--backends" => {
                o.backends = args[i + 1].split(',').map(str::to_owned).collect();
                if let Some(bad) = o
                    .backends
                    .iter()
                    .find(|b| !["embedded", "redis+postgres"].contains(&b.as_str()))
                {
                    eprintln!("unknown backend {bad:?}: use embedded and/or redis+postgres");
                    std::process::exit(2);
                }
            }
            "--repeats" => o.repeats = args[i + 1].parse().expect("--repeats N"),
            "--help" => {
                println!(
                    "memory_turns [--seconds N] [--concurrency 1,16,64] [--backends embedded,redis+postgres] [--repeats N]"
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
    o
}

/// Sum and count of each memory operation's latency histogram (keyed `operation:NAME`) and of
/// each dependency's step histogram (`dependency:NAME`), from `/metrics`.
async fn memory_timings(client: &awc::Client, url: &str) -> BTreeMap<String, (f64, f64)> {
    let mut out = BTreeMap::new();
    let Ok(mut response) = client.get(format!("{url}/metrics")).send().await else {
        return out;
    };
    let body = response.body().limit(8 << 20).await.unwrap_or_default();
    let histograms = [
        ("agentwall_memory_operation_duration_seconds_", "operation"),
        (
            "agentwall_memory_dependency_duration_seconds_",
            "dependency",
        ),
    ];
    for line in String::from_utf8_lossy(&body).lines() {
        let Some((rest, label)) = histograms
            .iter()
            .find_map(|(prefix, label)| line.strip_prefix(prefix).map(|rest| (rest, *label)))
        else {
            continue;
        };
        let (kind, rest) = rest.split_once('{').unwrap_or(("", ""));
        let Some(name) = rest
            .split(&format!("{label}=\""))
            .nth(1)
            .and_then(|r| r.split('"').next())
        else {
            continue;
        };
        let value: f64 = line
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        let entry = out.entry(format!("{label}:{name}")).or_insert((0.0, 0.0));
        match kind {
            "sum" => entry.0 += value,
            "count" => entry.1 += value,
            _ => {}
        }
    }
    out
}

struct Measured {
    turns_per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: u64,
    memory_ms_per_turn: BTreeMap<String, f64>,
}

fn run(url: &str, concurrency: usize, seconds: u64, tag: &str) -> Measured {
    actix_rt::System::new().block_on(async move {
        let client = awc::Client::builder()
            .timeout(Duration::from_secs(30))
            .connector(awc::Connector::new().limit(concurrency.max(1) * 2))
            .finish();
        let histogram = Rc::new(RefCell::new(Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap()));
        let errors = Rc::new(RefCell::new(0u64));
        let first_error: Rc<RefCell<Option<String>>> = Rc::new(RefCell::new(None));
        let warmup = Duration::from_secs(1);
        let start = Instant::now();
        let measure_from = start + warmup;
        let end = measure_from + Duration::from_secs(seconds);
        let before = Rc::new(RefCell::new(None));
        let mut tasks = Vec::new();
        for task in 0..concurrency {
            let (client, url, histogram, errors, tag) = (client.clone(), url.to_owned(), histogram.clone(), errors.clone(), tag.to_owned());
            let first_error = first_error.clone();
            tasks.push(actix_rt::spawn(async move {
                let mut k = 0u64;
                while Instant::now() < end {
                    let session = format!("bench-{tag}-{task}-{}", k % 8);
                    let item = (k / 16) % 50;
                    let text = if (k / 8).is_multiple_of(2) {
                        format!("My item {item} is v{}.", k % 97)
                    } else {
                        format!("What is my item {item}?")
                    };
                    let body = format!(r#"{{"model":"agentwall-builtin","messages":[{{"role":"user","content":"{text}"}}]}}"#);
                    let sent = Instant::now();
                    let result = client
                        .post(format!("{url}/v1/chat/completions"))
                        .insert_header(("content-type", "application/json"))
                        .insert_header(("x-session-id", session))
                        .send_body(body)
                        .await;
                    let failure = match result {
                        Ok(mut r) => match r.body().await {
                            Ok(_) if r.status().is_success() => None,
                            Ok(body) => Some(format!("{}: {}", r.status(), String::from_utf8_lossy(&body))),
                            Err(e) => Some(e.to_string()),
                        },
                        Err(e) => Some(e.to_string()),
                    };
                    let ok = failure.is_none();
                    if let Some(f) = failure {
                        first_error.borrow_mut().get_or_insert(f);
                    }
                    if sent >= measure_from && Instant::now() <= end {
                        if ok {
                            let micros = sent.elapsed().as_micros() as u64;
                            histogram.borrow_mut().record(micros.max(1)).unwrap();
                        } else {
                            *errors.borrow_mut() += 1;
                        }
                    }
                    k += 1;
                }
            }));
        }
        actix_rt::time::sleep_until(measure_from.into()).await;
        *before.borrow_mut() = Some(memory_timings(&client, url).await);
        for t in tasks {
            let _ = t.await;
        }
        let after = memory_timings(&client, url).await;
        if let Some(e) = first_error.borrow().as_ref() {
            eprintln!("first error at concurrency {concurrency}: {e}");
        }
        let h = histogram.borrow();
        let turns = h.len() as f64;
        let before = before.borrow().clone().unwrap_or_default();
        // Operations: mean ms per operation. Dependencies: ms per measured turn (a group
        // commit's step serves many turns and is counted once).
        let memory_ms_per_turn = after
            .iter()
            .map(|(key, (sum, count))| {
                let (s0, c0) = before.get(key).copied().unwrap_or((0.0, 0.0));
                let per = if key.starts_with("dependency:") {
                    if turns > 0.0 { (sum - s0) / turns * 1000.0 } else { 0.0 }
                } else if count - c0 > 0.0 {
                    (sum - s0) / (count - c0) * 1000.0
                } else {
                    0.0
                };
                (key.clone(), per)
            })
            .collect();
        Measured {
            turns_per_second: turns / seconds as f64,
            p50_ms: h.value_at_quantile(0.50) as f64 / 1000.0,
            p99_ms: h.value_at_quantile(0.99) as f64 / 1000.0,
            errors: *errors.borrow(),
            memory_ms_per_turn,
        }
    })
}

/// Drops a database this bench created; a failure is only reported (the run's figures stand).
fn drop_database(admin_url: &str, name: &str) {
    let ok = Command::new("psql")
        .args([
            admin_url,
            "-q",
            "-c",
            &format!("DROP DATABASE IF EXISTS {name}"),
        ])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("could not drop the bench database {name}");
    }
}

fn create_database(admin_url: &str, name: &str) -> String {
    let ok = Command::new("psql")
        .args([admin_url, "-q", "-c", &format!("CREATE DATABASE {name}")])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(ok, "psql could not create database {name} on {admin_url}");
    match admin_url.rsplit_once('/') {
        Some((base, _)) => format!("{base}/{name}"),
        None => panic!("AGENTWALL_TEST_DATABASE_URL has no database part: {admin_url}"),
    }
}

fn main() {
    let o = options();
    let binary = support::release_agent_server();
    let baseline = std::env::var_os("AGENTWALL_BENCH_BASELINE").map(std::path::PathBuf::from);
    // The binaries to measure, each with its name suffix: the baseline first, so that a slower
    // start of the machine (caches, CPU frequency) does not favour the change.
    let binaries: Vec<(&str, std::path::PathBuf)> = baseline
        .into_iter()
        .map(|b| ("@base", b))
        .chain([("", binary)])
        .collect();
    let data = tempfile::tempdir().unwrap();
    let services = (
        std::env::var("AGENTWALL_TEST_REDIS_URL"),
        std::env::var("AGENTWALL_TEST_DATABASE_URL"),
    );
    let mut databases = Vec::new();
    let mut backends: Vec<(String, std::path::PathBuf, Vec<String>)> = Vec::new();
    for (suffix, binary) in &binaries {
        if o.backends.iter().any(|b| b == "embedded") {
            // A data directory of its own per binary.
            let dir = data.path().join(format!("embedded{suffix}"));
            backends.push((
                format!("embedded{suffix}"),
                binary.clone(),
                vec!["--data-dir".into(), dir.display().to_string()],
            ));
        }
        if o.backends.iter().any(|b| b == "redis+postgres") {
            let (Ok(redis), Ok(pg)) = &services else {
                eprintln!(
                    "redis+postgres skipped: set AGENTWALL_TEST_REDIS_URL and AGENTWALL_TEST_DATABASE_URL (scripts/test-services.sh start)"
                );
                continue;
            };
            let name = format!("bench_{}_{}", std::process::id(), databases.len());
            let db = create_database(pg, &name);
            databases.push(name);
            backends.push((
                format!("redis+postgres{suffix}"),
                binary.clone(),
                vec![
                    "--redis-url".into(),
                    redis.clone(),
                    "--database-url".into(),
                    db,
                ],
            ));
        }
    }
    println!(
        "agent-server release, builtin model, {} s per run after 1 s warm-up; recall/commit ms are server-side means per operation; pg/redis ms/t: time in steps against each dependency per turn (a group commit's steps once per batch)",
        o.seconds
    );
    println!(
        "{:<16} {:>5} {:>10} {:>9} {:>9} {:>7} {:>11} {:>11} {:>8} {:>9} {:>9}",
        "backend",
        "conc",
        "turns/s",
        "p50 ms",
        "p99 ms",
        "errors",
        "recall ms",
        "commit ms",
        "memory%",
        "pg ms/t",
        "redis ms/t"
    );
    // Rounds interleave the backends (and binaries), so that the machine's drift over the run
    // touches them alike; compare medians.
    for _round in 0..o.repeats {
        for (name, binary, args) in &backends {
            measure(&o, name, binary, args);
        }
    }
    if let Ok(pg) = &services.1 {
        for name in databases {
            drop_database(pg, &name);
        }
    }
}

/// One server of `binary`, measured at each concurrency: one line each.
fn measure(o: &Options, name: &str, binary: &std::path::Path, args: &[String]) {
    {
        let server = start(binary, args);
        for &c in &o.concurrency {
            let m = run(
                &server.url,
                c,
                o.seconds,
                // Session ids allow only [A-Za-z0-9._:-]: "redis+postgres" becomes "redis-postgres".
                &format!(
                    "{}-{c}-{}",
                    name.replace(['+', '@'], "-"),
                    std::process::id()
                ),
            );
            let get = |key: &str| m.memory_ms_per_turn.get(key).copied().unwrap_or(0.0);
            let (recall, commit) = (get("operation:recall"), get("operation:commit"));
            let (postgres, redis) = (get("dependency:postgres"), get("dependency:redis"));
            // Share of the mean turn latency spent in memory work, with Little's law giving the mean
            // latency from throughput and concurrency (the HDR histogram gives the quantiles).
            let mean_ms = if m.turns_per_second > 0.0 {
                c as f64 / m.turns_per_second * 1000.0
            } else {
                0.0
            };
            let share = if mean_ms > 0.0 {
                (recall + commit) / mean_ms * 100.0
            } else {
                0.0
            };
            println!(
                "{name:<16} {c:>5} {:>10.0} {:>9.2} {:>9.2} {:>7} {recall:>11.3} {commit:>11.3} {share:>7.0}% {postgres:>9.3} {redis:>9.3}",
                m.turns_per_second, m.p50_ms, m.p99_ms, m.errors
            );
        }
        drop(server);
    }
}
