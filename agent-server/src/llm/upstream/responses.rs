//! A Responses turn sent to an upstream that serves the Responses API, and its answer read back.
//!
//! The request is the client's ([`ResponsesTurn`]) with the agent's prompt as `instructions` and
//! `input` ([`crate::llm::prompt::responses_input`]): its tools, tool_choice, temperature,
//! max_output_tokens, metadata and unknown fields go unchanged; `store` is always `false` (the
//! state is agent-server's), and `previous_response_id` and `conversation` never leave.
//!
//! The answer comes back in the shapes every upstream answer takes inside agent-server, a chat
//! completion or chat chunks, so that the agent commits it and the HTTP layer encodes it (with its
//! own ids and sequence numbers) exactly as it does a Chat Completions upstream's. What carries
//! over: the assistant's text, function calls (call id, name, arguments), usage (with cached and
//! reasoning token counts) and whether the reply was cut short (`incomplete`); other output items
//! (reasoning, refusals, hosted tools' calls) and annotations do not.

use protocol::openai::responses::{
    Item, Response, ResponseCreateRequest, ResponseInput, ResponseStreamEvent, ResponseUsage,
    event, item_type,
};
use protocol::openai::{
    ChatCompletion, ChatCompletionChunk, ChatMessage, Choice, ChunkChoice, Delta, FinishReason,
    FunctionCall, FunctionCallDelta, ToolCall, ToolCallDelta, Usage,
};

use super::{Progress, StreamDecoder, UpstreamConfig};
use crate::llm::{LlmError, Prompt, ResponsesTurn, StreamedChunk, prompt};

/// The upstream Responses request for `prompt`, a turn that came as `turn`.
///
/// Built field by field: a field added to the protocol type fails to compile here until it is
/// decided whether it goes upstream.
pub fn request(
    config: &UpstreamConfig,
    prompt: &Prompt<'_>,
    turn: &ResponsesTurn,
    stream: bool,
) -> ResponseCreateRequest {
    let ResponseCreateRequest {
        model,
        input: _,
        instructions: _,
        tools,
        tool_choice,
        temperature,
        max_output_tokens,
        store: _,
        previous_response_id: _,
        stream: _,
        extra,
    } = &turn.request;
    let (instructions, input) = prompt::responses_input(&config.system_prompt, prompt, turn);
    let mut extra = extra.clone();
    // agent-server's own state, resolved into `input`.
    extra.remove("conversation");
    ResponseCreateRequest {
        model: config
            .model
            .as_ref()
            .or(model.as_ref())
            .filter(|m| !m.is_empty())
            .cloned(),
        input: Some(ResponseInput::Items(input)),
        instructions: Some(instructions),
        tools: tools.clone(),
        tool_choice: tool_choice.clone(),
        temperature: *temperature,
        max_output_tokens: *max_output_tokens,
        store: Some(false),
        previous_response_id: None,
        stream: stream.then_some(true),
        extra,
    }
}

/// A whole Responses answer as a chat completion.
pub fn completion(body: &[u8]) -> Result<ChatCompletion, LlmError> {
    let response: Response = serde_json::from_slice(body).map_err(|e| LlmError::BadResponse {
        reason: format!(
            "{e}; the body starts with {:?}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        ),
    })?;
    if response.status.as_deref() == Some("failed") {
        return Err(failed(&response));
    }
    let calls: Vec<ToolCall> = response
        .function_calls()
        .map(|item| ToolCall {
            id: item.call_id.clone().unwrap_or_default(),
            kind: "function".into(),
            function: FunctionCall {
                name: item.name.clone().unwrap_or_default(),
                arguments: item.arguments.clone().unwrap_or_default(),
            },
        })
        .collect();
    let mut message = ChatMessage::assistant(response.output_text());
    let finish_reason = finish_reason(&response, !calls.is_empty());
    if !calls.is_empty() {
        message.tool_calls = Some(calls);
    }
    Ok(ChatCompletion {
        id: response.id.clone(),
        object: "chat.completion".into(),
        created: created(&response),
        model: response.model.clone().unwrap_or_default(),
        choices: vec![Choice {
            index: 0,
            message,
            finish_reason: Some(finish_reason),
            logprobs: None,
        }],
        usage: response.usage.as_ref().map(usage),
        system_fingerprint: None,
        extra: Default::default(),
    })
}

fn failed(response: &Response) -> LlmError {
    let message = response
        .error
        .as_ref()
        .and_then(|e| e["message"].as_str())
        .unwrap_or("the upstream response failed without saying why");
    LlmError::Upstream {
        reason: message.to_owned(),
    }
}

fn created(response: &Response) -> i64 {
    // Unix seconds; the fraction some servers send is dropped.
    response.created_at.map_or(0, |t| t as i64)
}

fn finish_reason(response: &Response, called: bool) -> FinishReason {
    let reason = response
        .incomplete_details
        .as_ref()
        .and_then(|d| d.reason.as_deref());
    match (response.status.as_deref(), reason) {
        (Some("incomplete"), Some("content_filter")) => FinishReason::ContentFilter,
        (Some("incomplete"), _) => FinishReason::Length,
        _ if called => FinishReason::ToolCalls,
        _ => FinishReason::Stop,
    }
}

/// Responses usage in the chat shape; the details objects keep their counts
/// (`cached_tokens`, `reasoning_tokens`), which `http::responses::output` reads back.
fn usage(usage: &ResponseUsage) -> Usage {
    Usage {
        prompt_tokens: usage.input_tokens,
        completion_tokens: usage.output_tokens,
        total_tokens: usage.total_tokens,
        prompt_tokens_details: usage.input_tokens_details.clone(),
        completion_tokens_details: usage.output_tokens_details.clone(),
    }
}

/// Reads a streamed Responses answer's semantic events as chat chunks: text deltas as content,
/// a function call's item and argument deltas as tool-call deltas (numbered in the order the
/// calls come), and the terminal event as the finish chunk and the usage chunk.
///
/// Servers differ in what they stream: some send an item's text or arguments only in its `.done`
/// event, or only in the terminal event's `output`. Whatever of an item was not yet passed on is
/// passed on from those, so nothing is lost and nothing is doubled.
#[derive(Debug, Default)]
pub struct EventDecoder {
    id: String,
    model: String,
    created: i64,
    /// Output items passed on so far, by `output_index`.
    items: Vec<Passed>,
    /// Function calls so far (the next call's tool index).
    calls: u32,
}

/// What was passed on of one output item.
#[derive(Debug, Clone, Copy, Default)]
struct Passed {
    /// Its index among the function calls, for a call.
    call: Option<u32>,
    /// Some of its text or arguments.
    content: bool,
}

impl StreamDecoder for EventDecoder {
    fn decode(&mut self, data: String, out: &mut Vec<StreamedChunk>) -> Result<Progress, LlmError> {
        if data.is_empty() {
            return Ok(Progress::More);
        }
        if data == "[DONE]" {
            // Past the terminal event the stream is drained, not decoded: this one has none.
            return Err(LlmError::BadResponse {
                reason: "the event stream ended without response.completed".into(),
            });
        }
        let event: ResponseStreamEvent =
            serde_json::from_str(&data).map_err(|e| LlmError::BadResponse {
                reason: format!("an event is not a Responses stream event ({e}): {data}"),
            })?;
        let index = event.output_index.unwrap_or(0) as usize;
        match event.kind.as_str() {
            event::CREATED | event::IN_PROGRESS => {
                if let Some(response) = &event.response {
                    self.id.clone_from(&response.id);
                    self.model = response.model.clone().unwrap_or_default();
                    self.created = created(response);
                }
            }
            event::OUTPUT_TEXT_DELTA => {
                self.text(index, event.delta.unwrap_or_default(), out);
            }
            event::OUTPUT_TEXT_DONE if !self.passed(index).content => {
                self.text(index, event.text.unwrap_or_default(), out);
            }
            event::OUTPUT_ITEM_ADDED | event::OUTPUT_ITEM_DONE => {
                if let Some(item) = &event.item {
                    self.item(index, item, out);
                }
            }
            event::FUNCTION_CALL_ARGUMENTS_DELTA => {
                self.arguments(index, event.delta.unwrap_or_default(), out);
            }
            event::FUNCTION_CALL_ARGUMENTS_DONE if !self.passed(index).content => {
                self.arguments(index, event.arguments.unwrap_or_default(), out);
            }
            event::COMPLETED | event::INCOMPLETE => {
                let Some(response) = event.response else {
                    return Err(LlmError::BadResponse {
                        reason: format!("{} carries no response", event.kind),
                    });
                };
                for (index, item) in response.output.iter().enumerate() {
                    self.item(index, item, out);
                }
                let finish = finish_reason(&response, self.calls > 0);
                let chunk = self.chunk(Delta::default(), Some(finish));
                out.push(streamed(chunk));
                if let Some(u) = &response.usage {
                    let mut chunk = self.chunk(Delta::default(), None);
                    chunk.choices.clear();
                    chunk.usage = Some(usage(u));
                    out.push(streamed(chunk));
                }
                return Ok(Progress::Last);
            }
            event::FAILED => {
                let response = event.response.as_ref();
                return Err(response.map_or_else(
                    || LlmError::Upstream {
                        reason: "the upstream response failed".into(),
                    },
                    failed,
                ));
            }
            event::ERROR => {
                let message = event.extra.get("message").and_then(|m| m.as_str());
                return Err(LlmError::Upstream {
                    reason: message
                        .unwrap_or("the upstream stream reported an error")
                        .to_owned(),
                });
            }
            // Lifecycle and part events, reasoning and refusals: nothing the reply carries.
            _ => {}
        }
        Ok(Progress::More)
    }

    fn unfinished(&self) -> &'static str {
        "the event stream ended before its terminal event (no response.completed)"
    }
}

impl EventDecoder {
    fn passed(&mut self, index: usize) -> &mut Passed {
        if self.items.len() <= index {
            self.items.resize(index + 1, Passed::default());
        }
        &mut self.items[index]
    }

    fn chunk(&self, delta: Delta, finish_reason: Option<FinishReason>) -> ChatCompletionChunk {
        ChatCompletionChunk {
            id: self.id.clone(),
            object: "chat.completion.chunk".into(),
            created: self.created,
            model: self.model.clone(),
            choices: vec![ChunkChoice {
                index: 0,
                delta,
                finish_reason,
                logprobs: None,
            }],
            usage: None,
            system_fingerprint: None,
            extra: Default::default(),
        }
    }

    fn text(&mut self, index: usize, text: String, out: &mut Vec<StreamedChunk>) {
        if text.is_empty() {
            return;
        }
        self.passed(index).content = true;
        let delta = Delta {
            content: Some(text),
            ..Delta::default()
        };
        out.push(streamed(self.chunk(delta, None)));
    }

    /// A function call's opening (its call id and name), once per call.
    fn call(&mut self, index: usize, item: &Item, out: &mut Vec<StreamedChunk>) -> u32 {
        if let Some(call) = self.passed(index).call {
            return call;
        }
        let call = self.calls;
        self.calls += 1;
        self.passed(index).call = Some(call);
        let delta = tool_delta(
            call,
            FunctionCallDelta {
                name: item.name.clone(),
                arguments: None,
            },
            item.call_id.clone(),
        );
        out.push(streamed(self.chunk(delta, None)));
        call
    }

    fn arguments(&mut self, index: usize, arguments: String, out: &mut Vec<StreamedChunk>) {
        if arguments.is_empty() {
            return;
        }
        // An argument delta before its item (not seen from any server, but cheap to allow).
        let call = match self.passed(index).call {
            Some(call) => call,
            None => self.call(index, &Item::default(), out),
        };
        self.passed(index).content = true;
        let delta = tool_delta(
            call,
            FunctionCallDelta {
                name: None,
                arguments: Some(arguments),
            },
            None,
        );
        out.push(streamed(self.chunk(delta, None)));
    }

    /// An output item as `.added`, `.done` or the terminal event carries it: what of it was not
    /// passed on yet.
    fn item(&mut self, index: usize, item: &Item, out: &mut Vec<StreamedChunk>) {
        if item.is(item_type::FUNCTION_CALL) {
            self.call(index, item, out);
            if !self.passed(index).content {
                self.arguments(index, item.arguments.clone().unwrap_or_default(), out);
            }
        } else if item.is(item_type::MESSAGE) && !self.passed(index).content {
            self.text(index, item.text().unwrap_or_default(), out);
        }
    }
}

fn tool_delta(call: u32, function: FunctionCallDelta, id: Option<String>) -> Delta {
    Delta {
        tool_calls: Some(vec![ToolCallDelta {
            index: call,
            kind: id.is_some().then(|| "function".to_owned()),
            id,
            function: Some(function),
            extra: Default::default(),
        }]),
        ..Delta::default()
    }
}

fn streamed(chunk: ChatCompletionChunk) -> StreamedChunk {
    let data = serde_json::to_string(&chunk).expect("chunks serialise");
    StreamedChunk { chunk, data }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn decode_all(events: &[serde_json::Value]) -> (Vec<ChatCompletionChunk>, Progress) {
        let mut decoder = EventDecoder::default();
        let mut out = Vec::new();
        let mut progress = Progress::More;
        for event in events {
            progress = decoder.decode(event.to_string(), &mut out).unwrap();
        }
        (out.into_iter().map(|s| s.chunk).collect(), progress)
    }

    fn text_of(chunks: &[ChatCompletionChunk]) -> String {
        chunks
            .iter()
            .flat_map(|c| &c.choices)
            .filter_map(|c| c.delta.content.as_deref())
            .collect()
    }

    #[test]
    fn text_deltas_a_call_and_the_terminal_event_become_chunks() {
        let (chunks, progress) = decode_all(&[
            json!({"type": "response.created", "response": {"id": "resp_up", "model": "m", "created_at": 5, "output": []}}),
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "role": "assistant", "content": []}}),
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Hel"}),
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": "lo"}),
            json!({"type": "response.output_text.done", "output_index": 0, "text": "Hello"}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello"}]}}),
            json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "call_id": "call_9", "name": "f", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "{\"a\""}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": ":1}"}),
            json!({"type": "response.function_call_arguments.done", "output_index": 1, "arguments": "{\"a\":1}"}),
            json!({"type": "response.completed", "response": {"id": "resp_up", "status": "completed", "output": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello"}]},
                {"type": "function_call", "call_id": "call_9", "name": "f", "arguments": "{\"a\":1}"}],
                "usage": {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10,
                    "input_tokens_details": {"cached_tokens": 2}}}}),
        ]);
        assert!(matches!(progress, Progress::Last));
        assert_eq!(text_of(&chunks), "Hello");
        let calls: Vec<&ToolCallDelta> = chunks
            .iter()
            .flat_map(|c| &c.choices)
            .flat_map(|c| c.delta.tool_calls.iter().flatten())
            .collect();
        assert_eq!(calls[0].id.as_deref(), Some("call_9"));
        let arguments: String = calls
            .iter()
            .filter_map(|c| c.function.as_ref()?.arguments.as_deref())
            .collect();
        assert_eq!(arguments, "{\"a\":1}");
        assert!(calls.iter().all(|c| c.index == 0));
        let finish = &chunks[chunks.len() - 2];
        assert_eq!(
            finish.choices[0].finish_reason,
            Some(FinishReason::ToolCalls)
        );
        let usage = chunks.last().unwrap().usage.as_ref().unwrap();
        assert_eq!((usage.prompt_tokens, usage.completion_tokens), (7, 3));
        assert_eq!(
            usage.prompt_tokens_details,
            Some(json!({"cached_tokens": 2}))
        );
        assert!(chunks.iter().all(|c| c.id == "resp_up" && c.created == 5));
    }

    #[test]
    fn text_sent_only_in_done_or_terminal_events_is_passed_on_once() {
        let (chunks, _) = decode_all(&[
            json!({"type": "response.output_text.done", "output_index": 0, "text": "Only done."}),
            json!({"type": "response.completed", "response": {"id": "r", "status": "completed", "output": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Only done."}]},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": " And more."}]}]}}),
        ]);
        assert_eq!(text_of(&chunks), "Only done. And more.");
    }

    #[test]
    fn an_incomplete_response_finishes_as_length_and_failures_are_errors() {
        let (chunks, _) = decode_all(&[json!({"type": "response.incomplete", "response": {
            "id": "r", "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
            "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Cut"}]}]}})]);
        assert_eq!(
            chunks.last().unwrap().choices[0].finish_reason,
            Some(FinishReason::Length)
        );
        let mut decoder = EventDecoder::default();
        let failed = json!({"type": "response.failed", "response": {"id": "r", "status": "failed",
            "error": {"code": "server_error", "message": "overloaded"}, "output": []}});
        assert!(matches!(
            decoder.decode(failed.to_string(), &mut Vec::new()),
            Err(LlmError::Upstream { reason }) if reason == "overloaded"
        ));
        let error = json!({"type": "error", "code": "x", "message": "quota"});
        assert!(matches!(
            decoder.decode(error.to_string(), &mut Vec::new()),
            Err(LlmError::Upstream { reason }) if reason == "quota"
        ));
        assert!(matches!(
            decoder.decode("[DONE]".into(), &mut Vec::new()),
            Err(LlmError::BadResponse { .. })
        ));
        assert!(matches!(
            decoder.decode("<html>".into(), &mut Vec::new()),
            Err(LlmError::BadResponse { .. })
        ));
    }

    #[test]
    fn a_whole_response_becomes_a_completion() {
        let body = json!({"id": "resp_up", "object": "response", "created_at": 9, "status": "completed",
            "model": "m", "output": [
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi", "annotations": []}]},
                {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"}],
            "usage": {"input_tokens": 4, "output_tokens": 2, "total_tokens": 6,
                "output_tokens_details": {"reasoning_tokens": 1}}});
        let completion = completion(body.to_string().as_bytes()).unwrap();
        let choice = &completion.choices[0];
        assert_eq!(choice.message.text_content().as_deref(), Some("Hi"));
        assert_eq!(choice.message.tool_calls.as_ref().unwrap()[0].id, "call_1");
        assert_eq!(choice.finish_reason, Some(FinishReason::ToolCalls));
        let usage = completion.usage.unwrap();
        assert_eq!(
            usage.completion_tokens_details,
            Some(json!({"reasoning_tokens": 1}))
        );
        let failed =
            json!({"id": "r", "status": "failed", "error": {"message": "no"}, "output": []});
        assert!(matches!(
            super::completion(failed.to_string().as_bytes()),
            Err(LlmError::Upstream { reason }) if reason == "no"
        ));
        assert!(matches!(
            super::completion(b"not json"),
            Err(LlmError::BadResponse { .. })
        ));
    }
}
