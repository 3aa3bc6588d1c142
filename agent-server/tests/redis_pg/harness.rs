//! The store under test ([`Harness`]: a store on a database and key prefix of its own) and the
//! helpers the tests share; everything the tests use is imported here once.

pub use std::ops::Deref;
pub use std::sync::Arc;
pub use std::time::{Duration, Instant};

pub use agent_server::memory::ranking::Terms;
pub use agent_server::memory::redis_pg::{RedisPostgresConfig, RedisPostgresStore};
pub use agent_server::memory::{
    MemoryError, MemoryStore, NewFact, RecallQuery, Restatement, TurnRole, TurnWrite, WorkingItem,
    conformance,
};
pub use agent_server::telemetry::Metrics;
pub use chrono::{DateTime, Utc};
pub use protocol::SessionId;
pub use protocol::control::{FactKind, FactSource};
pub use testkit::env::{SETUP_HINT, redis_url};
pub use testkit::postgres::{TestDb, with_user};
pub use testkit::services::{PostgresChild, RedisChild, closed_port, signal};
pub use uuid::Uuid;

pub fn config(redis_url: &str, database_url: &str, prefix: &str) -> RedisPostgresConfig {
    RedisPostgresConfig {
        key_prefix: prefix.to_owned(),
        // Generous: two cores are shared with compilers; the outage tests use short timeouts.
        timeout: Duration::from_secs(5),
        postgres_pool_size: 4,
        ..RedisPostgresConfig::new(redis_url, database_url)
    }
}

pub fn unique_prefix() -> String {
    format!("test-{}", Uuid::new_v4().simple())
}

/// A store on its own database and key prefix.
pub struct Harness {
    pub store: RedisPostgresStore,
    pub prefix: String,
    pub db: TestDb,
}

impl Harness {
    pub async fn new() -> Self {
        Self::measured(Arc::default()).await
    }

    /// A store that records into `metrics`.
    pub async fn measured(metrics: Arc<Metrics>) -> Self {
        let db = TestDb::create().await;
        let prefix = unique_prefix();
        let store = RedisPostgresStore::connect(
            RedisPostgresConfig {
                metrics,
                ..config(&redis_url(), &db.url, &prefix)
            },
            conformance::config(),
        )
        .await
        .unwrap_or_else(|e| panic!("cannot open the store: {e}; {SETUP_HINT}"));
        Self { store, prefix, db }
    }

    /// A second store (another server) on the same database and prefix.
    pub async fn twin(&self) -> RedisPostgresStore {
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

// ---------------------------------------------------------------------------------------------
// Helpers for the backend-specific tests.

pub fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2030-01-01T09:00:00Z")
        .unwrap()
        .to_utc()
}

pub fn session() -> SessionId {
    SessionId::parse(&format!("redis-pg-{}", Uuid::new_v4())).unwrap()
}

pub fn fact(key: Option<&str>, text: &str) -> NewFact {
    NewFact {
        embedding: None,
        source_turn_ids: Vec::new(),
        kind: FactKind::Fact,
        key: key.map(str::to_owned),
        text: text.to_owned(),
        data: None,
        observed_at: t0(),
        importance: 0.5,
        source: FactSource::Extracted,
    }
}

pub fn user(text: &str) -> WorkingItem {
    WorkingItem::new(TurnRole::User, text, t0())
}

pub fn turn(item: &str, fact_text: &str) -> TurnWrite {
    TurnWrite {
        items: vec![user(item)],
        facts: vec![fact(None, fact_text)],
        ..TurnWrite::default()
    }
}

pub fn query(text: &str) -> RecallQuery {
    RecallQuery {
        now: t0() + chrono::Duration::minutes(1),
        terms: Terms::of(text),
        limit: 10,
        episode_limit: 0,
        leave_out_working: false,
        vector: None,
    }
}

pub fn fact_texts(snapshot: &agent_server::memory::Snapshot) -> Vec<&str> {
    snapshot.facts.iter().map(|f| f.text.as_str()).collect()
}

pub fn assert_unavailable(err: &MemoryError, dependency: &str) {
    assert!(
        matches!(err, MemoryError::Unavailable { dependency: d, .. } if *d == dependency),
        "expected {dependency} to be reported unavailable, got: {err:?}"
    );
}

/// Retries `op` until it succeeds or `within` passes: how long a pool takes to reconnect.
pub async fn eventually<T, F, Fut>(within: Duration, mut op: F) -> T
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

pub fn working_texts(ctx: &agent_server::memory::MemoryContext) -> Vec<&str> {
    ctx.working.iter().map(|w| w.text.as_str()).collect()
}

/// What a recall returns of facts, to compare two recalls by: each fact with its score, and the
/// standing items, in order.
pub fn recalled_facts(
    ctx: &agent_server::memory::MemoryContext,
) -> (Vec<(Uuid, String, f64)>, Vec<Uuid>) {
    let facts = ctx
        .facts
        .iter()
        .map(|r| (r.fact.id, r.fact.text.clone(), r.score))
        .collect();
    (facts, ctx.standing.iter().map(|f| f.id).collect())
}
