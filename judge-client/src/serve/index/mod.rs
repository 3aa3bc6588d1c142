//! `--database-url`: an index of runs, simulations, agent configurations (the agents table of
//! docs/contracts/transcript.md) and app audit logs (the tables of docs/contracts/apps.md) in Postgres.
//!
//! The run directories stay the source of truth; the index is a copy that can be dropped and
//! rebuilt at any time. It is kept in step by [`Index::sync`]: at start (before the server
//! listens), every [`SYNC_INTERVAL`] in the background, before `GET /runs` answers from it, and
//! when a simulation of this server changes state ([`Index::put_simulation`] writes that one row
//! at once). A sync re-reads only runs whose files changed (their fingerprint), and removes what
//! is no longer on disk. One sync or write runs at a time, so two of them never race a delete
//! against an insert.
//!
//! Start-up fails fast with the URL (password hidden) and what to do; after that an unreachable
//! database is [`IndexError::Unavailable`], which the error table answers with 503. A write that
//! fails after the simulation already changed state is repaired by the next sync (the run
//! directory holds the simulation, see [`records::SIMULATION_FILE`]).

pub mod records;
mod store;

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;

use self::records::{RunRecord, SimulationRecord};
use super::catalog::{self, RunSummary};
use super::error::ApiError;

/// How often the background sync looks at the run directories.
pub const SYNC_INTERVAL: Duration = Duration::from_secs(10);

/// Budget of one statement or connection attempt; start-up gets [`STARTUP_TIMEOUT`].
const TIMEOUT: Duration = Duration::from_secs(5);
const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("--database-url {url} is not a Postgres URL: {reason}")]
    InvalidUrl { url: String, reason: String },
    #[error(
        "cannot use the index database at {url}: {reason}. Check that Postgres is running there and that the URL (user, password, database) is right, or leave out --database-url to serve the run directories without an index"
    )]
    Startup { url: String, reason: String },
    #[error(
        "the index database at {url} has schema version {found}, newer than this judge knows ({known}): upgrade judge or point --database-url at another database"
    )]
    NewerSchema { url: String, found: i32, known: i32 },
    #[error("the index database is unavailable: {0}")]
    Unavailable(String),
    /// A run directory that could not be read while indexing.
    #[error("{0}")]
    Catalog(String),
}

impl From<IndexError> for ApiError {
    fn from(e: IndexError) -> Self {
        match e {
            IndexError::Unavailable(_) => ApiError::Unavailable(e.to_string()),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

fn unavailable(e: impl fmt::Display) -> IndexError {
    IndexError::Unavailable(e.to_string())
}

/// The index. Cheap to clone; clones share the pool and the lock.
#[derive(Clone)]
pub struct Index {
    pool: Pool,
    url: String,
    /// One sync or write at a time (see the module documentation).
    lock: Arc<tokio::sync::Mutex<()>>,
}

impl fmt::Debug for Index {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Index").field("url", &self.url).finish()
    }
}

/// `url` with its password replaced by `***`: URLs go into messages and logs.
pub fn redact(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        if let Some((userinfo, host)) = authority.rsplit_once('@') {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            let hidden = if userinfo.contains(':') {
                format!("{user}:***")
            } else {
                user.to_owned()
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

impl Index {
    /// Connects and migrates; fails with what to do when the database cannot be used.
    pub async fn connect(url: &str) -> Result<Self, IndexError> {
        let shown = redact(url);
        let mut config: tokio_postgres::Config =
            url.parse()
                .map_err(|e: tokio_postgres::Error| IndexError::InvalidUrl {
                    url: shown.clone(),
                    reason: e.to_string(),
                })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("judge-serve");
        }
        if config.get_options().is_none() {
            // The server stops a statement when we stop waiting for it.
            config.options(format!("-c statement_timeout={}", TIMEOUT.as_millis()));
        }
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(4)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(TIMEOUT))
            .create_timeout(Some(TIMEOUT))
            .recycle_timeout(Some(TIMEOUT))
            .build()
            .map_err(|e| IndexError::Startup {
                url: shown.clone(),
                reason: e.to_string(),
            })?;
        let startup = |reason: String| IndexError::Startup {
            url: shown.clone(),
            reason,
        };
        let migrated = tokio::time::timeout(STARTUP_TIMEOUT, async {
            let mut client = pool.get().await.map_err(|e| e.to_string())?;
            store::migrate(&mut client).await.map_err(|e| e.to_string())
        })
        .await
        .map_err(|_| startup(format!("no answer within {STARTUP_TIMEOUT:?}")))?
        .map_err(startup)?;
        if let Some(found) = migrated {
            return Err(IndexError::NewerSchema {
                url: shown,
                found,
                known: store::MIGRATIONS.last().map_or(0, |m| m.0),
            });
        }
        Ok(Self {
            pool,
            url: shown,
            lock: Arc::new(tokio::sync::Mutex::new(())),
        })
    }

    /// The URL, password hidden.
    pub fn url(&self) -> &str {
        &self.url
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, IndexError> {
        self.pool.get().await.map_err(unavailable)
    }

    /// Brings the index in step with the run directories under `root` and the simulations
    /// alive in the server (`live`). Runs every few seconds and before every run list, so it
    /// reads only what changed: each run's files are stat-ed (the fingerprint) and only a run
    /// whose fingerprint differs from the indexed one is read and parsed.
    pub async fn sync(&self, root: &Path, live: &[SimulationRecord]) -> Result<(), IndexError> {
        let _one_at_a_time = self.lock.lock().await;
        let mut ids = catalog::run_ids(root).map_err(|e| IndexError::Catalog(e.to_string()))?;
        let mut client = self.client().await?;
        let known: HashMap<String, String> = store::fingerprints(&client)
            .await
            .map_err(unavailable)?
            .into_iter()
            .collect();
        let mut changed: Vec<RunRecord> = Vec::new();
        ids.retain(|id| {
            let fingerprint = records::fingerprint(&root.join(id));
            if known.get(id) == Some(&fingerprint) {
                return true;
            }
            match records::read_run(root, id) {
                Ok(record) => {
                    changed.push(record);
                    true
                }
                // Gone since the listing, or nothing readable in it (yet): not a run to list,
                // as in `catalog::list`, so it leaves the index until it can be read.
                Err(_) => false,
            }
        });
        let live_ids: Vec<String> = live.iter().map(|s| s.id.clone()).collect();
        let tx = client.transaction().await.map_err(unavailable)?;
        for record in &changed {
            store::put_run(&tx, record).await.map_err(unavailable)?;
        }
        // What this server holds is newer than any file.
        for sim in live {
            store::put_simulation(&tx, sim).await.map_err(unavailable)?;
        }
        store::prune(&tx, &ids, &live_ids)
            .await
            .map_err(unavailable)?;
        tx.commit().await.map_err(unavailable)
    }

    /// Writes one simulation (created, started, finished or stopped in this server).
    pub async fn put_simulation(&self, sim: &SimulationRecord) -> Result<(), IndexError> {
        let _one_at_a_time = self.lock.lock().await;
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(unavailable)?;
        store::put_simulation(&tx, sim).await.map_err(unavailable)?;
        tx.commit().await.map_err(unavailable)
    }

    /// Every run as the index holds it, in the catalog's order.
    pub async fn runs(&self) -> Result<Vec<RunSummary>, IndexError> {
        let client = self.client().await?;
        let mut runs: Vec<RunSummary> = store::summaries(&client)
            .await
            .map_err(unavailable)?
            .into_iter()
            .filter_map(|v| serde_json::from_value(v).ok())
            .collect();
        catalog::sort(&mut runs);
        Ok(runs)
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redact("postgres://judge:s3cret@db:5432/runs?sslmode=disable"),
            "postgres://judge:***@db:5432/runs?sslmode=disable"
        );
        assert_eq!(
            redact("postgres://judge@db/runs"),
            "postgres://judge@db/runs"
        );
        assert_eq!(
            redact("host=db user=judge password=s3cret dbname=runs"),
            "host=db user=judge password=*** dbname=runs"
        );
    }
}
