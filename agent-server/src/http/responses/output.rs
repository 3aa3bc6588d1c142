//! The response object (`"object": "response"`) for what a turn produced: the builtin model's
//! reply or an upstream's completion, as output items, `output_text`, `usage` and `status`.
//!
//! Remote MCP tools' work comes first, as OpenAI orders it: an `mcp_list_tools` item per server
//! (`server_label`, `tools`: `name`, `description`, `input_schema`, `annotations`; `error` when it
//! could not be listed), then an `mcp_call` item per call (`server_label`, `name`, `arguments`,
//! `output`, `error`, `status` `completed` or `failed`), then the answer's message and function
//! calls. The request's `mcp` tools are echoed without their `headers` and `authorization`.

use chrono::{DateTime, Utc};
use protocol::openai::responses::{ResponseCreateRequest, ResponseTool, item_type, tool_type};
use protocol::openai::{ChatCompletion, FinishReason, ToolCall, Usage};
use serde_json::{Value, json};

use super::input::new_id;
use crate::llm::ModelReply;
use crate::mcp::ToolEvent;

/// What the model answered, whichever way it came.
#[derive(Debug, Clone, Default)]
pub(crate) struct Answer {
    /// Output items before the answer's own: remote MCP tools' listings and calls, in order.
    pub items: Vec<Value>,
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    /// The reply was cut at `max_output_tokens`.
    pub truncated: bool,
}

impl Answer {
    pub(crate) fn from_reply(reply: ModelReply) -> Self {
        Self {
            items: Vec::new(),
            truncated: reply.finish_reason == FinishReason::Length,
            text: reply.text,
            tool_calls: reply.tool_calls,
            usage: Some(reply.usage),
        }
    }

    pub(crate) fn from_completion(completion: ChatCompletion) -> Self {
        let Some(choice) = completion.choices.into_iter().next() else {
            return Self {
                usage: completion.usage,
                ..Self::default()
            };
        };
        let text = choice.message.text_content().unwrap_or_default();
        Self {
            items: Vec::new(),
            text,
            tool_calls: choice.message.tool_calls.unwrap_or_default(),
            usage: completion.usage,
            truncated: choice.finish_reason == Some(FinishReason::Length),
        }
    }
}

/// The fixed parts of one response: known before the model answers, so a stream can send them
/// in `response.created`.
#[derive(Debug, Clone)]
pub(crate) struct Head {
    pub id: String,
    pub model: String,
    pub created_at: DateTime<Utc>,
    pub previous_response_id: Option<String>,
    pub conversation: Option<String>,
    pub store: bool,
    pub request: ResponseCreateRequest,
}

impl Head {
    /// The response object with `output` and `status`; `usage` when known.
    pub(crate) fn object(&self, status: &str, output: Vec<Value>, usage: Option<&Usage>) -> Value {
        let r = &self.request;
        let output_text: String = output
            .iter()
            .filter(|i| i["type"] == "message")
            .flat_map(|i| i["content"].as_array().cloned().unwrap_or_default())
            .filter_map(|p| p["text"].as_str().map(str::to_owned))
            .collect();
        let extra = |name: &str, default: Value| r.extra.get(name).cloned().unwrap_or(default);
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created_at.timestamp(),
            "status": status,
            "error": null,
            "incomplete_details": if status == "incomplete" { json!({"reason": "max_output_tokens"}) } else { Value::Null },
            "instructions": r.instructions,
            "max_output_tokens": r.max_output_tokens,
            "model": self.model,
            "output": output,
            "output_text": output_text,
            "parallel_tool_calls": extra("parallel_tool_calls", json!(true)),
            "previous_response_id": self.previous_response_id,
            "conversation": self.conversation.as_ref().map(|id| json!({"id": id})),
            "store": self.store,
            "temperature": r.temperature,
            "tool_choice": r.tool_choice.clone().unwrap_or(json!("auto")),
            "tools": echoed_tools(r.tools.as_deref().unwrap_or_default()),
            "top_p": extra("top_p", Value::Null),
            "text": extra("text", json!({"format": {"type": "text"}})),
            "truncation": extra("truncation", json!("disabled")),
            "metadata": extra("metadata", json!({})),
            "user": extra("user", Value::Null),
            "usage": usage.map(response_usage),
        })
    }

    /// The finished response for `answer`.
    pub(crate) fn finished(&self, answer: &Answer) -> Value {
        let status = if answer.truncated {
            "incomplete"
        } else {
            "completed"
        };
        self.object(status, output_items(answer), answer.usage.as_ref())
    }
}

/// `usage` in the Responses shape.
pub(crate) fn response_usage(usage: &Usage) -> Value {
    let cached = usage
        .prompt_tokens_details
        .as_ref()
        .and_then(|d| d["cached_tokens"].as_u64())
        .unwrap_or(0);
    let reasoning = usage
        .completion_tokens_details
        .as_ref()
        .and_then(|d| d["reasoning_tokens"].as_u64())
        .unwrap_or(0);
    json!({
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": usage.total_tokens,
    })
}

/// An assistant message item holding `text`.
pub(crate) fn message_item(id: &str, text: &str, status: &str) -> Value {
    json!({
        "type": "message",
        "id": id,
        "status": status,
        "role": "assistant",
        "content": [text_part(text)],
    })
}

pub(crate) fn text_part(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": []})
}

/// A `function_call` item; a call without an id gets one, as the item must pair with its output.
pub(crate) fn call_item(id: &str, call: &ToolCall, status: &str) -> Value {
    let call_id = if call.id.is_empty() {
        new_id("call")
    } else {
        call.id.clone()
    };
    json!({
        "type": "function_call",
        "id": id,
        "call_id": call_id,
        "name": call.function.name,
        "arguments": call.function.arguments,
        "status": status,
    })
}

/// The request's tools as the response shows them: an `mcp` tool without its `headers` and
/// `authorization`, which may hold credentials.
fn echoed_tools(tools: &[ResponseTool]) -> Vec<ResponseTool> {
    tools
        .iter()
        .map(|tool| {
            let mut tool = tool.clone();
            if tool.is(tool_type::MCP) {
                tool.extra.remove("headers");
                tool.extra.remove("authorization");
            }
            tool
        })
        .collect()
}

/// Remote MCP tools' listings and calls as output items.
pub(crate) fn tool_items(events: &[ToolEvent]) -> Vec<Value> {
    events
        .iter()
        .map(|event| match event {
            ToolEvent::Listed(listing) => {
                let tools: Vec<Value> = listing
                    .tools
                    .iter()
                    .map(|tool| {
                        json!({
                            "name": tool.name,
                            "description": tool.description,
                            "input_schema": tool.input_schema,
                            "annotations": tool.annotations,
                        })
                    })
                    .collect();
                let mut item = json!({
                    "id": new_id("mcpl"),
                    "type": item_type::MCP_LIST_TOOLS,
                    "server_label": listing.server_label,
                    "tools": tools,
                });
                if let Some(error) = &listing.error {
                    item["error"] = json!(error);
                }
                item
            }
            ToolEvent::Called(call) => json!({
                "id": new_id("mcp"),
                "type": item_type::MCP_CALL,
                "server_label": call.server_label,
                "name": call.name,
                "arguments": call.arguments,
                "output": call.output,
                "error": call.error,
                "status": if call.error.is_some() { "failed" } else { "completed" },
            }),
        })
        .collect()
}

/// The output items of an answer: remote MCP tools' items, its text as a message (also an empty
/// one when it calls no function), then its function calls.
pub(crate) fn output_items(answer: &Answer) -> Vec<Value> {
    let mut items = answer.items.clone();
    if !answer.text.is_empty() || answer.tool_calls.is_empty() {
        items.push(message_item(&new_id("msg"), &answer.text, "completed"));
    }
    items.extend(
        answer
            .tool_calls
            .iter()
            .map(|call| call_item(&new_id("fc"), call, "completed")),
    );
    items
}
