//! The in-process provider: a sentence-transformers model directory run by the `embeddings`
//! crate on a thread of its own. Inference is CPU-bound and takes milliseconds per batch, so it
//! never runs on an HTTP worker or the async runtime, where it would stall every request sharing
//! the thread; callers wait on a channel instead ([`super::batch`]). One thread: the matrix
//! products inside a batch use the cores already, and a second thread would only split them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use async_trait::async_trait;
use embeddings::SentenceModel;
use tokio::sync::oneshot;

use super::batch::{Gatherer, Queue};
use super::health::Health;
use super::{EmbedError, Embedder};
use crate::telemetry::Metrics;

const PROVIDER: &str = "in-process";

#[derive(Debug, Clone)]
pub struct InProcessConfig {
    /// The sentence-transformers model directory.
    pub model_dir: PathBuf,
    /// The model's id (default: the directory's name).
    pub model: Option<String>,
    /// Most texts per inference batch.
    pub batch_size: usize,
}

pub struct InProcess {
    queue: Queue,
    model: String,
    dimension: usize,
}

impl InProcess {
    /// Loads the model on its thread and returns once it is ready, or with the reason it is not.
    pub async fn start(
        config: InProcessConfig,
        metrics: Arc<Metrics>,
    ) -> anyhow::Result<(Self, Arc<Health>)> {
        let (queue, gatherer) = Queue::new(config.batch_size);
        let health = Arc::new(Health::new(PROVIDER, metrics));
        let (loaded_tx, loaded) = oneshot::channel();
        let dir = config.model_dir.clone();
        let thread_health = Arc::clone(&health);
        std::thread::Builder::new()
            .name("embeddings".into())
            .spawn(move || match SentenceModel::load(&dir) {
                Ok(model) => {
                    let _ = loaded_tx.send(Ok((model.name().to_owned(), model.dimension())));
                    serve(&model, gatherer, &thread_health);
                }
                Err(e) => {
                    let _ = loaded_tx.send(Err(e));
                }
            })
            .context("cannot start the embedding thread")?;
        let (name, dimension) = loaded
            .await
            .context("the embedding thread stopped while loading the model")?
            .with_context(|| {
                format!(
                    "cannot load the embedding model in {} (--embeddings-model-dir)",
                    config.model_dir.display()
                )
            })?;
        let model = config.model.unwrap_or(name);
        tracing::info!(%model, dimension, dir = %config.model_dir.display(), "embedding in process");
        Ok((
            Self {
                queue,
                model,
                dimension,
            },
            health,
        ))
    }
}

/// The thread's loop: one batch at a time, until every caller's queue is dropped.
fn serve(model: &SentenceModel, mut gatherer: Gatherer, health: &Health) {
    while let Some(batch) = gatherer.next_blocking() {
        let started = Instant::now();
        let texts = batch.texts();
        let result = model.embed(&texts).map_err(|e| EmbedError::Inference {
            reason: e.to_string(),
        });
        health.observe(texts.len(), started.elapsed(), result.as_ref().err());
        batch.answer(result);
    }
}

#[async_trait]
impl Embedder for InProcess {
    fn model(&self) -> &str {
        &self.model
    }

    fn dimension(&self) -> Option<usize> {
        Some(self.dimension)
    }

    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        let span = super::span(PROVIDER, &self.model, texts.len(), None);
        self.queue.embed(texts, span, false).await
    }
}
