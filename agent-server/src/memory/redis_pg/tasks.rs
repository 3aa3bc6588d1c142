//! A2A tasks in Postgres (`agentwall_a2a_tasks`, migration 10), through the Responses store's
//! pool: the same database as long-term memory, so tasks share its durability. Statements are
//! bounded by the pool's `statement_timeout` (`--backend-timeout`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use protocol::SessionId;
use tokio_postgres::Row;

use super::longterm::pg_error;
use super::responses::{PostgresResponses, session};
use crate::memory::MemoryError;
use crate::memory::tasks::{StoredTask, TaskPage, TaskQuery, TaskStore};

const COLUMNS: &str = "id, session_id, message_id, state, updated_at, body";

/// Both listing statements filter alike; a NULL parameter switches its filter off.
const FILTER: &str = "session_id = $1 AND ($2::text IS NULL OR state = $2)
                      AND ($3::timestamptz IS NULL OR updated_at > $3)";

/// The latest task of a session's message: one entry of the index `agentwall_a2a_tasks_message`,
/// which holds the order too (every message is looked up, so it must not walk the session's
/// tasks).
const FOR_MESSAGE: &str = "SELECT id, session_id, message_id, state, updated_at, body
     FROM agentwall_a2a_tasks WHERE session_id = $1 AND message_id = $2
     ORDER BY updated_at DESC, id DESC LIMIT 1";

fn decode(row: &Row) -> Result<StoredTask, MemoryError> {
    Ok(StoredTask {
        id: row.get(0),
        session: session(row.get(1))?,
        message_id: row.get(2),
        state: row.get(3),
        updated_at: row.get(4),
        body: row.get(5),
    })
}

#[async_trait]
impl TaskStore for PostgresResponses {
    async fn put_task(&self, task: &StoredTask) -> Result<(), MemoryError> {
        let client = self.client().await?;
        client
            .execute(
                &format!(
                    "INSERT INTO agentwall_a2a_tasks ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)
                     ON CONFLICT (id) DO UPDATE SET session_id = EXCLUDED.session_id,
                         message_id = EXCLUDED.message_id, state = EXCLUDED.state,
                         updated_at = EXCLUDED.updated_at, body = EXCLUDED.body"
                ),
                &[
                    &task.id,
                    &task.session.as_str(),
                    &task.message_id,
                    &task.state,
                    &task.updated_at,
                    &task.body,
                ],
            )
            .await
            .map_err(pg_error)?;
        Ok(())
    }

    async fn task(&self, id: &str) -> Result<Option<StoredTask>, MemoryError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                &format!("SELECT {COLUMNS} FROM agentwall_a2a_tasks WHERE id = $1"),
                &[&id],
            )
            .await
            .map_err(pg_error)?;
        row.as_ref().map(decode).transpose()
    }

    async fn task_for_message(
        &self,
        session: &SessionId,
        message_id: &str,
    ) -> Result<Option<StoredTask>, MemoryError> {
        let client = self.client().await?;
        let row = client
            .query_opt(FOR_MESSAGE, &[&session.as_str(), &message_id])
            .await
            .map_err(pg_error)?;
        row.as_ref().map(decode).transpose()
    }

    async fn list_tasks(
        &self,
        session: &SessionId,
        query: &TaskQuery,
    ) -> Result<TaskPage, MemoryError> {
        let client = self.client().await?;
        let name = session.as_str();
        let (cursor_at, cursor_id): (Option<DateTime<Utc>>, Option<&str>) = query
            .after
            .as_ref()
            .map(|c| (c.updated_at, c.id.as_str()))
            .unzip();
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let total: i64 = client
            .query_one(
                &format!("SELECT count(*) FROM agentwall_a2a_tasks WHERE {FILTER}"),
                &[&name, &query.state, &query.updated_after],
            )
            .await
            .map_err(pg_error)?
            .get(0);
        let rows = client
            .query(
                &format!(
                    "SELECT {COLUMNS} FROM agentwall_a2a_tasks WHERE {FILTER}
                       AND ($4::timestamptz IS NULL OR (updated_at, id) < ($4, $5::text))
                     ORDER BY updated_at DESC, id DESC LIMIT $6"
                ),
                &[
                    &name,
                    &query.state,
                    &query.updated_after,
                    &cursor_at,
                    &cursor_id,
                    &limit,
                ],
            )
            .await
            .map_err(pg_error)?;
        Ok(TaskPage {
            tasks: rows.iter().map(decode).collect::<Result<_, _>>()?,
            total: u64::try_from(total).unwrap_or_default(),
        })
    }

    async fn reset(&self, session: &SessionId) -> Result<u64, MemoryError> {
        let client = self.client().await?;
        client
            .execute(
                "DELETE FROM agentwall_a2a_tasks WHERE session_id = $1",
                &[&session.as_str()],
            )
            .await
            .map_err(pg_error)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::memory::redis_pg::longterm;

    const TIMEOUT: Duration = Duration::from_secs(5);

    /// A throwaway database with every migration applied (the tasks' table is migration 10's,
    /// which the memory store applies at start), and a task store on it.
    async fn migrated() -> (testkit::postgres::TestDb, PostgresResponses) {
        let db = testkit::postgres::TestDb::create().await;
        let pool = longterm::pool(&db.url, 1, TIMEOUT).unwrap();
        longterm::migrate(&mut longterm::client(&pool).await.unwrap())
            .await
            .unwrap();
        let store = PostgresResponses::connect(&db.url, TIMEOUT).await.unwrap();
        (db, store)
    }

    /// A message's lookup reads the message index, its order included: no sort, no walk of the
    /// session's tasks (sequential scans off, as a large table would have them).
    #[tokio::test]
    async fn a_message_is_looked_up_in_its_index_without_a_sort() {
        let (db, store) = migrated().await;
        for n in 0..50 {
            let task = crate::memory::tasks::contract::task(&format!("t{n}"), "s1", "m", n);
            store.put_task(&task).await.unwrap();
        }
        let client = db.client().await;
        client
            .batch_execute("ANALYZE agentwall_a2a_tasks; SET enable_seqscan = off")
            .await
            .unwrap();
        let plan: Vec<String> = client
            .query(&format!("EXPLAIN {FOR_MESSAGE}"), &[&"s1", &"m"])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let plan = plan.join("\n");
        assert!(plan.contains("agentwall_a2a_tasks_message"), "{plan}");
        assert!(!plan.contains("Sort"), "{plan}");
        let found = store
            .task_for_message(&SessionId::parse("s1").unwrap(), "m")
            .await
            .unwrap();
        assert_eq!(found.unwrap().id, "t49", "the latest");
    }

    /// Needs the test Postgres (`scripts/test-services.sh`).
    #[tokio::test]
    async fn keeps_the_task_store_contract_across_a_reconnect() {
        let (db, store) = migrated().await;
        crate::memory::tasks::contract::run(&store).await;
        drop(store);
        let again = PostgresResponses::connect(&db.url, TIMEOUT).await.unwrap();
        assert_eq!(
            again.task("o1").await.unwrap(),
            Some(crate::memory::tasks::contract::task("o1", "s2", "m1", 3))
        );
    }
}
