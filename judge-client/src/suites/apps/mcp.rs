//! The apps' worlds served over MCP (docs/contracts/apps.md, "MCP mode"): an agent that brings its
//! own tool client lists and calls the apps' actions as MCP tools, and the judge grades the world
//! they leave exactly as in the other modes.
//!
//! One [`McpServer`] per run, on its own thread and runtime, speaks MCP's streamable HTTP
//! transport through the official SDK (`rmcp`), stateless and with JSON responses: every POST is
//! resolved to its trial anew, so nothing but the trial's world holds state. A trial is reached at
//! `{base}/mcp/{session id}` (its own URL), or at `{base}/mcp` with the trial's `X-Session-Id`
//! header (an agent configured with one server at start-up). [`McpServer::open`] puts a trial's
//! world on the server for as long as the returned [`McpTrial`] lives.
//!
//! Invariants:
//! - a trial's URL (or session id) reaches that trial's world and no other;
//! - every `tools/call` lands in the trial's audit log with the MCP request id, through the same
//!   [`World`] path as directives and OpenAI tools, failures included (an unknown tool, arguments
//!   the app refuses); a call that reaches no open trial changes nothing and is kept in
//!   [`McpServer::refused`] instead;
//! - the tools are the apps' own action definitions ([`super::tools::tool_specs`]), so the three
//!   modes cannot describe an action differently.

use std::collections::{BTreeSet, HashMap};
use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::tools::{result_body, split_tool_name, tool_specs};
use super::world::SharedWorld;

/// The path every trial's URL starts with.
pub const MCP_PATH: &str = "/mcp";

/// The `server_label` of the apps' server in a Responses API `mcp` tool.
pub const SERVER_LABEL: &str = "apps";

/// Why the MCP server could not start.
#[derive(Debug, thiserror::Error)]
pub enum McpServerError {
    #[error("cannot listen for MCP on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the MCP server's runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("--mcp-url `{0}` is not an http(s) URL with a host")]
    PublicUrl(String),
}

/// A `tools/call` that reached no open trial: it changed nothing, and is kept here so the run
/// directory can say so.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefusedCall {
    /// The trial the call named (its session id), empty when it named none.
    pub session_id: String,
    pub tool: String,
    pub arguments: Value,
    pub mcp_request_id: String,
    pub reason: String,
}

struct OpenTrial {
    agent: String,
    world: SharedWorld,
}

#[derive(Default)]
struct Registry {
    open: HashMap<String, OpenTrial>,
    ended: BTreeSet<String>,
    refused: Vec<RefusedCall>,
}

/// The trials a server can reach, shared by its handlers and the runner.
#[derive(Clone, Default)]
struct Trials(Arc<Mutex<Registry>>);

impl Trials {
    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The open trial `session_id`, or why there is none.
    fn find(&self, session_id: &str) -> Result<(String, SharedWorld), String> {
        let registry = self.lock();
        if let Some(trial) = registry.open.get(session_id) {
            return Ok((trial.agent.clone(), trial.world.clone()));
        }
        Err(if registry.ended.contains(session_id) {
            format!("trial `{session_id}` has ended: its world takes no more actions")
        } else if session_id.is_empty() {
            format!(
                "no trial named: use the trial's own URL ({MCP_PATH}/<session id>), or send its \
                 session id in the X-Session-Id header"
            )
        } else {
            format!("no trial `{session_id}` is open on this server")
        })
    }

    fn refuse(&self, call: RefusedCall) {
        self.lock().refused.push(call);
    }
}

/// The judge's MCP server for one run.
pub struct McpServer {
    trials: Trials,
    base_url: String,
    local_addr: SocketAddr,
    cancel: CancellationToken,
    thread: Option<JoinHandle<()>>,
}

impl McpServer {
    /// Listens on `listen` (port 0 picks one). Agents are told `public_url` (for an agent in
    /// another container: `http://judge:7600`), else `http://{the bound address}`.
    pub fn start(listen: SocketAddr, public_url: Option<&str>) -> Result<Self, McpServerError> {
        let listener = TcpListener::bind(listen).map_err(|source| McpServerError::Bind {
            addr: listen,
            source,
        })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| McpServerError::Bind {
                addr: listen,
                source,
            })?;
        listener
            .set_nonblocking(true)
            .map_err(McpServerError::Runtime)?;
        let base_url = match public_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => format!("http://{local_addr}"),
        };
        let mut allowed_hosts = vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
        ];
        allowed_hosts.push(local_addr.ip().to_string());
        let public_host = url_host(&base_url)
            .ok_or_else(|| McpServerError::PublicUrl(base_url.clone()))?
            .to_owned();
        allowed_hosts.push(public_host);

        let trials = Trials::default();
        let cancel = CancellationToken::new();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(McpServerError::Runtime)?;
        let handler = AppsHandler {
            trials: trials.clone(),
        };
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_cancellation_token(cancel.child_token())
            .with_allowed_hosts(allowed_hosts);
        let service = StreamableHttpService::new(
            move || Ok(handler.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let (stop, served) = (cancel.clone(), trials.clone());
        let thread = std::thread::Builder::new()
            .name("judge-mcp".to_owned())
            .spawn(move || runtime.block_on(serve(listener, service, served, stop)))
            .map_err(McpServerError::Runtime)?;
        Ok(Self {
            trials,
            base_url,
            local_addr,
            cancel,
            thread: Some(thread),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The URL agents use for the trial of session `session_id`.
    pub fn trial_url(&self, session_id: &str) -> String {
        format!("{}{MCP_PATH}/{session_id}", self.base_url)
    }

    /// The fixed URL (the trial named by `X-Session-Id`).
    pub fn fixed_url(&self) -> String {
        format!("{}{MCP_PATH}", self.base_url)
    }

    /// Serves `world` as the trial of `session_id`, acting as `agent`, until the returned handle
    /// is dropped.
    pub fn open(&self, session_id: &str, agent: &str, world: SharedWorld) -> McpTrial {
        let mut registry = self.trials.lock();
        registry.ended.remove(session_id);
        registry.open.insert(
            session_id.to_owned(),
            OpenTrial {
                agent: agent.to_owned(),
                world,
            },
        );
        McpTrial {
            trials: self.trials.clone(),
            session_id: session_id.to_owned(),
            url: self.trial_url(session_id),
        }
    }

    /// The calls that reached no open trial so far, in arrival order.
    pub fn refused(&self) -> Vec<RefusedCall> {
        self.trials.lock().refused.clone()
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        self.cancel.cancel();
        if let Some(thread) = self.thread.take() {
            // The accept loop ends at once on cancellation; a panic in it has nothing to add.
            let _ = thread.join();
        }
    }
}

/// One trial on the server; the trial ends (its world unreachable, later calls refused) when
/// this is dropped.
pub struct McpTrial {
    trials: Trials,
    session_id: String,
    url: String,
}

impl McpTrial {
    /// The trial's own URL.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for McpTrial {
    fn drop(&mut self) {
        let mut registry = self.trials.lock();
        registry.open.remove(&self.session_id);
        registry.ended.insert(self.session_id.clone());
    }
}

/// `host` of an `http(s)://host[:port]/...` URL (brackets of an IPv6 host removed).
fn url_host(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let authority = rest.split('/').next()?;
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next()?
    } else {
        authority.split(':').next()?
    };
    (!host.is_empty()).then_some(host)
}

type Body = BoxBody<Bytes, Infallible>;

/// Accepts connections until `stop`; each is served by rmcp's service when its path is under
/// [`MCP_PATH`], and answered 404 otherwise.
async fn serve(
    listener: TcpListener,
    service: StreamableHttpService<AppsHandler, LocalSessionManager>,
    trials: Trials,
    stop: CancellationToken,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("judge: the MCP server cannot use its socket: {e}");
            return;
        }
    };
    loop {
        let stream = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // A connection that failed before it was accepted concerns no trial.
                Err(_) => continue,
            },
        };
        let (service, trials, stop) = (service.clone(), trials.clone(), stop.clone());
        tokio::spawn(async move {
            let handle = hyper::service::service_fn(move |request: Request<Incoming>| {
                let (service, trials) = (service.clone(), trials.clone());
                async move { Ok::<_, Infallible>(route(service, trials, request).await) }
            });
            let connection = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), handle)
                .into_owned();
            tokio::select! {
                () = stop.cancelled() => {}
                // A client that hangs up mid-request is its own business.
                _ = connection => {}
            }
        });
    }
}

/// Largest MCP message the server reads (rmcp's own default).
const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

async fn route(
    service: StreamableHttpService<AppsHandler, LocalSessionManager>,
    trials: Trials,
    request: Request<Incoming>,
) -> Response<Body> {
    let path = request.uri().path().to_owned();
    if path != MCP_PATH && !path.starts_with(&format!("{MCP_PATH}/")) {
        return plain(
            StatusCode::NOT_FOUND,
            format!("not found: the apps' MCP server answers at {MCP_PATH}/<session id>\n"),
        );
    }
    if request.method() != hyper::Method::POST {
        return service.handle(request).await;
    }
    // A POST is read whole first, so that a body that is no JSON gets JSON-RPC's parse error
    // (rmcp answers it with a bare 415) and is kept as refused: it named no call to audit.
    let (parts, body) = request.into_parts();
    let bytes = match http_body_util::Limited::new(body, MAX_MESSAGE_BYTES)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(e) => return parse_error(&trials, &path, &parts, format!("unreadable body: {e}")),
    };
    if let Err(e) = serde_json::from_slice::<Value>(&bytes) {
        return parse_error(&trials, &path, &parts, format!("not JSON: {e}"));
    }
    service
        .handle(Request::from_parts(parts, Full::new(bytes)))
        .await
}

fn plain(status: StatusCode, text: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
    *response.status_mut() = status;
    response
}

/// HTTP 400 with JSON-RPC's parse error (-32700), the message kept as refused.
fn parse_error(
    trials: &Trials,
    path: &str,
    parts: &http::request::Parts,
    reason: String,
) -> Response<Body> {
    trials.refuse(RefusedCall {
        session_id: session_of(path, &parts.headers),
        tool: String::new(),
        arguments: Value::Null,
        mcp_request_id: String::new(),
        reason: format!("malformed MCP message: {reason}"),
    });
    let body = serde_json::json!({"jsonrpc": "2.0", "id": null,
        "error": {"code": -32700, "message": format!("Parse error: {reason}")}});
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = StatusCode::BAD_REQUEST;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

/// The session id a request names: its path's last segment, else its `X-Session-Id` header.
fn named_session(context: &RequestContext<RoleServer>) -> String {
    match context.extensions.get::<http::request::Parts>() {
        Some(parts) => session_of(parts.uri.path(), &parts.headers),
        None => String::new(),
    }
}

fn session_of(path: &str, headers: &http::HeaderMap) -> String {
    match path
        .strip_prefix(MCP_PATH)
        .and_then(|p| p.strip_prefix('/'))
    {
        Some(id) if !id.is_empty() => id.trim_end_matches('/').to_owned(),
        _ => headers
            .get(protocol::headers::SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned(),
    }
}

/// The MCP face of the trials: `tools/list` and `tools/call` on the trial a request names.
#[derive(Clone)]
struct AppsHandler {
    trials: Trials,
}

impl ServerHandler for AppsHandler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "agentwall-judge-apps",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "The simulated applications of one trial of `judge apps`: each tool is an app's \
                 action, run on the trial's own world."
                    .to_owned(),
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let session = named_session(&context);
        let (_, world) = self
            .trials
            .find(&session)
            .map_err(|reason| ErrorData::invalid_request(reason, None))?;
        let tools = world.with(|w| {
            tool_specs(w)
                .into_iter()
                .map(|spec| {
                    let schema = match spec.parameters {
                        Value::Object(schema) => schema,
                        _ => Map::new(),
                    };
                    Tool::new(spec.name, spec.description, schema)
                })
                .collect()
        });
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let session = named_session(&context);
        let request_id = context.id.to_string();
        let name = request.name.to_string();
        let params = request.arguments.unwrap_or_default();
        let (agent, world) = match self.trials.find(&session) {
            Ok(found) => found,
            Err(reason) => {
                self.trials.refuse(RefusedCall {
                    session_id: session,
                    tool: name,
                    arguments: Value::Object(params),
                    mcp_request_id: request_id,
                    reason: reason.clone(),
                });
                return Err(ErrorData::invalid_request(reason, None));
            }
        };
        let known = world.with(|w| tool_specs(w).iter().any(|spec| spec.name == name));
        let (app, action) = split_tool_name(&name).unwrap_or(("", name.as_str()));
        if !known {
            let reason = format!("unknown tool `{name}`: tools/list names this trial's tools");
            world.with(|w| {
                w.reject(&agent, app, action, Value::Object(params), reason.clone());
                w.tag_last_call(&request_id);
            });
            return Err(ErrorData::invalid_params(reason, None));
        }
        let result = world.with(|w| {
            let result = w.execute(&agent, app, action, &params);
            w.tag_last_call(&request_id);
            result
        });
        let body = result_body(&result);
        let content = vec![ContentBlock::text(body.to_string())];
        let mut answer = if result.success {
            CallToolResult::success(content)
        } else {
            CallToolResult::error(content)
        };
        answer.structured_content = Some(body);
        Ok(answer.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_names_its_host() {
        assert_eq!(url_host("http://judge:7600"), Some("judge"));
        assert_eq!(url_host("https://example.com/x"), Some("example.com"));
        assert_eq!(url_host("http://[::1]:80/mcp"), Some("::1"));
        assert_eq!(url_host("ftp://x"), None);
        assert_eq!(url_host("http://"), None);
    }
}
