//! What the telemetry tests share: a layer that records what reaches it, the names of the spans
//! built and of the spans events were in; a caller's trace context; a runtime.

use std::sync::{Arc, Mutex};

use opentelemetry::Context as TraceContext;
use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState,
};
use tracing::Subscriber;
use tracing::span::{Attributes, Id};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// What reached the layer, in order: a span's name when it was built, `event in NAME` for an
/// event (`event` alone outside any span the layer saw).
#[derive(Clone, Default)]
pub(crate) struct Recorded(Arc<Mutex<Vec<String>>>);

impl Recorded {
    /// Everything recorded so far, and forgets it.
    pub(crate) fn take(&self) -> Vec<String> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorded {
    fn on_new_span(&self, attrs: &Attributes<'_>, _: &Id, _: Context<'_, S>) {
        self.0
            .lock()
            .unwrap()
            .push(attrs.metadata().name().to_owned());
    }

    fn on_event(&self, _: &tracing::Event<'_>, cx: Context<'_, S>) {
        let line = match cx.lookup_current() {
            Some(span) => format!("event in {}", span.name()),
            None => "event".to_owned(),
        };
        self.0.lock().unwrap().push(line);
    }
}

/// The trace id of [`caller`]'s context.
pub(crate) const CALLER_TRACE: TraceId =
    TraceId::from_bytes(0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736_u128.to_be_bytes());

/// The span id of [`caller`]'s context.
pub(crate) const CALLER_SPAN: SpanId = SpanId::from_bytes(0x00f0_67aa_0ba9_02b7_u64.to_be_bytes());

/// The context a caller sends with `traceparent` and `tracestate: vendor=1`.
pub(crate) fn caller(flags: TraceFlags) -> TraceContext {
    let state = TraceState::from_key_value([("vendor", "1")]).unwrap();
    TraceContext::new().with_remote_span_context(SpanContext::new(
        CALLER_TRACE,
        CALLER_SPAN,
        flags,
        true,
        state,
    ))
}

/// A single-threaded runtime, so that a thread's default subscriber sees every task.
pub(crate) fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}
