//! The embedded store's Responses API state: a SQLite file of its own beside the memory file
//! (`responses.sqlite3` in `--data-dir`), with the memory file's durability (WAL,
//! `synchronous = FULL`). A2A tasks are kept in the same file (`tasks.rs`): API state too.
//!
//! A file of its own, so that a turn's memory and its response object are committed by two
//! writers in parallel. Writes go through this file's own group-committing writer
//! (`writer.rs`); reads use pooled connections, and `previous_response_id` chains of recently
//! stored responses come from memory (`cache.rs`).

mod cache;
mod tasks;
mod writer;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use deadpool_sqlite::rusqlite::{self, Connection, OptionalExtension as _, params};
use deadpool_sqlite::{Pool, Runtime};
use protocol::SessionId;
use serde_json::Value;

use self::cache::ResponseCache;
use self::writer::{CacheEffect, ResponsesWriter};
use super::{
    DEPENDENCY, create_parent_dir, interact_error, pool_error, release_outside_runtime,
    sqlite_error,
};
use crate::memory::MemoryError;
use crate::memory::responses::{
    Conversation, MAX_CHAIN, ResponseStore, StoredResponse, conversation_additions,
};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS responses (
    id TEXT PRIMARY KEY,
    session TEXT NOT NULL,
    previous_id TEXT,
    conversation_id TEXT,
    created_at TEXT NOT NULL,
    input TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_session ON responses (session);
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    session TEXT NOT NULL,
    created_at TEXT NOT NULL,
    metadata TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS conversations_session ON conversations (session);
CREATE TABLE IF NOT EXISTS conversation_items (
    conversation_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    item TEXT NOT NULL,
    PRIMARY KEY (conversation_id, position)
);
CREATE TABLE IF NOT EXISTS a2a_tasks (
    id TEXT PRIMARY KEY,
    session TEXT NOT NULL,
    message_id TEXT NOT NULL,
    state TEXT NOT NULL,
    updated_ms INTEGER NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS a2a_tasks_session ON a2a_tasks (session, updated_ms, id);
CREATE INDEX IF NOT EXISTS a2a_tasks_message ON a2a_tasks (session, message_id, updated_ms, id);
";

pub struct EmbeddedResponses {
    /// For reads.
    pool: Pool,
    writer: ResponsesWriter,
    cache: Arc<ResponseCache>,
}

impl Drop for EmbeddedResponses {
    fn drop(&mut self) {
        release_outside_runtime(&self.pool);
    }
}

impl EmbeddedResponses {
    /// Opens (creating it) the responses file at `path`.
    pub async fn open(path: &Path) -> Result<Self, MemoryError> {
        create_parent_dir(path).await?;
        let pool = deadpool_sqlite::Config::new(path)
            .builder(Runtime::Tokio1)
            .unwrap_or_else(|never| match never {})
            .max_size(4)
            .wait_timeout(Some(Duration::from_secs(10)))
            .create_timeout(Some(Duration::from_secs(10)))
            .build()
            .map_err(|e| MemoryError::Backend {
                dependency: DEPENDENCY,
                reason: format!("cannot build the responses connection pool: {e}"),
            })?;
        let conn = Connection::open(path).map_err(sqlite_error)?;
        configure(&conn).map_err(sqlite_error)?;
        conn.execute_batch(SCHEMA).map_err(sqlite_error)?;
        let cache = Arc::new(ResponseCache::new(cache::DEFAULT_BUDGET));
        let writer = ResponsesWriter::spawn(conn, cache.clone())?;
        Ok(Self {
            pool,
            writer,
            cache,
        })
    }

    /// Runs `f` on a configured pooled connection, on a blocking thread.
    async fn run<T, F>(&self, f: F) -> Result<T, MemoryError>
    where
        F: FnOnce(&mut Connection) -> Result<T, MemoryError> + Send + 'static,
        T: Send + 'static,
    {
        let conn = self.pool.get().await.map_err(pool_error)?;
        conn.interact(move |conn| {
            configure(conn).map_err(sqlite_error)?;
            f(conn)
        })
        .await
        .map_err(interact_error)?
    }
}

/// Idempotent, and cheap enough to run before every use of a connection.
fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")
}

fn to_json(value: &impl serde::Serialize) -> Result<String, MemoryError> {
    serde_json::to_string(value).map_err(|e| MemoryError::Backend {
        dependency: DEPENDENCY,
        reason: format!("cannot encode a response: {e}"),
    })
}

fn corrupt(reason: String) -> MemoryError {
    MemoryError::Corrupt {
        dependency: DEPENDENCY,
        reason,
    }
}

fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, MemoryError> {
    serde_json::from_str(text).map_err(|e| corrupt(format!("a stored response is not JSON: {e}")))
}

fn session(name: &str) -> Result<SessionId, MemoryError> {
    SessionId::parse(name).map_err(|e| corrupt(format!("stored session {name:?}: {e}")))
}

fn time(text: &str) -> Result<DateTime<Utc>, MemoryError> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| corrupt(format!("stored time {text:?}: {e}")))
}

const RESPONSE_COLUMNS: &str = "id, session, previous_id, conversation_id, created_at, input, body";

type ResponseRow = (
    String,
    String,
    Option<String>,
    Option<String>,
    String,
    String,
    String,
);

fn response_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<ResponseRow> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
        row.get(6)?,
    ))
}

fn decode_response(row: ResponseRow) -> Result<StoredResponse, MemoryError> {
    let (id, name, previous_id, conversation, created_at, input, body) = row;
    Ok(StoredResponse {
        id,
        session: session(&name)?,
        previous_id,
        conversation,
        created_at: time(&created_at)?,
        input: from_json(&input)?,
        body: from_json(&body)?,
    })
}

fn append(tx: &Connection, id: &str, items: &[Value]) -> Result<(), MemoryError> {
    let next: i64 = tx
        .query_row(
            "SELECT COALESCE(MAX(position) + 1, 0) FROM conversation_items WHERE conversation_id = ?1",
            [id],
            |row| row.get(0),
        )
        .map_err(sqlite_error)?;
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO conversation_items (conversation_id, position, item) VALUES (?1, ?2, ?3)",
        )
        .map_err(sqlite_error)?;
    for (offset, item) in (0_i64..).zip(items) {
        insert
            .execute(params![id, next + offset, to_json(item)?])
            .map_err(sqlite_error)?;
    }
    Ok(())
}

#[async_trait]
impl ResponseStore for EmbeddedResponses {
    async fn put_response(&self, response: Arc<StoredResponse>) -> Result<(), MemoryError> {
        let row = (
            response.id.clone(),
            response.session.as_str().to_owned(),
            response.previous_id.clone(),
            response.conversation.clone(),
            response.created_at.to_rfc3339(),
            to_json(&response.input)?,
            to_json(&response.body)?,
        );
        let additions = conversation_additions(&response);
        let size = row.5.len() + row.6.len();
        self.writer
            .write(move |tx| {
                tx.execute(
                    &format!(
                        "INSERT INTO responses ({RESPONSE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
                    ),
                    params![row.0, row.1, row.2, row.3, row.4, row.5, row.6],
                )
                .map_err(sqlite_error)?;
                if let Some(conversation) = &row.3 {
                    append(tx, conversation, &additions)?;
                }
                Ok(((), CacheEffect::Put(Arc::clone(&response), size)))
            })
            .await
    }

    async fn response(&self, id: &str) -> Result<Option<StoredResponse>, MemoryError> {
        if let Some(cached) = self.cache.get(id) {
            return Ok(Some(StoredResponse::clone(&cached)));
        }
        let id = id.to_owned();
        let row = self
            .run(move |conn| {
                conn.query_row(
                    &format!("SELECT {RESPONSE_COLUMNS} FROM responses WHERE id = ?1"),
                    [id],
                    response_row,
                )
                .optional()
                .map_err(sqlite_error)
            })
            .await?;
        row.map(decode_response).transpose()
    }

    async fn chain(&self, id: &str) -> Result<Vec<Arc<StoredResponse>>, MemoryError> {
        if let Some(chain) = self.cache.chain(id) {
            return Ok(chain);
        }
        let id = id.to_owned();
        let rows = self
            .run(move |conn| {
                let mut statement = conn
                    .prepare_cached(&format!(
                        "WITH RECURSIVE chain(id, depth) AS (
                             SELECT id, 0 FROM responses WHERE id = ?1
                             UNION ALL
                             SELECT r.previous_id, chain.depth + 1 FROM responses r
                               JOIN chain ON r.id = chain.id
                              WHERE r.previous_id IS NOT NULL AND chain.depth + 1 < ?2)
                         SELECT {RESPONSE_COLUMNS} FROM responses JOIN chain USING (id)
                          ORDER BY chain.depth DESC"
                    ))
                    .map_err(sqlite_error)?;
                let limit = i64::try_from(MAX_CHAIN).unwrap_or(i64::MAX);
                statement
                    .query_map(params![id, limit], response_row)
                    .map_err(sqlite_error)?
                    .collect::<rusqlite::Result<Vec<_>>>()
                    .map_err(sqlite_error)
            })
            .await?;
        rows.into_iter()
            .map(|row| decode_response(row).map(Arc::new))
            .collect()
    }

    async fn delete_response(&self, id: &str) -> Result<bool, MemoryError> {
        let id = id.to_owned();
        self.writer
            .write(move |tx| {
                let deleted = tx
                    .execute("DELETE FROM responses WHERE id = ?1", [&id])
                    .map_err(sqlite_error)?;
                Ok((deleted > 0, CacheEffect::Remove(id)))
            })
            .await
    }

    async fn put_conversation(
        &self,
        conversation: &Conversation,
        items: &[Value],
    ) -> Result<(), MemoryError> {
        let row = (
            conversation.id.clone(),
            conversation.session.as_str().to_owned(),
            conversation.created_at.to_rfc3339(),
            to_json(&conversation.metadata)?,
        );
        let items = items.to_vec();
        self.writer
            .write(move |tx| {
                tx.execute(
                    "INSERT INTO conversations (id, session, created_at, metadata) VALUES (?1, ?2, ?3, ?4)",
                    params![row.0, row.1, row.2, row.3],
                )
                .map_err(sqlite_error)?;
                append(tx, &row.0, &items)?;
                Ok(((), CacheEffect::None))
            })
            .await
    }

    async fn conversation(&self, id: &str) -> Result<Option<Conversation>, MemoryError> {
        let id = id.to_owned();
        let row = self
            .run(move |conn| {
                conn.query_row(
                    "SELECT id, session, created_at, metadata FROM conversations WHERE id = ?1",
                    [id],
                    |row| {
                        Ok((
                            row.get::<_, String>(0)?,
                            row.get::<_, String>(1)?,
                            row.get::<_, String>(2)?,
                            row.get::<_, String>(3)?,
                        ))
                    },
                )
                .optional()
                .map_err(sqlite_error)
            })
            .await?;
        row.map(|(id, name, created_at, metadata)| {
            Ok(Conversation {
                id,
                session: session(&name)?,
                created_at: time(&created_at)?,
                metadata: from_json(&metadata)?,
            })
        })
        .transpose()
    }

    async fn update_conversation(&self, id: &str, metadata: &Value) -> Result<bool, MemoryError> {
        let (id, metadata) = (id.to_owned(), to_json(metadata)?);
        self.writer
            .write(move |tx| {
                let updated = tx
                    .execute(
                        "UPDATE conversations SET metadata = ?2 WHERE id = ?1",
                        params![id, metadata],
                    )
                    .map_err(sqlite_error)?;
                Ok((updated > 0, CacheEffect::None))
            })
            .await
    }

    async fn delete_conversation(&self, id: &str) -> Result<bool, MemoryError> {
        let id = id.to_owned();
        self.writer
            .write(move |tx| {
                tx.execute(
                    "DELETE FROM conversation_items WHERE conversation_id = ?1",
                    [&id],
                )
                .map_err(sqlite_error)?;
                let deleted = tx
                    .execute("DELETE FROM conversations WHERE id = ?1", [&id])
                    .map_err(sqlite_error)?;
                Ok((deleted > 0, CacheEffect::None))
            })
            .await
    }

    async fn conversation_items(&self, id: &str) -> Result<Vec<Value>, MemoryError> {
        let id = id.to_owned();
        let rows = self
            .run(move |conn| {
                let mut statement = conn
                    .prepare_cached(
                        "SELECT item FROM conversation_items WHERE conversation_id = ?1 ORDER BY position",
                    )
                    .map_err(sqlite_error)?;
                statement
                    .query_map([id], |row| row.get::<_, String>(0))
                    .map_err(sqlite_error)?
                    .collect::<rusqlite::Result<Vec<_>>>()
                    .map_err(sqlite_error)
            })
            .await?;
        rows.iter().map(|text| from_json(text)).collect()
    }

    async fn append_items(&self, id: &str, items: &[Value]) -> Result<(), MemoryError> {
        let (id, items) = (id.to_owned(), items.to_vec());
        self.writer
            .write(move |tx| {
                append(tx, &id, &items)?;
                Ok(((), CacheEffect::None))
            })
            .await
    }

    async fn delete_item(&self, id: &str, item: &str) -> Result<bool, MemoryError> {
        let (id, item) = (id.to_owned(), item.to_owned());
        self.writer
            .write(move |tx| {
                let deleted = tx
                    .execute(
                        "DELETE FROM conversation_items
                          WHERE conversation_id = ?1 AND json_extract(item, '$.id') = ?2",
                        params![id, item],
                    )
                    .map_err(sqlite_error)?;
                Ok((deleted > 0, CacheEffect::None))
            })
            .await
    }

    async fn reset(&self, session: &SessionId) -> Result<(u64, u64), MemoryError> {
        let (name, session) = (session.as_str().to_owned(), session.clone());
        self.writer
            .write(move |tx| {
                let responses = tx
                    .execute("DELETE FROM responses WHERE session = ?1", [&name])
                    .map_err(sqlite_error)?;
                tx.execute(
                    "DELETE FROM conversation_items WHERE conversation_id IN
                       (SELECT id FROM conversations WHERE session = ?1)",
                    [&name],
                )
                .map_err(sqlite_error)?;
                let conversations = tx
                    .execute("DELETE FROM conversations WHERE session = ?1", [&name])
                    .map_err(sqlite_error)?;
                Ok((
                    (responses as u64, conversations as u64),
                    CacheEffect::Reset(session),
                ))
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keeps_the_response_store_contract_across_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("responses.sqlite3");
        let store = EmbeddedResponses::open(&path).await.unwrap();
        crate::memory::responses::contract::run(&store).await;
        drop(store);
        let reopened = EmbeddedResponses::open(&path).await.unwrap();
        assert!(reopened.response("o1").await.unwrap().is_some());
    }

    fn stored(id: &str, text: &str) -> StoredResponse {
        StoredResponse {
            id: id.to_owned(),
            session: SessionId::parse("s1").unwrap(),
            previous_id: None,
            conversation: None,
            created_at: DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
            input: vec![serde_json::json!({"id": "in", "content": text})],
            body: serde_json::json!({"id": id, "output": []}),
        }
    }

    #[tokio::test]
    async fn a_failing_write_fails_alone_and_the_cache_holds_only_what_committed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("responses.sqlite3");
        let store = EmbeddedResponses::open(&path).await.unwrap();
        // Queued together, so they normally share a batch; the outcome must not depend on it.
        let writes = [
            stored("r1", "first"),
            stored("r1", "second"),
            stored("r2", "other"),
        ];
        let (first, again, other) = tokio::join!(
            store.put_response(Arc::new(writes[0].clone())),
            store.put_response(Arc::new(writes[1].clone())),
            store.put_response(Arc::new(writes[2].clone())),
        );
        first.unwrap();
        assert!(again.is_err(), "a second response with the same id");
        other.unwrap();
        let kept = store.response("r1").await.unwrap().unwrap();
        assert_eq!(
            kept.input[0]["content"], "first",
            "the cache kept what committed"
        );
        drop(store);
        let reopened = EmbeddedResponses::open(&path).await.unwrap();
        assert_eq!(
            reopened.response("r1").await.unwrap().unwrap(),
            stored("r1", "first"),
            "the file agrees"
        );
        assert!(reopened.response("r2").await.unwrap().is_some());
    }
}
