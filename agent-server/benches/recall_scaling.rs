//! Recall latency against the number of facts in the session (the target of docs/benchmarks.md: "10, 1k, 100k, growing
//! sub-linearly"), for either backend, plus what a cached fact costs the embedded store in memory.
//!
//! ```text
//! cargo bench -p agent-server --bench recall_scaling
//! cargo bench -p agent-server --bench recall_scaling -- --sizes 10,1000,100000 --queries 2000
//! scripts/test-services.sh run cargo bench -p agent-server --bench recall_scaling -- --backend redis+postgres
//! ```
//!
//! For each size a fresh store gets one session of N facts ("Note 17: the w123 near the w4410 is
//! w77.", words drawn uniformly from a 5,000-word vocabulary, so a given word is in about
//! N × 3 / 5,000 facts). Then:
//! - `first ms`: the first recall of a freshly opened store (the embedded store loads the session
//!   into its cache; redis+postgres connects and prepares its statements);
//! - `specific`: recalls for two vocabulary words (the common case: the matches grow with N only
//!   through the word's frequency);
//! - `common`: recalls for "note", which every fact holds: the worst case, where every fact of the
//!   session has to be scored, so it is linear in N by nature;
//! - `RSS/fact` (embedded only): growth of the process's resident memory from before the first
//!   load to after it, per fact (the cache's real cost, allocator included).
//!
//! `--backend redis+postgres` needs `AGENTWALL_TEST_REDIS_URL` and `AGENTWALL_TEST_DATABASE_URL`
//! (an admin URL: the bench creates a database per size and drops it), as printed by
//! `scripts/test-services.sh`. Latencies are per `MemoryStore::recall` call through the async API,
//! measured in an HDR histogram; medians and p99 are printed.

use std::time::{Duration, Instant};

use agent_server::memory::embedded::{EmbeddedOptions, EmbeddedStore};
use agent_server::memory::ranking::Terms;
use agent_server::memory::redis_pg::{RedisPostgresConfig, RedisPostgresStore};
use agent_server::memory::{MemoryConfig, MemoryStore, NewFact, RecallQuery};
use chrono::{DateTime, Utc};
use hdrhistogram::Histogram;
use protocol::SessionId;
use protocol::control::{FactKind, FactSource};

const VOCABULARY: u64 = 5_000;

#[derive(Clone, Copy, PartialEq)]
enum Backend {
    Embedded,
    RedisPostgres,
}

struct Options {
    backend: Backend,
    sizes: Vec<usize>,
    queries: usize,
}

const USAGE: &str =
    "recall_scaling [--backend embedded|redis+postgres] [--sizes 10,1000,100000] [--queries 2000]";

fn options() -> Options {
    let mut o = Options {
        backend: Backend::Embedded,
        sizes: vec![10, 1_000, 100_000],
        queries: 2_000,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1);
        match args[i].as_str() {
            "--backend" => {
                o.backend = match value.map(String::as_str) {
                    Some("embedded") => Backend::Embedded,
                    Some("redis+postgres") => Backend::RedisPostgres,
                    _ => panic!("--backend takes embedded or redis+postgres; {USAGE}"),
                }
            }
            "--sizes" => {
                o.sizes = value
                    .expect("--sizes 10,1000,100000")
                    .split(',')
                    .map(|s| s.parse().expect("--sizes takes numbers"))
                    .collect();
            }
            "--queries" => o.queries = value.expect("--queries N").parse().expect("a number"),
            "--help" => {
                println!("{USAGE}");
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

/// xorshift64: reproducible words without a dependency.
struct Words(u64);

impl Words {
    fn next(&mut self) -> String {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        format!("w{}", self.0 % VOCABULARY)
    }
}

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-06-01T00:00:00Z")
        .unwrap()
        .to_utc()
}

/// Resident set size of this process, from /proc (Linux), in bytes.
fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

async fn fill(store: &dyn MemoryStore, session: &SessionId, size: usize, words: &mut Words) {
    let mut written = 0;
    while written < size {
        let batch: Vec<NewFact> = (written..size.min(written + 1_000))
            .map(|i| NewFact {
                embedding: None,
                source_turn_ids: Vec::new(),
                kind: FactKind::Fact,
                key: None,
                text: format!(
                    "Note {i}: the {} near the {} is {}.",
                    words.next(),
                    words.next(),
                    words.next()
                ),
                data: None,
                observed_at: now() - chrono::Duration::seconds(i as i64),
                importance: 0.5,
                source: FactSource::Injected,
            })
            .collect();
        written += batch.len();
        store.inject(session, batch).await.expect("inject");
    }
}

async fn measure(
    store: &dyn MemoryStore,
    session: &SessionId,
    text: &str,
    n: usize,
) -> Histogram<u64> {
    let mut histogram = Histogram::<u64>::new(3).expect("histogram");
    for _ in 0..n {
        let started = Instant::now();
        let query = RecallQuery {
            now: now(),
            terms: Terms::of(text),
            limit: 8,
            episode_limit: 0,
            vector: None,
        };
        let context = store.recall(session, query).await.expect("recall");
        std::hint::black_box(context);
        histogram
            .record(started.elapsed().as_nanos() as u64)
            .expect("record");
    }
    histogram
}

fn micros(histogram: &Histogram<u64>, quantile: f64) -> f64 {
    Duration::from_nanos(histogram.value_at_quantile(quantile)).as_secs_f64() * 1e6
}

/// Fresh storage for one size: opened once to fill it and again to measure the first recall.
struct Fresh {
    backend: Backend,
    embedded_path: std::path::PathBuf,
    _dir: tempfile::TempDir,
    /// redis+postgres: the admin URL and the URL of the database made for this size.
    postgres: Option<(String, String)>,
}

impl Fresh {
    async fn create(backend: Backend, size: usize) -> Fresh {
        let dir = tempfile::tempdir().expect("temp dir");
        let embedded_path = dir.path().join("memory.sqlite3");
        let postgres = match backend {
            Backend::Embedded => None,
            Backend::RedisPostgres => {
                let admin = required_env("AGENTWALL_TEST_DATABASE_URL");
                let name = format!("recall_scaling_{}_{size}", std::process::id());
                admin_sql(&admin, &format!("CREATE DATABASE {name}")).await;
                let url = match admin.rsplit_once('/') {
                    Some((base, _)) => format!("{base}/{name}"),
                    None => panic!("AGENTWALL_TEST_DATABASE_URL has no database part: {admin}"),
                };
                Some((admin, url))
            }
        };
        Fresh {
            backend,
            embedded_path,
            _dir: dir,
            postgres,
        }
    }

    async fn open(&self) -> Box<dyn MemoryStore> {
        let config = MemoryConfig::default();
        match (self.backend, &self.postgres) {
            (Backend::RedisPostgres, Some((_, url))) => {
                let mut services =
                    RedisPostgresConfig::new(required_env("AGENTWALL_TEST_REDIS_URL"), url.clone());
                services.key_prefix = format!("recall-scaling-{}", std::process::id());
                Box::new(
                    RedisPostgresStore::connect(services, config)
                        .await
                        .expect("connect to Redis and Postgres"),
                )
            }
            _ => {
                // Large enough that the measured session is never evicted.
                let cache = EmbeddedOptions {
                    cache_items: 10_000_000,
                };
                Box::new(
                    EmbeddedStore::open_with(&self.embedded_path, config, cache)
                        .await
                        .expect("open"),
                )
            }
        }
    }

    async fn remove(self) {
        if let Some((admin, url)) = &self.postgres {
            let name = url.rsplit_once('/').map_or("", |(_, n)| n);
            admin_sql(
                admin,
                &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            )
            .await;
        }
    }
}

fn required_env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: run `scripts/test-services.sh run cargo bench -p agent-server \
             --bench recall_scaling -- --backend redis+postgres`"
        )
    })
}

async fn admin_sql(admin_url: &str, sql: &str) {
    let (client, connection) = tokio_postgres::connect(admin_url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {admin_url}: {e}"));
    let connection = agent_server::task::server_work(connection);
    client
        .batch_execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    drop(client);
    let _ = connection.await;
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let options = options();
    let name = match options.backend {
        Backend::Embedded => "embedded store",
        Backend::RedisPostgres => "redis+postgres store",
    };
    println!(
        "{name}, one session of N facts, {} recalls per query kind, limit 8",
        options.queries
    );
    println!(
        "{:>9} {:>9} {:>13} {:>13} {:>13} {:>13} {:>10}",
        "facts", "first ms", "specific p50", "specific p99", "common p50", "common p99", "RSS/fact"
    );
    for &size in &options.sizes {
        let fresh = Fresh::create(options.backend, size).await;
        let session = SessionId::parse(&format!("scale-{size}")).expect("session id");
        let mut words = Words(0x2545_F491_4F6C_DD1D ^ size as u64);
        {
            let store = fresh.open().await;
            fill(store.as_ref(), &session, size, &mut words).await;
        }
        // Reopened: the embedded cache is empty, so the first recall loads the session.
        let store = fresh.open().await;
        let rss_before = rss_bytes();
        let started = Instant::now();
        let query = RecallQuery {
            now: now(),
            terms: Terms::of("anything"),
            limit: 8,
            episode_limit: 0,
            vector: None,
        };
        store.recall(&session, query).await.expect("first recall");
        let first = started.elapsed();
        let rss_after = rss_bytes();

        let specific_query = format!("{} {}", words.next(), words.next());
        let specific = measure(store.as_ref(), &session, &specific_query, options.queries).await;
        let common = measure(store.as_ref(), &session, "note", options.queries).await;
        let per_fact = match (options.backend, rss_before, rss_after) {
            (Backend::Embedded, Some(before), Some(after)) => {
                format!("{} B", after.saturating_sub(before) / size as u64)
            }
            _ => "n/a".to_owned(),
        };
        println!(
            "{:>9} {:>9.2} {:>10.1} µs {:>10.1} µs {:>10.1} µs {:>10.1} µs {:>10}",
            size,
            first.as_secs_f64() * 1e3,
            micros(&specific, 0.5),
            micros(&specific, 0.99),
            micros(&common, 0.5),
            micros(&common, 0.99),
            per_fact
        );
        drop(store);
        fresh.remove().await;
    }
}
