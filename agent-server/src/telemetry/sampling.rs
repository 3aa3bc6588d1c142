//! Head sampling: whether a request's trace is recorded is decided once, when the request
//! arrives, before any span of it is built.
//!
//! The decision is the configured sampler's (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`;
//! parent-based always-on by default), asked with the caller's context. A request that is not
//! sampled builds no OpenTelemetry span at all: [`SampledRequests`], the trace layer's filter,
//! turns its spans and events off for that layer, while logs see them as before. The tracer
//! then records every span that reaches it (`Sampler::AlwaysOn`, set in `telemetry.rs`), since
//! the decision has been made.
//!
//! Why not leave the decision to the tracer: `tracing-opentelemetry` builds a span's name,
//! attributes and parent context before the tracer's sampler is asked, so a span the sampler
//! dropped cost nearly as much as one it kept, and exporting a 10 % sample of traces cost most of
//! what exporting all of them did (docs/benchmarks.md).
//!
//! The decision travels with the request's task in a task-local, [`within`]. Work outside it (a
//! task the request spawned, or the server's own) follows its current span: a span under a span
//! the layer does not see is not seen either, so an unsampled request's spawned work stays out
//! of traces rather than starting traces of its own. A span with no parent outside any request
//! is a trace of its own, sampled by the same sampler.
//!
//! A new trace's decision is made for a trace id drawn for it, while the recorded trace gets the
//! id the tracer draws. That changes nothing for ratio sampling (both are random) and is only
//! visible to a downstream service that samples by trace id ratio without looking at the
//! sampled flag it is sent.

use std::future::Future;
use std::sync::{Arc, OnceLock};

use opentelemetry::Context;
use opentelemetry::trace::{SpanContext, SpanKind, TraceContextExt as _, TraceFlags, TraceId};
use opentelemetry_sdk::trace::{
    IdGenerator as _, RandomIdGenerator, SamplingDecision, SamplingResult, ShouldSample,
};
use tracing::subscriber::Interest;
use tracing::{Metadata, Subscriber};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::{Context as LayerContext, Filter};
use tracing_subscriber::registry::LookupSpan;

tokio::task_local! {
    /// The trace of the request whose task this is.
    static REQUEST: RequestTrace;
}

/// The sampler of the process's trace layer; unset when no spans are exported.
static HEAD: OnceLock<Arc<HeadSampler>> = OnceLock::new();

/// A request's trace: whether its spans are recorded, and the context its outgoing calls
/// continue when it has no span of its own to give them (`propagation::outgoing`).
#[derive(Clone, Debug)]
pub struct RequestTrace {
    caller: Context,
    recorded: bool,
}

impl RequestTrace {
    /// Decides the trace of a request whose caller sent `caller` (an empty context when it
    /// sent none): recorded when spans are exported and the sampler keeps it.
    pub fn decide(caller: Context) -> Self {
        match HEAD.get() {
            Some(head) => head.decide(caller),
            // Nothing is exported: the layer that would record is not installed either.
            None => Self {
                caller,
                recorded: true,
            },
        }
    }

    /// Whether this request's spans are recorded.
    pub fn recorded(&self) -> bool {
        self.recorded
    }

    /// A request whose trace is not recorded, whatever sampler is installed.
    #[cfg(test)]
    pub(crate) fn unrecorded() -> Self {
        Self {
            caller: Context::new(),
            recorded: false,
        }
    }
}

/// Whether spans that only traces want are made here: everywhere except in a request whose trace
/// is not recorded, unless the logs take DEBUG spans as well. For the agent's step spans (DEBUG):
/// tracing-subscriber makes a span that every per-layer filter turns off (the registry only
/// skips one that all of its 64 filter slots turned off), and each enter, exit and close of it
/// then goes through every layer. Made and turned off, three such spans added about 7 % to an
/// unsampled turn's instructions (docs/benchmarks.md).
pub fn traced_here() -> bool {
    REQUEST.try_with(RequestTrace::recorded).unwrap_or(true)
        || HEAD.get().is_some_and(|head| head.logs_take_debug)
}

/// `task`, to be spawned from the current request's task, inside that request's trace: a
/// spawned task does not inherit task-locals. Outside a request, `task` as it is.
pub fn carried<F: Future>(task: F) -> impl Future<Output = F::Output> {
    let trace = REQUEST.try_with(RequestTrace::clone).ok();
    async move {
        match trace {
            Some(trace) => REQUEST.scope(trace, task).await,
            None => task.await,
        }
    }
}

/// Runs `request` as the task of the request whose trace is `trace`.
pub async fn within<F: Future>(trace: RequestTrace, request: F) -> F::Output {
    REQUEST.scope(trace, request).await
}

/// The caller's span context of the current request, if any is valid: the caller's own, or for
/// a request not recorded, one standing for it with the sampled flag cleared.
pub(super) fn caller_span_context() -> Option<SpanContext> {
    REQUEST
        .try_with(|request| request.caller.span().span_context().clone())
        .ok()
        .filter(SpanContext::is_valid)
}

/// Makes `sampler` decide the traces of requests; [`SampledRequests`] is the filter to give the
/// trace layer. `logs` is the most verbose level the logs take anywhere (`None`: unknown, as
/// verbose as any). Only the first call counts: the process has one trace layer.
pub(super) fn install(
    sampler: Box<dyn ShouldSample>,
    logs: Option<LevelFilter>,
) -> SampledRequests {
    let head = HEAD
        .get_or_init(|| Arc::new(HeadSampler::new(sampler, takes_debug(logs))))
        .clone();
    SampledRequests { head }
}

/// Whether logs whose most verbose level anywhere is `logs` take DEBUG spans.
fn takes_debug(logs: Option<LevelFilter>) -> bool {
    logs.is_none_or(|logs| logs >= LevelFilter::DEBUG)
}

/// The configured sampler, asked once per trace.
#[derive(Debug)]
struct HeadSampler {
    sampler: Box<dyn ShouldSample>,
    ids: RandomIdGenerator,
    /// Whether logs take DEBUG spans, so that [`traced_here`] must make them for logs too.
    logs_take_debug: bool,
}

impl HeadSampler {
    fn new(sampler: Box<dyn ShouldSample>, logs_take_debug: bool) -> Self {
        Self {
            sampler,
            ids: RandomIdGenerator::default(),
            logs_take_debug,
        }
    }

    fn decide(&self, caller: Context) -> RequestTrace {
        let theirs = caller.span().span_context().clone();
        let trace_id = if theirs.is_valid() {
            theirs.trace_id()
        } else {
            self.ids.new_trace_id()
        };
        let result = self.sample(&caller, trace_id);
        if result.decision == SamplingDecision::RecordAndSample {
            return RequestTrace {
                caller,
                recorded: true,
            };
        }
        // Not recorded: outgoing calls still carry the trace on, marked not sampled, so that
        // the services called do not record pieces of a trace nobody will see whole.
        let span_id = if theirs.is_valid() {
            theirs.span_id()
        } else {
            self.ids.new_span_id()
        };
        let standing = SpanContext::new(
            trace_id,
            span_id,
            TraceFlags::NOT_SAMPLED,
            theirs.is_remote(),
            result.trace_state,
        );
        RequestTrace {
            caller: Context::new().with_remote_span_context(standing),
            recorded: false,
        }
    }

    /// Whether a new trace outside any request (no caller) is sampled.
    fn decide_root(&self) -> bool {
        let result = self.sample(&Context::new(), self.ids.new_trace_id());
        result.decision == SamplingDecision::RecordAndSample
    }

    fn sample(&self, caller: &Context, trace_id: TraceId) -> SamplingResult {
        self.sampler.should_sample(
            Some(caller),
            trace_id,
            "request",
            &SpanKind::Server,
            &[],
            &[],
        )
    }
}

/// The trace layer's filter: spans and events of a request not sampled are off for the layer.
pub struct SampledRequests {
    head: Arc<HeadSampler>,
}

impl<S> Filter<S> for SampledRequests
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn enabled(&self, meta: &Metadata<'_>, cx: &LayerContext<'_, S>) -> bool {
        if let Ok(recorded) = REQUEST.try_with(RequestTrace::recorded) {
            return recorded;
        }
        match cx.current_span().id() {
            // `cx` sees only what this filter let through.
            Some(parent) => cx.span(parent).is_some(),
            None => meta.is_span() && self.head.decide_root(),
        }
    }

    fn callsite_enabled(&self, _: &'static Metadata<'static>) -> Interest {
        // Decided per span, by the request it belongs to: never cached per call site.
        Interest::sometimes()
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        // No level of its own: combined with `Targets` (`FilterExt::and` takes the lower hint),
        // the layer keeps `Targets`' hint. Without one, the process's hint would be TRACE, and
        // every `log` record of a dependency would be dispatched as an event.
        Some(LevelFilter::TRACE)
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry_sdk::trace::Sampler;
    use tracing::Instrument as _;
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;
    use crate::telemetry::propagation;
    use crate::telemetry::testing::{CALLER_SPAN, CALLER_TRACE, Recorded, caller, current_thread};

    fn head(sampler: Sampler) -> Arc<HeadSampler> {
        Arc::new(HeadSampler::new(Box::new(sampler), false))
    }

    /// Keeps what the caller sampled; a new trace is never sampled.
    fn parent_based_off() -> Sampler {
        Sampler::ParentBased(Box::new(Sampler::AlwaysOff))
    }

    /// What the upstream is sent from within `trace`'s request.
    fn sent_upstream(trace: RequestTrace) -> SpanContext {
        current_thread().block_on(within(trace, async {
            propagation::outgoing(&tracing::Span::none())
                .span()
                .span_context()
                .clone()
        }))
    }

    #[test]
    fn step_spans_are_made_for_logs_only_when_they_take_debug() {
        assert!(!takes_debug(Some(LevelFilter::INFO)));
        assert!(takes_debug(Some(LevelFilter::DEBUG)));
        assert!(takes_debug(Some(LevelFilter::TRACE)));
        assert!(takes_debug(None), "a filter with no hint may take anything");
    }

    #[test]
    fn a_caller_that_sampled_is_followed() {
        let trace = head(parent_based_off()).decide(caller(TraceFlags::SAMPLED));
        assert!(trace.recorded());
        let sent = trace.caller.span().span_context().clone();
        assert_eq!(
            (sent.trace_id(), sent.span_id()),
            (CALLER_TRACE, CALLER_SPAN)
        );
    }

    #[test]
    fn a_request_not_sampled_carries_its_trace_on_marked_not_sampled() {
        let head = head(parent_based_off());
        // The caller did not sample: its trace, its state, the flag cleared.
        let trace = head.decide(caller(TraceFlags::NOT_SAMPLED));
        assert!(!trace.recorded());
        let sent = sent_upstream(trace);
        assert_eq!(sent.trace_id(), CALLER_TRACE);
        assert_ne!(
            sent.span_id(),
            CALLER_SPAN,
            "a span id of its own for the model call"
        );
        assert!(!sent.is_sampled());
        assert_eq!(sent.trace_state().header(), "vendor=1");
        // No caller: a new trace, not sampled.
        let (first, second) = (head.decide(Context::new()), head.decide(Context::new()));
        assert!(!first.recorded() && !second.recorded());
        let (first, second) = (sent_upstream(first), sent_upstream(second));
        assert!(first.is_valid() && !first.is_sampled());
        assert_ne!(first.trace_id(), second.trace_id());
    }

    #[test]
    fn a_new_trace_is_sampled_at_the_configured_ratio() {
        assert!(head(Sampler::AlwaysOn).decide(Context::new()).recorded());
        let head = head(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            0.25,
        ))));
        let recorded = (0..4000)
            .filter(|_| head.decide(Context::new()).recorded())
            .count();
        // 1,000 expected; the standard deviation is about 27.
        assert!((850..1150).contains(&recorded), "{recorded} of 4000");
    }

    /// Runs `f` with a subscriber whose only layer, behind [`SampledRequests`], records what
    /// reaches it, and returns that.
    fn reaching_the_layer(roots: Sampler, f: impl AsyncFnOnce()) -> Vec<String> {
        let recorded = Recorded::default();
        let filter = SampledRequests { head: head(roots) };
        let subscriber = tracing_subscriber::registry().with(recorded.clone().with_filter(filter));
        let _default = tracing::subscriber::set_default(subscriber);
        current_thread().block_on(f());
        recorded.take()
    }

    fn request(recorded: bool) -> RequestTrace {
        if recorded {
            RequestTrace {
                caller: Context::new(),
                recorded,
            }
        } else {
            RequestTrace::unrecorded()
        }
    }

    /// A request's span, a step span in it, an event in that, and a span in a task spawned
    /// from the step, which does not inherit the request's task-local.
    async fn a_request(trace: RequestTrace) {
        within(trace, async {
            let span = tracing::info_span!("request");
            async {
                let step = tracing::info_span!("step");
                step.in_scope(|| tracing::info!("inside"));
                let spawned = async { drop(tracing::info_span!("spawned")) };
                crate::task::server_work(spawned.instrument(step))
                    .await
                    .unwrap();
            }
            .instrument(span)
            .await;
        })
        .await;
    }

    #[test]
    fn only_a_sampled_requests_spans_and_events_reach_the_trace_layer() {
        let seen = reaching_the_layer(Sampler::AlwaysOn, async || {
            a_request(request(true)).await;
            a_request(request(false)).await;
        });
        assert_eq!(seen, ["request", "step", "event in step", "spawned"]);
    }

    #[test]
    fn outside_requests_a_new_trace_is_sampled_and_its_children_follow_it() {
        for (roots, expected) in [
            (Sampler::AlwaysOn, vec!["root", "child", "event in child"]),
            (Sampler::AlwaysOff, vec![]),
        ] {
            let seen = reaching_the_layer(roots, async || {
                // An event outside any span is for logs only.
                tracing::info!("outside");
                tracing::info_span!("root").in_scope(|| {
                    tracing::info_span!("child").in_scope(|| tracing::info!("inside"));
                });
            });
            assert_eq!(seen, expected);
        }
    }
}
