//! Recall latency against the number of items in the session (the target of docs/benchmarks.md:
//! "10, 1k, 100k, growing sub-linearly"), for either backend, lexical or fused with vector
//! similarity, plus what a cached item costs the embedded store in memory and what the in-process
//! embedding model takes per call.
//!
//! ```text
//! cargo bench -p agent-server --bench recall_scaling
//! cargo bench -p agent-server --bench recall_scaling -- --sizes 10,1000,100000 --queries 2000
//! scripts/test-services.sh run cargo bench -p agent-server --bench recall_scaling -- --backend redis+postgres
//! cargo bench -p agent-server --bench recall_scaling -- --sizes 1500,15000 --episode-share 0.8 --vectors 384
//! cargo bench -p agent-server --bench recall_scaling -- --sizes 10 --embed-model "$(scripts/embedding-model.sh)"
//! ```
//!
//! For each size a fresh store gets one session of N long-term items: facts ("Note 17: the w123
//! near the w4410 is w77.") and, with `--episode-share S`, a share S of episodes spread among them
//! ("Note 18: I told you the w12 and the w4 went to the w980 with the w3.", as a turn is kept),
//! words drawn uniformly from a 5,000-word vocabulary, so a given word is in about N × 3 / 5,000
//! items. Recall asks for 8 facts and, when the session holds episodes, 8 episodes, as a turn
//! does. Then:
//! - `first ms`: the first recall of a freshly opened store (the embedded store loads the session
//!   into its cache; redis+postgres connects and prepares its statements);
//! - `specific`: recalls for two vocabulary words (the common case: the matches grow with N only
//!   through the word's frequency);
//! - `common`: recalls for "note", which every item holds: the worst case, where every item of the
//!   session has to be scored, so it is linear in N by nature;
//! - `RSS/item` (embedded only): growth of the process's resident memory from before the first
//!   load to after it, per item (the cache's real cost, allocator included).
//!
//! With `--vectors DIM` every item is stored with a random unit vector of DIM dimensions and each
//! query kind is measured twice, alternating query by query: lexical only (no query vector), and
//! with a random unit query vector (`+vector`: the lexical ranking fused with a similarity scan of
//! every embedded item, `ranking::fuse`). Random vectors cost what real ones do (the scan does not
//! look at their values) but are all about equally unrelated (cosine near 0, below
//! `ranking::MIN_SIMILARITY`), so fusion keeps the lexical matches only: the figures are of
//! latency, not of recall quality. Before measuring, a query with a stored item's own vector must
//! find that item first with similarity 1, or the bench stops: the vectors are really searched.
//!
//! `--embed-model DIR` also times the in-process embedding model in DIR (as
//! scripts/embedding-model.sh prints) through the server's `Embedder` (its thread and queue, as a
//! turn calls it): one short query, and a batch of 32 turn-sized texts.
//!
//! `--backend redis+postgres` needs `AGENTWALL_TEST_REDIS_URL` and `AGENTWALL_TEST_DATABASE_URL`
//! (an admin URL: the bench creates a database per size and drops it), as printed by
//! `scripts/test-services.sh`. Latencies are per `MemoryStore::recall` call through the async API,
//! measured in an HDR histogram; medians, p95 (with vectors) and p99 are printed.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_server::embed::local::InProcess;
use agent_server::embed::{Embedder, InProcessConfig};
use agent_server::memory::embedded::{EmbeddedOptions, EmbeddedStore};
use agent_server::memory::ranking::Terms;
use agent_server::memory::redis_pg::{RedisPostgresConfig, RedisPostgresStore};
use agent_server::memory::{
    EpisodeData, MemoryConfig, MemoryContext, MemoryStore, NewFact, RecallQuery, TurnRole,
};
use chrono::{DateTime, Utc};
use hdrhistogram::Histogram;
use protocol::SessionId;
use protocol::control::{FactKind, FactSource};

const VOCABULARY: u64 = 5_000;
/// Facts, and as many episodes, that a recall asks for: a turn's default (`--recall-limit`).
const LIMIT: usize = 8;
/// Different query vectors the `+vector` recalls cycle through.
const QUERY_VECTORS: usize = 64;

#[derive(Clone, Copy, PartialEq)]
enum Backend {
    Embedded,
    RedisPostgres,
}

struct Options {
    backend: Backend,
    sizes: Vec<usize>,
    queries: usize,
    /// Share of the items that are episodes, 0 to 1.
    episode_share: f64,
    /// Dimension of the random unit vectors stored with every item, when given.
    vectors: Option<usize>,
    /// The in-process embedding model to time, when given.
    embed_model: Option<PathBuf>,
}

const USAGE: &str = "recall_scaling [--backend embedded|redis+postgres] [--sizes 10,1000,100000] \
     [--queries 2000] [--episode-share 0.8] [--vectors 384] [--embed-model DIR]";

fn options() -> Options {
    let mut o = Options {
        backend: Backend::Embedded,
        sizes: vec![10, 1_000, 100_000],
        queries: 2_000,
        episode_share: 0.0,
        vectors: None,
        embed_model: None,
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
            "--episode-share" => {
                o.episode_share = value.expect("--episode-share S").parse().expect("a number");
                assert!(
                    (0.0..=1.0).contains(&o.episode_share),
                    "--episode-share is between 0 and 1"
                );
            }
            "--vectors" => {
                let dimension = value.expect("--vectors DIM").parse().expect("a number");
                assert!(dimension > 0, "--vectors takes a dimension above 0");
                o.vectors = Some(dimension);
            }
            "--embed-model" => o.embed_model = Some(value.expect("--embed-model DIR").into()),
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

/// xorshift64: reproducible words and vectors without a dependency.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn word(&mut self) -> String {
        format!("w{}", self.next() % VOCABULARY)
    }

    /// A random direction of `dimension` dimensions, L2-normalised as stores expect (components
    /// uniform in [-1, 1), then scaled: not uniform on the sphere, which latency does not need).
    fn unit_vector(&mut self, dimension: usize) -> Arc<[f32]> {
        let raw: Vec<f32> = (0..dimension)
            .map(|_| (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
            .collect();
        let norm = raw.iter().map(|x| x * x).sum::<f32>().sqrt();
        raw.iter().map(|x| x / norm).collect()
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

/// How many of `size` items are episodes, and whether item `i` is one: spread evenly, so that
/// both kinds span the session's whole time range.
fn is_episode(i: usize, size: usize, share: f64) -> bool {
    let episodes = (size as f64 * share).round() as usize;
    (i + 1) * episodes / size > i * episodes / size
}

/// The session's items, written 1,000 at a time; returns the vector of item 0, when items have
/// vectors.
async fn fill(
    store: &dyn MemoryStore,
    session: &SessionId,
    size: usize,
    options: &Options,
    random: &mut Random,
) -> Option<Arc<[f32]>> {
    let mut first_vector = None;
    let mut written = 0;
    while written < size {
        let batch: Vec<NewFact> = (written..size.min(written + 1_000))
            .map(|i| {
                let at = now() - chrono::Duration::seconds(i as i64);
                let mut item = if is_episode(i, size, options.episode_share) {
                    let text = format!(
                        "Note {i}: I told you the {} and the {} went to the {} with the {}.",
                        random.word(),
                        random.word(),
                        random.word(),
                        random.word()
                    );
                    let role = if i % 2 == 0 {
                        TurnRole::User
                    } else {
                        TurnRole::Assistant
                    };
                    let data = EpisodeData {
                        role,
                        speaker: None,
                    };
                    NewFact::episode(data, text, at, FactSource::Injected, Vec::new())
                } else {
                    NewFact {
                        embedding: None,
                        source_turn_ids: Vec::new(),
                        kind: FactKind::Fact,
                        key: None,
                        text: format!(
                            "Note {i}: the {} near the {} is {}.",
                            random.word(),
                            random.word(),
                            random.word()
                        ),
                        data: None,
                        observed_at: at,
                        importance: 0.5,
                        source: FactSource::Injected,
                    }
                };
                item.embedding = options.vectors.map(|d| random.unit_vector(d));
                if i == 0 {
                    first_vector.clone_from(&item.embedding);
                }
                item
            })
            .collect();
        written += batch.len();
        store.inject(session, batch).await.expect("inject");
    }
    first_vector
}

fn query(text: &str, episodes: bool, vector: Option<Arc<[f32]>>) -> RecallQuery {
    RecallQuery {
        now: now(),
        terms: Terms::of(text),
        limit: LIMIT,
        episode_limit: if episodes { LIMIT } else { 0 },
        leave_out_working: false,
        vector,
    }
}

async fn recall(store: &dyn MemoryStore, session: &SessionId, query: RecallQuery) -> Duration {
    let started = Instant::now();
    let context = store.recall(session, query).await.expect("recall");
    let took = started.elapsed();
    std::hint::black_box(context);
    took
}

fn histogram() -> Histogram<u64> {
    Histogram::<u64>::new(3).expect("histogram")
}

fn record(histogram: &mut Histogram<u64>, took: Duration) {
    histogram.record(took.as_nanos() as u64).expect("record");
}

/// `n` recalls of `text`, lexical only; with `vectors`, each followed by one with the next query
/// vector: `(lexical, with vectors)`. Alternating puts both in the same spells of a noisy machine.
async fn measure(
    store: &dyn MemoryStore,
    session: &SessionId,
    text: &str,
    episodes: bool,
    vectors: &[Arc<[f32]>],
    n: usize,
) -> (Histogram<u64>, Histogram<u64>) {
    let (mut lexical, mut fused) = (histogram(), histogram());
    for i in 0..n {
        record(
            &mut lexical,
            recall(store, session, query(text, episodes, None)).await,
        );
        if !vectors.is_empty() {
            let vector = Arc::clone(&vectors[i % vectors.len()]);
            let took = recall(store, session, query(text, episodes, Some(vector))).await;
            record(&mut fused, took);
        }
    }
    (lexical, fused)
}

fn micros(histogram: &Histogram<u64>, quantile: f64) -> f64 {
    Duration::from_nanos(histogram.value_at_quantile(quantile)).as_secs_f64() * 1e6
}

/// Stops the bench unless recall with `vector`, the stored vector of the session's first item,
/// finds that item first with similarity 1: proof that the `+vector` recalls search the vectors.
async fn check_vectors_searched(
    store: &dyn MemoryStore,
    session: &SessionId,
    episodes: bool,
    vector: Arc<[f32]>,
) {
    let MemoryContext {
        facts,
        episodes: found_episodes,
        ..
    } = store
        .recall(session, query("unrelated", episodes, Some(vector)))
        .await
        .expect("recall");
    let best = facts
        .iter()
        .chain(&found_episodes)
        .filter_map(|r| r.why.vector)
        .fold(f64::NEG_INFINITY, f64::max);
    assert!(
        (best - 1.0).abs() < 1e-3,
        "recall with a stored item's own vector found no item with similarity 1 (best {best}): \
         the store did not search the vectors"
    );
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
                    ..EmbeddedOptions::default()
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

/// A session's kind holds more items than Redis + Postgres reads exactly (roughly: the bench's
/// sessions past it have more than that of their larger kind).
const SIMILAR_EXACT_UP_TO: usize = 2_000;

/// Waits until the database at `url` has its two HNSW indexes (facts, episodes) when `expected` (and none being
/// built), then prints what long-term memory takes there: the table with its indexes, and the
/// HNSW indexes apart.
async fn wait_for_vector_indexes(url: &str, expected: bool) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {url}: {e}"));
    let connection = agent_server::task::server_work(connection);
    let started = Instant::now();
    loop {
        let row = client
            .query_one(
                "SELECT count(*) FILTER (WHERE i.indisvalid), count(*) FILTER (WHERE NOT i.indisvalid)
                 FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
                 WHERE c.relname LIKE 'agentwall_facts_embedding_hnsw_%'",
                &[],
            )
            .await
            .expect("index state");
        let (valid, building): (i64, i64) = (row.get(0), row.get(1));
        if building == 0 && (valid >= 2 || !expected) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(1200),
            "no HNSW index after 20 minutes"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let row = client
        .query_one(
            "SELECT pg_total_relation_size('agentwall_facts'),
                    coalesce((SELECT sum(pg_relation_size(c.oid)) FROM pg_class AS c
                              WHERE c.relname LIKE 'agentwall_facts_embedding_hnsw_%'), 0)::bigint,
                    (SELECT count(*) FROM agentwall_facts)",
            &[],
        )
        .await
        .expect("sizes");
    let (total, hnsw, items): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
    eprintln!(
        "  postgres: {} items, table with indexes {:.1} MB ({} B/item), HNSW {:.1} MB; waited {:.1} s for the index",
        items,
        total as f64 / 1e6,
        total / items.max(1),
        hnsw as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    drop(client);
    let _ = connection.await;
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

/// The in-process embedding model in `dir`, timed through the server's `Embedder` as a turn calls
/// it: one short query, and a batch of 32 turn-sized texts, alternating, `rounds` of each.
async fn time_embeddings(dir: &std::path::Path, rounds: usize) {
    let config = InProcessConfig {
        model_dir: dir.to_owned(),
        model: None,
        batch_size: 32,
    };
    let started = Instant::now();
    let (embedder, _health) = InProcess::start(config, Default::default())
        .await
        .expect("load the embedding model");
    let loaded = started.elapsed();
    let short = vec!["What did Caroline say about the adoption agency?".to_owned()];
    let batch: Vec<String> = (0..32)
        .map(|i| {
            format!(
                "Turn {i}: yesterday I took my dog to the park near the river, and we met an old \
                 friend who told us about her new job at the bakery."
            )
        })
        .collect();
    let (mut one, mut many) = (histogram(), histogram());
    for round in 0..rounds + 3 {
        let started = Instant::now();
        embedder.embed(short.clone()).await.expect("embed");
        let single = started.elapsed();
        let started = Instant::now();
        embedder.embed(batch.clone()).await.expect("embed");
        // The first rounds warm the model's buffers and threads up.
        if round >= 3 {
            record(&mut one, single);
            record(&mut many, started.elapsed());
        }
    }
    println!(
        "in-process embedding model in {} ({} dimensions, loaded in {:.0} ms), {rounds} calls each",
        dir.display(),
        embedder.dimension().unwrap_or(0),
        loaded.as_secs_f64() * 1e3
    );
    println!(
        "{:>6} {:>9} {:>9} {:>15}",
        "texts", "p50 ms", "p95 ms", "p50 ms per text"
    );
    for (texts, histogram) in [(1, &one), (batch.len(), &many)] {
        let p50 = micros(histogram, 0.5) / 1e3;
        println!(
            "{texts:>6} {p50:>9.2} {:>9.2} {:>15.2}",
            micros(histogram, 0.95) / 1e3,
            p50 / texts as f64
        );
    }
    println!();
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let options = options();
    if let Some(dir) = &options.embed_model {
        time_embeddings(dir, (options.queries / 10).max(20)).await;
    }
    let name = match options.backend {
        Backend::Embedded => "embedded store",
        Backend::RedisPostgres => "redis+postgres store",
    };
    let episodes = options.episode_share > 0.0;
    let kinds = if episodes {
        format!("{:.0} % episodes", options.episode_share * 100.0)
    } else {
        "facts".to_owned()
    };
    println!(
        "{name}, one session of N items ({kinds}), {} recalls per query kind, limit {LIMIT}{}",
        options.queries,
        if episodes {
            " facts and 8 episodes"
        } else {
            ""
        }
    );
    match options.vectors {
        None => println!(
            "{:>9} {:>9} {:>13} {:>13} {:>13} {:>13} {:>10}",
            "items",
            "first ms",
            "specific p50",
            "specific p99",
            "common p50",
            "common p99",
            "RSS/item"
        ),
        Some(dimension) => {
            println!(
                "every item with a random {dimension}-dim unit vector; +vector: recall with a \
                 query vector too (alternating); µs"
            );
            println!(
                "{:>7} {:>9} {:>9} {:>12} {:>9} {:>9} {:>12} {:>9} {:>9} {:>9}",
                "items",
                "first ms",
                "query",
                "lexical p50",
                "p95",
                "p99",
                "+vector p50",
                "p95",
                "p99",
                "RSS/item"
            )
        }
    }
    for &size in &options.sizes {
        let fresh = Fresh::create(options.backend, size).await;
        let session = SessionId::parse(&format!("scale-{size}")).expect("session id");
        let mut random = Random(0x2545_F491_4F6C_DD1D ^ size as u64);
        let first_vector = {
            let store = fresh.open().await;
            fill(store.as_ref(), &session, size, &options, &mut random).await
        };
        // Reopened: the embedded cache is empty, so the first recall loads the session.
        let store = fresh.open().await;
        let rss_before = rss_bytes();
        let started = Instant::now();
        store
            .recall(&session, query("anything", episodes, None))
            .await
            .expect("first recall");
        let first = started.elapsed();
        let rss_after = rss_bytes();

        if let Some(vector) = first_vector {
            check_vectors_searched(store.as_ref(), &session, episodes, vector).await;
        }
        // Redis + Postgres builds the HNSW index when a recall first meets a session too large to
        // read exactly (the check's recall above): measured once it is built.
        if let Some((_, url)) = &fresh.postgres {
            let large = options.vectors.is_some() && size > SIMILAR_EXACT_UP_TO;
            wait_for_vector_indexes(url, large).await;
        }
        let query_vectors: Vec<Arc<[f32]>> = match options.vectors {
            Some(dimension) => (0..QUERY_VECTORS)
                .map(|_| random.unit_vector(dimension))
                .collect(),
            None => Vec::new(),
        };
        let specific_query = format!("{} {}", random.word(), random.word());
        let mut kinds = Vec::new();
        for (kind, text) in [("specific", specific_query.as_str()), ("common", "note")] {
            let store = store.as_ref();
            let measured = measure(
                store,
                &session,
                text,
                episodes,
                &query_vectors,
                options.queries,
            )
            .await;
            kinds.push((kind, measured));
        }
        let per_item = match (options.backend, rss_before, rss_after) {
            (Backend::Embedded, Some(before), Some(after)) => {
                format!("{} B", after.saturating_sub(before) / size as u64)
            }
            _ => "n/a".to_owned(),
        };
        let first_ms = first.as_secs_f64() * 1e3;
        if options.vectors.is_none() {
            let (specific, common) = (&kinds[0].1.0, &kinds[1].1.0);
            println!(
                "{:>9} {:>9.2} {:>10.1} µs {:>10.1} µs {:>10.1} µs {:>10.1} µs {:>10}",
                size,
                first_ms,
                micros(specific, 0.5),
                micros(specific, 0.99),
                micros(common, 0.5),
                micros(common, 0.99),
                per_item
            );
        } else {
            for (row, (kind, (lexical, fused))) in kinds.iter().enumerate() {
                let (items, first_ms, per_item) = match row {
                    0 => (
                        size.to_string(),
                        format!("{first_ms:.2}"),
                        per_item.as_str(),
                    ),
                    _ => (String::new(), String::new(), ""),
                };
                println!(
                    "{items:>7} {first_ms:>9} {kind:>9} {:>12.1} {:>9.1} {:>9.1} {:>12.1} {:>9.1} {:>9.1} {per_item:>9}",
                    micros(lexical, 0.5),
                    micros(lexical, 0.95),
                    micros(lexical, 0.99),
                    micros(fused, 0.5),
                    micros(fused, 0.95),
                    micros(fused, 0.99),
                );
            }
        }
        drop(store);
        fresh.remove().await;
    }
}
