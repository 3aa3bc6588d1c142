//! The redis+postgres backend's Responses API state: tables in the same Postgres database as
//! long-term memory (`agentwall_responses`, `agentwall_conversations`,
//! `agentwall_conversation_items`), with their own schema step at start-up.
//!
//! Their own step, not a numbered migration of long-term memory: the two evolve apart, and the
//! tables are created idempotently under an advisory lock, so servers starting together agree.
//! Statements are bounded by the pool's `statement_timeout` (`--backend-timeout`).
//!
//! A2A tasks share this store's pool (`tasks.rs`), but their table is a numbered migration of
//! the database (version 10), which the memory store applies at start, before this store opens.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::Pool;
use protocol::SessionId;
use serde_json::Value;
use tokio_postgres::Row;

use super::longterm::{self, pg_error};
use crate::memory::MemoryError;
use crate::memory::responses::{
    Conversation, MAX_CHAIN, ResponseStore, StoredResponse, conversation_additions,
};

const DEPENDENCY: &str = longterm::DEPENDENCY;

/// Serialises the schema step of servers starting together ("agentwall responses").
const SCHEMA_LOCK: i64 = 0x6167_7772_6573_7031;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS agentwall_responses (
    id              text PRIMARY KEY,
    session_id      text NOT NULL,
    previous_id     text,
    conversation_id text,
    created_at      timestamptz NOT NULL,
    input           jsonb NOT NULL,
    body            jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS agentwall_responses_session ON agentwall_responses (session_id);
CREATE TABLE IF NOT EXISTS agentwall_conversations (
    id         text PRIMARY KEY,
    session_id text NOT NULL,
    created_at timestamptz NOT NULL,
    metadata   jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS agentwall_conversations_session ON agentwall_conversations (session_id);
CREATE TABLE IF NOT EXISTS agentwall_conversation_items (
    conversation_id text NOT NULL,
    position        bigint NOT NULL,
    item            jsonb NOT NULL,
    PRIMARY KEY (conversation_id, position)
);
";

const RESPONSE_COLUMNS: &str =
    "id, session_id, previous_id, conversation_id, created_at, input, body";

pub struct PostgresResponses {
    pool: Pool,
}

impl PostgresResponses {
    /// Connects and creates the tables if needed.
    pub async fn connect(url: &str, timeout: Duration) -> Result<Self, MemoryError> {
        let pool = longterm::pool(url, 8, timeout)?;
        let store = Self { pool };
        let mut client = store.client().await?;
        let tx = client.transaction().await.map_err(pg_error)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
            .await
            .map_err(pg_error)?;
        tx.batch_execute(SCHEMA).await.map_err(pg_error)?;
        tx.commit().await.map_err(pg_error)?;
        drop(client);
        Ok(store)
    }

    pub(super) async fn client(&self) -> Result<deadpool_postgres::Object, MemoryError> {
        longterm::client(&self.pool).await
    }
}

fn corrupt(reason: String) -> MemoryError {
    MemoryError::Corrupt {
        dependency: DEPENDENCY,
        reason,
    }
}

pub(super) fn session(name: &str) -> Result<SessionId, MemoryError> {
    SessionId::parse(name).map_err(|e| corrupt(format!("stored session {name:?}: {e}")))
}

fn decode_response(row: &Row) -> Result<StoredResponse, MemoryError> {
    let input: Value = row.get(5);
    Ok(StoredResponse {
        id: row.get(0),
        session: session(row.get(1))?,
        previous_id: row.get(2),
        conversation: row.get(3),
        created_at: row.get(4),
        input: match input {
            Value::Array(items) => items,
            other => return Err(corrupt(format!("stored input is not a list: {other}"))),
        },
        body: row.get(6),
    })
}

async fn append(
    tx: &deadpool_postgres::Transaction<'_>,
    id: &str,
    items: &[Value],
) -> Result<(), MemoryError> {
    // Locks the conversation's row, so that two appends do not take the same positions.
    tx.execute(
        "SELECT 1 FROM agentwall_conversations WHERE id = $1 FOR UPDATE",
        &[&id],
    )
    .await
    .map_err(pg_error)?;
    let next: i64 = tx
        .query_one(
            "SELECT COALESCE(MAX(position) + 1, 0) FROM agentwall_conversation_items WHERE conversation_id = $1",
            &[&id],
        )
        .await
        .map_err(pg_error)?
        .get(0);
    let items = Value::Array(items.to_vec());
    tx.execute(
        "INSERT INTO agentwall_conversation_items (conversation_id, position, item)
         SELECT $1, $2 + ordinality - 1, value FROM jsonb_array_elements($3) WITH ORDINALITY",
        &[&id, &next, &items],
    )
    .await
    .map_err(pg_error)?;
    Ok(())
}

#[async_trait]
impl ResponseStore for PostgresResponses {
    async fn put_response(&self, response: Arc<StoredResponse>) -> Result<(), MemoryError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg_error)?;
        let input = Value::Array(response.input.clone());
        tx.execute(
            &format!(
                "INSERT INTO agentwall_responses ({RESPONSE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)"
            ),
            &[
                &response.id,
                &response.session.as_str(),
                &response.previous_id,
                &response.conversation,
                &response.created_at,
                &input,
                &response.body,
            ],
        )
        .await
        .map_err(pg_error)?;
        if let Some(conversation) = &response.conversation {
            append(&tx, conversation, &conversation_additions(&response)).await?;
        }
        tx.commit().await.map_err(pg_error)
    }

    async fn response(&self, id: &str) -> Result<Option<StoredResponse>, MemoryError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                &format!("SELECT {RESPONSE_COLUMNS} FROM agentwall_responses WHERE id = $1"),
                &[&id],
            )
            .await
            .map_err(pg_error)?;
        row.as_ref().map(decode_response).transpose()
    }

    async fn chain(&self, id: &str) -> Result<Vec<Arc<StoredResponse>>, MemoryError> {
        let client = self.client().await?;
        let limit = i64::try_from(MAX_CHAIN).unwrap_or(i64::MAX);
        let rows = client
            .query(
                &format!(
                    "WITH RECURSIVE chain(id, depth) AS (
                         SELECT id, 0::bigint FROM agentwall_responses WHERE id = $1
                         UNION ALL
                         SELECT r.previous_id, chain.depth + 1 FROM agentwall_responses r
                           JOIN chain ON r.id = chain.id
                          WHERE r.previous_id IS NOT NULL AND chain.depth + 1 < $2)
                     SELECT {RESPONSE_COLUMNS} FROM agentwall_responses JOIN chain USING (id)
                      ORDER BY chain.depth DESC"
                ),
                &[&id, &limit],
            )
            .await
            .map_err(pg_error)?;
        rows.iter()
            .map(|row| decode_response(row).map(Arc::new))
            .collect()
    }

    async fn delete_response(&self, id: &str) -> Result<bool, MemoryError> {
        let client = self.client().await?;
        let n = client
            .execute("DELETE FROM agentwall_responses WHERE id = $1", &[&id])
            .await
            .map_err(pg_error)?;
        Ok(n > 0)
    }

    async fn put_conversation(
        &self,
        conversation: &Conversation,
        items: &[Value],
    ) -> Result<(), MemoryError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg_error)?;
        tx.execute(
            "INSERT INTO agentwall_conversations (id, session_id, created_at, metadata) VALUES ($1, $2, $3, $4)",
            &[
                &conversation.id,
                &conversation.session.as_str(),
                &conversation.created_at,
                &conversation.metadata,
            ],
        )
        .await
        .map_err(pg_error)?;
        append(&tx, &conversation.id, items).await?;
        tx.commit().await.map_err(pg_error)
    }

    async fn conversation(&self, id: &str) -> Result<Option<Conversation>, MemoryError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT id, session_id, created_at, metadata FROM agentwall_conversations WHERE id = $1",
                &[&id],
            )
            .await
            .map_err(pg_error)?;
        row.map(|row| {
            Ok(Conversation {
                id: row.get(0),
                session: session(row.get(1))?,
                created_at: row.get(2),
                metadata: row.get(3),
            })
        })
        .transpose()
    }

    async fn update_conversation(&self, id: &str, metadata: &Value) -> Result<bool, MemoryError> {
        let client = self.client().await?;
        let n = client
            .execute(
                "UPDATE agentwall_conversations SET metadata = $2 WHERE id = $1",
                &[&id, metadata],
            )
            .await
            .map_err(pg_error)?;
        Ok(n > 0)
    }

    async fn delete_conversation(&self, id: &str) -> Result<bool, MemoryError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg_error)?;
        tx.execute(
            "DELETE FROM agentwall_conversation_items WHERE conversation_id = $1",
            &[&id],
        )
        .await
        .map_err(pg_error)?;
        let n = tx
            .execute("DELETE FROM agentwall_conversations WHERE id = $1", &[&id])
            .await
            .map_err(pg_error)?;
        tx.commit().await.map_err(pg_error)?;
        Ok(n > 0)
    }

    async fn conversation_items(&self, id: &str) -> Result<Vec<Value>, MemoryError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT item FROM agentwall_conversation_items WHERE conversation_id = $1 ORDER BY position",
                &[&id],
            )
            .await
            .map_err(pg_error)?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    async fn append_items(&self, id: &str, items: &[Value]) -> Result<(), MemoryError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg_error)?;
        append(&tx, id, items).await?;
        tx.commit().await.map_err(pg_error)
    }

    async fn delete_item(&self, id: &str, item: &str) -> Result<bool, MemoryError> {
        let client = self.client().await?;
        let n = client
            .execute(
                "DELETE FROM agentwall_conversation_items
                  WHERE conversation_id = $1 AND item->>'id' = $2",
                &[&id, &item],
            )
            .await
            .map_err(pg_error)?;
        Ok(n > 0)
    }

    async fn reset(&self, session: &SessionId) -> Result<(u64, u64), MemoryError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg_error)?;
        let name = session.as_str();
        let responses = tx
            .execute(
                "DELETE FROM agentwall_responses WHERE session_id = $1",
                &[&name],
            )
            .await
            .map_err(pg_error)?;
        tx.execute(
            "DELETE FROM agentwall_conversation_items WHERE conversation_id IN
               (SELECT id FROM agentwall_conversations WHERE session_id = $1)",
            &[&name],
        )
        .await
        .map_err(pg_error)?;
        let conversations = tx
            .execute(
                "DELETE FROM agentwall_conversations WHERE session_id = $1",
                &[&name],
            )
            .await
            .map_err(pg_error)?;
        tx.commit().await.map_err(pg_error)?;
        Ok((responses, conversations))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Needs the test Postgres (`scripts/test-services.sh`).
    #[tokio::test]
    async fn keeps_the_response_store_contract_and_its_schema_step_is_idempotent() {
        let db = testkit::postgres::TestDb::create().await;
        let timeout = Duration::from_secs(5);
        let store = PostgresResponses::connect(&db.url, timeout).await.unwrap();
        crate::memory::responses::contract::run(&store).await;
        drop(store);
        let again = PostgresResponses::connect(&db.url, timeout).await.unwrap();
        assert!(again.response("o1").await.unwrap().is_some());
    }
}
