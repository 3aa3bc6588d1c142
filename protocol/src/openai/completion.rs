use serde::{Deserialize, Serialize};

use super::{ChatMessage, Extra, Role, ToolCallDelta};

/// A complete (non-streamed) chat completion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChatCompletion {
    pub id: String,
    /// Always `chat.completion`.
    #[serde(default = "completion_object")]
    pub object: String,
    /// Unix seconds.
    pub created: i64,
    pub model: String,
    pub choices: Vec<Choice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_fingerprint: Option<String>,
    #[serde(flatten)]
    #[cfg_attr(feature = "openapi", schema(ignore))]
    pub extra: Extra,
}

fn completion_object() -> String {
    "chat.completion".to_owned()
}

fn chunk_object() -> String {
    "chat.completion.chunk".to_owned()
}

impl ChatCompletion {
    /// Text of the first choice, the usual "the reply" of a chat completion.
    pub fn first_text(&self) -> Option<String> {
        self.choices.first().and_then(|c| c.message.text_content())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Choice {
    pub index: u32,
    pub message: ChatMessage,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub finish_reason: Option<FinishReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub logprobs: Option<serde_json::Value>,
}

/// Why generation stopped. Values a server invents are kept in [`FinishReason::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
    FunctionCall,
    #[serde(untagged)]
    Other(String),
}

/// Token accounting. The `*_details` objects vary by vendor and are kept verbatim.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Usage {
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    pub total_tokens: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens_details: Option<serde_json::Value>,
}

impl Usage {
    pub fn new(prompt_tokens: u32, completion_tokens: u32) -> Self {
        Self {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens + completion_tokens,
            ..Self::default()
        }
    }
}

/// One server-sent event of a streamed completion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChatCompletionChunk {
    pub id: String,
    /// Always `chat.completion.chunk`.
    #[serde(default = "chunk_object")]
    pub object: String,
    pub created: i64,
    pub model: String,
    /// Empty in the final usage chunk that `stream_options.include_usage` asks for.
    pub choices: Vec<ChunkChoice>,
    /// Present (and non-null) only in the final usage chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_fingerprint: Option<String>,
    #[serde(flatten)]
    #[cfg_attr(feature = "openapi", schema(ignore))]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChunkChoice {
    pub index: u32,
    pub delta: Delta,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub finish_reason: Option<FinishReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub logprobs: Option<serde_json::Value>,
}

/// The part of a message a chunk adds. Real servers omit `role` after the first chunk, and some
/// omit it in the first chunk too.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Delta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    #[serde(flatten)]
    #[cfg_attr(feature = "openapi", schema(ignore))]
    pub extra: Extra,
}
