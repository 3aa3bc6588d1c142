//! How span and event fields read in plain-text logs.
//!
//! The fmt layer formats every span's fields when the span is created, whether or not anything
//! is ever logged inside it: once per chat turn at INFO (the request span; the agent's step spans
//! are DEBUG), four times at DEBUG. The default one
//! styles each field name through `nu_ansi_term` even without colours, and writes the fields that
//! only the trace exporter reads; together that was about a tenth of a builtin turn's
//! instructions. This one writes `name=value` pairs separated by spaces, the message bare, and
//! leaves out:
//! - `otel.*` and `openinference.*`: span names, kinds and statuses for the exporter, which a log
//!   line already says in other words (the span name, `http.route`, `http.response.status_code`);
//! - `log.*`: where a `log` record came from, as the default formatter does too.
//!
//! Used for plain text on a pipe or file; a terminal keeps the default, coloured formatter.

use std::fmt;

use tracing::field::{Field, Visit};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FormatFields, FormattedFields};

/// The field formatter; see the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct PlainFields;

impl<'w> FormatFields<'w> for PlainFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'w>, fields: R) -> fmt::Result {
        let mut visitor = PlainVisitor {
            writer,
            separate: false,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }

    /// Fields recorded after the span was created: a separator only before what is written, so
    /// a left-out field leaves no stray space.
    fn add_fields(
        &self,
        current: &'w mut FormattedFields<Self>,
        fields: &tracing::span::Record<'_>,
    ) -> fmt::Result {
        let mut visitor = PlainVisitor {
            separate: !current.fields.is_empty(),
            writer: current.as_writer(),
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

struct PlainVisitor<'w> {
    writer: Writer<'w>,
    /// Whether something was written before, so the next field needs a space.
    separate: bool,
    result: fmt::Result,
}

impl Visit for PlainVisitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let name = field.name();
        if self.result.is_err() || is_left_out(name) {
            return;
        }
        let space = if self.separate { " " } else { "" };
        self.separate = true;
        self.result = if name == "message" {
            write!(self.writer, "{space}{value:?}")
        } else {
            write!(self.writer, "{space}{name}={value:?}")
        };
    }
}

fn is_left_out(name: &str) -> bool {
    name.starts_with("otel.") || name.starts_with("openinference.") || name.starts_with("log.")
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::fmt::MakeWriter;
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;

    /// Collects what the fmt layer writes.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Captured;
        fn make_writer(&'a self) -> Self::Writer {
            self.clone()
        }
    }

    #[test]
    fn log_lines_carry_span_context_without_exporter_fields() {
        let out = Captured::default();
        let layer = tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .without_time()
            .with_target(false)
            .fmt_fields(PlainFields)
            .with_writer(out.clone());
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!(
                "request",
                otel.name = "POST /v1/chat/completions",
                http.route = "/v1/chat/completions",
                otel.status_code = tracing::field::Empty,
                http.response.status_code = tracing::field::Empty,
                session.id = "s-1",
            );
            let _entered = span.enter();
            span.record("otel.status_code", "error");
            span.record("http.response.status_code", 503);
            tracing::warn!(dependency = %"redis", "memory unavailable");
        });
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text.trim_end(),
            " WARN request{http.route=\"/v1/chat/completions\" session.id=\"s-1\" \
             http.response.status_code=503}: memory unavailable dependency=redis"
        );
    }
}
