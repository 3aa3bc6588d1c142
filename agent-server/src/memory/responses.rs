//! Stored Responses API state: responses (for retrieval and `previous_response_id` chains) and
//! conversations (the Conversations API), kept beside each backend's memory.
//!
//! Kept apart from [`MemoryStore`](super::MemoryStore) on purpose: memory is what the agent
//! *knows* of a session; this is what the *API* must give back verbatim (the response objects and
//! items a client sent and received). Both live in the same backend (the embedded store's
//! directory, or the same Postgres database), so they share its durability.
//!
//! Invariants every backend keeps:
//! 1. Every response and conversation belongs to one session; [`ResponseStore::reset`] removes a
//!    session's responses and conversations and nothing else.
//! 2. [`ResponseStore::put_response`] is atomic: the response, and the items it adds to its
//!    conversation, are stored together or not at all.
//! 3. A write that returned `Ok` survives a restart.
//!
//! Stores never check who asks: ids are unguessable, and the HTTP layer decides whether a session
//! may see what an id names (docs/agent-server.md, threat model).

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use protocol::SessionId;
use serde_json::Value;

use super::tasks::TaskStore;
use super::{MemoryError, MemoryStore, ResetCounts};

/// How many responses a `previous_response_id` chain may hold; the oldest beyond are not read
/// (a chain that long is past any model's context anyway).
pub const MAX_CHAIN: usize = 1000;

/// One stored response.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredResponse {
    pub id: String,
    pub session: SessionId,
    pub previous_id: Option<String>,
    pub conversation: Option<String>,
    pub created_at: DateTime<Utc>,
    /// The request's input items, each with its `id`, as `GET .../input_items` lists them.
    pub input: Vec<Value>,
    /// The response object as it was returned.
    pub body: Value,
}

impl StoredResponse {
    /// Its input items, then its output items: what it adds to a conversation or a chain.
    pub fn items(&self) -> impl Iterator<Item = &Value> {
        let output = self.body["output"].as_array().map(Vec::as_slice);
        self.input.iter().chain(output.unwrap_or_default())
    }
}

/// One conversation (its items are read apart).
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    pub id: String,
    pub session: SessionId,
    pub created_at: DateTime<Utc>,
    /// Up to 16 string pairs, as the client set them.
    pub metadata: Value,
}

#[async_trait]
pub trait ResponseStore: Send + Sync + 'static {
    /// Stores a response; when it names a conversation, appends its input and output items to
    /// it, in the same transaction.
    /// Takes the response whole: a backend that caches what it stores keeps this one.
    async fn put_response(&self, response: Arc<StoredResponse>) -> Result<(), MemoryError>;

    async fn response(&self, id: &str) -> Result<Option<StoredResponse>, MemoryError>;

    /// The chain ending at `id`, oldest first (`id` last), at most [`MAX_CHAIN`] long; empty when
    /// `id` is not stored. A response whose predecessor was deleted starts the chain.
    /// Shared rather than copied: a chain is read on every turn that continues it.
    async fn chain(&self, id: &str) -> Result<Vec<Arc<StoredResponse>>, MemoryError>;

    /// Whether there was such a response.
    async fn delete_response(&self, id: &str) -> Result<bool, MemoryError>;

    /// Creates a conversation with its first items.
    async fn put_conversation(
        &self,
        conversation: &Conversation,
        items: &[Value],
    ) -> Result<(), MemoryError>;

    async fn conversation(&self, id: &str) -> Result<Option<Conversation>, MemoryError>;

    /// Replaces a conversation's metadata; whether there was such a conversation.
    async fn update_conversation(&self, id: &str, metadata: &Value) -> Result<bool, MemoryError>;

    /// Deletes a conversation and its items (responses that named it stay); whether there was one.
    async fn delete_conversation(&self, id: &str) -> Result<bool, MemoryError>;

    /// A conversation's items, oldest first.
    async fn conversation_items(&self, id: &str) -> Result<Vec<Value>, MemoryError>;

    /// Appends items to a conversation.
    async fn append_items(&self, id: &str, items: &[Value]) -> Result<(), MemoryError>;

    /// Removes the item whose `id` is `item` from a conversation; whether there was one.
    async fn delete_item(&self, id: &str, item: &str) -> Result<bool, MemoryError>;

    /// Removes the session's responses and conversations; how many of each.
    async fn reset(&self, session: &SessionId) -> Result<(u64, u64), MemoryError>;
}

/// What [`forget_session`] removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forgotten {
    pub memory: ResetCounts,
    pub responses: u64,
    pub conversations: u64,
    /// A2A tasks ([`super::tasks`]).
    pub tasks: u64,
}

/// Forgets `session` wherever a backend keeps it: its memory first (which bumps the session's
/// epoch, so a turn that read before cannot write back), then the responses, conversations and
/// A2A tasks stored with it. The one reset `/control/session/reset` runs.
pub async fn forget_session(
    memory: &dyn MemoryStore,
    responses: &dyn ResponseStore,
    tasks: &dyn TaskStore,
    session: &SessionId,
) -> Result<Forgotten, MemoryError> {
    let counts = memory.reset(session).await?;
    let (responses, conversations) = responses.reset(session).await?;
    let tasks = tasks.reset(session).await?;
    Ok(Forgotten {
        memory: counts,
        responses,
        conversations,
        tasks,
    })
}

/// The items a response adds to its conversation: its input, then its output.
pub fn conversation_additions(response: &StoredResponse) -> Vec<Value> {
    response.items().cloned().collect()
}

#[cfg(test)]
pub(crate) mod contract {
    //! The behaviour every backend must show, run by each backend's tests.

    use super::*;
    use serde_json::json;

    fn response(
        id: &str,
        session: &str,
        previous: Option<&str>,
        conv: Option<&str>,
    ) -> StoredResponse {
        StoredResponse {
            id: id.to_owned(),
            session: SessionId::parse(session).unwrap(),
            previous_id: previous.map(str::to_owned),
            conversation: conv.map(str::to_owned),
            created_at: DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
            input: vec![
                json!({"id": format!("in_{id}"), "type": "message", "role": "user", "content": id}),
            ],
            body: json!({"id": id, "output": [{"id": format!("out_{id}"), "type": "message"}]}),
        }
    }

    pub(crate) async fn run(store: &dyn ResponseStore) {
        // Chains, oldest first.
        store
            .put_response(Arc::new(response("r1", "s1", None, None)))
            .await
            .unwrap();
        store
            .put_response(Arc::new(response("r2", "s1", Some("r1"), None)))
            .await
            .unwrap();
        store
            .put_response(Arc::new(response("r3", "s1", Some("r2"), None)))
            .await
            .unwrap();
        let chain = store.chain("r3").await.unwrap();
        let ids: Vec<&str> = chain.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["r1", "r2", "r3"]);
        assert_eq!(*chain[2], response("r3", "s1", Some("r2"), None));
        assert!(store.chain("nope").await.unwrap().is_empty());

        // A deleted link starts the chain after it.
        assert!(store.delete_response("r2").await.unwrap());
        assert!(!store.delete_response("r2").await.unwrap());
        assert!(store.response("r2").await.unwrap().is_none());
        let ids: Vec<String> = store
            .chain("r3")
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.id.clone())
            .collect();
        assert_eq!(ids, ["r3"]);

        // Conversations gather their responses' items.
        let conversation = Conversation {
            id: "c1".into(),
            session: SessionId::parse("s1").unwrap(),
            created_at: DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
            metadata: json!({"topic": "x"}),
        };
        store
            .put_conversation(&conversation, &[json!({"id": "first"})])
            .await
            .unwrap();
        assert_eq!(store.conversation("c1").await.unwrap(), Some(conversation));
        store
            .put_response(Arc::new(response("r4", "s1", None, Some("c1"))))
            .await
            .unwrap();
        store
            .append_items("c1", &[json!({"id": "last"})])
            .await
            .unwrap();
        let items = store.conversation_items("c1").await.unwrap();
        let ids: Vec<&str> = items.iter().map(|i| i["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["first", "in_r4", "out_r4", "last"]);
        assert!(store.delete_item("c1", "in_r4").await.unwrap());
        assert!(!store.delete_item("c1", "in_r4").await.unwrap());
        let items = store.conversation_items("c1").await.unwrap();
        let ids: Vec<&str> = items.iter().map(|i| i["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["first", "out_r4", "last"]);
        assert!(
            store
                .update_conversation("c1", &json!({"topic": "y"}))
                .await
                .unwrap()
        );
        assert_eq!(
            store.conversation("c1").await.unwrap().unwrap().metadata["topic"],
            "y"
        );
        assert!(!store.update_conversation("c9", &json!({})).await.unwrap());

        // Reset takes one session's state and nothing else.
        store
            .put_response(Arc::new(response("o1", "s2", None, None)))
            .await
            .unwrap();
        assert_eq!(
            store.reset(&SessionId::parse("s1").unwrap()).await.unwrap(),
            (3, 1)
        );
        assert!(store.response("r1").await.unwrap().is_none());
        assert!(store.conversation("c1").await.unwrap().is_none());
        assert!(store.conversation_items("c1").await.unwrap().is_empty());
        assert!(store.response("o1").await.unwrap().is_some());

        assert!(!store.delete_conversation("c9").await.unwrap());
    }
}
