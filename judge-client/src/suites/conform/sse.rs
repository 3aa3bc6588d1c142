//! Server-sent events, parsed strictly from the captured bytes of a whole stream.
//!
//! Hand-written rather than taken from an SSE client crate on purpose: those are lenient by
//! design (an event cut off at the end of the stream is silently dropped, stray lines are
//! ignored), and a conformance suite must see exactly those faults. The parsing rules are the
//! WHATWG `text/event-stream` ones: lines end with CRLF, LF or CR; a blank line dispatches the
//! event; `data:` lines accumulate (joined by `\n`); a line starting with `:` is a comment; one
//! space after the colon is dropped.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when the server named the event.
    pub event: Option<String>,
    pub data: String,
}

/// Every event of a stream, and what was wrong with its framing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseStream {
    pub events: Vec<SseEvent>,
    /// Framing faults, in the order found; empty for a well-framed stream.
    pub problems: Vec<String>,
}

impl SseStream {
    /// The data of every event, in order.
    pub fn data(&self) -> impl Iterator<Item = &str> {
        self.events.iter().map(|e| e.data.as_str())
    }
}

/// Parses a whole captured stream.
pub fn parse(bytes: &[u8]) -> SseStream {
    let mut stream = SseStream::default();
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(e) => {
            stream
                .problems
                .push(format!("the stream is not valid UTF-8 ({e})"));
            String::from_utf8_lossy(bytes)
        }
    };
    let mut event: Option<String> = None;
    let mut data: Option<String> = None;
    let mut rest = text.as_ref();
    while !rest.is_empty() {
        let Some(end) = rest.find(['\r', '\n']) else {
            stream.problems.push(format!(
                "the stream ends inside a line (no line break after {:?})",
                clip(rest)
            ));
            break;
        };
        let line = &rest[..end];
        let break_len = if rest[end..].starts_with("\r\n") {
            2
        } else {
            1
        };
        rest = &rest[end + break_len..];
        if line.is_empty() {
            if let Some(data) = data.take() {
                stream.events.push(SseEvent {
                    event: event.take(),
                    data,
                });
            } else if event.take().is_some() {
                stream
                    .problems
                    .push("an event with an `event:` field but no `data:`".to_owned());
            }
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => match &mut data {
                Some(existing) => {
                    existing.push('\n');
                    existing.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            "event" => event = Some(value.to_owned()),
            "id" | "retry" => {}
            other => stream.problems.push(format!(
                "line {:?} has the unknown field {other:?} (only data, event, id, retry)",
                clip(line)
            )),
        }
    }
    if let Some(data) = data {
        stream.problems.push(format!(
            "the stream ends inside an event (no blank line after data {:?}); a client drops it",
            clip(&data)
        ));
    }
    stream
}

fn clip(text: &str) -> String {
    let mut out: String = text.chars().take(80).collect();
    if text.chars().count() > 80 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_framed_events_with_names_comments_and_crlf() {
        let stream = parse(
            b": keep-alive\r\nevent: response.created\r\ndata: {\"a\":1}\r\n\r\ndata: x\ndata: y\n\ndata: [DONE]\n\n",
        );
        assert!(stream.problems.is_empty(), "{:?}", stream.problems);
        assert_eq!(stream.events.len(), 3);
        assert_eq!(stream.events[0].event.as_deref(), Some("response.created"));
        assert_eq!(stream.events[1].data, "x\ny");
        assert_eq!(stream.data().last(), Some("[DONE]"));
    }

    #[test]
    fn an_event_cut_off_at_the_end_is_a_framing_fault() {
        let stream = parse(b"data: {\"a\":1}\n\ndata: [DONE]\n");
        assert_eq!(stream.events.len(), 1);
        assert_eq!(stream.problems.len(), 1);
        assert!(stream.problems[0].contains("ends inside an event"));
        let stream = parse(b"data: {\"a\":1}\n\ndata: [DONE]");
        assert!(stream.problems[0].contains("ends inside a line"));
    }

    #[test]
    fn unknown_fields_and_bad_utf8_are_reported() {
        let stream = parse(b"payload: 1\ndata: \xff\n\n");
        assert_eq!(stream.events.len(), 1);
        assert_eq!(stream.problems.len(), 2, "{:?}", stream.problems);
    }
}
