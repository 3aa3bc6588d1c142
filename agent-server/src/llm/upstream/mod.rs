//! The upstream model: any OpenAI-compatible `/chat/completions` endpoint (OpenAI, vLLM, Ollama,
//! LiteLLM, ...). The agent's [`Prompt`] becomes the request's messages ([`super::prompt`]); every
//! other field of the client's request (tools, tool_choice, temperature, max_tokens, seed, unknown
//! fields) goes along unchanged, and the upstream's completions and chunks come back unchanged.
//! A Responses turn goes to `/responses` instead when the upstream serves it
//! ([`super::upstream_api`]), built and read back by [`responses`]; both APIs
//! share the transport, deadlines and error mapping here.
//!
//! awc is `!Send` and needs the actix runtime, while [`ChatModel`] futures must be `Send`. So each
//! call runs as a local task on the current actix worker ([`actix_rt::spawn`]) with that worker's
//! own client (built lazily in a thread-local: one connection pool per worker thread), and results
//! come back over Tokio channels, which are `Send`. A streamed call keeps running in its local task
//! and forwards chunks as they arrive; when the receiver is dropped (the client went away) it stops
//! reading and the upstream connection is closed.
//!
//! Errors keep their meaning: 429 stays 429 (with `Retry-After`), a timeout is a timeout, an
//! unreachable upstream is unreachable; see [`LlmError`] and the error table in `crate::error`.

pub mod responses;

use std::cell::OnceCell;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use awc::http::header::RETRY_AFTER;
use bytes::Bytes;
use eventsource_stream::Eventsource as _;
use futures_util::{Stream, StreamExt as _};
use protocol::openai::responses::ResponseCreateRequest;
use protocol::openai::{
    ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, FinishReason, Usage,
};
use tokio::sync::{mpsc, oneshot};
use tracing::field::Empty;
use tracing::{Instrument as _, Span};

use super::upstream_api::{self, ApiChoice, LlmApi};
use super::{
    ChatModel, ChunkStream, LlmError, ModelReply, PassThrough, Prompt, ResponsesTurn,
    StreamedChunk, prompt,
};
use crate::outbound;
use crate::task;
use crate::telemetry::{Metrics, propagation};

/// Largest upstream response body read (a whole completion, or an error body).
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone)]
pub struct UpstreamConfig {
    /// Base URL of the OpenAI-compatible API, up to and including its version (`.../v1`).
    pub base_url: String,
    /// Sent as `Authorization: Bearer <key>`.
    pub api_key: Option<String>,
    /// Model id sent upstream; without it the client's `model` goes through.
    pub model: Option<String>,
    /// Longest wait for the upstream's response headers, for a whole completion, and between two
    /// chunks of a stream.
    pub timeout: Duration,
    /// The system prompt that opens every upstream request.
    pub system_prompt: String,
    /// Put message text on spans (`gen_ai.input.messages`, `gen_ai.output.messages`).
    pub trace_content: bool,
    /// The API Responses turns take (`--llm-api`).
    pub api: LlmApi,
}

pub struct UpstreamModel {
    config: UpstreamConfig,
    /// `<base_url>/chat/completions`.
    url: String,
    /// `<base_url>/responses`.
    responses_url: String,
    /// Whether Responses turns go to `responses_url`.
    api: ApiChoice,
    /// Model id reported by `/v1/models`.
    name: String,
    host: String,
    port: u16,
    /// Where every call is timed (`agentwall_upstream_request_duration_seconds`).
    metrics: Arc<Metrics>,
}

impl UpstreamModel {
    /// A model at `config.base_url`, timing its calls in `metrics`.
    pub fn new(config: UpstreamConfig, metrics: Arc<Metrics>) -> anyhow::Result<Self> {
        let base = config.base_url.trim_end_matches('/');
        let url = format!("{base}/chat/completions");
        let responses_url = format!("{base}/responses");
        let uri: awc::http::Uri = url.parse().map_err(|e| {
            anyhow::anyhow!("--llm-base-url {:?} is not a URL: {e}", config.base_url)
        })?;
        let scheme = uri.scheme_str().unwrap_or_default();
        anyhow::ensure!(
            scheme == "http" || scheme == "https",
            "--llm-base-url {:?}: use an http:// or https:// URL",
            config.base_url
        );
        let host = uri.host().unwrap_or_default().to_owned();
        let port = uri
            .port_u16()
            .unwrap_or(if scheme == "https" { 443 } else { 80 });
        let name = config
            .model
            .clone()
            .unwrap_or_else(|| "agentwall-upstream".to_owned());
        Ok(Self {
            api: ApiChoice::new(config.api),
            config,
            url,
            responses_url,
            name,
            host,
            port,
            metrics,
        })
    }

    /// The Chat Completions request sent upstream: the client's, with the agent's messages and our
    /// stream options.
    ///
    /// Built field by field rather than by cloning the client's request, whose messages would be
    /// copied only to be replaced; a field added to the protocol type fails to compile here until
    /// it is passed on.
    fn request(&self, prompt: &Prompt<'_>, stream: bool) -> ChatCompletionRequest {
        let ChatCompletionRequest {
            model,
            messages: _,
            stream: _,
            stream_options,
            temperature,
            top_p,
            max_tokens,
            max_completion_tokens,
            tools,
            tool_choice,
            seed,
            user,
            extra,
        } = prompt.request;
        let model = self
            .config
            .model
            .as_ref()
            .or(model.as_ref())
            .filter(|m| !m.is_empty())
            .cloned();
        // Streamed, always ask for usage: spans and logs report it; the client gets the usage
        // chunk only when it asked for it (see `http::chat`).
        let stream_options = stream.then(|| {
            let mut options = stream_options.clone().unwrap_or_default();
            options.include_usage = Some(true);
            options
        });
        ChatCompletionRequest {
            model,
            messages: prompt::messages(&self.config.system_prompt, prompt),
            stream: stream.then_some(true),
            stream_options,
            temperature: *temperature,
            top_p: *top_p,
            max_tokens: *max_tokens,
            max_completion_tokens: *max_completion_tokens,
            tools: tools.clone(),
            tool_choice: tool_choice.clone(),
            seed: *seed,
            user: user.clone(),
            extra: extra.clone(),
        }
    }

    fn span(&self, outgoing: &Outgoing) -> Span {
        let asked = outgoing.asked();
        let model = asked.model;
        let span = tracing::info_span!(
            "chat",
            otel.name = %format!("chat {model}"),
            otel.kind = "client",
            otel.status_code = Empty,
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = "openai",
            gen_ai.request.model = %model,
            gen_ai.request.stream = asked.stream,
            gen_ai.request.max_tokens = Empty,
            gen_ai.request.temperature = Empty,
            gen_ai.response.id = Empty,
            gen_ai.response.model = Empty,
            gen_ai.response.finish_reasons = Empty,
            gen_ai.usage.input_tokens = Empty,
            gen_ai.usage.output_tokens = Empty,
            gen_ai.input.messages = Empty,
            gen_ai.output.messages = Empty,
            server.address = %self.host,
            server.port = self.port,
            url.path = %outgoing.path(),
            http.response.status_code = Empty,
            error.type = Empty,
            openinference.span.kind = "LLM",
            llm.model_name = %model,
            llm.token_count.prompt = Empty,
            llm.token_count.completion = Empty,
        );
        if let Some(limit) = asked.max_tokens {
            span.record("gen_ai.request.max_tokens", limit);
        }
        if let Some(t) = asked.temperature {
            span.record("gen_ai.request.temperature", t);
        }
        if self.config.trace_content {
            span.record("gen_ai.input.messages", outgoing.input());
        }
        span
    }

    /// Everything the local task needs, owned. The `traceparent` comes from the model-call span, so
    /// the upstream's own spans (if it traces) continue the caller's trace under this call.
    fn call(&self, url: &str, body: Bytes, span: &Span) -> Call {
        let mut headers = HashMap::new();
        let cx = propagation::outgoing(span);
        opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&cx, &mut headers));
        if let Some(key) = &self.config.api_key {
            headers.insert("authorization".to_owned(), format!("Bearer {key}"));
        }
        Call {
            url: url.to_owned(),
            body,
            headers,
            timeout: self.config.timeout,
        }
    }

    /// The turn's Responses request when it goes upstream as one: a Responses turn, to an
    /// upstream that serves that API (under `auto`, asked once, at the first such turn).
    async fn native<'a>(&self, prompt: &Prompt<'a>) -> Result<Option<&'a ResponsesTurn>, LlmError> {
        let Some(turn) = prompt.responses else {
            return Ok(None);
        };
        let native = self.api.native(|| self.probe()).await?;
        Ok(native.then_some(turn))
    }

    /// Asks the upstream whether it serves `/responses`: an empty request, which a server with
    /// the route refuses (400 or 422) without generating anything.
    async fn probe(&self) -> Result<bool, LlmError> {
        let span = tracing::info_span!("probe", url.full = %self.responses_url);
        let call = self.call(&self.responses_url, Bytes::from_static(b"{}"), &span);
        let status = on_this_worker(run_probe(call).instrument(span)).await?;
        let native = !upstream_api::route_missing(status);
        if native {
            tracing::info!(url = %self.responses_url, status, "the upstream serves the Responses API: Responses turns go to it as Responses requests");
        } else {
            tracing::info!(url = %self.responses_url, status, "the upstream does not serve the Responses API: Responses turns are translated to Chat Completions");
        }
        Ok(native)
    }

    /// The request `prompt` sends upstream: the one place that decides which API a turn takes
    /// and builds its request ([`prompt`] lays the prompt out for either).
    async fn outgoing(&self, prompt: &Prompt<'_>, stream: bool) -> Result<Outgoing, LlmError> {
        Ok(match self.native(prompt).await? {
            Some(turn) => {
                Outgoing::Responses(responses::request(&self.config, prompt, turn, stream))
            }
            None => Outgoing::Chat(self.request(prompt, stream)),
        })
    }

    fn url(&self, outgoing: &Outgoing) -> &str {
        match outgoing {
            Outgoing::Chat(_) => &self.url,
            Outgoing::Responses(_) => &self.responses_url,
        }
    }

    /// A whole answer: the call, its metrics and its span, whichever API it takes.
    async fn whole(&self, outgoing: Outgoing) -> Result<ChatCompletion, LlmError> {
        let span = self.span(&outgoing);
        let call = self.call(self.url(&outgoing), outgoing.body(), &span);
        let parse = match outgoing {
            Outgoing::Chat(_) => chat_completion,
            Outgoing::Responses(_) => responses::completion,
        };
        let started = Instant::now();
        // The call's span goes with the local task, which records the response status on it.
        let result = on_this_worker(run_completion(call, parse).instrument(span.clone())).await;
        observe(
            &span,
            &self.metrics,
            outgoing.api(),
            "json",
            started,
            result.as_ref().err(),
        );
        let completion = result?;
        record_response(
            &span,
            &completion.id,
            &completion.model,
            completion.usage.as_ref(),
            completion
                .choices
                .iter()
                .filter_map(|c| c.finish_reason.as_ref()),
        );
        if self.config.trace_content {
            let messages: Vec<_> = completion.choices.iter().map(|c| &c.message).collect();
            span.record(
                "gen_ai.output.messages",
                serde_json::to_string(&messages).unwrap_or_default(),
            );
        }
        Ok(completion)
    }

    /// A streamed answer, read by `decoder`.
    async fn streamed<D: StreamDecoder>(
        &self,
        outgoing: Outgoing,
        decoder: D,
    ) -> Result<ChunkStream, LlmError> {
        let span = self.span(&outgoing);
        let call = self.call(self.url(&outgoing), outgoing.body(), &span);
        let (ready_tx, ready_rx) = oneshot::channel();
        let read = Read {
            api: outgoing.api(),
            decoder,
            trace_content: self.config.trace_content,
            metrics: Arc::clone(&self.metrics),
        };
        spawn_stream(call, ready_tx, span, read);
        ready_rx.await.unwrap_or_else(|_| Err(cancelled()))
    }
}

/// An upstream request, in the API it takes.
enum Outgoing {
    Chat(ChatCompletionRequest),
    Responses(ResponseCreateRequest),
}

/// What a request asks, for its span.
struct Asked<'a> {
    model: &'a str,
    stream: bool,
    max_tokens: Option<u32>,
    temperature: Option<f64>,
}

impl Outgoing {
    /// The `api` label of its metrics.
    fn api(&self) -> &'static str {
        upstream_api::label(matches!(self, Outgoing::Responses(_)))
    }

    fn path(&self) -> &'static str {
        match self {
            Outgoing::Chat(_) => "/chat/completions",
            Outgoing::Responses(_) => "/responses",
        }
    }

    fn asked(&self) -> Asked<'_> {
        match self {
            Outgoing::Chat(r) => Asked {
                model: r.model.as_deref().unwrap_or_default(),
                stream: r.is_stream(),
                max_tokens: r.token_limit(),
                temperature: r.temperature,
            },
            Outgoing::Responses(r) => Asked {
                model: r.model.as_deref().unwrap_or_default(),
                stream: r.stream == Some(true),
                max_tokens: r.max_output_tokens,
                temperature: r.temperature,
            },
        }
    }

    fn body(&self) -> Bytes {
        let body = match self {
            Outgoing::Chat(r) => serde_json::to_vec(r),
            Outgoing::Responses(r) => serde_json::to_vec(r),
        };
        Bytes::from(body.expect("requests serialise"))
    }

    /// What the model is given, for `gen_ai.input.messages`.
    fn input(&self) -> String {
        match self {
            Outgoing::Chat(r) => serde_json::to_string(&r.messages),
            Outgoing::Responses(r) => serde_json::to_string(&(&r.instructions, &r.input)),
        }
        .unwrap_or_default()
    }
}

#[async_trait]
impl ChatModel for UpstreamModel {
    fn name(&self) -> &str {
        &self.name
    }

    async fn complete(&self, prompt: Prompt<'_>) -> Result<ModelReply, LlmError> {
        let completion = self.completion(prompt).await?;
        let choice = completion.choices.into_iter().next();
        let usage = completion.usage.unwrap_or_default();
        Ok(ModelReply {
            text: choice
                .as_ref()
                .map(|c| prompt::reply_text(&c.message))
                .unwrap_or_default(),
            tool_calls: choice
                .as_ref()
                .and_then(|c| c.message.tool_calls.clone())
                .unwrap_or_default(),
            finish_reason: choice
                .and_then(|c| c.finish_reason)
                .unwrap_or(FinishReason::Stop),
            usage,
        })
    }

    fn pass_through(&self) -> Option<&dyn PassThrough> {
        Some(self)
    }
}

#[async_trait]
impl PassThrough for UpstreamModel {
    async fn completion(&self, prompt: Prompt<'_>) -> Result<ChatCompletion, LlmError> {
        let outgoing = self.outgoing(&prompt, false).await?;
        self.whole(outgoing).await
    }

    async fn stream(&self, prompt: Prompt<'_>) -> Result<ChunkStream, LlmError> {
        match self.outgoing(&prompt, true).await? {
            chat @ Outgoing::Chat(_) => self.streamed(chat, ChunkDecoder).await,
            responses @ Outgoing::Responses(_) => {
                let decoder = responses::EventDecoder::default();
                self.streamed(responses, decoder).await
            }
        }
    }
}

struct Call {
    url: String,
    body: Bytes,
    headers: HashMap<String, String>,
    timeout: Duration,
}

fn cancelled() -> LlmError {
    LlmError::Upstream {
        reason: "the upstream call was cancelled (the server is shutting down)".into(),
    }
}

thread_local! {
    /// This worker's client: awc clients are `!Send` and pool connections per thread.
    static CLIENT: OnceCell<awc::Client> = const { OnceCell::new() };
}

fn client() -> awc::Client {
    CLIENT.with(|c| c.get_or_init(outbound::build_client).clone())
}

/// Runs `task` as a local task on this actix worker; the returned future (which is `Send`) waits
/// for its result.
fn on_this_worker<T: Send + 'static>(
    task: impl Future<Output = Result<T, LlmError>> + 'static,
) -> impl Future<Output = Result<T, LlmError>> + Send {
    let rx = spawn_local(task);
    async move { rx.await.unwrap_or_else(|_| Err(cancelled())) }
}

fn spawn_local<T: 'static>(task: impl Future<Output = T> + 'static) -> oneshot::Receiver<T> {
    let (tx, rx) = oneshot::channel();
    task::local_in_request(async move {
        let _ = tx.send(task.await);
    });
    rx
}

async fn send(
    call: &Call,
    deadline: Instant,
) -> Result<
    awc::ClientResponse<impl Stream<Item = Result<Bytes, awc::error::PayloadError>> + Unpin>,
    LlmError,
> {
    let mut request = client()
        .post(&call.url)
        .insert_header(("content-type", "application/json"))
        // No compression: chunks must not wait in a decompressor's buffer.
        .insert_header(("accept-encoding", "identity"));
    for (name, value) in &call.headers {
        request = request.insert_header((name.as_str(), value.as_str()));
    }
    let sent = tokio::time::timeout_at(deadline.into(), request.send_body(call.body.clone())).await;
    match sent {
        Err(_) => Err(LlmError::Timeout {
            after: call.timeout,
        }),
        Ok(Ok(response)) => Ok(response),
        Ok(Err(e)) => Err(send_error(&call.url, call.timeout, e)),
    }
}

fn send_error(url: &str, timeout: Duration, e: awc::error::SendRequestError) -> LlmError {
    use awc::error::SendRequestError as E;
    match e {
        E::Timeout => LlmError::Timeout { after: timeout },
        E::Connect(e) => LlmError::Unreachable {
            url: url.to_owned(),
            reason: e.to_string(),
        },
        E::Send(e) => LlmError::Unreachable {
            url: url.to_owned(),
            reason: e.to_string(),
        },
        other => LlmError::Upstream {
            reason: other.to_string(),
        },
    }
}

/// The error for a non-2xx upstream answer, quoting the upstream's own message.
async fn status_error<S>(response: &mut awc::ClientResponse<S>, deadline: Instant) -> LlmError
where
    S: Stream<Item = Result<Bytes, awc::error::PayloadError>> + Unpin,
{
    let status = response.status();
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = tokio::time::timeout_at(deadline.into(), response.body().limit(64 * 1024))
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let message = outbound::error_message(&body);
    if context_length_exceeded(status.as_u16(), &body, &message) {
        LlmError::ContextLengthExceeded { message }
    } else if status.as_u16() == 429 {
        LlmError::RateLimited {
            message,
            retry_after,
        }
    } else {
        LlmError::Status {
            status: status.as_u16(),
            message,
        }
    }
}

/// Whether an upstream error says the prompt was longer than the model's context window: OpenAI's
/// code `context_length_exceeded` (which llama-cpp-python's server also sends), llama.cpp's
/// `exceed_context_size_error`, or the wording of servers that send neither (vLLM: "maximum
/// context length is ..."; llama.cpp: "exceeds the available context size").
fn context_length_exceeded(status: u16, body: &[u8], message: &str) -> bool {
    if !(400..500).contains(&status) || status == 429 {
        return false;
    }
    let coded = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .is_some_and(|value| {
            ["/error/code", "/error/type", "/code", "/type"]
                .iter()
                .filter_map(|p| value.pointer(p).and_then(|v| v.as_str()))
                .any(|code| {
                    matches!(
                        code,
                        "context_length_exceeded" | "exceed_context_size_error"
                    )
                })
        });
    let message = message.to_lowercase();
    coded
        || [
            "maximum context length",
            "context length exceeded",
            "exceed context window",
            "exceeds the available context size",
            "context window of",
            "prompt is too long",
        ]
        .iter()
        .any(|phrase| message.contains(phrase))
}

async fn run_completion(
    call: Call,
    parse: fn(&[u8]) -> Result<ChatCompletion, LlmError>,
) -> Result<ChatCompletion, LlmError> {
    let deadline = Instant::now() + call.timeout;
    let mut response = send(&call, deadline).await?;
    Span::current().record("http.response.status_code", response.status().as_u16());
    if !response.status().is_success() {
        return Err(status_error(&mut response, deadline).await);
    }
    let body = match tokio::time::timeout_at(deadline.into(), response.body().limit(MAX_BODY_BYTES))
        .await
    {
        Err(_) => {
            return Err(LlmError::Timeout {
                after: call.timeout,
            });
        }
        Ok(Err(e)) => {
            return Err(LlmError::BadResponse {
                reason: format!("cannot read the body: {e}"),
            });
        }
        Ok(Ok(body)) => body,
    };
    parse(&body)
}

/// A whole Chat Completions answer.
fn chat_completion(body: &[u8]) -> Result<ChatCompletion, LlmError> {
    let completion: ChatCompletion =
        serde_json::from_slice(body).map_err(|e| LlmError::BadResponse {
            reason: format!(
                "{e}; the body starts with {:?}",
                outbound::clip(&String::from_utf8_lossy(&body[..body.len().min(200)]))
            ),
        })?;
    if completion.choices.is_empty() {
        return Err(LlmError::BadResponse {
            reason: "the completion has no choices".into(),
        });
    }
    Ok(completion)
}

/// The status the upstream answers a probe with. Its body is read (bounded), so that the
/// connection goes back to the pool.
async fn run_probe(call: Call) -> Result<u16, LlmError> {
    let deadline = Instant::now() + call.timeout;
    let mut response = send(&call, deadline).await?;
    let status = response.status().as_u16();
    let _ = tokio::time::timeout_at(deadline.into(), response.body().limit(64 * 1024)).await;
    Ok(status)
}

/// How the events of a streamed answer are read: Chat Completions chunks as they are
/// ([`ChunkDecoder`]), or Responses events turned into chunks
/// ([`responses::EventDecoder`]).
pub trait StreamDecoder: 'static {
    /// Reads one event's `data`, pushing the chunks it means onto `out`.
    fn decode(&mut self, data: String, out: &mut Vec<StreamedChunk>) -> Result<Progress, LlmError>;

    /// Why a body that ended before the last event is not a whole answer.
    fn unfinished(&self) -> &'static str;
}

/// Whether a stream goes on after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    More,
    /// That was the last event: what follows is drained, not read.
    Last,
}

/// Chat Completions chunks, passed on as the upstream sent them.
pub struct ChunkDecoder;

impl StreamDecoder for ChunkDecoder {
    fn decode(&mut self, data: String, out: &mut Vec<StreamedChunk>) -> Result<Progress, LlmError> {
        if data == "[DONE]" {
            return Ok(Progress::Last);
        }
        if !data.is_empty() {
            let chunk = parse_chunk(&data)?;
            out.push(StreamedChunk { chunk, data });
        }
        Ok(Progress::More)
    }

    fn unfinished(&self) -> &'static str {
        "the event stream ended before its last chunk (no finish_reason, no [DONE])"
    }
}

/// How a stream's local task reads it.
struct Read<D> {
    /// The `api` label of its metrics.
    api: &'static str,
    decoder: D,
    trace_content: bool,
    metrics: Arc<Metrics>,
}

fn spawn_stream<D: StreamDecoder>(
    call: Call,
    ready: oneshot::Sender<Result<ChunkStream, LlmError>>,
    span: Span,
    read: Read<D>,
) {
    task::local_in_request(run_stream(call, ready, span.clone(), read).instrument(span));
}

/// The local task of a streamed call: sends the request, reports the outcome of the response
/// head on `ready`, then forwards every chunk until the decoder's last event (or the end of the
/// body), an error, or the receiver going away.
async fn run_stream<D: StreamDecoder>(
    call: Call,
    ready: oneshot::Sender<Result<ChunkStream, LlmError>>,
    span: Span,
    read: Read<D>,
) {
    let Read {
        api,
        mut decoder,
        trace_content,
        metrics,
    } = read;
    let started = Instant::now();
    let deadline = started + call.timeout;
    let mut response = match send(&call, deadline).await {
        Ok(r) => r,
        Err(e) => {
            observe(&span, &metrics, api, "stream", started, Some(&e));
            let _ = ready.send(Err(e));
            return;
        }
    };
    span.record("http.response.status_code", response.status().as_u16());
    if !response.status().is_success() {
        let e = status_error(&mut response, deadline).await;
        observe(&span, &metrics, api, "stream", started, Some(&e));
        let _ = ready.send(Err(e));
        return;
    }
    let (tx, rx) = mpsc::channel(64);
    if ready.send(Ok(rx)).is_err() {
        return;
    }
    let mut events = response.eventsource();
    let mut seen = Seen::default();
    let mut failure = None;
    // The chunks of one event; reused, as this runs for every token of every streamed turn.
    let mut chunks = Vec::new();
    loop {
        let progress = match tokio::time::timeout(call.timeout, events.next()).await {
            Err(_) => Err(LlmError::Timeout {
                after: call.timeout,
            }),
            // A body that ends without its last event is complete only if a finish reason came:
            // else the upstream broke off, and the truncated reply must not be stored as a whole.
            Ok(None) if !seen.finish.is_empty() => break,
            Ok(None) => Err(LlmError::BadResponse {
                reason: decoder.unfinished().to_owned(),
            }),
            Ok(Some(Err(e))) => Err(LlmError::BadResponse {
                reason: format!("the event stream broke off: {e}"),
            }),
            Ok(Some(Ok(event))) => decoder.decode(trimmed(event.data), &mut chunks),
        };
        let mut gone = false;
        for streamed in chunks.drain(..) {
            seen.observe(&streamed.chunk, trace_content);
            if tx.send(Ok(streamed)).await.is_err() {
                gone = true;
                break;
            }
        }
        match progress {
            _ if gone => break,
            Ok(Progress::More) => {}
            Ok(Progress::Last) => {
                drain(&mut events).await;
                break;
            }
            Err(e) => {
                failure = Some(e.clone());
                // The client went away, or the stream failed: stop reading; dropping the
                // response closes the upstream connection.
                let _ = tx.send(Err(e)).await;
                break;
            }
        }
    }
    observe(&span, &metrics, api, "stream", started, failure.as_ref());
    record_response(
        &span,
        &seen.id,
        &seen.model,
        seen.usage.as_ref(),
        seen.finish.iter(),
    );
    if trace_content {
        let output = serde_json::json!([{"role": "assistant", "content": seen.content}]);
        span.record("gen_ai.output.messages", output.to_string());
    }
}

/// `text` without surrounding whitespace, reusing its buffer when there is none (the usual case).
fn trimmed(text: String) -> String {
    let trimmed = text.trim();
    if trimmed.len() == text.len() {
        text
    } else {
        trimmed.to_owned()
    }
}

/// Reads what follows `[DONE]` (normally only the end of the chunked body) so that awc returns
/// the connection to its pool. Dropping a response that was not read to its end closes the
/// connection instead, and every streamed turn then paid for a new one: a TCP handshake plus, in
/// the measurements of docs/benchmarks.md, about 40 ms before the first token. Bounded, so an
/// upstream that keeps the body open after `[DONE]` costs at most this long.
async fn drain<S: Stream + Unpin>(events: &mut S) {
    const DRAIN_LIMIT: Duration = Duration::from_millis(200);
    let _ = tokio::time::timeout(DRAIN_LIMIT, async {
        while events.next().await.is_some() {}
    })
    .await;
}

/// One streamed event as a chunk, in one pass: this runs for every token of every streamed turn,
/// so the JSON is read once, straight into the chunk type, and only an event that is not a
/// chunk is looked at again (an error object, or garbage).
fn parse_chunk(data: &str) -> Result<ChatCompletionChunk, LlmError> {
    let not_a_chunk = match serde_json::from_str::<ChatCompletionChunk>(data) {
        // A provider may put an error into an otherwise well-formed chunk.
        Ok(chunk) if !chunk.extra.contains_key("error") => return Ok(chunk),
        Ok(_) => None,
        Err(e) => Some(e),
    };
    let value: serde_json::Value =
        serde_json::from_str(data).map_err(|e| LlmError::BadResponse {
            reason: format!("an event is not JSON ({e}): {}", outbound::clip(data)),
        })?;
    match not_a_chunk {
        Some(e) if value.get("error").is_none() => Err(LlmError::BadResponse {
            reason: format!(
                "an event is not a chat.completion.chunk ({e}): {}",
                outbound::clip(data)
            ),
        }),
        _ => Err(LlmError::Upstream {
            reason: outbound::error_message(data.as_bytes()),
        }),
    }
}

/// What a stream said, for its span.
#[derive(Default)]
struct Seen {
    id: String,
    model: String,
    usage: Option<Usage>,
    finish: Vec<FinishReason>,
    content: String,
}

impl Seen {
    fn observe(&mut self, chunk: &ChatCompletionChunk, keep_content: bool) {
        if self.id.is_empty() {
            self.id.clone_from(&chunk.id);
            self.model.clone_from(&chunk.model);
        }
        if let Some(usage) = &chunk.usage {
            self.usage = Some(usage.clone());
        }
        for choice in &chunk.choices {
            if let Some(reason) = &choice.finish_reason {
                self.finish.push(reason.clone());
            }
            if keep_content && let Some(text) = &choice.delta.content {
                self.content.push_str(text);
            }
        }
    }
}

fn record_response<'a>(
    span: &Span,
    id: &str,
    model: &str,
    usage: Option<&Usage>,
    finish: impl Iterator<Item = &'a FinishReason>,
) {
    span.record("gen_ai.response.id", id);
    span.record("gen_ai.response.model", model);
    if let Some(u) = usage {
        span.record("gen_ai.usage.input_tokens", u.prompt_tokens);
        span.record("gen_ai.usage.output_tokens", u.completion_tokens);
        span.record("llm.token_count.prompt", u.prompt_tokens);
        span.record("llm.token_count.completion", u.completion_tokens);
    }
    let reasons: Vec<String> = finish
        .map(|r| {
            serde_json::to_value(r)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        })
        .collect();
    if !reasons.is_empty() {
        span.record("gen_ai.response.finish_reasons", format!("{reasons:?}"));
    }
}

/// Records the call's latency and outcome (metrics and span status).
fn observe(
    span: &Span,
    metrics: &Metrics,
    api: &'static str,
    mode: &'static str,
    started: Instant,
    error: Option<&LlmError>,
) {
    let outcome = error.map_or("ok", LlmError::kind);
    metrics
        .upstream_duration
        .with_label_values(&[api, mode, outcome])
        .observe(started.elapsed().as_secs_f64());
    if let Some(e) = error {
        span.record("otel.status_code", "error");
        span.record("error.type", outcome);
        tracing::warn!(parent: span, error = %e, "upstream call failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_window_refusals_are_recognised_across_servers() {
        let cases: [(u16, &str, bool); 7] = [
            // OpenAI, and llama-cpp-python's server, which formats it the same way.
            (
                400,
                r#"{"error":{"message":"Requested tokens (4100) exceed context window of 2048","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
                true,
            ),
            // llama.cpp's own server.
            (
                400,
                r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#,
                true,
            ),
            // vLLM: the wording only.
            (
                400,
                r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","code":400}"#,
                true,
            ),
            (413, "prompt is too long", true),
            (
                400,
                r#"{"error":{"message":"messages must not be empty","code":"invalid_value"}}"#,
                false,
            ),
            // A rate limit or a server error is never a context refusal, whatever it says.
            (
                429,
                r#"{"error":{"message":"maximum context length reached for this minute"}}"#,
                false,
            ),
            (
                500,
                r#"{"error":{"code":"context_length_exceeded"}}"#,
                false,
            ),
        ];
        for (status, body, expected) in cases {
            let message = outbound::error_message(body.as_bytes());
            assert_eq!(
                context_length_exceeded(status, body.as_bytes(), &message),
                expected,
                "{status} {body}"
            );
        }
    }

    #[test]
    fn chunks_with_an_error_are_errors_and_garbage_is_a_bad_response() {
        assert!(
            matches!(parse_chunk(r#"{"error":{"message":"overloaded"}}"#), Err(LlmError::Upstream { reason }) if reason == "overloaded")
        );
        assert!(matches!(
            parse_chunk("<html>"),
            Err(LlmError::BadResponse { reason }) if reason.starts_with("an event is not JSON")
        ));
        assert!(matches!(
            parse_chunk(r#"{"id":"c1"}"#),
            Err(LlmError::BadResponse { reason }) if reason.starts_with("an event is not a chat.completion.chunk")
        ));
        // An error inside an otherwise well-formed chunk is still an error.
        assert!(matches!(
            parse_chunk(r#"{"id":"c1","created":1,"model":"m","choices":[],"error":{"message":"quota"}}"#),
            Err(LlmError::Upstream { reason }) if reason == "quota"
        ));
        let chunk = parse_chunk(r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}"#).unwrap();
        assert_eq!(chunk.choices[0].delta.content.as_deref(), Some("hi"));
    }

    #[test]
    fn http_and_https_base_urls_are_accepted() {
        let config = |url: &str| UpstreamConfig {
            base_url: url.into(),
            api_key: None,
            model: None,
            timeout: Duration::from_secs(1),
            system_prompt: String::new(),
            trace_content: false,
            api: LlmApi::Auto,
        };
        let new = |url: &str| UpstreamModel::new(config(url), Arc::default());
        let model = new("http://127.0.0.1:4000/v1/").unwrap();
        assert_eq!(model.url, "http://127.0.0.1:4000/v1/chat/completions");
        assert_eq!(model.responses_url, "http://127.0.0.1:4000/v1/responses");
        assert_eq!((model.host.as_str(), model.port), ("127.0.0.1", 4000));
        let tls = new("https://api.openai.com/v1").unwrap();
        assert_eq!((tls.host.as_str(), tls.port), ("api.openai.com", 443));
        assert!(new("not a url").is_err());
        assert!(new("ftp://x/v1").is_err());
    }
}
