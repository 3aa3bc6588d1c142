//! The endpoint provider: any OpenAI-compatible `POST <base>/embeddings`, texts sent as one
//! `input` array per batch.
//!
//! The HTTP client is awc, as for the upstream chat model (the same connector, TLS roots and
//! error-body reading, from `crate::llm::upstream`), but on a thread of its own running its own
//! actix system, not on the HTTP workers: awc is `!Send` and needs an actix runtime, and the
//! memory layer calls [`Embedder::embed`] from background tasks as well as from turns. Callers
//! reach the thread through the batching queue ([`super::batch`]); the thread keeps one
//! connection pool and runs its requests concurrently, each under `--embeddings-timeout`.
//!
//! Errors keep their meaning as the chat upstream's do (a timeout, an unreachable endpoint, 429
//! with its `Retry-After`, another status with the endpoint's own message), and an answer that
//! is not one usable vector per text is [`EmbedError::Garbage`] with the reason
//! ([`super::vectors`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use async_trait::async_trait;
use awc::http::header::RETRY_AFTER;
use bytes::Bytes;
use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use serde::{Deserialize, Serialize};

use super::batch::{Batch, Gatherer, Queue};
use super::health::Health;
use super::vectors::Dimension;
use super::{EmbedError, Embedder};
use crate::outbound::{build_client, clip, error_message};
use crate::telemetry::Metrics;

const PROVIDER: &str = "endpoint";
/// Largest answer read: 4096 texts of 3072 dimensions in JSON floats fit.
const MAX_BODY_BYTES: usize = 256 * 1024 * 1024;

#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// Base URL of the OpenAI-compatible API, up to and including its version (`.../v1`).
    pub base_url: String,
    /// Sent as `Authorization: Bearer <key>`.
    pub api_key: Option<String>,
    /// Model id asked of the endpoint.
    pub model: String,
    /// Longest wait for a request's whole answer.
    pub timeout: Duration,
    /// Most texts per request.
    pub batch_size: usize,
}

pub struct Endpoint {
    queue: Queue,
    model: String,
    dimension: Arc<Dimension>,
    host: String,
    port: u16,
}

/// What the endpoint's thread needs for every request.
struct Target {
    /// `<base_url>/embeddings`.
    url: String,
    api_key: Option<String>,
    model: String,
    timeout: Duration,
    dimension: Arc<Dimension>,
    health: Arc<Health>,
}

impl Endpoint {
    /// Checks the URL and starts the endpoint's thread. The endpoint is not called: it may come
    /// up after this server, and until it answers, recall is lexical.
    pub fn start(
        config: EndpointConfig,
        metrics: Arc<Metrics>,
    ) -> anyhow::Result<(Self, Arc<Health>)> {
        let url = format!("{}/embeddings", config.base_url.trim_end_matches('/'));
        let uri: awc::http::Uri = url.parse().map_err(|e| {
            anyhow::anyhow!(
                "--embeddings-base-url {:?} is not a URL: {e}",
                config.base_url
            )
        })?;
        let scheme = uri.scheme_str().unwrap_or_default();
        anyhow::ensure!(
            scheme == "http" || scheme == "https",
            "--embeddings-base-url {:?}: use an http:// or https:// URL",
            config.base_url
        );
        let host = uri.host().unwrap_or_default().to_owned();
        let port = uri
            .port_u16()
            .unwrap_or(if scheme == "https" { 443 } else { 80 });
        let (queue, gatherer) = Queue::new(config.batch_size);
        let health = Arc::new(Health::new(PROVIDER, metrics));
        let dimension = Arc::new(Dimension::default());
        let target = Target {
            url,
            api_key: config.api_key,
            model: config.model.clone(),
            timeout: config.timeout,
            dimension: Arc::clone(&dimension),
            health: Arc::clone(&health),
        };
        std::thread::Builder::new()
            .name("embeddings-http".into())
            .spawn(move || actix_rt::System::new().block_on(serve(gatherer, target)))
            .context("cannot start the embeddings endpoint's thread")?;
        tracing::info!(url = %config.base_url, model = %config.model, "embedding with an endpoint");
        Ok((
            Self {
                queue,
                model: config.model,
                dimension,
                host,
                port,
            },
            health,
        ))
    }
}

#[async_trait]
impl Embedder for Endpoint {
    fn model(&self) -> &str {
        &self.model
    }

    fn dimension(&self) -> Option<usize> {
        self.dimension.get()
    }

    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        let span = super::span(
            PROVIDER,
            &self.model,
            texts.len(),
            Some((&self.host, self.port)),
        );
        self.queue.embed(texts, span, true).await
    }
}

/// The thread's loop: sends each batch as it is gathered, with the requests in flight running
/// meanwhile, until every caller's queue is dropped and the last request has finished.
async fn serve(mut gatherer: Gatherer, target: Target) {
    let client = build_client();
    let mut in_flight = FuturesUnordered::new();
    loop {
        tokio::select! {
            batch = gatherer.next() => match batch {
                Some(batch) => in_flight.push(run(&client, &target, batch)),
                None => break,
            },
            Some(()) = in_flight.next(), if !in_flight.is_empty() => {}
        }
    }
    while in_flight.next().await.is_some() {}
}

async fn run(client: &awc::Client, target: &Target, batch: Batch) {
    let started = Instant::now();
    let result = request(client, target, &batch).await;
    target
        .health
        .observe(batch.len(), started.elapsed(), result.as_ref().err());
    if let Err(e) = &result {
        tracing::debug!(parent: batch.span(), error = %e, texts = batch.len(), "embeddings request failed");
    }
    batch.answer(result);
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    input: Vec<&'a str>,
    encoding_format: &'static str,
}

/// One request for the batch's texts: its vectors, checked and normalised.
async fn request(
    client: &awc::Client,
    target: &Target,
    batch: &Batch,
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let deadline = Instant::now() + target.timeout;
    let timeout = || EmbedError::Timeout {
        after: target.timeout,
    };
    let body = serde_json::to_vec(&Request {
        model: &target.model,
        input: batch.texts(),
        encoding_format: "float",
    })
    .expect("requests serialise");
    let mut request = client
        .post(&target.url)
        .insert_header(("content-type", "application/json"));
    for (name, value) in batch.headers() {
        request = request.insert_header((name.as_str(), value.as_str()));
    }
    if let Some(key) = &target.api_key {
        request = request.insert_header(("authorization", format!("Bearer {key}")));
    }
    let sent = tokio::time::timeout_at(deadline.into(), request.send_body(body)).await;
    let mut response = match sent {
        Err(_) => return Err(timeout()),
        Ok(Err(e)) => return Err(send_error(&target.url, target.timeout, e)),
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    batch.record("http.response.status_code", status.as_u16().into());
    let read =
        tokio::time::timeout_at(deadline.into(), response.body().limit(MAX_BODY_BYTES)).await;
    let body = match read {
        Err(_) => return Err(timeout()),
        Ok(Ok(body)) => body,
        // An error status says enough without its body.
        Ok(Err(_)) if !status.is_success() => Bytes::new(),
        Ok(Err(e)) => {
            return Err(EmbedError::Garbage {
                reason: format!("cannot read the body: {e}"),
            });
        }
    };
    if !status.is_success() {
        let message = error_message(&body);
        return Err(if status.as_u16() == 429 {
            EmbedError::RateLimited {
                message,
                retry_after: response
                    .headers()
                    .get(RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned),
            }
        } else {
            EmbedError::Status {
                status: status.as_u16(),
                message,
            }
        });
    }
    vectors(&body, batch.len(), &target.dimension)
}

fn send_error(url: &str, timeout: Duration, e: awc::error::SendRequestError) -> EmbedError {
    use awc::error::SendRequestError as E;
    match e {
        E::Timeout => EmbedError::Timeout { after: timeout },
        E::Response(e) => EmbedError::Garbage {
            reason: format!("the answer is not HTTP: {e}"),
        },
        other => EmbedError::Unreachable {
            url: url.to_owned(),
            reason: other.to_string(),
        },
    }
}

/// OpenAI's answer: `{"object": "list", "data": [{"index": 0, "embedding": [...]}, ...]}`.
#[derive(Deserialize)]
struct Answer {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    /// The input's position; OpenAI sends it, some servers do not (then the order is the input's).
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

/// The vectors of an answer to `expected` inputs, in input order, checked and normalised.
fn vectors(
    body: &[u8],
    expected: usize,
    dimension: &Dimension,
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let answer: Answer = serde_json::from_slice(body).map_err(|e| EmbedError::Garbage {
        reason: format!(
            "not an OpenAI embeddings list ({e}); the body starts with {:?}",
            clip(&String::from_utf8_lossy(&body[..body.len().min(200)]))
        ),
    })?;
    let mut vectors: Vec<Vec<f32>> = if answer.data.len() == expected {
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
        for (position, item) in answer.data.into_iter().enumerate() {
            let index = item.index.unwrap_or(position);
            match slots.get_mut(index) {
                Some(slot @ None) => *slot = Some(item.embedding),
                _ => {
                    return Err(EmbedError::Garbage {
                        reason: format!("index {index} is repeated or out of range"),
                    });
                }
            }
        }
        slots.into_iter().flatten().collect()
    } else {
        answer.data.into_iter().map(|item| item.embedding).collect()
    };
    dimension.check(&mut vectors, expected)?;
    Ok(vectors)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn garbage(body: &str, expected: usize) -> String {
        match vectors(body.as_bytes(), expected, &Dimension::default()) {
            Err(EmbedError::Garbage { reason }) => reason,
            other => panic!("expected garbage for {body}, got {other:?}"),
        }
    }

    #[test]
    fn vectors_are_put_in_input_order_by_index() {
        let body = r#"{"object":"list","data":[
            {"object":"embedding","index":1,"embedding":[0,2]},
            {"object":"embedding","index":0,"embedding":[3,0]}],"model":"m"}"#;
        let got = vectors(body.as_bytes(), 2, &Dimension::default()).unwrap();
        assert_eq!(got, [vec![1.0, 0.0], vec![0.0, 1.0]]);
        // Without indices, the order is the input's.
        let body = r#"{"data":[{"embedding":[0,2]},{"embedding":[3,0]}]}"#;
        let got = vectors(body.as_bytes(), 2, &Dimension::default()).unwrap();
        assert_eq!(got, [vec![0.0, 1.0], vec![1.0, 0.0]]);
    }

    #[test]
    fn answers_that_are_not_vectors_are_garbage_with_the_reason() {
        assert!(garbage("<html>busy</html>", 1).starts_with("not an OpenAI embeddings list"));
        assert!(garbage(r#"{"data":[{"embedding":"AAAA"}]}"#, 1).contains("invalid type"));
        // Python's json module writes NaN, which is not JSON.
        assert!(garbage(r#"{"data":[{"embedding":[NaN, 1]}]}"#, 1).starts_with("not an OpenAI"));
        assert!(garbage(r#"{"data":[{"embedding":[1e39, 1]}]}"#, 1).contains("holds inf"));
        assert_eq!(
            garbage(
                r#"{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}"#,
                2
            ),
            "index 0 is repeated or out of range"
        );
        assert_eq!(
            garbage(r#"{"data":[{"index":0,"embedding":[1]}]}"#, 2),
            "1 embeddings for 2 inputs"
        );
    }

    #[test]
    fn only_http_urls_are_accepted() {
        let config = |url: &str| EndpointConfig {
            base_url: url.into(),
            api_key: None,
            model: "m".into(),
            timeout: Duration::from_secs(1),
            batch_size: 8,
        };
        let start = |url: &str| Endpoint::start(config(url), Arc::default());
        assert!(start("not a url").is_err());
        assert!(start("ftp://x/v1").is_err());
        let (endpoint, _) = start("https://api.openai.com/v1/").unwrap();
        assert_eq!(
            (endpoint.host.as_str(), endpoint.port),
            ("api.openai.com", 443)
        );
    }
}
