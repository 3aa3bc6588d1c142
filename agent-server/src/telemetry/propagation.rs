//! The trace context of calls this server makes (the upstream model), whether or not spans are
//! exported or the request sampled.
//!
//! Recording, the context is the model-call span's own, so the upstream's spans (if it traces)
//! hang under it. Otherwise no OpenTelemetry span was built (not exporting: building them was
//! about 7 % of an upstream turn's CPU, docs/benchmarks.md; a request not sampled:
//! [`super::sampling`]), yet the upstream still gets the caller's trace id, flags and
//! `tracestate` (a new sampled trace when the caller sent none and nothing is exported; the
//! not-sampled flag for a request not sampled) under a new span id standing for the model call.
//! The caller's context reaches the call through the request's task-local
//! ([`super::sampling::within`], set around each request by `http::metrics`), because the
//! handler runs inside that future and the call is made from it; a task the request spawns gets
//! it through [`super::sampling::carried`], and without it would start a new trace. A new trace is marked sampled when nothing is exported: nothing
//! here records spans to sample, and the upstream decides for its own.

use opentelemetry::Context;
use opentelemetry::trace::{SpanContext, TraceContextExt as _, TraceFlags, TraceState};
use opentelemetry_sdk::trace::{IdGenerator as _, RandomIdGenerator};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::sampling;

/// The context to send with a call made in `span`.
pub fn outgoing(span: &Span) -> Context {
    let own = span.context();
    if own.span().span_context().is_valid() {
        return own;
    }
    let ids = RandomIdGenerator::default();
    let call = match sampling::caller_span_context() {
        Some(caller) => SpanContext::new(
            caller.trace_id(),
            ids.new_span_id(),
            caller.trace_flags(),
            false,
            caller.trace_state().clone(),
        ),
        None => SpanContext::new(
            ids.new_trace_id(),
            ids.new_span_id(),
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        ),
    };
    Context::new().with_remote_span_context(call)
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::SpanId;

    use super::*;
    use crate::telemetry::testing::{caller, current_thread};

    fn outgoing_in(cx: Option<Context>) -> SpanContext {
        let runtime = current_thread();
        let span = Span::none();
        let call = async move { outgoing(&span).span().span_context().clone() };
        match cx {
            // No sampler is installed in unit tests: the request is as when nothing is exported.
            Some(cx) => {
                runtime.block_on(sampling::within(sampling::RequestTrace::decide(cx), call))
            }
            None => runtime.block_on(call),
        }
    }

    #[test]
    fn the_callers_trace_continues_under_a_new_span_id_with_its_flags_and_state() {
        for flags in [TraceFlags::SAMPLED, TraceFlags::NOT_SAMPLED] {
            let sent = caller(flags);
            let theirs = sent.span().span_context().clone();
            let ours = outgoing_in(Some(sent));
            assert_eq!(ours.trace_id(), theirs.trace_id());
            assert_ne!(ours.span_id(), theirs.span_id());
            assert!(ours.span_id() != SpanId::INVALID);
            assert_eq!(ours.trace_flags(), flags);
            assert_eq!(ours.trace_state().header(), "vendor=1");
        }
    }

    #[test]
    fn without_a_caller_context_a_new_sampled_trace_starts() {
        for cx in [None, Some(Context::new())] {
            let ours = outgoing_in(cx);
            assert!(ours.is_valid());
            assert!(ours.is_sampled());
        }
        assert_ne!(outgoing_in(None).trace_id(), outgoing_in(None).trace_id());
    }
}
