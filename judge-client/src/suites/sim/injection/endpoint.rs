//! The HTTP client toward one injected endpoint, with the failure semantics of docs/contracts/agent-injection.md:
//! a timeout per call; `429` retried with exponential backoff (Retry-After honoured) up to the
//! retry limit; the target's circuit breaker ([`crate::endpoint::breaker`]); at most N requests in
//! flight (a semaphore) and a QPS cap (governor). It never falls back itself: it returns a
//! classified error and the runner applies the configured fallback.

use std::cell::RefCell;
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use awc::http::header::CONTENT_TYPE;
use chrono::Utc;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use protocol::openai::ChatCompletion;
use tokio::sync::Semaphore;

use super::config::{EndpointSpec, Protocol};
use super::metrics::{EndpointMetrics, Recorder, Transition};
use super::schema::AgentWorldResponse;
use crate::endpoint::breaker::{CircuitBreaker, Outcome, Rejected};
use crate::endpoint::resilience::{classify_send_error, classify_status, parse_retry_after};
use crate::endpoint::{FailureKind, TargetError};

/// A reply of the endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub text: String,
    /// The whole answer body, kept as the fixture's baseline response.
    pub raw: serde_json::Value,
    pub latency_ms: u64,
}

struct Answer {
    status: u16,
    retry_after: Option<Duration>,
    body: bytes::Bytes,
}

pub struct InjectedEndpoint {
    spec: EndpointSpec,
    http: awc::Client,
    limiter: DefaultDirectRateLimiter,
    in_flight: Semaphore,
    breaker: RefCell<CircuitBreaker>,
    recorder: RefCell<Recorder>,
    url: String,
}

impl InjectedEndpoint {
    pub fn new(spec: EndpointSpec) -> Self {
        let url = match spec.protocol {
            Protocol::Agentworld => spec.url.clone(),
            Protocol::Openai => {
                let trimmed = spec.url.trim_end_matches('/');
                if trimmed.ends_with("/v1") {
                    format!("{trimmed}/chat/completions")
                } else {
                    format!("{trimmed}/v1/chat/completions")
                }
            }
        };
        // awc's own timeout is only a backstop behind the per-call timeout below.
        let http = awc::Client::builder()
            .timeout(Duration::from_millis(spec.timeout_ms + 1_000))
            .finish();
        let qps = NonZeroU32::new(spec.qps_cap).unwrap_or(NonZeroU32::MIN);
        Self {
            limiter: RateLimiter::direct(Quota::per_second(qps)),
            in_flight: Semaphore::new(spec.max_inflight.max(1)),
            breaker: RefCell::new(CircuitBreaker::new(spec.breaker)),
            recorder: RefCell::new(Recorder::default()),
            http,
            url,
            spec,
        }
    }

    pub fn spec(&self) -> &EndpointSpec {
        &self.spec
    }

    pub fn circuit_state(&self) -> &'static str {
        self.breaker.borrow().state_name(Instant::now())
    }

    pub fn metrics(&self) -> EndpointMetrics {
        self.recorder
            .borrow()
            .snapshot(&self.spec.agent_id, &self.spec.url, self.circuit_state())
    }

    /// Sends `body` (the exact bytes, already redacted) and returns the reply's text.
    pub async fn call(&self, body: &[u8]) -> Result<Reply, TargetError> {
        let call_no = {
            let mut r = self.recorder.borrow_mut();
            r.calls += 1;
            r.calls
        };
        let result = self.call_inner(body, call_no).await;
        let mut r = self.recorder.borrow_mut();
        match &result {
            Ok(reply) => {
                r.successes += 1;
                r.latencies_ms.push(reply.latency_ms);
            }
            Err(e) => r.failures.push(e.kind),
        }
        result
    }

    async fn call_inner(&self, body: &[u8], call_no: u64) -> Result<Reply, TargetError> {
        let Ok(_permit) = self.in_flight.acquire().await else {
            return Err(TargetError::new(
                FailureKind::JudgeError,
                "in-flight limiter closed",
            ));
        };
        {
            let mut r = self.recorder.borrow_mut();
            r.in_flight += 1;
            r.max_in_flight = r.max_in_flight.max(r.in_flight);
        }
        let result = self.attempts(body, call_no).await;
        self.recorder.borrow_mut().in_flight -= 1;
        result
    }

    async fn attempts(&self, body: &[u8], call_no: u64) -> Result<Reply, TargetError> {
        let timeout = Duration::from_millis(self.spec.timeout_ms);
        let started = Instant::now();
        let mut retries = 0u32;
        loop {
            self.limiter.until_ready().await;
            let admitted = self.with_breaker(call_no, |b| b.admit(Instant::now()));
            if let Err(rejected) = admitted {
                self.recorder.borrow_mut().circuit_rejections += 1;
                let message = match rejected {
                    Rejected::Open(left) => format!(
                        "circuit OPEN after repeated failures; next probe in {} ms",
                        left.as_millis()
                    ),
                    Rejected::Probing => "circuit HALF_OPEN: its probe is under way".to_owned(),
                };
                return Err(
                    TargetError::new(FailureKind::InfraError, message).with_attempts(retries)
                );
            }
            let attempt = actix_rt::time::timeout(timeout, self.send_once(body))
                .await
                .unwrap_or_else(|_| {
                    Err(TargetError::new(
                        FailureKind::Timeout,
                        format!("no answer within {} ms", self.spec.timeout_ms),
                    ))
                });
            let outcome = match &attempt {
                Ok(a) if a.status == 429 => Outcome::Neutral,
                Ok(a) if a.status >= 500 => Outcome::Failure,
                Ok(_) => Outcome::Success,
                Err(e) if e.kind == FailureKind::JudgeError => Outcome::Neutral,
                Err(_) => Outcome::Failure,
            };
            self.with_breaker(call_no, |b| b.record(outcome, Instant::now()));
            let attempts = retries + 1;
            match attempt {
                Ok(a) if a.status == 429 => {
                    if retries >= self.spec.retry.max_retries {
                        return Err(TargetError::new(
                            FailureKind::RateLimited,
                            format!("still 429 after {retries} retries"),
                        )
                        .with_status(429)
                        .with_attempts(attempts));
                    }
                    self.recorder.borrow_mut().retries += 1;
                    actix_rt::time::sleep(self.spec.retry.delay(retries, a.retry_after)).await;
                    retries += 1;
                }
                Ok(a) => {
                    let latency_ms = started.elapsed().as_millis() as u64;
                    return self
                        .parse(&a, latency_ms)
                        .map_err(|e| e.with_attempts(attempts));
                }
                Err(e) => return Err(e.with_attempts(attempts)),
            }
        }
    }

    /// Runs `f` on the breaker and records every state change seen (an open circuit whose wait
    /// is over reads half-open before `f` runs).
    fn with_breaker<T>(&self, call_no: u64, f: impl FnOnce(&mut CircuitBreaker) -> T) -> T {
        let mut breaker = self.breaker.borrow_mut();
        self.note_state(call_no, breaker.state_name(Instant::now()));
        let out = f(&mut breaker);
        self.note_state(call_no, breaker.state_name(Instant::now()));
        out
    }

    fn note_state(&self, call_no: u64, state: &'static str) {
        let mut r = self.recorder.borrow_mut();
        let last = if r.last_state.is_empty() {
            "CLOSED"
        } else {
            r.last_state
        };
        if last != state {
            r.transitions.push(Transition {
                call: call_no,
                from: last.to_owned(),
                to: state.to_owned(),
            });
        }
        r.last_state = state;
    }

    async fn send_once(&self, body: &[u8]) -> Result<Answer, TargetError> {
        let mut request = self
            .http
            .post(&self.url)
            .insert_header((CONTENT_TYPE, "application/json"));
        if let Some(key) = &self.spec.api_key {
            request = request.bearer_auth(key);
        }
        let mut response = request.send_body(body.to_vec()).await.map_err(|e| {
            TargetError::new(classify_send_error(&e).0, format!("{}: {e}", self.url))
        })?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, Utc::now()));
        let body = response.body().limit(4 * 1024 * 1024).await.map_err(|e| {
            TargetError::new(FailureKind::InfraError, format!("reading the answer: {e}"))
                .with_status(status)
        })?;
        Ok(Answer {
            status,
            retry_after,
            body,
        })
    }

    fn parse(&self, answer: &Answer, latency_ms: u64) -> Result<Reply, TargetError> {
        let invalid = |message: String| {
            self.recorder.borrow_mut().invalid_responses += 1;
            TargetError::new(FailureKind::AgentError, message).with_status(answer.status)
        };
        if !(200..300).contains(&answer.status) {
            return Err(TargetError::new(
                classify_status(answer.status),
                format!("HTTP {}", answer.status),
            )
            .with_status(answer.status));
        }
        let raw: serde_json::Value = serde_json::from_slice(&answer.body)
            .map_err(|e| invalid(format!("invalid response: not JSON ({e})")))?;
        let text = match self.spec.protocol {
            Protocol::Agentworld => {
                let response: AgentWorldResponse = serde_json::from_value(raw.clone())
                    .map_err(|e| invalid(format!("invalid response: {e}")))?;
                if let Some(error) = &response.error {
                    self.recorder.borrow_mut().invalid_responses += 1;
                    return Err(TargetError::new(
                        error.kind(),
                        format!("endpoint reported {}: {}", error.code, error.message),
                    )
                    .with_status(answer.status));
                }
                response
                    .response_text
                    .ok_or_else(|| invalid("invalid response: no response_text".to_owned()))?
            }
            Protocol::Openai => {
                let completion: ChatCompletion = serde_json::from_value(raw.clone())
                    .map_err(|e| invalid(format!("invalid response: {e}")))?;
                completion
                    .first_text()
                    .ok_or_else(|| invalid("invalid response: no text".to_owned()))?
            }
        };
        Ok(Reply {
            text,
            raw,
            latency_ms,
        })
    }
}
