//! Stored A2A tasks: what `GetTask` and `ListTasks` give back, and what a repeated `SendMessage`
//! (same `messageId`) is answered with, kept beside each backend's memory (the embedded store's
//! responses file, or the same Postgres database).
//!
//! Like Responses API state ([`super::responses`]), apart from [`MemoryStore`](super::MemoryStore):
//! memory is what the agent knows of a session, a task is what the API must give back verbatim.
//! The task itself is kept as the JSON the client received (`body`); the columns beside it are
//! what the stores look tasks up by.
//!
//! Invariants every backend keeps:
//! 1. Every task belongs to one session; [`TaskStore::reset`] removes a session's tasks and
//!    nothing else, and a listing or a `messageId` lookup sees its own session's tasks only.
//! 2. [`TaskStore::put_task`] is atomic and replaces a task of the same id whole (a task's state
//!    changes by writing it again).
//! 3. A write that returned `Ok` survives a restart.
//! 4. A listing is ordered by `updated_at`, newest first, then by id (descending), and a page
//!    continues after the cursor it is given, so pages neither repeat nor skip a task.
//!
//! Stores never check who asks by id: task ids are unguessable, and the HTTP layer decides whether
//! a session may see what an id names (docs/agent-server.md, threat model).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use protocol::SessionId;
use serde_json::Value;

use super::MemoryError;

/// One stored task.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTask {
    pub id: String,
    pub session: SessionId,
    /// The `messageId` of the user message that started it.
    pub message_id: String,
    /// Its state's proto name (`TASK_STATE_COMPLETED`, ...), as in `body`.
    pub state: String,
    /// Its status timestamp (millisecond precision, as the body writes it): what listings order
    /// by.
    pub updated_at: DateTime<Utc>,
    /// The task as the client received it, its whole history included.
    pub body: Value,
}

/// Where a page of a listing starts: after the task of this time and id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskCursor {
    pub updated_at: DateTime<Utc>,
    pub id: String,
}

/// Which of a session's tasks to list.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskQuery {
    /// Only tasks in this state (a proto name).
    pub state: Option<String>,
    /// Only tasks updated after this time.
    pub updated_after: Option<DateTime<Utc>>,
    /// Continue after this task (the last of the previous page).
    pub after: Option<TaskCursor>,
    /// At most this many.
    pub limit: usize,
}

/// A page of a listing and how many tasks match the query in all (the cursor aside).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskPage {
    pub tasks: Vec<StoredTask>,
    pub total: u64,
}

#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a task, replacing one of the same id.
    async fn put_task(&self, task: &StoredTask) -> Result<(), MemoryError>;

    async fn task(&self, id: &str) -> Result<Option<StoredTask>, MemoryError>;

    /// The latest task of `session` that the user message `message_id` started, if any.
    async fn task_for_message(
        &self,
        session: &SessionId,
        message_id: &str,
    ) -> Result<Option<StoredTask>, MemoryError>;

    /// A page of `session`'s tasks ([invariant 4](self)).
    async fn list_tasks(
        &self,
        session: &SessionId,
        query: &TaskQuery,
    ) -> Result<TaskPage, MemoryError>;

    /// Removes the session's tasks; how many.
    async fn reset(&self, session: &SessionId) -> Result<u64, MemoryError>;
}

#[cfg(test)]
pub(crate) mod contract {
    //! The behaviour every backend must show, run by each backend's tests.

    use super::*;
    use serde_json::json;

    fn at(second: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + second, 123_000_000).unwrap()
    }

    pub(crate) fn task(id: &str, session: &str, message: &str, second: i64) -> StoredTask {
        StoredTask {
            id: id.to_owned(),
            session: SessionId::parse(session).unwrap(),
            message_id: message.to_owned(),
            state: "TASK_STATE_COMPLETED".to_owned(),
            updated_at: at(second),
            body: json!({"id": id, "contextId": session, "status": {"state": "TASK_STATE_COMPLETED"}}),
        }
    }

    fn ids(page: &TaskPage) -> Vec<&str> {
        page.tasks.iter().map(|t| t.id.as_str()).collect()
    }

    fn query(limit: usize) -> TaskQuery {
        TaskQuery {
            state: None,
            updated_after: None,
            after: None,
            limit,
        }
    }

    pub(crate) async fn run(store: &dyn TaskStore) {
        let s1 = SessionId::parse("s1").unwrap();
        let s2 = SessionId::parse("s2").unwrap();
        for (id, session, message, second) in [
            ("t1", "s1", "m1", 1),
            ("t2", "s1", "m2", 2),
            ("t3", "s1", "m3", 2),
            ("t4", "s1", "m4", 4),
            ("o1", "s2", "m1", 3),
        ] {
            store
                .put_task(&task(id, session, message, second))
                .await
                .unwrap();
        }
        // Read back as written, the time to the millisecond.
        assert_eq!(
            store.task("t2").await.unwrap(),
            Some(task("t2", "s1", "m2", 2))
        );
        assert!(store.task("nope").await.unwrap().is_none());

        // A message id is looked up in its own session only.
        let found = store.task_for_message(&s1, "m1").await.unwrap().unwrap();
        assert_eq!(found.id, "t1");
        let found = store.task_for_message(&s2, "m1").await.unwrap().unwrap();
        assert_eq!(found.id, "o1");
        assert!(store.task_for_message(&s2, "m2").await.unwrap().is_none());

        // Newest first, ties by id descending; pages continue after their cursor.
        let all = store.list_tasks(&s1, &query(10)).await.unwrap();
        assert_eq!(ids(&all), ["t4", "t3", "t2", "t1"]);
        assert_eq!(all.total, 4);
        let first = store.list_tasks(&s1, &query(2)).await.unwrap();
        assert_eq!(ids(&first), ["t4", "t3"]);
        assert_eq!(first.total, 4);
        let last = &first.tasks[1];
        let next = TaskQuery {
            after: Some(TaskCursor {
                updated_at: last.updated_at,
                id: last.id.clone(),
            }),
            ..query(2)
        };
        let second = store.list_tasks(&s1, &next).await.unwrap();
        assert_eq!(ids(&second), ["t2", "t1"]);
        assert_eq!(second.total, 4, "the total does not depend on the cursor");
        let recent = TaskQuery {
            updated_after: Some(at(2)),
            ..query(10)
        };
        assert_eq!(ids(&store.list_tasks(&s1, &recent).await.unwrap()), ["t4"]);

        // Written again: replaced whole, and filtered by its new state.
        let mut canceled = task("t4", "s1", "m4", 5);
        canceled.state = "TASK_STATE_CANCELED".to_owned();
        canceled.body["status"]["state"] = json!("TASK_STATE_CANCELED");
        store.put_task(&canceled).await.unwrap();
        assert_eq!(store.task("t4").await.unwrap(), Some(canceled));
        let by_state = TaskQuery {
            state: Some("TASK_STATE_CANCELED".to_owned()),
            ..query(10)
        };
        let page = store.list_tasks(&s1, &by_state).await.unwrap();
        assert_eq!((ids(&page), page.total), (vec!["t4"], 1));

        // Reset takes one session's tasks and nothing else.
        assert_eq!(store.reset(&s1).await.unwrap(), 4);
        assert!(store.task("t1").await.unwrap().is_none());
        assert!(store.task_for_message(&s1, "m1").await.unwrap().is_none());
        assert_eq!(store.list_tasks(&s1, &query(10)).await.unwrap().total, 0);
        assert!(store.task("o1").await.unwrap().is_some());
        assert_eq!(store.reset(&s1).await.unwrap(), 0);
    }
}
