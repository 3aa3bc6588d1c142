//! OpenAI Chat Completions types, as OpenAI documents them and as OpenAI-compatible servers
//! (vLLM, Ollama, LiteLLM, ...) actually send them; the Responses API types in [`responses`].

mod chat;
mod completion;
mod error;
mod models;
pub mod responses;
mod tools;

pub use chat::{
    ChatCompletionRequest, ChatMessage, ContentPart, MessageContent, Role, StreamOptions,
};
pub use completion::{
    ChatCompletion, ChatCompletionChunk, Choice, ChunkChoice, Delta, FinishReason, Usage,
};
pub use error::{ErrorBody, ErrorCode, ErrorObject};
pub use models::{Model, ModelList};
pub use tools::{
    FunctionCall, FunctionCallDelta, FunctionDefinition, Tool, ToolCall, ToolCallDelta, ToolChoice,
};

/// Free-form JSON object used to keep fields this crate does not model.
pub type Extra = serde_json::Map<String, serde_json::Value>;
