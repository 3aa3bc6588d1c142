//! The production backend: working memory in Redis (`working.rs`), long-term memory in Postgres
//! (`longterm.rs`). This module owns what spans both: the order of writes, timeouts, and start-up.
//!
//! # Start-up: wait a little, then fail
//! [`RedisPostgresStore::connect`] pings Redis and runs the Postgres migrations before it returns.
//! A dependency that cannot be reached yet is tried again, with growing pauses, until the start-up
//! budget (`startup_timeout`, 30 s) is spent: a container engine can report Postgres healthy a
//! moment before its name resolves or its port answers from another container. Then, or at once
//! for a refusal that waiting cannot mend (a wrong password, a schema of a newer binary), it fails
//! with the error naming the dependency and its address (without password). A server that starts
//! with an unmigrated or unreachable database would only fail every request later; failing at
//! start-up makes a misconfiguration obvious. After start-up nothing is fatal: the Postgres pool
//! and the Redis connection reconnect by themselves, each operation reports the dependency that is
//! down, and `health()` says which one for `/readyz`.
//!
//! # Group commit
//! Turn commits and injects are not written one by one: a `batcher.rs` queue collects them and writes
//! every job waiting as one batch, in one Postgres transaction and one Redis MULTI/EXEC, with
//! the outcome of each job as if the batch's jobs had been written one after the other in queue
//! order (a turn of a reset session is refused alone; supersession by key is resolved across the
//! batch by `memory::writes`). A batch that fails for any reason but an outage is written
//! again job by job, so one bad turn fails only itself.
//!
//! # Atomicity across the two stores
//! A batch is written as: begin Postgres transaction → lock the session rows (in sorted order, so
//! concurrent batches never deadlock) and check each turn's epoch → at once, write facts and
//! retirements, and the Redis MULTI/EXEC of the turns' working items → COMMIT. (At once because
//! the batches of a busy server follow one another: the Redis write was the longest step of a
//! batch, and now overlaps the Postgres ones.) Postgres opens first because it is the only side
//! that can hold a write open and undo it: when either half fails, the items Redis may hold are
//! removed while the session rows are still locked, the transaction is rolled back and nothing
//! was stored anywhere. The only window left is a COMMIT that fails after Redis applied the
//! items. A COMMIT the server refused rolled back: the items are removed again (the
//! compensation). A COMMIT whose answer was lost is looked up with `txid_status` on a fresh
//! connection: committed means success; aborted, or no answer, means compensation and an error.
//! What remains possible, and is logged at error level:
//! - Postgres becomes unreachable right after receiving a COMMIT it then applies: the batch's facts
//!   are stored, its working items were removed, and the callers got an error;
//! - Redis fails during the compensation (or applies an EXEC whose answer timed out only after the
//!   compensation ran): the items of a rolled-back batch stay in working memory until they age
//!   out. All Redis operations share one connection, so a compensation sent after a timed-out
//!   EXEC reaches Redis after it.
//!
//! A batch runs in a task of its own, so a caller that stops waiting (a client that hung up)
//! cannot cut it between EXEC and COMMIT.
//!
//! # Resets racing turns
//! A batch holds its session rows' locks from its epoch checks to its COMMIT, Redis write included. A
//! reset takes the same lock, bumps the epoch, deletes the facts, deletes the Redis key, and only
//! then commits. So a turn either finishes entirely before the reset (and the reset removes it), or
//! runs after it and sees the new epoch (and is refused with [`MemoryError::SessionReset`] when it
//! read its context before the reset). Recall reads the epoch and facts from one Postgres snapshot
//! *before* reading Redis, so a context can never pair pre-reset data with the post-reset epoch.
//!
//! # Timeouts
//! Every operation has one deadline ([`RedisPostgresConfig::timeout`]) shared by all its steps; a step
//! that misses it reports its own dependency as unavailable. Postgres also gets the budget as
//! `statement_timeout`/`lock_timeout`, so the server stops waiting when we do. Asking whether an
//! unanswered COMMIT happened, and the compensation, get one more budget each, so a turn whose
//! EXEC or COMMIT goes unanswered, or whose fact writes fail after its EXEC, takes up to two or
//! three times the timeout; a dependency that refuses connections fails an operation at once.

mod batcher;
mod longterm;
mod matches;
mod recent;
pub mod responses;
mod tasks;
mod working;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use protocol::SessionId;
use protocol::control::DependencyHealth;
use tokio::time::Instant;
use uuid::Uuid;

use crate::task;
use crate::telemetry::Metrics;

use super::writes::FactWrites;
use super::{
    Fact, MemoryConfig, MemoryContext, MemoryError, MemoryStore, NewFact, RecallQuery, Recalled,
    ResetCounts, Snapshot, StoredFact, TurnWrite, Unembedded, ranking,
};
use batcher::{Batcher, Job};
use longterm::{HeldEpisodes, RecallRead, RecallRows};
use recent::RecentWorking;
use working::Working;

/// This backend's name, in metrics, health and errors that are its own.
const BACKEND: &str = "redis+postgres";
const REDIS: &str = working::DEPENDENCY;
const POSTGRES: &str = longterm::DEPENDENCY;

/// Start-up retries an unreachable Redis or Postgres after this pause, doubled each time up to
/// [`STARTUP_MAX_PAUSE`], until [`RedisPostgresConfig::startup_timeout`] is spent.
const STARTUP_FIRST_PAUSE: Duration = Duration::from_millis(250);
const STARTUP_MAX_PAUSE: Duration = Duration::from_secs(2);

/// Group-commit batches that may be written at the same time. A batch runs alone unless it takes
/// unusually long (`batcher.rs`): larger batches cost Postgres less per turn. Each batch takes its
/// sessions' row locks in the same (sorted) order, so concurrent batches never deadlock.
const COMMITS_IN_FLIGHT: usize = 2;
/// Recall statements that may run at the same time, on the same terms.
const RECALLS_IN_FLIGHT: usize = 2;

/// What a committed turn stored, or why it was not stored.
type TurnOutcome = Result<Vec<StoredFact>, MemoryError>;

/// The statement recall runs against Postgres, for plan checks: `EXPLAIN` it with `$1` session
/// ids (`text[]`), `$2` words for `to_tsquery` (`text[]`) and `$3` candidate counts (`bigint[]`).
#[cfg(feature = "test-hooks")]
pub fn recall_statement() -> &'static str {
    &longterm::RECALL_SQL
}

/// The statement semantic recall runs for vectors of `dims` dimensions, for plan checks (its
/// parameters: `longterm::similar_sql`).
#[cfg(feature = "test-hooks")]
pub fn similar_statement(dims: usize) -> String {
    longterm::similar_sql(dims)
}

/// Semantic recall reads sessions with more items of a kind than this through the HNSW index.
#[cfg(feature = "test-hooks")]
pub const SIMILAR_EXACT_UP_TO: i64 = longterm::SIMILAR_EXACT_UP_TO;

/// The statements of a group commit that find facts by id or key, by name, for plan checks:
/// each reads its ids or keys from `$1` and `$2` arrays (see `longterm::FACT_LOOKUPS`).
#[cfg(feature = "test-hooks")]
pub fn fact_lookup_statements() -> &'static [(&'static str, &'static str)] {
    &longterm::FACT_LOOKUPS
}

/// How to reach the two services.
#[derive(Clone)]
pub struct RedisPostgresConfig {
    /// `redis://[user:password@]host:port[/db]`.
    pub redis_url: String,
    /// `postgres://user[:password]@host:port/dbname[?options]` or `key=value` form. TLS is not
    /// supported (no TLS connector is linked); use a private network or a local socket.
    pub database_url: String,
    /// Namespace of every Redis key: `{key_prefix}:s:{session}:...`. Lets several deployments (or
    /// tests) share one Redis.
    pub key_prefix: String,
    /// Budget of one memory operation, all its round trips included.
    pub timeout: Duration,
    /// Budget of start-up (connecting, waiting for another server's migration, migrating).
    pub startup_timeout: Duration,
    pub postgres_pool_size: usize,
    /// Real-clock lifetime of a session's Redis key after its last write. `None`: the working-memory
    /// TTL, which is an upper bound when the session clock follows the real clock.
    pub redis_key_ttl: Option<Duration>,
    /// Most working-memory items (over all sessions, each session counting one more) kept in the
    /// process for recalls of sessions that did not change since (`recent.rs`); 0 turns it off.
    pub cache_items: usize,
    /// The server's metrics, where each step against Redis and Postgres and each batch is
    /// recorded. The default is a set of its own, which nothing reads.
    pub metrics: Arc<Metrics>,
}

impl RedisPostgresConfig {
    /// The given URLs with defaults for everything else.
    pub fn new(redis_url: impl Into<String>, database_url: impl Into<String>) -> Self {
        Self {
            redis_url: redis_url.into(),
            database_url: database_url.into(),
            ..Self::default()
        }
    }
}

/// Local services with their standard ports; a 2 s budget per operation.
impl Default for RedisPostgresConfig {
    fn default() -> Self {
        Self {
            redis_url: "redis://127.0.0.1:6379".to_owned(),
            database_url: "postgres://postgres@127.0.0.1:5432/agentwall".to_owned(),
            key_prefix: "agentwall".to_owned(),
            timeout: Duration::from_secs(2),
            startup_timeout: Duration::from_secs(30),
            postgres_pool_size: 16,
            redis_key_ttl: None,
            cache_items: 200_000,
            metrics: Arc::default(),
        }
    }
}

/// Redacts passwords: URLs are logged and put in error messages.
impl fmt::Debug for RedisPostgresConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisPostgresConfig")
            .field("redis_url", &redact(&self.redis_url))
            .field("database_url", &redact(&self.database_url))
            .field("key_prefix", &self.key_prefix)
            .field("timeout", &self.timeout)
            .field("startup_timeout", &self.startup_timeout)
            .field("postgres_pool_size", &self.postgres_pool_size)
            .field("redis_key_ttl", &self.redis_key_ttl)
            .field("cache_items", &self.cache_items)
            .finish_non_exhaustive()
    }
}

/// The `redis+postgres` memory store. Cheap to clone; clones share the pools.
#[derive(Clone)]
pub struct RedisPostgresStore {
    inner: Arc<Inner>,
    /// Turn commits and injects go through the group commit.
    commits: Batcher<(SessionId, TurnWrite), Vec<StoredFact>>,
    /// Recalls' Postgres reads are batched too: one statement for every recall waiting.
    recalls: Batcher<RecallRead, RecallRows>,
}

struct Inner {
    memory: MemoryConfig,
    timeout: Duration,
    working: Working,
    /// Committed working memory of recently used sessions, so that recall need not read Redis.
    recent: RecentWorking,
    pg: deadpool_postgres::Pool,
    metrics: Arc<Metrics>,
    /// Where the HNSW index builds connect (each on a connection of its own).
    database_url: String,
    /// Dimensions whose HNSW index this store has built or is building (see
    /// [`Inner::index_vectors`]).
    vector_indexes: std::sync::Mutex<HashSet<usize>>,
}

impl fmt::Debug for RedisPostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisPostgresStore")
            .field("memory", &self.inner.memory)
            .field("timeout", &self.inner.timeout)
            .finish_non_exhaustive()
    }
}

impl RedisPostgresStore {
    /// Connects to both services and migrates the database; fails fast (see the module
    /// documentation) when either is unreachable.
    pub async fn connect(
        config: RedisPostgresConfig,
        memory: MemoryConfig,
    ) -> Result<Self, MemoryError> {
        let working = Working::new(
            &config.redis_url,
            config.timeout,
            &config.key_prefix,
            &memory,
            config.redis_key_ttl.unwrap_or(memory.working_ttl),
        )?;
        let pg = longterm::pool(
            &config.database_url,
            config.postgres_pool_size,
            config.timeout,
        )?;
        let start = Deadline::new(config.startup_timeout, &config.metrics);
        let at = |url: &str, e: MemoryError| match e {
            MemoryError::Unavailable { dependency, reason } => MemoryError::Unavailable {
                dependency,
                reason: format!("at start-up, {}: {reason}", redact(url)),
            },
            other => other,
        };
        let mut pause = STARTUP_FIRST_PAUSE;
        loop {
            let migrate = start.run(POSTGRES, async {
                let mut client = longterm::client(&pg).await?;
                longterm::migrate(&mut client).await
            });
            let ping = start.run(REDIS, working.ping());
            let (migrated, pinged) = tokio::join!(migrate, ping);
            let outcome = migrated
                .map_err(|e| at(&config.database_url, e))
                .and(pinged.map_err(|e| at(&config.redis_url, e)));
            match outcome {
                Ok(()) => break,
                // Not reachable yet (a service that reported healthy before its address
                // resolves, a restart): tried again until the start-up budget is spent.
                Err(e @ MemoryError::Unavailable { .. }) if Instant::now() + pause < start.at => {
                    tracing::warn!(error = %e, retry_in = ?pause, "memory backend not reachable yet");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(STARTUP_MAX_PAUSE);
                }
                // Refused (a wrong password, a newer schema) or out of time: fail now.
                Err(e) => return Err(e),
            }
        }
        tracing::info!(config = ?config, "redis+postgres memory ready");
        let inner = Arc::new(Inner {
            memory,
            timeout: config.timeout,
            working,
            recent: RecentWorking::new(memory.working_capacity, config.cache_items),
            pg,
            metrics: Arc::clone(&config.metrics),
            database_url: config.database_url.clone(),
            vector_indexes: std::sync::Mutex::default(),
        });
        let metrics = &config.metrics;
        Ok(Self {
            commits: Batcher::spawn("commit", COMMITS_IN_FLIGHT, metrics, {
                let inner = inner.clone();
                move |jobs| inner.clone().commit_batch(jobs)
            }),
            recalls: Batcher::spawn("recall", RECALLS_IN_FLIGHT, metrics, {
                let inner = inner.clone();
                move |jobs| inner.clone().recall_batch(jobs)
            }),
            inner,
        })
    }

    /// The value of a Postgres setting on one of the store's own connections, as its statements
    /// run with it (for tests of the per-connection settings).
    #[cfg(feature = "test-hooks")]
    pub async fn connection_setting(&self, name: &str) -> Result<String, MemoryError> {
        let inner = &self.inner;
        inner
            .on_pg(inner.deadline(), async |client| {
                let row = client
                    .query_one("SELECT current_setting($1)", &[&name])
                    .await
                    .map_err(longterm::pg_error)?;
                Ok(row.get(0))
            })
            .await
    }

    /// Runs a write in its own task: once started it finishes (or compensates) even if the caller
    /// stops waiting.
    async fn detached<T, F>(&self, work: impl FnOnce(Arc<Inner>) -> F) -> Result<T, MemoryError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, MemoryError>> + Send + 'static,
    {
        task::in_request(work(self.inner.clone()))
            .await
            .unwrap_or_else(|e| {
                Err(MemoryError::Backend {
                    dependency: BACKEND,
                    reason: format!("the memory task failed: {e}"),
                })
            })
    }
}

/// One operation's deadline, shared by its steps, and where the steps are timed.
#[derive(Clone, Copy)]
struct Deadline<'m> {
    at: Instant,
    budget: Duration,
    metrics: &'m Metrics,
}

impl<'m> Deadline<'m> {
    fn new(budget: Duration, metrics: &'m Metrics) -> Self {
        Self {
            at: Instant::now() + budget,
            budget,
            metrics,
        }
    }

    /// Runs one step; past the deadline the step is dropped and `dependency` reported unavailable.
    /// Its time goes into `agentwall_memory_dependency_duration_seconds`.
    async fn run<T>(
        self,
        dependency: &'static str,
        step: impl Future<Output = Result<T, MemoryError>>,
    ) -> Result<T, MemoryError> {
        let started = std::time::Instant::now();
        let result = tokio::time::timeout_at(self.at, step)
            .await
            .unwrap_or_else(|_| {
                Err(MemoryError::Unavailable {
                    dependency,
                    reason: format!("no answer within {:?}", self.budget),
                })
            });
        let outcome = if result.is_ok() { "ok" } else { "error" };
        self.metrics
            .dependency_duration
            .with_label_values(&[dependency, outcome])
            .observe(started.elapsed().as_secs_f64());
        result
    }
}

impl Inner {
    /// A deadline of one operation's budget from now.
    fn deadline(&self) -> Deadline<'_> {
        Deadline::new(self.timeout, &self.metrics)
    }

    /// Starts building the HNSW index of `dims`-dimensional embeddings the first time this store
    /// recalls from a session too large to read exactly (`longterm::ensure_vector_index`): in
    /// the background, since on a large table it takes minutes; until it is valid, recall reads
    /// exactly. A failed build is logged and tried again at the next start-up.
    fn index_vectors(&self, dims: usize) {
        let first = self
            .vector_indexes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(dims);
        if !first {
            return;
        }
        let url = self.database_url.clone();
        task::server_work(async move {
            match longterm::ensure_vector_index(&url, dims).await {
                Ok(0) => {}
                Ok(built) => tracing::info!(dims, built, "built the HNSW indexes of embeddings"),
                Err(e) => {
                    tracing::warn!(dims, error = %e, "cannot build the HNSW index of embeddings; large sessions' semantic recall reads every item")
                }
            }
        });
    }

    /// A pooled Postgres connection within the deadline.
    async fn pg_client(
        &self,
        deadline: Deadline<'_>,
    ) -> Result<deadpool_postgres::Object, MemoryError> {
        deadline.run(POSTGRES, longterm::client(&self.pg)).await
    }

    /// Runs `op` on a pooled connection within `deadline`, then gives the connection back (see
    /// [`Inner::release`]).
    async fn on_pg<T>(
        &self,
        deadline: Deadline<'_>,
        op: impl AsyncFnOnce(&deadpool_postgres::Object) -> Result<T, MemoryError>,
    ) -> Result<T, MemoryError> {
        let client = self.pg_client(deadline).await?;
        let result = deadline.run(POSTGRES, op(&client)).await;
        Self::release(client, &result);
        result
    }

    /// A connection that failed as unavailable may be half-dead (a timed-out statement may still be
    /// queued on it): close it instead of returning it to the pool.
    fn release<T>(client: deadpool_postgres::Object, result: &Result<T, MemoryError>) {
        if let Err(MemoryError::Unavailable {
            dependency: POSTGRES,
            ..
        }) = result
        {
            drop(deadpool_postgres::Object::take(client));
        }
    }

    /// Writes a batch of jobs (see `batcher.rs`) and answers each. When the batch fails as a
    /// whole for a reason other than an outage (a statement or the COMMIT refused, say by a
    /// constraint one turn broke), each job is written again alone, so one bad turn fails only
    /// itself; an outage fails them all at once rather than multiplying the timeouts.
    async fn commit_batch(
        self: Arc<Self>,
        jobs: Vec<Job<(SessionId, TurnWrite), Vec<StoredFact>>>,
    ) {
        let turns: Vec<(&SessionId, &TurnWrite)> = jobs
            .iter()
            .map(|job| (&job.request.0, &job.request.1))
            .collect();
        let outcomes = match self.write_batch(&turns).await {
            Ok(outcomes) => outcomes,
            Err(e) if turns.len() > 1 && !matches!(e, MemoryError::Unavailable { .. }) => {
                tracing::warn!(error = %e, turns = turns.len(), "a batch of memory writes failed; writing its turns one by one");
                let mut outcomes = Vec::with_capacity(turns.len());
                for turn in &turns {
                    let alone = self.write_batch(std::slice::from_ref(turn)).await;
                    outcomes.push(alone.and_then(|mut o| {
                        o.pop().unwrap_or(Err(MemoryError::Backend {
                            dependency: BACKEND,
                            reason: "a batch of one write gave no outcome".to_owned(),
                        }))
                    }));
                }
                outcomes
            }
            Err(e) => vec![Err(e); turns.len()],
        };
        for (job, outcome) in jobs.into_iter().zip(outcomes) {
            job.answer(outcome);
        }
    }

    /// Reads a batch of recalls from Postgres in one statement and answers each; a failure fails
    /// them all (one statement, one outcome).
    async fn recall_batch(self: Arc<Self>, jobs: Vec<Job<RecallRead, RecallRows>>) {
        let deadline = self.deadline();
        let reads: Vec<&RecallRead> = jobs.iter().map(|job| &job.request).collect();
        let read = self.on_pg(deadline, async |client| {
            longterm::recall(client, &reads).await
        });
        match read.await {
            Ok(rows) => {
                for (job, rows) in jobs.into_iter().zip(rows) {
                    job.answer(Ok(rows));
                }
            }
            Err(e) => {
                for job in jobs {
                    job.answer(Err(e.clone()));
                }
            }
        }
    }

    /// One outcome per turn, in order, or the error that failed the whole batch (nothing of it was
    /// stored).
    async fn write_batch(
        &self,
        turns: &[(&SessionId, &TurnWrite)],
    ) -> Result<Vec<TurnOutcome>, MemoryError> {
        let deadline = self.deadline();
        let mut client = self.pg_client(deadline).await?;
        let result = self.write_batch_with(&mut client, deadline, turns).await;
        Self::release(client, &result);
        result
    }

    /// The sequence described in the module documentation, for a batch of turns.
    async fn write_batch_with(
        &self,
        client: &mut deadpool_postgres::Object,
        deadline: Deadline<'_>,
        turns: &[(&SessionId, &TurnWrite)],
    ) -> Result<Vec<TurnOutcome>, MemoryError> {
        let tx = deadline
            .run(POSTGRES, async {
                client.transaction().await.map_err(longterm::pg_error)
            })
            .await?;
        let mut counts: BTreeMap<&str, i64> = BTreeMap::new();
        for (session, _) in turns {
            *counts.entry(session.as_str()).or_default() += 1;
        }
        let locks = deadline
            .run(POSTGRES, longterm::lock_sessions(&tx, &counts))
            .await?;

        let accepted = turn_numbers(turns, &locks)?;

        // The working items need only their turn numbers: their Redis write runs while Postgres
        // reads and writes the facts, instead of after (the rows stay locked until the COMMIT, so
        // no other batch writes these sessions meanwhile). Under load this was the longest step
        // of a batch, and the batches of a busy server follow one another.
        let mut written = Vec::new();
        for ((session, turn), seq) in turns.iter().zip(&accepted) {
            if let Some(seq) = *seq
                && !turn.items.is_empty()
            {
                written.push(self.working.batch(session, seq, &turn.items)?);
            }
        }
        // Before the append: the key's TTL runs from a moment after this.
        let appended_at = std::time::Instant::now();
        let append = async {
            if written.is_empty() {
                return Ok(());
            }
            deadline.run(REDIS, self.working.append(&written)).await
        };
        let facts = self.write_facts(&tx, deadline, turns, &accepted);
        let (appended, facts) = tokio::join!(append, facts);
        // Whichever side failed, Redis may hold items of the batch (an unanswered EXEC may have
        // been applied, one that failed partway applied the rest, and a failed Postgres write did
        // not stop the EXEC).
        let outcomes = both_halves(appended, facts);
        let outcomes = match outcomes {
            Ok(written) => written,
            Err(e) => {
                if !written.is_empty() {
                    self.abandon(tx, turns, &written).await;
                }
                return Err(e);
            }
        };

        let committed = match tokio::time::timeout_at(deadline.at, tx.commit()).await {
            Ok(Ok(())) => {
                self.remember_committed(turns, &accepted, &locks, appended_at);
                return Ok(outcomes);
            }
            // The server answered the COMMIT with an error: it rolled back.
            Ok(Err(e)) if e.as_db_error().is_some() => {
                let e = longterm::pg_error(e);
                (Some(false), e)
            }
            // The answer was lost: ask the server what became of the transaction.
            Ok(Err(e)) => (self.commit_outcome(locks.xid).await, longterm::pg_error(e)),
            Err(_) => (
                self.commit_outcome(locks.xid).await,
                MemoryError::Unavailable {
                    dependency: POSTGRES,
                    reason: format!("no answer to COMMIT within {:?}", deadline.budget),
                },
            ),
        };
        match committed {
            (Some(true), _) => {
                self.remember_committed(turns, &accepted, &locks, appended_at);
                Ok(outcomes)
            }
            (_, e) => {
                self.compensate(turns, &written).await;
                Err(e)
            }
        }
    }

    /// The long-term half of a batch, in its transaction: reads the facts its keys supersede and
    /// the facts it restates (one round trip), works out each turn's outcome, and writes the
    /// facts. One outcome per turn, in order (a turn refused for its epoch writes nothing).
    async fn write_facts(
        &self,
        tx: &deadpool_postgres::Transaction<'_>,
        deadline: Deadline<'_>,
        turns: &[(&SessionId, &TurnWrite)],
        accepted: &[Option<u64>],
    ) -> Result<Vec<TurnOutcome>, MemoryError> {
        let keys: Vec<(&str, &str)> = turns
            .iter()
            .zip(accepted)
            .filter(|(_, seq)| seq.is_some())
            .flat_map(|((session, turn), _)| {
                turn.facts
                    .iter()
                    .filter_map(|f| f.key.as_deref())
                    .map(|key| (session.as_str(), key))
            })
            .collect();
        let restated: Vec<(&str, Uuid)> = turns
            .iter()
            .zip(accepted)
            .filter(|(_, seq)| seq.is_some())
            .flat_map(|((session, turn), _)| turn.restate.iter().map(|r| (session.as_str(), r.id)))
            .collect();
        // Both reads at once: pipelined on the one connection, one round trip.
        let (stored, restatable) = deadline
            .run(POSTGRES, async {
                tokio::try_join!(
                    longterm::current_keyed(tx, &keys),
                    longterm::restatable(tx, &restated)
                )
            })
            .await?;
        let mut facts = FactWrites::new(stored, restatable, longterm::STORED_FORM);
        let mut outcomes = Vec::with_capacity(turns.len());
        let mut embeddings: HashMap<Uuid, Arc<[f32]>> = HashMap::new();
        for ((session, turn), seq) in turns.iter().zip(accepted) {
            if seq.is_none() {
                // Nothing of it is written.
                outcomes.push(Err(MemoryError::SessionReset));
                continue;
            }
            let stored = facts.turn(session.as_str(), turn);
            for (written, new) in stored.iter().zip(&turn.facts) {
                if let Some(vector) = &new.embedding {
                    embeddings.insert(written.id, Arc::clone(vector));
                }
            }
            outcomes.push(Ok(stored));
        }
        deadline
            .run(
                POSTGRES,
                longterm::apply_fact_writes(tx, facts.finish(), &embeddings),
            )
            .await?;
        Ok(outcomes)
    }

    /// Undoes a batch whose working items may be in Redis while its transaction is still open:
    /// removes them while the session rows are still locked (no other batch writes these
    /// sessions meanwhile), rolls back, and only then moves the turn numbers on (see
    /// [`Inner::invalidate`]), which needs those locks.
    async fn abandon(
        &self,
        tx: deadpool_postgres::Transaction<'_>,
        turns: &[(&SessionId, &TurnWrite)],
        written: &[working::Written],
    ) {
        self.remove_items(written).await;
        let _ = tokio::time::timeout(self.timeout, tx.rollback()).await;
        self.invalidate(&session_ids(turns)).await;
    }

    /// After a batch committed: brings the recent working memory (`recent.rs`) of each of its
    /// sessions from the turn number before the batch to the batch's last, with the items it
    /// wrote.
    /// `appended_at` is when the Redis write was sent, from which its TTL runs.
    fn remember_committed(
        &self,
        turns: &[(&SessionId, &TurnWrite)],
        accepted: &[Option<u64>],
        locks: &longterm::SessionLocks,
        appended_at: std::time::Instant,
    ) {
        // Per session: how many turn numbers the batch took, and the items it wrote.
        let mut sessions: HashMap<&str, (u64, Vec<recent::Placed>)> = HashMap::new();
        for ((session, turn), seq) in turns.iter().zip(accepted) {
            let (count, added) = sessions.entry(session.as_str()).or_default();
            *count += 1;
            if let Some(seq) = *seq {
                for (index, item) in turn.items.iter().enumerate() {
                    let order = working::order(seq, index, item);
                    added.push((order, Arc::new(item.clone())));
                }
            }
        }
        let expires = appended_at + self.working.key_ttl();
        for (session, (count, added)) in sessions {
            let Some(lock) = locks.sessions.get(session) else {
                continue;
            };
            let last = lock.first_turn_seq + count - 1;
            let refreshed = (!added.is_empty()).then_some(expires);
            let batch = recent::CommittedTurns {
                epoch: lock.epoch,
                first: lock.first_turn_seq,
                last,
                added,
                written_at: appended_at,
                expires: refreshed,
            };
            self.recent.committed(session, batch);
        }
    }

    /// Whether transaction `xid` committed, asked on a fresh connection with its own budget (a
    /// connection on which the question timed out is closed, as every other).
    async fn commit_outcome(&self, xid: i64) -> Option<bool> {
        let deadline = self.deadline();
        let asked = self.on_pg(deadline, async |client| {
            longterm::committed(client, xid).await
        });
        match asked.await {
            Ok(outcome) => outcome,
            Err(e) => {
                tracing::error!(error = %e, xid, "cannot tell whether a turn committed");
                None
            }
        }
    }

    /// Removes a batch's working items after its Postgres transaction failed, then moves its
    /// sessions' turn numbers on (see [`Inner::invalidate`]): the rolled-back batch's numbers are
    /// reused by the next batch, so an entry of `recent.rs` filled while its items were in Redis
    /// could otherwise hold them under a committed number.
    async fn compensate(&self, turns: &[(&SessionId, &TurnWrite)], written: &[working::Written]) {
        self.remove_items(written).await;
        self.invalidate(&session_ids(turns)).await;
    }

    /// Removes exactly the members a batch added to Redis.
    async fn remove_items(&self, written: &[working::Written]) {
        let deadline = self.deadline();
        if let Err(e) = deadline.run(REDIS, self.working.remove(written)).await {
            tracing::error!(
                turns = written.len(),
                error = %e,
                "the working-memory items of failed turns may remain in redis"
            );
        }
    }

    /// Drops what this server's cache (`recent.rs`) holds of the session.
    fn forget(&self, session: &str) {
        self.recent.forget(session);
    }

    /// After Redis changed without a committed change of the sessions' `(epoch, turn_seq)` (a
    /// compensation, a reset that did not commit): forgets this server's entries of
    /// `recent.rs`, and increments the turn numbers in Postgres so that every server's entries
    /// are stale. A failure is logged: entries may then show what Redis no longer holds until
    /// the session is next written.
    async fn invalidate(&self, sessions: &[&str]) {
        for session in sessions {
            self.forget(session);
        }
        let deadline = self.deadline();
        let bumped = self.on_pg(deadline, async |client| {
            longterm::bump_turn_seq(client, sessions).await
        });
        if let Err(e) = bumped.await {
            tracing::error!(
                sessions = sessions.len(),
                error = %e,
                "other servers may serve working memory that redis no longer holds until these sessions are written again"
            );
        }
    }

    async fn reset(self: Arc<Self>, session: SessionId) -> Result<ResetCounts, MemoryError> {
        let deadline = self.deadline();
        let mut client = self.pg_client(deadline).await?;
        let result = self.reset_with(&mut client, deadline, &session).await;
        Self::release(client, &result);
        match &result {
            Ok(_) => self.forget(session.as_str()),
            // Redis may have been cleared under an epoch that did not change.
            Err(_) => self.invalidate(&[session.as_str()]).await,
        }
        result
    }

    /// Lock and epoch bump first, then Postgres rows, then Redis, then COMMIT: the Redis delete
    /// happens while the session row is locked, so no turn can write working memory between the
    /// delete and the epoch change becoming visible. If the COMMIT fails after Redis was cleared,
    /// the reset reports the error; working memory is gone but the facts and epoch are unchanged,
    /// a state a retry completes.
    async fn reset_with(
        &self,
        client: &mut deadpool_postgres::Object,
        deadline: Deadline<'_>,
        session: &SessionId,
    ) -> Result<ResetCounts, MemoryError> {
        let tx = deadline
            .run(POSTGRES, async {
                client.transaction().await.map_err(longterm::pg_error)
            })
            .await?;
        let facts = deadline
            .run(POSTGRES, longterm::reset(&tx, session))
            .await?;
        let working_items = deadline.run(REDIS, self.working.clear(session)).await?;
        deadline
            .run(POSTGRES, async {
                tx.commit().await.map_err(longterm::pg_error)
            })
            .await?;
        Ok(ResetCounts {
            working_items,
            facts,
        })
    }
}

/// A batch's outcome from its two halves, run at once: the Postgres half's value if both
/// succeeded, else the error to report. When both failed, a Postgres outage wins: it names the
/// dependency that is down, keeps `commit_batch` from retrying turn by turn, and makes
/// `release` close the connection; otherwise Redis's error, an outage or not.
fn both_halves<T>(
    appended: Result<(), MemoryError>,
    facts: Result<T, MemoryError>,
) -> Result<T, MemoryError> {
    match (appended, facts) {
        (Ok(()), facts) => facts,
        (Err(_), Err(e @ MemoryError::Unavailable { .. })) => Err(e),
        (Err(e), _) => Err(e),
    }
}

/// The sessions of a batch, each once.
fn session_ids<'a>(turns: &[(&'a SessionId, &TurnWrite)]) -> Vec<&'a str> {
    let mut sessions: Vec<&str> = turns.iter().map(|(s, _)| s.as_str()).collect();
    sessions.sort_unstable();
    sessions.dedup();
    sessions
}

/// Each turn's number, in queue order (its session's turns in the batch take consecutive numbers
/// from the locked row), or `None` when its session was reset since the turn read its context. A
/// refused turn's number is simply never used.
fn turn_numbers(
    turns: &[(&SessionId, &TurnWrite)],
    locks: &longterm::SessionLocks,
) -> Result<Vec<Option<u64>>, MemoryError> {
    let mut next: HashMap<&str, u64> = HashMap::new();
    turns
        .iter()
        .map(|(session, turn)| {
            let lock =
                locks
                    .sessions
                    .get(session.as_str())
                    .ok_or_else(|| MemoryError::Corrupt {
                        dependency: POSTGRES,
                        reason: format!("session {session} was not locked"),
                    })?;
            let seq = next.entry(session.as_str()).or_insert(lock.first_turn_seq);
            let number = *seq;
            *seq += 1;
            Ok(turn
                .expected_epoch
                .is_none_or(|e| e == lock.epoch)
                .then_some(number))
        })
        .collect()
}

#[async_trait]
impl MemoryStore for RedisPostgresStore {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn config(&self) -> &MemoryConfig {
        &self.inner.memory
    }

    async fn recall(
        &self,
        session: &SessionId,
        query: RecallQuery,
    ) -> Result<MemoryContext, MemoryError> {
        let inner = &self.inner;
        let deadline = inner.deadline();
        // Only the shared content words reach to_tsquery, OR-ed: each is a run of alphanumeric
        // characters, which the tsquery parser cannot read as an operator.
        let terms = &query.terms;
        let wanted = query.limit > 0 || query.episode_limit > 0;
        let tsquery = (!terms.is_empty() && wanted).then(|| terms.join(" | "));
        let pool_size = if query.limit > 0 {
            ranking::candidate_pool(query.limit)
        } else {
            0
        };
        // Episodes working memory holds are left out before the cut to the pool. Which they are
        // is known for sure only once working memory is read, after Postgres: unless the mirror
        // of working memory turns out current (`HeldEpisodes`), as many more are read as working
        // memory can hold.
        let episode_pool = ranking::candidate_pool(query.episode_limit);
        let episode_pool_size = match (query.episode_limit, query.leave_out_working) {
            (0, _) => 0,
            (_, false) => episode_pool,
            (_, true) => episode_pool.saturating_add(inner.memory.working_capacity),
        };

        let held = (query.leave_out_working && query.episode_limit > 0)
            .then(|| inner.recent.peek(session.as_str()))
            .flatten()
            .map(|peeked| HeldEpisodes {
                epoch: peeked.epoch,
                turn_seq: peeked.turn_seq,
                working: recent::live(peeked.items, &inner.memory, query.now),
                pool: episode_pool,
            });
        // What the batch skipped the held episodes by: working memory itself, if it was current.
        let mirrored = held
            .as_ref()
            .map(|held| (held.epoch, held.turn_seq, held.working.clone()));
        // Postgres first: see "Resets racing turns" in the module documentation. The read joins
        // the recall batch; its own deadline starts when the batch does.
        let read = RecallRead {
            session: session.clone(),
            tsquery,
            pool_size,
            episode_pool_size,
            held,
        };
        let rows = self.recalls.submit(read).await?;
        let RecallRows {
            epoch,
            turn_seq,
            standing,
            candidates,
            mut episodes,
        } = rows;
        let working = match mirrored {
            Some((at_epoch, at_turn, working)) if (at_epoch, at_turn) == (epoch, turn_seq) => {
                working
            }
            _ => {
                let items = match inner.recent.get(session.as_str(), epoch, turn_seq) {
                    Some(items) => items,
                    None => {
                        let (set, expires) =
                            deadline.run(REDIS, inner.working.read_set(session)).await?;
                        let recent = &inner.recent;
                        recent.fill(session.as_str(), epoch, turn_seq, set, expires)
                    }
                };
                let working = recent::live(items, &inner.memory, query.now);
                if query.leave_out_working {
                    // Still in lexical order: the pool is the best of the rest.
                    episodes.retain(|(episode, _)| !working.holds(episode));
                    episodes.truncate(episode_pool);
                }
                working
            }
        };

        let half_life = inner.memory.recency_half_life;
        if let Some(vector) = &query.vector {
            let wanted = (query.limit > 0, query.episode_limit > 0);
            let pool = ranking::candidate_pool(query.limit.max(query.episode_limit));
            let lexical: Vec<Uuid> = candidates
                .iter()
                .chain(&episodes)
                .map(|(fact, _)| fact.id)
                .collect();
            let similar = inner
                .on_pg(deadline, async |client| {
                    longterm::similar(client, session, vector, pool, wanted, &lexical).await
                })
                .await?;
            if similar.large {
                inner.index_vectors(vector.len());
            }
            let (similar_facts, mut similar_episodes) = (similar.facts, similar.episodes);
            if query.leave_out_working {
                similar_episodes.retain(|(episode, _)| !working.holds(episode));
            }
            let fuse = |lexical: Vec<(Fact, f64)>, similar: Vec<(Fact, f64)>, limit| {
                ranking::fuse(
                    ranking::candidates(lexical, similar),
                    query.now,
                    half_life,
                    limit,
                )
            };
            return Ok(MemoryContext {
                working,
                facts: fuse(candidates, similar_facts, query.limit),
                episodes: fuse(episodes, similar_episodes, query.episode_limit),
                standing,
                epoch,
            });
        }
        let rank = |candidates: Vec<(Fact, f64)>, limit: usize| {
            let mut ranked: Vec<Recalled> = candidates
                .into_iter()
                .map(|(fact, lexical)| ranking::lexical_recall(fact, lexical, query.now, half_life))
                .collect();
            // Stable: full ties keep the SQL order (newer, then later written, first).
            ranked.sort_by(|a, b| {
                b.score
                    .total_cmp(&a.score)
                    .then(b.fact.observed_at.cmp(&a.fact.observed_at))
            });
            ranked.truncate(limit);
            ranked
        };
        Ok(MemoryContext {
            working,
            facts: rank(candidates, query.limit),
            episodes: rank(episodes, query.episode_limit),
            standing,
            epoch,
        })
    }

    async fn commit_turn(
        &self,
        session: &SessionId,
        turn: TurnWrite,
    ) -> Result<Vec<StoredFact>, MemoryError> {
        self.commits.submit((session.clone(), turn)).await
    }

    async fn inject(
        &self,
        session: &SessionId,
        facts: Vec<NewFact>,
    ) -> Result<Vec<StoredFact>, MemoryError> {
        let turn = TurnWrite {
            facts,
            ..TurnWrite::default()
        };
        self.commits.submit((session.clone(), turn)).await
    }

    async fn reset(&self, session: &SessionId) -> Result<ResetCounts, MemoryError> {
        let session = session.clone();
        self.detached(move |inner| inner.reset(session)).await
    }

    async fn snapshot(
        &self,
        session: &SessionId,
        now: DateTime<Utc>,
    ) -> Result<Snapshot, MemoryError> {
        let inner = &self.inner;
        let deadline = inner.deadline();
        let facts = inner.on_pg(deadline, async |client| {
            longterm::all_facts(client, session).await
        });
        let working = deadline.run(REDIS, inner.working.read(session, now, &inner.memory));
        let (facts, working) = tokio::try_join!(facts, working)?;
        Ok(Snapshot { working, facts })
    }

    async fn unembedded(&self, limit: usize) -> Result<Unembedded, MemoryError> {
        let inner = &self.inner;
        inner
            .on_pg(inner.deadline(), async |client| {
                longterm::unembedded(client, limit).await
            })
            .await
    }

    async fn set_embeddings(
        &self,
        session: &SessionId,
        vectors: Vec<(Uuid, Arc<[f32]>)>,
    ) -> Result<(), MemoryError> {
        let inner = &self.inner;
        inner
            .on_pg(inner.deadline(), async |client| {
                longterm::set_embeddings(client, session, &vectors).await
            })
            .await
    }

    async fn health(&self) -> Vec<DependencyHealth> {
        let inner = &self.inner;
        let deadline = inner.deadline();
        let (redis, postgres) = tokio::join!(
            deadline.run(REDIS, inner.working.ping()),
            deadline.run(POSTGRES, longterm::ping(&inner.pg)),
        );
        [(REDIS, redis), (POSTGRES, postgres)]
            .into_iter()
            .map(|(name, result)| DependencyHealth {
                name: name.to_owned(),
                ok: result.is_ok(),
                error: result.err().map(|e| e.to_string()),
            })
            .collect()
    }
}

/// `scheme://user:secret@host` → `scheme://user:***@host`; `password=secret` → `password=***`.
fn redact(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        if let Some((userinfo, host)) = authority.rsplit_once('@') {
            let hidden = match userinfo.split_once(':') {
                Some((user, _)) => format!("{user}:***"),
                None => userinfo.to_owned(),
            };
            return format!("{scheme}://{hidden}@{host}{tail}");
        }
        return url.to_owned();
    }
    url.split_whitespace()
        .map(|part| match part.split_once('=') {
            Some(("password", _)) => "password=***".to_owned(),
            _ => part.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::{MemoryError, POSTGRES, REDIS, both_halves, redact};

    #[test]
    fn a_batch_reports_a_postgres_outage_first_then_redis() {
        let outage = |dependency| MemoryError::Unavailable {
            dependency,
            reason: "down".into(),
        };
        let refused = |dependency| MemoryError::Backend {
            dependency,
            reason: "refused".into(),
        };
        assert!(matches!(both_halves(Ok(()), Ok(7)), Ok(7)));
        // (Redis's half, Postgres's half, what the batch reports).
        let cases = [
            (None, Some(refused(POSTGRES)), refused(POSTGRES)),
            (Some(refused(REDIS)), None, refused(REDIS)),
            (
                Some(outage(REDIS)),
                Some(outage(POSTGRES)),
                outage(POSTGRES),
            ),
            (
                Some(refused(REDIS)),
                Some(outage(POSTGRES)),
                outage(POSTGRES),
            ),
            (Some(outage(REDIS)), Some(refused(POSTGRES)), outage(REDIS)),
            (
                Some(refused(REDIS)),
                Some(refused(POSTGRES)),
                refused(REDIS),
            ),
        ];
        for (redis, postgres, expected) in cases {
            let case = format!("{redis:?} and {postgres:?}");
            let appended = redis.map_or(Ok(()), Err);
            let facts = postgres.map_or(Ok(7), Err);
            // `MemoryError` has no `PartialEq`; its `Debug` names the variant, dependency and
            // reason.
            let reported = format!("{:?}", both_halves(appended, facts));
            assert_eq!(reported, format!("{:?}", Err::<u8, _>(expected)), "{case}");
        }
    }

    #[test]
    fn passwords_never_reach_logs() {
        assert_eq!(
            redact("postgres://app:s3cret@db:5432/agentwall"),
            "postgres://app:***@db:5432/agentwall"
        );
        assert_eq!(redact("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(
            redact("host=db user=app password=s3cret"),
            "host=db user=app password=***"
        );
    }
}
