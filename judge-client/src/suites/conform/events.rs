//! What a stream must say, beyond its framing ([`super::sse`]): Chat Completions chunks ending in
//! `data: [DONE]`, and the Responses API's semantic events in OpenAI's order with strictly
//! increasing `sequence_number`s. Pure functions of a parsed stream, so each fault is testable on
//! captured bytes.

use protocol::openai::responses::event;
use serde_json::Value;

use super::sse::SseStream;

const DONE: &str = "[DONE]";

/// The chat stream ends with exactly one `data: [DONE]`, after every chunk.
pub fn chat_done(stream: &SseStream) -> Result<(), String> {
    let dones: Vec<usize> = stream
        .data()
        .enumerate()
        .filter(|(_, d)| d.trim() == DONE)
        .map(|(i, _)| i)
        .collect();
    match dones.as_slice() {
        [] => Err(format!(
            "no `data: [DONE]` event: the stream's {} event(s) end without it",
            stream.events.len()
        )),
        [i] if *i + 1 == stream.events.len() => Ok(()),
        [i] => Err(format!(
            "`data: [DONE]` is event {} of {}: events follow it",
            i + 1,
            stream.events.len()
        )),
        many => Err(format!("`data: [DONE]` is sent {} times", many.len())),
    }
}

/// The chunks of a chat stream (every event but `[DONE]`), each a JSON object shaped as a
/// `chat.completion.chunk` with one `id` for the whole stream. An `{"error": ...}` event fails.
pub fn chat_chunks(stream: &SseStream) -> Result<Vec<Value>, String> {
    let mut chunks = Vec::new();
    let mut id: Option<String> = None;
    for (i, data) in stream.data().enumerate().filter(|(_, d)| d.trim() != DONE) {
        let n = i + 1;
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| format!("event {n} is not JSON ({e}): {data:?}"))?;
        if let Some(error) = chunk.get("error") {
            return Err(format!("event {n} is an error: {error}"));
        }
        let problems = super::shape::missing(&chunk, super::shape::CHAT_CHUNK);
        if !problems.is_empty() {
            return Err(format!("event {n}: {}", problems.join("; ")));
        }
        if chunk["object"] != "chat.completion.chunk" {
            return Err(format!(
                "event {n}: object is {}, not \"chat.completion.chunk\"",
                chunk["object"]
            ));
        }
        let this = chunk["id"].as_str().unwrap_or_default().to_owned();
        match &id {
            None => id = Some(this),
            Some(first) if *first != this => {
                return Err(format!(
                    "event {n}: id {this:?} differs from the first chunk's {first:?}"
                ));
            }
            Some(_) => {}
        }
        chunks.push(chunk);
    }
    if chunks.is_empty() {
        return Err("the stream has no chunk".to_owned());
    }
    Ok(chunks)
}

/// The events of a Responses stream, each a JSON object with a string `type` (equal to the SSE
/// `event:` name when the server sends one).
pub fn response_events(stream: &SseStream) -> Result<Vec<Value>, String> {
    let mut events = Vec::new();
    for (i, sse) in stream.events.iter().enumerate() {
        let n = i + 1;
        let value: Value = serde_json::from_str(&sse.data)
            .map_err(|e| format!("event {n} is not JSON ({e}): {:?}", sse.data))?;
        let Some(kind) = value.get("type").and_then(Value::as_str) else {
            return Err(format!("event {n} has no string `type`: {}", sse.data));
        };
        if let Some(name) = &sse.event
            && name != kind
        {
            return Err(format!(
                "event {n} is named {name:?} by its `event:` line but its type is {kind:?}"
            ));
        }
        events.push(value);
    }
    if events.is_empty() {
        return Err("the stream has no event".to_owned());
    }
    Ok(events)
}

fn kind(event: &Value) -> &str {
    event["type"].as_str().unwrap_or_default()
}

/// Every event carries an integer `sequence_number`, each greater than the one before.
pub fn check_sequence(events: &[Value]) -> Result<(), String> {
    let mut last: Option<i64> = None;
    for (i, event) in events.iter().enumerate() {
        let n = i + 1;
        let Some(seq) = event.get("sequence_number").and_then(Value::as_i64) else {
            return Err(format!(
                "event {n} ({}) has no integer sequence_number",
                kind(event)
            ));
        };
        if let Some(previous) = last
            && seq <= previous
        {
            return Err(format!(
                "event {n} ({}) has sequence_number {seq} after {previous}: not strictly increasing",
                kind(event)
            ));
        }
        last = Some(seq);
    }
    Ok(())
}

/// Where the order checker is in a response's event grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    Start,
    Created,
    /// Between output items.
    Items,
    /// Inside a message item, between content parts.
    Message,
    /// Inside a text part, before its `output_text.done`.
    Part,
    /// After `output_text.done`, before `content_part.done`.
    PartText,
    /// Inside a function-call item.
    Call,
    /// After `function_call_arguments.done`.
    CallDone,
    /// After the terminal event.
    End,
}

/// The events of one response follow OpenAI's order: `response.created`, `response.in_progress`,
/// then per output item `response.output_item.added`, for a message per part
/// `response.content_part.added`, `response.output_text.delta`..., `response.output_text.done`,
/// `response.content_part.done`, for a function call `response.function_call_arguments.delta`...,
/// `response.function_call_arguments.done`; `response.output_item.done`; and last
/// `response.completed` (or `.incomplete`, `.failed`). The deltas of a part add up to its
/// `output_text.done` text. Event types outside this grammar (reasoning, built-in tools) are
/// passed over; an `error` event fails.
pub fn check_order(events: &[Value]) -> Result<(), String> {
    let mut at = At::Start;
    let mut text = String::new();
    let mut message = false;
    for (i, event) in events.iter().enumerate() {
        let kind = kind(event);
        let n = i + 1;
        let wrong = |at: At| {
            Err(format!(
                "event {n} is {kind} but {}",
                match at {
                    At::Start => "the stream must open with response.created".to_owned(),
                    At::Created => "response.in_progress must follow response.created".to_owned(),
                    At::Items => "an output item (response.output_item.added) or the terminal event is due".to_owned(),
                    At::Message => "a content part (response.content_part.added) or response.output_item.done is due".to_owned(),
                    At::Part => "response.output_text.delta or response.output_text.done is due".to_owned(),
                    At::PartText => "response.content_part.done is due".to_owned(),
                    At::Call => "response.function_call_arguments.delta or .done is due".to_owned(),
                    At::CallDone => "response.output_item.done is due".to_owned(),
                    At::End => "the response already ended".to_owned(),
                }
            ))
        };
        at = match (at, kind) {
            (_, event::ERROR) => {
                return Err(format!(
                    "event {n} is an error event: {}",
                    event.get("message").unwrap_or(event)
                ));
            }
            (At::Start, event::CREATED) => At::Created,
            (At::Created, event::IN_PROGRESS) => At::Items,
            (At::Items, event::OUTPUT_ITEM_ADDED) => {
                message = event["item"]["type"] == "message";
                if message { At::Message } else { At::Call }
            }
            (At::Items, event::COMPLETED | event::INCOMPLETE | event::FAILED) => At::End,
            (At::Message, event::CONTENT_PART_ADDED) => {
                text.clear();
                At::Part
            }
            (At::Message, event::OUTPUT_ITEM_DONE) => At::Items,
            (At::Part, event::OUTPUT_TEXT_DELTA) => {
                text.push_str(event["delta"].as_str().unwrap_or_default());
                At::Part
            }
            (At::Part, event::OUTPUT_TEXT_DONE) => {
                let done = event["text"].as_str().unwrap_or_default();
                if done != text {
                    return Err(format!(
                        "event {n}: response.output_text.done says {done:?} but its deltas add up to {text:?}"
                    ));
                }
                At::PartText
            }
            (At::PartText, event::CONTENT_PART_DONE) => At::Message,
            (At::Call, event::FUNCTION_CALL_ARGUMENTS_DELTA) => At::Call,
            (At::Call, event::FUNCTION_CALL_ARGUMENTS_DONE) => At::CallDone,
            // Items other than messages and function calls have no events of their own here.
            (At::Call, event::OUTPUT_ITEM_DONE) if !message => At::Items,
            (At::CallDone, event::OUTPUT_ITEM_DONE) => At::Items,
            (
                _,
                event::CREATED
                | event::IN_PROGRESS
                | event::OUTPUT_ITEM_ADDED
                | event::CONTENT_PART_ADDED
                | event::OUTPUT_TEXT_DELTA
                | event::OUTPUT_TEXT_DONE
                | event::CONTENT_PART_DONE
                | event::OUTPUT_ITEM_DONE
                | event::COMPLETED
                | event::INCOMPLETE
                | event::FAILED
                | event::FUNCTION_CALL_ARGUMENTS_DELTA
                | event::FUNCTION_CALL_ARGUMENTS_DONE,
            ) => return wrong(at),
            (At::End, _) => return wrong(at),
            (at, _) => at,
        };
    }
    if at == At::End {
        Ok(())
    } else {
        Err(format!(
            "the stream ends without a terminal event (response.completed, .incomplete or .failed); {}",
            wrong_end(at)
        ))
    }
}

fn wrong_end(at: At) -> &'static str {
    match at {
        At::Start => "no event at all",
        At::Created => "it stops after response.created",
        At::Items => "it stops between output items",
        At::Message | At::Part | At::PartText => "it stops inside a message",
        At::Call | At::CallDone => "it stops inside a function call",
        At::End => "",
    }
}

#[cfg(test)]
mod tests {
    use super::super::sse::parse;
    use super::*;

    fn sse(events: &[(&str, i64, &str)]) -> Vec<u8> {
        let mut out = String::new();
        for (kind, seq, extra) in events {
            out.push_str(&format!(
                "event: {kind}\ndata: {{\"type\":\"{kind}\",\"sequence_number\":{seq}{extra}}}\n\n"
            ));
        }
        out.into_bytes()
    }

    const MSG: &str = r#","item":{"type":"message","id":"msg_1"}"#;

    fn good() -> Vec<(&'static str, i64, &'static str)> {
        vec![
            (event::CREATED, 0, ""),
            (event::IN_PROGRESS, 1, ""),
            (event::OUTPUT_ITEM_ADDED, 2, MSG),
            (event::CONTENT_PART_ADDED, 3, ""),
            (event::OUTPUT_TEXT_DELTA, 4, r#","delta":"Hel""#),
            (event::OUTPUT_TEXT_DELTA, 5, r#","delta":"lo""#),
            (event::OUTPUT_TEXT_DONE, 6, r#","text":"Hello""#),
            (event::CONTENT_PART_DONE, 7, ""),
            (event::OUTPUT_ITEM_DONE, 8, MSG),
            (event::COMPLETED, 9, ""),
        ]
    }

    fn events_of(bytes: &[u8]) -> Vec<Value> {
        let stream = parse(bytes);
        assert!(stream.problems.is_empty(), "{:?}", stream.problems);
        response_events(&stream).unwrap()
    }

    #[test]
    fn a_conforming_responses_stream_passes_order_and_sequence() {
        let events = events_of(&sse(&good()));
        assert_eq!(check_order(&events), Ok(()));
        assert_eq!(check_sequence(&events), Ok(()));
    }

    #[test]
    fn a_function_call_stream_passes_order() {
        let call = r#","item":{"type":"function_call","id":"fc_1"}"#;
        let events = events_of(&sse(&[
            (event::CREATED, 0, ""),
            (event::IN_PROGRESS, 1, ""),
            (event::OUTPUT_ITEM_ADDED, 2, call),
            (event::FUNCTION_CALL_ARGUMENTS_DELTA, 3, r#","delta":"{}""#),
            (
                event::FUNCTION_CALL_ARGUMENTS_DONE,
                4,
                r#","arguments":"{}""#,
            ),
            (event::OUTPUT_ITEM_DONE, 5, call),
            (event::COMPLETED, 6, ""),
        ]));
        assert_eq!(check_order(&events), Ok(()));
    }

    #[test]
    fn an_out_of_order_stream_fails_the_order_check_only() {
        let mut events = good();
        // The text is declared done before the content part was opened (sequence numbers stay
        // in place: only the order of the events is wrong).
        let (a, b) = (events[3], events[6]);
        (events[3].0, events[3].2) = (b.0, b.2);
        (events[6].0, events[6].2) = (a.0, a.2);
        let events = events_of(&sse(&events));
        let error = check_order(&events).unwrap_err();
        assert!(
            error.contains("event 4 is response.output_text.done"),
            "{error}"
        );
        assert_eq!(check_sequence(&events), Ok(()));
        // No in_progress after created.
        let mut missing = good();
        missing.remove(1);
        let error = check_order(&events_of(&sse(&missing))).unwrap_err();
        assert!(
            error.contains("response.in_progress must follow"),
            "{error}"
        );
    }

    #[test]
    fn duplicate_sequence_numbers_fail_the_sequence_check_only() {
        let mut events = good();
        events[5].1 = 4;
        let events = events_of(&sse(&events));
        let error = check_sequence(&events).unwrap_err();
        assert!(error.contains("sequence_number 4 after 4"), "{error}");
        assert_eq!(check_order(&events), Ok(()));
    }

    #[test]
    fn deltas_that_do_not_add_up_and_a_missing_terminal_event_fail() {
        let mut events = good();
        events[6].2 = r#","text":"Help""#;
        let error = check_order(&events_of(&sse(&events))).unwrap_err();
        assert!(error.contains("add up to \"Hello\""), "{error}");
        let mut events = good();
        events.pop();
        let error = check_order(&events_of(&sse(&events))).unwrap_err();
        assert!(error.contains("without a terminal event"), "{error}");
    }

    #[test]
    fn an_event_name_that_contradicts_its_type_fails() {
        let stream = parse(b"event: response.completed\ndata: {\"type\":\"response.created\"}\n\n");
        assert!(response_events(&stream).unwrap_err().contains("named"));
    }

    const CHUNK: &str = r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#;

    #[test]
    fn a_chat_stream_without_done_fails_the_done_check_only() {
        let bytes = format!("data: {CHUNK}\n\ndata: {CHUNK}\n\n");
        let stream = parse(bytes.as_bytes());
        assert!(stream.problems.is_empty());
        assert_eq!(chat_chunks(&stream).map(|c| c.len()), Ok(2));
        assert!(
            chat_done(&stream)
                .unwrap_err()
                .contains("no `data: [DONE]`")
        );
        let bytes = format!("data: {CHUNK}\n\ndata: [DONE]\n\n");
        assert_eq!(chat_done(&parse(bytes.as_bytes())), Ok(()));
        let bytes = format!("data: [DONE]\n\ndata: {CHUNK}\n\n");
        assert!(
            chat_done(&parse(bytes.as_bytes()))
                .unwrap_err()
                .contains("events follow it")
        );
    }

    #[test]
    fn chat_chunks_must_share_one_id_and_be_chunks() {
        let other = CHUNK.replace("\"c1\"", "\"c2\"");
        let bytes = format!("data: {CHUNK}\n\ndata: {other}\n\ndata: [DONE]\n\n");
        assert!(
            chat_chunks(&parse(bytes.as_bytes()))
                .unwrap_err()
                .contains("differs")
        );
        let bytes = "data: {\"error\":{\"message\":\"boom\"}}\n\ndata: [DONE]\n\n";
        assert!(
            chat_chunks(&parse(bytes.as_bytes()))
                .unwrap_err()
                .contains("boom")
        );
    }
}
