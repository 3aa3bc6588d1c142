//! Long-term memory in Postgres: the connection pool, versioned migrations, and every SQL statement
//! of the backend. Functions here run single statements or steps of a transaction the caller owns;
//! ordering across Postgres and Redis, and timeouts, are decided in `super`.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use deadpool_postgres::{GenericClient, Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use protocol::SessionId;
use protocol::control::{FactKind, FactSource};
use tokio_postgres::{NoTls, Row};
use uuid::Uuid;

use super::matches::{self, Lexemes, Match};
use crate::memory::writes::{FactUpdate, Resolved, StoredForm, StoredKeyed, StoredUnkeyed};
use crate::memory::{EpisodeData, Fact, MemoryError, Unembedded, WorkingMemory};

pub(super) const DEPENDENCY: &str = "postgres";

/// Versioned migrations, applied in order and recorded in `agentwall_schema_migrations`. Never edit
/// an applied one; add the next version instead.
const MIGRATIONS: &[(i32, &str, &str)] = &[
    (1, "init", include_str!("migrations/0001_init.sql")),
    (
        2,
        "drop_tsv_gin",
        include_str!("migrations/0002_drop_tsv_gin.sql"),
    ),
    (
        3,
        "session_scoped_indexes",
        include_str!("migrations/0003_session_scoped_indexes.sql"),
    ),
    (
        4,
        "restate_in_place",
        include_str!("migrations/0004_restate_in_place.sql"),
    ),
    (
        5,
        "count_kind_changes_by_row",
        include_str!("migrations/0005_count_kind_changes_by_row.sql"),
    ),
    (
        6,
        "source_turn_ids",
        include_str!("migrations/0006_source_turn_ids.sql"),
    ),
    (
        7,
        "episodes_and_embeddings",
        include_str!("migrations/0007_episodes_and_embeddings.sql"),
    ),
    (
        8,
        "episode_count",
        include_str!("migrations/0008_episode_count.sql"),
    ),
    (9, "pgvector", include_str!("migrations/0009_pgvector.sql")),
    (
        10,
        "a2a_tasks",
        include_str!("migrations/0010_a2a_tasks.sql"),
    ),
];

/// Advisory-lock key that serialises migrations of one database across servers ("agentwal").
const MIGRATION_LOCK: i64 = 0x6167_656e_7477_616c;

const FACT_COLUMNS: &str =
    "id, kind, fact_key, body, data, observed_at, observed_ns, importance, source, source_turn_ids";

/// The session settings every connection asks for, unless the URL already chose its own options.
///
/// Client-side timeouts abandon a statement, but the server would keep running it and keep its
/// locks: the timeouts make the server give up too. `client_min_messages = warning` keeps NOTICEs
/// off the connection: the only ones our statements raise say that a text-search query held
/// only stopwords (`to_tsquery` on such a recall), which
/// `tokio_postgres` would log at INFO, one line each.
///
/// `plan_cache_mode = force_generic_plan`: a statement is planned once per connection, when it
/// is prepared.
/// Left to Postgres, [`RECALL_SQL`] was planned anew at every execution (a custom plan looked
/// cheaper than the generic one), and planning it took 1.1 ms against 0.3 ms to run it: most of
/// what a recall added to a turn's time to first token. The statements are written for one plan
/// whatever their parameters: a choice that depends on a session's size is a condition on its
/// row, evaluated at run time, and kinds and dimensions that partial indexes name are literals.
fn server_options(timeout: Duration) -> String {
    let ms = timeout.as_millis().max(1);
    format!(
        "-c statement_timeout={ms} -c lock_timeout={ms} -c idle_in_transaction_session_timeout={} \
         -c client_min_messages=warning -c hnsw.iterative_scan=strict_order \
         -c plan_cache_mode=force_generic_plan",
        ms.saturating_mul(5).max(10_000)
    )
}

/// Builds the pool. Nothing connects here: deadpool connects on first use, and replaces a
/// connection whose server went away, which is what makes the store recover by itself.
pub(super) fn pool(url: &str, size: usize, timeout: Duration) -> Result<Pool, MemoryError> {
    let mut config: tokio_postgres::Config = url.parse().map_err(|e| MemoryError::Backend {
        dependency: DEPENDENCY,
        reason: format!("the database URL is invalid: {e}"),
    })?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(timeout);
    }
    if config.get_application_name().is_none() {
        config.application_name("agent-server");
    }
    if config.get_options().is_none() {
        config.options(server_options(timeout));
    }
    // Detects a peer that vanished without closing the socket (a partition, a killed VM).
    config.keepalives(true);
    config.keepalives_idle(Duration::from_secs(30));
    let manager = Manager::from_config(
        config,
        NoTls,
        ManagerConfig {
            // `Fast` only checks that the socket is open; a dead connection fails its next statement,
            // which is then reported as Unavailable and the connection is not recycled.
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(size.max(1))
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(timeout))
        .create_timeout(Some(timeout))
        .recycle_timeout(Some(timeout))
        .build()
        .map_err(|e| MemoryError::Backend {
            dependency: DEPENDENCY,
            reason: format!("cannot build the connection pool: {e}"),
        })
}

/// A pooled connection.
pub(super) async fn client(pool: &Pool) -> Result<deadpool_postgres::Object, MemoryError> {
    pool.get().await.map_err(|e| match e {
        deadpool_postgres::PoolError::Backend(e) => pg_error(e),
        other => MemoryError::Unavailable {
            dependency: DEPENDENCY,
            reason: format!("no connection: {other}"),
        },
    })
}

/// Applies the pending migrations in one transaction under a transaction-scoped advisory lock:
/// a second server starting at the same time waits for the lock, then finds nothing to do; a
/// failed migration rolls back completely. Refuses a database migrated by a newer binary.
pub(super) async fn migrate(client: &mut deadpool_postgres::Object) -> Result<(), MemoryError> {
    let tx = client.transaction().await.map_err(pg_error)?;
    // Migrations may legitimately take longer than one request's budget.
    tx.batch_execute("SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0")
        .await
        .map_err(pg_error)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(pg_error)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS agentwall_schema_migrations (
             version    integer PRIMARY KEY,
             name       text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
         )",
    )
    .await
    .map_err(pg_error)?;
    let applied: Vec<i32> = tx
        .query("SELECT version FROM agentwall_schema_migrations", &[])
        .await
        .map_err(pg_error)?
        .iter()
        .map(|row| row.try_get(0))
        .collect::<Result<_, _>>()
        .map_err(corrupt)?;
    let known = MIGRATIONS.last().map_or(0, |m| m.0);
    if let Some(newer) = applied.iter().copied().filter(|v| *v > known).max() {
        return Err(MemoryError::Corrupt {
            dependency: DEPENDENCY,
            reason: format!(
                "the schema is at version {newer}, newer than this binary knows ({known}); \
                 upgrade agent-server or use another database"
            ),
        });
    }
    for (version, name, sql) in MIGRATIONS {
        if applied.contains(version) {
            continue;
        }
        tracing::info!(version, name, "applying postgres migration");
        tx.batch_execute(sql)
            .await
            .map_err(|e| migration_failed(*version, name, e))?;
        tx.execute(
            "INSERT INTO agentwall_schema_migrations (version, name) VALUES ($1, $2)",
            &[version, name],
        )
        .await
        .map_err(pg_error)?;
    }
    tx.commit().await.map_err(pg_error)
}

/// A failed migration's error, naming it, with what to do when an extension is missing.
fn migration_failed(version: i32, name: &str, e: tokio_postgres::Error) -> MemoryError {
    let message = e.as_db_error().map(|db| db.message().to_owned());
    let hint = match message.as_deref() {
        Some(m) if m.contains("extension") && m.contains("\"vector\"") => {
            "; agent-server's Redis + Postgres backend needs the pgvector extension: install it \
             (Debian: postgresql-<version>-pgvector; Docker: a pgvector/pgvector image; managed \
             Postgres: enable `vector`), then start again; where agent-server's role may not \
             create extensions, have an administrator run CREATE EXTENSION vector"
        }
        Some(m) if m.contains("extension") => {
            "; install Postgres's contrib modules (Debian: postgresql-contrib) or have a \
             superuser run the migration's CREATE EXTENSION"
        }
        _ => "",
    };
    match pg_error(e) {
        MemoryError::Backend { dependency, reason } => MemoryError::Backend {
            dependency,
            reason: format!("migration {version} ({name}) failed: {reason}{hint}"),
        },
        unavailable => unavailable,
    }
}

/// The session rows a batch of turns locked, until the caller's transaction ends.
pub(super) struct SessionLocks {
    /// Per session: its epoch and the first of the turn numbers taken for it.
    pub sessions: HashMap<String, SessionLock>,
    /// The transaction id, to ask the server later whether a commit whose answer was lost happened.
    pub xid: i64,
}

#[derive(Clone, Copy)]
pub(super) struct SessionLock {
    pub epoch: u64,
    /// The first turn number taken; the session's turns in the batch use the next ones in order.
    pub first_turn_seq: u64,
}

/// Locks the rows of `sessions` (creating missing ones) and takes `count` consecutive turn numbers
/// for each, in ONE statement. Every write of a session goes through here first, so writes of one
/// session, and resets, are serialised. Rows are locked in the order given; callers pass them
/// sorted (a `BTreeMap`), so two batches, of this server or another, never wait for each other in
/// a cycle.
pub(super) async fn lock_sessions(
    tx: &deadpool_postgres::Transaction<'_>,
    sessions: &BTreeMap<&str, i64>,
) -> Result<SessionLocks, MemoryError> {
    let stmt = tx
        .prepare_cached(
            "INSERT INTO agentwall_sessions AS s (session_id, turn_seq)
             SELECT id, n FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS t(id, n, ord)
             ORDER BY ord
             ON CONFLICT (session_id) DO UPDATE SET turn_seq = s.turn_seq + EXCLUDED.turn_seq
             RETURNING s.session_id, s.epoch, s.turn_seq, txid_current()",
        )
        .await
        .map_err(pg_error)?;
    let ids: Vec<&str> = sessions.keys().copied().collect();
    let counts: Vec<i64> = sessions.values().copied().collect();
    let rows = tx.query(&stmt, &[&ids, &counts]).await.map_err(pg_error)?;
    let mut locks = SessionLocks {
        sessions: HashMap::with_capacity(rows.len()),
        xid: 0,
    };
    for row in rows {
        let session: String = row.try_get(0).map_err(corrupt)?;
        let last = unsigned(row.try_get(2).map_err(corrupt)?)?;
        let count = sessions.get(session.as_str()).copied().unwrap_or(1);
        let lock = SessionLock {
            epoch: unsigned(row.try_get(1).map_err(corrupt)?)?,
            first_turn_seq: last.saturating_sub(unsigned(count)?) + 1,
        };
        locks.xid = row.try_get(3).map_err(corrupt)?;
        locks.sessions.insert(session, lock);
    }
    if locks.sessions.len() != sessions.len() {
        return Err(corrupt(format!(
            "locked {} session rows for {} sessions",
            locks.sessions.len(),
            sessions.len()
        )));
    }
    Ok(locks)
}

/// How Postgres stores what a batch writes (see [`FactWrites`]): text without U+0000 (see
/// [`without_nul`]); times exactly (`observed_at` and `observed_ns`, see [`split_time`]).
pub(super) const STORED_FORM: StoredForm = StoredForm {
    text: without_nul,
    ..StoredForm::EXACT
};

/// The statements of a group commit that find facts by id or key, by name. Each must reach them
/// through an index whatever the statistics say, or a batch would cost as much as the whole table
/// (a test checks their generic plans, the only plans the store's connections use). A plain
/// join of `unnest(...)` with the table let the planner scan the table while it had no
/// statistics yet: every fresh database for its first minute, until autovacuum's first
/// `ANALYZE`.
#[cfg(feature = "test-hooks")]
pub(super) const FACT_LOOKUPS: [(&str, &str); 5] = [
    ("current_keyed", CURRENT_KEYED_SQL),
    ("restatable", RESTATABLE_SQL),
    ("retire", RETIRE_SQL),
    ("restate", RESTATE_SQL),
    ("restate_text", RESTATE_TEXT_SQL),
];

/// [`restatable`]'s statement: one probe of the primary key per id, as in [`CURRENT_KEYED_SQL`]
/// (the `LIMIT 1` keeps the planner from turning it back into a join).
const RESTATABLE_SQL: &str = "SELECT f.session_id, f.id, f.body, f.source_turn_ids
    FROM unnest($1::text[], $2::uuid[]) AS r(session_id, id)
    CROSS JOIN LATERAL (
        SELECT * FROM agentwall_facts AS f
        WHERE f.id = r.id AND f.session_id = r.session_id
          AND f.kind = 'fact' AND f.fact_key IS NULL
        LIMIT 1) AS f";

/// Which of `ids` (`(session, id)`) are stored unkeyed facts of their session, with their text:
/// the facts a restatement changes in place (see [`Restatement`]).
pub(super) async fn restatable(
    tx: &deadpool_postgres::Transaction<'_>,
    ids: &[(&str, Uuid)],
) -> Result<Vec<StoredUnkeyed>, MemoryError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let stmt = tx.prepare_cached(RESTATABLE_SQL).await.map_err(pg_error)?;
    let sessions: Vec<&str> = ids.iter().map(|(s, _)| *s).collect();
    let uuids: Vec<Uuid> = ids.iter().map(|(_, id)| *id).collect();
    let rows = tx
        .query(&stmt, &[&sessions, &uuids])
        .await
        .map_err(pg_error)?;
    rows.iter()
        .map(|row| {
            Ok(StoredUnkeyed {
                session: row.try_get(0).map_err(corrupt)?,
                id: row.try_get(1).map_err(corrupt)?,
                text: row.try_get(2).map_err(corrupt)?,
                source_turn_ids: row.try_get(3).map_err(corrupt)?,
            })
        })
        .collect()
}

/// [`current_keyed`]'s statement: one index probe per key (LATERAL ... LIMIT 1); a join let the
/// planner pick a scan of the whole table from statistics taken while it was still small.
const CURRENT_KEYED_SQL: &str =
    "SELECT f.session_id, f.fact_key, f.id, f.observed_at, f.observed_ns
    FROM unnest($1::text[], $2::text[]) AS k(session_id, fact_key)
    CROSS JOIN LATERAL (
        SELECT * FROM agentwall_facts AS f
        WHERE f.session_id = k.session_id AND f.fact_key = k.fact_key
          AND f.fact_key IS NOT NULL
        LIMIT 1) AS f";

/// The stored current fact (id and observation time) of each keyed `(session, key)` given.
pub(super) async fn current_keyed(
    tx: &deadpool_postgres::Transaction<'_>,
    keys: &[(&str, &str)],
) -> Result<Vec<StoredKeyed>, MemoryError> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let stmt = tx
        .prepare_cached(CURRENT_KEYED_SQL)
        .await
        .map_err(pg_error)?;
    let sessions: Vec<&str> = keys.iter().map(|(s, _)| *s).collect();
    // Keys are stored without NUL (see `without_nul`), so they are looked up that way too.
    let names: Vec<String> = keys
        .iter()
        .map(|(_, k)| without_nul((*k).to_owned()))
        .collect();
    let rows = tx
        .query(&stmt, &[&sessions, &names])
        .await
        .map_err(pg_error)?;
    rows.iter()
        .map(|row| {
            let observed_at: DateTime<Utc> = row.try_get(3).map_err(corrupt)?;
            let observed_ns: i32 = row.try_get(4).map_err(corrupt)?;
            Ok(StoredKeyed {
                session: row.try_get(0).map_err(corrupt)?,
                key: row.try_get(1).map_err(corrupt)?,
                id: row.try_get(2).map_err(corrupt)?,
                observed_at: joined_time(observed_at, observed_ns),
            })
        })
        .collect()
}

/// [`apply_fact_writes`]'s retirements. The `ANY` repeats the join's ids for the planner: it
/// reads them through the primary key (an `UPDATE` or `DELETE` cannot take a `LATERAL` probe).
const RETIRE_SQL: &str = "DELETE FROM agentwall_facts AS f
    USING unnest($1::text[], $2::uuid[]) AS r(session_id, id)
    WHERE f.session_id = r.session_id AND f.id = r.id AND f.id = ANY($2::uuid[])";

/// Applies a batch's [`Resolved`] writes: its retirements in one `DELETE`, its restatements in
/// place, then its rows in one `INSERT`. The facts its rows replace (`replaced`) are not deleted
/// apart: the `INSERT` overwrites the row of their key (`ON CONFLICT`), in one statement.
pub(super) async fn apply_fact_writes(
    tx: &deadpool_postgres::Transaction<'_>,
    writes: Resolved<'_>,
    embeddings: &HashMap<Uuid, Arc<[f32]>>,
) -> Result<(), MemoryError> {
    if !writes.retire.is_empty() {
        let stmt = tx.prepare_cached(RETIRE_SQL).await.map_err(pg_error)?;
        let sessions: Vec<&str> = writes.retire.iter().map(|(s, _)| *s).collect();
        let ids: Vec<Uuid> = writes.retire.iter().map(|(_, id)| *id).collect();
        tx.execute(&stmt, &[&sessions, &ids])
            .await
            .map_err(pg_error)?;
    }
    let updates: Vec<(Uuid, FactUpdate)> = writes
        .updates
        .into_iter()
        .map(|(_, id, update)| (id, update))
        .collect();
    if !updates.is_empty() {
        update_facts(tx, &updates).await?;
    }
    let rows = writes.inserts;
    if rows.is_empty() {
        return Ok(());
    }
    // `seq = DEFAULT`: a replacement is a new write, ordered after everything before it, as the
    // delete-and-insert it stands for would be.
    let stmt = tx
        .prepare_cached(
            "INSERT INTO agentwall_facts AS f
               (id, session_id, kind, fact_key, body, data, observed_at, observed_ns, importance, source,
                source_turn_ids, embedding)
             SELECT i, s, k, fk, b, d, oa, ns, imp, src, string_to_array(ids, ','), e::real[]::vector
             FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[],
                         $6::jsonb[], $7::timestamptz[], $8::integer[], $9::real[],
                         $10::text[], $11::text[], $12::text[])
                  AS r(i, s, k, fk, b, d, oa, ns, imp, src, ids, e)
             ON CONFLICT (session_id, fact_key) WHERE fact_key IS NOT NULL DO UPDATE SET
               id = EXCLUDED.id, seq = DEFAULT, kind = EXCLUDED.kind, body = EXCLUDED.body,
               data = EXCLUDED.data, observed_at = EXCLUDED.observed_at,
               observed_ns = EXCLUDED.observed_ns, importance = EXCLUDED.importance,
               source = EXCLUDED.source, source_turn_ids = EXCLUDED.source_turn_ids,
               embedding = EXCLUDED.embedding",
        )
        .await
        .map_err(pg_error)?;
    let times: Vec<(DateTime<Utc>, i32)> = rows
        .iter()
        .map(|(_, f)| split_time(f.observed_at))
        .collect();
    let ids: Vec<Uuid> = rows.iter().map(|(_, f)| f.id).collect();
    let sessions: Vec<&str> = rows.iter().map(|(s, _)| *s).collect();
    let kinds: Vec<&str> = rows.iter().map(|(_, f)| f.kind.as_str()).collect();
    let keys: Vec<Option<&str>> = rows.iter().map(|(_, f)| f.key.as_deref()).collect();
    let bodies: Vec<&str> = rows.iter().map(|(_, f)| f.text.as_str()).collect();
    let data: Vec<Option<&serde_json::Value>> = rows.iter().map(|(_, f)| f.data.as_ref()).collect();
    let at: Vec<DateTime<Utc>> = times.iter().map(|t| t.0).collect();
    let ns: Vec<i32> = times.iter().map(|t| t.1).collect();
    let importance: Vec<f32> = rows.iter().map(|(_, f)| f.importance).collect();
    let sources: Vec<&str> = rows.iter().map(|(_, f)| f.source.as_str()).collect();
    let turn_ids: Vec<String> = rows
        .iter()
        .map(|(_, f)| joined_ids(&f.source_turn_ids))
        .collect();
    let vectors: Vec<Option<String>> = rows
        .iter()
        .map(|(_, f)| embeddings.get(&f.id).map(|v| array_literal(v)))
        .collect();
    tx.execute(
        &stmt,
        &[
            &ids,
            &sessions,
            &kinds,
            &keys,
            &bodies,
            &data,
            &at,
            &ns,
            &importance,
            &sources,
            &turn_ids,
            &vectors,
        ],
    )
    .await
    .map_err(pg_error)?;
    Ok(())
}

/// A vector as a Postgres array literal (`{0.1,-0.2}`), which the statements cast to `real[]` and
/// on to `vector`: a list of arrays cannot be sent as one `real[][]` parameter when some are NULL
/// (nor a list of vectors, which tokio-postgres has no type for). Rust writes
/// the shortest text that reads back as the same f32, so the value round-trips exactly, except
/// subnormal components (below 1.2e-38), which Postgres refuses to read as `real` ("value out of
/// range: underflow"): they are written as 0, a change far below any similarity that matters.
fn array_literal(vector: &[f32]) -> String {
    let mut text = String::with_capacity(vector.len() * 12 + 2);
    text.push('{');
    for (i, x) in vector.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        let x = if x.is_subnormal() { 0.0 } else { *x };
        // `write!` to a String cannot fail.
        let _ = write!(text, "{x}");
    }
    text.push('}');
    text
}

/// Facts and episodes without an embedding (the backfill's reads).
const PENDING_SQL: &str = "embedding IS NULL AND kind IN ('fact', 'episode')";

/// The first `limit` items without an embedding, by write order, and how many there are.
pub(super) async fn unembedded(
    client: &deadpool_postgres::Object,
    limit: usize,
) -> Result<Unembedded, MemoryError> {
    let count = client
        .prepare_cached(&format!(
            "SELECT count(*) FROM agentwall_facts WHERE {PENDING_SQL}"
        ))
        .await
        .map_err(pg_error)?;
    let first = client
        .prepare_cached(&format!(
            "SELECT session_id, id, body FROM agentwall_facts WHERE {PENDING_SQL}
             ORDER BY seq LIMIT $1"
        ))
        .await
        .map_err(pg_error)?;
    let total: i64 = client
        .query_one(&count, &[])
        .await
        .map_err(pg_error)?
        .get(0);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut items = Vec::new();
    for row in client.query(&first, &[&limit]).await.map_err(pg_error)? {
        let session: String = row.try_get(0).map_err(corrupt)?;
        let session = SessionId::parse(&session).map_err(corrupt)?;
        items.push((
            session,
            row.try_get(1).map_err(corrupt)?,
            row.try_get(2).map_err(corrupt)?,
        ));
    }
    Ok(Unembedded {
        items,
        total: unsigned(total)?,
    })
}

/// Stores embeddings of `session`'s items.
pub(super) async fn set_embeddings(
    client: &deadpool_postgres::Object,
    session: &SessionId,
    vectors: &[(Uuid, Arc<[f32]>)],
) -> Result<(), MemoryError> {
    let stmt = client
        .prepare_cached(
            "UPDATE agentwall_facts AS f SET embedding = r.e::real[]::vector
             FROM unnest($2::uuid[], $3::text[]) AS r(id, e)
             WHERE f.session_id = $1 AND f.id = r.id AND f.id = ANY($2::uuid[])",
        )
        .await
        .map_err(pg_error)?;
    let ids: Vec<Uuid> = vectors.iter().map(|(id, _)| *id).collect();
    let literals: Vec<String> = vectors.iter().map(|(_, v)| array_literal(v)).collect();
    client
        .execute(&stmt, &[&session.as_str(), &ids, &literals])
        .await
        .map_err(pg_error)?;
    Ok(())
}

/// Semantic recall reads a session's facts (or episodes) exactly, every embedded one compared
/// with the query, up to this many of that kind; beyond, through the HNSW index of their
/// dimension ([`ensure_vector_index`]). Measured on PostgreSQL 18 with pgvector 0.8 (384
/// dimensions, docs/results/semantic-recall.md): the exact read costs about 0.75 µs an item (76 ms
/// at 100,000), the index about 2 ms whatever the size, so they meet near 2,000-3,000 items. A
/// small session must not go through the index: the graph holds every session's items and a
/// filtered walk for a few of them reads far more than they are, and may stop short.
pub(super) const SIMILAR_EXACT_UP_TO: i64 = 2_000;

/// The statement of [`similar`] for vectors of `dims` dimensions, which its expressions name so
/// that they match the partial HNSW index of that dimension. Parameters: `$1` the session, `$2`
/// the query's vector (`real[]`), `$3` the pool, `$4`/`$5` whether facts/episodes are wanted,
/// `$6` the lexical candidates' ids, `$7` exact reads whatever the sizes (the retry of a short
/// index read).
///
/// One row for the session (its item counts, NULL part) when nothing is found; else one per item:
/// part 2 (3) the facts (episodes) most similar to the query, at most `$3`, best first; part 4
/// (5) each lexical candidate that is a fact (episode) with an embedding, however far down, so
/// that fusion ranks it by both scores as the embedded store does (`ranking::candidates`).
/// Similarity is the dot product of unit vectors (pgvector's `<#>` is its negation). Each kind is
/// read one of two ways, chosen by the session's count of that kind (a condition on the outer row
/// only, so Postgres runs one branch and skips the other):
/// - up to [`SIMILAR_EXACT_UP_TO`] items, or with `$7`: every embedded item of the session,
///   through the session's B-tree, sorted (ties: the later written first); the `OFFSET 0` fence
///   keeps the order out of the scan, which Postgres would otherwise take from the HNSW index
///   (and a filtered walk for a small session finds a few of its items, not all);
/// - beyond, the kind's HNSW index walked in distance order with pgvector's iterative scan
///   (`hnsw.iterative_scan`, set per connection: [`server_options`]), keeping the session's items.
///   The session is compared as an expression no B-tree covers, so that the planner, which
///   cannot tell a large session from a small one in a generic plan, does not take the B-tree and
///   sort a hundred thousand items.
///
/// The lexical candidates (parts 4 and 5) are read by id, through the primary key: the session is
/// again compared as an expression, or Postgres read a large session whole through its index
/// to keep the few ids (150 against 14 ms at 100,000 items, measured).
pub(super) fn similar_sql(dims: usize) -> String {
    // The query's vector as a sub-select, which Postgres computes once (an InitPlan): a cast of
    // the parameter in a generic plan is computed again for every row compared (16 against 11 ms
    // for a session of 2,000 facts and 8,000 episodes, measured). The HNSW scan takes it as its
    // key all the same.
    let distance = format!("f.embedding::vector({dims}) <#> (SELECT $2::real[]::vector({dims}))");
    let columns = FACT_COLUMNS;
    let top = |part: u8, kind: &str, wanted: &str, count: &str| {
        format!(
            "(SELECT {part} AS part, {columns}, -({distance}) AS similarity
              FROM (SELECT * FROM agentwall_facts
                    WHERE session_id = $1 AND kind = '{kind}' OFFSET 0) AS f
              WHERE {wanted} AND ($7 OR coalesce(s.{count}, 0) <= {SIMILAR_EXACT_UP_TO})
                AND vector_dims(f.embedding) = {dims}
              ORDER BY {distance}, f.seq DESC LIMIT $3)
             UNION ALL
             (SELECT {part}, {columns}, -({distance})
              FROM agentwall_facts AS f
              WHERE {wanted} AND NOT $7 AND coalesce(s.{count}, 0) > {SIMILAR_EXACT_UP_TO}
                AND (f.session_id || '') = $1 AND f.kind = '{kind}'
                AND vector_dims(f.embedding) = {dims}
              ORDER BY {distance} LIMIT $3)"
        )
    };
    let facts = top(2, "fact", "$4", "fact_count");
    let episodes = top(3, "episode", "$5", "episode_count");
    format!(
        "SELECT coalesce(s.fact_count, 0) AS facts_held, coalesce(s.episode_count, 0) AS episodes_held,
                found.*
         FROM (VALUES (1)) AS one(x)
         LEFT JOIN agentwall_sessions AS s ON s.session_id = $1
         LEFT JOIN LATERAL (
             {facts}
             UNION ALL
             {episodes}
             UNION ALL
             (SELECT CASE WHEN f.kind = 'episode' THEN 5 ELSE 4 END, {columns}, -({distance})
              FROM agentwall_facts AS f
              WHERE f.id = ANY($6::uuid[]) AND (f.session_id || '') = $1
                AND (f.kind = 'fact' AND $4 OR f.kind = 'episode' AND $5)
                AND vector_dims(f.embedding) = {dims})
         ) AS found ON true"
    )
}

/// The items of `session` most similar to `vector`: `(facts, episodes)`, best first, at most
/// `pool` of each (none of a list not `wanted`), then the similarity of each item of `also` that
/// has an embedding, however far down (a lexical candidate is ranked by both scores, as the
/// embedded store ranks it: `ranking::candidates`). An index read that comes back short (the
/// session's items are too few among the index's for the iterative scan's budget, many are not
/// embedded yet, or the index is not built) is done again exactly.
pub(super) async fn similar(
    client: &deadpool_postgres::Object,
    session: &SessionId,
    vector: &[f32],
    pool: usize,
    wanted: (bool, bool),
    also: &[Uuid],
) -> Result<Similar, MemoryError> {
    let stmt = client
        .prepare_cached(&similar_sql(vector.len()))
        .await
        .map_err(pg_error)?;
    let pool = i64::try_from(pool).unwrap_or(i64::MAX);
    let mut exact = false;
    loop {
        let rows = client
            .query(
                &stmt,
                &[
                    &session.as_str(),
                    &vector,
                    &pool,
                    &wanted.0,
                    &wanted.1,
                    &also,
                    &exact,
                ],
            )
            .await
            .map_err(pg_error)?;
        let (mut facts, mut episodes) = (Vec::new(), Vec::new());
        let (mut top_facts, mut top_episodes) = (0, 0);
        let mut held = (0, 0);
        for row in &rows {
            held = (
                row.try_get::<_, i64>("facts_held").map_err(corrupt)?,
                row.try_get::<_, i64>("episodes_held").map_err(corrupt)?,
            );
            let Some(part) = row.try_get::<_, Option<i32>>("part").map_err(corrupt)? else {
                continue;
            };
            let similarity: Option<f64> = row.try_get("similarity").map_err(corrupt)?;
            let found = (fact_from_row(row)?, similarity.unwrap_or(0.0));
            match part {
                2 | 4 => facts.push(found),
                _ => episodes.push(found),
            }
            match part {
                2 => top_facts += 1,
                3 => top_episodes += 1,
                _ => {}
            }
        }
        let short = |wanted: bool, held: i64, got: i64| {
            wanted && held > SIMILAR_EXACT_UP_TO && got < pool.min(held)
        };
        if !exact && (short(wanted.0, held.0, top_facts) || short(wanted.1, held.1, top_episodes)) {
            exact = true;
            continue;
        }
        let large = |wanted: bool, held: i64| wanted && held > SIMILAR_EXACT_UP_TO;
        return Ok(Similar {
            facts,
            episodes,
            large: large(wanted.0, held.0) || large(wanted.1, held.1),
        });
    }
}

/// What [`similar`] found.
pub(super) struct Similar {
    /// Facts, best first, then the lexical candidates' similarities.
    pub facts: Vec<(Fact, f64)>,
    /// Episodes, the same way.
    pub episodes: Vec<(Fact, f64)>,
    /// Whether a wanted kind of the session has more items than [`SIMILAR_EXACT_UP_TO`]: its
    /// reads go through the HNSW index, which must exist.
    pub large: bool,
}

/// The name of the HNSW index of `kind`'s `dims`-dimensional embeddings.
fn vector_index_name(kind: &str, dims: usize) -> String {
    format!("agentwall_facts_embedding_hnsw_{dims}_{kind}")
}

/// pgvector indexes vectors of up to 2,000 dimensions with HNSW; larger ones are read exactly.
pub(super) const HNSW_MAX_DIMS: usize = 2_000;

/// Makes sure the HNSW indexes of `dims`-dimensional embeddings exist: one partial index per kind
/// (facts, episodes) over the items of that dimension, by inner product, which large sessions'
/// semantic recall walks ([`similar_sql`]). Per kind, because a walk keeps only the items its
/// query asks for: through one index of both kinds, the facts' read (a fifth of a session, as
/// turns add more episodes than facts) walked five times as far (54 ms against 10 ms for the
/// episodes at 100,000 items, measured). They are built only once a session has grown past
/// [`SIMILAR_EXACT_UP_TO`] items of a kind: every write of a vector then also inserts it in a
/// graph, about 1.5 ms an item against 0.07 ms without (1,000 items into 5,000, measured), a
/// cost deployments of small sessions need not pay. Built `CONCURRENTLY`, so writes go on
/// meanwhile (on a large table it takes a minute or more: 44 s for 100,000 items on two cores);
/// until they are valid, recall reads exactly. An invalid one (a build that was interrupted) is
/// dropped and built again. Runs on a connection of its own with no statement timeout. Several
/// servers may race: the loser's error is the caller's to log. Returns how many were built.
pub(super) async fn ensure_vector_index(
    database_url: &str,
    dims: usize,
) -> Result<usize, MemoryError> {
    if dims == 0 || dims > HNSW_MAX_DIMS {
        return Ok(0);
    }
    let mut config: tokio_postgres::Config =
        database_url.parse().map_err(|e| MemoryError::Backend {
            dependency: DEPENDENCY,
            reason: format!("the database URL is invalid: {e}"),
        })?;
    config.application_name("agent-server index build");
    config.options(
        "-c statement_timeout=0 -c client_min_messages=warning -c maintenance_work_mem=256MB",
    );
    let (client, connection) = config.connect(NoTls).await.map_err(pg_error)?;
    let connection = crate::task::server_work(connection);
    let result = async {
        let mut built = 0;
        for kind in ["fact", "episode"] {
            let name = vector_index_name(kind, dims);
            let valid: Option<bool> = client
                .query_opt(
                    "SELECT i.indisvalid FROM pg_class AS c JOIN pg_index AS i
                       ON i.indexrelid = c.oid
                     WHERE c.relname = $1",
                    &[&name],
                )
                .await?
                .map(|row| row.get(0));
            match valid {
                Some(true) => continue,
                Some(false) => {
                    client
                        .batch_execute(&format!("DROP INDEX CONCURRENTLY IF EXISTS {name}"))
                        .await?;
                }
                None => {}
            }
            client
                .batch_execute(&format!(
                    "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON agentwall_facts
                     USING hnsw ((embedding::vector({dims})) vector_ip_ops)
                     WHERE kind = '{kind}' AND vector_dims(embedding) = {dims}"
                ))
                .await?;
            built += 1;
        }
        Ok(built)
    }
    .await
    .map_err(pg_error);
    drop(client);
    let _ = connection.await;
    result
}

/// [`update_facts`]'s restatements that keep their text (the `ANY` as in [`RETIRE_SQL`]).
const RESTATE_SQL: &str = "UPDATE agentwall_facts AS f SET observed_at = r.observed_at,
      observed_ns = r.observed_ns, importance = r.importance, source = r.source,
      source_turn_ids = string_to_array(r.ids, ',')
    FROM unnest($1::uuid[], $2::timestamptz[], $3::integer[], $4::real[],
                $5::text[], $6::text[]) AS r(id, observed_at, observed_ns, importance, source, ids)
    WHERE f.id = r.id AND f.id = ANY($1::uuid[])";

/// [`update_facts`]'s restatements that change their text (the `ANY` as in [`RETIRE_SQL`]).
const RESTATE_TEXT_SQL: &str = "UPDATE agentwall_facts AS f SET body = r.body, embedding = NULL,
      observed_at = r.observed_at, observed_ns = r.observed_ns, importance = r.importance,
      source = r.source, source_turn_ids = string_to_array(r.ids, ',')
    FROM unnest($1::uuid[], $2::timestamptz[], $3::integer[], $4::real[],
                $5::text[], $6::text[], $7::text[])
         AS r(id, observed_at, observed_ns, importance, source, ids, body)
    WHERE f.id = r.id AND f.id = ANY($1::uuid[])";

/// Restates facts in place: their time, importance and source, and their text only where it
/// changed. Those that keep their text change no indexed column, so Postgres updates them HOT
/// (a new version on the same page, no new index entries) when the page has room: no new
/// entries in the full-text index, which would cost one per word. Setting `body` would make
/// Postgres compute `tsv` again even for the same text, hence the two statements.
async fn update_facts(
    tx: &deadpool_postgres::Transaction<'_>,
    updates: &[(Uuid, FactUpdate)],
) -> Result<(), MemoryError> {
    let (same, changed): (Vec<_>, Vec<_>) = updates.iter().partition(|(_, u)| u.text.is_none());
    if !same.is_empty() {
        let stmt = tx.prepare_cached(RESTATE_SQL).await.map_err(pg_error)?;
        let c = UpdateColumns::of(&same);
        tx.execute(
            &stmt,
            &[&c.ids, &c.at, &c.ns, &c.importance, &c.sources, &c.turn_ids],
        )
        .await
        .map_err(pg_error)?;
    }
    if !changed.is_empty() {
        let stmt = tx
            .prepare_cached(RESTATE_TEXT_SQL)
            .await
            .map_err(pg_error)?;
        let c = UpdateColumns::of(&changed);
        tx.execute(
            &stmt,
            &[
                &c.ids,
                &c.at,
                &c.ns,
                &c.importance,
                &c.sources,
                &c.turn_ids,
                &c.bodies,
            ],
        )
        .await
        .map_err(pg_error)?;
    }
    Ok(())
}

/// [`update_facts`]'s parameters: one array per column.
struct UpdateColumns<'u> {
    ids: Vec<Uuid>,
    at: Vec<DateTime<Utc>>,
    ns: Vec<i32>,
    importance: Vec<f32>,
    sources: Vec<&'static str>,
    /// Each fact's turn ids, joined (see [`joined_ids`]).
    turn_ids: Vec<String>,
    /// The new texts of the updates that change it.
    bodies: Vec<&'u str>,
}

impl<'u> UpdateColumns<'u> {
    fn of(updates: &[&'u (Uuid, FactUpdate)]) -> Self {
        let mut columns = Self {
            ids: Vec::with_capacity(updates.len()),
            at: Vec::with_capacity(updates.len()),
            ns: Vec::with_capacity(updates.len()),
            importance: Vec::with_capacity(updates.len()),
            sources: Vec::with_capacity(updates.len()),
            turn_ids: Vec::with_capacity(updates.len()),
            bodies: Vec::new(),
        };
        for (id, update) in updates {
            let (at, ns) = split_time(update.observed_at);
            columns.ids.push(*id);
            columns.at.push(at);
            columns.ns.push(ns);
            columns.importance.push(update.importance);
            columns.sources.push(update.source.as_str());
            columns.turn_ids.push(joined_ids(&update.source_turn_ids));
            columns.bodies.extend(update.text.as_deref());
        }
        columns
    }
}

/// Increments the turn numbers of `sessions` (existing rows only), outside any batch: what
/// makes every server's in-process working memory of them stale (`recent.rs`).
pub(super) async fn bump_turn_seq(
    client: &deadpool_postgres::Object,
    sessions: &[&str],
) -> Result<(), MemoryError> {
    let stmt = client
        .prepare_cached(
            "UPDATE agentwall_sessions SET turn_seq = turn_seq + 1
             WHERE session_id = ANY($1::text[])",
        )
        .await
        .map_err(pg_error)?;
    client
        .execute(&stmt, &[&sessions])
        .await
        .map(drop)
        .map_err(pg_error)
}

/// Bumps the epoch (creating the session row, locked until the transaction ends) and deletes the
/// session's facts. Returns how many facts were deleted.
pub(super) async fn reset(
    tx: &deadpool_postgres::Transaction<'_>,
    session: &SessionId,
) -> Result<u64, MemoryError> {
    let bump = tx
        .prepare_cached(
            "INSERT INTO agentwall_sessions AS s (session_id, epoch) VALUES ($1, 1)
             ON CONFLICT (session_id) DO UPDATE SET epoch = s.epoch + 1",
        )
        .await
        .map_err(pg_error)?;
    tx.execute(&bump, &[&session.as_str()])
        .await
        .map_err(pg_error)?;
    let delete = tx
        // `kind = 'fact' OR kind <> 'fact'` is always true: it lets the planner combine the
        // session's two indexes (migration 3), which each cover one side.
        .prepare_cached(
            "DELETE FROM agentwall_facts
             WHERE session_id = $1 AND (kind = 'fact' OR kind <> 'fact')",
        )
        .await
        .map_err(pg_error)?;
    tx.execute(&delete, &[&session.as_str()])
        .await
        .map_err(pg_error)
}

/// What recall needs from Postgres, read from one snapshot.
pub(super) struct RecallRows {
    pub epoch: u64,
    /// The session's last turn number (`agentwall_sessions.turn_seq`), from the same snapshot:
    /// what working memory is current for (see `recent.rs`).
    pub turn_seq: u64,
    /// Standing items, oldest first.
    pub standing: Vec<Fact>,
    /// Lexical fact candidates with their BM25 score, best first.
    pub candidates: Vec<(Fact, f64)>,
    /// Lexical episode candidates with their BM25 score, best first.
    pub episodes: Vec<(Fact, f64)>,
}

/// Sessions with more items of a list (facts, or episodes) than this are searched through the
/// list's full-text index with the query's words; smaller ones are read whole (see
/// [`RECALL_SQL`]). About where the two cost the same: reading 1,000 facts took 1.3 ms against
/// 0.3 ms for the search, 40 facts 0.09 ms against up to 0.3 ms.
pub(super) const SEARCH_FROM: i64 = 256;

/// The statement of [`recall`]. Parameters, one array element per read: `$1` session ids, `$2`
/// words for `to_tsquery('english', ...)`, OR-ed with ` | ` (NULL matches nothing), `$3` how many
/// fact candidates the read takes (0: none, and no search), `$4` how many episode candidates.
/// Rows come in parts: part 0 is the query's own lexemes (`to_tsvector` of its words, in `tsv`:
/// what the matches are scored against), part 1 the standing items (oldest first, numbered `pos`),
/// part 2 every fact that holds a word of the query and part 3 every such episode, each with its
/// row number `seq` and its `tsv`, unranked: [`recall`] ranks them ([`super::matches`]).
///
/// Each row is tagged with the read's position `ord` and the session's epoch, last turn number
/// and counts of facts and episodes (BM25's document counts); the LEFT JOIN keeps one row (with a
/// NULL part) for a read that returns nothing else, so every epoch and turn number comes back.
///
/// The sessions' rows are read through the primary key, whatever the statistics say: the `ANY`
/// repeats the join's ids for the planner, which otherwise scanned every session's row while
/// the table had no statistics (a fresh database, until autovacuum's first `ANALYZE`).
pub(super) static RECALL_SQL: LazyLock<String> = LazyLock::new(|| {
    // Part 0 is no item: NULL in every item column (typed by the parts below it).
    let no_fact = FACT_COLUMNS
        .split(", ")
        .map(|column| format!("NULL AS {column}"))
        .collect::<Vec<_>>()
        .join(", ");
    let facts = matches_of(2, "fact", "s.fact_count", "q.pool");
    let episodes = matches_of(3, "episode", "s.episode_count", "q.episode_pool");
    format!(
        "SELECT q.ord, coalesce(s.epoch, 0) AS epoch, coalesce(s.turn_seq, 0) AS turn_seq,
                coalesce(s.fact_count, 0) AS fact_count,
                coalesce(s.episode_count, 0) AS episode_count,
                items.*
         FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) WITH ORDINALITY
              AS q(session_id, tsquery, pool, episode_pool, ord)
         LEFT JOIN agentwall_sessions AS s
                ON s.session_id = q.session_id AND s.session_id = ANY($1::text[])
         LEFT JOIN LATERAL (
             (SELECT 0 AS part, 0::bigint AS pos, {no_fact}, NULL::bigint AS seq,
                     to_tsvector('english'::regconfig, q.tsquery) AS tsv
              WHERE q.tsquery IS NOT NULL AND (q.pool > 0 OR q.episode_pool > 0))
             UNION ALL
             (SELECT 1, row_number() OVER (ORDER BY observed_at, observed_ns, seq),
                     {FACT_COLUMNS}, seq, NULL
              FROM agentwall_facts
              WHERE session_id = q.session_id AND kind IN ('rule', 'reminder'))
             UNION ALL
             ({facts})
             UNION ALL
             ({episodes})
         ) AS items ON true
         ORDER BY q.ord, items.part, items.pos"
    )
});

/// A read's tsquery: its words through `to_tsquery('english', ...)`; NULL matches nothing.
const READ_QUERY: &str = "to_tsquery('english'::regconfig, q.tsquery)";

/// One part of [`RECALL_SQL`]: the session's items of `kind` that hold a word of the query, when
/// `pool` asks for any, through the list's session-scoped GIN index (migrations 3 and 8), one of
/// two ways chosen by the session's count of them, `count` (a condition on the outer row only, so
/// Postgres runs one branch and skips the other):
/// - up to [`SEARCH_FROM`] items, all of them are read through the session's entry of the index
///   and matched (the `OFFSET 0` fence keeps the query's words out of the index scan): a word is
///   a key of the index across all sessions, and walking the posting trees of the query's common
///   words costs more than reading a small session, the more so the more other sessions hold;
/// - beyond, the index is searched with the session AND the query's words, so the cost follows
///   the session's matches, not its size. The match is written against the query's expression
///   itself, not the joined `t`, so that it is a restriction of the table, which the planner
///   answers with the index.
///
/// Either way a recall's cost depends on its own session only.
fn matches_of(part: u8, kind: &str, count: &str, pool: &str) -> String {
    format!(
        "SELECT {part}, 0, {FACT_COLUMNS}, seq, tsv
         FROM (SELECT * FROM agentwall_facts
               WHERE session_id = q.session_id AND kind = '{kind}'
               OFFSET 0) AS session_items,
              {READ_QUERY} AS t
         WHERE {pool} > 0 AND coalesce({count}, 0) <= {SEARCH_FROM}
           AND tsv @@ t
         UNION ALL
         SELECT {part}, 0, {FACT_COLUMNS}, seq, tsv
         FROM agentwall_facts
         WHERE {pool} > 0 AND coalesce({count}, 0) > {SEARCH_FROM}
           AND session_id = q.session_id AND kind = '{kind}'
           AND tsv @@ {READ_QUERY}"
    )
}

/// One recall's read of Postgres.
pub(super) struct RecallRead {
    pub session: SessionId,
    /// The query's words for `to_tsquery`, OR-ed; `None` when it has none.
    pub tsquery: Option<String>,
    /// How many lexical fact candidates to return at most.
    pub pool_size: usize,
    /// How many lexical episode candidates to rank at most.
    pub episode_pool_size: usize,
    /// Working memory as the recall expects to find it, when the recall leaves out the episodes
    /// it holds.
    pub held: Option<HeldEpisodes>,
}

/// What lets a recall that leaves out the episodes working memory holds
/// ([`crate::memory::RecallQuery::leave_out_working`]) skip them before they are read into
/// facts: working memory as the in-process mirror (`recent.rs`) has it for one `(epoch,
/// turn_seq)` of the session, live at the recall's time. Used only when Postgres shows that
/// same pair, and then the recall takes these items as its working memory; otherwise it reads
/// working memory and leaves the held episodes out itself.
pub(super) struct HeldEpisodes {
    pub epoch: u64,
    pub turn_seq: u64,
    pub working: WorkingMemory,
    /// How many of the other episodes to read at most (the pool the recall ranks).
    pub pool: usize,
}

impl HeldEpisodes {
    /// Whether the episode of `row` is one of `working`'s items, read from the row's columns
    /// without making a fact of it.
    fn holds(&self, row: &Row) -> Result<bool, MemoryError> {
        let at = observed_at_of(row)?;
        let text: &str = row.try_get("body").map_err(corrupt)?;
        let role = || {
            row.try_get::<_, Option<tokio_postgres::types::Json<EpisodeData>>>("data")
                .ok()
                .flatten()
                .map(|data| data.0.role)
        };
        Ok(self.working.holds_said(text, at, role))
    }
}

/// Reads, for each of `reads`, the epoch, the standing items and the lexical candidates, in ONE
/// statement: a statement sees one snapshot, so each epoch returned is the one its facts belong
/// to, and the server handles one message for the whole batch instead of one per recall, which
/// was most of Postgres's CPU time per turn under load. One [`RecallRows`] per read, in order.
pub(super) async fn recall(
    client: &deadpool_postgres::Object,
    reads: &[&RecallRead],
) -> Result<Vec<RecallRows>, MemoryError> {
    let stmt = client.prepare_cached(&RECALL_SQL).await.map_err(pg_error)?;
    let sessions: Vec<&str> = reads.iter().map(|r| r.session.as_str()).collect();
    let queries: Vec<Option<&str>> = reads.iter().map(|r| r.tsquery.as_deref()).collect();
    let pool = |size: usize| i64::try_from(size).unwrap_or(i64::MAX);
    let pools: Vec<i64> = reads.iter().map(|r| pool(r.pool_size)).collect();
    let episode_pools: Vec<i64> = reads.iter().map(|r| pool(r.episode_pool_size)).collect();
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
        [&sessions, &queries, &pools, &episode_pools];
    let rows = client.query(&stmt, &params).await.map_err(pg_error)?;
    /// One read's rows, before its matches are ranked.
    #[derive(Default)]
    struct Read<'r> {
        epoch: u64,
        turn_seq: u64,
        fact_count: u64,
        episode_count: u64,
        query: Lexemes<'r>,
        standing: Vec<Fact>,
        facts: Vec<Match<'r, &'r Row>>,
        episodes: Vec<Match<'r, &'r Row>>,
    }
    let mut read_rows: Vec<Read<'_>> = reads.iter().map(|_| Read::default()).collect();
    for row in &rows {
        let ord: i64 = row.try_get("ord").map_err(corrupt)?;
        let read = usize::try_from(ord)
            .ok()
            .and_then(|o| o.checked_sub(1))
            .and_then(|o| read_rows.get_mut(o))
            .ok_or_else(|| corrupt(format!("recall row for read {ord} of {}", reads.len())))?;
        read.epoch = unsigned(row.try_get("epoch").map_err(corrupt)?)?;
        read.turn_seq = unsigned(row.try_get("turn_seq").map_err(corrupt)?)?;
        read.fact_count = unsigned(row.try_get("fact_count").map_err(corrupt)?)?;
        read.episode_count = unsigned(row.try_get("episode_count").map_err(corrupt)?)?;
        match row.try_get::<_, Option<i32>>("part").map_err(corrupt)? {
            Some(0) => read.query = row.try_get("tsv").map_err(corrupt)?,
            Some(1) => read.standing.push(fact_from_row(row)?),
            Some(2) => read.facts.push(match_from_row(row)?),
            Some(3) => read.episodes.push(match_from_row(row)?),
            Some(part) => return Err(corrupt(format!("recall row of unknown part {part}"))),
            None => {}
        }
    }
    // Only the best of each list are read into facts.
    let facts = |ranked: Vec<(&Row, f64)>| -> Result<Vec<(Fact, f64)>, MemoryError> {
        ranked
            .into_iter()
            .map(|(row, score)| Ok((fact_from_row(row)?, score)))
            .collect()
    };
    // The best episodes but those working memory holds, when that is known (see
    // `HeldEpisodes`); else all, the recall leaving those out itself.
    let episodes = |ranked: Vec<(&Row, f64)>, read: &Read<'_>, asked: &RecallRead| {
        let Some(held) = asked
            .held
            .as_ref()
            .filter(|held| (held.epoch, held.turn_seq) == (read.epoch, read.turn_seq))
        else {
            return facts(ranked);
        };
        let mut kept = Vec::with_capacity(held.pool.min(ranked.len()));
        for (row, score) in ranked {
            if kept.len() == held.pool {
                break;
            }
            if !held.holds(row)? {
                kept.push((fact_from_row(row)?, score));
            }
        }
        Ok(kept)
    };
    read_rows
        .into_iter()
        .zip(reads)
        .map(|(mut read, asked)| {
            let ranked_episodes = matches::ranked(
                std::mem::take(&mut read.episodes),
                &read.query,
                read.episode_count,
                asked.episode_pool_size,
            );
            Ok(RecallRows {
                episodes: episodes(ranked_episodes, &read, asked)?,
                candidates: facts(matches::ranked(
                    read.facts,
                    &read.query,
                    read.fact_count,
                    asked.pool_size,
                ))?,
                epoch: read.epoch,
                turn_seq: read.turn_seq,
                standing: read.standing,
            })
        })
        .collect()
}

/// A lexical match of [`RECALL_SQL`]: its row, with its time, row number and lexemes.
fn match_from_row(row: &Row) -> Result<Match<'_, &Row>, MemoryError> {
    Ok(Match {
        item: row,
        observed_at: observed_at_of(row)?,
        seq: row.try_get("seq").map_err(corrupt)?,
        lexemes: row.try_get("tsv").map_err(corrupt)?,
    })
}

/// Every long-term item of the session, newest `observed_at` first.
pub(super) async fn all_facts(
    client: &deadpool_postgres::Object,
    session: &SessionId,
) -> Result<Vec<Fact>, MemoryError> {
    // The always-true `kind` condition lets the planner combine the session's two indexes, as
    // in `reset`.
    let stmt = client
        .prepare_cached(&format!(
            "SELECT {FACT_COLUMNS} FROM agentwall_facts
             WHERE session_id = $1 AND (kind = 'fact' OR kind <> 'fact')
             ORDER BY observed_at DESC, observed_ns DESC, seq DESC"
        ))
        .await
        .map_err(pg_error)?;
    client
        .query(&stmt, &[&session.as_str()])
        .await
        .map_err(pg_error)?
        .iter()
        .map(fact_from_row)
        .collect()
}

/// Whether transaction `xid` committed: `Some(true)` committed, `Some(false)` aborted, `None` still
/// running or unknown.
pub(super) async fn committed(
    client: &deadpool_postgres::Object,
    xid: i64,
) -> Result<Option<bool>, MemoryError> {
    let row = client
        .query_one("SELECT txid_status($1)", &[&xid])
        .await
        .map_err(pg_error)?;
    let status: Option<String> = row.try_get(0).map_err(corrupt)?;
    Ok(match status.as_deref() {
        Some("committed") => Some(true),
        Some("aborted") => Some(false),
        _ => None,
    })
}

/// A liveness probe for `/readyz`.
pub(super) async fn ping(pool: &Pool) -> Result<(), MemoryError> {
    let client = client(pool).await?;
    client
        .simple_query("SELECT 1")
        .await
        .map(drop)
        .map_err(pg_error)
}

fn fact_from_row(row: &Row) -> Result<Fact, MemoryError> {
    let kind: String = row.try_get("kind").map_err(corrupt)?;
    Ok(Fact {
        id: row.try_get("id").map_err(corrupt)?,
        kind: kind.parse::<FactKind>().map_err(corrupt)?,
        key: row.try_get("fact_key").map_err(corrupt)?,
        text: row.try_get("body").map_err(corrupt)?,
        data: row.try_get("data").map_err(corrupt)?,
        observed_at: observed_at_of(row)?,
        importance: row.try_get("importance").map_err(corrupt)?,
        source: source_of(row)?,
        source_turn_ids: row.try_get("source_turn_ids").map_err(corrupt)?,
    })
}

/// Turn ids as one text a statement splits again with `string_to_array(ids, ',')`: an array of
/// arrays cannot travel through `unnest`, which would flatten it. Ids hold no comma (the
/// `X-Turn-Id` header separates them with commas); an empty list is an empty text, which
/// `string_to_array` makes an empty array.
fn joined_ids(ids: &[String]) -> String {
    ids.join(",")
}

/// A row's `observed_at` and `observed_ns`, joined (see [`split_time`]).
fn observed_at_of(row: &Row) -> Result<DateTime<Utc>, MemoryError> {
    let micros: DateTime<Utc> = row.try_get("observed_at").map_err(corrupt)?;
    let nanos: i32 = row.try_get("observed_ns").map_err(corrupt)?;
    Ok(joined_time(micros, nanos))
}

fn source_of(row: &Row) -> Result<FactSource, MemoryError> {
    let source: &str = row.try_get("source").map_err(corrupt)?;
    source.parse::<FactSource>().map_err(corrupt)
}

/// Postgres `text` cannot hold U+0000, and a chat message may contain it: rather than fail the whole
/// turn, the character is stored as U+FFFD, the usual stand-in for an unrepresentable character.
fn without_nul(s: String) -> String {
    if s.contains('\0') {
        s.replace('\0', "\u{fffd}")
    } else {
        s
    }
}

/// Splits a time into whole microseconds (what `timestamptz` holds exactly) and the remaining
/// nanoseconds. Truncating here, not in the driver, keeps the split exact before 2000-01-01 too.
fn split_time(at: DateTime<Utc>) -> (DateTime<Utc>, i32) {
    let nanos = at.timestamp_subsec_nanos() % 1000;
    let nanos_i32 = i32::try_from(nanos).unwrap_or(0);
    (
        at - chrono::Duration::nanoseconds(i64::from(nanos)),
        nanos_i32,
    )
}

/// The inverse of [`split_time`].
fn joined_time(micros: DateTime<Utc>, nanos: i32) -> DateTime<Utc> {
    micros + chrono::Duration::nanoseconds(i64::from(nanos))
}

fn unsigned(v: i64) -> Result<u64, MemoryError> {
    u64::try_from(v).map_err(|_| corrupt(format!("negative counter {v}")))
}

fn corrupt(e: impl std::fmt::Display) -> MemoryError {
    MemoryError::Corrupt {
        dependency: DEPENDENCY,
        reason: e.to_string(),
    }
}

/// Classifies a driver error: connection trouble and a server that is shutting down, starting up
/// or out of resources are `Unavailable` (503, retry later); anything else is a `Backend` failure.
pub(super) fn pg_error(e: tokio_postgres::Error) -> MemoryError {
    let unavailable = match e.as_db_error() {
        Some(db) => {
            let code = db.code().code();
            // 08: connection exception; 53: insufficient resources; 57P0x: shutdown / cannot
            // connect now; 57014: statement timeout (our own budget ran out server-side);
            // 55P03: lock_timeout.
            code.starts_with("08")
                || code.starts_with("53")
                || code.starts_with("57P0")
                || code == "57014"
                || code == "55P03"
        }
        None => e.is_closed() || has_io_source(&e),
    };
    let reason = describe(&e);
    if unavailable {
        MemoryError::Unavailable {
            dependency: DEPENDENCY,
            reason,
        }
    } else {
        MemoryError::Backend {
            dependency: DEPENDENCY,
            reason,
        }
    }
}

/// What went wrong, in the server's words when the server answered: the driver's own message for
/// a server error is only "db error".
fn describe(e: &tokio_postgres::Error) -> String {
    let Some(db) = e.as_db_error() else {
        // tokio-postgres names only the kind ("error connecting to server"); the cause (refused,
        // no such host, reset) is in the source chain.
        let mut reason = e.to_string();
        for cause in causes(e) {
            reason.push_str(&format!(": {cause}"));
        }
        return reason;
    };
    let mut reason = format!("{} (SQLSTATE {})", db.message(), db.code().code());
    if let Some(detail) = db.detail() {
        reason.push_str(&format!("; {detail}"));
    }
    if let Some(hint) = db.hint() {
        reason.push_str(&format!("; hint: {hint}"));
    }
    reason
}

fn has_io_source(e: &tokio_postgres::Error) -> bool {
    causes(e).any(|cause| cause.is::<std::io::Error>())
        // The driver reports a connect timeout without an io::Error source.
        || e.to_string().contains("timeout")
}

/// The errors under `e`, nearest first.
fn causes(e: &tokio_postgres::Error) -> impl Iterator<Item = &(dyn std::error::Error + 'static)> {
    std::iter::successors(std::error::Error::source(e), |cause| cause.source())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_literals_round_trip_and_flush_subnormals() {
        let v = [0.1_f32, -0.25, 1.0e-40, f32::MIN_POSITIVE, -3.0e-39];
        assert_eq!(
            array_literal(&v),
            format!("{{0.1,-0.25,0,{},0}}", f32::MIN_POSITIVE)
        );
    }
    use crate::memory::NewFact;
    use crate::memory::writes::FactWrites;
    use protocol::control::FactKind;

    #[test]
    fn nul_never_reaches_postgres() {
        let mut writes = FactWrites::new(Vec::new(), Vec::new(), STORED_FORM);
        let new = NewFact {
            embedding: None,
            source_turn_ids: Vec::new(),
            kind: FactKind::Fact,
            key: Some("k\0ey".to_owned()),
            text: "a\0b".to_owned(),
            data: None,
            observed_at: Utc::now(),
            importance: 0.5,
            source: FactSource::Extracted,
        };
        let stored = writes.add("s1", &[new]);
        assert_eq!(stored[0].key.as_deref(), Some("k\u{fffd}ey"));
        let inserts = writes.finish().inserts;
        assert_eq!(inserts[0].1.text, "a\u{fffd}b");
    }
}
