//! Models: what turns a prepared prompt into a reply. The agent builds a [`Prompt`] (the new turn,
//! the client's own context, recalled memory, what this turn taught, what the reply must say) and
//! any [`ChatModel`] answers it: the offline [`builtin`] model, or an [`upstream`] OpenAI-compatible
//! one. An upstream model also answers in OpenAI's own shapes ([`PassThrough`]) so that streams,
//! tool calls and usage reach the client as the upstream sent them.
//!
//! A Responses API turn also carries the client's own request and items ([`ResponsesTurn`]), so
//! that an upstream serving that API gets them as they are ([`upstream_api`]).

pub mod actions;
pub mod builtin;
pub mod prompt;
pub mod upstream;
pub mod upstream_api;

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use protocol::openai::responses::ResponseCreateRequest;
use protocol::openai::{
    ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, ChatMessage, FinishReason,
    ToolCall, Usage,
};
use serde_json::Value;

use crate::memory::MemoryContext;
use crate::text::standing::Obligation;

/// Everything a model sees for one turn.
#[derive(Debug, Clone, Copy)]
pub struct Prompt<'a> {
    /// The session clock.
    pub now: DateTime<Utc>,
    /// The new user turn (the last user message of the request).
    pub user_text: &'a str,
    /// Messages the client sent before the new turn: its own context, used but never stored.
    pub history: &'a [ChatMessage],
    /// What memory recalled for this turn (empty with memory off).
    pub memory: &'a MemoryContext,
    /// What this turn taught memory, as sentences addressed to the user ("your X is Y").
    pub learned: &'a [Acknowledgement],
    /// What standing rules and reminders require the reply to say, in order.
    pub must_say: &'a [Obligation],
    /// The client's request, for generation parameters (max tokens, temperature, tools, ...).
    /// A Responses API request arrives here translated to Chat Completions.
    pub request: &'a ChatCompletionRequest,
    /// The Responses API request as the client sent it, when the turn came through that API.
    pub responses: Option<&'a ResponsesTurn>,
}

/// A Responses API turn in that API's own terms, for an upstream that serves it: the client's
/// request (its tools, tool_choice, metadata and unknown fields go upstream unchanged) and the
/// turn's items, those of the chain or conversation it continues first, as agent-server resolved
/// them from its own state (`previous_response_id` and `conversation` never leave it).
#[derive(Debug, Clone)]
pub struct ResponsesTurn {
    pub request: ResponseCreateRequest,
    /// Checked and normalised items, oldest first (`http::responses::input`).
    pub items: Vec<Value>,
}

/// One thing learned this turn, for the reply to acknowledge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acknowledgement {
    Fact(String),
    Rule { trigger: String, reply: String },
    Reminder(String),
    List(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModelReply {
    pub text: String,
    /// Tool calls the model makes (finish reason `tool_calls`); empty for a plain reply.
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    pub finish_reason: FinishReason,
}

/// Why a model gave no reply. Each variant is a row of the error table in `crate::error`.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    /// The upstream model failed in a way not covered below.
    #[error("the upstream model failed: {reason}")]
    Upstream { reason: String },
    /// The upstream answered 429; `retry_after` is its `Retry-After` header, passed on as is.
    #[error("the upstream model is rate limited (HTTP 429): {message}")]
    RateLimited {
        message: String,
        retry_after: Option<String>,
    },
    /// The upstream did not answer within `--llm-timeout`.
    #[error("the upstream model did not answer within {}s (--llm-timeout)", .after.as_secs_f64())]
    Timeout { after: Duration },
    /// The upstream could not be reached at all (connection refused, DNS, reset).
    #[error("the upstream model at {url} is unreachable: {reason}")]
    Unreachable { url: String, reason: String },
    /// The upstream answered with an error status other than 429; `message` is its own.
    #[error("the upstream model answered HTTP {status}: {message}")]
    Status { status: u16, message: String },
    /// The upstream refused the prompt as longer than its context window (OpenAI's
    /// `context_length_exceeded`, or the wording of llama.cpp, vLLM and others). The prompt
    /// holds the recalled memory too, so the client may not see all of what was too long.
    #[error(
        "the prompt, with the memory recalled for it, is longer than the upstream model's context window: {message}"
    )]
    ContextLengthExceeded { message: String },
    /// The upstream answered 2xx with a body that is not an OpenAI chat completion.
    #[error("the upstream model sent a response that is not an OpenAI chat completion: {reason}")]
    BadResponse { reason: String },
}

impl LlmError {
    /// Short label for metrics and span attributes (`error.type`).
    pub fn kind(&self) -> &'static str {
        match self {
            LlmError::Upstream { .. } => "upstream_error",
            LlmError::RateLimited { .. } => "rate_limited",
            LlmError::Timeout { .. } => "timeout",
            LlmError::Unreachable { .. } => "unreachable",
            LlmError::Status { .. } => "upstream_status",
            LlmError::ContextLengthExceeded { .. } => "context_length_exceeded",
            LlmError::BadResponse { .. } => "bad_response",
        }
    }
}

#[async_trait]
pub trait ChatModel: Send + Sync + 'static {
    /// Model id reported to clients.
    fn name(&self) -> &str;

    async fn complete(&self, prompt: Prompt<'_>) -> Result<ModelReply, LlmError>;

    /// The model's OpenAI-shaped interface, when it has one (upstream models). The HTTP layer then
    /// passes completions and streams through instead of rendering a [`ModelReply`].
    fn pass_through(&self) -> Option<&dyn PassThrough> {
        None
    }

    /// Whether the model reads the episodes recalled for its prompt ([`Prompt::memory`]). A turn
    /// for a model that does not skips recalling them: ranking a session's every episode against
    /// the turn's words is most of a recall's cost, and nobody would read the result.
    fn reads_episodes(&self) -> bool {
        true
    }
}

/// A model that speaks OpenAI's chat API itself: its completions and chunks go to the client as
/// they are (tool calls, usage, finish reasons and unknown fields included).
#[async_trait]
pub trait PassThrough: Send + Sync {
    /// A whole completion.
    async fn completion(&self, prompt: Prompt<'_>) -> Result<ChatCompletion, LlmError>;

    /// A stream of chunks. Resolves once the upstream has answered with a success status (so an
    /// error before the first chunk is still an HTTP error), then yields chunks as they arrive.
    /// The stream ends after the upstream's last chunk; an error ends it early.
    async fn stream(&self, prompt: Prompt<'_>) -> Result<ChunkStream, LlmError>;
}

/// Chunks of a streamed completion, in arrival order.
pub type ChunkStream = tokio::sync::mpsc::Receiver<Result<StreamedChunk, LlmError>>;

/// One chunk of a streamed completion: parsed, and the `data` of its event as the upstream sent
/// it, so that a relay passes an unchanged chunk on byte for byte instead of serialising it again.
#[derive(Debug)]
pub struct StreamedChunk {
    pub chunk: ChatCompletionChunk,
    /// The event's `data`, without surrounding whitespace; it parses to `chunk`.
    pub data: String,
}

/// Rough token count for usage reporting where no tokenizer is at hand: words and punctuation
/// marks, which tracks BPE counts of English text within a small factor.
pub fn approximate_tokens(text: &str) -> u32 {
    let words = text.split_whitespace().count();
    let punctuation = text.chars().filter(|c| c.is_ascii_punctuation()).count();
    u32::try_from(words + punctuation).unwrap_or(u32::MAX)
}
