//! Recall latency of the embedded store against the number of facts in the session (issue 8's
//! "10, 1k, 100k, growing sub-linearly"), plus what a cached fact costs in memory.
//!
//! ```text
//! cargo bench -p agent-server --bench recall_scaling
//! cargo bench -p agent-server --bench recall_scaling -- --sizes 10,1000,100000 --queries 2000
//! ```
//!
//! For each size a fresh store gets one session of N facts ("Note 17: the w123 near the w4410 is
//! w77.", words drawn uniformly from a 5,000-word vocabulary, so a given word is in about
//! N × 3 / 5,000 facts). Then:
//! - `cold ms`: the first recall after reopening the file, which loads the session into the cache;
//! - `specific`: warm recalls for two vocabulary words (the common case: the matches grow with N
//!   only through the word's frequency);
//! - `common`: warm recalls for "note", which every fact holds: the worst case, where BM25 has to
//!   score every fact of the session, so it is linear in N by nature;
//! - `RSS/fact`: growth of the process's resident memory from before the cold load to after it,
//!   per fact (the cache's real cost, allocator included).
//!
//! Latencies are per `MemoryStore::recall` call through the async API, measured in an HDR
//! histogram; medians and p99 are printed.

use std::time::{Duration, Instant};

use agent_server::memory::embedded::{EmbeddedOptions, EmbeddedStore};
use agent_server::memory::{MemoryConfig, MemoryStore, NewFact, RecallQuery};
use chrono::{DateTime, Utc};
use hdrhistogram::Histogram;
use protocol::SessionId;
use protocol::control::{FactKind, FactSource};

const VOCABULARY: u64 = 5_000;

struct Options {
    sizes: Vec<usize>,
    queries: usize,
}

fn options() -> Options {
    let mut o = Options {
        sizes: vec![10, 1_000, 100_000],
        queries: 2_000,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1);
        match args[i].as_str() {
            "--sizes" => {
                o.sizes = value
                    .expect("--sizes 10,1000,100000")
                    .split(',')
                    .map(|s| s.parse().expect("--sizes takes numbers"))
                    .collect();
            }
            "--queries" => o.queries = value.expect("--queries N").parse().expect("a number"),
            "--help" => {
                println!("recall_scaling [--sizes 10,1000,100000] [--queries 2000]");
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

async fn fill(store: &EmbeddedStore, session: &SessionId, size: usize, words: &mut Words) {
    let mut written = 0;
    while written < size {
        let batch: Vec<NewFact> = (written..size.min(written + 1_000))
            .map(|i| NewFact {
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
    store: &EmbeddedStore,
    session: &SessionId,
    text: &str,
    n: usize,
) -> Histogram<u64> {
    let mut histogram = Histogram::<u64>::new(3).expect("histogram");
    for _ in 0..n {
        let started = Instant::now();
        let query = RecallQuery {
            now: now(),
            text,
            limit: 8,
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

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let options = options();
    let config = MemoryConfig::default();
    // Large enough that the measured session is never evicted.
    let cache = EmbeddedOptions {
        cache_items: 10_000_000,
    };
    println!(
        "embedded store, one session of N facts, {} warm recalls per query kind, limit 8",
        options.queries
    );
    println!(
        "{:>9} {:>9} {:>13} {:>13} {:>13} {:>13} {:>10}",
        "facts", "cold ms", "specific p50", "specific p99", "common p50", "common p99", "RSS/fact"
    );
    for &size in &options.sizes {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("memory.sqlite3");
        let session = SessionId::parse(&format!("scale-{size}")).expect("session id");
        let mut words = Words(0x2545_F491_4F6C_DD1D ^ size as u64);
        {
            let store = EmbeddedStore::open_with(&path, config, cache)
                .await
                .expect("open");
            fill(&store, &session, size, &mut words).await;
        }
        // Reopened: the cache is empty, so the first recall loads the session.
        let store = EmbeddedStore::open_with(&path, config, cache)
            .await
            .expect("reopen");
        let rss_before = rss_bytes();
        let started = Instant::now();
        let query = RecallQuery {
            now: now(),
            text: "anything",
            limit: 8,
        };
        store.recall(&session, query).await.expect("cold recall");
        let cold = started.elapsed();
        let rss_after = rss_bytes();

        let specific_query = format!("{} {}", words.next(), words.next());
        let specific = measure(&store, &session, &specific_query, options.queries).await;
        let common = measure(&store, &session, "note", options.queries).await;
        let per_fact = match (rss_before, rss_after) {
            (Some(before), Some(after)) => {
                format!("{} B", after.saturating_sub(before) / size as u64)
            }
            _ => "n/a".to_owned(),
        };
        println!(
            "{:>9} {:>9.2} {:>10.1} µs {:>10.1} µs {:>10.1} µs {:>10.1} µs {:>10}",
            size,
            cold.as_secs_f64() * 1e3,
            micros(&specific, 0.5),
            micros(&specific, 0.99),
            micros(&common, 0.5),
            micros(&common, 0.99),
            per_fact
        );
    }
}
