//! The benchmark control plane (`/control/*`): reset a session, inject facts, inspect memory.
//!
//! Every control request is scoped by the `X-Session-Id` header, never by a body field, so the same
//! header logic guards the data plane and the control plane.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Answer of `POST /control/session/reset`: what was removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ResetResponse {
    pub session_id: String,
    pub working_items_removed: u64,
    pub facts_removed: u64,
}

/// Body of `POST /control/memory/inject`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct InjectRequest {
    pub facts: Vec<InjectFact>,
}

/// One fact forced into long-term memory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct InjectFact {
    /// The fact as a sentence, for example "My favourite colour is teal.".
    pub text: String,
    /// Supersession key: a newer fact with the same key replaces an older one
    /// (for example `favourite colour`). Without a key the server extracts one where it is evident.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// When the fact was observed; defaults to the request's "now" (`X-Mock-Time` or the clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_at: Option<DateTime<Utc>>,
    /// 0 to 1; defaults to 0.5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<f32>,
    /// `fact` (the default) or `episode`: a turn as it was said, kept whole, never superseded
    /// (so it takes no `key`). Rules and reminders are learned from turns, not injected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<FactKind>,
    /// An episode's role, `user` (the default) or `assistant`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// An episode's speaker, when the conversation names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker: Option<String>,
}

/// Answer of `POST /control/memory/inject`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InjectResponse {
    pub session_id: String,
    pub injected: Vec<InjectedFact>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InjectedFact {
    pub id: Uuid,
    pub key: Option<String>,
    /// False when a newer fact with the same key already existed, so this one was kept out.
    pub current: bool,
}

/// What kind of long-term item a fact is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum FactKind {
    /// Something true about the user or the world ("my favourite colour is teal").
    Fact,
    /// A standing instruction ("whenever I say X, reply Y").
    Rule,
    /// Something to say or do at a later time or turn.
    Reminder,
    /// One turn as it was said (user or assistant), kept whole and never rewritten: what lets an
    /// agent answer "when did I ...?" and "what did I say about ...?" from the session's history.
    /// Its `data` names the `role` and, when the client gave one, the `speaker`.
    Episode,
}

/// How a fact reached long-term memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum FactSource {
    /// Extracted from a user turn as it arrived.
    Extracted,
    /// Promoted from working memory because it was important or repeated.
    Promoted,
    /// Forced in through `/control/memory/inject`.
    Injected,
}

/// A name that is not one of an enum's wire names (`FactKind`, `FactSource`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {name:?}")]
pub struct UnknownName {
    pub what: &'static str,
    pub name: String,
}

/// Wire names (`snake_case`, as serde writes them) for enums that backends also store as text.
macro_rules! wire_names {
    ($type:ident, $what:literal, { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $type {
            /// The wire name, as serde writes it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($type::$variant => $name),+
                }
            }
        }

        impl std::str::FromStr for $type {
            type Err = UnknownName;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($name => Ok($type::$variant),)+
                    other => Err(UnknownName { what: $what, name: other.to_owned() }),
                }
            }
        }
    };
}

wire_names!(FactKind, "fact kind", {
    Fact => "fact",
    Rule => "rule",
    Reminder => "reminder",
    Episode => "episode",
});
wire_names!(FactSource, "fact source", {
    Extracted => "extracted",
    Promoted => "promoted",
    Injected => "injected",
});

/// Answer of `GET /control/memory`: the session's memory as the agent sees it at the request's "now".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MemoryView {
    pub session_id: String,
    pub now: DateTime<Utc>,
    /// Recent turns that have not expired on the session clock, oldest first.
    pub working_memory: Vec<WorkingItemView>,
    /// Long-term facts, newest first.
    pub facts: Vec<FactView>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkingItemView {
    pub role: String,
    pub text: String,
    pub at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FactView {
    pub id: Uuid,
    pub kind: FactKind,
    pub key: Option<String>,
    pub text: String,
    pub observed_at: DateTime<Utc>,
    pub importance: f32,
    pub source: FactSource,
    /// Structured data kept with the item: a rule's trigger and reply, a reminder's due time, an
    /// episode's `role` and `speaker`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
    /// Ids of the turns it came from (`X-Turn-Id`), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_turn_ids: Vec<String>,
}

/// Answer of `GET /readyz` (and of `/healthz`, with no dependencies).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HealthReport {
    /// `ok`; `degraded` when every dependency answers but the embedding model fails (turns are
    /// answered, recall is lexical meanwhile); `unavailable` when a dependency is down.
    pub status: String,
    pub dependencies: Vec<DependencyHealth>,
    /// Which recall is on (`/readyz` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall: Option<RecallHealth>,
}

/// Which recall a server runs, and how its embedding model fares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RecallHealth {
    /// `lexical`, `semantic (in-process <model>)` or `semantic (endpoint <model>)`.
    pub mode: String,
    /// The embedding model, when recall is semantic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embeddings: Option<EmbeddingsHealth>,
}

/// The embedding model's state, from the calls made to it (none is made for the report).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EmbeddingsHealth {
    /// `in-process` or `endpoint`.
    pub provider: String,
    pub model: String,
    /// Length of the model's vectors; an endpoint's is known once it has answered.
    #[serde(default)]
    pub dimension: Option<usize>,
    /// False from a failed call until the next call that succeeds.
    pub ok: bool,
    pub consecutive_failures: u64,
    #[serde(default)]
    pub last_error: Option<String>,
    #[serde(default)]
    pub last_error_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub last_success_at: Option<DateTime<Utc>>,
    /// Memory items waiting for an embedding (to be embedded, or again after a failure).
    pub pending: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DependencyHealth {
    /// `embedded`, `redis`, `postgres`, `upstream`, ...
    pub name: String,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_are_the_serde_names_and_parse_back() {
        for kind in [
            FactKind::Fact,
            FactKind::Rule,
            FactKind::Reminder,
            FactKind::Episode,
        ] {
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::json!(kind.as_str())
            );
            assert_eq!(kind.as_str().parse::<FactKind>(), Ok(kind));
        }
        for source in [
            FactSource::Extracted,
            FactSource::Promoted,
            FactSource::Injected,
        ] {
            assert_eq!(
                serde_json::to_value(source).unwrap(),
                serde_json::json!(source.as_str())
            );
            assert_eq!(source.as_str().parse::<FactSource>(), Ok(source));
        }
        assert_eq!(
            "Fact".parse::<FactKind>().unwrap_err().to_string(),
            "unknown fact kind \"Fact\""
        );
    }
}
