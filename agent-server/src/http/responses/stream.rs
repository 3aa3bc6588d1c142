//! Streaming a response as OpenAI's semantic events, each with its `sequence_number`:
//! `response.created`, `response.in_progress`, then per output item `response.output_item.added`,
//! for a message `response.content_part.added`, `response.output_text.delta`...,
//! `response.output_text.done`, `response.content_part.done`, for a function call
//! `response.function_call_arguments.delta` and `.done`, then `response.output_item.done` (a
//! remote MCP tool's listing or call, finished before the answer, is added and done at once);
//! last `response.completed` (or `response.incomplete` when cut at `max_output_tokens`, or
//! `response.failed`).
//!
//! The terminal event goes out only after the turn is committed and the response stored (the
//! caller's job, between [`Events::close_items`] and [`Events::finish`]).

use bytes::Bytes;
use protocol::openai::ChatCompletionChunk;
use protocol::openai::responses::{event, item_type};
use serde_json::{Value, json};

use super::input::new_id;
use super::output::{Answer, Head, message_item, text_part};
use crate::error::ApiError;

/// The events of one response, written as server-sent events.
pub(crate) struct Events {
    head: Head,
    sequence: i64,
    body: Vec<u8>,
    /// Finished output items.
    output: Vec<Value>,
    open: Open,
    answer: Answer,
}

/// The output item being streamed.
enum Open {
    None,
    Message { id: String, text: String },
    Call { index: u32, item: Value },
}

impl Events {
    /// Starts with `response.created` and `response.in_progress`.
    pub(crate) fn start(head: Head) -> Self {
        let mut events = Self {
            head,
            sequence: 0,
            body: Vec::new(),
            output: Vec::new(),
            open: Open::None,
            answer: Answer::default(),
        };
        let response = events.head.object("in_progress", Vec::new(), None);
        events.push(event::CREATED, json!({"response": response}));
        let response = events.head.object("in_progress", Vec::new(), None);
        events.push(event::IN_PROGRESS, json!({"response": response}));
        events
    }

    fn push(&mut self, kind: &str, mut fields: Value) {
        fields["type"] = json!(kind);
        fields["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        self.body.extend_from_slice(b"event: ");
        self.body.extend_from_slice(kind.as_bytes());
        self.body.extend_from_slice(b"\ndata: ");
        serde_json::to_writer(&mut self.body, &fields).expect("events serialise");
        self.body.extend_from_slice(b"\n\n");
    }

    /// The events written since the last take.
    pub(crate) fn take(&mut self) -> Bytes {
        Bytes::from(std::mem::take(&mut self.body))
    }

    fn output_index(&self) -> usize {
        self.output.len()
    }

    /// Text of the answer's message, as it arrives.
    pub(crate) fn text(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        if !matches!(self.open, Open::Message { .. }) {
            self.close_open();
            let id = new_id("msg");
            let index = self.output_index();
            let mut item = message_item(&id, "", "in_progress");
            item["content"] = json!([]);
            self.push(
                event::OUTPUT_ITEM_ADDED,
                json!({"output_index": index, "item": item}),
            );
            self.push(
                event::CONTENT_PART_ADDED,
                json!({"item_id": id, "output_index": index, "content_index": 0, "part": text_part("")}),
            );
            self.open = Open::Message {
                id,
                text: String::new(),
            };
        }
        let index = self.output_index();
        if let Open::Message { id, text } = &mut self.open {
            text.push_str(delta);
            let id = id.clone();
            self.push(
                event::OUTPUT_TEXT_DELTA,
                json!({"item_id": id, "output_index": index, "content_index": 0, "delta": delta, "logprobs": []}),
            );
        }
        self.answer.text.push_str(delta);
    }

    /// A piece of the function call numbered `index` (a new number starts a new call).
    pub(crate) fn call(
        &mut self,
        index: u32,
        call_id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
    ) {
        let same = matches!(&self.open, Open::Call { index: open, .. } if *open == index);
        if !same {
            self.close_open();
            let mut item = json!({
                "type": "function_call",
                "id": new_id("fc"),
                "call_id": call_id.filter(|c| !c.is_empty()).map_or_else(|| new_id("call"), str::to_owned),
                "name": name.unwrap_or_default(),
                "arguments": "",
                "status": "in_progress",
            });
            let output_index = self.output_index();
            self.push(
                event::OUTPUT_ITEM_ADDED,
                json!({"output_index": output_index, "item": item.clone()}),
            );
            item["status"] = json!("in_progress");
            self.open = Open::Call { index, item };
        }
        if arguments.is_empty() {
            return;
        }
        let output_index = self.output_index();
        if let Open::Call { item, .. } = &mut self.open {
            let joined = format!(
                "{}{arguments}",
                item["arguments"].as_str().unwrap_or_default()
            );
            item["arguments"] = json!(joined);
            let id = item["id"].clone();
            self.push(
                event::FUNCTION_CALL_ARGUMENTS_DELTA,
                json!({"item_id": id, "output_index": output_index, "delta": arguments}),
            );
        }
    }

    fn close_open(&mut self) {
        let index = self.output_index();
        match std::mem::replace(&mut self.open, Open::None) {
            Open::None => {}
            Open::Message { id, text } => {
                self.push(
                    event::OUTPUT_TEXT_DONE,
                    json!({"item_id": id, "output_index": index, "content_index": 0, "text": text, "logprobs": []}),
                );
                self.push(
                    event::CONTENT_PART_DONE,
                    json!({"item_id": id, "output_index": index, "content_index": 0, "part": text_part(&text)}),
                );
                let item = message_item(&id, &text, "completed");
                self.push(
                    event::OUTPUT_ITEM_DONE,
                    json!({"output_index": index, "item": item.clone()}),
                );
                self.output.push(item);
            }
            Open::Call { mut item, .. } => {
                self.push(
                    event::FUNCTION_CALL_ARGUMENTS_DONE,
                    json!({"item_id": item["id"], "output_index": index, "arguments": item["arguments"]}),
                );
                item["status"] = json!("completed");
                self.push(
                    event::OUTPUT_ITEM_DONE,
                    json!({"output_index": index, "item": item.clone()}),
                );
                self.output.push(item);
            }
        }
    }

    /// One chunk of an upstream's stream.
    pub(crate) fn chunk(&mut self, chunk: &ChatCompletionChunk) {
        for choice in chunk.choices.iter().filter(|c| c.index == 0) {
            if let Some(text) = &choice.delta.content {
                self.text(text);
            }
            for call in choice.delta.tool_calls.iter().flatten() {
                let function = call.function.as_ref();
                self.call(
                    call.index,
                    call.id.as_deref(),
                    function.and_then(|f| f.name.as_deref()),
                    function
                        .and_then(|f| f.arguments.as_deref())
                        .unwrap_or_default(),
                );
            }
            if choice.finish_reason == Some(protocol::openai::FinishReason::Length) {
                self.answer.truncated = true;
            }
        }
        if let Some(usage) = &chunk.usage {
            self.answer.usage = Some(usage.clone());
        }
    }

    /// A finished item (a remote MCP tool's listing or call): added as it began, then done.
    pub(crate) fn item(&mut self, item: &Value) {
        self.close_open();
        let index = self.output_index();
        let mut begun = item.clone();
        if item["type"] == item_type::MCP_CALL {
            begun["status"] = json!("in_progress");
            begun["output"] = Value::Null;
            begun["error"] = Value::Null;
        } else if item["type"] == item_type::MCP_LIST_TOOLS {
            begun["tools"] = json!([]);
            if let Some(fields) = begun.as_object_mut() {
                fields.remove("error");
            }
        }
        self.push(
            event::OUTPUT_ITEM_ADDED,
            json!({"output_index": index, "item": begun}),
        );
        self.push(
            event::OUTPUT_ITEM_DONE,
            json!({"output_index": index, "item": item}),
        );
        self.output.push(item.clone());
    }

    /// A whole answer (the builtin model's, or one answered in rounds with remote MCP tools,
    /// already stored): its tools' items, then its text as deltas of a few words each.
    pub(crate) fn answer(&mut self, answer: &Answer) {
        for item in &answer.items {
            self.item(item);
        }
        for piece in crate::http::chat::content_pieces(&answer.text) {
            self.text(&piece);
        }
        for (index, call) in (0_u32..).zip(&answer.tool_calls) {
            self.call(
                index,
                Some(&call.id),
                Some(&call.function.name),
                &call.function.arguments,
            );
        }
        self.answer.truncated = answer.truncated;
        self.answer.usage.clone_from(&answer.usage);
    }

    /// Closes the last item (an answer with neither a message nor a function call gets an empty
    /// message) and returns the finished response object, to store before [`Events::finish`]
    /// sends it.
    pub(crate) fn close_items(&mut self) -> Value {
        self.close_open();
        let answered = self.output.iter().any(|item| {
            item["type"] == item_type::MESSAGE || item["type"] == item_type::FUNCTION_CALL
        });
        if !answered {
            let item = message_item(&new_id("msg"), "", "completed");
            let index = self.output_index();
            self.push(
                event::OUTPUT_ITEM_ADDED,
                json!({"output_index": index, "item": item.clone()}),
            );
            self.push(
                event::OUTPUT_ITEM_DONE,
                json!({"output_index": index, "item": item.clone()}),
            );
            self.output.push(item);
        }
        let status = if self.answer.truncated {
            "incomplete"
        } else {
            "completed"
        };
        self.head
            .object(status, self.output.clone(), self.answer.usage.as_ref())
    }

    /// The terminal event for the finished (and stored) response.
    pub(crate) fn finish(&mut self, response: Value) {
        let kind = if response["status"] == "incomplete" {
            event::INCOMPLETE
        } else {
            event::COMPLETED
        };
        self.push(kind, json!({"response": response}));
    }

    /// `response.failed`: nothing more follows, and nothing was stored.
    pub(crate) fn fail(&mut self, error: &ApiError) {
        tracing::error!(error = %error, "a streamed response failed");
        let body = error.body().error;
        let mut response = self.head.object("failed", self.output.clone(), None);
        response["error"] = json!({"code": body.code, "message": body.message});
        self.push(event::FAILED, json!({"response": response}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::openai::responses::ResponseCreateRequest;

    fn head() -> Head {
        Head {
            id: "resp_1".into(),
            model: "m".into(),
            created_at: chrono::Utc::now(),
            previous_response_id: None,
            conversation: None,
            store: true,
            request: ResponseCreateRequest::default(),
        }
    }

    fn kinds(body: &[u8]) -> Vec<String> {
        String::from_utf8_lossy(body)
            .lines()
            .filter_map(|l| l.strip_prefix("event: ").map(str::to_owned))
            .collect()
    }

    #[test]
    fn text_then_a_call_stream_in_openais_order() {
        let mut events = Events::start(head());
        events.text("Hello ");
        events.text("there");
        events.call(0, Some("call_1"), Some("f"), "{\"a\"");
        events.call(0, None, None, ":1}");
        let response = events.close_items();
        assert_eq!(response["output_text"], "Hello there");
        assert_eq!(response["output"][1]["arguments"], "{\"a\":1}");
        events.finish(response);
        let body = events.take();
        assert_eq!(
            kinds(&body),
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        let numbers: Vec<i64> = String::from_utf8_lossy(&body)
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| {
                serde_json::from_str::<Value>(d).unwrap()["sequence_number"]
                    .as_i64()
                    .unwrap()
            })
            .collect();
        assert_eq!(numbers, (0..15).collect::<Vec<_>>());
    }
}
