//! A layer for tests that records what reaches it: the names of the spans built and of the
//! spans events were in.

use std::sync::{Arc, Mutex};

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
