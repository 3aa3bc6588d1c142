//! Observing every request: its span (continuing the caller's trace) and its metrics, and
//! `GET /metrics` in Prometheus' text format.
//!
//! Hand-written middleware rather than `tracing-actix-web`: that crate pins its own OpenTelemetry
//! versions per feature flag, and what is needed here is a dozen lines: extract the W3C context,
//! open the span, count and time the request.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use std::sync::Arc;

use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::HeaderMap;
use actix_web::middleware::Next;
use actix_web::{HttpResponse, web};
use bytes::Bytes;
use opentelemetry::propagation::Extractor;
use prometheus::IntGauge;
use protocol::SessionId;
use protocol::headers::SESSION_ID;
use tracing::Instrument as _;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::AppState;
use crate::telemetry::Metrics;
use crate::telemetry::sampling::{self, RequestTrace};

/// Route label for requests that matched no route (keeps label cardinality bounded).
const UNMATCHED: &str = "unmatched";

/// Wraps every request: its trace decided ([`RequestTrace::decide`]), a `request` span (child of
/// the caller's `traceparent` when sent) that the handler runs in, and request count, latency and
/// in-flight metrics by route pattern and status, in the server's `metrics`.
pub(crate) async fn observe(
    metrics: Arc<Metrics>,
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let parent =
        opentelemetry::global::get_text_map_propagator(|p| p.extract(&Headers(req.headers())));
    // Decided before the request's span is made: one not sampled builds no OpenTelemetry span.
    let trace = RequestTrace::decide(parent.clone());
    sampling::within(trace, observed(metrics, req, next, parent)).await
}

/// [`observe`], inside the request's trace.
async fn observed(
    m: Arc<Metrics>,
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
    parent: opentelemetry::Context,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let route = req.match_pattern().unwrap_or_else(|| UNMATCHED.to_owned());
    let method = req.method().as_str().to_owned();
    let span = tracing::info_span!(
        "request",
        otel.name = %format!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = Empty,
        http.request.method = %method,
        http.route = %route,
        url.path = %req.path(),
        http.response.status_code = Empty,
        session.id = Empty,
        openinference.span.kind = "CHAIN",
    );
    let _ = span.set_parent(parent);
    if let Some(session) = req
        .headers()
        .get(SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| SessionId::parse(v).ok())
    {
        span.record("session.id", session.as_str());
    }

    m.http_in_flight.inc();
    let in_flight = InFlight(m.http_in_flight.clone());
    let started = Instant::now();
    let result = next.call(req).instrument(span.clone()).await;
    let status = match &result {
        Ok(response) => response.status(),
        Err(e) => e.as_response_error().status_code(),
    };
    let status_label = status.as_u16().to_string();
    let labels = [route.as_str(), method.as_str(), status_label.as_str()];
    m.http_requests.with_label_values(&labels).inc();
    m.http_duration
        .with_label_values(&labels)
        .observe(started.elapsed().as_secs_f64());
    span.record("http.response.status_code", status.as_u16());
    if status.is_server_error() {
        span.record("otel.status_code", "error");
    }
    // A streamed body outlives the handler: the request stays in flight until it is sent.
    result.map(|response| {
        response.map_body(|_, body| Tracked {
            body: body.boxed(),
            _in_flight: in_flight,
        })
    })
}

/// A response body that holds the in-flight guard until the body is done.
struct Tracked {
    body: BoxBody,
    _in_flight: InFlight,
}

impl MessageBody for Tracked {
    type Error = Box<dyn std::error::Error>;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        Pin::new(&mut self.body).poll_next(cx)
    }
}

/// Decrements the in-flight gauge when the request is done (its body sent or dropped), however it
/// ends.
struct InFlight(IntGauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

struct Headers<'a>(&'a HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

#[utoipa::path(
    get,
    path = "/metrics",
    tag = "ops",
    responses((status = 200, description = "Prometheus text exposition format (version 0.0.4): agentwall_http_requests_total, agentwall_http_request_duration_seconds, agentwall_http_requests_in_flight, agentwall_memory_operation_duration_seconds, agentwall_memory_dependency_duration_seconds, agentwall_memory_batch_duration_seconds, agentwall_memory_batch_size, agentwall_upstream_request_duration_seconds, agentwall_embedding_requests_total, agentwall_embedding_texts_total, agentwall_embedding_failures_total, agentwall_embedding_request_duration_seconds, agentwall_embedding_batch_size, agentwall_embedding_pending_items", content_type = "text/plain", body = String))
)]
pub(crate) async fn metrics_text(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(prometheus::TEXT_FORMAT)
        .body(state.metrics.render())
}
