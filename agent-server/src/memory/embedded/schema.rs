//! The embedded database's schema, its migrations and the settings every connection runs with.
//!
//! Versioning uses SQLite's own header fields rather than a table: `PRAGMA user_version` holds the
//! number of migrations applied and `PRAGMA application_id` marks the file as ours. Both live in
//! the database header, are written inside the migration's transaction, and so can never disagree
//! with the tables they describe.

use std::time::Duration;

use deadpool_sqlite::rusqlite::{Connection, TransactionBehavior};

use super::{corrupt, sqlite_error};
use crate::memory::MemoryError;

/// The schema version this binary writes: the number of entries in [`MIGRATIONS`].
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// `PRAGMA application_id` of an agentwall memory database ("AWM1"), so that pointing the server
/// at somebody else's SQLite file is refused instead of adding our tables to it.
pub const APPLICATION_ID: i32 = 0x4157_4D31;

/// How long a connection waits for another writer (in this or another process) before giving up
/// with SQLITE_BUSY, which the store reports as [`MemoryError::Unavailable`].
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Migration `i` takes the schema from version `i` to `i + 1`. Append only: never edit an entry
/// that has shipped, since databases in the field already ran it.
const MIGRATIONS: &[&str] = &[
    V1_INITIAL,
    V2_RECALL_IN_MEMORY,
    V3_WORKING_BY_TIME,
    V4_CHECKS_WITHOUT_TEMP_TABLES,
    V5_SOURCE_TURN_IDS,
    V6_EPISODES_AND_EMBEDDINGS,
    V7_EPISODES_AS_WORKING_ITEMS,
];

/// Timestamps are i64 microseconds since the Unix epoch (UTC): the precision of Postgres
/// `timestamptz`, so both backends round-trip the same values, and integer comparisons in SQL.
const V1_INITIAL: &str = "
CREATE TABLE sessions (
    session_id TEXT PRIMARY KEY NOT NULL,
    -- Reset counter; the row outlives the session's data so a reset is never undone.
    epoch INTEGER NOT NULL DEFAULT 0 CHECK (epoch >= 0)
) STRICT, WITHOUT ROWID;

CREATE TABLE working_items (
    session_id TEXT NOT NULL,
    -- Per-session write order; breaks ties between items with the same `at`.
    seq INTEGER NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    text TEXT NOT NULL,
    at INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
) STRICT;
CREATE INDEX working_items_by_time ON working_items (session_id, at, seq);

CREATE TABLE facts (
    -- Integer key for the full-text index (FTS5 content tables are addressed by rowid); also
    -- records write order.
    pk INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('fact', 'rule', 'reminder')),
    key TEXT,
    text TEXT NOT NULL,
    data TEXT CHECK (data IS NULL OR json_valid(data)),
    observed_at INTEGER NOT NULL,
    importance REAL NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('extracted', 'promoted', 'injected'))
) STRICT;
-- At most one fact per (session, key); unkeyed facts (NULL key) are unconstrained.
CREATE UNIQUE INDEX facts_by_key ON facts (session_id, key) WHERE key IS NOT NULL;
CREATE INDEX facts_by_session ON facts (session_id, kind, observed_at);

-- External-content index over facts.text: the text is stored once, in `facts`, and the triggers
-- below keep the index in step inside the writing transaction.
CREATE VIRTUAL TABLE facts_fts USING fts5 (
    text,
    content = 'facts',
    content_rowid = 'pk',
    tokenize = 'porter unicode61'
);
CREATE TRIGGER facts_fts_insert AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts (rowid, text) VALUES (new.pk, new.text);
END;
CREATE TRIGGER facts_fts_delete AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, text) VALUES ('delete', old.pk, old.text);
END;
CREATE TRIGGER facts_fts_update AFTER UPDATE OF text ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, text) VALUES ('delete', old.pk, old.text);
    INSERT INTO facts_fts (rowid, text) VALUES (new.pk, new.text);
END;
";

/// Recall moved into memory (the session cache's own BM25 index), so the FTS5 index is no longer
/// read; dropping it takes its upkeep off every write.
const V2_RECALL_IN_MEMORY: &str = "
DROP TRIGGER facts_fts_insert;
DROP TRIGGER facts_fts_delete;
DROP TRIGGER facts_fts_update;
DROP TABLE facts_fts;
";

/// Working items clustered by `(session_id, at, seq)`, the order they are read, trimmed and
/// deleted in: one B-tree instead of three (the rowid table, the `(session_id, seq)` key's index
/// and `working_items_by_time`), so a turn changes one page of working memory rather than three,
/// and commits write that much less WAL. `seq` stays unique per session because the writer, the
/// file's only writer, numbers items (`cursors.rs`); no index checks it any more.
const V3_WORKING_BY_TIME: &str = "
CREATE TABLE working_items_v3 (
    session_id TEXT NOT NULL,
    -- Per-session write order; breaks ties between items with the same `at`.
    seq INTEGER NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    text TEXT NOT NULL,
    at INTEGER NOT NULL,
    PRIMARY KEY (session_id, at, seq)
) STRICT, WITHOUT ROWID;
INSERT INTO working_items_v3 (session_id, seq, role, text, at)
    SELECT session_id, seq, role, text, at FROM working_items;
DROP TABLE working_items;
ALTER TABLE working_items_v3 RENAME TO working_items;
";

/// The facts table again, with its `kind` and `source` checks written as `=` comparisons joined by
/// OR instead of `IN (...)`: SQLite evaluates an `IN` list of three or more values by building a
/// temporary B-tree of the list, in every statement that writes a row, so each fact insert opened,
/// filled and dropped two of them (about a tenth of a builtin turn's instructions). Same columns,
/// same rows, same constraints, same indexes.
const V4_CHECKS_WITHOUT_TEMP_TABLES: &str = "
CREATE TABLE facts_v4 (
    -- Write order (the rowid): the tie-breaker between facts observed at the same time.
    pk INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind = 'fact' OR kind = 'rule' OR kind = 'reminder'),
    key TEXT,
    text TEXT NOT NULL,
    data TEXT CHECK (data IS NULL OR json_valid(data)),
    observed_at INTEGER NOT NULL,
    importance REAL NOT NULL,
    source TEXT NOT NULL
        CHECK (source = 'extracted' OR source = 'promoted' OR source = 'injected')
) STRICT;
INSERT INTO facts_v4 (pk, id, session_id, kind, key, text, data, observed_at, importance, source)
    SELECT pk, id, session_id, kind, key, text, data, observed_at, importance, source FROM facts;
DROP TABLE facts;
ALTER TABLE facts_v4 RENAME TO facts;
-- At most one fact per (session, key); unkeyed facts (NULL key) are unconstrained.
CREATE UNIQUE INDEX facts_by_key ON facts (session_id, key) WHERE key IS NOT NULL;
CREATE INDEX facts_by_session ON facts (session_id, kind, observed_at);
";

/// Provenance: the ids of the turns a fact came from (`X-Turn-Id`), oldest first, as a JSON array
/// of strings; NULL when there are none (every fact written before this version).
const V5_SOURCE_TURN_IDS: &str = "
ALTER TABLE facts ADD COLUMN source_turn_ids TEXT;
";

/// Episodes (a fourth `kind`, which the check must admit: SQLite changes a check only by
/// rebuilding the table) and embeddings: `embedding` is the item's vector as little-endian f32s,
/// NULL until it is embedded (or when semantic recall is off), so a process that dies between a
/// turn and its embedding leaves the item to be embedded at the next start. Same rows otherwise.
/// No index finds the unembedded rows: with semantic recall off every row is one, so it would
/// cost every write a B-tree entry; the scan at start costs one pass over the table instead.
const V6_EPISODES_AND_EMBEDDINGS: &str = "
CREATE TABLE facts_v6 (
    -- Write order (the rowid): the tie-breaker between facts observed at the same time.
    pk INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL,
    kind TEXT NOT NULL
        CHECK (kind = 'fact' OR kind = 'rule' OR kind = 'reminder' OR kind = 'episode'),
    key TEXT,
    text TEXT NOT NULL,
    data TEXT CHECK (data IS NULL OR json_valid(data)),
    observed_at INTEGER NOT NULL,
    importance REAL NOT NULL,
    source TEXT NOT NULL
        CHECK (source = 'extracted' OR source = 'promoted' OR source = 'injected'),
    source_turn_ids TEXT,
    embedding BLOB
) STRICT;
INSERT INTO facts_v6
    (pk, id, session_id, kind, key, text, data, observed_at, importance, source, source_turn_ids)
    SELECT pk, id, session_id, kind, key, text, data, observed_at, importance, source,
           source_turn_ids
    FROM facts;
DROP TABLE facts;
ALTER TABLE facts_v6 RENAME TO facts;
-- At most one fact per (session, key); unkeyed facts (NULL key) are unconstrained.
CREATE UNIQUE INDEX facts_by_key ON facts (session_id, key) WHERE key IS NOT NULL;
CREATE INDEX facts_by_session ON facts (session_id, kind, observed_at);
";

/// Episodes move into `working_items`: a turn's user message and reply are already written there
/// as its working items, so a row that is both (the episode's columns filled in) costs a turn no
/// second B-tree, where an episode in `facts` added an entry to `facts_by_session`, a page per
/// session and batch. Rows with an `episode_id` are never trimmed from working memory; an episode
/// that was not a working item (injected, or written before this version) has `working` 0 and
/// stays out of working memory. Episodes already stored move with their ids, provenance and
/// vectors; their `seq` is negative (below every item's), in their old write order, since no
/// working item of theirs exists. No index finds an episode by id: it cost a tenth of the turns/s
/// of a load with episodes (an entry per row); the one reader that looks episodes up by id, an
/// embedding stored later, scans the session's rows once per call (`ops::set_embeddings`).
const V7_EPISODES_AS_WORKING_ITEMS: &str = "
ALTER TABLE working_items ADD COLUMN working INTEGER NOT NULL DEFAULT 1
    CHECK (working = 0 OR working = 1);
ALTER TABLE working_items ADD COLUMN episode_id TEXT;
ALTER TABLE working_items ADD COLUMN speaker TEXT;
ALTER TABLE working_items ADD COLUMN source TEXT
    CHECK (source IS NULL OR source = 'extracted' OR source = 'promoted' OR source = 'injected');
ALTER TABLE working_items ADD COLUMN source_turn_ids TEXT;
ALTER TABLE working_items ADD COLUMN embedding BLOB;
INSERT INTO working_items
    (session_id, seq, role, text, at, working, episode_id, speaker, source, source_turn_ids,
     embedding)
    SELECT session_id, pk - (SELECT max(pk) FROM facts) - 1,
           coalesce(json_extract(data, '$.role'), 'user'), text, observed_at, 0, id,
           json_extract(data, '$.speaker'), source, source_turn_ids, embedding
    FROM facts WHERE kind = 'episode';
DELETE FROM facts WHERE kind = 'episode';
";

/// Per-connection settings, run on the writer's connection and every pooled reader (they are not
/// stored in the file).
///
/// `synchronous = FULL` in WAL mode: every commit syncs the WAL file before it returns, so a write
/// that returned `Ok` survives not only the process being killed (SIGKILL, a panic) but also the
/// kernel crashing or the power going. `NORMAL` would sync only at checkpoints; it keeps
/// committed transactions across a process crash (they are in the kernel's page cache) but can
/// lose the last ones on power loss, i.e. acknowledged replies. The sync used to cost a turn its
/// own fsync; with group commit (`writer.rs`) one sync covers every turn of a batch, so the
/// stronger setting costs little under load.
///
/// The statement cache holds every statement a turn runs (about a dozen on the writer, five on a
/// reader) with room to spare, so none is recompiled per turn.
pub(super) fn configure_connection(conn: &mut Connection) -> deadpool_sqlite::rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.set_prepared_statement_cache_capacity(32);
    Ok(())
}

/// Frames the write-ahead log holds before a commit copies them into the database file (a
/// checkpoint); SQLite's default is 1,000, about 4 MiB. A checkpoint copies every page changed
/// since the last one and syncs the file, and consecutive turns change the same few pages (the
/// newest leaves of each table and index): at 1,000 frames the writer copied those pages and
/// synced several times a second, about 7 % of a builtin turn's CPU under load. At 10,000 (a log
/// of about 40 MiB, reused, not grown) it does so a tenth as often; whole-machine turns/s rose
/// by a quarter (docs/benchmarks.md). Durability is unchanged: every commit still syncs the log.
pub const WAL_AUTOCHECKPOINT_FRAMES: u32 = 10_000;

/// The most the write-ahead log keeps on disk once a checkpoint has emptied it, in bytes.
///
/// The log grows past [`WAL_AUTOCHECKPOINT_FRAMES`] (about 40 MiB) while a reader holds an old
/// snapshot, since no checkpoint may copy frames that reader still needs, and SQLite keeps a grown
/// file at its largest size for reuse: one long read (a large session's snapshot) during a burst
/// of turns would leave that much disk taken for good. With this limit the next restart of the
/// log cuts the file back. Above the usual 40 MiB, so a steady server never truncates and regrows it.
pub(super) const WAL_SIZE_LIMIT_BYTES: i64 = 64 << 20;

/// The writer's page cache, in KiB (SQLite's default is 2,000 KiB).
///
/// Every turn inserts its rows at the end of its session's range of `working_items`, so the
/// writer's working set is the newest leaf of every active session, and the interior pages above
/// them. Episodes are never trimmed, so under load the table outgrows the default cache within
/// seconds: then most inserts first read their leaf back from the file (a `pread` and a copy per
/// page, a tenth of the writer's time), and its splits read the neighbours too. 16 MiB holds the
/// newest leaves of about 4,000 sessions; measured under load, the reads went and whole-machine
/// turns/s with episodes on rose by about 6 % (docs/results/semantic-recall.md). SQLite
/// allocates the cache as pages are used, so a small database never takes it all. Readers keep
/// the default: each reads one session at a time.
pub(super) const WRITER_CACHE_KIB: i64 = 16 << 10;

/// What only the writer's connection needs: readers never write, so never checkpoint, and never
/// restart the log (which is when `journal_size_limit` applies).
pub(super) fn configure_writer(conn: &Connection) -> deadpool_sqlite::rusqlite::Result<()> {
    conn.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT_FRAMES)?;
    // A negative size is in KiB rather than pages.
    conn.pragma_update(None, "cache_size", -WRITER_CACHE_KIB)?;
    conn.pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT_BYTES)
}

/// Brings the database to [`SCHEMA_VERSION`] and switches it to WAL mode; returns the version.
///
/// Safe to run any number of times and from several processes at once: the version is re-read
/// inside a `BEGIN IMMEDIATE` transaction, so exactly one opener applies each migration.
pub(super) fn migrate(conn: &mut Connection) -> Result<u32, MemoryError> {
    // Refuse a foreign or newer file before changing anything in it (WAL mode included).
    check_header(conn)?;

    // WAL lets readers run alongside the single writer. The mode is persistent in the file, so
    // this is a no-op after the first open.
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .map_err(sqlite_error)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(MemoryError::Backend {
            dependency: super::DEPENDENCY,
            reason: format!("cannot switch the database to WAL mode (journal_mode is {mode})"),
        });
    }

    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sqlite_error)?;
    let version = check_header(&tx)?;
    for migration in &MIGRATIONS[version as usize..] {
        tx.execute_batch(migration).map_err(sqlite_error)?;
    }
    if version < SCHEMA_VERSION {
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(sqlite_error)?;
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(sqlite_error)?;
    }
    tx.commit().map_err(sqlite_error)?;
    Ok(SCHEMA_VERSION)
}

/// The schema version of an agentwall database this binary can use, or why it cannot.
fn check_header(conn: &Connection) -> Result<u32, MemoryError> {
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(sqlite_error)?;
    let application_id: i32 = conn
        .pragma_query_value(None, "application_id", |row| row.get(0))
        .map_err(sqlite_error)?;
    match application_id {
        APPLICATION_ID => {}
        0 if version == 0 => {
            // A new (empty) file. A file with tables but no marker belongs to someone else.
            let objects: i64 = conn
                .query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))
                .map_err(sqlite_error)?;
            if objects > 0 {
                return Err(corrupt(
                    "the file is a SQLite database of another application".into(),
                ));
            }
        }
        other => {
            return Err(corrupt(format!(
                "the file is a SQLite database of another application (application_id {other:#x})"
            )));
        }
    }
    let version =
        u32::try_from(version).map_err(|_| corrupt(format!("invalid schema version {version}")))?;
    if version > SCHEMA_VERSION {
        return Err(corrupt(format!(
            "schema version {version} is newer than this server's {SCHEMA_VERSION}; \
             upgrade the server or point it at another file"
        )));
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    use deadpool_sqlite::rusqlite::params;

    use super::*;

    /// A database file in `dir` as a server of schema `version` left it.
    fn file_at_version(dir: &std::path::Path, version: u32) -> Connection {
        let conn = Connection::open(dir.join(format!("v{version}.sqlite3"))).unwrap();
        for migration in &MIGRATIONS[..version as usize] {
            conn.execute_batch(migration).unwrap();
        }
        conn.pragma_update(None, "application_id", APPLICATION_ID)
            .unwrap();
        conn.pragma_update(None, "user_version", version).unwrap();
        conn
    }

    /// The writer's connection gets the large page cache; a reader's keeps SQLite's default.
    #[test]
    fn only_the_writer_gets_the_large_page_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.sqlite3");
        let cache_kib = |conn: &Connection| -> i64 {
            // Negative: in KiB.
            -conn
                .pragma_query_value(None, "cache_size", |row| row.get::<_, i64>(0))
                .unwrap()
        };
        let mut writer = Connection::open(&path).unwrap();
        configure_connection(&mut writer).unwrap();
        migrate(&mut writer).unwrap();
        configure_writer(&writer).unwrap();
        let mut reader = Connection::open(&path).unwrap();
        configure_connection(&mut reader).unwrap();
        assert_eq!(cache_kib(&writer), WRITER_CACHE_KIB);
        assert_eq!(cache_kib(&reader), 2_000);
    }

    /// A log grown past the limit by a reader that held an old snapshot is cut back to the
    /// limit once the writer has checkpointed it and started it over.
    #[test]
    fn the_writer_cuts_a_grown_log_back_to_its_size_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.sqlite3");
        let mut writer = Connection::open(&path).unwrap();
        configure_connection(&mut writer).unwrap();
        migrate(&mut writer).unwrap();
        configure_writer(&writer).unwrap();
        writer
            .execute_batch("CREATE TABLE ballast (b BLOB)")
            .unwrap();
        let wal_bytes = || {
            std::fs::metadata(dir.path().join("memory.sqlite3-wal"))
                .unwrap()
                .len()
        };

        // A reader's snapshot from before the writes keeps every checkpoint from copying them.
        let mut reader = Connection::open(&path).unwrap();
        let snapshot = reader.transaction().unwrap();
        let _: i64 = snapshot
            .query_row("SELECT count(*) FROM ballast", [], |row| row.get(0))
            .unwrap();
        let mebibytes = (WAL_SIZE_LIMIT_BYTES >> 20) + 16;
        for _ in 0..mebibytes {
            writer
                .execute("INSERT INTO ballast VALUES (zeroblob(1048576))", [])
                .unwrap();
        }
        let grown = wal_bytes();
        assert!(
            grown > WAL_SIZE_LIMIT_BYTES as u64,
            "the log grew to {grown} bytes only"
        );
        snapshot.commit().unwrap();

        // The first commit checkpoints the whole log (no reader needs it now), the next starts
        // the log over and, on committing, truncates the file.
        for _ in 0..2 {
            writer
                .execute("INSERT INTO ballast VALUES (NULL)", [])
                .unwrap();
        }
        let cut = wal_bytes();
        assert!(
            cut <= WAL_SIZE_LIMIT_BYTES as u64,
            "the log is still {cut} bytes (it had grown to {grown})"
        );
    }

    #[test]
    fn version_3_keeps_working_items_and_clusters_them_by_time() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = file_at_version(dir.path(), 2);
        conn.execute_batch(
            "INSERT INTO working_items (session_id, seq, role, text, at) VALUES
                 ('s', 1, 'user', 'later', 20), ('s', 2, 'assistant', 'earlier', 10),
                 ('t', 1, 'user', 'other', 5);",
        )
        .unwrap();

        migrate(&mut conn).unwrap();
        let rows: Vec<(String, i64, String, i64)> = conn
            .prepare("SELECT session_id, seq, text, at FROM working_items")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        // A plain scan follows the new primary key: session, then time.
        assert_eq!(
            rows,
            [
                ("s".to_owned(), 2, "earlier".to_owned(), 10),
                ("s".to_owned(), 1, "later".to_owned(), 20),
                ("t".to_owned(), 1, "other".to_owned(), 5),
            ]
        );
        let indexes: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE tbl_name = 'working_items' AND type = 'index'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(indexes, 0, "the table is its only B-tree");
    }

    #[test]
    fn version_4_keeps_facts_and_their_checks_and_writes_a_fact_without_temporary_tables() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = file_at_version(dir.path(), 3);
        conn.execute_batch(
            "INSERT INTO facts (pk, id, session_id, kind, key, text, observed_at, importance, source)
             VALUES (7, 'f-1', 's', 'rule', 'tone', 'Be brief.', 10, 0.9, 'extracted');",
        )
        .unwrap();

        assert_eq!(
            migrate(&mut conn).unwrap(),
            SCHEMA_VERSION,
            "through version 4 to the latest"
        );
        let row: (i64, String, String, Option<String>, String) = conn
            .query_row(
                "SELECT pk, id, kind, key, text FROM facts WHERE session_id = 's'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .unwrap();
        assert_eq!(
            row,
            (
                7,
                "f-1".to_owned(),
                "rule".to_owned(),
                Some("tone".to_owned()),
                "Be brief.".to_owned()
            )
        );
        let insert = |id: &str, kind: &str, key: &str, source: &str| {
            conn.execute(
                super::super::ops::INSERT_FACT,
                params![
                    id,
                    "s",
                    kind,
                    key,
                    "text",
                    None::<String>,
                    20,
                    0.5,
                    source,
                    None::<String>,
                    None::<Vec<u8>>
                ],
            )
        };
        insert("f-2", "fact", "colour", "promoted").expect("a valid fact is written");
        insert("f-3", "opinion", "mood", "injected").expect_err("an unknown kind is refused");
        insert("f-4", "fact", "size", "guessed").expect_err("an unknown source is refused");
        insert("f-5", "rule", "tone", "injected").expect_err("one fact per (session, key)");

        let program: Vec<String> = conn
            .prepare(&format!("EXPLAIN {}", super::super::ops::INSERT_FACT))
            .unwrap()
            .query_map([None::<i64>; 11], |r| r.get(1))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            !program.iter().any(|op| op == "OpenEphemeral"),
            "writing a fact builds a temporary B-tree: {program:?}"
        );
    }

    #[test]
    fn version_7_moves_episodes_into_working_items_outside_working_memory() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = file_at_version(dir.path(), 6);
        conn.execute_batch(
            "INSERT INTO working_items (session_id, seq, role, text, at)
                 VALUES ('s', 1, 'user', 'We went kayaking.', 10);
             INSERT INTO facts (pk, id, session_id, kind, key, text, data, observed_at,
                                importance, source, source_turn_ids, embedding) VALUES
                 (3, 'e-1', 's', 'episode', NULL, 'We went kayaking.',
                  '{\"role\":\"user\",\"speaker\":\"Ana\"}', 10, 0.5, 'extracted',
                  '[\"turn-1\"]', x'0000803f'),
                 (4, 'f-1', 's', 'fact', 'boat', 'The boat is red.', NULL, 11, 0.7,
                  'extracted', NULL, NULL),
                 (5, 'e-2', 's', 'episode', NULL, 'Noted.', '{\"role\":\"assistant\"}', 10,
                  0.5, 'injected', NULL, NULL);",
        )
        .unwrap();

        migrate(&mut conn).unwrap();
        /// seq, role, text, working, episode_id, speaker.
        type Row = (i64, String, String, i64, Option<String>, Option<String>);
        let rows: Vec<Row> = conn
            .prepare(
                "SELECT seq, role, text, working, episode_id, speaker FROM working_items
                 WHERE session_id = 's' ORDER BY seq",
            )
            .unwrap()
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let row =
            |seq: i64, role: &str, text: &str, working, id: Option<&str>, who: Option<&str>| {
                (
                    seq,
                    role.to_owned(),
                    text.to_owned(),
                    working,
                    id.map(str::to_owned),
                    who.map(str::to_owned),
                )
            };
        assert_eq!(
            rows,
            [
                // Below every item's number, in their old write order.
                row(-3, "user", "We went kayaking.", 0, Some("e-1"), Some("Ana")),
                row(-1, "assistant", "Noted.", 0, Some("e-2"), None),
                row(1, "user", "We went kayaking.", 1, None, None),
            ]
        );
        let moved: (String, Option<String>, Option<Vec<u8>>) = conn
            .query_row(
                "SELECT source, source_turn_ids, embedding FROM working_items
                 WHERE episode_id = 'e-1'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(
            moved,
            (
                "extracted".to_owned(),
                Some("[\"turn-1\"]".to_owned()),
                Some(1.0f32.to_le_bytes().to_vec())
            )
        );
        let facts: Vec<String> = conn
            .prepare("SELECT id FROM facts")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(facts, ["f-1"], "only the fact stays in facts");
    }
}
