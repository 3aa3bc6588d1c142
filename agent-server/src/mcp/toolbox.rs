//! The remote MCP tools of one turn: every admitted server connected and listed at once, each
//! within the call timeout, then its tools offered to the model as functions under their own
//! names, and calls run against the server that offered the name.
//!
//! A name is offered once. On a collision the first offer wins: a function tool of the client's
//! own (its calls go back to the client), then the servers in the order the request lists them.
//! A tool not offered for that reason still shows in its server's listing.

use std::collections::HashSet;
use std::time::Duration;

use futures_util::future::join_all;
use protocol::openai::responses::ResponseTool;
use protocol::openai::{FunctionDefinition, Tool};
use rmcp::model::CallToolResult;
use serde_json::Value;

use super::client::Connection;
use super::{CallRecord, ListedTool, Listing, McpFailure, McpServer};

/// The servers of one turn and the tools they offer.
pub(crate) struct Toolbox {
    servers: Vec<Opened>,
    offered: Vec<Offered>,
    timeout: Duration,
}

struct Opened {
    connection: Option<Connection>,
    listing: Listing,
}

/// A tool offered to the model, and the server that offered it.
struct Offered {
    server: usize,
    tool: ListedTool,
}

impl Toolbox {
    /// Connects to every server and lists its tools, all at once, each within `timeout`. A
    /// server that fails is a listing with its error, and offers nothing. `taken`: names already
    /// offered (the client's own function tools).
    pub(crate) async fn open(
        servers: &[McpServer],
        timeout: Duration,
        taken: &HashSet<&str>,
    ) -> Self {
        let opened = join_all(servers.iter().map(|server| async move {
            match Connection::open(server, timeout).await {
                Ok((connection, tools)) => {
                    let tools = tools
                        .into_iter()
                        .filter(|tool| {
                            let read_only = tool
                                .annotations
                                .as_ref()
                                .and_then(|a| a.read_only_hint)
                                .unwrap_or(false);
                            server.allowed_tools.allows(&tool.name, read_only)
                        })
                        .map(|tool| ListedTool {
                            name: tool.name.to_string(),
                            description: tool.description.as_deref().map(str::to_owned),
                            input_schema: Value::Object((*tool.input_schema).clone()),
                            annotations: tool
                                .annotations
                                .as_ref()
                                .and_then(|a| serde_json::to_value(a).ok()),
                        })
                        .collect();
                    Opened {
                        connection: Some(connection),
                        listing: Listing {
                            server_label: server.label.clone(),
                            tools,
                            error: None,
                        },
                    }
                }
                Err(failure) => {
                    tracing::warn!(server = %server.label, url = %server.url, error = %failure, "an MCP server could not be listed; its tools are not offered");
                    Opened {
                        connection: None,
                        listing: Listing {
                            server_label: server.label.clone(),
                            tools: Vec::new(),
                            error: Some(failure.to_string()),
                        },
                    }
                }
            }
        }))
        .await;
        let mut names: HashSet<String> = taken.iter().map(|n| (*n).to_owned()).collect();
        let mut offered = Vec::new();
        for (server, opened) in opened.iter().enumerate() {
            for tool in &opened.listing.tools {
                if names.insert(tool.name.clone()) {
                    offered.push(Offered {
                        server,
                        tool: tool.clone(),
                    });
                } else {
                    tracing::debug!(server = %opened.listing.server_label, tool = %tool.name, "an MCP tool's name is offered already; not offered again");
                }
            }
        }
        Self {
            servers: opened,
            offered,
            timeout,
        }
    }

    /// Each server's listing, in the request's order.
    pub(crate) fn listings(&self) -> impl Iterator<Item = &Listing> {
        self.servers.iter().map(|s| &s.listing)
    }

    /// Whether the model's call of `name` is an MCP call of this turn.
    pub(crate) fn offers(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    fn find(&self, name: &str) -> Option<&Offered> {
        self.offered.iter().find(|o| o.tool.name == name)
    }

    /// The offered tools as Chat Completions function tools.
    pub(crate) fn functions(&self) -> Vec<Tool> {
        self.offered
            .iter()
            .map(|o| {
                Tool::function(FunctionDefinition {
                    name: o.tool.name.clone(),
                    description: o.tool.description.clone(),
                    parameters: Some(o.tool.input_schema.clone()),
                    strict: None,
                })
            })
            .collect()
    }

    /// The offered tools as Responses function tools.
    pub(crate) fn response_functions(&self) -> Vec<ResponseTool> {
        self.offered
            .iter()
            .map(|o| {
                ResponseTool::function(
                    o.tool.name.clone(),
                    o.tool.description.clone(),
                    Some(o.tool.input_schema.clone()),
                )
            })
            .collect()
    }

    /// Runs the model's call of `name` (an offered name) against its server.
    pub(crate) async fn call(&self, name: &str, arguments: &str) -> CallRecord {
        let Some(offered) = self.find(name) else {
            // Unreachable through the agent, which calls only offered names.
            return self.failed(
                name,
                arguments,
                &McpFailure::Call(format!("no MCP server offers a tool named {name:?}")),
            );
        };
        let server = &self.servers[offered.server];
        let label = server.listing.server_label.clone();
        let parsed = match arguments_of(arguments) {
            Ok(parsed) => parsed,
            Err(failure) => return record(label, name, arguments, Err(failure)),
        };
        let Some(connection) = &server.connection else {
            let failure = McpFailure::Call("the server is not connected".into());
            return record(label, name, arguments, Err(failure));
        };
        let result = connection.call(name, parsed, self.timeout).await;
        if let Err(failure) = &result {
            tracing::warn!(server = %label, tool = %name, error = %failure, "an MCP tool call failed");
        }
        record(label, name, arguments, result)
    }

    /// The record of a call that is not run, for `failure`.
    pub(crate) fn failed(&self, name: &str, arguments: &str, failure: &McpFailure) -> CallRecord {
        let label = self
            .find(name)
            .map(|o| self.servers[o.server].listing.server_label.clone())
            .unwrap_or_default();
        CallRecord {
            server_label: label,
            name: name.to_owned(),
            arguments: arguments.to_owned(),
            output: None,
            error: Some(failure.to_string()),
        }
    }
}

/// A model's arguments string as the call's arguments: a JSON object, or none when empty.
fn arguments_of(arguments: &str) -> Result<Option<rmcp::model::JsonObject>, McpFailure> {
    if arguments.trim().is_empty() {
        return Ok(None);
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(object)) => Ok(Some(object)),
        Ok(Value::Null) => Ok(None),
        Ok(other) => Err(McpFailure::Arguments(format!("{other} is not an object"))),
        Err(e) => Err(McpFailure::Arguments(e.to_string())),
    }
}

/// How a call went: the result's text as `output`, or the error. The text is its text content
/// blocks, a line each; without any, its structured content as JSON.
fn record(
    server_label: String,
    name: &str,
    arguments: &str,
    result: Result<CallToolResult, McpFailure>,
) -> CallRecord {
    let (output, error) = match result {
        Err(failure) => (None, Some(failure.to_string())),
        Ok(result) => {
            let texts: Vec<&str> = result
                .content
                .iter()
                .filter_map(|block| block.as_text())
                .map(|t| t.text.as_str())
                .collect();
            let text = if texts.is_empty() {
                result.structured_content.as_ref().map(Value::to_string)
            } else {
                Some(texts.join("\n"))
            };
            if result.is_error == Some(true) {
                let said = text
                    .filter(|t| !t.trim().is_empty())
                    .unwrap_or_else(|| "the tool reported an error without saying why".to_owned());
                (None, Some(said))
            } else {
                (Some(text.unwrap_or_default()), None)
            }
        }
    };
    CallRecord {
        server_label,
        name: name.to_owned(),
        arguments: arguments.to_owned(),
        output,
        error,
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::ContentBlock;
    use serde_json::json;

    use super::*;

    #[test]
    fn results_read_as_text_or_the_tools_error() {
        let ok = record(
            "apps".into(),
            "t",
            "{}",
            Ok(CallToolResult::success(vec![
                ContentBlock::text("a"),
                ContentBlock::text("b"),
            ])),
        );
        assert_eq!((ok.output.as_deref(), ok.error), (Some("a\nb"), None));
        let failed = record(
            "apps".into(),
            "t",
            "{}",
            Ok(CallToolResult::error(vec![ContentBlock::text(
                "no such payee",
            )])),
        );
        assert_eq!(
            (failed.output, failed.error.as_deref()),
            (None, Some("no such payee"))
        );
        let timed_out = record(
            "apps".into(),
            "t",
            "{}",
            Err(McpFailure::Timeout {
                after: Duration::from_millis(500),
            }),
        );
        assert!(timed_out.error.unwrap().contains("0.5s"));
    }

    #[test]
    fn arguments_are_an_object_or_nothing() {
        assert_eq!(arguments_of("").unwrap(), None);
        assert_eq!(arguments_of("null").unwrap(), None);
        assert_eq!(arguments_of(r#"{"a":1}"#).unwrap().unwrap()["a"], json!(1));
        assert!(arguments_of("[1]").is_err());
        assert!(arguments_of("{").is_err());
    }
}
