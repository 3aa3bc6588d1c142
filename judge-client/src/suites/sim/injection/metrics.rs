//! Per-endpoint operational metrics of docs/contracts/agent-injection.md: latency p50/p99, error rate, timeout rate,
//! circuit state, and every breaker transition (so its state is visible after the run).

use serde::{Deserialize, Serialize};

use crate::endpoint::FailureKind;
use crate::report::stats::nearest_rank;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transition {
    /// The call (1-based) during which the state changed.
    pub call: u64,
    pub from: String,
    pub to: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointMetrics {
    pub agent_id: String,
    pub url: String,
    /// Calls made by the runner (one per turn the endpoint was asked for).
    pub calls: u64,
    pub successes: u64,
    /// Failed calls of any class, rejections by the open circuit included.
    pub errors: u64,
    pub timeouts: u64,
    pub rate_limited: u64,
    /// Answers that were not a usable response (bad JSON, no text, an error object).
    pub invalid_responses: u64,
    pub infra_errors: u64,
    /// Calls refused without a request because the circuit was open (or probing).
    pub circuit_rejections: u64,
    /// Extra attempts after a 429.
    pub retries: u64,
    pub latency_p50_ms: Option<u64>,
    pub latency_p99_ms: Option<u64>,
    pub error_rate: f64,
    pub timeout_rate: f64,
    /// `CLOSED`, `OPEN` or `HALF_OPEN` at the end of the run.
    pub circuit_state: String,
    pub transitions: Vec<Transition>,
    /// Most requests that were in flight at once.
    pub max_in_flight: usize,
}

/// Collects an endpoint's measurements while it runs.
#[derive(Debug, Default)]
pub struct Recorder {
    pub calls: u64,
    pub successes: u64,
    pub failures: Vec<FailureKind>,
    pub invalid_responses: u64,
    pub circuit_rejections: u64,
    pub retries: u64,
    /// Whole-call latencies of calls that reached the endpoint.
    pub latencies_ms: Vec<u64>,
    pub transitions: Vec<Transition>,
    pub in_flight: usize,
    pub max_in_flight: usize,
    /// The breaker state last seen (empty before the first call: closed).
    pub last_state: &'static str,
}

impl Recorder {
    pub fn snapshot(&self, agent_id: &str, url: &str, circuit_state: &str) -> EndpointMetrics {
        let mut sorted = self.latencies_ms.clone();
        sorted.sort_unstable();
        let count = |k: FailureKind| self.failures.iter().filter(|f| **f == k).count() as u64;
        let errors = self.failures.len() as u64;
        let rate = |n: u64| {
            if self.calls == 0 {
                0.0
            } else {
                n as f64 / self.calls as f64
            }
        };
        EndpointMetrics {
            agent_id: agent_id.to_owned(),
            url: url.to_owned(),
            calls: self.calls,
            successes: self.successes,
            errors,
            timeouts: count(FailureKind::Timeout),
            rate_limited: count(FailureKind::RateLimited),
            invalid_responses: self.invalid_responses,
            infra_errors: count(FailureKind::InfraError),
            circuit_rejections: self.circuit_rejections,
            retries: self.retries,
            latency_p50_ms: nearest_rank(&sorted, 0.50),
            latency_p99_ms: nearest_rank(&sorted, 0.99),
            error_rate: rate(errors),
            timeout_rate: rate(count(FailureKind::Timeout)),
            circuit_state: circuit_state.to_owned(),
            transitions: self.transitions.clone(),
            max_in_flight: self.max_in_flight,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_percentiles() {
        let r = Recorder {
            calls: 4,
            successes: 2,
            failures: vec![FailureKind::Timeout, FailureKind::AgentError],
            latencies_ms: (1..=100).collect(),
            ..Recorder::default()
        };
        let m = r.snapshot("a", "u", "CLOSED");
        assert_eq!((m.latency_p50_ms, m.latency_p99_ms), (Some(50), Some(99)));
        assert_eq!((m.error_rate, m.timeout_rate), (0.5, 0.25));
        assert_eq!(
            Recorder::default().snapshot("a", "u", "CLOSED").error_rate,
            0.0
        );
    }
}
