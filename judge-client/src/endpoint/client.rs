//! The HTTP client toward the target: awc under the actix runtime (one client per thread, pooled
//! keep-alive connections), the wall's headers on every request, retries per [`RetryPolicy`].
//! An A2A target's turns go through the same requests ([`super::a2a`]), its agent card found
//! once and kept.

use std::cell::{OnceCell, RefCell};
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use awc::http::Method;
use awc::http::header::CONTENT_TYPE;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use protocol::control::{InjectRequest, InjectResponse, MemoryView, ResetResponse};
use protocol::headers::{MOCK_TIME, SESSION_ID, TRACEPARENT, format_mock_time};
use protocol::openai::responses::{Response, ResponseCreateRequest};
use protocol::openai::{
    ChatCompletion, ChatCompletionRequest, ChatMessage, ErrorBody, FunctionCall, ModelList,
    ToolCall, Usage,
};
use protocol::recall::{RecallRequest, RecallResponse};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::breaker::{BreakerPolicy, CircuitBreaker, Outcome, Rejected};
use super::error::{FailureKind, TargetError};
use super::resilience::{RetryPolicy, classify_send_error, classify_status, parse_retry_after};
use super::telemetry;
use super::trace::traceparent;

/// Largest response body the judge reads.
const BODY_LIMIT: usize = 16 * 1024 * 1024;

/// Where the target is and how to talk to it. Holds no secret, so it can go into the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetSettings {
    /// Base URL, with or without a trailing `/v1`.
    pub endpoint: String,
    /// Model name to send; `None` lets the probe take the first one `/v1/models` lists.
    pub model: Option<String>,
    /// Per-request timeout, covering the whole answer.
    pub timeout_ms: u64,
    pub retry: RetryPolicy,
    #[serde(default)]
    pub breaker: BreakerPolicy,
    /// Most requests started per second.
    #[serde(default = "default_max_rps")]
    pub max_rps: u32,
    /// `max_tokens` sent with every chat request the judge builds; `None` sends none, leaving
    /// the reply's length to the target (a small local model may then write until its context
    /// is full).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

fn default_max_rps() -> u32 {
    100
}

impl TargetSettings {
    /// Settings with the design's defaults: 60 s timeout, backoff 1 s/2 s/4 s, breaker 5/30 s/2,
    /// 100 requests per second.
    pub fn new(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            model: None,
            timeout_ms: 60_000,
            retry: RetryPolicy::default(),
            breaker: BreakerPolicy::default(),
            max_rps: default_max_rps(),
            max_tokens: None,
        }
    }
}

/// Secrets, kept out of every file the judge writes.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    /// Bearer key for `/v1`.
    pub api_key: Option<String>,
    /// Bearer token for `/control`; falls back to `api_key`.
    pub admin_token: Option<String>,
}

/// The per-request context: which session, what time it is there, and which request this is.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestContext {
    pub session_id: String,
    /// Sent as `X-Mock-Time` when present.
    pub mock_time: Option<DateTime<Utc>>,
    /// Numbers the request within its session, for the `traceparent` span id.
    pub request_no: u64,
}

/// A successful turn, through either API (a Responses API answer is read into the same shape:
/// its output text, and its `function_call` items as tool calls).
#[derive(Debug, Clone, PartialEq)]
pub struct ChatReply {
    pub text: String,
    /// Tool calls of the first choice (only when the request offered tools); from the Responses
    /// API, its `function_call` items, `call_id` as the id.
    pub tool_calls: Vec<ToolCall>,
    pub attempts: u32,
    /// Token counts, when the target reports them.
    pub usage: Option<Usage>,
    /// The answer's headers (lower-case names), for capabilities a target signals by echo.
    pub headers: Vec<(String, String)>,
    /// The Responses API's id of this response (what a chained request names as
    /// `previous_response_id`); `None` from Chat Completions.
    pub response_id: Option<String>,
}

#[derive(Debug)]
pub(super) struct RawResponse {
    pub(super) status: u16,
    retry_after: Option<Duration>,
    pub(super) content_type: Option<String>,
    pub(super) body: Bytes,
    /// Attempts it took, retries included.
    pub(super) attempts: u32,
    pub(super) headers: Vec<(String, String)>,
}

/// An answer exactly as the target sent it, whatever its status (for the conformance suite, which
/// judges the bytes themselves).
#[derive(Debug, Clone, PartialEq)]
pub struct RawAnswer {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Bytes,
}

struct AttemptError {
    error: TargetError,
    retryable: bool,
}

#[derive(Clone, Copy)]
pub(super) enum Plane {
    Data,
    Control,
}

/// One request to make (possibly several times).
pub(super) struct Call<'a> {
    pub(super) method: Method,
    pub(super) url: String,
    pub(super) plane: Plane,
    pub(super) ctx: Option<&'a RequestContext>,
    pub(super) body: Option<Vec<u8>>,
    /// Headers beyond the wall's own (benchmark annotations such as `X-Turn-Id`).
    pub(super) extra_headers: &'a [(&'static str, String)],
}

pub struct TargetClient {
    http: awc::Client,
    limiter: DefaultDirectRateLimiter,
    breaker: RefCell<CircuitBreaker>,
    settings: TargetSettings,
    credentials: Credentials,
    api_base: String,
    control_base: String,
    /// Sent on every request (`--header NAME:VALUE`); may hold secrets, so never recorded.
    extra_headers: Vec<(String, String)>,
    /// An A2A target's agent card and interface, once found ([`super::a2a`]).
    pub(super) a2a: OnceCell<super::a2a::A2aTarget>,
}

impl TargetClient {
    pub fn new(settings: TargetSettings, credentials: Credentials) -> Self {
        let trimmed = settings.endpoint.trim_end_matches('/');
        let (api_base, control_base) = match trimmed.strip_suffix("/v1") {
            Some(root) => (trimmed.to_owned(), root.to_owned()),
            None => (format!("{trimmed}/v1"), trimmed.to_owned()),
        };
        // awc's own timeout is a backstop only: the judge's timeout around the whole exchange
        // (head and body) fires first, so a timeout always reads the same.
        let http = awc::Client::builder()
            .timeout(Duration::from_millis(settings.timeout_ms + 1_000))
            .finish();
        let rps = NonZeroU32::new(settings.max_rps).unwrap_or(NonZeroU32::MIN);
        Self {
            http,
            limiter: RateLimiter::direct(Quota::per_second(rps)),
            breaker: RefCell::new(CircuitBreaker::new(settings.breaker)),
            settings,
            credentials,
            api_base,
            control_base,
            extra_headers: Vec::new(),
            a2a: OnceCell::new(),
        }
    }

    /// Sends these headers on every request too (after the wall's own, so they can replace them).
    pub fn with_headers(mut self, headers: Vec<(String, String)>) -> Self {
        self.extra_headers = headers;
        self
    }

    /// `method` on `/v1{path}` with `body` sent byte for byte (as `application/json`), with the
    /// usual retries of a 429 or a refused connection; any status is returned as it came.
    pub async fn raw(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<RawAnswer, TargetError> {
        let raw = self
            .execute(Call {
                method,
                url: format!("{}{path}", self.api_base),
                plane: Plane::Data,
                ctx: None,
                body,
                extra_headers: &[],
            })
            .await?;
        Ok(RawAnswer {
            status: raw.status,
            content_type: raw.content_type,
            body: raw.body,
        })
    }

    /// `method` on an absolute `url` (an A2A agent's card or interface) with `body` sent byte
    /// for byte (as `application/json`) and `headers` beside the wall's own, with the usual
    /// retries; any status is returned as it came.
    pub async fn raw_url(
        &self,
        method: Method,
        url: &str,
        body: Option<Vec<u8>>,
        headers: &[(&'static str, String)],
    ) -> Result<RawAnswer, TargetError> {
        let raw = self
            .execute(Call {
                method,
                url: url.to_owned(),
                plane: Plane::Data,
                ctx: None,
                body,
                extra_headers: headers,
            })
            .await?;
        Ok(RawAnswer {
            status: raw.status,
            content_type: raw.content_type,
            body: raw.body,
        })
    }

    pub fn settings(&self) -> &TargetSettings {
        &self.settings
    }

    /// The target's base URL (without `/v1`): where its control plane and, for an A2A agent,
    /// its agent card are.
    pub fn base_url(&self) -> &str {
        &self.control_base
    }

    /// The model name sent with every chat request.
    pub fn model(&self) -> &str {
        self.settings.model.as_deref().unwrap_or("default")
    }

    pub fn set_model(&mut self, model: String) {
        self.settings.model = Some(model);
    }

    /// `GET /v1/models`: the model ids the target lists.
    pub async fn models(&self) -> Result<Vec<String>, TargetError> {
        let url = format!("{}/models", self.api_base);
        let raw = self
            .execute(Call {
                method: Method::GET,
                url,
                plane: Plane::Data,
                ctx: None,
                body: None,
                extra_headers: &[],
            })
            .await?;
        let list: ModelList = parse_ok(&raw, "a model list")?;
        Ok(list.data.into_iter().map(|m| m.id).collect())
    }

    /// `POST /v1/chat/completions` (non-streamed): the reply's text.
    pub async fn chat(
        &self,
        ctx: &RequestContext,
        messages: Vec<ChatMessage>,
    ) -> Result<ChatReply, TargetError> {
        let request = self.chat_request_for(messages);
        self.chat_request(ctx, &request).await
    }

    /// The request [`TargetClient::chat`] sends for `messages` (recorded as a fixture by `judge sim --record`).
    pub fn chat_request_for(&self, messages: Vec<ChatMessage>) -> ChatCompletionRequest {
        ChatCompletionRequest {
            model: Some(self.model().to_owned()),
            messages,
            stream: Some(false),
            max_tokens: self.settings.max_tokens,
            ..ChatCompletionRequest::default()
        }
    }

    /// `POST /v1/chat/completions` with a request exactly as given (replayed fixtures, simulators
    /// and judges that set a seed).
    pub async fn chat_request(
        &self,
        ctx: &RequestContext,
        request: &ChatCompletionRequest,
    ) -> Result<ChatReply, TargetError> {
        self.chat_request_with_headers(ctx, request, &[]).await
    }

    /// [`TargetClient::chat_request`] with extra request headers (benchmark annotations).
    pub async fn chat_request_with_headers(
        &self,
        ctx: &RequestContext,
        request: &ChatCompletionRequest,
        extra_headers: &[(&'static str, String)],
    ) -> Result<ChatReply, TargetError> {
        let raw = self
            .post_turn(ctx, "/chat/completions", request, extra_headers)
            .await?;
        let attempts = raw.attempts;
        let completion: ChatCompletion = parse_ok(&raw, "a chat completion")?;
        let tool_calls = completion
            .choices
            .first()
            .and_then(|c| c.message.tool_calls.clone())
            .unwrap_or_default();
        let text = match completion.first_text() {
            Some(text) => text,
            None if !tool_calls.is_empty() => String::new(),
            None => {
                return Err(TargetError::new(
                    FailureKind::AgentError,
                    "the chat completion has no text in its first choice",
                )
                .with_status(raw.status));
            }
        };
        Ok(ChatReply {
            text,
            tool_calls,
            attempts,
            usage: completion.usage,
            headers: raw.headers,
            response_id: None,
        })
    }

    /// `POST /v1/responses` (non-streamed) with a request exactly as given: the output text, and
    /// the `function_call` items as tool calls. A response with neither is the agent's error.
    pub async fn responses_request(
        &self,
        ctx: &RequestContext,
        request: &ResponseCreateRequest,
    ) -> Result<ChatReply, TargetError> {
        self.responses_request_with_headers(ctx, request, &[]).await
    }

    /// [`TargetClient::responses_request`] with extra request headers (benchmark annotations).
    pub async fn responses_request_with_headers(
        &self,
        ctx: &RequestContext,
        request: &ResponseCreateRequest,
        extra_headers: &[(&'static str, String)],
    ) -> Result<ChatReply, TargetError> {
        let raw = self
            .post_turn(ctx, "/responses", request, extra_headers)
            .await?;
        let response: Response = parse_ok(&raw, "a response object")?;
        let tool_calls: Vec<ToolCall> = response
            .function_calls()
            .map(|item| ToolCall {
                id: item.call_id.clone().unwrap_or_default(),
                kind: "function".to_owned(),
                function: FunctionCall {
                    name: item.name.clone().unwrap_or_default(),
                    arguments: item.arguments.clone().unwrap_or_default(),
                },
            })
            .collect();
        let text = response.output_text();
        if text.is_empty() && tool_calls.is_empty() {
            return Err(TargetError::new(
                FailureKind::AgentError,
                format!(
                    "the response {} has neither output text nor a function call (status {})",
                    response.id,
                    response.status.as_deref().unwrap_or("unknown")
                ),
            )
            .with_status(raw.status)
            .with_attempts(raw.attempts));
        }
        Ok(ChatReply {
            text,
            tool_calls,
            attempts: raw.attempts,
            usage: response.usage.map(|u| Usage {
                prompt_tokens: u.input_tokens,
                completion_tokens: u.output_tokens,
                total_tokens: u.total_tokens,
                ..Usage::default()
            }),
            headers: raw.headers,
            response_id: Some(response.id),
        })
    }

    /// Posts a turn's JSON `request` to `/v1{path}` in the session of `ctx`.
    async fn post_turn<B: Serialize>(
        &self,
        ctx: &RequestContext,
        path: &str,
        request: &B,
        extra_headers: &[(&'static str, String)],
    ) -> Result<RawResponse, TargetError> {
        let body = serde_json::to_vec(request).map_err(|e| {
            TargetError::new(
                FailureKind::JudgeError,
                format!("cannot encode request: {e}"),
            )
        })?;
        self.execute(Call {
            method: Method::POST,
            url: format!("{}{path}", self.api_base),
            plane: Plane::Data,
            ctx: Some(ctx),
            body: Some(body),
            extra_headers,
        })
        .await
    }

    /// `POST /control/session/reset` with an empty body.
    pub async fn reset(&self, ctx: &RequestContext) -> Result<ResetResponse, TargetError> {
        let url = format!("{}/control/session/reset", self.control_base);
        let raw = self
            .execute(Call {
                method: Method::POST,
                url,
                plane: Plane::Control,
                ctx: Some(ctx),
                body: None,
                extra_headers: &[],
            })
            .await?;
        parse_ok(&raw, "a reset answer")
    }

    /// `POST /control/memory/inject`.
    pub async fn inject(
        &self,
        ctx: &RequestContext,
        request: &InjectRequest,
    ) -> Result<InjectResponse, TargetError> {
        self.inject_with_headers(ctx, request, &[]).await
    }

    /// [`TargetClient::inject`] with extra request headers (`X-Turn-Id` of each fact).
    pub async fn inject_with_headers(
        &self,
        ctx: &RequestContext,
        request: &InjectRequest,
        extra_headers: &[(&'static str, String)],
    ) -> Result<InjectResponse, TargetError> {
        self.control_post(
            "memory/inject",
            ctx,
            request,
            extra_headers,
            "an inject answer",
        )
        .await
    }

    /// `POST /control/memory/recall`: what the agent would recall for a text.
    pub async fn recall(
        &self,
        ctx: &RequestContext,
        request: &RecallRequest,
    ) -> Result<RecallResponse, TargetError> {
        self.control_post("memory/recall", ctx, request, &[], "a recall answer")
            .await
    }

    /// `POST /control/<path>` with a JSON body, answered by `what`.
    async fn control_post<B: Serialize, R: DeserializeOwned>(
        &self,
        path: &str,
        ctx: &RequestContext,
        body: &B,
        extra_headers: &[(&'static str, String)],
        what: &str,
    ) -> Result<R, TargetError> {
        let body = serde_json::to_vec(body).map_err(|e| {
            TargetError::new(
                FailureKind::JudgeError,
                format!("cannot encode the body of /control/{path}: {e}"),
            )
        })?;
        let url = format!("{}/control/{path}", self.control_base);
        let raw = self
            .execute(Call {
                method: Method::POST,
                url,
                plane: Plane::Control,
                ctx: Some(ctx),
                body: Some(body),
                extra_headers,
            })
            .await?;
        parse_ok(&raw, what)
    }

    /// `GET /control/memory`.
    pub async fn memory(&self, ctx: &RequestContext) -> Result<MemoryView, TargetError> {
        let url = format!("{}/control/memory", self.control_base);
        let raw = self
            .execute(Call {
                method: Method::GET,
                url,
                plane: Plane::Control,
                ctx: Some(ctx),
                body: None,
                extra_headers: &[],
            })
            .await?;
        parse_ok(&raw, "a memory view")
    }

    /// Sends a request, retrying what is safe to retry; returns the last answer (any status but a
    /// final 429, which becomes `rate_limited`).
    pub(super) async fn execute(&self, call: Call<'_>) -> Result<RawResponse, TargetError> {
        let policy = self.settings.retry;
        let timeout = Duration::from_millis(self.settings.timeout_ms);
        let mut retries = 0u32;
        loop {
            self.limiter.until_ready().await;
            if let Err(rejected) = self.breaker.borrow_mut().admit(Instant::now()) {
                let message = match rejected {
                    Rejected::Open(left) => format!(
                        "circuit open after repeated failures of the target; next probe in {} ms",
                        left.as_millis()
                    ),
                    Rejected::Probing => {
                        "circuit half-open: a probe request is under way".to_owned()
                    }
                };
                return Err(
                    TargetError::new(FailureKind::InfraError, message).with_attempts(retries)
                );
            }
            let attempt = actix_rt::time::timeout(timeout, self.send_once(&call))
                .await
                .unwrap_or_else(|_| {
                    Err(AttemptError {
                        error: TargetError::new(
                            FailureKind::Timeout,
                            format!("no complete answer within {} ms", self.settings.timeout_ms),
                        ),
                        retryable: false,
                    })
                });
            let attempts = retries + 1;
            let outcome = match &attempt {
                Ok(raw) if raw.status == 429 => Outcome::Neutral,
                Ok(raw) if raw.status >= 500 => Outcome::Failure,
                Ok(_) => Outcome::Success,
                Err(failed) if failed.error.kind == FailureKind::JudgeError => Outcome::Neutral,
                Err(_) => Outcome::Failure,
            };
            self.breaker.borrow_mut().record(outcome, Instant::now());
            match attempt {
                Ok(raw) if raw.status == 429 => {
                    if retries >= policy.max_retries {
                        return Err(TargetError::new(
                            FailureKind::RateLimited,
                            format!("still 429 Too Many Requests after {retries} retries"),
                        )
                        .with_status(429)
                        .with_attempts(attempts));
                    }
                    actix_rt::time::sleep(policy.delay(retries, raw.retry_after)).await;
                }
                Ok(mut raw) => {
                    raw.attempts = attempts;
                    return Ok(raw);
                }
                Err(failed) if failed.retryable && retries < policy.max_retries => {
                    actix_rt::time::sleep(policy.delay(retries, None)).await;
                }
                Err(failed) => return Err(failed.error.with_attempts(attempts)),
            }
            retries += 1;
        }
    }

    async fn send_once(&self, call: &Call<'_>) -> Result<RawResponse, AttemptError> {
        let url = call.url.as_str();
        let mut request = self.http.request(call.method.clone(), url);
        if let Some(ctx) = call.ctx {
            request = request
                .insert_header((SESSION_ID, ctx.session_id.clone()))
                .insert_header((
                    TRACEPARENT,
                    // The current span's context when spans are exported (the caller runs the
                    // request `with_context`), else ids derived from the session.
                    telemetry::traceparent(&opentelemetry::Context::current())
                        .unwrap_or_else(|| traceparent(&ctx.session_id, ctx.request_no)),
                ));
            if let Some(time) = ctx.mock_time {
                request = request.insert_header((MOCK_TIME, format_mock_time(time)));
            }
        }
        for (name, value) in call.extra_headers {
            request = request.insert_header((*name, value.clone()));
        }
        let token = match call.plane {
            Plane::Data => self.credentials.api_key.as_ref(),
            Plane::Control => self
                .credentials
                .admin_token
                .as_ref()
                .or(self.credentials.api_key.as_ref()),
        };
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        for (name, value) in &self.extra_headers {
            request = request.insert_header((name.as_str(), value.as_str()));
        }
        let sent = match &call.body {
            Some(body) => {
                request
                    .insert_header((CONTENT_TYPE, "application/json"))
                    .send_body(body.clone())
                    .await
            }
            None => request.send().await,
        };
        let mut response = sent.map_err(|e| {
            let (kind, retryable) = classify_send_error(&e);
            AttemptError {
                error: TargetError::new(kind, format!("{url}: {e}")),
                retryable,
            }
        })?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .filter_map(|(name, value)| {
                Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
            })
            .collect();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, Utc::now()));
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response
            .body()
            .limit(BODY_LIMIT)
            .await
            .map_err(|e| AttemptError {
                error: TargetError::new(
                    FailureKind::InfraError,
                    format!("{url}: reading the answer failed: {e}"),
                )
                .with_status(status),
                retryable: false,
            })?;
        Ok(RawResponse {
            status,
            retry_after,
            content_type,
            body,
            attempts: 1,
            headers,
        })
    }
}

/// Decodes a 2xx body as `T`; any other status becomes a classified error carrying the target's
/// own error message when it sent one in OpenAI's shape.
fn parse_ok<T: DeserializeOwned>(raw: &RawResponse, what: &str) -> Result<T, TargetError> {
    let attempts = raw.attempts;
    if !(200..300).contains(&raw.status) {
        let detail = serde_json::from_slice::<ErrorBody>(&raw.body)
            .map(|b| b.error.message)
            .unwrap_or_else(|_| snippet(&raw.body));
        return Err(TargetError::new(
            classify_status(raw.status),
            format!("HTTP {}: {detail}", raw.status),
        )
        .with_status(raw.status)
        .with_attempts(attempts));
    }
    serde_json::from_slice(&raw.body).map_err(|e| {
        TargetError::new(
            FailureKind::AgentError,
            format!("expected {what}, got {:?} ({e})", snippet(&raw.body)),
        )
        .with_status(raw.status)
        .with_attempts(attempts)
    })
}

pub(super) fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut out: String = text.chars().take(120).collect();
    if text.chars().count() > 120 {
        out.push('…');
    }
    out
}
