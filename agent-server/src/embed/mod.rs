//! Sentence embeddings for semantic recall, from one of two providers, or none:
//!
//! - **in process** ([`local`]): a sentence-transformers model directory (all-MiniLM-L6-v2) run
//!   with the `embeddings` crate on a thread of its own, never on the HTTP workers;
//! - **an endpoint** ([`endpoint`]): any OpenAI-compatible `POST /embeddings` (OpenAI, vLLM,
//!   Ollama, LiteLLM, llama.cpp's server), with its own timeout, error mapping and spans.
//!
//! Without either, recall is lexical only. Both providers sit behind one [`Embedder`]: callers'
//! texts go through a queue ([`batch`]) that splits a call above the batch size and lets
//! concurrent callers share a batch, and both return unit vectors of one dimension, checked
//! ([`vectors`]). Every model call is counted in `/metrics` ([`metrics`]) and in the provider's
//! [`health`], which `/readyz` reports through [`Recall`]. A failure never fails a turn: the
//! caller (the memory layer) recalls lexically and embeds the text later, or marks it.

pub mod batch;
pub mod endpoint;
pub mod health;
pub mod local;
pub mod metrics;
pub mod vectors;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use protocol::control::RecallHealth;
use tracing::Span;
use tracing::field::Empty;

pub use endpoint::EndpointConfig;
pub use local::InProcessConfig;

use crate::telemetry::Metrics;
use health::Health;

/// Turns texts into unit vectors. Implementations are cheap to call from any task: the work
/// happens on the provider's own thread.
#[async_trait]
pub trait Embedder: Send + Sync + 'static {
    /// The model's id, to be stored with every vector: vectors of different models are never
    /// compared.
    fn model(&self) -> &str;

    /// Length of every vector; for an endpoint, known once it has answered.
    fn dimension(&self) -> Option<usize>;

    /// One L2-normalised vector per text, in order. All texts are embedded, or none.
    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// Why texts were not embedded. None of these reaches a client: the turn goes on with lexical
/// recall.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EmbedError {
    #[error("the embeddings endpoint did not answer within {}s (--embeddings-timeout)", .after.as_secs_f64())]
    Timeout { after: Duration },
    /// Connection refused, DNS, reset.
    #[error("the embeddings endpoint at {url} is unreachable: {reason}")]
    Unreachable { url: String, reason: String },
    /// HTTP 429; `retry_after` is the endpoint's `Retry-After` header, as sent.
    #[error("the embeddings endpoint is rate limited (HTTP 429): {message}")]
    RateLimited {
        message: String,
        retry_after: Option<String>,
    },
    /// Another error status; `message` is the endpoint's own.
    #[error("the embeddings endpoint answered HTTP {status}: {message}")]
    Status { status: u16, message: String },
    /// A success status with an answer that is not one usable vector per text: not JSON, the
    /// wrong count, an empty, non-finite or zero vector, or a dimension other than the model's.
    #[error("the embeddings endpoint's answer is unusable: {reason}")]
    Garbage { reason: String },
    /// The in-process model failed on the texts.
    #[error("the in-process embedding model failed: {reason}")]
    Inference { reason: String },
    /// The provider's thread is gone (the server is shutting down).
    #[error("the embedding provider has stopped")]
    Stopped,
}

impl EmbedError {
    /// Short label for metrics and span attributes (`error.type`).
    pub fn kind(&self) -> &'static str {
        match self {
            EmbedError::Timeout { .. } => "timeout",
            EmbedError::Unreachable { .. } => "unreachable",
            EmbedError::RateLimited { .. } => "rate_limited",
            EmbedError::Status { .. } => "status",
            EmbedError::Garbage { .. } => "garbage",
            EmbedError::Inference { .. } => "inference",
            EmbedError::Stopped => "stopped",
        }
    }

    /// Whether the same texts may succeed later (the endpoint down, slow, busy or failing on its
    /// side), so they are worth queueing again; otherwise the texts themselves or the model are
    /// at fault, and retrying would fail the same way.
    pub fn retryable(&self) -> bool {
        match self {
            EmbedError::Timeout { .. }
            | EmbedError::Unreachable { .. }
            | EmbedError::RateLimited { .. }
            | EmbedError::Stopped => true,
            EmbedError::Status { status, .. } => *status >= 500 || *status == 408,
            EmbedError::Garbage { .. } | EmbedError::Inference { .. } => false,
        }
    }
}

/// Where embeddings come from (`Config::embeddings`).
#[derive(Debug, Clone)]
pub enum EmbedConfig {
    InProcess(InProcessConfig),
    Endpoint(EndpointConfig),
}

/// Which recall is on: lexical, or semantic with an embedder, and how that embedder fares.
#[derive(Clone)]
pub struct Recall {
    embedder: Option<Arc<dyn Embedder>>,
    mode: String,
    health: Option<Arc<Health>>,
}

impl Recall {
    /// No embedding model: recall is lexical.
    pub fn lexical() -> Self {
        Self {
            embedder: None,
            mode: "lexical".into(),
            health: None,
        }
    }

    /// Starts the configured provider (for in process, loads the model first), counting its calls
    /// in `metrics`; lexical without one.
    pub async fn start(config: Option<EmbedConfig>, metrics: Arc<Metrics>) -> anyhow::Result<Self> {
        let (embedder, health): (Arc<dyn Embedder>, Arc<Health>) = match config {
            None => return Ok(Self::lexical()),
            Some(EmbedConfig::InProcess(config)) => {
                let (embedder, health) = local::InProcess::start(config, metrics).await?;
                (Arc::new(embedder), health)
            }
            Some(EmbedConfig::Endpoint(config)) => {
                let (embedder, health) = endpoint::Endpoint::start(config, metrics)?;
                (Arc::new(embedder), health)
            }
        };
        Ok(Self {
            mode: format!("semantic ({} {})", health.provider(), embedder.model()),
            embedder: Some(embedder),
            health: Some(health),
        })
    }

    /// The embedder, when recall is semantic.
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.embedder.as_ref()
    }

    /// `lexical`, `semantic (in-process <model>)` or `semantic (endpoint <model>)`.
    pub fn mode(&self) -> &str {
        &self.mode
    }

    /// What `/readyz` says of recall.
    pub fn report(&self) -> RecallHealth {
        RecallHealth {
            mode: self.mode.clone(),
            embeddings: self
                .health
                .as_ref()
                .zip(self.embedder.as_ref())
                .map(|(health, embedder)| health.report(embedder.model(), embedder.dimension())),
        }
    }
}

/// The span of one call to [`Embedder::embed`], in the caller's trace; `server` is the
/// endpoint's host and port. It lasts until the call's vectors (or error) are back.
fn span(provider: &str, model: &str, texts: usize, server: Option<(&str, u16)>) -> Span {
    let span = tracing::info_span!(
        "embeddings",
        otel.name = %format!("embeddings {model}"),
        otel.kind = if server.is_some() { "client" } else { "internal" },
        otel.status_code = Empty,
        gen_ai.operation.name = "embeddings",
        gen_ai.provider.name = if server.is_some() { "openai" } else { provider },
        gen_ai.request.model = %model,
        agentwall.embeddings.texts = texts,
        server.address = Empty,
        server.port = Empty,
        http.response.status_code = Empty,
        error.type = Empty,
        openinference.span.kind = "EMBEDDING",
        embedding.model_name = %model,
    );
    if let Some((host, port)) = server {
        span.record("server.address", host);
        span.record("server.port", port);
    }
    span
}
