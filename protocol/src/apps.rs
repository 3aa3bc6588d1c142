//! The conventions of simulated applications (docs/contracts/apps.md) that an agent and the judge
//! must agree on, whichever side writes or reads them.

/// Starts a directive line in an agent's text reply:
/// `APP_ACTION: app.action(name=value, ...)`.
pub const DIRECTIVE_MARKER: &str = "APP_ACTION:";

/// Separates app and action in a tool name (`paypal__transfer`): OpenAI tool names allow
/// neither `.` nor an unambiguous single `_`.
pub const TOOL_SEPARATOR: &str = "__";

/// Heads the block of app notifications a client puts before the user's words in a turn.
pub const NOTIFICATIONS_HEADER: &str = "[App notifications]";

/// Names, on a Chat Completions request, the MCP server whose tools operate the apps of this
/// conversation (the judge's action mode `mcp`; the Responses API carries it as an `mcp` tool).
pub const MCP_SERVER_URL_HEADER: &str = "X-MCP-Server-URL";
