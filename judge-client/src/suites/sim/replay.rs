//! `judge replay`: the requests of a fixture file sent, byte for byte, to another agent, and the
//! replies compared with the baseline at the same decision points (conversation, round).
//! `openai` payloads go to `<endpoint>/v1/chat/completions` with their recorded session and
//! virtual time, in recorded order (a stateful agent sees the same sequence); `agentworld`
//! payloads are posted to the endpoint URL as is.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::injection::InjectedEndpoint;
use super::injection::config::{EndpointSpec, PrivacyTier, Protocol};
use super::injection::fixtures::FixtureFile;
use crate::endpoint::Failure;
use crate::endpoint::{
    BreakerPolicy, Credentials, FailureKind, RequestContext, RetryPolicy, TargetClient,
    TargetError, TargetSettings,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayPoint {
    pub conversation: usize,
    pub round: usize,
    pub agent_id: String,
    pub request_hash: String,
    pub baseline: Option<String>,
    pub reply: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    pub identical: bool,
    /// Jaccard similarity of the two replies' lower-cased word sets (1 when identical).
    pub similarity: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayReport {
    pub baseline_endpoint: String,
    pub endpoint: String,
    pub points: usize,
    pub identical: usize,
    pub differing: usize,
    pub failed: usize,
    pub mean_similarity: Option<f64>,
    pub decision_points: Vec<ReplayPoint>,
}

fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

pub fn similarity(a: &str, b: &str) -> f64 {
    let (a, b) = (words(a), words(b));
    let union = a.union(&b).count();
    if union == 0 {
        return 1.0;
    }
    a.intersection(&b).count() as f64 / union as f64
}

/// Replays every payload of `fixture` against `endpoint`.
pub async fn replay(
    fixture: &FixtureFile,
    endpoint: &str,
    credentials: Credentials,
    timeout_ms: u64,
    model: Option<String>,
) -> ReplayReport {
    let target = TargetClient::new(
        TargetSettings {
            timeout_ms,
            ..TargetSettings::new(endpoint)
        },
        credentials.clone(),
    );
    let injected = InjectedEndpoint::new(EndpointSpec {
        agent_id: "replay".to_owned(),
        url: endpoint.to_owned(),
        api_key: credentials.api_key.clone(),
        protocol: Protocol::Agentworld,
        model: None,
        timeout_ms,
        privacy_tier: PrivacyTier::Minimal,
        redact_pii: false,
        breaker: BreakerPolicy::default(),
        retry: RetryPolicy::default(),
        max_inflight: 1,
        qps_cap: 100,
    });
    let mut points = Vec::new();
    for (n, payload) in fixture.payloads.iter().enumerate() {
        let reply: Result<String, TargetError> = match fixture.baseline_agent.protocol {
            Protocol::Openai => {
                match serde_json::from_value::<protocol::openai::ChatCompletionRequest>(
                    payload.request.clone(),
                ) {
                    Ok(mut request) => {
                        if model.is_some() {
                            request.model = model.clone();
                        }
                        let ctx = RequestContext {
                            session_id: payload.session_id.clone().unwrap_or_default(),
                            mock_time: payload.mock_time,
                            request_no: n as u64 + 1,
                        };
                        target.chat_request(&ctx, &request).await.map(|r| r.text)
                    }
                    Err(e) => Err(TargetError::new(
                        FailureKind::JudgeError,
                        format!("fixture request is not a chat request: {e}"),
                    )),
                }
            }
            Protocol::Agentworld => {
                let body = serde_json::to_vec(&payload.request).unwrap_or_default();
                injected.call(&body).await.map(|r| r.text)
            }
        };
        let baseline = payload
            .baseline_response
            .as_ref()
            .and_then(|b| b.get("response_text"))
            .and_then(|t| t.as_str())
            .map(str::to_owned);
        let (reply, failure) = match reply {
            Ok(text) => (Some(text), None),
            Err(e) => (None, Some(Failure::from(e))),
        };
        let (identical, sim) = match (&baseline, &reply) {
            (Some(a), Some(b)) => (a == b, similarity(a, b)),
            _ => (false, 0.0),
        };
        points.push(ReplayPoint {
            conversation: payload.conversation,
            round: payload.round,
            agent_id: payload.agent_id.clone(),
            request_hash: payload.request_hash.clone(),
            baseline,
            reply,
            failure,
            identical,
            similarity: sim,
        });
    }
    let compared: Vec<f64> = points
        .iter()
        .filter(|p| p.failure.is_none())
        .map(|p| p.similarity)
        .collect();
    ReplayReport {
        baseline_endpoint: fixture.baseline_agent.endpoint.clone(),
        endpoint: endpoint.to_owned(),
        points: points.len(),
        identical: points.iter().filter(|p| p.identical).count(),
        differing: points
            .iter()
            .filter(|p| !p.identical && p.failure.is_none())
            .count(),
        failed: points.iter().filter(|p| p.failure.is_some()).count(),
        mean_similarity: crate::report::stats::mean(&compared),
        decision_points: points,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn similarity_is_word_jaccard() {
        assert_eq!(
            similarity("Your flight is JL042.", "your FLIGHT is jl042"),
            1.0
        );
        assert_eq!(similarity("a b", "c d"), 0.0);
        assert!((similarity("a b c", "a b d") - 0.5).abs() < 1e-12);
        assert_eq!(similarity("", ""), 1.0);
    }
}
