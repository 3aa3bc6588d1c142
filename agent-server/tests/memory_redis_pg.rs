//! The redis+postgres memory backend against real servers: the shared conformance suite, then what is
//! specific to this backend (migrations, outages, restarts, several servers, Redis TTLs, atomicity).
//!
//! Needs `AGENTWALL_TEST_REDIS_URL` and `AGENTWALL_TEST_DATABASE_URL` (an admin URL: every test
//! creates its own database). `scripts/test-services.sh` starts throwaway servers and prints them:
//!
//! ```sh
//! scripts/test-services.sh run cargo test -p agent-server --test memory_redis_pg
//! ```
//!
//! Without them every test fails and says so; none is skipped. Tests that stop servers start their
//! own (a `redis-server` or `postgres` child on a free port) and never stop the shared ones.
// Tests spawn their own tasks (database connections), outside any request.
#![allow(clippy::disallowed_methods)]

use std::net::TcpListener;
use std::ops::Deref;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agent_server::memory::ranking::Terms;
use agent_server::memory::redis_pg::{RedisPostgresConfig, RedisPostgresStore};
use agent_server::memory::{
    MemoryError, MemoryStore, NewFact, RecallQuery, Restatement, TurnRole, TurnWrite, WorkingItem,
    conformance,
};
use chrono::{DateTime, Utc};
use protocol::SessionId;
use protocol::control::{FactKind, FactSource};
use uuid::Uuid;

const SETUP_HINT: &str = "start throwaway Redis and Postgres first: \
    `eval \"$(scripts/test-services.sh)\"`, or run the tests through \
    `scripts/test-services.sh run cargo test -p agent-server --test memory_redis_pg`";

fn required_env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set; {SETUP_HINT}"))
}

fn redis_url() -> String {
    required_env("AGENTWALL_TEST_REDIS_URL")
}

fn admin_url() -> String {
    required_env("AGENTWALL_TEST_DATABASE_URL")
}

/// `url` with its database name replaced (URL form only, which is what the script prints).
fn with_dbname(url: &str, dbname: &str) -> String {
    let (scheme, rest) = url
        .split_once("://")
        .unwrap_or_else(|| panic!("AGENTWALL_TEST_DATABASE_URL must be a postgres:// URL"));
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let query = tail.find('?').map_or("", |i| &tail[i..]);
    format!("{scheme}://{authority}/{dbname}{query}")
}

/// `url` with its user replaced (URL form only).
fn with_user(url: &str, user: &str) -> String {
    let (scheme, rest) = url
        .split_once("://")
        .unwrap_or_else(|| panic!("AGENTWALL_TEST_DATABASE_URL must be a postgres:// URL"));
    let host = rest.split_once('@').map_or(rest, |(_, host)| host);
    format!("{scheme}://{user}@{host}")
}

async fn admin_client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {url}: {e}; {SETUP_HINT}"));
    tokio::spawn(connection);
    client
}

/// A database of its own, dropped when the test ends.
struct TestDb {
    admin: String,
    name: String,
    url: String,
}

impl TestDb {
    async fn create() -> Self {
        Self::create_on(&admin_url()).await
    }

    async fn create_on(admin: &str) -> Self {
        let name = format!("test_{}", Uuid::new_v4().simple());
        admin_client(admin)
            .await
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .expect("create the test database");
        Self {
            admin: admin.to_owned(),
            url: with_dbname(admin, &name),
            name,
        }
    }

    async fn client(&self) -> tokio_postgres::Client {
        admin_client(&self.url).await
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        // Drop runs inside the test's runtime, which cannot block on itself: use a thread with a
        // runtime of its own. Best effort: the servers are throwaway anyway.
        let (admin, name) = (self.admin.clone(), self.name.clone());
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let (client, connection) = tokio_postgres::connect(&admin, tokio_postgres::NoTls)
                    .await
                    .ok()?;
                tokio::spawn(connection);
                client
                    .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .await
                    .ok()
            })
        });
        let _ = dropped.join();
    }
}

fn config(redis_url: &str, database_url: &str, prefix: &str) -> RedisPostgresConfig {
    RedisPostgresConfig {
        key_prefix: prefix.to_owned(),
        // Generous: two cores are shared with compilers; the outage tests use short timeouts.
        timeout: Duration::from_secs(5),
        postgres_pool_size: 4,
        ..RedisPostgresConfig::new(redis_url, database_url)
    }
}

fn unique_prefix() -> String {
    format!("test-{}", Uuid::new_v4().simple())
}

/// A store on its own database and key prefix.
struct Harness {
    store: RedisPostgresStore,
    prefix: String,
    db: TestDb,
}

impl Harness {
    async fn new() -> Self {
        let db = TestDb::create().await;
        let prefix = unique_prefix();
        let store = RedisPostgresStore::connect(
            config(&redis_url(), &db.url, &prefix),
            conformance::config(),
        )
        .await
        .unwrap_or_else(|e| panic!("cannot open the store: {e}; {SETUP_HINT}"));
        Self { store, prefix, db }
    }

    /// A second store (another server) on the same database and prefix.
    async fn twin(&self) -> RedisPostgresStore {
        RedisPostgresStore::connect(
            config(&redis_url(), &self.db.url, &self.prefix),
            conformance::config(),
        )
        .await
        .expect("open a second store")
    }
}

impl Deref for Harness {
    type Target = RedisPostgresStore;
    fn deref(&self) -> &RedisPostgresStore {
        &self.store
    }
}

agent_server::memory_conformance_tests!(Harness::new().await);

// ---------------------------------------------------------------------------------------------
// Helpers for the backend-specific tests.

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2030-01-01T09:00:00Z")
        .unwrap()
        .to_utc()
}

fn session() -> SessionId {
    SessionId::parse(&format!("redis-pg-{}", Uuid::new_v4())).unwrap()
}

fn fact(key: Option<&str>, text: &str) -> NewFact {
    NewFact {
        kind: FactKind::Fact,
        key: key.map(str::to_owned),
        text: text.to_owned(),
        data: None,
        observed_at: t0(),
        importance: 0.5,
        source: FactSource::Extracted,
    }
}

fn user(text: &str) -> WorkingItem {
    WorkingItem::new(TurnRole::User, text, t0())
}

fn turn(item: &str, fact_text: &str) -> TurnWrite {
    TurnWrite {
        items: vec![user(item)],
        facts: vec![fact(None, fact_text)],
        ..TurnWrite::default()
    }
}

fn query(text: &str) -> RecallQuery {
    RecallQuery {
        now: t0() + chrono::Duration::minutes(1),
        terms: Terms::of(text),
        limit: 10,
    }
}

fn fact_texts(snapshot: &agent_server::memory::Snapshot) -> Vec<&str> {
    snapshot.facts.iter().map(|f| f.text.as_str()).collect()
}

fn assert_unavailable(err: &MemoryError, dependency: &str) {
    assert!(
        matches!(err, MemoryError::Unavailable { dependency: d, .. } if *d == dependency),
        "expected {dependency} to be reported unavailable, got: {err:?}"
    );
}

/// A port nothing listens on (just released by the OS).
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Retries `op` until it succeeds or `within` passes: how long a pool takes to reconnect.
async fn eventually<T, F, Fut>(within: Duration, mut op: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, MemoryError>>,
{
    let start = Instant::now();
    loop {
        match op().await {
            Ok(v) => return v,
            Err(_) if start.elapsed() < within => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(e) => panic!("still failing after {within:?}: {e}"),
        }
    }
}

fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{signal} {pid} failed");
}

/// A `redis-server` of this test's own, so that it can be stopped without disturbing other tests.
/// Appends every write to its AOF before answering, so a restart loses nothing acknowledged.
struct RedisChild {
    child: Child,
    port: u16,
}

impl RedisChild {
    fn start(dir: &Path, port: u16) -> Self {
        let binary = std::env::var("AGENTWALL_TEST_REDIS_SERVER")
            .unwrap_or_else(|_| "redis-server".to_owned());
        let child = Command::new(&binary)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
            ])
            .arg("--dir")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {binary}: {e}; {SETUP_HINT}"));
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis-server did not listen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { child, port }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RedisChild {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A `postgres` of this test's own with default durability settings, started directly (no pg_ctl)
/// so that this process holds its PID. Runs as the unprivileged user the script names when root.
struct PostgresChild {
    child: Option<Child>,
    bindir: String,
    data: std::path::PathBuf,
    port: u16,
    run_as: Option<(u32, u32)>,
    _dir: tempfile::TempDir,
}

impl PostgresChild {
    fn init() -> Self {
        let bindir = std::env::var("AGENTWALL_TEST_PG_BINDIR")
            .unwrap_or_else(|_| panic!("AGENTWALL_TEST_PG_BINDIR is not set; {SETUP_HINT}"));
        let run_as = match std::env::var("AGENTWALL_TEST_RUN_AS") {
            Ok(user) if !user.is_empty() => Some((id(&user, "-u"), id(&user, "-g"))),
            _ => None,
        };
        let dir = tempfile::tempdir().unwrap();
        if let Some((uid, gid)) = run_as {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
        }
        let data = dir.path().join("data");
        let status = Self::command(&bindir, "initdb", run_as)
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "-A", "trust", "--no-locale", "--no-sync"])
            .stdout(Stdio::null())
            .status()
            .expect("run initdb");
        assert!(status.success(), "initdb failed");
        let mut pg = Self {
            child: None,
            bindir,
            data,
            port: closed_port(),
            run_as,
            _dir: dir,
        };
        pg.start();
        pg
    }

    fn command(bindir: &str, program: &str, run_as: Option<(u32, u32)>) -> Command {
        let mut command = Command::new(Path::new(bindir).join(program));
        if let Some((uid, gid)) = run_as {
            use std::os::unix::process::CommandExt;
            command.uid(uid).gid(gid);
        }
        command
    }

    fn start(&mut self) {
        let socket_dir = self.data.parent().unwrap().to_owned();
        let child = Self::command(&self.bindir, "postgres", self.run_as)
            .arg("-D")
            .arg(&self.data)
            .args(["-p", &self.port.to_string(), "-k"])
            .arg(&socket_dir)
            .args(["-c", "listen_addresses=127.0.0.1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run postgres");
        self.child = Some(child);
    }

    async fn wait_ready(&self) {
        let url = self.admin_url();
        let started = Instant::now();
        while tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .is_err()
        {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "postgres did not start"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn admin_url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// A crash: SIGKILL, no shutdown checkpoint. Committed data must survive through the WAL.
    fn crash(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        // The postmaster's children notice its death and exit; until they do, a new postmaster
        // refuses the data directory.
        std::thread::sleep(Duration::from_millis(500));
    }
}

impl Drop for PostgresChild {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            // Fast shutdown, so that no backend outlives the test.
            signal(child.id(), "INT");
            let _ = child.wait();
        }
    }
}

fn id(user: &str, flag: &str) -> u32 {
    let out = Command::new("id")
        .args([flag, user])
        .output()
        .expect("run id");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("no user {user}; {SETUP_HINT}"))
}

// ---------------------------------------------------------------------------------------------
// Backend-specific tests.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_are_idempotent_and_safe_when_servers_start_together() {
    let db = TestDb::create().await;
    let open = || {
        RedisPostgresStore::connect(
            config(&redis_url(), &db.url, &unique_prefix()),
            conformance::config(),
        )
    };
    let (a, b, c) = tokio::join!(open(), open(), open());
    for store in [a, b, c] {
        store.expect("a store starting alongside others migrates or waits");
    }
    open()
        .await
        .expect("a store starting on a migrated database");
    let rows = db
        .client()
        .await
        .query(
            "SELECT version FROM agentwall_schema_migrations ORDER BY version",
            &[],
        )
        .await
        .unwrap();
    let versions: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(
        versions,
        [1, 2, 3, 4, 5],
        "each migration recorded exactly once"
    );
}

/// A database a version-1 server wrote is migrated on start: its facts survive, recall finds
/// them, and it ends with version 3's session-scoped indexes only, none of which covers what a
/// restatement changes (version 4), so that Postgres can update a restated fact HOT.
#[tokio::test]
async fn a_version_1_database_is_upgraded_and_keeps_its_facts() {
    let db = TestDb::create().await;
    let client = db.client().await;
    client
        .batch_execute(&format!(
            "CREATE TABLE agentwall_schema_migrations (
                 version integer PRIMARY KEY, name text NOT NULL,
                 applied_at timestamptz NOT NULL DEFAULT now());
             {}
             INSERT INTO agentwall_schema_migrations (version, name) VALUES (1, 'init');
             INSERT INTO agentwall_facts (id, session_id, kind, body, observed_at, importance, source)
             VALUES ('{}', 'upgraded-session', 'fact', 'The lighthouse keeper is Ada.',
                     '2030-01-01T09:00:00Z', 0.5, 'injected');",
            include_str!("../src/memory/redis_pg/migrations/0001_init.sql"),
            Uuid::new_v4()
        ))
        .await
        .unwrap();
    let store = RedisPostgresStore::connect(
        config(&redis_url(), &db.url, &unique_prefix()),
        conformance::config(),
    )
    .await
    .expect("a version-1 database is migrated");
    let s = SessionId::parse("upgraded-session").unwrap();
    let ctx = store
        .recall(&s, query("Who keeps the lighthouse?"))
        .await
        .unwrap();
    let texts: Vec<&str> = ctx.facts.iter().map(|f| f.fact.text.as_str()).collect();
    assert_eq!(texts, ["The lighthouse keeper is Ada."]);
    let versions: Vec<i32> = client
        .query(
            "SELECT version FROM agentwall_schema_migrations ORDER BY version",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(versions, [1, 2, 3, 4, 5]);
    let indexes: Vec<(String, String)> = client
        .query(
            "SELECT indexname::text, indexdef FROM pg_indexes WHERE tablename = 'agentwall_facts'
             ORDER BY indexname",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    for (name, definition) in &indexes {
        for column in ["observed_at", "observed_ns", "importance", "source"] {
            assert!(
                !definition.contains(column),
                "{name} covers {column}, which a restatement changes: {definition}"
            );
        }
    }
    let options: Option<Vec<String>> = client
        .query_one(
            "SELECT reloptions FROM pg_class WHERE relname = 'agentwall_facts'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(options, Some(vec!["fillfactor=90".to_owned()]));
    let indexes: Vec<&str> = indexes.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        indexes,
        [
            "agentwall_facts_pkey",
            "agentwall_facts_session_key",
            "agentwall_facts_session_standing",
            "agentwall_facts_session_tsv"
        ],
        "migration 3 replaces the session's B-tree by one index per kind of read"
    );
}

/// Every node of a plan (`EXPLAIN (ANALYZE, FORMAT JSON)`), each an object of its fields.
fn plan_nodes(plan: &serde_json::Value) -> Vec<&serde_json::Map<String, serde_json::Value>> {
    let mut found = Vec::new();
    let mut nodes = vec![plan];
    while let Some(node) = nodes.pop() {
        match node {
            serde_json::Value::Array(items) => nodes.extend(items),
            serde_json::Value::Object(fields) => {
                found.push(fields);
                nodes.extend(fields.values());
            }
            _ => {}
        }
    }
    found
}

/// The GIN index scans of a plan: for each, whether its condition holds the query's words
/// (`@@`) and whether it ran.
fn gin_scans(plan: &serde_json::Value) -> Vec<(bool, bool)> {
    plan_nodes(plan)
        .into_iter()
        .filter(|fields| {
            fields.get("Index Name").and_then(|n| n.as_str()) == Some("agentwall_facts_session_tsv")
        })
        .map(|fields| {
            let searched = fields
                .get("Index Cond")
                .and_then(|c| c.as_str())
                .is_some_and(|c| c.contains("@@"));
            let ran = fields.get("Actual Loops").and_then(|l| l.as_u64()) > Some(0);
            (searched, ran)
        })
        .collect()
}

/// How many times a plan ran a scan of `agentwall_facts` (through any index).
fn facts_scanned(plan: &serde_json::Value) -> u64 {
    plan_nodes(plan)
        .into_iter()
        .filter(|fields| {
            fields.get("Relation Name").and_then(|n| n.as_str()) == Some("agentwall_facts")
        })
        .map(|fields| {
            fields
                .get("Actual Loops")
                .and_then(|l| l.as_u64())
                .unwrap_or(0)
        })
        .sum()
}

/// Recall must cost what its own session costs, whatever other sessions hold: a small session is
/// read whole through its entry of the GIN index, a large one (more than 256 facts, a session may
/// hold 100,000) is searched through it with the query's words. Checked on the plan Postgres
/// runs, before statistics and after them; and `fact_count`, which chooses, follows the writes.
#[tokio::test]
async fn recall_reads_a_small_session_and_searches_a_large_one_through_its_index() {
    let harness = Harness::new().await;
    let fill = |session: &'static str, n: usize, word: &'static str| {
        let store = harness.store.clone();
        async move {
            let session = SessionId::parse(session).unwrap();
            for start in (0..n).step_by(1_000) {
                let batch = (start..n.min(start + 1_000))
                    .map(|i| NewFact {
                        kind: FactKind::Fact,
                        key: None,
                        text: format!("Note {i}: the {word} number {} is blue.", i % 97),
                        data: None,
                        observed_at: t0(),
                        importance: 0.5,
                        source: FactSource::Injected,
                    })
                    .collect();
                store.inject(&session, batch).await.unwrap();
            }
        }
    };
    fill("large-session", 5_000, "lighthouse").await;
    fill("small-session", 20, "lighthouse").await;
    fill("other-session", 5_000, "harbour").await;
    let client = harness.db.client().await;
    let fact_count = |session: &'static str| {
        let client = &client;
        async move {
            client
                .query_one(
                    "SELECT fact_count FROM agentwall_sessions WHERE session_id = $1",
                    &[&session],
                )
                .await
                .unwrap()
                .get::<_, i64>(0)
        }
    };
    assert_eq!(fact_count("large-session").await, 5_000);
    assert_eq!(fact_count("small-session").await, 20);

    for analyzed in [false, true] {
        if analyzed {
            client
                .batch_execute("ANALYZE agentwall_facts")
                .await
                .unwrap();
        }
        // The query as words for `to_tsquery`, or ready (`lexemes.rs`): the same plan. A read
        // that may fill (`known_facts.rs`) reads a small session through the same scan, and a
        // large one is searched anyway; a read of a session still at the pair it names reads no
        // facts at all.
        let (words, ready) = (Some("lighthouse | 42"), Some("'lighthous' | '42'"));
        let small: (i64, i64) = {
            let row = client
                .query_one(
                    "SELECT epoch, turn_seq FROM agentwall_sessions WHERE session_id = $1",
                    &[&"small-session"],
                )
                .await
                .unwrap();
            (row.get(0), row.get(1))
        };
        for (session, scan, (words, ready), known, fill) in [
            ("large-session", Some(true), (words, None), None, false),
            ("large-session", Some(true), (None, ready), None, false),
            ("large-session", Some(true), (None, ready), None, true),
            ("small-session", Some(false), (words, None), None, false),
            ("small-session", Some(false), (None, ready), None, false),
            ("small-session", Some(false), (None, ready), None, true),
            (
                "small-session",
                Some(false),
                (None, ready),
                Some((0, 0)),
                true,
            ),
            ("small-session", None, (None, ready), Some(small), true),
        ] {
            let sql = format!(
                "EXPLAIN (ANALYZE, FORMAT JSON) {}",
                agent_server::memory::redis_pg::recall_statement()
            );
            let plan: serde_json::Value = client
                .query_one(
                    &sql,
                    &[
                        &vec![session],
                        &vec![words],
                        &vec![8_i64],
                        &vec![ready],
                        &vec![known.map(|k| k.0)],
                        &vec![known.map(|k| k.1)],
                        &vec![fill],
                    ],
                )
                .await
                .unwrap()
                .get(0);
            let scans = gin_scans(&plan);
            let ran: Vec<bool> = scans.iter().filter(|s| s.1).map(|s| s.0).collect();
            assert_eq!(
                ran,
                Vec::from_iter(scan),
                "recall in {session} (analyzed: {analyzed}, known {known:?}, fill {fill}) \
                 should run {}: {scans:?}\n{plan:#}",
                match scan {
                    Some(true) => "one scan of the GIN index, with the words",
                    Some(false) => "one scan of the GIN index, by session",
                    None => "no scan of the facts",
                }
            );
            let text = plan.to_string();
            assert!(!text.contains("\"Seq Scan\""), "{plan:#}");
            if scan.is_none() {
                assert_eq!(facts_scanned(&plan), 0, "{plan:#}");
            }
        }
    }
    let ctx = harness
        .store
        .recall(
            &SessionId::parse("large-session").unwrap(),
            query("Which lighthouse is number 42?"),
        )
        .await
        .unwrap();
    assert!(!ctx.facts.is_empty());
    assert!(
        ctx.facts.iter().all(|f| f.fact.text.contains("number 42 ")),
        "the best matches hold both words: {:?}",
        ctx.facts.iter().map(|f| &f.fact.text).collect::<Vec<_>>()
    );

    // A keyed fact and its replacement count once; a reset empties the count.
    let small = SessionId::parse("small-session").unwrap();
    for text in ["My locker is 12.", "My locker is 14."] {
        harness
            .store
            .commit_turn(
                &small,
                TurnWrite {
                    items: vec![user(text)],
                    facts: vec![fact(Some("locker"), text)],
                    ..TurnWrite::default()
                },
            )
            .await
            .unwrap();
    }
    assert_eq!(fact_count("small-session").await, 21);
    // A keyed fact replaced by a rule (a change of kind) no longer counts, and counts again when
    // a fact replaces the rule; a restatement changes no count (migration 5's row trigger).
    let keyed = |kind: FactKind, text: &str| TurnWrite {
        items: vec![user(text)],
        facts: vec![NewFact {
            kind,
            ..fact(Some("locker"), text)
        }],
        ..TurnWrite::default()
    };
    let rule = keyed(FactKind::Rule, "Always use locker 16.");
    harness.store.commit_turn(&small, rule).await.unwrap();
    assert_eq!(fact_count("small-session").await, 20);
    let back = keyed(FactKind::Fact, "My locker is 18.");
    harness.store.commit_turn(&small, back).await.unwrap();
    assert_eq!(fact_count("small-session").await, 21);
    client
        .batch_execute(
            "UPDATE agentwall_facts SET importance = 0.9 WHERE session_id = 'small-session';
             UPDATE agentwall_facts SET kind = 'reminder'
              WHERE session_id = 'small-session' AND fact_key = 'locker'",
        )
        .await
        .unwrap();
    assert_eq!(fact_count("small-session").await, 20);
    harness.store.reset(&small).await.unwrap();
    assert_eq!(fact_count("small-session").await, 0);
    assert_eq!(fact_count("large-session").await, 5_000);
}

/// A group commit finds the facts it restates, retires or replaces, and recall the sessions it
/// reads, through an index whatever the statistics say, so a batch costs what its own sessions
/// hold, not what the tables hold. Checked on the generic plan of each statement (what a
/// prepared statement settles on after a few runs), on tables without statistics (as every
/// fresh database is until autovacuum's first `ANALYZE`; the plain joins of `unnest(...)` these
/// statements once were scanned whole tables there) and after `ANALYZE`.
#[tokio::test]
async fn batches_find_rows_through_an_index_with_or_without_statistics() {
    let harness = Harness::new().await;
    let client = harness.db.client().await;
    // Other sessions' rows, enough that reading them all costs more than an index.
    client
        .batch_execute(
            "INSERT INTO agentwall_sessions (session_id)
             SELECT 'other-' || n FROM generate_series(1, 2000) AS n",
        )
        .await
        .unwrap();
    for s in 0..8 {
        let session = SessionId::parse(&format!("lookup-{s}")).unwrap();
        let facts = (0..100)
            .map(|i| NewFact {
                kind: FactKind::Fact,
                key: (i % 4 == 0).then(|| format!("key-{i}")),
                text: format!("Note {i} of session {s}: the tide comes in at {i} past."),
                data: None,
                observed_at: t0(),
                importance: 0.5,
                source: FactSource::Injected,
            })
            .collect();
        harness.store.inject(&session, facts).await.unwrap();
    }
    client
        .batch_execute("SET plan_cache_mode = force_generic_plan")
        .await
        .unwrap();
    for analyzed in [false, true] {
        if analyzed {
            client.batch_execute("ANALYZE").await.unwrap();
        }
        let recall = ("recall", agent_server::memory::redis_pg::recall_statement());
        let statements = agent_server::memory::redis_pg::fact_lookup_statements();
        for &(name, sql) in statements.iter().chain([&recall]) {
            let prepared = format!("{name}_{analyzed}");
            client
                .batch_execute(&format!("PREPARE {prepared} AS {sql}"))
                .await
                .unwrap_or_else(|e| panic!("prepare {name}: {e}"));
            let nulls = vec!["NULL"; highest_parameter(sql)].join(", ");
            let plan: Vec<String> = client
                .query(&format!("EXPLAIN EXECUTE {prepared}({nulls})"), &[])
                .await
                .unwrap()
                .iter()
                .map(|row| row.get(0))
                .collect();
            let plan = plan.join("\n");
            assert!(
                !plan.contains("Seq Scan"),
                "{name} (analyzed: {analyzed}) scans a whole table:\n{plan}"
            );
        }
    }
}

/// The highest `$n` in `sql`: how many parameters it takes.
fn highest_parameter(sql: &str) -> usize {
    sql.split('$')
        .skip(1)
        .filter_map(|after| {
            let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .max()
        .unwrap_or(0)
}

/// A migration that cannot run names itself and says what to do, and leaves nothing behind: here
/// the role may create tables but not extensions, so version 3's CREATE EXTENSION is refused.
#[tokio::test]
async fn a_refused_extension_fails_the_start_with_a_hint_and_migrates_nothing() {
    let db = TestDb::create().await;
    let role = format!("no_extensions_{}", Uuid::new_v4().simple());
    let admin = db.client().await;
    admin
        .batch_execute(&format!(
            "CREATE ROLE {role} LOGIN;
             GRANT CONNECT ON DATABASE {} TO {role};
             GRANT CREATE ON SCHEMA public TO {role};",
            db.name
        ))
        .await
        .unwrap();
    let err = RedisPostgresStore::connect(
        config(&redis_url(), &with_user(&db.url, &role), &unique_prefix()),
        conformance::config(),
    )
    .await
    .expect_err("the role cannot create btree_gin");
    let message = err.to_string();
    assert!(
        message.contains("migration 3 (session_scoped_indexes) failed")
            && message.contains("btree_gin")
            && message.contains("contrib"),
        "{message}"
    );
    let tables = admin
        .query(
            "SELECT 1 FROM pg_tables WHERE tablename = 'agentwall_facts'",
            &[],
        )
        .await
        .unwrap();
    assert!(tables.is_empty(), "the migrations ran as one transaction");
    admin
        .batch_execute(&format!("DROP OWNED BY {role}; DROP ROLE {role};"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_database_from_a_newer_binary_is_refused() {
    let harness = Harness::new().await;
    harness
        .db
        .client()
        .await
        .batch_execute(
            "INSERT INTO agentwall_schema_migrations (version, name) VALUES (999, 'future')",
        )
        .await
        .unwrap();
    let err = RedisPostgresStore::connect(
        config(&redis_url(), &harness.db.url, &harness.prefix),
        conformance::config(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            err,
            MemoryError::Corrupt {
                dependency: "postgres",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("999"), "{err}");
}

#[tokio::test]
async fn start_up_fails_fast_naming_the_unreachable_dependency() {
    let db = TestDb::create().await;
    let mut cfg = config(
        &format!("redis://127.0.0.1:{}", closed_port()),
        &db.url,
        &unique_prefix(),
    );
    cfg.timeout = Duration::from_secs(1);
    cfg.startup_timeout = Duration::from_secs(2);
    let started = Instant::now();
    let err = RedisPostgresStore::connect(cfg, conformance::config())
        .await
        .unwrap_err();
    assert_unavailable(&err, "redis");
    assert!(err.to_string().contains("127.0.0.1"), "says where: {err}");
    assert!(started.elapsed() < Duration::from_secs(3));

    let mut cfg = config(
        &redis_url(),
        &format!("postgres://app:s3cret@127.0.0.1:{}/x", closed_port()),
        &unique_prefix(),
    );
    cfg.timeout = Duration::from_secs(1);
    cfg.startup_timeout = Duration::from_secs(2);
    let started = Instant::now();
    let err = RedisPostgresStore::connect(cfg, conformance::config())
        .await
        .unwrap_err();
    assert_unavailable(&err, "postgres");
    assert!(
        !err.to_string().contains("s3cret"),
        "password leaked: {err}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_fails_fast_stores_nothing_and_recovers_by_itself() {
    let db = TestDb::create().await;
    let dir = tempfile::tempdir().unwrap();
    let port = closed_port();
    let mut redis_server = RedisChild::start(dir.path(), port);
    let timeout = Duration::from_secs(1);
    let mut cfg = config(&redis_server.url(), &db.url, &unique_prefix());
    cfg.timeout = timeout;
    let store = RedisPostgresStore::connect(cfg, conformance::config())
        .await
        .unwrap();
    let s = session();
    store
        .commit_turn(&s, turn("I keep bees.", "I keep bees."))
        .await
        .unwrap();

    redis_server.kill();
    let started = Instant::now();
    let err = store
        .commit_turn(&s, turn("I also keep goats.", "I also keep goats."))
        .await
        .unwrap_err();
    assert_unavailable(&err, "redis");
    let err = store.recall(&s, query("bees")).await.unwrap_err();
    assert_unavailable(&err, "redis");
    assert!(
        started.elapsed() < timeout * 2,
        "failing took {:?}",
        started.elapsed()
    );
    let health = store.health().await;
    let state: Vec<(&str, bool)> = health.iter().map(|h| (h.name.as_str(), h.ok)).collect();
    assert_eq!(state, [("redis", false), ("postgres", true)]);
    assert!(health[0].error.is_some());

    // Same port, same append-only file: a Redis restart.
    let _redis_server = RedisChild::start(dir.path(), port);
    let snapshot = eventually(Duration::from_secs(10), || {
        store.snapshot(&s, t0() + chrono::Duration::minutes(1))
    })
    .await;
    let working: Vec<&str> = snapshot.working.iter().map(|w| w.text.as_str()).collect();
    assert_eq!(
        working,
        ["I keep bees."],
        "the stored turn survives, the failed one left nothing"
    );
    assert_eq!(
        fact_texts(&snapshot),
        ["I keep bees."],
        "no partial turn in postgres"
    );
    assert!(store.health().await.iter().all(|h| h.ok));
    store
        .commit_turn(&s, turn("I also keep goats.", "I also keep goats."))
        .await
        .expect("writes resume without a new store");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_redis_times_out_instead_of_hanging() {
    let db = TestDb::create().await;
    let dir = tempfile::tempdir().unwrap();
    let redis_server = RedisChild::start(dir.path(), closed_port());
    let timeout = Duration::from_millis(800);
    let mut cfg = config(&redis_server.url(), &db.url, &unique_prefix());
    cfg.timeout = timeout;
    let store = RedisPostgresStore::connect(cfg, conformance::config())
        .await
        .unwrap();
    let s = session();
    store.commit_turn(&s, turn("one", "one")).await.unwrap();

    // Frozen: the socket stays open but nothing answers.
    signal(redis_server.child.id(), "STOP");
    let started = Instant::now();
    let err = store
        .commit_turn(&s, turn("two", "Two is frozen."))
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    signal(redis_server.child.id(), "CONT");
    assert_unavailable(&err, "redis");
    // One budget for the turn, one for the compensation of an unanswered EXEC.
    assert!(
        elapsed < timeout * 2 + Duration::from_millis(500),
        "took {elapsed:?}"
    );

    let snapshot = eventually(Duration::from_secs(10), || {
        store.snapshot(&s, t0() + chrono::Duration::minutes(1))
    })
    .await;
    assert_eq!(
        fact_texts(&snapshot),
        ["one"],
        "the timed-out turn stored no fact"
    );
    let working: Vec<&str> = snapshot.working.iter().map(|w| w.text.as_str()).collect();
    assert_eq!(
        working,
        ["one"],
        "the timed-out turn's items were compensated"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_crash_and_server_restart_keep_facts() {
    let mut pg = PostgresChild::init();
    pg.wait_ready().await;
    let db = TestDb::create_on(&pg.admin_url()).await;
    let prefix = unique_prefix();
    let timeout = Duration::from_secs(1);
    let mut cfg = config(&redis_url(), &db.url, &prefix);
    cfg.timeout = timeout;
    let store = RedisPostgresStore::connect(cfg.clone(), conformance::config())
        .await
        .unwrap();
    let s = session();
    store
        .inject(&s, vec![fact(Some("boat"), "My boat is called Osprey.")])
        .await
        .unwrap();

    pg.crash();
    let started = Instant::now();
    let err = store.recall(&s, query("boat")).await.unwrap_err();
    assert_unavailable(&err, "postgres");
    assert!(
        started.elapsed() < timeout * 2,
        "took {:?}",
        started.elapsed()
    );
    let health = store.health().await;
    assert!(health.iter().any(|h| h.name == "postgres" && !h.ok));

    pg.start();
    pg.wait_ready().await;
    let ctx = eventually(Duration::from_secs(20), || store.recall(&s, query("boat"))).await;
    assert_eq!(
        ctx.facts.len(),
        1,
        "the pool reconnected and the fact survived"
    );

    // And an agent-server restarted too: a new store on the same services.
    drop(store);
    let restarted = RedisPostgresStore::connect(cfg, conformance::config())
        .await
        .unwrap();
    let ctx = restarted
        .recall(&s, query("What is my boat called?"))
        .await
        .unwrap();
    assert_eq!(ctx.facts[0].fact.text, "My boat is called Osprey.");
    drop(restarted);
    drop(db);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_share_sessions_and_resets() {
    let harness = Harness::new().await;
    let other = harness.twin().await;
    let s = session();
    let before = other.recall(&s, query("kayak")).await.unwrap();
    harness
        .commit_turn(&s, turn("I paddle a kayak.", "I paddle a green kayak."))
        .await
        .unwrap();
    let ctx = other
        .recall(&s, query("Which kayak do I paddle?"))
        .await
        .unwrap();
    assert_eq!(ctx.facts[0].fact.text, "I paddle a green kayak.");
    assert_eq!(ctx.working[0].text, "I paddle a kayak.");

    other.reset(&s).await.unwrap();
    let err = harness
        .commit_turn(
            &s,
            TurnWrite {
                expected_epoch: Some(before.epoch),
                ..turn("stale", "A stale fact.")
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::SessionReset), "{err:?}");
    let snapshot = harness.snapshot(&s, t0()).await.unwrap();
    assert!(snapshot.working.is_empty() && snapshot.facts.is_empty());
}

fn working_texts(ctx: &agent_server::memory::MemoryContext) -> Vec<&str> {
    ctx.working.iter().map(|w| w.text.as_str()).collect()
}

/// Each server keeps the working memory of sessions it read or wrote, and uses it only while the
/// session's turn number in Postgres says nobody wrote since: what another server writes, resets
/// included, is seen at once, and what Redis expired is not served from memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn working_memory_kept_in_process_follows_other_servers_and_the_redis_ttl() {
    let harness = Harness::new().await;
    let other = harness.twin().await;
    let s = session();
    let said = |text: &str| TurnWrite {
        items: vec![user(text)],
        ..TurnWrite::default()
    };
    harness.commit_turn(&s, said("one")).await.unwrap();
    let ctx = harness.recall(&s, query("x")).await.unwrap();
    assert_eq!(working_texts(&ctx), ["one"]);
    // Its own next turn: from memory; another server's: from Redis.
    harness.commit_turn(&s, said("two")).await.unwrap();
    other.commit_turn(&s, said("three")).await.unwrap();
    let ctx = harness.recall(&s, query("x")).await.unwrap();
    assert_eq!(working_texts(&ctx), ["one", "two", "three"]);
    // Interleaved writers, then a reset by the other server.
    harness.commit_turn(&s, said("four")).await.unwrap();
    other.commit_turn(&s, said("five")).await.unwrap();
    harness.commit_turn(&s, said("six")).await.unwrap();
    let ctx = harness.recall(&s, query("x")).await.unwrap();
    assert_eq!(
        working_texts(&ctx),
        ["one", "two", "three", "four", "five", "six"]
    );
    other.reset(&s).await.unwrap();
    assert!(
        harness
            .recall(&s, query("x"))
            .await
            .unwrap()
            .working
            .is_empty()
    );

    // A one-second real TTL: once Redis has dropped the key, memory does not answer for it.
    let mut cfg = config(&redis_url(), &harness.db.url, &harness.prefix);
    cfg.redis_key_ttl = Some(Duration::from_secs(1));
    let short = RedisPostgresStore::connect(cfg, conformance::config())
        .await
        .unwrap();
    let s = session();
    short.commit_turn(&s, said("fleeting")).await.unwrap();
    assert_eq!(
        working_texts(&short.recall(&s, query("x")).await.unwrap()),
        ["fleeting"]
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        short
            .recall(&s, query("x"))
            .await
            .unwrap()
            .working
            .is_empty()
    );
}

/// What a recall returns of facts, to compare two recalls by: each fact with its score, and the
/// standing items, in order.
fn recalled_facts(
    ctx: &agent_server::memory::MemoryContext,
) -> (Vec<(Uuid, String, f64)>, Vec<Uuid>) {
    let facts = ctx
        .facts
        .iter()
        .map(|r| (r.fact.id, r.fact.text.clone(), r.score))
        .collect();
    (facts, ctx.standing.iter().map(|f| f.id).collect())
}

/// A server ranks the facts of a session it holds in the process (`known_facts.rs`), extended by
/// its own commits: what it returns must be what a server holding nothing reads from Postgres,
/// after every kind of write (new, keyed and replaced, of another kind, restated with and without
/// a new text, retired), and after another server's writes and reset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn facts_kept_in_process_recall_as_postgres_does_and_follow_other_servers() {
    let harness = Harness::new().await;
    let other = harness.twin().await;
    let s = session();
    let words = "kayak lake paddle green river boat";
    // Checks the harness's recall against a fresh server's (which holds nothing, and reads the
    // words through `to_tsquery`), and that the harness now holds the session as it is.
    let check = |step: &'static str| {
        let (harness, s) = (&harness, &s);
        async move {
            let here = harness.recall(s, query(words)).await.unwrap();
            let fresh = harness.twin().await;
            let read = fresh.recall(s, query(words)).await.unwrap();
            assert_eq!(recalled_facts(&here), recalled_facts(&read), "{step}");
            assert_eq!(here.epoch, read.epoch, "{step}");
            here
        }
    };
    let at = |minutes: i64| t0() + chrono::Duration::minutes(minutes);
    let said = |facts: Vec<NewFact>| TurnWrite {
        items: vec![user("said")],
        facts,
        ..TurnWrite::default()
    };
    let new = |key: Option<&str>, kind: FactKind, text: &str, minutes: i64| NewFact {
        kind,
        observed_at: at(minutes),
        ..fact(key, text)
    };
    harness
        .commit_turn(
            &s,
            said(vec![
                new(None, FactKind::Fact, "I paddle a kayak on the lake.", 1),
                new(
                    None,
                    FactKind::Fact,
                    "My kayak is green, green as a lake.",
                    2,
                ),
                new(Some("boat"), FactKind::Fact, "My boat is a river kayak.", 3),
                new(None, FactKind::Rule, "Always mention the river.", 4),
            ]),
        )
        .await
        .unwrap();
    // The first recall learns the words, the second fills, the rest use what is held.
    check("words learnt").await;
    check("filled").await;
    assert!(
        harness.known_facts_at(&s).is_some(),
        "the harness holds the session after a recall"
    );

    let stored = harness
        .commit_turn(
            &s,
            said(vec![
                new(
                    Some("boat"),
                    FactKind::Fact,
                    "My boat is a green canoe, not a kayak.",
                    5,
                ),
                new(None, FactKind::Reminder, "Paddle the river at noon.", 5),
            ]),
        )
        .await
        .unwrap();
    assert!(
        harness.known_facts_at(&s).is_some(),
        "its own commit extends what it holds"
    );
    check("a keyed fact replaced, a reminder added").await;

    let ctx = harness.recall(&s, query(words)).await.unwrap();
    let lake = ctx
        .facts
        .iter()
        .find(|r| r.fact.text.starts_with("I paddle"))
        .expect("recalled")
        .fact
        .id;
    let restate = |text: &str, minutes: i64| Restatement {
        id: lake,
        text: text.to_owned(),
        observed_at: at(minutes),
        importance: 0.9,
        source: FactSource::Promoted,
    };
    let restated = TurnWrite {
        restate: vec![restate("I paddle a kayak on the lake.", 6)],
        ..said(Vec::new())
    };
    harness.commit_turn(&s, restated).await.unwrap();
    check("restated, same text").await;
    let rewritten = TurnWrite {
        restate: vec![restate("I paddle a kayak on the river, lake and river.", 7)],
        ..said(Vec::new())
    };
    harness.commit_turn(&s, rewritten).await.unwrap();
    check("restated, new text").await;

    let rule = new(Some("boat"), FactKind::Rule, "Call the boat a kayak.", 8);
    harness.commit_turn(&s, said(vec![rule])).await.unwrap();
    check("a keyed fact replaced by a rule").await;
    let retired = TurnWrite {
        retire: vec![stored[1].id, lake],
        ..said(Vec::new())
    };
    harness.commit_turn(&s, retired).await.unwrap();
    check("retired").await;

    // Another server writes: the harness's entry is stale, and read again.
    let theirs = new(
        None,
        FactKind::Fact,
        "A green river boat waits by the lake.",
        9,
    );
    other.commit_turn(&s, said(vec![theirs])).await.unwrap();
    let ctx = check("written by another server").await;
    assert!(
        ctx.facts
            .iter()
            .any(|r| r.fact.text.starts_with("A green river boat"))
    );
    other.reset(&s).await.unwrap();
    let ctx = check("reset by another server").await;
    assert!(ctx.facts.is_empty() && ctx.standing.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_racing_a_reset_never_survive_it() {
    let harness = Harness::new().await;
    let s = session();
    for round in 0..5 {
        let epoch = harness.recall(&s, query("x")).await.unwrap().epoch;
        let turns = (0..12).map(|i| {
            harness.commit_turn(
                &s,
                TurnWrite {
                    expected_epoch: Some(epoch),
                    ..turn(
                        &format!("round {round} turn {i}"),
                        &format!("Fact {round}.{i}."),
                    )
                },
            )
        });
        let (results, reset) = tokio::join!(futures_util::future::join_all(turns), async {
            tokio::time::sleep(Duration::from_millis(3)).await;
            harness.reset(&s).await
        });
        reset.unwrap();
        for result in results {
            match result {
                Ok(_) | Err(MemoryError::SessionReset) => {}
                Err(e) => panic!("unexpected failure: {e}"),
            }
        }
        // Every turn either ran before the reset (and was wiped) or was refused.
        let snapshot = harness.snapshot(&s, t0()).await.unwrap();
        assert!(
            snapshot.working.is_empty() && snapshot.facts.is_empty(),
            "round {round}: a stale turn survived the reset: {snapshot:?}"
        );
    }
}

#[tokio::test]
async fn redis_keys_are_namespaced_and_carry_a_real_ttl() {
    let harness = Harness::new().await;
    let s = session();
    harness
        .commit_turn(&s, turn("hello", "Hello."))
        .await
        .unwrap();
    let client = redis::Client::open(redis_url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}:*", harness.prefix))
        .query_async(&mut conn)
        .await
        .unwrap();
    let key = format!("{}:s:{}:wm", harness.prefix, s);
    assert_eq!(keys, [key.as_str()]);
    let ttl: i64 = redis::cmd("TTL")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .unwrap();
    let max = conformance::config().working_ttl.as_secs() as i64;
    assert!(ttl > 0 && ttl <= max, "TTL {ttl} not in (0, {max}]");

    harness.reset(&s).await.unwrap();
    let exists: bool = redis::cmd("EXISTS")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(!exists, "reset deletes the key");
}

/// When Postgres refuses a fact with the body "poison".
#[derive(Clone, Copy)]
enum Refusal {
    /// At COMMIT (a deferred constraint): after the batch's Redis write, which is the
    /// compensation path.
    AtCommit,
    /// As the fact is written: the batch fails before its COMMIT, while (or after) its Redis
    /// write, which it then undoes.
    AtWrite,
}

/// Makes Postgres refuse a transaction that stores a fact with the body "poison".
async fn reject_poison(harness: &Harness, when: Refusal) {
    let trigger = match when {
        Refusal::AtCommit => {
            "CREATE CONSTRAINT TRIGGER reject_poison AFTER INSERT ON agentwall_facts
                 DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION reject_poison();"
        }
        Refusal::AtWrite => {
            "CREATE TRIGGER reject_poison BEFORE INSERT ON agentwall_facts
                 FOR EACH ROW EXECUTE FUNCTION reject_poison();"
        }
    };
    harness
        .db
        .client()
        .await
        .batch_execute(&format!(
            "CREATE FUNCTION reject_poison() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF NEW.body = 'poison' THEN RAISE EXCEPTION 'poisoned fact'; END IF;
                 RETURN NEW;
             END $$;
             {trigger}"
        ))
        .await
        .unwrap();
}

/// Two servers on one database whose Postgres refuses the poison `when` (see [`reject_poison`]),
/// and a session with one stored turn ("fine", fact "Fine.") that the second server has recalled.
async fn two_servers_refusing_poison(when: Refusal) -> (Harness, RedisPostgresStore, SessionId) {
    let harness = Harness::new().await;
    let other = harness.twin().await;
    reject_poison(&harness, when).await;
    let s = session();
    harness
        .commit_turn(&s, turn("fine", "Fine."))
        .await
        .unwrap();
    assert_eq!(
        working_texts(&other.recall(&s, query("x")).await.unwrap()),
        ["fine"]
    );
    (harness, other, s)
}

/// `s` holds its fine turn only, and both servers recall exactly that.
async fn assert_only_the_fine_turn(harness: &Harness, other: &RedisPostgresStore, s: &SessionId) {
    let snapshot = harness.snapshot(s, t0()).await.unwrap();
    let working: Vec<&str> = snapshot.working.iter().map(|w| w.text.as_str()).collect();
    assert_eq!(working, ["fine"]);
    assert_eq!(fact_texts(&snapshot), ["Fine."]);
    for server in [&**harness, other] {
        assert_eq!(
            working_texts(&server.recall(s, query("x")).await.unwrap()),
            ["fine"]
        );
    }
}

/// The session row's turn number, which `recent.rs` entries are current for.
async fn turn_seq(harness: &Harness, s: &SessionId) -> i64 {
    harness
        .db
        .client()
        .await
        .query_one(
            "SELECT turn_seq FROM agentwall_sessions WHERE session_id = $1",
            &[&s.as_str()],
        )
        .await
        .unwrap()
        .get(0)
}

/// A compensated batch's turn number is taken again by the next batch, so the compensation
/// moves the session's turn number on by itself: no server may keep, under a committed number,
/// working memory it read while the failed batch's items were in Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_rejected_by_postgres_leaves_no_working_items() {
    let (harness, other, s) = two_servers_refusing_poison(Refusal::AtCommit).await;
    let before = turn_seq(&harness, &s).await;
    a_poisoned_turn_is_refused_by_postgres(&harness, &s, "doomed").await;
    assert_only_the_fine_turn(&harness, &other, &s).await;
    assert_eq!(
        turn_seq(&harness, &s).await,
        before + 1,
        "the rolled-back batch's number came back, and the compensation took one"
    );
}

/// Postgres refusing a batch's writes: nothing of the batch stays in working memory, on any
/// server, and the batch's other turns are written alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_refused_by_postgres_leave_no_working_items() {
    let (harness, other, s) = two_servers_refusing_poison(Refusal::AtWrite).await;
    for round in 0..3 {
        a_poisoned_turn_is_refused_by_postgres(&harness, &s, &format!("doomed {round}")).await;
    }
    // A batch of a poisoned turn and good ones: the good ones are stored, the poisoned not.
    a_poisoned_turn_fails_alone(&harness, 0).await;
    assert_only_the_fine_turn(&harness, &other, &s).await;
}

/// Turns of one session that share a batch trim its set once, before any of them adds: a batch
/// that rolls back (its items compensated) then leaves exactly what readers saw. Trimmed before
/// each turn, the batch's later turns removed committed items for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolled_back_batch_of_one_sessions_turns_leaves_what_readers_saw() {
    let harness = Harness::new().await;
    reject_poison(&harness, Refusal::AtCommit).await;
    let s = session();
    let kept: Vec<String> = (0..8).map(|i| format!("kept {i}")).collect();
    for text in &kept {
        let turn = TurnWrite {
            items: vec![user(text)],
            ..TurnWrite::default()
        };
        harness.commit_turn(&s, turn).await.unwrap();
    }
    // Sixteen at once: all but the first queue behind it and share a batch, which fails at
    // COMMIT (and is then written turn by turn, each failing alone).
    let doomed = (0..16).map(|i| harness.commit_turn(&s, turn(&format!("doomed {i}"), "poison")));
    for result in futures_util::future::join_all(doomed).await {
        assert!(result.is_err(), "a poisoned turn was stored");
    }
    let snapshot = harness.snapshot(&s, t0()).await.unwrap();
    let working: Vec<&str> = snapshot.working.iter().map(|w| w.text.as_str()).collect();
    assert_eq!(working, kept);
}

/// A reset whose COMMIT fails after it cleared Redis leaves the epoch as it was, so it moves the
/// turn number on by itself: another server must not keep serving the cleared items.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_that_did_not_commit_leaves_no_server_serving_cleared_items() {
    let harness = Harness::new().await;
    let other = harness.twin().await;
    let s = session();
    let said = TurnWrite {
        items: vec![user("one")],
        ..TurnWrite::default()
    };
    harness.commit_turn(&s, said).await.unwrap();
    assert_eq!(
        working_texts(&other.recall(&s, query("x")).await.unwrap()),
        ["one"]
    );
    harness
        .db
        .client()
        .await
        .batch_execute(
            "CREATE FUNCTION refuse_reset() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF NEW.epoch <> OLD.epoch THEN RAISE EXCEPTION 'reset refused'; END IF;
                 RETURN NULL;
             END $$;
             CREATE CONSTRAINT TRIGGER refuse_reset AFTER UPDATE ON agentwall_sessions
                 DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_reset();",
        )
        .await
        .unwrap();
    let before = turn_seq(&harness, &s).await;
    harness.reset(&s).await.expect_err("the COMMIT is refused");
    assert_eq!(turn_seq(&harness, &s).await, before + 1);
    assert!(
        other
            .recall(&s, query("x"))
            .await
            .unwrap()
            .working
            .is_empty(),
        "what Redis holds now: the reset cleared it"
    );
}

/// A session this server wrote last is recalled from memory, without Redis: shown by deleting
/// the key behind its back (nothing in the contract does that, which is why it shows the cache).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_this_server_wrote_last_is_recalled_without_redis() {
    let harness = Harness::new().await;
    let s = session();
    let said = |text: &str| TurnWrite {
        items: vec![user(text)],
        ..TurnWrite::default()
    };
    harness.commit_turn(&s, said("one")).await.unwrap();
    harness.recall(&s, query("x")).await.unwrap();
    harness.commit_turn(&s, said("two")).await.unwrap();
    let client = redis::Client::open(redis_url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let key = format!("{}:s:{}:wm", harness.prefix, s);
    let deleted: i64 = redis::cmd("DEL")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    assert_eq!(
        working_texts(&harness.recall(&s, query("x")).await.unwrap()),
        ["one", "two"],
        "served from memory"
    );
    // A server that did not see the session reads Redis.
    let other = harness.twin().await;
    assert!(
        other
            .recall(&s, query("x"))
            .await
            .unwrap()
            .working
            .is_empty()
    );
}

/// Turns written at the same time share a batch (one transaction); a turn that breaks a
/// constraint must fail alone, not take the rest of its batch with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_bad_turn_in_a_batch_fails_alone() {
    let harness = Harness::new().await;
    reject_poison(&harness, Refusal::AtCommit).await;
    for round in 0..3 {
        a_poisoned_turn_fails_alone(&harness, round).await;
    }
}

/// Commits a turn saying `item` whose fact is the poison, and checks that Postgres refused it.
async fn a_poisoned_turn_is_refused_by_postgres(harness: &Harness, s: &SessionId, item: &str) {
    let err = harness
        .commit_turn(s, turn(item, "poison"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            MemoryError::Backend {
                dependency: "postgres",
                ..
            }
        ),
        "{err:?}"
    );
}

/// Sixteen turns of new sessions at once (so they share batches), the one at `5 + round`
/// poisoned: it alone fails, and every other is stored whole.
async fn a_poisoned_turn_fails_alone(harness: &Harness, round: usize) {
    let sessions: Vec<SessionId> = (0..16).map(|_| session()).collect();
    let poisoned = 5 + round;
    let turns = sessions.iter().enumerate().map(|(i, s)| {
        let text = if i == poisoned {
            "poison".to_owned()
        } else {
            format!("Fact {i}.")
        };
        harness.commit_turn(s, turn(&format!("item {i}"), &text))
    });
    let results = futures_util::future::join_all(turns).await;
    for (i, (s, result)) in sessions.iter().zip(results).enumerate() {
        let snapshot = harness.snapshot(s, t0()).await.unwrap();
        let working: Vec<&str> = snapshot.working.iter().map(|w| w.text.as_str()).collect();
        if i == poisoned {
            assert!(
                result.is_err(),
                "round {round}: the poisoned turn was stored"
            );
            assert!(
                working.is_empty() && snapshot.facts.is_empty(),
                "{snapshot:?}"
            );
        } else {
            result.unwrap_or_else(|e| {
                panic!("round {round}: turn {i} failed with the poisoned one: {e}")
            });
            let item = format!("item {i}");
            let fact = format!("Fact {i}.");
            assert_eq!(working, [item.as_str()]);
            assert_eq!(fact_texts(&snapshot), [fact.as_str()]);
        }
    }
}

#[tokio::test]
async fn odd_unicode_queries_never_break_the_full_text_search() {
    let harness = Harness::new().await;
    let s = session();
    harness
        .inject(
            &s,
            vec![fact(None, "The café in Zürich serves ½ portions.")],
        )
        .await
        .unwrap();
    for q in [
        "café",
        "ZÜRICH",
        "½",
        "x²",
        "ǅemal",
        "𝟘𝟙",
        "İstanbul",
        "東京に住んでいます",
        "٣٤٥",
        "a\u{0}b",
        "don't",
        "O'Brien's",
        "\\",
        "'",
        "::",
        "foo:*",
        "<-> <2>",
        "NULL",
    ] {
        harness
            .recall(&s, query(q))
            .await
            .unwrap_or_else(|e| panic!("query {q:?} failed: {e}"));
    }
    let ctx = harness.recall(&s, query("Zürich café")).await.unwrap();
    assert_eq!(ctx.facts.len(), 1);
}

/// Every step against Redis and Postgres is timed in
/// `agentwall_memory_dependency_duration_seconds`, by dependency.
#[tokio::test]
async fn time_in_each_dependency_is_measured() {
    let steps = |dependency: &str| {
        agent_server::telemetry::metrics()
            .dependency_duration
            .with_label_values(&[dependency, "ok"])
            .get_sample_count()
    };
    let harness = Harness::new().await;
    let (redis_before, postgres_before) = (steps("redis"), steps("postgres"));
    let s = session();
    harness
        .commit_turn(&s, turn("I keep bees.", "I keep bees."))
        .await
        .unwrap();
    harness.recall(&s, query("bees")).await.unwrap();
    // A turn's batch: BEGIN, lock, keyed facts, fact writes (postgres) and one EXEC (redis);
    // recall: one read of each. Other tests of this process only add to the counts.
    assert!(steps("redis") >= redis_before + 2, "redis steps");
    assert!(steps("postgres") >= postgres_before + 5, "postgres steps");
    let exposition = agent_server::telemetry::metrics().render();
    assert!(
        exposition.contains("agentwall_memory_dependency_duration_seconds_count{dependency=\"postgres\",outcome=\"ok\"}"),
        "{exposition}"
    );
}

/// Once its words' lexemes are known, a query goes to Postgres ready-made (`lexemes.rs`) instead
/// of through `to_tsquery('english', ...)`: it must find and rank exactly the same facts, for
/// stemmed words, words only Postgres takes for stopwords, numbers and non-ASCII letters.
#[tokio::test]
async fn ready_queries_find_and_rank_facts_exactly_as_to_tsquery_does() {
    let harness = Harness::new().await;
    let s = session();
    let bodies = [
        "I was running to the station",
        "She runs every morning before work",
        "The runner ran a marathon in 2024",
        "Café au lait at the naïve bistro in Zürich",
        "Über cool x86 machines and ARM64 boards",
        "O'Neil's dogs were barking at the dog park",
        "running running running all day long",
        "ourselves and yourselves, once more, very further",
    ];
    for body in bodies {
        harness.commit_turn(&s, turn(body, body)).await.unwrap();
    }
    // No word in two queries: the first recall of each has words to learn.
    let queries = [
        "running",
        "runs dogs barking",
        "café naïve zürich",
        "über x86 arm64 2024",
        "ourselves yourselves once very further",
        "park morning marathon station",
        "o neil",
    ];
    let ranked = |ctx: &agent_server::memory::MemoryContext| -> Vec<(String, f64)> {
        ctx.facts
            .iter()
            .map(|r| (r.fact.text.clone(), r.score))
            .collect()
    };
    for q in queries {
        let known = harness.known_query_words();
        let through_words = harness.recall(&s, query(q)).await.unwrap();
        assert!(
            harness.known_query_words() > known,
            "{q:?}: no word learned"
        );
        let ready = harness.recall(&s, query(q)).await.unwrap();
        assert_eq!(ranked(&ready), ranked(&through_words), "{q:?}");
    }
    let found = harness.recall(&s, query("running")).await.unwrap();
    assert_eq!(
        found.facts.len(),
        3,
        "running, runs and ran? {:?}",
        ranked(&found)
    );
}

/// Recall ranks the facts of a session it holds in the process (`known_facts.rs`): its `ts_rank`
/// must be Postgres's to the bit, or the order of facts would change with where they were ranked.
/// Held against Postgres's own over documents with repeated words, stems, weights (A, B, C and
/// D), lexemes without positions, quotes and backslashes, and queries of one to six lexemes, some
/// repeated, some in no document.
#[tokio::test]
async fn a_document_is_ranked_as_postgres_ranks_it() {
    let harness = Harness::new().await;
    let client = harness.db.client().await;
    let words = [
        "running",
        "runs",
        "ran",
        "dog",
        "dogs",
        "it's",
        "O'Neil",
        r"back\slash",
        "café",
        "42",
        "x86",
        "the",
        "lighthouse",
        "blue",
        "number",
        "cat",
        "cats",
        "zürich",
        "über",
        "park",
    ];
    // A fixed xorshift sequence: the same documents every run.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |below: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        usize::try_from(state % below as u64).unwrap()
    };
    let mut bodies = Vec::new();
    for _ in 0..400 {
        let n = 1 + next(30);
        let body: Vec<&str> = (0..n).map(|_| words[next(words.len())]).collect();
        bodies.push(body.join(" "));
    }
    let variants: Vec<i32> = (0..bodies.len())
        .map(|i| i32::try_from(i % 6).unwrap())
        .collect();
    let rows = client
        .query(
            "SELECT (CASE v
                       WHEN 0 THEN to_tsvector('english', b)
                       WHEN 1 THEN setweight(to_tsvector('english', b), 'A')
                                   || to_tsvector('english', reverse(b))
                       WHEN 2 THEN strip(to_tsvector('english', b))
                       WHEN 3 THEN setweight(to_tsvector('english', b), 'B')
                                   || setweight(to_tsvector('english', 'dog ' || b), 'C')
                       WHEN 4 THEN to_tsvector('simple', b)
                       ELSE array_to_tsvector(regexp_split_to_array(b, ' ')) END)::text
             FROM unnest($1::text[], $2::int[]) AS d(b, v)",
            &[&bodies, &variants],
        )
        .await
        .unwrap();
    let documents: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    let lexemes: Vec<String> = client
        .query(
            "SELECT DISTINCT unnest(tsvector_to_array(d::tsvector)) FROM unnest($1::text[]) AS d",
            &[&documents],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .chain(["absent".to_owned()])
        .collect();
    assert!(lexemes.len() > 30, "{lexemes:?}");
    let quote = |l: &str| format!("'{}'", l.replace('\\', "\\\\").replace('\'', "''"));
    let queries: Vec<Vec<&str>> = (0..300)
        .map(|_| {
            (0..1 + next(6))
                .map(|_| lexemes[next(lexemes.len())].as_str())
                .collect()
        })
        .collect();
    let tsqueries: Vec<String> = queries
        .iter()
        .map(|q| q.iter().map(|l| quote(l)).collect::<Vec<_>>().join(" | "))
        .collect();
    let ranked = client
        .query(
            "SELECT d.ord, q.ord, d.t::tsvector @@ q.t::tsquery, ts_rank(d.t::tsvector, q.t::tsquery)
             FROM unnest($1::text[]) WITH ORDINALITY AS d(t, ord),
                  unnest($2::text[]) WITH ORDINALITY AS q(t, ord)",
            &[&documents, &tsqueries],
        )
        .await
        .unwrap();
    assert_eq!(ranked.len(), documents.len() * queries.len());
    let mut matched = 0;
    for row in &ranked {
        let (d, q): (i64, i64) = (row.get(0), row.get(1));
        let document = &documents[usize::try_from(d - 1).unwrap()];
        let query = &queries[usize::try_from(q - 1).unwrap()];
        let here = agent_server::memory::redis_pg::rank_in_process(document, query)
            .unwrap_or_else(|| panic!("cannot read {document:?}"));
        let postgres: Option<f32> = row.get::<_, bool>(2).then(|| row.get(3));
        assert_eq!(
            here.map(f32::to_bits),
            postgres.map(f32::to_bits),
            "ts_rank({document:?}, {query:?}): here {here:?}, postgres {postgres:?}"
        );
        matched += usize::from(postgres.is_some());
    }
    assert!(
        matched > ranked.len() / 4,
        "{matched} of {} matched",
        ranked.len()
    );
}

/// What `tokio_postgres` logs (through the `log` crate), kept for the test that reads it.
struct PostgresLog(std::sync::Mutex<Vec<String>>);

impl log::Log for PostgresLog {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.target().starts_with("tokio_postgres")
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            let mut lines = self.0.lock().unwrap_or_else(|p| p.into_inner());
            lines.push(record.args().to_string());
        }
    }

    fn flush(&self) {}
}

/// Words only Postgres takes for stopwords reach it twice: in `to_tsquery` on a recall, and when
/// their lexemes are learnt (`lexemes.rs`). Neither may make `tokio_postgres` log a line per
/// word (a NOTICE that the query held only stopwords): the connections ask for warnings only.
#[tokio::test]
async fn stopwords_only_postgres_knows_put_no_notices_in_the_log() {
    static LOG: PostgresLog = PostgresLog(std::sync::Mutex::new(Vec::new()));
    log::set_logger(&LOG).expect("only this test installs a logger");
    log::set_max_level(log::LevelFilter::Info);
    let harness = Harness::new().await;
    let s = session();
    harness
        .commit_turn(&s, turn("Ourselves first", "Yourselves too"))
        .await
        .unwrap();
    for _ in 0..2 {
        harness
            .recall(&s, query("ourselves yourselves once further"))
            .await
            .unwrap();
    }
    let notices: Vec<String> = LOG
        .0
        .lock()
        .unwrap()
        .iter()
        // Other tests of this binary log through the same logger, so only this notice is looked
        // for (in English, as the test servers speak it).
        .filter(|line| line.contains("only stop words"))
        .cloned()
        .collect();
    assert!(notices.is_empty(), "{notices:#?}");
}

/// The group commit's and the recalls' batches are counted, with their jobs, in
/// `agentwall_memory_batch_size` and timed in `agentwall_memory_batch_duration_seconds`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_are_measured() {
    let metrics = agent_server::telemetry::metrics();
    let batches = |batch| metrics.batches("redis+postgres", batch);
    let (commits_before, recalls_before) = (batches("commit"), batches("recall"));
    let harness = Harness::new().await;
    let s = session();
    let turns = (0..6).map(|i| harness.commit_turn(&s, turn(&format!("turn {i}"), "A fact.")));
    for result in futures_util::future::join_all(turns).await {
        result.unwrap();
    }
    harness.recall(&s, query("fact")).await.unwrap();

    // A batch is recorded just after its waiters are answered; other tests of this process
    // only add to the counts.
    let recorded =
        || batches("commit").1 >= commits_before.1 + 6 && batches("recall").1 > recalls_before.1;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while !recorded() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let (commits, recalls) = (batches("commit"), batches("recall"));
    assert!(
        commits.1 >= commits_before.1 + 6,
        "6 turns: {commits_before:?} -> {commits:?}"
    );
    assert!(
        commits.0 > commits_before.0,
        "{commits_before:?} -> {commits:?}"
    );
    assert!(
        recalls.1 > recalls_before.1,
        "{recalls_before:?} -> {recalls:?}"
    );
    let timed = metrics
        .batch_duration
        .with_label_values(&["redis+postgres", "commit"])
        .get_sample_count();
    assert!(
        timed >= commits.0,
        "each batch is timed: {timed} of {}",
        commits.0
    );
    let exposition = metrics.render();
    assert!(
        exposition.contains(
            "agentwall_memory_batch_size_sum{backend=\"redis+postgres\",batch=\"commit\"}"
        ),
        "{exposition}"
    );
}

#[tokio::test]
async fn health_reports_each_dependency() {
    let harness = Harness::new().await;
    let health = harness.health().await;
    let names: Vec<&str> = health.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["redis", "postgres"]);
    assert!(health.iter().all(|h| h.ok && h.error.is_none()));
    assert_eq!(harness.backend(), "redis+postgres");
}

#[tokio::test]
async fn times_round_trip_to_the_nanosecond_and_nul_does_not_fail_a_turn() {
    let harness = Harness::new().await;
    let s = session();
    // Before 2000-01-01 (Postgres' epoch) and below timestamptz's microsecond resolution.
    let at = DateTime::parse_from_rfc3339("1999-12-31T23:59:59.123456789Z")
        .unwrap()
        .to_utc();
    let item = user("late \u{0} night").with_time(at);
    let stored = harness
        .commit_turn(
            &s,
            TurnWrite {
                items: vec![item.clone()],
                facts: vec![NewFact {
                    observed_at: at,
                    ..fact(Some("odd\u{0}key"), "A fact with a \u{0} inside.")
                }],
                ..TurnWrite::default()
            },
        )
        .await
        .expect("a NUL character must not fail the turn");
    assert_eq!(stored[0].key.as_deref(), Some("odd\u{fffd}key"));
    let snapshot = harness.snapshot(&s, at).await.unwrap();
    assert_eq!(
        snapshot.working,
        [item],
        "working memory keeps the text verbatim"
    );
    assert_eq!(snapshot.facts[0].observed_at, at);
    assert_eq!(snapshot.facts[0].text, "A fact with a \u{fffd} inside.");
}
