//! A2A tasks in the responses file (`a2a_tasks`): written through the file's group-committing
//! writer, read on pooled connections. Not cached: a task is read when a client asks for it, not
//! on every turn. Times are kept as Unix milliseconds, the precision of a task's status timestamp,
//! so that they order and compare exactly.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use deadpool_sqlite::rusqlite::{self, OptionalExtension as _, params};
use protocol::SessionId;

use super::super::sqlite_error;
use super::writer::CacheEffect;
use super::{EmbeddedResponses, corrupt, from_json, session, to_json};
use crate::memory::MemoryError;
use crate::memory::tasks::{StoredTask, TaskPage, TaskQuery, TaskStore};

const COLUMNS: &str = "id, session, message_id, state, updated_ms, body";

/// The latest task of a session's message: one entry of the index `a2a_tasks_message`, which
/// holds the order too (every message is looked up, so it must not walk the session's tasks).
const FOR_MESSAGE: &str = "SELECT id, session, message_id, state, updated_ms, body FROM a2a_tasks
     WHERE session = ?1 AND message_id = ?2 ORDER BY updated_ms DESC, id DESC LIMIT 1";

type Row = (String, String, String, String, i64, String);

fn row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
    ))
}

fn decode((id, name, message_id, state, updated_ms, body): Row) -> Result<StoredTask, MemoryError> {
    Ok(StoredTask {
        id,
        session: session(&name)?,
        message_id,
        state,
        updated_at: DateTime::from_timestamp_millis(updated_ms)
            .ok_or_else(|| corrupt(format!("stored task time {updated_ms} is out of range")))?,
        body: from_json(&body)?,
    })
}

fn millis(at: DateTime<Utc>) -> i64 {
    at.timestamp_millis()
}

#[async_trait]
impl TaskStore for EmbeddedResponses {
    async fn put_task(&self, task: &StoredTask) -> Result<(), MemoryError> {
        let row = (
            task.id.clone(),
            task.session.as_str().to_owned(),
            task.message_id.clone(),
            task.state.clone(),
            millis(task.updated_at),
            to_json(&task.body)?,
        );
        self.writer
            .write(move |tx| {
                tx.execute(
                    &format!(
                        "INSERT OR REPLACE INTO a2a_tasks ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
                    ),
                    params![row.0, row.1, row.2, row.3, row.4, row.5],
                )
                .map_err(sqlite_error)?;
                Ok(((), CacheEffect::None))
            })
            .await
    }

    async fn task(&self, id: &str) -> Result<Option<StoredTask>, MemoryError> {
        let id = id.to_owned();
        let found = self
            .run(move |conn| {
                conn.query_row(
                    &format!("SELECT {COLUMNS} FROM a2a_tasks WHERE id = ?1"),
                    [id],
                    row,
                )
                .optional()
                .map_err(sqlite_error)
            })
            .await?;
        found.map(decode).transpose()
    }

    async fn task_for_message(
        &self,
        session: &SessionId,
        message_id: &str,
    ) -> Result<Option<StoredTask>, MemoryError> {
        let (name, message_id) = (session.as_str().to_owned(), message_id.to_owned());
        let found = self
            .run(move |conn| {
                conn.query_row(FOR_MESSAGE, params![name, message_id], row)
                    .optional()
                    .map_err(sqlite_error)
            })
            .await?;
        found.map(decode).transpose()
    }

    async fn list_tasks(
        &self,
        session: &SessionId,
        query: &TaskQuery,
    ) -> Result<TaskPage, MemoryError> {
        let name = session.as_str().to_owned();
        let state = query.state.clone();
        let after = query.updated_after.map(millis);
        let cursor = query
            .after
            .as_ref()
            .map(|c| (millis(c.updated_at), c.id.clone()));
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let (rows, total) = self
            .run(move |conn| {
                // NULL parameters switch their filter off.
                const FILTER: &str = "session = ?1 AND (?2 IS NULL OR state = ?2)
                                      AND (?3 IS NULL OR updated_ms > ?3)";
                let total: i64 = conn
                    .query_row(
                        &format!("SELECT count(*) FROM a2a_tasks WHERE {FILTER}"),
                        params![name, state, after],
                        |r| r.get(0),
                    )
                    .map_err(sqlite_error)?;
                let (cursor_ms, cursor_id) = cursor.unzip();
                let mut statement = conn
                    .prepare_cached(&format!(
                        "SELECT {COLUMNS} FROM a2a_tasks WHERE {FILTER}
                           AND (?4 IS NULL OR updated_ms < ?4 OR (updated_ms = ?4 AND id < ?5))
                         ORDER BY updated_ms DESC, id DESC LIMIT ?6"
                    ))
                    .map_err(sqlite_error)?;
                let rows = statement
                    .query_map(
                        params![name, state, after, cursor_ms, cursor_id, limit],
                        row,
                    )
                    .map_err(sqlite_error)?
                    .collect::<rusqlite::Result<Vec<_>>>()
                    .map_err(sqlite_error)?;
                Ok((rows, total))
            })
            .await?;
        Ok(TaskPage {
            tasks: rows.into_iter().map(decode).collect::<Result<_, _>>()?,
            total: u64::try_from(total).unwrap_or_default(),
        })
    }

    async fn reset(&self, session: &SessionId) -> Result<u64, MemoryError> {
        let name = session.as_str().to_owned();
        self.writer
            .write(move |tx| {
                let removed = tx
                    .execute("DELETE FROM a2a_tasks WHERE session = ?1", [&name])
                    .map_err(sqlite_error)?;
                Ok((removed as u64, CacheEffect::None))
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message's lookup reads the message index, its order included: no walk of the
    /// session's tasks, no sort.
    #[tokio::test]
    async fn a_message_is_looked_up_in_its_index_without_a_sort() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("responses.sqlite3");
        let store = EmbeddedResponses::open(&path).await.unwrap();
        for n in 0..50 {
            let task = crate::memory::tasks::contract::task(&format!("t{n}"), "s1", "m", n);
            store.put_task(&task).await.unwrap();
        }
        let conn = rusqlite::Connection::open(&path).unwrap();
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {FOR_MESSAGE}"))
            .unwrap()
            .query_map(params!["s1", "m"], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(plan.len(), 1, "{plan:?}");
        assert!(
            plan[0].contains("USING INDEX a2a_tasks_message"),
            "{plan:?}"
        );
        assert_eq!(
            store
                .task_for_message(&SessionId::parse("s1").unwrap(), "m")
                .await
                .unwrap()
                .unwrap()
                .id,
            "t49",
            "the latest"
        );
    }

    #[tokio::test]
    async fn keeps_the_task_store_contract_across_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("responses.sqlite3");
        let store = EmbeddedResponses::open(&path).await.unwrap();
        crate::memory::tasks::contract::run(&store).await;
        drop(store);
        let reopened = EmbeddedResponses::open(&path).await.unwrap();
        assert_eq!(
            reopened.task("o1").await.unwrap(),
            Some(crate::memory::tasks::contract::task("o1", "s2", "m1", 3))
        );
    }
}
