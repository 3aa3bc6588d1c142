//! Embedded backend: one SQLite file, no server. The agent-server's default store.
//!
//! - Working memory, facts and each session's epoch are tables of one database ([`schema`]): the
//!   durable record.
//! - Recall reads memory, not the file: recently used sessions are mirrored in a session cache
//!   ([`cache`]) whose facts have an in-memory BM25 index ([`lexical`](crate::memory::lexical)),
//!   re-ranked by [`ranking::combined_score`](crate::memory::ranking::combined_score) on the
//!   session clock. A recall of a cached session takes microseconds on the async executor; a
//!   session not cached is loaded once, on a reader connection (see [`cache`] for why that keeps
//!   the mirror exact). Its embeddings are searched through 8-bit codes, then at full precision
//!   ([`nearest`]).
//! - Writes go through group commit ([`writer`]): one thread owns the write connection and commits
//!   all the turns waiting for it in one `BEGIN IMMEDIATE` transaction, each turn decided alone
//!   (its epoch check, from the writer's [`cursors`]), and answers each waiter only after the
//!   commit. A turn's epoch check, supersession and inserts see no other writer in between, also
//!   across processes.
//! - The few reads that go to the file (snapshots, health) run on pooled connections on the
//!   blocking threads (`interact`), never on the async executor; WAL lets them run alongside the
//!   writer.
//! - Durability: WAL with `synchronous = FULL`; a write that returned `Ok` is on disk (see
//!   [`schema`]). Group commit pays the sync once per batch rather than once per turn.
//!
//! Limits worth knowing:
//! - One store owns a file: opening takes an exclusive lock on `<file>.lock`, and a second open
//!   (in this process or another) is refused with [`MemoryError::Unavailable`] until the first
//!   store is dropped. The cache is only exact if nobody else writes the file; servers that must
//!   share memory use the `redis+postgres` backend.
//! - BM25 statistics are per session, so neither which facts a session recalls nor their order
//!   depends on other sessions.
//! - The file must be on a local disk: WAL needs shared memory between the processes using it,
//!   which network file systems do not provide.

mod cache;
mod cursors;
mod nearest;
mod ops;
pub mod responses;
mod schema;
mod writer;

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use deadpool_sqlite::rusqlite::{self, Connection, ErrorCode};
use deadpool_sqlite::{Hook, HookError, InteractError, Pool, PoolError, Runtime};
use protocol::SessionId;
use protocol::control::DependencyHealth;

pub use schema::{APPLICATION_ID, BUSY_TIMEOUT, SCHEMA_VERSION, WAL_AUTOCHECKPOINT_FRAMES};

use self::cache::{SessionCache, SharedSession};
use self::writer::WriterContext;
use super::{
    MemoryConfig, MemoryContext, MemoryError, MemoryStore, NewFact, RecallQuery, ResetCounts,
    Snapshot, StoredFact, TurnWrite, Unembedded,
};
use crate::telemetry::Metrics;
use uuid::Uuid;

/// The dependency name in errors and health reports.
const DEPENDENCY: &str = "embedded";

/// Reader connections per store (the writer has its own). Reads are short and CPU-bound; on this
/// project's 2-core machines more connections than blocking threads that can run at once only
/// add switching.
const POOL_SIZE: usize = 4;

/// How long a request waits for a free connection before the store reports itself unavailable.
const POOL_WAIT: Duration = Duration::from_secs(10);

/// Settings of the embedded store alone.
#[derive(Debug, Clone)]
pub struct EmbeddedOptions {
    /// How many facts and working items the session cache holds, over all sessions, before it
    /// evicts the least recently used sessions. About 0.8 KB each with its index (measured with
    /// `cargo bench -p agent-server --bench recall_scaling`; docs/benchmarks.md).
    pub cache_items: usize,
    /// The server's metrics, where the writer records its batches. The default is a set of its
    /// own, which nothing reads.
    pub metrics: Arc<Metrics>,
}

impl Default for EmbeddedOptions {
    fn default() -> Self {
        Self {
            cache_items: 200_000,
            metrics: Arc::default(),
        }
    }
}

/// A memory store in a single SQLite file.
pub struct EmbeddedStore {
    pool: Pool,
    config: MemoryConfig,
    path: PathBuf,
    cache: Arc<SessionCache>,
    /// The group-commit writer: every write of this store, and every load into the cache, goes
    /// through it.
    writer: writer::Writer,
}

impl Drop for EmbeddedStore {
    fn drop(&mut self) {
        release_outside_runtime(&self.pool);
    }
}

/// Lets `pool` go when its owner is dropped outside any Tokio runtime (a test's runtime torn
/// down with the server still in it): its connections close through the runtime's blocking pool,
/// and closing them there would panic inside a destructor and abort. They are left to the
/// process's exit instead. Inside a runtime the pool closes as usual.
fn release_outside_runtime(pool: &Pool) {
    if tokio::runtime::Handle::try_current().is_err() {
        std::mem::forget(pool.clone());
    }
}

impl std::fmt::Debug for EmbeddedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedStore")
            .field("path", &self.path)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl EmbeddedStore {
    /// [`EmbeddedStore::open_with`] with default [`EmbeddedOptions`].
    pub async fn open(path: &Path, config: MemoryConfig) -> Result<Self, MemoryError> {
        Self::open_with(path, config, EmbeddedOptions::default()).await
    }

    /// Opens (creating it and its parent directories if needed) the database at `path`, and
    /// migrates it to [`SCHEMA_VERSION`].
    ///
    /// Fails with [`MemoryError::Corrupt`] when the file is not an agentwall memory database or
    /// was written by a newer server, and with [`MemoryError::Unavailable`] when it cannot be
    /// created or opened, or another store (in this process or another) has it open.
    pub async fn open_with(
        path: &Path,
        config: MemoryConfig,
        options: EmbeddedOptions,
    ) -> Result<Self, MemoryError> {
        // Every pooled connection opens the path anew: an in-memory database would be a different,
        // empty one per connection, and a temporary ("") one is not durable.
        if path.as_os_str().is_empty() || path == Path::new(":memory:") {
            return Err(MemoryError::Backend {
                dependency: DEPENDENCY,
                reason: format!("{path:?} is not a file path; the embedded store needs one"),
            });
        }
        create_parent_dir(path).await?;

        let pool = deadpool_sqlite::Config::new(path)
            .builder(Runtime::Tokio1)
            .unwrap_or_else(|never| match never {})
            .max_size(POOL_SIZE)
            .wait_timeout(Some(POOL_WAIT))
            .create_timeout(Some(POOL_WAIT))
            .recycle_timeout(Some(POOL_WAIT))
            .post_create(Hook::async_fn(|conn, _| {
                Box::pin(async move {
                    conn.interact(schema::configure_connection)
                        .await
                        .map_err(|e| HookError::message(e.to_string()))?
                        .map_err(HookError::Backend)
                })
            }))
            .build()
            .map_err(|e| MemoryError::Backend {
                dependency: DEPENDENCY,
                reason: format!("cannot build the connection pool: {e}"),
            })?;

        // Ownership first, so that a refused open changes nothing; then the writer's connection
        // migrates the file before any reader uses it.
        let writer_path = path.to_owned();
        let (lock, conn) = tokio::task::spawn_blocking(move || {
            let lock = lock_file(&writer_path)?;
            Ok::<_, MemoryError>((lock, open_writer(&writer_path)?))
        })
        .await
        .map_err(|e| MemoryError::Backend {
            dependency: DEPENDENCY,
            reason: format!("opening the database failed: {e}"),
        })??;
        let cache = Arc::new(SessionCache::new(options.cache_items));
        let context = WriterContext {
            cache: cache.clone(),
            config,
            _lock: lock,
            metrics: options.metrics,
        };
        Ok(Self {
            pool,
            config,
            path: path.to_owned(),
            cache,
            writer: writer::Writer::spawn(conn, context)?,
        })
    }

    /// Sessions in the cache and the facts and working items they hold.
    pub fn cache_usage(&self) -> (usize, usize) {
        self.cache.usage()
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version recorded in the file.
    pub async fn schema_version(&self) -> Result<u32, MemoryError> {
        let version: i64 = self
            .read(|conn| {
                conn.pragma_query_value(None, "user_version", |row| row.get(0))
                    .map_err(sqlite_error)
            })
            .await?;
        u32::try_from(version).map_err(|_| corrupt(format!("invalid schema version {version}")))
    }

    /// Runs `f` on a pooled connection, on a blocking thread.
    async fn read<T, F>(&self, f: F) -> Result<T, MemoryError>
    where
        F: FnOnce(&mut Connection) -> Result<T, MemoryError> + Send + 'static,
        T: Send + 'static,
    {
        let conn = self.pool.get().await.map_err(pool_error)?;
        conn.interact(f).await.map_err(interact_error)?
    }

    /// The session from the cache, loading it on a reader connection if needed (see [`cache`]
    /// for why a concurrent write cannot leave a stale copy cached); with its episodes if
    /// `episodes`, loading it again if the cached copy has none.
    async fn session(
        &self,
        session: &SessionId,
        episodes: bool,
    ) -> Result<SharedSession, MemoryError> {
        if let Some(cached) = self.cache.get(session.as_str())
            && (!episodes || cache::lock(&cached).mirrors_episodes())
        {
            return Ok(cached);
        }
        let ticket = self.cache.begin_load(session.as_str());
        let (config, name) = (self.config, session.as_str().to_owned());
        let loaded = self
            .read(move |conn| {
                // One read transaction: a consistent snapshot that began after `begin_load`.
                let tx = conn.transaction().map_err(sqlite_error)?;
                ops::load_session(&tx, &config, &name, episodes)
            })
            .await
            .map(|memory| Arc::new(Mutex::new(memory)));
        ticket.finish(loaded.as_ref().ok());
        loaded
    }
}

/// Takes the exclusive lock that makes this store the file's only user (see the module docs).
fn lock_file(path: &Path) -> Result<File, MemoryError> {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let lock_path = PathBuf::from(name);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| MemoryError::Unavailable {
            dependency: DEPENDENCY,
            reason: format!("cannot create the lock file {}: {e}", lock_path.display()),
        })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(MemoryError::Unavailable {
            dependency: DEPENDENCY,
            reason: format!(
                "{} is in use by another agent-server (or another store of this process); an \
                 embedded memory file has one owner at a time: stop the other server, give this \
                 one its own --data-dir, or use the redis+postgres backend to share memory",
                path.display()
            ),
        }),
        Err(TryLockError::Error(e)) => Err(MemoryError::Unavailable {
            dependency: DEPENDENCY,
            reason: format!("cannot lock {}: {e}", lock_path.display()),
        }),
    }
}

/// The writer's connection, configured and with the file migrated to [`SCHEMA_VERSION`].
fn open_writer(path: &Path) -> Result<Connection, MemoryError> {
    let mut conn = Connection::open(path).map_err(sqlite_error)?;
    schema::configure_connection(&mut conn).map_err(sqlite_error)?;
    schema::migrate(&mut conn)?;
    schema::configure_writer(&conn).map_err(sqlite_error)?;
    Ok(conn)
}

#[async_trait]
impl MemoryStore for EmbeddedStore {
    fn backend(&self) -> &'static str {
        DEPENDENCY
    }

    fn config(&self) -> &MemoryConfig {
        &self.config
    }

    async fn recall(
        &self,
        session: &SessionId,
        query: RecallQuery,
    ) -> Result<MemoryContext, MemoryError> {
        let memory = self.session(session, query.episode_limit > 0).await?;
        let context = cache::lock(&memory).context(&self.config, &query);
        Ok(context)
    }

    async fn commit_turn(
        &self,
        session: &SessionId,
        turn: TurnWrite,
    ) -> Result<Vec<StoredFact>, MemoryError> {
        let (config, session) = (self.config, session.as_str().to_owned());
        let episodes = self.cache.mirrors_episodes(session.as_str());
        let analyzed = ops::analyze(&turn.facts, episodes);
        self.writer
            .write(move |conn, cursors| {
                ops::commit_turn(conn, cursors, &config, &session, &turn, &analyzed)
            })
            .await
    }

    async fn inject(
        &self,
        session: &SessionId,
        facts: Vec<NewFact>,
    ) -> Result<Vec<StoredFact>, MemoryError> {
        let session = session.as_str().to_owned();
        let episodes = self.cache.mirrors_episodes(session.as_str());
        let analyzed = ops::analyze(&facts, episodes);
        self.writer
            .write(move |conn, cursors| ops::inject(conn, cursors, &session, &facts, &analyzed))
            .await
    }

    async fn reset(&self, session: &SessionId) -> Result<ResetCounts, MemoryError> {
        let session = session.as_str().to_owned();
        let config = self.config;
        self.writer
            .write(move |conn, _| ops::reset(conn, &config, &session))
            .await
    }

    async fn snapshot(
        &self,
        session: &SessionId,
        now: DateTime<Utc>,
    ) -> Result<Snapshot, MemoryError> {
        let (config, session) = (self.config, session.as_str().to_owned());
        self.read(move |conn| ops::snapshot(conn, &config, &session, now))
            .await
    }

    async fn unembedded(&self, limit: usize) -> Result<Unembedded, MemoryError> {
        self.read(move |conn| ops::unembedded(conn, limit)).await
    }

    async fn set_embeddings(
        &self,
        session: &SessionId,
        vectors: Vec<(Uuid, Arc<[f32]>)>,
    ) -> Result<(), MemoryError> {
        let session = session.as_str().to_owned();
        self.writer
            .write(move |conn, _| ops::set_embeddings(conn, &session, &vectors))
            .await
    }

    async fn health(&self) -> Vec<DependencyHealth> {
        // A real round trip through the pool and the file, so a deleted directory, a full pool or
        // a corrupt header show up here rather than on the next turn.
        let result = self
            .read(|conn| {
                conn.query_row("SELECT EXISTS (SELECT 1 FROM sessions)", [], |row| {
                    row.get::<_, i64>(0)
                })
                .map_err(sqlite_error)
            })
            .await;
        vec![DependencyHealth {
            name: DEPENDENCY.to_owned(),
            ok: result.is_ok(),
            error: result.err().map(|e| e.to_string()),
        }]
    }
}

fn corrupt(reason: String) -> MemoryError {
    MemoryError::Corrupt {
        dependency: DEPENDENCY,
        reason,
    }
}

/// Classifies a SQLite error: damaged or foreign files are `Corrupt`, contention and I/O trouble
/// (retryable, or fixed by an operator) are `Unavailable`, the rest are `Backend` failures.
fn sqlite_error(error: rusqlite::Error) -> MemoryError {
    let reason = error.to_string();
    match error.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => corrupt(reason),
        Some(
            ErrorCode::DatabaseBusy
            | ErrorCode::DatabaseLocked
            | ErrorCode::CannotOpen
            | ErrorCode::SystemIoFailure
            | ErrorCode::DiskFull
            | ErrorCode::ReadOnly
            | ErrorCode::PermissionDenied
            | ErrorCode::FileLockingProtocolFailed,
        ) => MemoryError::Unavailable {
            dependency: DEPENDENCY,
            reason,
        },
        _ => MemoryError::Backend {
            dependency: DEPENDENCY,
            reason,
        },
    }
}

/// Creates the directory a database file goes in, if it is missing.
async fn create_parent_dir(path: &Path) -> Result<(), MemoryError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|e| MemoryError::Unavailable {
                dependency: DEPENDENCY,
                reason: format!("cannot create directory {}: {e}", parent.display()),
            })?;
    }
    Ok(())
}

fn pool_error(error: PoolError) -> MemoryError {
    match error {
        PoolError::Backend(e) | PoolError::PostCreateHook(HookError::Backend(e)) => sqlite_error(e),
        other => MemoryError::Unavailable {
            dependency: DEPENDENCY,
            reason: format!("no database connection: {other}"),
        },
    }
}

fn interact_error(error: InteractError) -> MemoryError {
    match error {
        // A panic inside a transaction unwinds through its guard, which rolls it back; the
        // poisoned connection is then discarded by the pool's recycle check.
        InteractError::Panic(_) => MemoryError::Backend {
            dependency: DEPENDENCY,
            reason: "a database task panicked; its transaction was rolled back".to_owned(),
        },
        InteractError::Cancelled => MemoryError::Unavailable {
            dependency: DEPENDENCY,
            reason: "the database task was cancelled (the server is shutting down)".to_owned(),
        },
    }
}
