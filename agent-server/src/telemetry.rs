//! Telemetry, in one place: logs, traces and metrics.
//!
//! - **Logs**: `tracing` events on stderr, filtered by `RUST_LOG` (default `info`), text or JSON.
//! - **Traces**: every `tracing` span of this crate also becomes an OpenTelemetry span. Incoming
//!   W3C `traceparent`/`tracestate` headers are continued (see `http::metrics`), and the upstream
//!   model call carries the context on. Spans are exported only when `OTEL_EXPORTER_OTLP_ENDPOINT`
//!   (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set: OTLP over HTTP with protobuf payloads, by a
//!   batch processor on its own thread, so requests never wait for the collector. The standard
//!   `OTEL_*` variables apply (`OTEL_SERVICE_NAME`, default `agent-server`;
//!   `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_BSP_*`, `OTEL_SDK_DISABLED`,
//!   `OTEL_TRACES_EXPORTER=none`, and `OTEL_TRACES_SAMPLER` with `OTEL_TRACES_SAMPLER_ARG`,
//!   applied once per request before any span is built, see [`sampling`]). Without an
//!   endpoint no OpenTelemetry span is made at all:
//!   nobody would receive one, and building them was about 7 % of a turn's CPU
//!   (docs/benchmarks.md). Trace context still flows from the caller to the upstream model
//!   ([`propagation`]).
//! - **Metrics**: Prometheus collectors in [`Metrics`], one set per server (made by
//!   `startup::Application` and handed to what records into it), served by `GET /metrics`.

mod log_fields;
pub mod propagation;
pub mod sampling;
#[cfg(test)]
pub(crate) mod testing;

use std::io::IsTerminal;
use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Config as TraceConfig, Sampler, SdkTracerProvider};
use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts, Registry};
use tracing_subscriber::filter::{EnvFilter, FilterExt as _, LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{Layer, Registry as Subscribers};

/// Service name when `OTEL_SERVICE_NAME` is not set.
pub const SERVICE_NAME: &str = "agent-server";

/// Keeps the tracer provider; [`Telemetry::shutdown`] flushes spans not yet exported.
#[must_use = "call shutdown() before exiting so that the last spans are exported"]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Whether spans are exported over OTLP.
    pub fn exporting(&self) -> bool {
        self.provider.is_some() && exporter_configured()
    }

    /// Exports buffered spans and stops the exporter. Blocks for at most the export timeout.
    pub fn shutdown(self) {
        if let Some(provider) = self.provider
            && let Err(e) = provider.shutdown()
        {
            // stderr, not tracing: the subscriber's exporter is what just failed.
            eprintln!("agent-server: could not flush spans at shutdown: {e}");
        }
    }
}

static INSTALLED: OnceLock<()> = OnceLock::new();

/// How log lines are written: for a person (`text`, coloured on a terminal) or for a log
/// collector (`json`, one object a line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Installs the global subscriber, propagator and tracer provider. Only the first call does
/// anything (tests call it once per test); later calls return a no-op guard.
pub fn init(format: LogFormat) -> Telemetry {
    let mut installed = None;
    INSTALLED.get_or_init(|| installed = Some(install(format)));
    Telemetry {
        provider: installed.flatten(),
    }
}

fn install(format: LogFormat) -> Option<SdkTracerProvider> {
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let (provider, export_error) = tracer_provider();
    let mut layers: Vec<Box<dyn Layer<Subscribers> + Send + Sync>> = Vec::new();
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    if exporter_configured() {
        let tracer = provider.tracer(SERVICE_NAME);
        // Which requests are traced is decided once per request, by the configured sampler,
        // before any span is built ([`sampling`]); the tracer records what reaches it.
        let sampled = sampling::install(TraceConfig::default().sampler, filter.max_level_hint());
        // Spans for tracing are chosen by target, independently of RUST_LOG, so that quieter
        // logs do not lose traces. The agent's step spans (recall, chat, store) are DEBUG, for
        // traces only (see `agent::Agent`).
        let targets = Targets::new()
            .with_target("agent_server", LevelFilter::INFO)
            .with_target("agent_server::agent", LevelFilter::DEBUG);
        // Each span carries what a reader of an agent's trace uses (names, GenAI and session
        // attributes, timing), not the layer's defaults for debugging Rust: source location
        // (3 attributes), thread (2), module path (1), and busy and idle time (2, with a clock
        // read on every poll of the span's future). Those were most of each span's attributes,
        // and encoding and sending them most of the export's cost (docs/benchmarks.md). Nor
        // does a span make its OpenTelemetry context the current one on every poll: nothing
        // here reads the current context (`propagation.rs` asks the span for its own).
        let otel = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_context_activation(false)
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_tracked_inactivity(false)
            .with_filter(targets.and(sampled))
            .boxed();
        layers.push(otel);
    }
    // Colours only on a terminal: logs piped to files or collectors stay plain text.
    let ansi = std::io::stderr().is_terminal();
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    let fmt = match format {
        LogFormat::Text if ansi => fmt.with_filter(filter).boxed(),
        LogFormat::Text => fmt
            .fmt_fields(log_fields::PlainFields)
            .with_filter(filter)
            .boxed(),
        LogFormat::Json => fmt.json().with_filter(filter).boxed(),
    };
    layers.push(fmt);
    if tracing_subscriber::registry()
        .with(layers)
        .try_init()
        .is_err()
    {
        // Someone else installed a subscriber (a test harness): keep theirs.
        return None;
    }
    opentelemetry::global::set_tracer_provider(provider.clone());
    if let Some(e) = export_error {
        tracing::error!(error = %e, "cannot export spans over OTLP; check OTEL_EXPORTER_OTLP_ENDPOINT");
    } else if exporter_configured() {
        tracing::info!("exporting spans over OTLP/HTTP (protobuf)");
    }
    Some(provider)
}

fn exporter_configured() -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"))
        || std::env::var("OTEL_TRACES_EXPORTER").is_ok_and(|v| v.eq_ignore_ascii_case("none"));
    !disabled && (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
}

fn tracer_provider() -> (SdkTracerProvider, Option<String>) {
    let mut resource = Resource::builder();
    if std::env::var("OTEL_SERVICE_NAME").is_err() {
        resource = resource.with_service_name(SERVICE_NAME);
    }
    // Spans reach the tracer only from sampled requests (see [`sampling`]).
    let builder = SdkTracerProvider::builder()
        .with_resource(resource.build())
        .with_sampler(Sampler::AlwaysOn);
    if !exporter_configured() {
        return (builder.build(), None);
    }
    // Endpoint, headers, timeout and protocol details come from the standard OTEL_* variables.
    match opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .build()
    {
        Ok(exporter) => (builder.with_batch_exporter(exporter).build(), None),
        Err(e) => (builder.build(), Some(e.to_string())),
    }
}

/// The server's Prometheus collectors, registered in their own registry. Each `Application` has
/// its own (no process-wide instance), so servers and stores of one process count apart.
///
/// The `prometheus` crate rather than `metrics` + `metrics-exporter-prometheus`: the collectors are
/// typed values with their label names fixed at registration, rendered by our own `/metrics`
/// handler; no global recorder to install (tests start many servers in one process) and no
/// exporter with its own HTTP server stack.
pub struct Metrics {
    pub registry: Registry,
    /// Requests answered, by route pattern, method and status.
    pub http_requests: IntCounterVec,
    /// Time to the response head, by route pattern, method and status.
    pub http_duration: HistogramVec,
    /// Requests being handled now (until their response body is sent).
    pub http_in_flight: IntGauge,
    /// Memory operations (`recall`, `commit`), by backend and outcome.
    pub memory_duration: HistogramVec,
    /// Each step a memory backend takes against an external dependency (`redis`, `postgres`), by
    /// dependency and outcome: where a turn's memory time goes. A group commit's steps serve all
    /// its turns, and are counted once.
    pub dependency_duration: HistogramVec,
    /// Upstream model calls, by mode (`json`, `stream`) and outcome (`ok` or the error kind);
    /// for streams, until the last chunk.
    pub upstream_duration: HistogramVec,
    /// How long each batch of a memory backend's batching ran (redis+postgres's group commit and
    /// batched recalls, the embedded writer's transactions), by backend and batch. Summed over
    /// time, the share of time the batcher was busy: a batcher busy all the time is where a
    /// loaded server's turns queue.
    pub batch_duration: HistogramVec,
    /// How many jobs (turns, injects, recalls) each of those batches carried.
    pub batch_size: HistogramVec,
    /// Calls to the embedding model (an endpoint request, an in-process batch), by provider.
    pub embedding_requests: IntCounterVec,
    /// Texts embedded, by provider.
    pub embedding_texts: IntCounterVec,
    /// Failed embedding calls, by provider and reason (`crate::embed::EmbedError::kind`).
    pub embedding_failures: IntCounterVec,
    /// Latency of embedding calls, by provider and outcome.
    pub embedding_duration: HistogramVec,
    /// Texts per embedding call, by provider: how well concurrent callers share calls.
    pub embedding_batch_size: HistogramVec,
    /// Memory items waiting for an embedding, as the memory layer last said
    /// (`crate::embed::metrics::set_pending`).
    pub embedding_pending: IntGauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// A fresh set of collectors, all at zero, in a registry of their own. The server makes one
    /// (`startup::Application`) and hands it to everything that records into it.
    pub fn new() -> Self {
        let registry = Registry::new_custom(Some("agentwall".into()), None).expect("valid prefix");
        let latency = [
            0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
            60.0,
        ];
        let histogram = |name: &str, help: &str, labels: &[&str], buckets: &[f64]| {
            let h = HistogramVec::new(
                HistogramOpts::new(name, help).buckets(buckets.to_vec()),
                labels,
            )
            .expect("valid histogram");
            registry
                .register(Box::new(h.clone()))
                .expect("registered once");
            h
        };
        let http_duration = histogram(
            "http_request_duration_seconds",
            "Time from request to response head (for a relayed upstream stream, to its first \
             events), by route pattern, method and status.",
            &["route", "method", "status"],
            &latency,
        );
        let memory_duration = histogram(
            "memory_operation_duration_seconds",
            "Latency of memory operations (recall, commit), by backend and outcome.",
            &["operation", "backend", "outcome"],
            &latency,
        );
        let dependency_duration = histogram(
            "memory_dependency_duration_seconds",
            "Latency of each memory step against an external dependency (redis, postgres), by dependency and outcome.",
            &["dependency", "outcome"],
            &latency,
        );
        let batch_duration = histogram(
            "memory_batch_duration_seconds",
            "How long each batch of a memory backend ran (commit, recall, write), by backend and \
             batch; its rate is the share of time the batching was busy.",
            &["backend", "batch"],
            // Finer than `latency`: a healthy batch takes a few milliseconds.
            &[
                0.00025, 0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.25, 1.0, 5.0,
                30.0,
            ],
        );
        let batch_size = histogram(
            "memory_batch_size",
            "Jobs (turns, injects, recalls) per batch of a memory backend, by backend and batch.",
            &["backend", "batch"],
            &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0],
        );
        let upstream_duration = histogram(
            "upstream_request_duration_seconds",
            "Latency of upstream model calls (streams: until the last chunk), by API (chat or responses), mode and outcome.",
            &["api", "mode", "outcome"],
            &latency,
        );
        let embedding_duration = histogram(
            "embedding_request_duration_seconds",
            "Latency of calls to the embedding model (an endpoint request, an in-process batch), \
             by provider and outcome.",
            &["provider", "outcome"],
            &latency,
        );
        let embedding_batch_size = histogram(
            "embedding_batch_size",
            "Texts per call to the embedding model, by provider.",
            &["provider"],
            &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0],
        );
        let counter = |name: &str, help: &str, labels: &[&str]| {
            let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid counter");
            registry
                .register(Box::new(c.clone()))
                .expect("registered once");
            c
        };
        let gauge = |name: &str, help: &str| {
            let g = IntGauge::new(name, help).expect("valid gauge");
            registry
                .register(Box::new(g.clone()))
                .expect("registered once");
            g
        };
        let http_requests = counter(
            "http_requests_total",
            "Requests answered, by route pattern, method and status.",
            &["route", "method", "status"],
        );
        let http_in_flight = gauge("http_requests_in_flight", "Requests being handled now.");
        let embedding_requests = counter(
            "embedding_requests_total",
            "Calls to the embedding model (an endpoint request, an in-process batch), by provider.",
            &["provider"],
        );
        let embedding_texts = counter(
            "embedding_texts_total",
            "Texts embedded, by provider.",
            &["provider"],
        );
        let embedding_failures = counter(
            "embedding_failures_total",
            "Failed calls to the embedding model, by provider and reason (timeout, unreachable, \
             rate_limited, status, garbage, inference, stopped).",
            &["provider", "reason"],
        );
        let embedding_pending = gauge(
            "embedding_pending_items",
            "Memory items waiting for an embedding.",
        );
        Self {
            registry,
            http_requests,
            http_duration,
            http_in_flight,
            memory_duration,
            dependency_duration,
            batch_duration,
            batch_size,
            upstream_duration,
            embedding_requests,
            embedding_texts,
            embedding_failures,
            embedding_duration,
            embedding_batch_size,
            embedding_pending,
        }
    }

    /// Records one batch of a memory backend: `jobs` served together in `took`.
    pub fn observe_batch(&self, backend: &str, batch: &str, jobs: usize, took: Duration) {
        let labels = [backend, batch];
        self.batch_duration
            .with_label_values(&labels)
            .observe(took.as_secs_f64());
        self.batch_size
            .with_label_values(&labels)
            .observe(jobs as f64);
    }

    /// How many batches, and jobs in them, have been recorded here for `backend`'s `batch`.
    pub fn batches(&self, backend: &str, batch: &str) -> (u64, u64) {
        let sizes = self.batch_size.with_label_values(&[backend, batch]);
        // Sizes are whole numbers, far below 2^53: the float sum is exact.
        (sizes.get_sample_count(), sizes.get_sample_sum() as u64)
    }

    /// The Prometheus text exposition of every collector.
    pub fn render(&self) -> String {
        prometheus::TextEncoder::new()
            .encode_to_string(&self.registry.gather())
            .unwrap_or_else(|e| format!("# metrics could not be encoded: {e}\n"))
    }
}
