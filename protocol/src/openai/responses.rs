//! OpenAI Responses API types (`POST /v1/responses`, its retrieval, input items and streaming
//! events), as the OpenAI API reference and the official SDK's types describe them.
//!
//! Lenient like the chat types: one [`Item`] struct serves every input and output item type (a
//! message, a `function_call`, a `function_call_output`, an `mcp_call`, types this crate does not
//! know), one [`ResponseTool`] every tool type (a function, a remote MCP server, others), the
//! `type` of items, tools, parts and events is kept as a string, and every field not modelled is
//! kept in `extra`. A receiver can then say precisely what it does not support instead of failing
//! to parse.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::Extra;

/// The streaming event types of a text response, in the order OpenAI sends them (deltas repeat),
/// plus the other terminal events and the function-call argument events.
pub mod event {
    pub const CREATED: &str = "response.created";
    pub const IN_PROGRESS: &str = "response.in_progress";
    pub const OUTPUT_ITEM_ADDED: &str = "response.output_item.added";
    pub const CONTENT_PART_ADDED: &str = "response.content_part.added";
    pub const OUTPUT_TEXT_DELTA: &str = "response.output_text.delta";
    pub const OUTPUT_TEXT_DONE: &str = "response.output_text.done";
    pub const CONTENT_PART_DONE: &str = "response.content_part.done";
    pub const OUTPUT_ITEM_DONE: &str = "response.output_item.done";
    pub const COMPLETED: &str = "response.completed";
    pub const INCOMPLETE: &str = "response.incomplete";
    pub const FAILED: &str = "response.failed";
    pub const FUNCTION_CALL_ARGUMENTS_DELTA: &str = "response.function_call_arguments.delta";
    pub const FUNCTION_CALL_ARGUMENTS_DONE: &str = "response.function_call_arguments.done";
    /// An error in the middle of a stream (`{"type": "error", "code", "message", "param"}`).
    pub const ERROR: &str = "error";
}

/// `POST /v1/responses` request body.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResponseCreateRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<ResponseInput>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ResponseTool>>,
    /// `"none" | "auto" | "required"` or `{"type": "function", "name": ...}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// Whether the response is kept for retrieval and chaining; OpenAI's default is `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_response_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `input`: a plain string (one user message) or a list of items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResponseInput {
    Text(String),
    Items(Vec<Item>),
}

/// Tool types this crate names.
pub mod tool_type {
    pub const FUNCTION: &str = "function";
    /// A remote MCP server ([`super::McpTool`]).
    pub const MCP: &str = "mcp";
}

/// A tool in a Responses request, of any type. A function tool is flat (`{"type": "function",
/// "name", "parameters"}`, unlike Chat Completions' `{"type": "function", "function": {...}}`);
/// a remote MCP server (`{"type": "mcp", "server_label", "server_url", ...}`) keeps its fields in
/// `extra`, read through [`ResponseTool::as_mcp`]; a type this crate does not model is kept whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseTool {
    #[serde(rename = "type")]
    pub kind: String,
    /// A function tool's name; empty (and not sent) for the other types.
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The name [`ResponseTool`] had when only function tools were modelled.
pub type FunctionTool = ResponseTool;

impl ResponseTool {
    /// A function tool.
    pub fn function(
        name: impl Into<String>,
        description: Option<String>,
        parameters: Option<Value>,
    ) -> Self {
        Self {
            kind: tool_type::FUNCTION.to_owned(),
            name: name.into(),
            description,
            parameters,
            strict: None,
            extra: Extra::new(),
        }
    }

    /// A remote MCP server as a tool.
    pub fn mcp(tool: McpTool) -> Self {
        let extra = match serde_json::to_value(tool) {
            Ok(Value::Object(fields)) => fields,
            // A struct of strings and JSON values always serialises to an object.
            _ => Extra::new(),
        };
        Self {
            kind: tool_type::MCP.to_owned(),
            name: String::new(),
            description: None,
            parameters: None,
            strict: None,
            extra,
        }
    }

    pub fn is(&self, kind: &str) -> bool {
        self.kind == kind
    }

    /// The MCP server this tool names, when it is an `mcp` tool; an error when its fields do not
    /// have the documented types (e.g. a header value that is not a string).
    pub fn as_mcp(&self) -> Option<Result<McpTool, serde_json::Error>> {
        self.is(tool_type::MCP)
            .then(|| serde_json::from_value(Value::Object(self.extra.clone())))
    }
}

/// A remote MCP server offered to the model (`{"type": "mcp"}`): the server's tools are listed and
/// called by the API server, not by its client. Fields as the OpenAI API reference describes them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct McpTool {
    /// The name the response's `mcp_list_tools` and `mcp_call` items give the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_label: Option<String>,
    /// The server's streamable HTTP endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_description: Option<String>,
    /// HTTP headers sent with every request to the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    /// The server's tools the model may use: `["name", ...]`, or `{"tool_names": [...],
    /// "read_only": bool}`; all of them when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Value>,
    /// `"never"`, `"always"`, or `{"always": {...}, "never": {...}}` by tool names. OpenAI's
    /// default is to ask for approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_approval: Option<Value>,
    /// An OAuth access token for the server (sent as `Authorization: Bearer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<String>,
    /// One of OpenAI's connectors, in place of a `server_url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector_id: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `null` read as the type's default (an absent field is `#[serde(default)]`'s).
fn null_as_empty<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Item types this crate names.
pub mod item_type {
    pub const MESSAGE: &str = "message";
    pub const FUNCTION_CALL: &str = "function_call";
    pub const FUNCTION_CALL_OUTPUT: &str = "function_call_output";
    /// The text part of an assistant message.
    pub const OUTPUT_TEXT: &str = "output_text";
    /// The text part of a user, system or developer message.
    pub const INPUT_TEXT: &str = "input_text";
    /// The tools a remote MCP server listed (`server_label`, `tools`, `error`).
    pub const MCP_LIST_TOOLS: &str = "mcp_list_tools";
    /// A call of a remote MCP server's tool (`server_label`, `name`, `arguments`, `output`,
    /// `error`).
    pub const MCP_CALL: &str = "mcp_call";
}

/// One input or output item. `kind` may be absent on input (an "easy" message `{"role",
/// "content"}`); which other fields are set depends on it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Item {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Messages: `user`, `assistant`, `system` or `developer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// `in_progress`, `completed` or `incomplete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Messages: a string or a list of parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<ItemContent>,
    /// `function_call` and `function_call_output`: the id pairing a call with its output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// `function_call`: the function's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `function_call`: the arguments as a JSON-encoded string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// `function_call_output`: the function's result (a string, or a list of parts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Item {
    /// An "easy" input message: `{"type": "message", "role": role, "content": text}`.
    pub fn message(role: &str, text: impl Into<String>) -> Self {
        Self {
            kind: Some(item_type::MESSAGE.to_owned()),
            role: Some(role.to_owned()),
            content: Some(ItemContent::Text(text.into())),
            ..Self::default()
        }
    }

    /// A `function_call` item (sent back as input when the client keeps the state itself).
    pub fn function_call(call_id: &str, name: &str, arguments: &str) -> Self {
        Self {
            kind: Some(item_type::FUNCTION_CALL.to_owned()),
            call_id: Some(call_id.to_owned()),
            name: Some(name.to_owned()),
            arguments: Some(arguments.to_owned()),
            ..Self::default()
        }
    }

    /// A `function_call_output` item answering the call `call_id`.
    pub fn function_call_output(call_id: &str, output: impl Into<String>) -> Self {
        Self {
            kind: Some(item_type::FUNCTION_CALL_OUTPUT.to_owned()),
            call_id: Some(call_id.to_owned()),
            output: Some(Value::String(output.into())),
            ..Self::default()
        }
    }

    pub fn is(&self, kind: &str) -> bool {
        self.kind.as_deref() == Some(kind)
    }

    /// The item's text: a string content, or its text parts (`output_text`, `input_text`, `text`)
    /// concatenated. `None` when it has no text.
    pub fn text(&self) -> Option<String> {
        match self.content.as_ref()? {
            ItemContent::Text(text) => Some(text.clone()),
            ItemContent::Parts(parts) => {
                let texts: Vec<&str> = parts.iter().filter_map(|p| p.text.as_deref()).collect();
                (!texts.is_empty()).then(|| texts.concat())
            }
        }
    }
}

/// Message content: a plain string or a list of typed parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ItemContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

/// One content part (`output_text`, `input_text`, `refusal`, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The response object (`"object": "response"`), returned by create and retrieve, and carried by
/// the lifecycle streaming events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub id: String,
    #[serde(default)]
    pub object: String,
    /// Unix seconds (the SDK allows a fraction).
    #[serde(default)]
    pub created_at: Option<f64>,
    /// `completed`, `failed`, `in_progress`, `cancelled`, `queued` or `incomplete`.
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub output: Vec<Item>,
    #[serde(default)]
    pub usage: Option<ResponseUsage>,
    #[serde(default)]
    pub error: Option<Value>,
    #[serde(default)]
    pub incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    pub previous_response_id: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Response {
    /// The text of every assistant message in `output`, concatenated (what the SDKs call
    /// `output_text`).
    pub fn output_text(&self) -> String {
        self.output
            .iter()
            .filter(|item| item.is(item_type::MESSAGE))
            .filter_map(Item::text)
            .collect()
    }

    /// The `function_call` items of `output`.
    pub fn function_calls(&self) -> impl Iterator<Item = &Item> {
        self.output
            .iter()
            .filter(|item| item.is(item_type::FUNCTION_CALL))
    }

    /// The `mcp_call` items of `output` (`server_label` and `error` are in their `extra`).
    pub fn mcp_calls(&self) -> impl Iterator<Item = &Item> {
        self.output
            .iter()
            .filter(|item| item.is(item_type::MCP_CALL))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IncompleteDetails {
    /// `max_output_tokens` or `content_filter`.
    #[serde(default)]
    pub reason: Option<String>,
}

/// Token usage of a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseUsage {
    pub input_tokens: u32,
    pub output_tokens: u32,
    pub total_tokens: u32,
    /// `{"cached_tokens": n}`.
    #[serde(default)]
    pub input_tokens_details: Option<Value>,
    /// `{"reasoning_tokens": n}`.
    #[serde(default)]
    pub output_tokens_details: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// One streaming event. Which fields are set depends on `kind` (see [`event`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseStreamEvent {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub sequence_number: Option<i64>,
    /// Lifecycle events: the response as it stands.
    #[serde(default)]
    pub response: Option<Response>,
    /// `output_item.added` / `.done`.
    #[serde(default)]
    pub item: Option<Item>,
    #[serde(default)]
    pub output_index: Option<u32>,
    #[serde(default)]
    pub content_index: Option<u32>,
    #[serde(default)]
    pub item_id: Option<String>,
    /// `*.delta` events.
    #[serde(default)]
    pub delta: Option<String>,
    /// `output_text.done`.
    #[serde(default)]
    pub text: Option<String>,
    /// `function_call_arguments.done`.
    #[serde(default)]
    pub arguments: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `GET /v1/responses/{id}/input_items`: a page of items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemList {
    #[serde(default)]
    pub object: String,
    pub data: Vec<Item>,
    #[serde(default)]
    pub first_id: Option<String>,
    #[serde(default)]
    pub last_id: Option<String>,
    #[serde(default)]
    pub has_more: bool,
    #[serde(flatten)]
    pub extra: Extra,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_with_a_message_and_a_function_call_parses_and_reads_back() {
        let body = r#"{"id":"resp_1","object":"response","created_at":1741476542,"status":"completed",
            "model":"gpt-4.1","parallel_tool_calls":true,"tool_choice":"auto","tools":[],
            "output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant",
                "content":[{"type":"output_text","text":"Hi","annotations":[]},{"type":"output_text","text":" there","annotations":[]}]},
              {"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}","status":"completed"}],
            "usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":0},"output_tokens":3,
                "output_tokens_details":{"reasoning_tokens":0},"total_tokens":8},"vendor_field":1}"#;
        let response: Response = serde_json::from_str(body).unwrap();
        assert_eq!(response.output_text(), "Hi there");
        let calls: Vec<&Item> = response.function_calls().collect();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].call_id.as_deref(), Some("call_1"));
        assert_eq!(response.usage.unwrap().total_tokens, 8);
        assert!(response.extra.contains_key("vendor_field"));
    }

    #[test]
    fn requests_serialise_string_input_and_items() {
        let request = ResponseCreateRequest {
            model: Some("m".into()),
            input: Some(ResponseInput::Items(vec![
                Item::function_call("c1", "f", "{}"),
                Item::function_call_output("c1", "42"),
            ])),
            store: Some(false),
            ..ResponseCreateRequest::default()
        };
        let json = serde_json::to_value(&request).unwrap();
        assert_eq!(json["input"][1]["type"], "function_call_output");
        assert_eq!(json["input"][1]["output"], "42");
        assert_eq!(json["store"], false);
        assert!(json.get("stream").is_none());
        let text: ResponseCreateRequest =
            serde_json::from_str(r#"{"input":"hello","unknown":true}"#).unwrap();
        assert_eq!(text.input, Some(ResponseInput::Text("hello".into())));
        assert!(text.extra.contains_key("unknown"));
    }

    #[test]
    fn function_mcp_and_unknown_tools_parse_and_mcp_fields_read_back() {
        let request: ResponseCreateRequest = serde_json::from_value(serde_json::json!({
            "input": "hi",
            "tools": [
                {"type": "function", "name": "f", "parameters": {"type": "object"}},
                {"type": "mcp", "server_label": "apps", "server_url": "http://127.0.0.1:9/mcp",
                 "require_approval": "never", "allowed_tools": ["a", "b"],
                 "headers": {"X-Session-Id": "s1"}, "vendor": 1},
                {"type": "web_search_preview", "name": null}
            ]
        }))
        .unwrap();
        let tools = request.tools.unwrap();
        assert_eq!(tools[0].name, "f");
        assert!(tools[0].as_mcp().is_none());
        let mcp = tools[1].as_mcp().unwrap().unwrap();
        assert_eq!(mcp.server_label.as_deref(), Some("apps"));
        assert_eq!(mcp.server_url.as_deref(), Some("http://127.0.0.1:9/mcp"));
        assert_eq!(mcp.headers.unwrap()["X-Session-Id"], "s1");
        assert_eq!(mcp.allowed_tools, Some(serde_json::json!(["a", "b"])));
        assert!(mcp.extra.contains_key("vendor"));
        assert_eq!(tools[2].kind, "web_search_preview");
        assert_eq!(tools[2].name, "");
        let bad = ResponseTool {
            extra: serde_json::from_value(serde_json::json!({"headers": {"X-N": 1}})).unwrap(),
            ..ResponseTool::mcp(McpTool::default())
        };
        assert!(bad.as_mcp().unwrap().is_err());
    }

    #[test]
    fn tools_we_send_skip_absent_fields() {
        let mcp = ResponseTool::mcp(McpTool {
            server_label: Some("apps".into()),
            server_url: Some("http://judge:7600/mcp/t1".into()),
            require_approval: Some(serde_json::json!("never")),
            ..McpTool::default()
        });
        assert_eq!(
            serde_json::to_value(&mcp).unwrap(),
            serde_json::json!({"type": "mcp", "server_label": "apps",
                "server_url": "http://judge:7600/mcp/t1", "require_approval": "never"})
        );
        let function = ResponseTool::function("f", None, None);
        assert_eq!(
            serde_json::to_value(&function).unwrap(),
            serde_json::json!({"type": "function", "name": "f"})
        );
    }
}
