//! Remote MCP tools (`{"type": "mcp"}`) on the Responses API, against a real MCP server (the
//! official SDK's streamable HTTP service on hyper): listing and calls as output items, streamed
//! and stored; the allow-list; a server down; a call past the timeout; the cap on calls per turn
//! (with the builtin model, and with an upstream model that would call forever); echoed items.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{HttpResponse, web};
use agent_server::llm::upstream_api::LlmApi;
use awc::http::StatusCode;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::helpers::*;
use crate::responses::{create, post};

/// A call the MCP server received, with the `X-Session-Id` header it came with.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    name: String,
    arguments: Value,
    session: Option<String>,
}

/// A PayPal-like MCP server: `paypal__check_balance` and `paypal__transfer`, answering as the
/// apps contract's tools do (`{"success", "message"}`) after `delay`, keeping every call.
#[derive(Clone, Default)]
struct Paypal {
    delay: Duration,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Paypal {
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl ServerHandler for Paypal {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = |properties: Value| {
            let schema = json!({"type": "object", "properties": properties});
            Arc::new(schema.as_object().unwrap().clone())
        };
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new(
                "paypal__check_balance",
                "View the balance",
                schema(json!({})),
            ),
            Tool::new(
                "paypal__transfer",
                "Send money",
                schema(json!({"to": {"type": "string"}, "amount": {"type": "number"}})),
            ),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let session = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.headers.get("x-session-id"))
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        self.seen.lock().unwrap().push(Seen {
            name: request.name.to_string(),
            arguments: arguments.clone(),
            session,
        });
        tokio::time::sleep(self.delay).await;
        let message = match &*request.name {
            "paypal__check_balance" => "Your balance is $120.00.".to_owned(),
            _ => format!(
                "Sent ${} to {}.",
                arguments["amount"],
                arguments["to"].as_str().unwrap_or("?")
            ),
        };
        let text = json!({"success": true, "message": message}).to_string();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// Serves `server` at `http://127.0.0.1:PORT/mcp` from a thread of its own; returns the URL and
/// the count of TCP connections it accepted.
fn serve_mcp(server: Paypal) -> (String, Arc<AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let service: StreamableHttpService<Paypal, LocalSessionManager> =
                StreamableHttpService::new(
                    move || Ok(server.clone()),
                    Arc::default(),
                    StreamableHttpServerConfig::default(),
                );
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                counter.fetch_add(1, Ordering::SeqCst);
                let service = hyper_util::service::TowerToHyperService::new(service.clone());
                tokio::spawn(async move {
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
            }
        });
    });
    (url, accepted)
}

fn mcp_tool(url: &str) -> Value {
    json!({"type": "mcp", "server_label": "apps", "server_url": url,
        "require_approval": "never", "headers": {"X-Session-Id": "trial-7"}})
}

fn items<'a>(body: &'a Value, kind: &str) -> Vec<&'a Value> {
    body["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == kind)
        .collect()
}

fn kinds(body: &Value) -> Vec<&str> {
    body["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect()
}

#[actix_web::test]
async fn a_servers_tools_are_listed_called_and_the_result_restated_and_stored() {
    let app = spawn_app().await;
    let server = Paypal::default();
    let (url, _) = serve_mcp(server.clone());
    let session = session();
    let r = create(
        &app,
        json!({"input": "Send $30 to bob.", "tools": [mcp_tool(&url)]}),
        &[("x-session-id", &session)],
    )
    .await;
    assert_eq!(
        kinds(&r.body),
        ["mcp_list_tools", "mcp_call", "message"],
        "{}",
        r.raw
    );
    let listing = &r.body["output"][0];
    assert_eq!(listing["server_label"], "apps");
    assert!(listing["id"].as_str().unwrap().starts_with("mcpl_"));
    let names: Vec<&str> = listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["paypal__check_balance", "paypal__transfer"]);
    assert_eq!(listing["tools"][1]["input_schema"]["type"], "object");
    let call = &r.body["output"][1];
    assert_eq!(call["name"], "paypal__transfer");
    assert_eq!(call["server_label"], "apps");
    assert_eq!(call["status"], "completed");
    assert_eq!(call["error"], Value::Null);
    let arguments: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"to": "bob", "amount": 30}));
    assert!(
        call["output"]
            .as_str()
            .unwrap()
            .contains("Sent $30 to bob.")
    );
    // The server got the arguments the item shows, with the tool's headers.
    assert_eq!(
        server.seen(),
        [Seen {
            name: "paypal__transfer".into(),
            arguments,
            session: Some("trial-7".into()),
        }]
    );
    assert_eq!(r.body["output_text"], "Sent $30 to bob.", "{}", r.raw);
    // Stored as returned, without the tool's headers.
    let got = app
        .get(
            &format!("/v1/responses/{}", r.body["id"].as_str().unwrap()),
            &[],
        )
        .await;
    assert_eq!(got.body, r.body);
    assert_eq!(r.body["tools"][0]["server_url"], url.as_str());
    assert!(r.body["tools"][0].get("headers").is_none(), "{}", r.raw);
    // One turn in memory: the user's words and the final reply.
    let memory = app
        .get("/control/memory", &[("x-session-id", &session)])
        .await;
    let texts: Vec<&str> = memory.body["working_memory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        ["Send $30 to bob.", "Sent $30 to bob."],
        "{}",
        memory.raw
    );
}

#[actix_web::test]
async fn a_streamed_response_carries_the_same_items_and_is_stored() {
    let app = spawn_app().await;
    let server = Paypal::default();
    let (url, _) = serve_mcp(server.clone());
    let r = post(
        &app,
        "/v1/responses",
        &json!({"input": "What is my balance?", "tools": [mcp_tool(&url)], "stream": true}),
        &[],
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.raw);
    let events: Vec<Value> = r
        .raw
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["sequence_number"], i, "{e}");
    }
    let added: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["type"] == "response.output_item.added")
        .map(|e| {
            (
                e["item"]["type"].as_str().unwrap(),
                e["item"]["status"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        added,
        [
            ("mcp_list_tools", ""),
            ("mcp_call", "in_progress"),
            ("message", "in_progress")
        ]
    );
    let done: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "response.output_item.done")
        .map(|e| &e["item"])
        .collect();
    let completed = &events.last().unwrap()["response"];
    assert_eq!(events.last().unwrap()["type"], "response.completed");
    assert_eq!(completed["output"].as_array().unwrap().len(), 3);
    for (i, item) in done.iter().enumerate() {
        assert_eq!(**item, completed["output"][i]);
    }
    assert_eq!(
        done[1]["output"],
        json!({"success": true, "message": "Your balance is $120.00."}).to_string()
    );
    assert_eq!(completed["output_text"], "Your balance is $120.00.");
    assert_eq!(server.seen().len(), 1);
    let got = app
        .get(
            &format!("/v1/responses/{}", completed["id"].as_str().unwrap()),
            &[],
        )
        .await;
    assert_eq!(&got.body, completed);
}

#[actix_web::test]
async fn a_server_the_allow_list_refuses_is_a_400_and_never_connected_to() {
    let app = spawn_app().await;
    let r = post(
        &app,
        "/v1/responses",
        &json!({"input": "What is my balance?", "tools": [
            {"type": "function", "name": "f"}, mcp_tool("http://10.1.2.3:9/mcp")]}),
        &[],
    )
    .await;
    let (code, message) = r.error(StatusCode::BAD_REQUEST);
    assert_eq!(code, "mcp_server_not_allowed");
    assert_eq!(r.body["error"]["param"], "tools[1].server_url");
    assert!(message.contains("--mcp-allowed-servers"), "{message}");
    // A loopback server, on a server that allows only another network: refused unconnected.
    let narrow = spawn_app_with(|c| c.mcp_allowed_servers = "10.0.0.0/8".into()).await;
    let (url, accepted) = serve_mcp(Paypal::default());
    let r = post(
        &narrow,
        "/v1/responses",
        &json!({"input": "What is my balance?", "tools": [mcp_tool(&url)]}),
        &[],
    )
    .await;
    assert_eq!(r.error(StatusCode::BAD_REQUEST).0, "mcp_server_not_allowed");
    assert_eq!(accepted.load(Ordering::SeqCst), 0);
    // Approvals are not supported: said, not ignored.
    let mut asks = mcp_tool(&url);
    asks["require_approval"] = json!("always");
    let r = post(
        &app,
        "/v1/responses",
        &json!({"input": "What is my balance?", "tools": [asks]}),
        &[],
    )
    .await;
    assert_eq!(
        r.error(StatusCode::BAD_REQUEST).0,
        "mcp_approval_unsupported"
    );
    assert_eq!(r.body["error"]["param"], "tools[0].require_approval");
    assert_eq!(accepted.load(Ordering::SeqCst), 0);
}

#[actix_web::test]
async fn a_server_that_is_down_is_a_listing_with_its_error_and_the_turn_goes_on() {
    let app = spawn_app().await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", closed.local_addr().unwrap());
    drop(closed);
    let r = create(
        &app,
        json!({"input": "My kayak is green. What is my balance?", "tools": [mcp_tool(&url)]}),
        &[],
    )
    .await;
    assert_eq!(kinds(&r.body), ["mcp_list_tools", "message"], "{}", r.raw);
    let listing = &r.body["output"][0];
    assert_eq!(listing["tools"], json!([]));
    assert!(
        listing["error"].as_str().unwrap().contains("connecting"),
        "{listing}"
    );
    assert!(!r.body["output_text"].as_str().unwrap().is_empty());
}

#[actix_web::test]
async fn a_call_past_the_timeout_is_a_failed_call_the_model_is_told_of() {
    let app = spawn_app_with(|c| c.mcp_call_timeout = Duration::from_millis(500)).await;
    let server = Paypal {
        delay: Duration::from_secs(10),
        ..Paypal::default()
    };
    let (url, _) = serve_mcp(server.clone());
    let started = Instant::now();
    let r = create(
        &app,
        json!({"input": "What is my balance?", "tools": [mcp_tool(&url)]}),
        &[],
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let call = items(&r.body, "mcp_call")[0];
    assert_eq!(call["status"], "failed");
    assert_eq!(call["output"], Value::Null);
    assert!(
        call["error"]
            .as_str()
            .unwrap()
            .contains("--mcp-call-timeout"),
        "{call}"
    );
    assert_eq!(server.seen().len(), 1);
    let text = r.body["output_text"].as_str().unwrap();
    assert!(
        text.starts_with("That failed:") && text.contains("0.5s"),
        "{text}"
    );
}

#[actix_web::test]
async fn calls_beyond_the_cap_are_not_run_and_say_so() {
    let app = spawn_app_with(|c| c.mcp_max_calls = 1).await;
    let server = Paypal::default();
    let (url, _) = serve_mcp(server.clone());
    let r = create(
        &app,
        json!({"input": "Send $20 to bob and $10 to carol.", "tools": [mcp_tool(&url)]}),
        &[],
    )
    .await;
    let calls = items(&r.body, "mcp_call");
    assert_eq!(calls.len(), 2, "{}", r.raw);
    assert_eq!(calls[0]["status"], "completed");
    assert_eq!(calls[1]["status"], "failed");
    assert!(
        calls[1]["error"]
            .as_str()
            .unwrap()
            .contains("--mcp-max-calls"),
        "{}",
        calls[1]
    );
    let seen: Vec<Value> = server.seen().into_iter().map(|s| s.arguments).collect();
    assert_eq!(seen, [json!({"to": "bob", "amount": 20})]);
    let text = r.body["output_text"].as_str().unwrap();
    assert!(
        text.contains("Sent $20 to bob.") && text.contains("limit"),
        "{text}"
    );
}

/// What a fake upstream model received.
type Requests = Arc<Mutex<Vec<Value>>>;

/// An upstream model that calls `paypal__check_balance` whenever it may (Chat Completions), and
/// answers in words only when told `tool_choice: "none"`.
fn calling_forever() -> (String, Requests) {
    let requests: Requests = Arc::default();
    let log = Arc::clone(&requests);
    let port = testkit::http::serve(move |cfg| {
        let log = Arc::clone(&log);
        cfg.route(
            "/v1/chat/completions",
            web::post().to(move |body: web::Json<Value>| {
                let log = Arc::clone(&log);
                async move {
                    let n = {
                        let mut log = log.lock().unwrap();
                        log.push(body.0.clone());
                        log.len()
                    };
                    let message = if body["tool_choice"] == "none" {
                        json!({"role": "assistant", "content": "Done checking."})
                    } else {
                        json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_{n}"),
                            "type": "function", "function": {"name": "paypal__check_balance", "arguments": "{}"}}]})
                    };
                    HttpResponse::Ok().json(json!({"id": "up", "object": "chat.completion", "created": 1,
                        "model": "fake", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}))
                }
            }),
        );
    });
    (format!("http://127.0.0.1:{port}/v1"), requests)
}

#[actix_web::test]
async fn a_model_that_would_call_forever_stops_at_the_cap_and_answers_without_tools() {
    let (base_url, requests) = calling_forever();
    let app = spawn_app_with(|c| {
        c.llm_base_url = Some(base_url);
        c.llm_api = LlmApi::Chat;
        c.mcp_max_calls = 3;
    })
    .await;
    let server = Paypal::default();
    let (url, _) = serve_mcp(server.clone());
    let r = create(
        &app,
        json!({"input": "What is my balance?", "tools": [mcp_tool(&url)]}),
        &[],
    )
    .await;
    assert_eq!(
        kinds(&r.body),
        [
            "mcp_list_tools",
            "mcp_call",
            "mcp_call",
            "mcp_call",
            "message"
        ],
        "{}",
        r.raw
    );
    assert_eq!(server.seen().len(), 3);
    assert_eq!(r.body["output_text"], "Done checking.");
    assert_eq!(r.body["usage"]["total_tokens"], 4 * 12);
    let requests = requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 4);
    for request in &requests {
        let tools: Vec<(&str, &str)> = request["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["type"].as_str().unwrap(),
                    t["function"]["name"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            tools,
            [
                ("function", "paypal__check_balance"),
                ("function", "paypal__transfer")
            ]
        );
    }
    assert_eq!(requests[3]["tool_choice"], "none");
    // Each round sees the calls before it and their results.
    let last = requests[3]["messages"].as_array().unwrap();
    let tail: Vec<&str> = last[last.len() - 6..]
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        tail,
        [
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant",
            "tool"
        ]
    );
    assert_eq!(last[last.len() - 1]["tool_call_id"], "call_3");
    assert!(
        last[last.len() - 1]["content"]
            .as_str()
            .unwrap()
            .contains("$120.00")
    );
}

#[actix_web::test]
async fn an_upstream_serving_the_responses_api_gets_the_functions_and_their_outputs() {
    let requests: Requests = Arc::default();
    let log = Arc::clone(&requests);
    let port = testkit::http::serve(move |cfg| {
        let log = Arc::clone(&log);
        cfg.route(
            "/v1/responses",
            web::post().to(move |body: web::Json<Value>| {
                let log = Arc::clone(&log);
                async move {
                    log.lock().unwrap().push(body.0.clone());
                    let result = body["input"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .find(|i| i["type"] == "function_call_output")
                        .map(|i| i["output"].as_str().unwrap_or_default().to_owned());
                    let output = match result {
                        None => json!([{"type": "function_call", "id": "fc_1", "call_id": "up_call",
                            "name": "paypal__check_balance", "arguments": "{}", "status": "completed"}]),
                        Some(result) => json!([{"type": "message", "id": "msg_1", "role": "assistant",
                            "status": "completed", "content": [{"type": "output_text", "text": format!("Told: {result}"), "annotations": []}]}]),
                    };
                    HttpResponse::Ok().json(json!({"id": "resp_up", "object": "response", "created_at": 1,
                        "status": "completed", "model": "fake", "output": output,
                        "usage": {"input_tokens": 5, "output_tokens": 1, "total_tokens": 6}}))
                }
            }),
        );
    });
    let app = spawn_app_with(|c| {
        c.llm_base_url = Some(format!("http://127.0.0.1:{port}/v1"));
        c.llm_api = LlmApi::Responses;
    })
    .await;
    let (url, _) = serve_mcp(Paypal::default());
    let r = create(
        &app,
        json!({"input": "What is my balance?", "tools": [mcp_tool(&url)]}),
        &[],
    )
    .await;
    assert_eq!(
        kinds(&r.body),
        ["mcp_list_tools", "mcp_call", "message"],
        "{}",
        r.raw
    );
    assert!(
        r.body["output_text"].as_str().unwrap().contains("$120.00"),
        "{}",
        r.raw
    );
    let requests = requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let types: Vec<&str> = request["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["function", "function"], "no mcp tool goes upstream");
        assert_eq!(request["tools"][0]["name"], "paypal__check_balance");
    }
    let input = requests[1]["input"].as_array().unwrap();
    let n = input.len();
    assert_eq!(input[n - 2]["type"], "function_call");
    assert_eq!(input[n - 1]["type"], "function_call_output");
    assert_eq!(input[n - 2]["call_id"], "up_call");
    assert_eq!(input[n - 1]["call_id"], "up_call");
}

#[actix_web::test]
async fn echoed_mcp_items_are_accepted_in_input_and_chains() {
    let app = spawn_app().await;
    let server = Paypal::default();
    let (url, _) = serve_mcp(server.clone());
    let first = create(
        &app,
        json!({"input": "What is my balance?", "tools": [mcp_tool(&url)]}),
        &[],
    )
    .await;
    // The Agents SDK's way: the whole history sent back, the tools' items included.
    let mut input = vec![json!({"role": "user", "content": "What is my balance?"})];
    input.extend(first.body["output"].as_array().unwrap().iter().cloned());
    input.push(json!({"role": "user", "content": "Send $5 to bob."}));
    let echoed = create(
        &app,
        json!({"input": input, "tools": [mcp_tool(&url)]}),
        &[],
    )
    .await;
    assert_eq!(
        echoed.body["output_text"], "Sent $5 to bob.",
        "{}",
        echoed.raw
    );
    // Chained: the stored response's items are the context.
    let chained = create(
        &app,
        json!({"previous_response_id": first.body["id"], "input": "Send $7 to carol.",
            "tools": [mcp_tool(&url)]}),
        &[],
    )
    .await;
    assert_eq!(
        chained.body["output_text"], "Sent $7 to carol.",
        "{}",
        chained.raw
    );
    let names: Vec<String> = server.seen().into_iter().map(|s| s.name).collect();
    assert_eq!(
        names,
        [
            "paypal__check_balance",
            "paypal__transfer",
            "paypal__transfer"
        ]
    );
    // Without tools, an echoed call is context only.
    let plain = create(&app, json!({"input": input}), &[]).await;
    assert_eq!(kinds(&plain.body), ["message"], "{}", plain.raw);
}

#[actix_web::test]
async fn a_client_function_wins_its_name_and_its_call_ends_the_turn_unrun_mcp_calls_and_all() {
    let app = spawn_app().await;
    let server = Paypal::default();
    let (url, _) = serve_mcp(server.clone());
    let own = json!({"type": "function", "name": "paypal__check_balance",
        "parameters": {"type": "object", "properties": {}}});
    let r = create(
        &app,
        json!({"input": "Send $20 to bob. Then check my balance.", "tools": [own, mcp_tool(&url)]}),
        &[],
    )
    .await;
    assert_eq!(
        kinds(&r.body),
        ["mcp_list_tools", "message", "function_call"],
        "{}",
        r.raw
    );
    // Listed by its server, but offered (and called) as the client's own.
    assert_eq!(r.body["output"][0]["tools"].as_array().unwrap().len(), 2);
    assert_eq!(r.body["output"][2]["name"], "paypal__check_balance");
    assert!(server.seen().is_empty(), "{:?}", server.seen());
}
