//! How a provider fares, from the calls it serves: every model call is recorded here (and in
//! the metrics), and `/readyz` reports it. No call is made for the report: a readiness probe
//! every few seconds must not cost model time, nor fail a server whose turns still work.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use protocol::control::EmbeddingsHealth;

use super::{EmbedError, metrics};
use crate::telemetry::Metrics;

/// The calls of one provider.
#[derive(Debug)]
pub struct Health {
    /// `in-process` or `endpoint`.
    provider: &'static str,
    state: Mutex<State>,
    /// The server's metrics, where every call is counted too.
    metrics: Arc<Metrics>,
}

#[derive(Debug, Default)]
struct State {
    consecutive_failures: u64,
    last_error: Option<(String, DateTime<Utc>)>,
    last_success_at: Option<DateTime<Utc>>,
}

impl Health {
    pub fn new(provider: &'static str, metrics: Arc<Metrics>) -> Self {
        Self {
            provider,
            state: Mutex::default(),
            metrics,
        }
    }

    pub fn provider(&self) -> &'static str {
        self.provider
    }

    /// Records one model call of `texts` texts that took `took`. The first failure after a
    /// success, and the first success after failures, are logged: a failing endpoint is said
    /// once, not once per call.
    pub fn observe(&self, texts: usize, took: Duration, error: Option<&EmbedError>) {
        metrics::observe_call(&self.metrics, self.provider, texts, took, error);
        let now = Utc::now();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match error {
            Some(e) => {
                state.consecutive_failures += 1;
                state.last_error = Some((e.to_string(), now));
                if state.consecutive_failures == 1 {
                    tracing::warn!(provider = self.provider, error = %e, "embeddings fail: recall is lexical until they answer again");
                }
            }
            None => {
                if state.consecutive_failures > 0 {
                    tracing::info!(
                        provider = self.provider,
                        failures = state.consecutive_failures,
                        "embeddings answer again"
                    );
                }
                state.consecutive_failures = 0;
                state.last_success_at = Some(now);
            }
        }
    }

    /// The report of a provider serving `model`, with the memory layer's count of items waiting
    /// for an embedding ([`metrics::set_pending`]).
    pub fn report(&self, model: &str, dimension: Option<usize>) -> EmbeddingsHealth {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        EmbeddingsHealth {
            provider: self.provider.to_owned(),
            model: model.to_owned(),
            dimension,
            ok: state.consecutive_failures == 0,
            consecutive_failures: state.consecutive_failures,
            last_error: state.last_error.as_ref().map(|(e, _)| e.clone()),
            last_error_at: state.last_error.as_ref().map(|(_, at)| *at),
            last_success_at: state.last_success_at,
            pending: metrics::pending(&self.metrics),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_count_until_a_success_and_the_last_error_stays() {
        let counts = Arc::new(Metrics::new());
        let health = Health::new("endpoint", Arc::clone(&counts));
        let report = health.report("m", None);
        assert!(report.ok && report.last_error.is_none() && report.last_success_at.is_none());
        let timeout = EmbedError::Timeout {
            after: Duration::from_secs(2),
        };
        health.observe(3, Duration::from_millis(5), Some(&timeout));
        health.observe(3, Duration::from_millis(5), Some(&timeout));
        let failures = counts
            .embedding_failures
            .with_label_values(&["endpoint", "timeout"]);
        assert_eq!(
            failures.get(),
            2,
            "the calls are counted in the server's metrics"
        );
        metrics::set_pending(&counts, 7);
        let report = health.report("m", Some(384));
        assert!(!report.ok);
        assert_eq!(report.consecutive_failures, 2);
        assert_eq!(
            report.last_error.as_deref(),
            Some(timeout.to_string().as_str())
        );
        assert_eq!((report.dimension, report.pending), (Some(384), 7));
        health.observe(1, Duration::from_millis(5), None);
        let report = health.report("m", Some(384));
        assert!(report.ok && report.consecutive_failures == 0);
        assert!(report.last_error.is_some() && report.last_success_at.is_some());
    }
}
