//! A Responses request as the agent's turn: its items (and those of the chain or conversation it
//! continues) become Chat Completions messages, its parameters a [`ChatCompletionRequest`].
//!
//! The turn is the same as a chat turn (recall, extraction, the model, commit), so this is the
//! one place the two APIs differ on the way in. Carried: `instructions` (a system message first),
//! messages with text parts, `function_call` and `function_call_output` items, function `tools`,
//! `tool_choice`, `temperature`, `top_p`, `max_output_tokens`, `user`. Not carried by this
//! translation: `metadata`, `text`, `reasoning`, `include`, `truncation`, `parallel_tool_calls`
//! and other unknown fields (kept on the response object only; an upstream that serves the
//! Responses API gets them, `crate::llm::upstream::responses`); tools other than functions and
//! remote MCP servers, and non-text content, are refused (400).
//!
//! `mcp` tools are not translated: the agent lists and calls their servers itself
//! (`crate::mcp`). Their items, which clients echo back in their history, are accepted: an
//! `mcp_call` becomes the assistant's tool call and its `tool` result (the output, or
//! `{"success": false, "error": ...}`), as the model saw it when it was made; an `mcp_list_tools`
//! is left out (the tools are listed again when offered again). An upstream serving the Responses
//! API gets the same as `function_call` and `function_call_output` items ([`upstream_items`]).

use protocol::openai::responses::{
    Item, ItemContent, ResponseCreateRequest, ResponseInput, item_type, tool_type,
};
use protocol::openai::{
    ChatCompletionRequest, ChatMessage, FunctionCall, FunctionDefinition, Role, Tool, ToolCall,
    ToolChoice,
};
use serde_json::{Value, json};

use crate::error::ApiError;

/// The request's new input items, checked and normalised: each has a `type` and an `id`, and a
/// message's content is a list of typed text parts (as `GET .../input_items` lists them).
pub(crate) fn new_items(request: &ResponseCreateRequest) -> Result<Vec<Value>, ApiError> {
    let items = match &request.input {
        None => {
            return Err(ApiError::invalid(
                "input is required: a string, or a list of items",
                Some("input"),
            ));
        }
        Some(ResponseInput::Text(text)) => vec![Item::message("user", text.clone())],
        Some(ResponseInput::Items(items)) if items.is_empty() => {
            return Err(ApiError::invalid(
                "input is an empty list; send at least one item",
                Some("input"),
            ));
        }
        Some(ResponseInput::Items(items)) => items.clone(),
    };
    normalise_items(items, "input")
}

/// Items of the list `list` (`input`, or a conversation's `items`), checked and normalised.
pub(crate) fn normalise_items(items: Vec<Item>, list: &str) -> Result<Vec<Value>, ApiError> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| normalise(item, list, i))
        .collect()
}

fn normalise(mut item: Item, list: &str, i: usize) -> Result<Value, ApiError> {
    let param = |field: &str| format!("{list}[{i}]{field}");
    let kind = item
        .kind
        .clone()
        .unwrap_or_else(|| item_type::MESSAGE.to_owned());
    let prefix = match kind.as_str() {
        item_type::MESSAGE => {
            let role = item.role.as_deref().unwrap_or_default();
            let part = match role {
                "user" | "system" | "developer" => item_type::INPUT_TEXT,
                "assistant" => item_type::OUTPUT_TEXT,
                other => {
                    return Err(ApiError::invalid(
                        format!(
                            "{list}[{i}].role is {other:?}; use user, assistant, system or developer"
                        ),
                        Some(&param(".role")),
                    ));
                }
            };
            let text = match &item.content {
                None => None,
                Some(ItemContent::Text(text)) => Some(text.clone()),
                Some(ItemContent::Parts(parts)) => {
                    if let Some(p) = parts.iter().find(|p| {
                        !matches!(p.kind.as_str(), "input_text" | "output_text" | "text")
                            || p.text.is_none()
                    }) {
                        return Err(ApiError::invalid(
                            format!(
                                "{list}[{i}].content: content part type {:?} is not supported; send text parts only",
                                p.kind
                            ),
                            Some(&param(".content")),
                        ));
                    }
                    item.text()
                }
            };
            let text = text.ok_or_else(|| {
                ApiError::invalid(
                    format!("{list}[{i}].content is missing"),
                    Some(&param(".content")),
                )
            })?;
            let mut part = json!({"type": part, "text": text});
            if part["type"] == item_type::OUTPUT_TEXT {
                part["annotations"] = json!([]);
            }
            item.content = Some(ItemContent::Parts(vec![
                serde_json::from_value(part).expect("a text part"),
            ]));
            item.status.get_or_insert_with(|| "completed".to_owned());
            "msg"
        }
        item_type::FUNCTION_CALL => {
            for (field, value) in [
                ("call_id", &item.call_id),
                ("name", &item.name),
                ("arguments", &item.arguments),
            ] {
                if value.as_deref().is_none_or(str::is_empty) && field != "arguments" {
                    return Err(ApiError::invalid(
                        format!("{list}[{i}]: a function_call item needs {field}"),
                        Some(&param(&format!(".{field}"))),
                    ));
                }
            }
            item.arguments.get_or_insert_with(String::new);
            item.status.get_or_insert_with(|| "completed".to_owned());
            "fc"
        }
        item_type::FUNCTION_CALL_OUTPUT => {
            if item.call_id.as_deref().is_none_or(str::is_empty) {
                return Err(ApiError::invalid(
                    format!("{list}[{i}]: a function_call_output item needs call_id"),
                    Some(&param(".call_id")),
                ));
            }
            if item.output.is_none() {
                return Err(ApiError::invalid(
                    format!("{list}[{i}]: a function_call_output item needs output"),
                    Some(&param(".output")),
                ));
            }
            item.status.get_or_insert_with(|| "completed".to_owned());
            "fco"
        }
        // Remote MCP tools' items, echoed back: kept as sent (see the module's docs).
        item_type::MCP_LIST_TOOLS => "mcpl",
        item_type::MCP_CALL => {
            item.arguments.get_or_insert_with(String::new);
            "mcp"
        }
        other => {
            return Err(ApiError::invalid(
                format!(
                    "{list}[{i}].type {other:?} is not supported; send message, function_call, function_call_output, mcp_list_tools or mcp_call items"
                ),
                Some(&param(".type")),
            ));
        }
    };
    item.kind = Some(kind);
    if item.id.as_deref().is_none_or(str::is_empty) {
        item.id = Some(new_id(prefix));
    }
    Ok(serde_json::to_value(item).expect("items serialise"))
}

/// A new unguessable id with OpenAI's prefix for its kind (`resp`, `msg`, `fc`, `conv`, ...).
pub(crate) fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

/// Every `function_call_output` of `new` answers a `function_call` of `prior` or of `new`
/// before it: an output without its call cannot be given to a model.
pub(crate) fn check_outputs_answer_calls(prior: &[&Value], new: &[Value]) -> Result<(), ApiError> {
    let is_call = |v: &Value, id: &str| v["type"] == item_type::FUNCTION_CALL && v["call_id"] == id;
    for (i, item) in new.iter().enumerate() {
        if item["type"] != item_type::FUNCTION_CALL_OUTPUT {
            continue;
        }
        let id = item["call_id"].as_str().unwrap_or_default();
        if !prior
            .iter()
            .copied()
            .chain(&new[..i])
            .any(|v| is_call(v, id))
        {
            return Err(ApiError::invalid(
                format!(
                    "input[{i}] is a function_call_output for call_id {id:?}, but no function_call with that call_id precedes it (in input, or in the previous response or conversation)"
                ),
                Some(&format!("input[{i}].call_id")),
            ));
        }
    }
    Ok(())
}

/// Items as Chat Completions messages: consecutive function calls become one assistant message
/// with `tool_calls`, outputs become `tool` messages.
///
/// Items are read in place, field by field, not deserialised into [`Item`]s: every item here was
/// checked on its way in ([`normalise`]) or written by this server, so parsing it again checks
/// nothing, and `Item`'s flattened `extra` and untagged content make serde buffer and copy every
/// field first. On a turn continuing a chain of ten responses that parse was a fifth of the
/// request's CPU time (docs/results/responses-api.md). A value that is not an object is skipped.
pub(crate) fn messages<'a>(
    instructions: Option<&str>,
    items: impl IntoIterator<Item = &'a Value>,
) -> Vec<ChatMessage> {
    let mut messages = Vec::new();
    if let Some(text) = instructions.filter(|t| !t.is_empty()) {
        messages.push(ChatMessage::system(text));
    }
    for item in items {
        if !item.is_object() {
            continue;
        }
        let field = |name: &str| item.get(name).and_then(Value::as_str);
        let owned = |name: &str| field(name).map(str::to_owned);
        match field("type") {
            Some(item_type::FUNCTION_CALL) => {
                let call = ToolCall {
                    id: owned("call_id").unwrap_or_default(),
                    kind: "function".into(),
                    function: FunctionCall {
                        name: owned("name").unwrap_or_default(),
                        arguments: owned("arguments").unwrap_or_default(),
                    },
                };
                match messages.last_mut() {
                    Some(last) if last.role == Role::Assistant && last.tool_calls.is_some() => {
                        last.tool_calls.get_or_insert_with(Vec::new).push(call);
                    }
                    _ => {
                        let mut message = ChatMessage::assistant(String::new());
                        message.content = None;
                        message.tool_calls = Some(vec![call]);
                        messages.push(message);
                    }
                }
            }
            Some(item_type::FUNCTION_CALL_OUTPUT) => {
                let output = match item.get("output") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) if !other.is_null() => other.to_string(),
                    _ => String::new(),
                };
                let mut message = ChatMessage::text(Role::Tool, output);
                message.tool_call_id = owned("call_id");
                messages.push(message);
            }
            Some(item_type::MCP_LIST_TOOLS) => {}
            Some(item_type::MCP_CALL) => {
                let id = owned("id").unwrap_or_default();
                let mut call = ChatMessage::assistant(String::new());
                call.content = None;
                call.tool_calls = Some(vec![ToolCall {
                    id: id.clone(),
                    kind: "function".into(),
                    function: FunctionCall {
                        name: owned("name").unwrap_or_default(),
                        arguments: owned("arguments").unwrap_or_default(),
                    },
                }]);
                let mut result = ChatMessage::text(Role::Tool, mcp_result(item));
                result.tool_call_id = Some(id);
                messages.extend([call, result]);
            }
            _ => {
                let role = match field("role") {
                    Some("assistant") => Role::Assistant,
                    Some("system" | "developer") => Role::System,
                    _ => Role::User,
                };
                messages.push(ChatMessage::text(
                    role,
                    content_text(item).unwrap_or_default(),
                ));
            }
        }
    }
    messages
}

/// What the model was told of an `mcp_call` item: its output, or its error as
/// `{"success": false, "error": ...}` (as `crate::mcp::CallRecord::told` tells it).
fn mcp_result(item: &Value) -> String {
    match (item.get("error"), item.get("output")) {
        (Some(Value::String(error)), _) => {
            if serde_json::from_str::<Value>(error).is_ok_and(|v| v.is_object()) {
                error.clone()
            } else {
                json!({"success": false, "error": error}).to_string()
            }
        }
        (_, Some(Value::String(output))) => output.clone(),
        (_, Some(other)) if !other.is_null() => other.to_string(),
        _ => String::new(),
    }
}

/// Items as an upstream serving the Responses API gets them: an `mcp_call` as the
/// `function_call` and `function_call_output` the model made and saw (the `mcp` tools never go
/// upstream, so neither do their items), an `mcp_list_tools` left out, the others as they are.
pub(crate) fn upstream_items<'a>(items: impl IntoIterator<Item = &'a Value>) -> Vec<Value> {
    let mut out = Vec::new();
    for item in items {
        match item.get("type").and_then(Value::as_str) {
            Some(item_type::MCP_LIST_TOOLS) => {}
            Some(item_type::MCP_CALL) => {
                let id = &item["id"];
                out.push(json!({
                    "type": item_type::FUNCTION_CALL,
                    "call_id": id,
                    "name": item["name"],
                    "arguments": item.get("arguments").and_then(Value::as_str).unwrap_or_default(),
                }));
                out.push(json!({
                    "type": item_type::FUNCTION_CALL_OUTPUT,
                    "call_id": id,
                    "output": mcp_result(item),
                }));
            }
            _ => out.push(item.clone()),
        }
    }
    out
}

/// A message item's text, read in place: [`Item::text`]'s rule (the content string, or its parts'
/// texts joined; `None` when there is none) over the item's JSON.
fn content_text(item: &Value) -> Option<String> {
    match item.get("content")? {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            let mut texts = parts.iter().filter_map(|part| part.get("text")?.as_str());
            // Usually one part: copied once, without a list of parts first.
            let mut text = texts.next()?.to_owned();
            texts.for_each(|more| text.push_str(more));
            Some(text)
        }
        _ => None,
    }
}

/// The chat request the agent runs: `messages`, with the request's generation parameters.
pub(crate) fn chat_request(
    request: &ResponseCreateRequest,
    messages: Vec<ChatMessage>,
) -> Result<ChatCompletionRequest, ApiError> {
    let tools = request
        .tools
        .as_ref()
        .map(|tools| {
            tools
                .iter()
                .enumerate()
                // `mcp` tools are the agent's own to list and call (`crate::mcp`).
                .filter(|(_, tool)| !tool.is(tool_type::MCP))
                .map(|(i, tool)| {
                    if !tool.is(tool_type::FUNCTION) {
                        return Err(ApiError::invalid(
                            format!("tools[{i}].type {:?} is not supported; this server offers function tools and remote MCP servers (mcp) only", tool.kind),
                            Some(&format!("tools[{i}].type")),
                        ));
                    }
                    if tool.name.is_empty() {
                        return Err(ApiError::invalid(
                            format!("tools[{i}]: a function tool needs a name"),
                            Some(&format!("tools[{i}].name")),
                        ));
                    }
                    Ok(Tool::function(FunctionDefinition {
                        name: tool.name.clone(),
                        description: tool.description.clone(),
                        parameters: tool.parameters.clone(),
                        strict: tool.strict,
                    }))
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?
        .filter(|tools| !tools.is_empty());
    let tool_choice = match &request.tool_choice {
        None => None,
        Some(Value::String(mode)) => Some(ToolChoice::Mode(mode.clone())),
        Some(Value::Object(named)) if named.get("type") == Some(&json!("function")) => {
            let name = named.get("name").cloned().unwrap_or(Value::Null);
            Some(ToolChoice::Named(
                json!({"type": "function", "function": {"name": name}}),
            ))
        }
        Some(other) => {
            return Err(ApiError::invalid(
                format!(
                    "tool_choice {other} is not supported; use \"none\", \"auto\", \"required\" or {{\"type\": \"function\", \"name\": ...}}"
                ),
                Some("tool_choice"),
            ));
        }
    };
    if request.max_output_tokens == Some(0) {
        return Err(ApiError::invalid(
            "max_output_tokens must be at least 1",
            Some("max_output_tokens"),
        ));
    }
    let field = |name: &str| request.extra.get(name).cloned();
    Ok(ChatCompletionRequest {
        model: request.model.clone(),
        messages,
        stream: request.stream,
        stream_options: None,
        temperature: request.temperature,
        top_p: field("top_p").and_then(|v| v.as_f64()),
        max_tokens: request.max_output_tokens,
        tools,
        tool_choice,
        user: field("user").and_then(|v| v.as_str().map(str::to_owned)),
        ..ChatCompletionRequest::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(input: Value) -> ResponseCreateRequest {
        serde_json::from_value(json!({"input": input})).unwrap()
    }

    #[test]
    fn a_string_is_one_user_message_with_an_input_text_part() {
        let items = new_items(&request(json!("hi"))).unwrap();
        assert_eq!(items.len(), 1);
        assert_eq!(items[0]["type"], "message");
        assert_eq!(items[0]["role"], "user");
        assert_eq!(
            items[0]["content"][0],
            json!({"type": "input_text", "text": "hi"})
        );
        assert!(items[0]["id"].as_str().unwrap().starts_with("msg_"));
    }

    #[test]
    fn malformed_items_name_the_field_at_fault() {
        for (input, param) in [
            (json!([]), "input"),
            (json!([{"role": "robot", "content": "x"}]), "input[0].role"),
            (
                json!([{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]),
                "input[0].content",
            ),
            (
                json!([{"type": "function_call", "name": "f"}]),
                "input[0].call_id",
            ),
            (
                json!([{"type": "function_call_output", "call_id": "c"}]),
                "input[0].output",
            ),
            (json!([{"type": "web_search_call"}]), "input[0].type"),
        ] {
            let e = new_items(&request(input.clone())).unwrap_err();
            assert_eq!(e.body().error.param.as_deref(), Some(param), "{input}");
        }
    }

    #[test]
    fn an_output_needs_its_call_before_it() {
        let call =
            json!({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"});
        let output = json!({"type": "function_call_output", "call_id": "c1", "output": "42"});
        assert!(check_outputs_answer_calls(&[], std::slice::from_ref(&output)).is_err());
        assert!(check_outputs_answer_calls(&[&call], std::slice::from_ref(&output)).is_ok());
        assert!(check_outputs_answer_calls(&[], &[call, output]).is_ok());
    }

    #[test]
    fn calls_and_outputs_become_tool_calls_and_tool_messages() {
        let items = [
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]}),
            json!({"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"}),
            json!({"type": "function_call", "call_id": "b", "name": "g", "arguments": "{}"}),
            json!({"type": "function_call_output", "call_id": "a", "output": "1"}),
        ];
        let messages = messages(Some("be brief"), &items);
        let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::System, Role::User, Role::Assistant, Role::Tool]
        );
        assert_eq!(messages[2].tool_calls.as_ref().unwrap().len(), 2);
        assert_eq!(messages[3].tool_call_id.as_deref(), Some("a"));
    }

    #[test]
    fn echoed_mcp_items_are_accepted_and_read_as_the_calls_the_model_made() {
        let items = new_items(&request(json!([
            {"role": "user", "content": "send bob $5"},
            {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "apps", "tools": []},
            {"type": "mcp_call", "id": "mcp_1", "server_label": "apps", "name": "paypal__transfer",
             "arguments": "{\"to\":\"bob\"}", "output": "{\"success\":true}", "error": null, "status": "completed"},
            {"type": "mcp_call", "server_label": "apps", "name": "paypal__transfer",
             "arguments": "{}", "output": null, "error": "timed out", "status": "failed"},
            {"role": "assistant", "content": "Sent."},
        ])))
        .unwrap();
        assert!(items[3]["id"].as_str().unwrap().starts_with("mcp_"));
        let read = messages(None, &items);
        let roles: Vec<Role> = read.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Assistant,
                Role::Tool,
                Role::Assistant
            ]
        );
        let call = &read[1].tool_calls.as_ref().unwrap()[0];
        assert_eq!(
            (call.id.as_str(), call.function.name.as_str()),
            ("mcp_1", "paypal__transfer")
        );
        assert_eq!(read[2].tool_call_id.as_deref(), Some("mcp_1"));
        assert_eq!(read[2].text_content().unwrap(), "{\"success\":true}");
        assert_eq!(
            serde_json::from_str::<Value>(&read[4].text_content().unwrap()).unwrap(),
            json!({"success": false, "error": "timed out"})
        );
        let upstream = upstream_items(&items);
        let kinds: Vec<&str> = upstream
            .iter()
            .map(|i| i["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "message",
                "function_call",
                "function_call_output",
                "function_call",
                "function_call_output",
                "message"
            ]
        );
        assert_eq!(upstream[1]["call_id"], "mcp_1");
        assert_eq!(upstream[2]["call_id"], "mcp_1");
    }

    #[test]
    fn mcp_tools_are_left_to_the_agent_and_other_tool_types_refused() {
        let with_tools = |tools: Value| -> ResponseCreateRequest {
            serde_json::from_value(json!({"input": "hi", "tools": tools})).unwrap()
        };
        let mcp =
            json!({"type": "mcp", "server_label": "apps", "server_url": "http://127.0.0.1/mcp"});
        let only_mcp = chat_request(&with_tools(json!([mcp])), Vec::new()).unwrap();
        assert!(only_mcp.tools.is_none());
        let both = chat_request(
            &with_tools(json!([mcp, {"type": "function", "name": "f"}])),
            Vec::new(),
        )
        .unwrap();
        assert_eq!(both.tools.unwrap()[0].function.name, "f");
        let e = chat_request(
            &with_tools(json!([mcp, {"type": "web_search"}])),
            Vec::new(),
        )
        .unwrap_err();
        assert_eq!(e.body().error.param.as_deref(), Some("tools[1].type"));
        let e = chat_request(&with_tools(json!([{"type": "function"}])), Vec::new()).unwrap_err();
        assert_eq!(e.body().error.param.as_deref(), Some("tools[0].name"));
    }

    /// Reading items in place follows the typed rule: a message's text is what [`Item::text`]
    /// gives for the same JSON, and outputs and calls carry the same fields.
    #[test]
    fn items_read_in_place_say_what_the_typed_items_say() {
        use serde::Deserialize as _;
        let items = [
            json!({"type": "message", "role": "assistant", "status": "completed", "id": "msg_1",
                   "content": [{"type": "output_text", "text": "Hi", "annotations": []},
                               {"type": "output_text", "text": " there", "annotations": []}]}),
            json!({"type": "message", "role": "developer", "content": "be brief"}),
            json!({"type": "message", "role": "user", "content": [{"type": "refusal"}]}),
            json!({"role": "user", "content": [{"type": "input_text", "text": "q"}], "extra": 1}),
            json!({"type": "function_call_output", "call_id": "c", "output": {"n": 42}}),
            json!({"type": "function_call_output", "call_id": "c", "output": null}),
        ];
        let read = messages(None, &items);
        assert_eq!(read.len(), items.len());
        for (value, message) in items.iter().zip(&read) {
            let typed = Item::deserialize(value).unwrap();
            let expected = match typed.kind.as_deref() {
                Some(item_type::FUNCTION_CALL_OUTPUT) => typed
                    .output
                    .map(|o| o.as_str().map_or_else(|| o.to_string(), str::to_owned))
                    .unwrap_or_default(),
                _ => typed.text().unwrap_or_default(),
            };
            assert_eq!(
                message.text_content().unwrap_or_default(),
                expected,
                "{value}"
            );
        }
        assert_eq!(read[0].role, Role::Assistant);
        assert_eq!(read[1].role, Role::System);
        assert_eq!(read[4].tool_call_id.as_deref(), Some("c"));
        assert!(messages(None, &[json!("not an item"), json!(7)]).is_empty());
    }
}
