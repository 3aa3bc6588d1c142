//! OpenTelemetry spans for the judge: one per run, per test and per request, exported over
//! OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) is set, so that Jaeger or
//! Phoenix show one waterfall from the judge through the agent to its model. The request span's
//! context is what goes out as `traceparent`.
//!
//! Without an exporter nothing is installed: spans are no-ops with invalid contexts, and the
//! client falls back to reproducible ids derived from the session ([`super::trace`]).

use std::borrow::Cow;

use opentelemetry::trace::{TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue, global};
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;

/// `service.name` of the judge's spans (unless `OTEL_SERVICE_NAME` says otherwise).
pub const SERVICE_NAME: &str = "agentwall-judge";

#[derive(Debug, thiserror::Error)]
#[error("cannot export spans over OTLP: {0}")]
pub struct TelemetryError(String);

/// Whether the standard variables ask for OTLP export.
pub fn exporter_configured() -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"))
        || std::env::var("OTEL_TRACES_EXPORTER").is_ok_and(|v| v.eq_ignore_ascii_case("none"));
    !disabled && (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
}

/// Installs the global tracer provider when export is configured. Keep the provider and call
/// `shutdown()` on it before exiting, so the last spans are flushed.
pub fn install() -> Result<Option<SdkTracerProvider>, TelemetryError> {
    if !exporter_configured() {
        return Ok(None);
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .build()
        .map_err(|e| TelemetryError(e.to_string()))?;
    let mut resource = Resource::builder();
    if std::env::var("OTEL_SERVICE_NAME").is_err() {
        resource = resource.with_service_name(SERVICE_NAME);
    }
    let provider = SdkTracerProvider::builder()
        .with_resource(resource.build())
        .with_batch_exporter(exporter)
        .build();
    global::set_tracer_provider(provider.clone());
    Ok(Some(provider))
}

/// Starts a span as a child of `parent`; the returned context holds it.
pub fn start(
    name: impl Into<Cow<'static, str>>,
    parent: &Context,
    attributes: Vec<KeyValue>,
) -> Context {
    let tracer = global::tracer(SERVICE_NAME);
    let span = tracer
        .span_builder(name)
        .with_attributes(attributes)
        .start_with_context(&tracer, parent);
    parent.with_span(span)
}

/// Ends the span a context holds.
pub fn end(cx: &Context) {
    cx.span().end();
}

/// The W3C `traceparent` of the span a context holds, when it is a real (recorded) span.
pub fn traceparent(cx: &Context) -> Option<String> {
    let span = cx.span();
    let sc = span.span_context();
    sc.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_an_exporter_spans_are_no_ops_without_traceparent() {
        let cx = start("test", &Context::new(), vec![]);
        assert_eq!(traceparent(&cx), None);
        end(&cx);
    }
}
