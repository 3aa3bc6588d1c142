//! The `agentworld` wire format of docs/contracts/agent-injection.md, schema version 1.0. The response
//! deliberately has no reasoning field (the document's security note).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::super::persona::Traits;
use crate::endpoint::FailureKind;

pub const SCHEMA_VERSION: &str = "1.0";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentWorldRequest {
    pub schema_version: String,
    pub request_id: String,
    pub run_id: String,
    pub turn_id: String,
    pub message_id: String,
    pub simulation_config_hash: String,
    pub persona_hash: String,
    pub agent_id: String,
    pub persona_ref: PersonaRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona_snapshot: Option<PersonaSnapshot>,
    pub conversation_context: ConversationContext,
    pub current_stimulus: String,
    pub topology_edge_context: TopologyEdgeContext,
    pub timeout_ms: u64,
    pub response_format: ResponseFormat,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PersonaRef {
    pub persona_id: String,
    pub persona_version: String,
    pub persona_hash: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PersonaSnapshot {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<String>,
    pub traits: Traits,
    /// Only at the `full` tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationContext {
    pub last_k_turns: Vec<ContextTurn>,
    pub conversation_summary: String,
    pub token_budget: u32,
    pub max_context_chars: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextTurn {
    pub sender: String,
    pub content: String,
    /// ISO 8601, on the conversation's virtual clock.
    pub timestamp: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopologyEdgeContext {
    pub can_message: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseFormat {
    #[serde(rename = "type")]
    pub kind: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentWorldResponse {
    #[serde(default)]
    pub response_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ResponseError>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseError {
    /// `TIMEOUT`, `RATE_LIMITED`, `INTERNAL` or `INVALID_REQUEST`.
    pub code: String,
    #[serde(default)]
    pub message: String,
}

impl ResponseError {
    /// The failure class of an error the endpoint reports about itself.
    pub fn kind(&self) -> FailureKind {
        match self.code.as_str() {
            "TIMEOUT" => FailureKind::Timeout,
            "RATE_LIMITED" => FailureKind::RateLimited,
            _ => FailureKind::AgentError,
        }
    }
}
