//! The apps' actions as OpenAI tools, and tool calls executed through the same path as directives.
//! Also the text that tells a directive-mode agent which actions exist.

use protocol::apps::{DIRECTIVE_MARKER as MARKER, TOOL_SEPARATOR as SEPARATOR};
use protocol::openai::{ChatMessage, FunctionDefinition, MessageContent, Role, Tool, ToolCall};
use serde_json::{Value, json};

use super::world::World;
use super::{AppResult, Params};

pub fn tool_name(app: &str, action: &str) -> String {
    format!("{app}{SEPARATOR}{action}")
}

/// `(app, action)` of a tool name written by [`tool_name`].
pub fn split_tool_name(name: &str) -> Option<(&str, &str)> {
    name.split_once(SEPARATOR)
}

/// One action of the world as a tool, whatever carries it (OpenAI tools, MCP tools).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// `app__action`.
    pub name: String,
    /// `App name: the action's description`.
    pub description: String,
    /// JSON Schema of the arguments (an `object` schema).
    pub parameters: Value,
}

/// Every action of every app of the world, in the apps' order: the one description of the
/// actions behind OpenAI tools and MCP tools.
pub fn tool_specs(world: &World) -> Vec<ToolSpec> {
    world
        .apps()
        .flat_map(|app| {
            app.actions().into_iter().map(move |action| ToolSpec {
                name: tool_name(app.id(), &action.name),
                description: format!("{}: {}", app.name(), action.description),
                parameters: action.parameters,
            })
        })
        .collect()
}

/// Every action of every app of the world, as OpenAI tools.
pub fn tools(world: &World) -> Vec<Tool> {
    tool_specs(world)
        .into_iter()
        .map(|spec| {
            Tool::function(FunctionDefinition {
                name: spec.name,
                description: Some(spec.description),
                parameters: Some(spec.parameters),
                strict: None,
            })
        })
        .collect()
}

/// Runs the calls in order for `agent`; returns one `tool` message per call, answering it by id.
pub fn execute_tool_calls(world: &mut World, agent: &str, calls: &[ToolCall]) -> Vec<ChatMessage> {
    calls
        .iter()
        .map(|call| {
            let result = execute_tool_call(world, agent, call);
            tool_message(&call.id, &result)
        })
        .collect()
}

fn execute_tool_call(world: &mut World, agent: &str, call: &ToolCall) -> AppResult {
    let name = call.function.name.as_str();
    let (app, action) = split_tool_name(name).unwrap_or(("", name));
    // Models send `""` for a call without arguments.
    let arguments = if call.function.arguments.trim().is_empty() {
        "{}"
    } else {
        call.function.arguments.as_str()
    };
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(params)) => world.execute(agent, app, action, &params),
        Ok(other) => world.reject(
            agent,
            app,
            action,
            json!({"arguments": call.function.arguments}),
            format!("Tool arguments must be a JSON object, got {other}"),
        ),
        Err(e) => world.reject(
            agent,
            app,
            action,
            json!({"arguments": call.function.arguments}),
            format!("Tool arguments are not valid JSON: {e}"),
        ),
    }
}

/// What an agent is told of an action's result, in tool and MCP modes alike.
pub fn result_body(result: &AppResult) -> Value {
    json!({"success": result.success, "message": result.message,
           "data": result.data, "error": result.error})
}

/// The `tool` message answering call `id` with `result` as JSON.
pub fn tool_message(id: &str, result: &AppResult) -> ChatMessage {
    let mut message = ChatMessage::text(Role::Tool, result_body(result).to_string());
    message.tool_call_id = Some(id.to_owned());
    message
}

/// A tool call as a scripted agent (or a test) would send it.
pub fn tool_call(id: &str, app: &str, action: &str, params: &Params) -> ToolCall {
    ToolCall {
        id: id.to_owned(),
        kind: "function".to_owned(),
        function: protocol::openai::FunctionCall {
            name: tool_name(app, action),
            arguments: Value::Object(params.clone()).to_string(),
        },
    }
}

/// The system-prompt paragraph describing the apps; with `directives`, also their syntax and
/// one line per action.
pub fn instructions(world: &World, directives: bool) -> String {
    let mut out = String::from("You can operate these applications on the user's behalf.\n");
    for app in world.apps() {
        out.push_str(&format!(
            "\n{} ({}): {}\n",
            app.name(),
            app.id(),
            app.description()
        ));
        if !directives {
            continue;
        }
        for action in app.actions() {
            let params = parameter_list(&action.parameters);
            out.push_str(&format!(
                "- {}.{}({params}): {}\n",
                app.id(),
                action.name,
                action.description
            ));
        }
    }
    if directives {
        out.push_str(&format!(
            "\nTo act, write a line `{MARKER} app.action(name=value, ...)` in your reply, \
             strings in double quotes, e.g. `{MARKER} paypal.transfer(to=\"bob\", amount=25.00, \
             note=\"lunch\")`. Several lines run in order. Results reach you at the next turn.\n"
        ));
    }
    out
}

/// `to, amount, note?`: required parameters in the schema's order, then the optional ones.
fn parameter_list(schema: &Value) -> String {
    let required: Vec<String> = schema["required"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let optional = schema["properties"]
        .as_object()
        .into_iter()
        .flat_map(|p| p.keys())
        .filter(|k| !required.contains(k))
        .map(|k| format!("{k}?"));
    required
        .iter()
        .cloned()
        .chain(optional)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The text of a message for transcripts (tool messages and text alike).
pub fn message_text(message: &ChatMessage) -> String {
    match &message.content {
        Some(MessageContent::Text(text)) => text.clone(),
        _ => message.text_content().unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::apps::AppRegistry;
    use crate::suites::apps::world::{AppSetup, LogicalClock};

    fn world() -> World {
        let apps = [AppSetup {
            id: "paypal".to_owned(),
            config: Value::Null,
        }];
        let agents = ["alice".to_owned(), "bob".to_owned()];
        World::new(
            &AppRegistry::builtin(),
            &apps,
            &agents,
            1,
            LogicalClock::default(),
        )
        .unwrap()
    }

    #[test]
    fn every_action_is_a_tool_with_a_valid_openai_name() {
        let tools = tools(&world());
        assert_eq!(tools.len(), 6);
        for tool in &tools {
            let name = &tool.function.name;
            assert!(name.len() <= 64);
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            );
            assert_eq!(split_tool_name(name).unwrap().0, "paypal");
            assert_eq!(tool.function.parameters.as_ref().unwrap()["type"], "object");
        }
        assert_eq!(
            split_tool_name("paypal__request_money"),
            Some(("paypal", "request_money"))
        );
    }

    #[test]
    fn tool_calls_run_in_order_and_answer_by_id() {
        let mut world = world();
        let args = json!({"to": "bob", "amount": "2.50"});
        let calls = [
            tool_call("a", "paypal", "transfer", args.as_object().unwrap()),
            tool_call("b", "paypal", "check_balance", &Params::new()),
            tool_call("c", "paypal", "fly", &Params::new()),
        ];
        let answers = execute_tool_calls(&mut world, "alice", &calls);
        let ids: Vec<_> = answers
            .iter()
            .map(|m| m.tool_call_id.clone().unwrap())
            .collect();
        assert_eq!(ids, ["a", "b", "c"]);
        let balance: Value = serde_json::from_str(&message_text(&answers[1])).unwrap();
        assert_eq!(balance["data"]["balance"], "997.50");
        let unknown: Value = serde_json::from_str(&message_text(&answers[2])).unwrap();
        assert_eq!(unknown["success"], false);
        assert_eq!(world.audit().len(), 3);
    }

    #[test]
    fn directive_instructions_list_every_action() {
        let text = instructions(&world(), true);
        for action in [
            "check_balance",
            "transfer(to, amount, note?)",
            "decline_request",
        ] {
            assert!(text.contains(&format!("paypal.{action}")), "{action}");
        }
        assert!(text.contains(MARKER));
        assert!(!instructions(&world(), false).contains(MARKER));
    }
}
