//! One connection to one MCP server, through the official SDK's streamable HTTP client (reqwest):
//! `initialize`, `tools/list` (every page) and `tools/call`, each bounded by a timeout. The
//! request's headers go with every request of the connection; redirects are followed only to the
//! same origin (the SDK's client), so a server cannot send agent-server elsewhere.
//!
//! Dropping a [`Connection`] ends it: the SDK's task closes the session in the background.

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    JsonObject, Tool,
};
use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt as _};

use super::{McpFailure, McpServer};

/// A connected, initialised MCP client session.
pub(crate) struct Connection {
    service: RunningService<RoleClient, ClientConfig>,
}

impl Connection {
    /// Connects to `server` and lists its tools, both within `timeout`.
    pub(crate) async fn open(
        server: &McpServer,
        timeout: Duration,
    ) -> Result<(Self, Vec<Tool>), McpFailure> {
        let work = async {
            let mut config = StreamableHttpClientTransportConfig::with_uri(server.url.as_str())
                .custom_headers(server.headers.clone());
            if let Some(token) = &server.authorization {
                config = config.auth_header(token.clone());
            }
            let transport = StreamableHttpClientTransport::from_config(config);
            let identity = Implementation::new("agent-server", env!("CARGO_PKG_VERSION"));
            let service = ClientConfig::new(ClientCapabilities::default(), identity)
                .serve(transport)
                .await
                .map_err(|e| McpFailure::Connect(initialize_reason(&e)))?;
            let tools = service
                .list_all_tools()
                .await
                .map_err(|e| McpFailure::List(reason(&e)))?;
            Ok((Self { service }, tools))
        };
        tokio::time::timeout(timeout, work)
            .await
            .map_err(|_| McpFailure::Timeout { after: timeout })?
    }

    /// Calls the tool `name` with `arguments`, within `timeout`. A result the tool marks as an
    /// error (`isError`) is a result here; the caller reads it.
    pub(crate) async fn call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        timeout: Duration,
    ) -> Result<CallToolResult, McpFailure> {
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        // Dropped at the timeout, the request is cancelled (the SDK tells the server).
        tokio::time::timeout(timeout, self.service.call_tool(params))
            .await
            .map_err(|_| McpFailure::Timeout { after: timeout })?
            .map_err(|e| McpFailure::Call(reason(&e)))
    }
}

/// Why `initialize` failed; a transport's error says what it was doing.
fn initialize_reason(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::TransportError { error, context } => {
            format!("{} ({context})", reason(error))
        }
        other => reason(other),
    }
}

/// What an SDK error says, for people: the messages of its chain of causes, without those that
/// only name the SDK's types or repeat the one before.
fn reason(error: &(dyn std::error::Error + 'static)) -> String {
    let mut said: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(e) = next {
        let message = e.to_string();
        let repeated = said.last().is_some_and(|last| last.contains(&message));
        if !message.contains("rmcp::") && !repeated && !message.trim().is_empty() {
            said.push(message);
        }
        next = e.source();
    }
    if said.is_empty() {
        error.to_string()
    } else {
        said.join(": ")
    }
}
