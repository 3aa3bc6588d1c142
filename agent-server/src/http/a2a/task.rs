//! The task a message makes: one task per message, answered in one turn, so every stored task is
//! final (`TASK_STATE_COMPLETED`).
//!
//! - Its context is its session: `contextId` is the session id, always.
//! - Its history is the user's message (with the task's and context's ids filled in) and the
//!   agent's reply; its one artifact, `reply`, holds the reply's text: results are artifacts, as
//!   the specification asks, and the history keeps the exchange for `GetTask`.
//! - Its status timestamp is the turn's clock (`X-Mock-Time`, else the real one) to the
//!   millisecond, as A2A writes times; listings order by it.

use chrono::{DateTime, SecondsFormat, SubsecRound as _, Utc};
use protocol::SessionId;
use protocol::a2a::{
    Artifact, Message, Part, Role, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
use serde_json::Value;

use crate::error::A2aError;
use crate::memory::tasks::StoredTask;

/// The name of the artifact that holds the reply.
pub(super) const REPLY_ARTIFACT: &str = "reply";

/// A message being answered: the task it makes.
#[derive(Debug, Clone)]
pub(super) struct Exchange {
    pub(super) task_id: String,
    pub(super) session: SessionId,
    /// The user's message, with the task's and context's ids.
    pub(super) user: Message,
    pub(super) artifact_id: String,
    /// The turn's clock, to the millisecond.
    pub(super) at: DateTime<Utc>,
}

impl Exchange {
    /// The task `user` starts in `session` at `now`.
    pub(super) fn new(session: SessionId, mut user: Message, now: DateTime<Utc>) -> Self {
        let task_id = uuid::Uuid::new_v4().to_string();
        user.task_id = Some(task_id.clone());
        user.context_id = Some(session.as_str().to_owned());
        Self {
            task_id,
            session,
            user,
            artifact_id: uuid::Uuid::new_v4().to_string(),
            at: now.trunc_subsecs(3),
        }
    }

    fn context_id(&self) -> String {
        self.session.as_str().to_owned()
    }

    fn status(&self, state: TaskState) -> TaskStatus {
        TaskStatus {
            timestamp: Some(self.at.to_rfc3339_opts(SecondsFormat::Millis, true)),
            ..TaskStatus::new(state)
        }
    }

    /// The task while the turn runs: working, its history the user's message.
    pub(super) fn working(&self) -> Task {
        Task {
            id: self.task_id.clone(),
            context_id: Some(self.context_id()),
            status: self.status(TaskState::Working),
            history: vec![self.user.clone()],
            ..Task::default()
        }
    }

    /// The task once its turn is committed, answered with `reply`.
    pub(super) fn completed(&self, reply: &str) -> Task {
        let mut agent = Message::new(
            Role::Agent,
            uuid::Uuid::new_v4().to_string(),
            vec![Part::text(reply)],
        );
        agent.task_id = Some(self.task_id.clone());
        agent.context_id = Some(self.context_id());
        Task {
            id: self.task_id.clone(),
            context_id: Some(self.context_id()),
            status: self.status(TaskState::Completed),
            artifacts: vec![Artifact {
                artifact_id: self.artifact_id.clone(),
                name: Some(REPLY_ARTIFACT.to_owned()),
                parts: vec![Part::text(reply)],
                ..Artifact::default()
            }],
            history: vec![self.user.clone(), agent],
            ..Task::default()
        }
    }

    /// A piece of the reply, streamed: the first makes the artifact, the others add to it;
    /// `last` says it is whole.
    pub(super) fn chunk(&self, text: &str, first: bool, last: bool) -> TaskArtifactUpdateEvent {
        TaskArtifactUpdateEvent {
            task_id: self.task_id.clone(),
            context_id: self.context_id(),
            artifact: Artifact {
                artifact_id: self.artifact_id.clone(),
                name: first.then(|| REPLY_ARTIFACT.to_owned()),
                parts: vec![Part::text(text)],
                ..Artifact::default()
            },
            append: !first,
            last_chunk: last,
            ..TaskArtifactUpdateEvent::default()
        }
    }

    /// The stream's last event: the task completed.
    pub(super) fn done(&self) -> TaskStatusUpdateEvent {
        TaskStatusUpdateEvent {
            task_id: self.task_id.clone(),
            context_id: self.context_id(),
            status: self.status(TaskState::Completed),
            ..TaskStatusUpdateEvent::default()
        }
    }

    /// `task` as stored.
    pub(super) fn stored(&self, task: &Task) -> Result<StoredTask, A2aError> {
        Ok(StoredTask {
            id: self.task_id.clone(),
            session: self.session.clone(),
            message_id: self.user.message_id.clone(),
            state: task.status.state.as_str().to_owned(),
            updated_at: self.at,
            body: encode(task)?,
        })
    }
}

/// A task as JSON.
pub(super) fn encode(task: &Task) -> Result<Value, A2aError> {
    serde_json::to_value(task)
        .map_err(|_| A2aError::Api(crate::error::ApiError::Internal("a task did not serialise")))
}

/// A stored task as the client gets it back: its history cut to the `history_length` most recent
/// messages (none for 0; all when absent), its artifacts left out unless `artifacts`.
pub(super) fn shown(
    stored: &StoredTask,
    history_length: Option<i32>,
    artifacts: bool,
) -> Result<Task, A2aError> {
    let mut task: Task = serde_json::from_value(stored.body.clone()).map_err(|_| {
        A2aError::Api(crate::error::ApiError::Internal(
            "a stored task is not a task",
        ))
    })?;
    if let Some(keep) = history_length {
        let keep = usize::try_from(keep).unwrap_or(0);
        let drop = task.history.len().saturating_sub(keep);
        task.history.drain(..drop);
    }
    if !artifacts {
        task.artifacts.clear();
    }
    Ok(task)
}

/// Refuses a negative `historyLength` (`field` names where it was given).
pub(super) fn check_history_length(length: Option<i32>, field: &str) -> Result<(), A2aError> {
    match length {
        Some(n) if n < 0 => Err(A2aError::invalid_params(
            format!("{field} is {n}; send 0 or more (0: no history)"),
            Some(field),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange() -> Exchange {
        let now = DateTime::parse_from_rfc3339("2026-03-01T09:00:00.123456Z")
            .unwrap()
            .to_utc();
        let user = Message::new(Role::User, "m-1", vec![Part::text("Hi")]);
        Exchange::new(SessionId::parse("s-1").unwrap(), user, now)
    }

    #[test]
    fn a_completed_task_holds_the_reply_as_its_artifact_and_the_exchange_as_its_history() {
        let ex = exchange();
        let task = ex.completed("Hello.");
        let json = serde_json::to_value(&task).unwrap();
        assert_eq!(json["contextId"], "s-1");
        assert_eq!(json["status"]["state"], "TASK_STATE_COMPLETED");
        assert_eq!(json["status"]["timestamp"], "2026-03-01T09:00:00.123Z");
        assert_eq!(json["artifacts"][0]["name"], "reply");
        assert_eq!(
            json["artifacts"][0]["parts"],
            serde_json::json!([{"text": "Hello."}])
        );
        assert_eq!(json["history"][0]["taskId"], json["id"]);
        assert_eq!(json["history"][0]["contextId"], "s-1");
        assert_eq!(json["history"][1]["role"], "ROLE_AGENT");
        let stored = ex.stored(&task).unwrap();
        assert_eq!(stored.state, "TASK_STATE_COMPLETED");
        assert_eq!(stored.message_id, "m-1");
        assert_eq!(stored.updated_at.timestamp_subsec_micros(), 123_000);

        // Shown again with less.
        let none = shown(&stored, Some(0), true).unwrap();
        assert!(none.history.is_empty() && none.artifacts.len() == 1);
        let last = shown(&stored, Some(1), false).unwrap();
        assert_eq!(last.history.len(), 1);
        assert_eq!(last.history[0].role, Role::Agent);
        assert!(last.artifacts.is_empty());
        assert_eq!(shown(&stored, None, true).unwrap(), task);
        assert!(check_history_length(Some(-1), "historyLength").is_err());
    }

    #[test]
    fn streamed_chunks_make_one_artifact() {
        let ex = exchange();
        let first = ex.chunk("Hel", true, false);
        let last = ex.chunk("lo", false, true);
        assert_eq!(first.artifact.artifact_id, last.artifact.artifact_id);
        assert!(!first.append && last.append && last.last_chunk);
        assert_eq!(first.artifact.name.as_deref(), Some(REPLY_ARTIFACT));
        assert!(ex.done().status.state.is_terminal());
    }
}
