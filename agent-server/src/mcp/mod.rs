//! Remote MCP tools: the Responses API's `mcp` tool, with agent-server as the MCP client (over
//! streamable HTTP, through the official SDK `rmcp`) of the servers a request names.
//!
//! - [`McpOptions::admit`] reads a request's `mcp` tools and checks each before anything
//!   connects: its URL against the allow-list ([`allow`], `--mcp-allowed-servers`), its approval
//!   mode (only `"never"`, or none), its headers and `allowed_tools`. A refusal is the client's
//!   error ([`McpRefusal`], a 400 in `crate::error`).
//! - [`Toolbox`] ([`toolbox`]) serves one turn: each admitted server connected and its tools
//!   listed (all servers at once), the tools offered to the model as functions under their own
//!   names, and each call the model makes run against its server ([`client`]).
//! - What happened is recorded as [`ToolEvent`]s, in order: one [`Listing`] per server, one
//!   [`CallRecord`] per call, failures included, for the API to encode as `mcp_list_tools` and
//!   `mcp_call` items.
//!
//! Invariants: no connection is made to a URL the allow-list refuses (an [`McpServer`] is made
//! only by `admit`, and nothing is resolved to check it); every network step (connecting and
//! listing together, each call) ends within `--mcp-call-timeout`; a server or a call that fails
//! is an event the model and the client are told about, never an error of the turn.

pub(crate) mod allow;
pub(crate) mod client;
pub(crate) mod toolbox;

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::time::Duration;

use http::{HeaderName, HeaderValue};
use protocol::openai::responses::ResponseTool;
use serde_json::{Value, json};
use url::Url;

pub(crate) use allow::AllowList;
pub(crate) use toolbox::Toolbox;

/// How requests may use remote MCP tools (`--mcp-*` flags).
#[derive(Debug, Clone)]
pub(crate) struct McpOptions {
    /// The servers requests may name.
    pub allowed: AllowList,
    /// Longest wait for a server: to connect and list its tools, and for each call.
    pub call_timeout: Duration,
    /// Most MCP tool calls in one turn (at least 1).
    pub max_calls: usize,
}

impl Default for McpOptions {
    fn default() -> Self {
        Self {
            allowed: AllowList::default(),
            call_timeout: Duration::from_secs(10),
            max_calls: 16,
        }
    }
}

/// Headers the MCP transport sets itself, or that say how the body is framed.
const RESERVED_HEADERS: [&str; 9] = [
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    "host",
    "content-type",
    "content-length",
    "transfer-encoding",
    "connection",
];

/// A remote MCP server a request named, checked by [`McpOptions::admit`]: only an admitted server
/// is ever connected to.
#[derive(Clone)]
pub(crate) struct McpServer {
    /// The request's `server_label`, unique within the request.
    pub(crate) label: String,
    pub(crate) url: Url,
    headers: HashMap<HeaderName, HeaderValue>,
    /// `authorization`: an OAuth token, sent as `Authorization: Bearer`.
    authorization: Option<String>,
    allowed_tools: AllowedTools,
}

impl fmt::Debug for McpServer {
    // Header values and the token may be credentials: named, never shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: BTreeSet<&str> = self.headers.keys().map(HeaderName::as_str).collect();
        f.debug_struct("McpServer")
            .field("label", &self.label)
            .field("url", &self.url.as_str())
            .field("headers", &headers)
            .field("authorization", &self.authorization.as_ref().map(|_| "…"))
            .field("allowed_tools", &self.allowed_tools)
            .finish()
    }
}

/// `allowed_tools`: which of a server's tools the model may use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct AllowedTools {
    /// Only these names; every tool when `None`.
    names: Option<BTreeSet<String>>,
    /// Only tools the server marks read-only (`readOnlyHint`).
    read_only: bool,
}

impl AllowedTools {
    fn allows(&self, name: &str, read_only: bool) -> bool {
        self.names.as_ref().is_none_or(|names| names.contains(name))
            && (read_only || !self.read_only)
    }
}

/// Why a request's `mcp` tool is refused: the client's error, answered with 400 and the field.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum McpRefusal {
    #[error(
        "tools[{index}].server_url {url:?} is not an MCP server this agent-server may connect to; its operator allows servers with --mcp-allowed-servers (AGENT_MCP_ALLOWED_SERVERS), loopback only by default"
    )]
    NotAllowed { index: usize, url: String },
    #[error(
        "tools[{index}].require_approval is {value}; this server runs MCP tools without asking for approval: send \"never\" (or leave it out)"
    )]
    ApprovalUnsupported { index: usize, value: String },
    /// A field is missing or malformed; `param` names it.
    #[error("{param}: {reason}")]
    Invalid { param: String, reason: String },
}

impl McpRefusal {
    /// The request field at fault.
    pub(crate) fn param(&self) -> String {
        match self {
            McpRefusal::NotAllowed { index, .. } => format!("tools[{index}].server_url"),
            McpRefusal::ApprovalUnsupported { index, .. } => {
                format!("tools[{index}].require_approval")
            }
            McpRefusal::Invalid { param, .. } => param.clone(),
        }
    }
}

fn invalid(index: usize, field: &str, reason: impl Into<String>) -> McpRefusal {
    let param = if field.is_empty() {
        format!("tools[{index}]")
    } else {
        format!("tools[{index}].{field}")
    };
    McpRefusal::Invalid {
        param,
        reason: reason.into(),
    }
}

impl McpOptions {
    /// The MCP servers among a request's `tools`, in order, each checked; the first refusal
    /// otherwise. Nothing here connects or resolves a name.
    pub(crate) fn admit(&self, tools: &[ResponseTool]) -> Result<Vec<McpServer>, McpRefusal> {
        let mut servers: Vec<McpServer> = Vec::new();
        for (index, tool) in tools.iter().enumerate() {
            let Some(parsed) = tool.as_mcp() else {
                continue;
            };
            let tool = parsed.map_err(|e| invalid(index, "", format!("not an mcp tool: {e}")))?;
            let label = tool
                .server_label
                .filter(|l| !l.trim().is_empty())
                .ok_or_else(|| {
                    invalid(index, "server_label", "an mcp tool needs a server_label")
                })?;
            if let Some(first) = servers.iter().position(|s| s.label == label) {
                return Err(invalid(
                    index,
                    "server_label",
                    format!(
                        "{label:?} is also the server_label of another mcp tool (number {first} of them); each server needs its own"
                    ),
                ));
            }
            match &tool.require_approval {
                None | Some(Value::Null) => {}
                Some(Value::String(mode)) if mode == "never" => {}
                Some(other) => {
                    return Err(McpRefusal::ApprovalUnsupported {
                        index,
                        value: other.to_string(),
                    });
                }
            }
            let written = tool
                .server_url
                .filter(|u| !u.trim().is_empty())
                .ok_or_else(|| {
                    let reason = if tool.connector_id.is_some() {
                        "connectors (connector_id) are not supported; name the MCP server's URL"
                    } else {
                        "an mcp tool needs the server_url of a streamable HTTP MCP server"
                    };
                    invalid(index, "server_url", reason)
                })?;
            let url =
                server_url(&written).map_err(|reason| invalid(index, "server_url", reason))?;
            if !self.allowed.allows(&url) {
                return Err(McpRefusal::NotAllowed {
                    index,
                    url: written,
                });
            }
            let headers = headers(tool.headers.unwrap_or_default())
                .map_err(|reason| invalid(index, "headers", reason))?;
            let allowed_tools = allowed_tools(tool.allowed_tools.as_ref())
                .map_err(|reason| invalid(index, "allowed_tools", reason))?;
            servers.push(McpServer {
                label,
                url,
                headers,
                authorization: tool.authorization.filter(|t| !t.is_empty()),
                allowed_tools,
            });
        }
        Ok(servers)
    }
}

/// A server URL as the transport reads it: http or https, a host, no credentials.
fn server_url(written: &str) -> Result<Url, String> {
    let url = Url::parse(written.trim()).map_err(|e| format!("{written:?} is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "{written:?} is not an http or https URL (MCP servers are reached over streamable HTTP)"
        ));
    }
    if url.host().is_none() {
        return Err(format!("{written:?} has no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "{written:?} carries credentials; send them in headers or authorization"
        ));
    }
    Ok(url)
}

fn headers(
    written: std::collections::BTreeMap<String, String>,
) -> Result<HashMap<HeaderName, HeaderValue>, String> {
    written
        .into_iter()
        .map(|(name, value)| {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("{name:?} is not a header name"))?;
            if RESERVED_HEADERS.contains(&header.as_str()) {
                return Err(format!(
                    "{name} is set by the MCP transport itself; leave it out"
                ));
            }
            let value = HeaderValue::from_str(&value)
                .map_err(|_| format!("the value of {name} is not a header value"))?;
            Ok((header, value))
        })
        .collect()
}

/// `["a", "b"]`, `{"tool_names": [...], "read_only": bool}`, or nothing (every tool).
fn allowed_tools(written: Option<&Value>) -> Result<AllowedTools, String> {
    let names = |list: &Value| -> Result<BTreeSet<String>, String> {
        list.as_array()
            .ok_or("tool_names must be a list of names")?
            .iter()
            .map(|n| {
                n.as_str()
                    .map(str::to_owned)
                    .ok_or("tool names must be strings")
            })
            .collect::<Result<_, _>>()
            .map_err(str::to_owned)
    };
    match written {
        None | Some(Value::Null) => Ok(AllowedTools::default()),
        Some(list @ Value::Array(_)) => Ok(AllowedTools {
            names: Some(names(list)?),
            read_only: false,
        }),
        Some(Value::Object(filter)) => Ok(AllowedTools {
            names: match filter.get("tool_names") {
                None | Some(Value::Null) => None,
                Some(list) => Some(names(list)?),
            },
            read_only: match filter.get("read_only") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err("read_only must be true or false".into()),
            },
        }),
        Some(_) => {
            Err("use a list of tool names, or {\"tool_names\": [...], \"read_only\": bool}".into())
        }
    }
}

/// One of a server's tools, as its listing shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ListedTool {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    /// JSON Schema of the arguments.
    pub(crate) input_schema: Value,
    /// The server's hints (`readOnlyHint`, ...), as it sent them.
    pub(crate) annotations: Option<Value>,
}

/// The tools a server offers the model (those `allowed_tools` lets through), or why it could
/// not be listed (its tools are then not offered).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Listing {
    pub(crate) server_label: String,
    pub(crate) tools: Vec<ListedTool>,
    pub(crate) error: Option<String>,
}

/// One call the model made of a server's tool, and how it went.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallRecord {
    pub(crate) server_label: String,
    pub(crate) name: String,
    /// The arguments as the model wrote them (a JSON string).
    pub(crate) arguments: String,
    /// The result's text; `None` when the call failed.
    pub(crate) output: Option<String>,
    /// Why the call failed (timed out, refused, the tool's own error); `None` when it did not.
    pub(crate) error: Option<String>,
}

impl CallRecord {
    /// What the model is told: the output, or the error as `{"success": false, "error": ...}`
    /// (a tool's own error that is already a JSON object, as it is).
    pub(crate) fn told(&self) -> String {
        match (&self.output, &self.error) {
            (_, Some(error)) => {
                if serde_json::from_str::<Value>(error).is_ok_and(|v| v.is_object()) {
                    error.clone()
                } else {
                    json!({"success": false, "error": error}).to_string()
                }
            }
            (Some(output), None) => output.clone(),
            (None, None) => String::new(),
        }
    }
}

/// What remote MCP tools did in a turn, in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ToolEvent {
    Listed(Listing),
    Called(CallRecord),
}

/// Why a server or a call failed; said in the `error` of its item and to the model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum McpFailure {
    #[error("the MCP server did not answer within {}s (--mcp-call-timeout)", .after.as_secs_f64())]
    Timeout { after: Duration },
    #[error("connecting to the MCP server failed: {0}")]
    Connect(String),
    #[error("listing the MCP server's tools failed: {0}")]
    List(String),
    #[error("the MCP tool call failed: {0}")]
    Call(String),
    #[error("the arguments are not a JSON object: {0}")]
    Arguments(String),
    #[error("not run: the turn reached its limit of {limit} MCP tool calls (--mcp-max-calls)")]
    Limit { limit: usize },
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::openai::responses::McpTool;

    fn mcp(fields: Value) -> ResponseTool {
        let mut tool: McpTool = serde_json::from_value(fields).unwrap();
        tool.server_label.get_or_insert_with(|| "apps".into());
        ResponseTool::mcp(tool)
    }

    fn refusal(tools: &[ResponseTool]) -> McpRefusal {
        McpOptions::default().admit(tools).unwrap_err()
    }

    #[test]
    fn loopback_servers_are_admitted_with_their_headers_and_filters() {
        let tools = [
            ResponseTool::function("f", None, None),
            mcp(
                json!({"server_url": "http://127.0.0.1:7600/mcp/t1", "require_approval": "never",
                "headers": {"X-Session-Id": "s1"}, "allowed_tools": ["a"]}),
            ),
            mcp(
                json!({"server_label": "other", "server_url": "http://localhost:1/mcp",
                "allowed_tools": {"read_only": true}}),
            ),
        ];
        let servers = McpOptions::default().admit(&tools).unwrap();
        assert_eq!(servers.len(), 2);
        assert_eq!(servers[0].label, "apps");
        let session = HeaderName::from_static("x-session-id");
        assert_eq!(servers[0].headers[&session], "s1");
        assert!(servers[0].allowed_tools.allows("a", false));
        assert!(!servers[0].allowed_tools.allows("b", false));
        assert!(servers[1].allowed_tools.allows("b", true));
        assert!(!servers[1].allowed_tools.allows("b", false));
        assert!(
            !format!("{:?}", servers[0]).contains("s1"),
            "header values are not logged"
        );
    }

    #[test]
    fn refusals_name_the_field_and_the_flag() {
        let far = refusal(&[
            ResponseTool::function("f", None, None),
            mcp(json!({"server_url": "http://10.1.2.3:9/mcp"})),
        ]);
        assert_eq!(far.param(), "tools[1].server_url");
        assert!(far.to_string().contains("--mcp-allowed-servers"), "{far}");
        for (fields, param) in [
            (
                json!({"server_url": "http://127.0.0.1/", "require_approval": "always"}),
                "tools[0].require_approval",
            ),
            (
                json!({"server_url": "http://127.0.0.1/", "require_approval": {"never": {"tool_names": ["a"]}}}),
                "tools[0].require_approval",
            ),
            (
                json!({"connector_id": "connector_gmail"}),
                "tools[0].server_url",
            ),
            (
                json!({"server_url": "file:///etc/passwd"}),
                "tools[0].server_url",
            ),
            (
                json!({"server_url": "http://user:pw@127.0.0.1/"}),
                "tools[0].server_url",
            ),
            (
                json!({"server_url": "http://127.0.0.1/", "headers": {"Accept": "x"}}),
                "tools[0].headers",
            ),
            (
                json!({"server_url": "http://127.0.0.1/", "headers": {"X-A": "a\nb"}}),
                "tools[0].headers",
            ),
            (
                json!({"server_url": "http://127.0.0.1/", "allowed_tools": "a"}),
                "tools[0].allowed_tools",
            ),
            (
                json!({"server_url": "http://127.0.0.1/", "server_label": ""}),
                "tools[0].server_label",
            ),
        ] {
            assert_eq!(refusal(&[mcp(fields.clone())]).param(), param, "{fields}");
        }
        let twice = refusal(&[
            mcp(json!({"server_url": "http://127.0.0.1/a"})),
            mcp(json!({"server_url": "http://127.0.0.1/b"})),
        ]);
        assert_eq!(twice.param(), "tools[1].server_label");
    }

    #[test]
    fn the_model_is_told_an_error_as_json_and_a_tools_own_json_as_it_is() {
        let record = |output: Option<&str>, error: Option<&str>| CallRecord {
            server_label: "apps".into(),
            name: "t".into(),
            arguments: "{}".into(),
            output: output.map(str::to_owned),
            error: error.map(str::to_owned),
        };
        assert_eq!(record(Some("42"), None).told(), "42");
        let told: Value = serde_json::from_str(&record(None, Some("timed out")).told()).unwrap();
        assert_eq!(told, json!({"success": false, "error": "timed out"}));
        let own = r#"{"success":false,"error":"Insufficient funds"}"#;
        assert_eq!(record(None, Some(own)).told(), own);
    }
}
