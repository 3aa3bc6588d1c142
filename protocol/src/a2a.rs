//! The Agent2Agent protocol (A2A), version 1.0, JSON-RPC binding: the agent card, messages, parts,
//! tasks and their states, the requests and answers of the JSON-RPC methods, streaming events,
//! and the JSON-RPC envelope with its error codes (docs/contracts/a2a.md).
//!
//! The shapes are the proto-JSON of the specification's `a2a.proto` (package `lf.a2a.v1`):
//! camelCase field names, enums by their proto names (`ROLE_USER`, `TASK_STATE_COMPLETED`), a
//! `oneof` as the one field that is set (a [`Part`] is `{"text": ...}`, `{"data": ...}`,
//! `{"url": ...}` or `{"raw": ...}`; a [`SendMessageResponse`] is `{"task": ...}` or
//! `{"message": ...}`; a [`StreamResponse`] is `{"task"|"message"|"statusUpdate"|"artifactUpdate":
//! ...}`).
//!
//! Invariants, as for the rest of the crate:
//!
//! - What arrives is read leniently: a field may be absent or `null` alike, unknown fields are
//!   kept in `extra`, an enum value this crate does not know is kept as it came
//!   ([`TaskState::Other`], [`Role::Other`]) and the lower-case names of A2A 0.3
//!   (`"completed"`, `"input-required"`, `"user"`) are read as their 1.0 equivalents. A `oneof`
//!   is a struct of options, so a body that sets none or two can be parsed and then refused with
//!   a reason ([`SendMessageResponse::payload`], [`StreamResponse::event`]).
//! - What we send skips what is absent or empty, as proto-JSON does for default values.
//! - No I/O: the judge (client) and agent-server (server) use the same types.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::openai::Extra;

/// The protocol version this crate speaks (`Major.Minor`, as the `A2A-Version` header and an
/// interface's `protocolVersion` carry it).
pub const PROTOCOL_VERSION: &str = "1.0";

/// The service-parameter header naming the protocol version of a request. A server reads an
/// absent one as 0.3.
pub const VERSION_HEADER: &str = "A2A-Version";

/// The service-parameter header listing the extension URIs a client uses, comma-separated.
pub const EXTENSIONS_HEADER: &str = "A2A-Extensions";

/// Where an agent's card is served, below its base URL.
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";

/// An interface's `protocolBinding` for JSON-RPC 2.0 over HTTP (SSE for streams).
pub const BINDING_JSONRPC: &str = "JSONRPC";
/// An interface's `protocolBinding` for the HTTP+JSON (REST) binding.
pub const BINDING_HTTP_JSON: &str = "HTTP+JSON";
/// An interface's `protocolBinding` for gRPC.
pub const BINDING_GRPC: &str = "GRPC";

/// The media type of a data part.
pub const MEDIA_TYPE_JSON: &str = "application/json";
/// The media type of a text part.
pub const MEDIA_TYPE_TEXT: &str = "text/plain";

/// The JSON-RPC method names of the binding (PascalCase, as the gRPC service names them).
pub mod method {
    pub const SEND_MESSAGE: &str = "SendMessage";
    pub const SEND_STREAMING_MESSAGE: &str = "SendStreamingMessage";
    pub const GET_TASK: &str = "GetTask";
    pub const LIST_TASKS: &str = "ListTasks";
    pub const CANCEL_TASK: &str = "CancelTask";
    pub const SUBSCRIBE_TO_TASK: &str = "SubscribeToTask";
    pub const CREATE_TASK_PUSH_NOTIFICATION_CONFIG: &str = "CreateTaskPushNotificationConfig";
    pub const GET_TASK_PUSH_NOTIFICATION_CONFIG: &str = "GetTaskPushNotificationConfig";
    pub const LIST_TASK_PUSH_NOTIFICATION_CONFIGS: &str = "ListTaskPushNotificationConfigs";
    pub const DELETE_TASK_PUSH_NOTIFICATION_CONFIG: &str = "DeleteTaskPushNotificationConfig";
    pub const GET_EXTENDED_AGENT_CARD: &str = "GetExtendedAgentCard";

    /// Every method of the binding.
    pub const ALL: &[&str] = &[
        SEND_MESSAGE,
        SEND_STREAMING_MESSAGE,
        GET_TASK,
        LIST_TASKS,
        CANCEL_TASK,
        SUBSCRIBE_TO_TASK,
        CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
        GET_TASK_PUSH_NOTIFICATION_CONFIG,
        LIST_TASK_PUSH_NOTIFICATION_CONFIGS,
        DELETE_TASK_PUSH_NOTIFICATION_CONFIG,
        GET_EXTENDED_AGENT_CARD,
    ];
}

/// agentwall's A2A extension for OpenAI-style function tools carried in data parts
/// (docs/contracts/a2a.md, "Tools"). An agent declares it in `capabilities.extensions`; a client
/// that uses it names it in the message's `extensions` and the `A2A-Extensions` header.
pub const TOOLS_EXTENSION: &str = "urn:agentwall:a2a:tools:v1";

/// The keys of the tools extension's data parts.
pub mod tools_data {
    /// Request: `{"tools": [<Chat Completions tool>...]}`, the tools the agent may call.
    pub const TOOLS: &str = "tools";
    /// Request: `{"tool_results": [{"tool_call_id", "content"}...]}`, answers to its calls.
    pub const TOOL_RESULTS: &str = "tool_results";
    /// Reply: `{"tool_calls": [<Chat Completions tool call>...]}`, the calls the agent makes.
    pub const TOOL_CALLS: &str = "tool_calls";
}

/// The part metadata key (and its values) by which agentwall's judge says what it put in a part
/// beside the user's words (docs/contracts/a2a.md); a part without it is the user's own.
pub mod part_kind {
    /// The metadata key.
    pub const KEY: &str = "agentwall/part";
    /// The conversation's standing instructions (what Chat Completions sends as system messages).
    pub const INSTRUCTIONS: &str = "instructions";
    /// The earlier conversation, rendered as text (`--history full`).
    pub const HISTORY: &str = "history";
    /// The tools offered (a `tools` data part).
    pub const TOOLS: &str = "tools";
    /// Answers to the agent's tool calls (a `tool_results` data part).
    pub const TOOL_RESULTS: &str = "tool_results";
}

fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

fn is_false(b: &bool) -> bool {
    !*b
}

// ---------------------------------------------------------------------------------------------
// Enums

/// Declares an enum read from its proto name, its number, or the lower-case name of A2A 0.3, and
/// written as its proto name; an unknown value is kept in `Other`.
macro_rules! proto_enum {
    (
        $(#[$meta:meta])*
        $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $number:literal, $proto:literal $(| $legacy:literal)* ; )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value this crate does not know, as it came.
            Other(String),
        }

        impl $name {
            /// The proto name (what is written).
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $proto, )+
                    $name::Other(s) => s,
                }
            }

            /// Reads a proto name, or a lower-case name of A2A 0.3.
            pub fn parse(s: &str) -> Self {
                match s {
                    $( $proto $(| $legacy)* => $name::$variant, )+
                    other => $name::Other(other.to_owned()),
                }
            }

            fn from_number(n: i64) -> Self {
                match n {
                    $( $number => $name::$variant, )+
                    other => $name::Other(other.to_string()),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                match Option::<Value>::deserialize(deserializer)? {
                    None => Ok(Self::default()),
                    Some(Value::String(s)) => Ok(Self::parse(&s)),
                    Some(Value::Number(n)) => Ok(n.as_i64().map_or_else(
                        || $name::Other(n.to_string()),
                        Self::from_number,
                    )),
                    Some(other) => Ok($name::Other(other.to_string())),
                }
            }
        }
    };
}

proto_enum! {
    /// The state of a task. `Completed`, `Failed`, `Canceled` and `Rejected` are terminal;
    /// `InputRequired` and `AuthRequired` interrupt the task until the client answers.
    TaskState {
        #[default]
        Unspecified = 0, "TASK_STATE_UNSPECIFIED" | "unknown";
        Submitted = 1, "TASK_STATE_SUBMITTED" | "submitted";
        Working = 2, "TASK_STATE_WORKING" | "working";
        Completed = 3, "TASK_STATE_COMPLETED" | "completed";
        Failed = 4, "TASK_STATE_FAILED" | "failed";
        Canceled = 5, "TASK_STATE_CANCELED" | "canceled" | "cancelled";
        InputRequired = 6, "TASK_STATE_INPUT_REQUIRED" | "input-required";
        Rejected = 7, "TASK_STATE_REJECTED" | "rejected";
        AuthRequired = 8, "TASK_STATE_AUTH_REQUIRED" | "auth-required";
    }
}

impl TaskState {
    /// A state the task never leaves.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// A state in which the task waits for the client (more input, or authorization).
    pub fn is_interrupted(&self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// A blocking `SendMessage` returns once the task is terminal or interrupted; a stream ends
    /// there too.
    pub fn is_final(&self) -> bool {
        self.is_terminal() || self.is_interrupted()
    }
}

proto_enum! {
    /// Who sent a message.
    Role {
        #[default]
        Unspecified = 0, "ROLE_UNSPECIFIED";
        User = 1, "ROLE_USER" | "user";
        Agent = 2, "ROLE_AGENT" | "agent";
    }
}

// ---------------------------------------------------------------------------------------------
// Messages, parts, artifacts, tasks

/// A piece of a message or an artifact: exactly one of `text`, `raw` (base64), `url` or `data`
/// (any JSON value) is set, with optional metadata, file name and media type.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// File bytes, base64-encoded (proto `bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Extra>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Part {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// A data part (`application/json`).
    pub fn data(data: Value) -> Self {
        Self {
            data: Some(data),
            media_type: Some(MEDIA_TYPE_JSON.to_owned()),
            ..Self::default()
        }
    }

    pub fn with_metadata(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.metadata
            .get_or_insert_with(Extra::new)
            .insert(key.to_owned(), value.into());
        self
    }

    /// How many of the `content` oneof's fields are set (a valid part has exactly one).
    pub fn contents(&self) -> usize {
        [
            self.text.is_some(),
            self.raw.is_some(),
            self.url.is_some(),
            self.data.is_some(),
        ]
        .into_iter()
        .filter(|set| *set)
        .count()
    }
}

/// The concatenated text of `parts` (their `text` fields, in order, nothing between them).
pub fn text_of(parts: &[Part]) -> String {
    parts.iter().filter_map(|p| p.text.as_deref()).collect()
}

/// One message of a conversation, from the user (client) or the agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(default, deserialize_with = "null_as_default")]
    pub message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default)]
    pub role: Role,
    #[serde(default, deserialize_with = "null_as_default")]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Extra>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub reference_task_ids: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Message {
    /// A message of `role` with these parts.
    pub fn new(role: Role, message_id: impl Into<String>, parts: Vec<Part>) -> Self {
        Self {
            message_id: message_id.into(),
            role,
            parts,
            ..Self::default()
        }
    }

    /// The concatenated text of its parts.
    pub fn text(&self) -> String {
        text_of(&self.parts)
    }
}

/// An output of a task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    #[serde(default, deserialize_with = "null_as_default")]
    pub artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Extra>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A task's state, the agent's message about it, and when it was set (ISO 8601, UTC).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    #[serde(default)]
    pub state: TaskState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl TaskStatus {
    pub fn new(state: TaskState) -> Self {
        Self {
            state,
            ..Self::default()
        }
    }
}

/// A unit of work the agent tracks, in the context (conversation) `context_id`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub status: TaskStatus,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub artifacts: Vec<Artifact>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub history: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Extra>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Task {
    /// Every part of its artifacts, in order.
    pub fn artifact_parts(&self) -> impl Iterator<Item = &Part> {
        self.artifacts.iter().flat_map(|a| a.parts.iter())
    }

    /// The parts that make up its answer: those of its artifacts when it has any (results are
    /// artifacts), else those of its status message.
    pub fn answer_parts(&self) -> Vec<&Part> {
        let artifacts: Vec<&Part> = self.artifact_parts().collect();
        if !artifacts.is_empty() {
            return artifacts;
        }
        self.status
            .message
            .iter()
            .flat_map(|m| m.parts.iter())
            .collect()
    }
}

/// A streamed change of a task's status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    #[serde(default, deserialize_with = "null_as_default")]
    pub task_id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub context_id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Extra>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A streamed artifact, or a chunk of one (`append`: its parts add to the artifact of the same
/// id; `last_chunk`: the artifact is whole).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    #[serde(default, deserialize_with = "null_as_default")]
    pub task_id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub context_id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub artifact: Artifact,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_false"
    )]
    pub append: bool,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_false"
    )]
    pub last_chunk: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Extra>,
    #[serde(flatten)]
    pub extra: Extra,
}

// ---------------------------------------------------------------------------------------------
// Requests and answers of the methods

/// Where and how the agent reports a task's changes by webhook.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// How a webhook call authenticates.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    #[serde(default, deserialize_with = "null_as_default")]
    pub scheme: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// How a `SendMessage` is to be answered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub accepted_output_modes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    /// How many recent messages of the task's history the answer holds (0: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// Answer at once with the task in progress instead of waiting for a terminal or
    /// interrupted state (the default, `false`, waits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_immediately: Option<bool>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The params of `SendMessage` and `SendStreamingMessage`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// The tenant the chosen interface declares, when it declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Extra>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The result of `SendMessage`: a task, or a direct message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SendMessageResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// What a `SendMessage` answered.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // one per answer, moved once
pub enum Reply {
    Task(Task),
    Message(Message),
}

/// A `oneof` answer that does not set exactly one of its fields.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OneofError {
    #[error("it sets none of {0}")]
    None(&'static str),
    #[error("it sets more than one of {0}")]
    Several(&'static str),
}

impl SendMessageResponse {
    pub fn task(task: Task) -> Self {
        Self {
            task: Some(task),
            ..Self::default()
        }
    }

    pub fn message(message: Message) -> Self {
        Self {
            message: Some(message),
            ..Self::default()
        }
    }

    /// The task or the message, when exactly one is set.
    pub fn payload(self) -> Result<Reply, OneofError> {
        const FIELDS: &str = "task, message";
        match (self.task, self.message) {
            (Some(task), None) => Ok(Reply::Task(task)),
            (None, Some(message)) => Ok(Reply::Message(message)),
            (None, None) => Err(OneofError::None(FIELDS)),
            (Some(_), Some(_)) => Err(OneofError::Several(FIELDS)),
        }
    }
}

/// One event of a stream (`SendStreamingMessage`, `SubscribeToTask`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_update: Option<TaskStatusUpdateEvent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_update: Option<TaskArtifactUpdateEvent>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// What a stream event is.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // one per event, moved once
pub enum StreamEvent {
    Task(Task),
    Message(Message),
    StatusUpdate(TaskStatusUpdateEvent),
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl StreamEvent {
    /// The event's name in the stream (`task`, `message`, `statusUpdate`, `artifactUpdate`).
    pub fn name(&self) -> &'static str {
        match self {
            StreamEvent::Task(_) => "task",
            StreamEvent::Message(_) => "message",
            StreamEvent::StatusUpdate(_) => "statusUpdate",
            StreamEvent::ArtifactUpdate(_) => "artifactUpdate",
        }
    }

    /// Whether the stream ends with this event: a message, or a task or status update in a
    /// terminal or interrupted state.
    pub fn ends_stream(&self) -> bool {
        match self {
            StreamEvent::Message(_) => true,
            StreamEvent::Task(task) => task.status.state.is_final(),
            StreamEvent::StatusUpdate(update) => update.status.state.is_final(),
            StreamEvent::ArtifactUpdate(_) => false,
        }
    }
}

impl From<StreamEvent> for StreamResponse {
    fn from(event: StreamEvent) -> Self {
        let mut out = Self::default();
        match event {
            StreamEvent::Task(t) => out.task = Some(t),
            StreamEvent::Message(m) => out.message = Some(m),
            StreamEvent::StatusUpdate(s) => out.status_update = Some(s),
            StreamEvent::ArtifactUpdate(a) => out.artifact_update = Some(a),
        }
        out
    }
}

impl StreamResponse {
    /// The event, when exactly one field is set.
    pub fn event(self) -> Result<StreamEvent, OneofError> {
        const FIELDS: &str = "task, message, statusUpdate, artifactUpdate";
        let set = [
            self.task.is_some(),
            self.message.is_some(),
            self.status_update.is_some(),
            self.artifact_update.is_some(),
        ]
        .into_iter()
        .filter(|s| *s)
        .count();
        if set > 1 {
            return Err(OneofError::Several(FIELDS));
        }
        if let Some(t) = self.task {
            Ok(StreamEvent::Task(t))
        } else if let Some(m) = self.message {
            Ok(StreamEvent::Message(m))
        } else if let Some(s) = self.status_update {
            Ok(StreamEvent::StatusUpdate(s))
        } else if let Some(a) = self.artifact_update {
            Ok(StreamEvent::ArtifactUpdate(a))
        } else {
            Err(OneofError::None(FIELDS))
        }
    }
}

/// The params of `GetTask`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The params of `CancelTask`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Extra>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The params of `SubscribeToTask`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeToTaskRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The params of `ListTasks`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_timestamp_after: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_artifacts: Option<bool>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The result of `ListTasks`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    #[serde(default, deserialize_with = "null_as_default")]
    pub tasks: Vec<Task>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub next_page_token: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub page_size: i32,
    #[serde(default, deserialize_with = "null_as_default")]
    pub total_size: i32,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The params of `GetTaskPushNotificationConfig` and `DeleteTaskPushNotificationConfig`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfigRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub task_id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The params of `ListTaskPushNotificationConfigs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub task_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The result of `ListTaskPushNotificationConfigs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    #[serde(default, deserialize_with = "null_as_default")]
    pub configs: Vec<TaskPushNotificationConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The params of `GetExtendedAgentCard`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetExtendedAgentCardRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

// ---------------------------------------------------------------------------------------------
// The agent card

/// What an agent says about itself, served at [`AGENT_CARD_PATH`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub description: String,
    /// The interfaces it serves, the preferred first.
    #[serde(default, deserialize_with = "null_as_default")]
    pub supported_interfaces: Vec<AgentInterface>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub capabilities: AgentCapabilities,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub security_requirements: Vec<SecurityRequirement>,
    /// Media types it accepts in every skill unless a skill says otherwise.
    #[serde(default, deserialize_with = "null_as_default")]
    pub default_input_modes: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub default_output_modes: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub skills: Vec<AgentSkill>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub signatures: Vec<AgentCardSignature>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
    /// Fields of other versions (a 0.3 card's `url`, `protocolVersion`, `preferredTransport`) and
    /// any other.
    #[serde(flatten)]
    pub extra: Extra,
}

impl AgentCard {
    /// The first interface of `binding` whose protocol version has the major version of
    /// [`PROTOCOL_VERSION`].
    pub fn interface(&self, binding: &str) -> Option<&AgentInterface> {
        self.supported_interfaces
            .iter()
            .find(|i| i.protocol_binding == binding && i.speaks_this_version())
    }

    /// Whether its capabilities declare the extension `uri`.
    pub fn declares_extension(&self, uri: &str) -> bool {
        self.capabilities.extensions.iter().any(|e| e.uri == uri)
    }
}

/// One way to reach the agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    #[serde(default, deserialize_with = "null_as_default")]
    pub url: String,
    /// `JSONRPC`, `GRPC`, `HTTP+JSON`, or a custom binding's URI.
    #[serde(default, deserialize_with = "null_as_default")]
    pub protocol_binding: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// `Major.Minor`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub protocol_version: String,
    #[serde(flatten)]
    pub extra: Extra,
}

impl AgentInterface {
    /// Whether its protocol version has the major version of [`PROTOCOL_VERSION`].
    pub fn speaks_this_version(&self) -> bool {
        let major = |v: &str| v.trim().split('.').next().map(str::to_owned);
        major(&self.protocol_version) == major(PROTOCOL_VERSION)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    #[serde(default, deserialize_with = "null_as_default")]
    pub url: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub organization: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The optional features an agent serves.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// `SendStreamingMessage` and `SubscribeToTask`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<AgentExtension>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// An extension of the protocol the agent supports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentExtension {
    #[serde(default, deserialize_with = "null_as_default")]
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The client must use it.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_false"
    )]
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Extra>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Something the agent can do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub description: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub tags: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub examples: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub input_modes: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub output_modes: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub security_requirements: Vec<SecurityRequirement>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A JWS signature of the card.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCardSignature {
    #[serde(default, deserialize_with = "null_as_default")]
    pub protected: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub signature: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Extra>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A security scheme: exactly one of its fields is set. The OAuth 2.0 flows and mutual TLS are
/// kept as JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecurityScheme {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_security_scheme: Option<ApiKeySecurityScheme>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_auth_security_scheme: Option<HttpAuthSecurityScheme>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth2_security_scheme: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_id_connect_security_scheme: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtls_security_scheme: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// An API key in a header, query parameter or cookie (`location`) named `name`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeySecurityScheme {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub location: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// HTTP authentication (`scheme`: `Bearer`, `Basic`, ...).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpAuthSecurityScheme {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub scheme: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_format: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Schemes (by name) and their scopes, all of which a request must satisfy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SecurityRequirement {
    #[serde(default, deserialize_with = "null_as_default")]
    pub schemes: BTreeMap<String, StringList>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StringList {
    #[serde(default, deserialize_with = "null_as_default")]
    pub list: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// JSON-RPC 2.0

/// The `jsonrpc` member of every request and answer.
pub const JSONRPC_VERSION: &str = "2.0";

/// A request or answer id: a string or a number (`null` in an answer to a request whose id could
/// not be read).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum JsonRpcId {
    Number(i64),
    String(String),
}

impl fmt::Display for JsonRpcId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonRpcId::Number(n) => write!(f, "{n}"),
            JsonRpcId::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// A JSON-RPC request (a notification when `id` is absent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcRequest<P = Value> {
    #[serde(default, deserialize_with = "null_as_default")]
    pub jsonrpc: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<JsonRpcId>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<P>,
}

impl<P> JsonRpcRequest<P> {
    pub fn new(id: JsonRpcId, method: &str, params: P) -> Self {
        Self {
            jsonrpc: JSONRPC_VERSION.to_owned(),
            id: Some(id),
            method: method.to_owned(),
            params: Some(params),
        }
    }
}

/// A JSON-RPC answer: `result` or `error`. `id` is always written (`null` when unknown).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcResponse<R = Value> {
    #[serde(default, deserialize_with = "null_as_default")]
    pub jsonrpc: String,
    #[serde(default)]
    pub id: Option<JsonRpcId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<R>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<JsonRpcError>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl<R> JsonRpcResponse<R> {
    pub fn success(id: Option<JsonRpcId>, result: R) -> Self {
        Self {
            jsonrpc: JSONRPC_VERSION.to_owned(),
            id,
            result: Some(result),
            error: None,
            extra: Extra::new(),
        }
    }

    pub fn failure(id: Option<JsonRpcId>, error: JsonRpcError) -> Self {
        Self {
            jsonrpc: JSONRPC_VERSION.to_owned(),
            id,
            result: None,
            error: Some(error),
            extra: Extra::new(),
        }
    }
}

/// A JSON-RPC error object. `data`, in A2A, is an array of objects each with an `@type`
/// (`google.rpc.ErrorInfo`, `google.rpc.BadRequest`, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcError {
    #[serde(default, deserialize_with = "null_as_default")]
    pub code: i64,
    #[serde(default, deserialize_with = "null_as_default")]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl JsonRpcError {
    /// The error of `code` with its standard message.
    pub fn of(code: ErrorCode) -> Self {
        Self {
            code: code.code(),
            message: code.message().to_owned(),
            data: None,
        }
    }

    pub fn with_message(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code: code.code(),
            message: message.into(),
            data: None,
        }
    }

    /// The named error its code stands for, if any.
    pub fn known(&self) -> Option<ErrorCode> {
        ErrorCode::from_code(self.code)
    }
}

/// The error codes of the JSON-RPC binding: JSON-RPC's own, and A2A's (`-32001` to `-32099`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// `-32700`: the body is not JSON.
    ParseError,
    /// `-32600`: not a valid request object.
    InvalidRequest,
    /// `-32601`: no such method.
    MethodNotFound,
    /// `-32602`: the params are invalid.
    InvalidParams,
    /// `-32603`: the server failed.
    InternalError,
    /// `-32001`: no such task, or not the caller's.
    TaskNotFound,
    /// `-32002`: the task cannot be canceled (it is terminal).
    TaskNotCancelable,
    /// `-32003`: push notifications are not served.
    PushNotificationNotSupported,
    /// `-32004`: the operation (or an aspect of it) is not served.
    UnsupportedOperation,
    /// `-32005`: a part's media type is not accepted.
    ContentTypeNotSupported,
    /// `-32006`: the agent's own answer does not conform.
    InvalidAgentResponse,
    /// `-32007`: no extended card is configured.
    ExtendedAgentCardNotConfigured,
    /// `-32008`: a required extension was not named by the client.
    ExtensionSupportRequired,
    /// `-32009`: the `A2A-Version` asked for is not served.
    VersionNotSupported,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 14] = [
        ErrorCode::ParseError,
        ErrorCode::InvalidRequest,
        ErrorCode::MethodNotFound,
        ErrorCode::InvalidParams,
        ErrorCode::InternalError,
        ErrorCode::TaskNotFound,
        ErrorCode::TaskNotCancelable,
        ErrorCode::PushNotificationNotSupported,
        ErrorCode::UnsupportedOperation,
        ErrorCode::ContentTypeNotSupported,
        ErrorCode::InvalidAgentResponse,
        ErrorCode::ExtendedAgentCardNotConfigured,
        ErrorCode::ExtensionSupportRequired,
        ErrorCode::VersionNotSupported,
    ];

    pub fn code(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::InternalError => -32603,
            ErrorCode::TaskNotFound => -32001,
            ErrorCode::TaskNotCancelable => -32002,
            ErrorCode::PushNotificationNotSupported => -32003,
            ErrorCode::UnsupportedOperation => -32004,
            ErrorCode::ContentTypeNotSupported => -32005,
            ErrorCode::InvalidAgentResponse => -32006,
            ErrorCode::ExtendedAgentCardNotConfigured => -32007,
            ErrorCode::ExtensionSupportRequired => -32008,
            ErrorCode::VersionNotSupported => -32009,
        }
    }

    pub fn from_code(code: i64) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.code() == code)
    }

    /// The error's name in the specification.
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::ParseError => "JSONParseError",
            ErrorCode::InvalidRequest => "InvalidRequestError",
            ErrorCode::MethodNotFound => "MethodNotFoundError",
            ErrorCode::InvalidParams => "InvalidParamsError",
            ErrorCode::InternalError => "InternalError",
            ErrorCode::TaskNotFound => "TaskNotFoundError",
            ErrorCode::TaskNotCancelable => "TaskNotCancelableError",
            ErrorCode::PushNotificationNotSupported => "PushNotificationNotSupportedError",
            ErrorCode::UnsupportedOperation => "UnsupportedOperationError",
            ErrorCode::ContentTypeNotSupported => "ContentTypeNotSupportedError",
            ErrorCode::InvalidAgentResponse => "InvalidAgentResponseError",
            ErrorCode::ExtendedAgentCardNotConfigured => "ExtendedAgentCardNotConfiguredError",
            ErrorCode::ExtensionSupportRequired => "ExtensionSupportRequiredError",
            ErrorCode::VersionNotSupported => "VersionNotSupportedError",
        }
    }

    /// The standard message.
    pub fn message(self) -> &'static str {
        match self {
            ErrorCode::ParseError => "Invalid JSON payload",
            ErrorCode::InvalidRequest => "Request payload validation error",
            ErrorCode::MethodNotFound => "Method not found",
            ErrorCode::InvalidParams => "Invalid parameters",
            ErrorCode::InternalError => "Internal error",
            ErrorCode::TaskNotFound => "Task not found",
            ErrorCode::TaskNotCancelable => "Task cannot be canceled",
            ErrorCode::PushNotificationNotSupported => "Push Notification is not supported",
            ErrorCode::UnsupportedOperation => "This operation is not supported",
            ErrorCode::ContentTypeNotSupported => "Incompatible content types",
            ErrorCode::InvalidAgentResponse => "Invalid agent response",
            ErrorCode::ExtendedAgentCardNotConfigured => {
                "Authenticated Extended Card is not configured"
            }
            ErrorCode::ExtensionSupportRequired => "Extension support required",
            ErrorCode::VersionNotSupported => "Version not supported",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.code())
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    /// A card as a2a-sdk 1.3.0 serves it: the 1.0 fields, and the 0.3 fields merged in.
    fn sdk_card() -> Value {
        json!({
            "name": "Memo",
            "description": "Remembers what it is told.",
            "supportedInterfaces": [
                {"url": "http://127.0.0.1:9999/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            ],
            "version": "1.0.0",
            "capabilities": {"streaming": true},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "remember", "name": "Remember", "description": "Keeps facts", "tags": ["memory"]}],
            "url": "http://127.0.0.1:9999/",
            "protocolVersion": "0.3.0",
            "preferredTransport": "JSONRPC"
        })
    }

    #[test]
    fn a_card_is_read_with_its_interface_and_keeps_other_versions_fields() {
        let card: AgentCard = serde_json::from_value(sdk_card()).unwrap();
        assert_eq!(card.name, "Memo");
        assert_eq!(card.capabilities.streaming, Some(true));
        let interface = card.interface(BINDING_JSONRPC).unwrap();
        assert_eq!(interface.url, "http://127.0.0.1:9999/");
        assert!(card.interface(BINDING_GRPC).is_none());
        assert_eq!(card.skills[0].tags, ["memory"]);
        assert_eq!(card.extra["preferredTransport"], "JSONRPC");
        // Only 1.x interfaces are ours.
        let old = AgentInterface {
            protocol_version: "0.3".into(),
            ..interface.clone()
        };
        assert!(!old.speaks_this_version());
        let minor = AgentInterface {
            protocol_version: "1.1".into(),
            ..interface.clone()
        };
        assert!(minor.speaks_this_version());
        assert!(!card.declares_extension(TOOLS_EXTENSION));
    }

    #[test]
    fn a_card_we_write_skips_what_is_absent_and_parses_back() {
        let card = AgentCard {
            name: "agentwall".into(),
            description: "d".into(),
            supported_interfaces: vec![AgentInterface {
                url: "http://h/a2a".into(),
                protocol_binding: BINDING_JSONRPC.into(),
                protocol_version: PROTOCOL_VERSION.into(),
                ..AgentInterface::default()
            }],
            version: "0.1.0".into(),
            capabilities: AgentCapabilities {
                streaming: Some(true),
                extensions: vec![AgentExtension {
                    uri: TOOLS_EXTENSION.into(),
                    ..AgentExtension::default()
                }],
                ..AgentCapabilities::default()
            },
            default_input_modes: vec![MEDIA_TYPE_TEXT.into()],
            default_output_modes: vec![MEDIA_TYPE_TEXT.into()],
            ..AgentCard::default()
        };
        let json = serde_json::to_value(&card).unwrap();
        assert_eq!(
            json,
            json!({
                "name": "agentwall",
                "description": "d",
                "supportedInterfaces": [{"url": "http://h/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
                "version": "0.1.0",
                "capabilities": {"streaming": true, "extensions": [{"uri": TOOLS_EXTENSION}]},
                "defaultInputModes": ["text/plain"],
                "defaultOutputModes": ["text/plain"],
                "skills": []
            })
        );
        let back: AgentCard = serde_json::from_value(json).unwrap();
        assert_eq!(back, card);
        assert!(back.declares_extension(TOOLS_EXTENSION));
    }

    #[test]
    fn a_send_message_request_is_proto_json() {
        let mut message = Message::new(
            Role::User,
            "m-1",
            vec![
                Part::text("Hello."),
                Part::data(json!({"tools": []})).with_metadata("k", "v"),
            ],
        );
        message.context_id = Some("session-1".into());
        let request = JsonRpcRequest::new(
            JsonRpcId::Number(1),
            method::SEND_MESSAGE,
            SendMessageRequest {
                message,
                configuration: Some(SendMessageConfiguration {
                    return_immediately: Some(false),
                    ..SendMessageConfiguration::default()
                }),
                ..SendMessageRequest::default()
            },
        );
        assert_eq!(
            serde_json::to_value(&request).unwrap(),
            json!({
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {
                    "message": {
                        "messageId": "m-1",
                        "contextId": "session-1",
                        "role": "ROLE_USER",
                        "parts": [
                            {"text": "Hello."},
                            {"data": {"tools": []}, "metadata": {"k": "v"}, "mediaType": "application/json"}
                        ]
                    },
                    "configuration": {"returnImmediately": false}
                }
            })
        );
    }

    #[test]
    fn answers_are_a_task_or_a_message() {
        let task: JsonRpcResponse<SendMessageResponse> = serde_json::from_value(json!({
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"task": {
                "id": "t-1",
                "contextId": "c-1",
                "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-01T00:00:00Z"},
                "artifacts": [{"artifactId": "a", "parts": [{"text": "Blue"}, {"text": "."}]}],
                "history": [{"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "?"}]}]
            }}
        }))
        .unwrap();
        let Reply::Task(task) = task.result.unwrap().payload().unwrap() else {
            panic!("a task")
        };
        assert_eq!(task.status.state, TaskState::Completed);
        assert_eq!(
            text_of(&task.answer_parts().into_iter().cloned().collect::<Vec<_>>()),
            "Blue."
        );
        assert_eq!(task.history[0].role, Role::User);

        let message: SendMessageResponse = serde_json::from_value(json!({
            "message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "Hi"}], "contextId": null}
        }))
        .unwrap();
        assert!(
            matches!(message.payload(), Ok(Reply::Message(m)) if m.text() == "Hi" && m.context_id.is_none())
        );
        let none: SendMessageResponse = serde_json::from_value(json!({})).unwrap();
        assert!(matches!(none.payload(), Err(OneofError::None(_))));
        let both: SendMessageResponse = serde_json::from_value(json!({
            "task": {"id": "t"}, "message": {"messageId": "m"}
        }))
        .unwrap();
        assert!(matches!(both.payload(), Err(OneofError::Several(_))));
    }

    #[test]
    fn states_and_roles_are_read_leniently() {
        let read = |v: Value| serde_json::from_value::<TaskState>(v).unwrap();
        assert_eq!(
            read(json!("TASK_STATE_INPUT_REQUIRED")),
            TaskState::InputRequired
        );
        assert_eq!(read(json!("input-required")), TaskState::InputRequired);
        assert_eq!(read(json!(7)), TaskState::Rejected);
        assert_eq!(read(json!(null)), TaskState::Unspecified);
        assert_eq!(read(json!("paused")), TaskState::Other("paused".into()));
        assert_eq!(
            serde_json::to_value(TaskState::AuthRequired).unwrap(),
            json!("TASK_STATE_AUTH_REQUIRED")
        );
        assert!(TaskState::Rejected.is_terminal());
        assert!(TaskState::AuthRequired.is_interrupted() && TaskState::AuthRequired.is_final());
        assert!(!TaskState::Working.is_final());
        assert_eq!(
            serde_json::from_value::<Role>(json!("agent")).unwrap(),
            Role::Agent
        );
        assert_eq!(
            serde_json::to_value(Role::User).unwrap(),
            json!("ROLE_USER")
        );
    }

    #[test]
    fn stream_events_name_themselves_and_say_where_the_stream_ends() {
        let events = [
            json!({"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_SUBMITTED"}}}),
            json!({"artifactUpdate": {"taskId": "t", "contextId": "c", "artifact": {"artifactId": "a", "parts": [{"text": "Hel"}]}}}),
            json!({"artifactUpdate": {"taskId": "t", "contextId": "c", "append": true, "lastChunk": true, "artifact": {"artifactId": "a", "parts": [{"text": "lo"}]}}}),
            json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}}),
        ];
        let read: Vec<StreamEvent> = events
            .into_iter()
            .map(|e| {
                serde_json::from_value::<StreamResponse>(e)
                    .unwrap()
                    .event()
                    .unwrap()
            })
            .collect();
        let names: Vec<&str> = read.iter().map(StreamEvent::name).collect();
        assert_eq!(
            names,
            ["task", "artifactUpdate", "artifactUpdate", "statusUpdate"]
        );
        let ends: Vec<bool> = read.iter().map(StreamEvent::ends_stream).collect();
        assert_eq!(ends, [false, false, false, true]);
        let StreamEvent::ArtifactUpdate(chunk) = &read[2] else {
            panic!()
        };
        assert!(chunk.append && chunk.last_chunk);
        // Written back, the event is the one field.
        let back = serde_json::to_value(StreamResponse::from(read[3].clone())).unwrap();
        assert_eq!(
            back["statusUpdate"]["status"]["state"],
            "TASK_STATE_COMPLETED"
        );
        assert_eq!(back.as_object().unwrap().len(), 1);
    }

    #[test]
    fn errors_carry_a2a_codes() {
        assert_eq!(ErrorCode::TaskNotFound.code(), -32001);
        assert_eq!(ErrorCode::TaskNotCancelable.code(), -32002);
        assert_eq!(ErrorCode::PushNotificationNotSupported.code(), -32003);
        assert_eq!(ErrorCode::UnsupportedOperation.code(), -32004);
        assert_eq!(ErrorCode::ContentTypeNotSupported.code(), -32005);
        assert_eq!(ErrorCode::InvalidAgentResponse.code(), -32006);
        assert_eq!(ErrorCode::ExtendedAgentCardNotConfigured.code(), -32007);
        assert_eq!(ErrorCode::ExtensionSupportRequired.code(), -32008);
        assert_eq!(ErrorCode::VersionNotSupported.code(), -32009);
        for code in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_code(code.code()), Some(code));
        }
        assert_eq!(ErrorCode::from_code(-32050), None);
        let answer: JsonRpcResponse = serde_json::from_value(json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": -32700, "message": "Expecting value", "data": [{"@type": "x"}]}
        }))
        .unwrap();
        let error = answer.error.unwrap();
        assert_eq!(error.known(), Some(ErrorCode::ParseError));
        assert_eq!(answer.id, None);
        // An answer always writes its id, null when unknown.
        let written = serde_json::to_value(JsonRpcResponse::<Value>::failure(
            None,
            JsonRpcError::of(ErrorCode::MethodNotFound),
        ))
        .unwrap();
        assert_eq!(
            written,
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32601, "message": "Method not found"}})
        );
    }

    #[test]
    fn parts_count_their_contents() {
        assert_eq!(Part::text("a").contents(), 1);
        let two = Part {
            url: Some("http://x".into()),
            ..Part::text("a")
        };
        assert_eq!(two.contents(), 2);
        assert_eq!(Part::default().contents(), 0);
    }
}
