//! The embedding metrics (`agentwall_embedding_*` in `/metrics`; the collectors live with the
//! others in the server's [`Metrics`]), and the gauge the memory layer keeps: how many memory
//! items wait for an embedding.

use std::time::Duration;

use super::EmbedError;
use crate::telemetry::Metrics;

/// Sets how many memory items wait for an embedding (queued after a failure, or not yet
/// embedded). The memory layer calls this; `/readyz` and `/metrics` report it.
pub fn set_pending(metrics: &Metrics, items: usize) {
    metrics
        .embedding_pending
        .set(i64::try_from(items).unwrap_or(i64::MAX));
}

/// The last value given to [`set_pending`].
pub fn pending(metrics: &Metrics) -> u64 {
    u64::try_from(metrics.embedding_pending.get()).unwrap_or_default()
}

/// Records one model call of `provider` (an endpoint request, an in-process batch) of `texts`
/// texts, which took `took` and failed with `error`, if it failed.
pub fn observe_call(
    m: &Metrics,
    provider: &str,
    texts: usize,
    took: Duration,
    error: Option<&EmbedError>,
) {
    let outcome = error.map_or("ok", EmbedError::kind);
    m.embedding_requests.with_label_values(&[provider]).inc();
    m.embedding_duration
        .with_label_values(&[provider, outcome])
        .observe(took.as_secs_f64());
    m.embedding_batch_size
        .with_label_values(&[provider])
        .observe(texts as f64);
    match error {
        None => m
            .embedding_texts
            .with_label_values(&[provider])
            .inc_by(texts as u64),
        Some(e) => m
            .embedding_failures
            .with_label_values(&[provider, e.kind()])
            .inc(),
    }
}
