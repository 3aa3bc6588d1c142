//! Upstream mode against fake OpenAI-compatible servers (actix-web on port 0 in this process):
//! error mapping (429 + Retry-After, timeout, refused, garbage), streaming pass-through with tool
//! calls, commit-before-[DONE], memory in the prompt, traceparent forwarding, and /metrics.
// Tests spawn their own tasks (servers, concurrent clients), outside any request.
#![allow(clippy::disallowed_methods)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use agent_server::config::Config;
use agent_server::startup::Application;
use agent_server::telemetry::LogFormat;
use awc::http::StatusCode;
use bytes::Bytes;
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use tempfile::TempDir;

/// What the fake upstream received.
#[derive(Clone, Debug)]
struct Seen {
    headers: Vec<(String, String)>,
    body: Value,
    /// The caller's address: one per TCP connection, so distinct values count connections.
    peer: Option<std::net::SocketAddr>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

type Log = Arc<Mutex<Vec<Seen>>>;

/// One scripted answer of the fake upstream.
#[derive(Clone)]
enum Script {
    Json(u16, Vec<(&'static str, &'static str)>, String),
    /// Server-sent events: (delay before the event, event data).
    Sse(Vec<(Duration, String)>),
    /// Echo the system message back as the reply.
    EchoSystem,
    Sleep(Duration),
}

async fn fake_handler(
    req: HttpRequest,
    body: Bytes,
    script: web::Data<Script>,
    log: web::Data<Log>,
) -> HttpResponse {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let headers = req
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                v.to_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    log.lock().unwrap().push(Seen {
        headers,
        body: body.clone(),
        peer: req.peer_addr(),
    });
    match script.get_ref().clone() {
        Script::Json(status, headers, text) => {
            let mut r = HttpResponse::build(StatusCode::from_u16(status).unwrap());
            for h in headers {
                r.insert_header(h);
            }
            r.content_type("application/json").body(text)
        }
        Script::Sse(events) => {
            let stream = futures_util::stream::iter(events).then(|(delay, data)| async move {
                actix_web::rt::time::sleep(delay).await;
                Ok::<_, std::convert::Infallible>(Bytes::from(format!("data: {data}\n\n")))
            });
            HttpResponse::Ok()
                .content_type("text/event-stream")
                .streaming(stream)
        }
        Script::EchoSystem => {
            let system = body["messages"][0]["content"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            HttpResponse::Ok().json(completion(&system))
        }
        Script::Sleep(d) => {
            actix_web::rt::time::sleep(d).await;
            HttpResponse::Ok().json(completion("too late"))
        }
    }
}

fn completion(text: &str) -> Value {
    json!({"id": "up-1", "object": "chat.completion", "created": 1, "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}})
}

/// Starts a fake upstream; returns its base URL (`.../v1`) and the log of what it received.
fn fake_upstream(script: Script) -> (String, Log) {
    let log: Log = Arc::default();
    let data_log = web::Data::new(log.clone());
    let data_script = web::Data::new(script);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data_log.clone())
            .app_data(data_script.clone())
            .route("/v1/chat/completions", web::post().to(fake_handler))
    })
    // Like a real upstream server: its own small writes must not wait on Nagle's algorithm, or
    // the tests would measure the fake instead of agent-server.
    .on_connect(|conn, _| {
        if let Some(tcp) = conn.downcast_ref::<actix_web::rt::net::TcpStream>() {
            tcp.set_nodelay(true).expect("set TCP_NODELAY");
        }
    })
    .workers(1)
    .listen(listener)
    .unwrap()
    .run();
    actix_web::rt::spawn(server);
    (format!("http://127.0.0.1:{port}/v1"), log)
}

struct TestApp {
    address: String,
    client: awc::Client,
    _data: TempDir,
}

async fn spawn_app(base_url: &str, configure: impl FnOnce(&mut Config)) -> TestApp {
    // Installs the tracing subscriber and the W3C propagator once for this test binary, so
    // traceparent handling is exercised as in the binary.
    let _ = agent_server::telemetry::init(LogFormat::Text);
    let data = tempfile::tempdir().unwrap();
    let mut config = Config::for_tests(data.path());
    config.workers = Some(1);
    config.llm_base_url = Some(base_url.to_owned());
    config.llm_model = Some("fake-model".into());
    config.llm_timeout = Duration::from_secs(5);
    configure(&mut config);
    let app = Application::build(config).await.expect("server starts");
    let address = format!("http://127.0.0.1:{}", app.port());
    actix_web::rt::spawn(app.run_until_stopped());
    let client = awc::Client::builder()
        .timeout(Duration::from_secs(30))
        .finish();
    TestApp {
        address,
        client,
        _data: data,
    }
}

struct Reply {
    status: StatusCode,
    headers: awc::http::header::HeaderMap,
    raw: String,
    body: Value,
}

impl TestApp {
    fn chat_request(&self, session: &str) -> awc::ClientRequest {
        self.client
            .post(format!("{}/v1/chat/completions", self.address))
            .insert_header(("content-type", "application/json"))
            .insert_header(("x-session-id", session))
    }

    /// A streamed "hi", returned as soon as its response head arrives.
    async fn open_stream(
        &self,
        session: &str,
    ) -> awc::ClientResponse<
        impl futures_util::Stream<Item = Result<Bytes, awc::error::PayloadError>>,
    > {
        self.chat_request(session)
            .send_body(streamed_hi().to_string())
            .await
            .unwrap()
    }

    /// A streamed "hi", read to its end.
    async fn say_streamed(&self, session: &str) -> Reply {
        self.chat(session, streamed_hi(), &[]).await
    }

    async fn chat(&self, session: &str, body: Value, headers: &[(&str, &str)]) -> Reply {
        let mut req = self.chat_request(session);
        for h in headers {
            req = req.insert_header(*h);
        }
        let mut response = req.send_body(body.to_string()).await.expect("sent");
        let bytes = response.body().limit(1 << 24).await.expect("body");
        let raw = String::from_utf8_lossy(&bytes).into_owned();
        Reply {
            status: response.status(),
            headers: response.headers().clone(),
            body: serde_json::from_str(&raw).unwrap_or(Value::Null),
            raw,
        }
    }

    async fn say(&self, session: &str, text: &str) -> Reply {
        self.chat(
            session,
            json!({"model": "anything", "messages": [{"role": "user", "content": text}]}),
            &[],
        )
        .await
    }

    async fn memory(&self, session: &str) -> Value {
        let mut r = self
            .client
            .get(format!("{}/control/memory", self.address))
            .insert_header(("x-session-id", session))
            .send()
            .await
            .unwrap();
        r.json().limit(1 << 24).await.unwrap()
    }

    async fn get_text(&self, path: &str) -> String {
        let mut r = self
            .client
            .get(format!("{}{path}", self.address))
            .send()
            .await
            .unwrap();
        String::from_utf8_lossy(&r.body().limit(1 << 24).await.unwrap()).into_owned()
    }
}

/// The body of a streamed chat turn saying "hi".
fn streamed_hi() -> Value {
    json!({"stream": true, "messages": [{"role": "user", "content": "hi"}]})
}

fn error_of(reply: &Reply, status: u16) -> (String, String) {
    assert_eq!(reply.status.as_u16(), status, "{}", reply.raw);
    let e = &reply.body["error"];
    assert!(
        e["type"].is_string(),
        "not OpenAI's error shape: {}",
        reply.raw
    );
    (
        e["code"].as_str().unwrap_or_default().into(),
        e["message"].as_str().unwrap_or_default().into(),
    )
}

/// The `data:` payloads of an SSE body.
fn sse_events(raw: &str) -> Vec<String> {
    raw.split("\n\n")
        .filter_map(|e| e.trim().strip_prefix("data: ").map(str::to_owned))
        .collect()
}

#[actix_web::test]
async fn rate_limit_stays_429_with_the_upstreams_retry_after() {
    let (url, _) = fake_upstream(Script::Json(
        429,
        vec![("retry-after", "17")],
        r#"{"error":{"message":"Rate limit reached for fake-model","type":"requests"}}"#.into(),
    ));
    let app = spawn_app(&url, |_| {}).await;
    let r = app.say("s-429", "hello").await;
    let (code, message) = error_of(&r, 429);
    assert_eq!(code, "upstream_rate_limited");
    assert!(
        message.contains("upstream") && message.contains("Rate limit reached"),
        "{message}"
    );
    assert_eq!(r.headers.get("retry-after").unwrap(), "17");
}

#[actix_web::test]
async fn a_slow_upstream_is_a_504() {
    let (url, _) = fake_upstream(Script::Sleep(Duration::from_secs(5)));
    let app = spawn_app(&url, |c| c.llm_timeout = Duration::from_millis(300)).await;
    let started = Instant::now();
    let r = app.say("s-504", "hello").await;
    let (code, message) = error_of(&r, 504);
    assert_eq!(code, "upstream_timeout");
    assert!(
        message.contains("upstream") && message.contains("--llm-timeout"),
        "{message}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    // Streams too: the response head never came, so it is still an HTTP 504.
    let r = app.say_streamed("s-504").await;
    assert_eq!(error_of(&r, 504).0, "upstream_timeout");
}

#[actix_web::test]
async fn a_refused_connection_is_a_502_naming_the_upstream() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let app = spawn_app(&format!("http://127.0.0.1:{port}/v1"), |_| {}).await;
    let r = app.say("s-502", "hello").await;
    let (code, message) = error_of(&r, 502);
    assert_eq!(code, "upstream_unreachable");
    assert!(
        message.contains("upstream") && message.contains(&port.to_string()),
        "{message}"
    );
}

#[actix_web::test]
async fn garbage_and_upstream_errors_are_502_with_the_upstreams_message() {
    let (url, _) = fake_upstream(Script::Json(200, vec![], "<html>surprise</html>".into()));
    let app = spawn_app(&url, |_| {}).await;
    let (code, message) = error_of(&app.say("s-g", "hello").await, 502);
    assert_eq!(code, "upstream_bad_response");
    assert!(
        message.contains("upstream") && message.contains("surprise"),
        "{message}"
    );

    let (url, _) = fake_upstream(Script::Json(
        500,
        vec![],
        r#"{"error":{"message":"the GPU caught fire"}}"#.into(),
    ));
    let app = spawn_app(&url, |_| {}).await;
    let (code, message) = error_of(&app.say("s-g", "hello").await, 502);
    assert_eq!(code, "upstream_status");
    assert!(
        message.contains("HTTP 500") && message.contains("the GPU caught fire"),
        "{message}"
    );

    // Garbage in the middle of a stream: an error event and no [DONE].
    let (url, _) = fake_upstream(Script::Sse(vec![
        (
            Duration::ZERO,
            chunk(json!({"role": "assistant", "content": "Hi"}), None),
        ),
        (Duration::ZERO, "not json".into()),
    ]));
    let app = spawn_app(&url, |_| {}).await;
    let r = app.say_streamed("s-g").await;
    let events = sse_events(&r.raw);
    assert!(
        events.last().unwrap().contains("upstream_bad_response"),
        "{}",
        r.raw
    );
    assert!(!r.raw.contains("[DONE]"), "{}", r.raw);
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    json!({"id": "up-c", "object": "chat.completion.chunk", "created": 1, "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    .to_string()
}

fn usage_chunk() -> String {
    json!({"id": "up-c", "object": "chat.completion.chunk", "created": 1, "model": "fake-model", "choices": [],
        "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}})
    .to_string()
}

fn tool_call_stream(pause: Duration) -> Vec<(Duration, String)> {
    let call = |v: Value| chunk(json!({"tool_calls": [v]}), None);
    vec![
        (
            Duration::ZERO,
            chunk(json!({"role": "assistant", "content": null}), None),
        ),
        (
            pause,
            call(
                json!({"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}),
            ),
        ),
        (
            Duration::ZERO,
            call(json!({"index": 0, "function": {"arguments": "{\"city\":"}})),
        ),
        (
            Duration::ZERO,
            call(json!({"index": 0, "function": {"arguments": "\"Oslo\"}"}})),
        ),
        (Duration::ZERO, chunk(json!({}), Some("tool_calls"))),
        (Duration::ZERO, usage_chunk()),
        (Duration::ZERO, "[DONE]".into()),
    ]
}

#[actix_web::test]
async fn streams_pass_tool_calls_through_both_ways_and_usage_only_when_asked() {
    let (url, log) = fake_upstream(Script::Sse(tool_call_stream(Duration::ZERO)));
    let app = spawn_app(&url, |_| {}).await;
    let tools = json!([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]);
    let request = json!({"model": "m", "stream": true, "tools": tools, "tool_choice": "auto", "temperature": 0.2,
        "messages": [{"role": "user", "content": "What's the weather in Oslo?"}]});
    let r = app.chat("s-tools", request.clone(), &[]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.raw);
    let events = sse_events(&r.raw);
    assert_eq!(events.last().unwrap(), "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    let arguments: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    assert_eq!(arguments, r#"{"city":"Oslo"}"#);
    assert_eq!(
        chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["id"].as_str())
            .collect::<Vec<_>>(),
        ["call_1"]
    );
    assert!(
        chunks
            .iter()
            .any(|c| c["choices"][0]["finish_reason"] == "tool_calls"),
        "{}",
        r.raw
    );
    assert!(
        chunks
            .iter()
            .all(|c| c.get("usage").is_none_or(Value::is_null)),
        "usage not asked for: {}",
        r.raw
    );

    // What went upstream: the tools, the client's parameters, our model, and a request for usage.
    let sent = log.lock().unwrap()[0].clone();
    assert_eq!(sent.body["tools"], tools);
    assert_eq!(sent.body["tool_choice"], "auto");
    assert_eq!(sent.body["temperature"], 0.2);
    assert_eq!(sent.body["model"], "fake-model");
    assert_eq!(sent.body["stream"], true);
    assert_eq!(sent.body["stream_options"]["include_usage"], true);
    assert_eq!(sent.body["messages"][0]["role"], "system");
    assert_eq!(
        sent.body["messages"].as_array().unwrap().last().unwrap()["content"],
        "What's the weather in Oslo?"
    );

    // The tool result goes back upstream with the assistant's tool call, in the client's order.
    let follow_up = json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}, "tools": tools, "messages": [
        {"role": "user", "content": "What's the weather in Oslo?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp_c\": 4}"}]});
    let r = app.chat("s-tools", follow_up, &[]).await;
    let events = sse_events(&r.raw);
    let usage: Value = serde_json::from_str(&events[events.len() - 2]).unwrap();
    assert_eq!(
        usage["usage"]["total_tokens"], 49,
        "usage asked for: {}",
        r.raw
    );
    let sent = log.lock().unwrap()[1].clone();
    let messages = sent.body["messages"].as_array().unwrap();
    let tail = &messages[messages.len() - 2..];
    assert_eq!(tail[0]["tool_calls"][0]["id"], "call_1");
    assert_eq!(tail[1]["role"], "tool");
    assert_eq!(tail[1]["tool_call_id"], "call_1");

    // The stored tool-call turn is not sent twice: the client sent it itself.
    assert!(
        !messages.iter().any(|m| m["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("(called"))),
        "{messages:?}"
    );

    // The turn was stored once, the tool call noted as the reply; the follow-up stored only its reply.
    let memory = app.memory("s-tools").await;
    let working: Vec<&str> = memory["working_memory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        working
            .iter()
            .filter(|t| **t == "What's the weather in Oslo?")
            .count(),
        1,
        "{memory}"
    );
    assert_eq!(
        working.len(),
        3,
        "user turn, tool-call note, follow-up reply: {memory}"
    );
    assert!(
        working
            .iter()
            .any(|t| t.contains("get_weather({\"city\":\"Oslo\"})")),
        "{memory}"
    );
}

#[actix_web::test]
async fn the_first_chunk_goes_out_before_the_upstream_finishes() {
    let (url, _) = fake_upstream(Script::Sse(tool_call_stream(Duration::from_millis(1500))));
    let app = spawn_app(&url, |_| {}).await;
    let started = Instant::now();
    let mut response = app.open_stream("s-first").await;
    assert_eq!(response.status(), StatusCode::OK);
    let first = response.next().await.unwrap().unwrap();
    let first_at = started.elapsed();
    // The stream is still in flight after its handler returned (and so is this /metrics request).
    let metrics = app.get_text("/metrics").await;
    let in_flight: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("agentwall_http_requests_in_flight "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(in_flight >= 2.0, "in flight: {in_flight}");
    assert!(
        String::from_utf8_lossy(&first).contains("\"role\":\"assistant\""),
        "{first:?}"
    );
    let mut rest = Vec::new();
    while let Some(piece) = response.next().await {
        rest.extend_from_slice(&piece.unwrap());
    }
    let total = started.elapsed();
    assert!(
        first_at < Duration::from_millis(1000),
        "first chunk after {first_at:?}"
    );
    assert!(
        total >= Duration::from_millis(1500),
        "whole stream in {total:?}"
    );
    assert!(String::from_utf8_lossy(&rest).ends_with("data: [DONE]\n\n"));
}

#[actix_web::test]
async fn unchanged_chunks_reach_the_client_byte_for_byte_in_the_upstreams_order() {
    // Spacing, key order, a vendor field and a number written `2.50`: re-serialising would change
    // each of them.
    let vendor = |i: usize| {
        format!(
            r#"{{"id": "up-c",  "object": "chat.completion.chunk", "created": 1, "model": "fake-model", "choices": [{{"index": 0, "delta": {{"content": "w{i} "}}, "finish_reason": null}}], "x_vendor": {{"z": 1, "a": 2.50}}}}"#
        )
    };
    // A burst (sent together) and then one more after a pause.
    let mut events: Vec<(Duration, String)> = (0..5).map(|i| (Duration::ZERO, vendor(i))).collect();
    events.push((Duration::from_millis(50), vendor(5)));
    events.push((Duration::ZERO, chunk(json!({}), Some("stop"))));
    events.push((Duration::ZERO, "[DONE]".into()));
    let (url, _) = fake_upstream(Script::Sse(events));
    let app = spawn_app(&url, |_| {}).await;
    let r = app.say_streamed("s-bytes").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.raw);
    let events = sse_events(&r.raw);
    let expected: Vec<String> = (0..6).map(vendor).collect();
    assert_eq!(events[..6], expected[..], "{}", r.raw);
    assert!(events[6].contains("\"stop\""), "{}", r.raw);
    assert_eq!(events[7..], ["[DONE]"]);
    let memory = app.memory("s-bytes").await;
    assert_eq!(
        memory["working_memory"][1]["text"], "w0 w1 w2 w3 w4 w5 ",
        "{memory}"
    );
}

/// The JSON of each event, its `data:` lines joined as an SSE client joins them.
fn sse_data(raw: &str) -> Vec<String> {
    raw.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            e.lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

#[actix_web::test]
async fn events_over_several_lines_stay_events_and_usage_nulls_go_unless_asked_for() {
    // An event whose JSON spans two `data:` lines, and a chunk with `"usage": null` as OpenAI
    // writes it in every chunk once usage is asked for.
    let two_lines = "{\"id\": \"up-c\", \"object\": \"chat.completion.chunk\", \"created\": 1, \"model\": \"m\",\ndata: \"choices\": [{\"index\": 0, \"delta\": {\"content\": \"one \"}, \"finish_reason\": null}]}";
    let usage_null = r#"{"id":"up-c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"two"},"finish_reason":null}],"usage":null}"#;
    let events = vec![
        (Duration::ZERO, two_lines.to_owned()),
        (Duration::ZERO, usage_null.to_owned()),
        (Duration::ZERO, chunk(json!({}), Some("stop"))),
        (Duration::ZERO, "[DONE]".into()),
    ];
    let (url, _) = fake_upstream(Script::Sse(events));
    let app = spawn_app(&url, |_| {}).await;
    for include_usage in [false, true] {
        let r = app
            .chat(
                "s-lines",
                json!({"stream": true, "stream_options": {"include_usage": include_usage},
                    "messages": [{"role": "user", "content": "hi"}]}),
                &[],
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.raw);
        let data = sse_data(&r.raw);
        let first: Value = serde_json::from_str(&data[0]).expect("the two lines are one event");
        assert_eq!(first["choices"][0]["delta"]["content"], "one ");
        assert_eq!(data[0], two_lines.replace("\ndata: ", "\n"));
        let second: Value = serde_json::from_str(&data[1]).unwrap();
        assert_eq!(second["choices"][0]["delta"]["content"], "two");
        if include_usage {
            assert_eq!(data[1], usage_null, "asked for: unchanged");
        } else {
            assert!(second.get("usage").is_none(), "not asked for: {}", data[1]);
        }
        assert_eq!(data.last().unwrap(), "[DONE]");
    }
}

#[actix_web::test]
async fn a_stream_that_breaks_off_is_an_error_and_stores_nothing() {
    // Two tokens, then the body ends: no finish reason, no `[DONE]`.
    let events = vec![
        (
            Duration::ZERO,
            chunk(json!({"role": "assistant", "content": "I am "}), None),
        ),
        (Duration::ZERO, chunk(json!({"content": "cut"}), None)),
    ];
    let (url, _) = fake_upstream(Script::Sse(events));
    let app = spawn_app(&url, |_| {}).await;
    let r = app.say_streamed("s-cut").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.raw);
    let events = sse_events(&r.raw);
    assert!(events[0].contains("I am "), "{}", r.raw);
    let last: Value = serde_json::from_str(events.last().unwrap()).unwrap();
    assert!(
        last["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("ended before its last chunk")),
        "{}",
        r.raw
    );
    assert!(!events.iter().any(|e| e == "[DONE]"), "{}", r.raw);
    let memory = app.memory("s-cut").await;
    assert!(
        memory["working_memory"].as_array().unwrap().is_empty(),
        "{memory}"
    );
}

/// Behind a model that takes a while before its first token, the client still gets the response
/// head as soon as the upstream's.
#[actix_web::test]
async fn the_response_head_does_not_wait_for_a_slow_first_token() {
    let events = vec![
        (
            Duration::from_millis(1500),
            chunk(json!({"role": "assistant", "content": "Late"}), None),
        ),
        (Duration::ZERO, chunk(json!({}), Some("stop"))),
        (Duration::ZERO, "[DONE]".into()),
    ];
    let (url, _) = fake_upstream(Script::Sse(events));
    let app = spawn_app(&url, |_| {}).await;
    let started = Instant::now();
    let mut response = app.open_stream("s-head").await;
    let head_at = started.elapsed();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        head_at < Duration::from_millis(1000),
        "head after {head_at:?}"
    );
    let body = response.body().await.unwrap();
    let body = String::from_utf8_lossy(&body);
    assert!(
        body.contains("Late") && body.ends_with("data: [DONE]\n\n"),
        "{body}"
    );
}

#[actix_web::test]
async fn a_stream_whose_turn_cannot_be_stored_ends_with_an_error_and_no_done() {
    let slow = vec![
        (
            Duration::ZERO,
            chunk(json!({"role": "assistant", "content": "Noted"}), None),
        ),
        (Duration::from_millis(800), chunk(json!({}), Some("stop"))),
    ];
    let (url, _) = fake_upstream(Script::Sse(slow));
    let app = spawn_app(&url, |_| {}).await;
    let session = "s-reset-race";
    let stream = app.chat(
        session,
        json!({"stream": true, "messages": [{"role": "user", "content": "My cat is called Tom."}]}),
        &[],
    );
    let reset = async {
        actix_web::rt::time::sleep(Duration::from_millis(300)).await;
        let r = app
            .client
            .post(format!("{}/control/session/reset", app.address))
            .insert_header(("x-session-id", session))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
    };
    let (r, ()) = futures_util::join!(stream, reset);
    let events = sse_events(&r.raw);
    assert!(events[0].contains("Noted"), "{}", r.raw);
    assert!(
        events.last().unwrap().contains("session_reset"),
        "{}",
        r.raw
    );
    assert!(
        !r.raw.contains("[DONE]") && !r.raw.contains("\"stop\""),
        "{}",
        r.raw
    );
    assert!(
        app.memory(session).await["working_memory"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[actix_web::test]
async fn memory_reaches_the_upstream_prompt_and_completions_pass_through() {
    let (url, log) = fake_upstream(Script::EchoSystem);
    let app = spawn_app(&url, |c| c.llm_api_key = Some("sk-upstream".into())).await;
    let first = app.say("s-mem", "My favourite colour is teal.").await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.raw);
    assert_eq!(first.body["model"], "fake-model");
    assert_eq!(first.body["usage"]["total_tokens"], 14);
    let second = app.say("s-mem", "Which colour do I like?").await;
    let system = second.body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap();
    assert!(
        system.contains("What you remember") && system.contains("teal"),
        "recalled fact not in the prompt: {system}"
    );
    let log = log.lock().unwrap();
    assert_eq!(log[1].header("authorization"), Some("Bearer sk-upstream"));
    // Working memory (the first turn) comes before the new turn.
    let contents: Vec<&str> = log[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(
        contents[1..],
        [
            "My favourite colour is teal.",
            system_reply_of_first(&first),
            "Which colour do I like?"
        ]
    );
}

fn system_reply_of_first(first: &Reply) -> &str {
    first.body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
}

#[actix_web::test]
async fn the_callers_trace_continues_to_the_upstream() {
    let (url, log) = fake_upstream(Script::EchoSystem);
    let app = spawn_app(&url, |_| {}).await;
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let traceparent = format!("00-{trace_id}-{caller_span}-01");
    let r = app
        .chat(
            "s-trace",
            json!({"messages": [{"role": "user", "content": "hello"}]}),
            &[("traceparent", &traceparent), ("tracestate", "vendor=1")],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.raw);
    let seen = log.lock().unwrap()[0].clone();
    let forwarded = seen
        .header("traceparent")
        .expect("traceparent forwarded upstream");
    let parts: Vec<&str> = forwarded.split('-').collect();
    assert_eq!(parts.len(), 4, "{forwarded}");
    assert_eq!(parts[1], trace_id, "same trace");
    assert_ne!(
        parts[2], caller_span,
        "the parent upstream is our model-call span, not the caller's"
    );
    assert_eq!(parts[3], "01", "sampled");
    assert_eq!(seen.header("tracestate"), Some("vendor=1"));
    // No traceparent in: a new trace, still propagated.
    let r = app.say("s-trace", "again").await;
    assert_eq!(r.status, StatusCode::OK);
    let fresh = log.lock().unwrap()[1]
        .header("traceparent")
        .map(str::to_owned)
        .expect("new trace propagated");
    assert!(!fresh.contains(trace_id), "{fresh}");
}

#[actix_web::test]
async fn metrics_count_requests_memory_and_upstream_calls() {
    let (url, _) = fake_upstream(Script::EchoSystem);
    let app = spawn_app(&url, |_| {}).await;
    for _ in 0..3 {
        assert_eq!(
            app.say("s-metrics", "I live in Oslo.").await.status,
            StatusCode::OK
        );
    }
    let _ = app.get_text("/nope").await;
    let text = app.get_text("/metrics").await;
    let value = |needle: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(needle))
            .unwrap_or_else(|| panic!("no {needle} in\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert!(
        value(
            r#"agentwall_http_requests_total{method="POST",route="/v1/chat/completions",status="200"}"#
        ) >= 3.0
    );
    assert!(
        value(r#"agentwall_http_requests_total{method="GET",route="unmatched",status="404"}"#)
            >= 1.0
    );
    assert!(
        value(
            r#"agentwall_http_request_duration_seconds_count{method="POST",route="/v1/chat/completions",status="200"}"#
        ) >= 3.0
    );
    assert!(
        value(
            r#"agentwall_memory_operation_duration_seconds_count{backend="embedded",operation="recall",outcome="ok"}"#
        ) >= 3.0
    );
    assert!(
        value(
            r#"agentwall_memory_operation_duration_seconds_count{backend="embedded",operation="commit",outcome="ok"}"#
        ) >= 3.0
    );
    assert!(
        value(
            r#"agentwall_upstream_request_duration_seconds_count{api="chat",mode="json",outcome="ok"}"#
        ) >= 3.0
    );
    // This very request is in flight while the metrics are rendered.
    assert!(value("agentwall_http_requests_in_flight") >= 1.0);
    let openapi = app.get_text("/openapi.json").await;
    assert!(
        openapi.contains("\"/metrics\""),
        "/metrics missing from /openapi.json"
    );
}

/// Streamed upstream turns over one keep-alive client connection: each first chunk arrives in
/// well under the ~40 ms that Nagle's algorithm plus the client's delayed ACK cost when the
/// server's sockets lack TCP_NODELAY (the head and the chunks are separate writes), and all the
/// turns reuse one upstream connection (the upstream's body is read to its end after `[DONE]`).
#[actix_web::test]
async fn streamed_turns_neither_stall_nor_reconnect() {
    let events = vec![
        (
            Duration::ZERO,
            chunk(json!({"role": "assistant", "content": "Hel"}), None),
        ),
        (
            Duration::ZERO,
            chunk(json!({"content": "lo"}), Some("stop")),
        ),
        (Duration::ZERO, "[DONE]".to_owned()),
    ];
    let (url, log) = fake_upstream(Script::Sse(events));
    let app = spawn_app(&url, |_| {}).await;
    let mut firsts = Vec::new();
    for turn in 0..9 {
        let started = Instant::now();
        let mut response = app
            .client
            .post(format!("{}/v1/chat/completions", app.address))
            .insert_header(("x-session-id", "s-nagle"))
            .insert_header(("content-type", "application/json"))
            .send_body(
                json!({"stream": true, "messages": [{"role": "user", "content": format!("turn {turn}")}]})
                    .to_string(),
            )
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let mut body = Vec::new();
        let mut first = None;
        while let Some(piece) = response.next().await {
            let piece = piece.unwrap();
            if first.is_none() && String::from_utf8_lossy(&piece).contains("Hel") {
                first = Some(started.elapsed());
            }
            body.extend_from_slice(&piece);
        }
        assert!(String::from_utf8_lossy(&body).ends_with("data: [DONE]\n\n"));
        firsts.push(first.expect("a content chunk"));
    }
    firsts.sort();
    let median = firsts[firsts.len() / 2];
    assert!(
        median < Duration::from_millis(25),
        "median time to the first chunk {median:?} (all: {firsts:?})"
    );
    let connections: std::collections::HashSet<_> =
        log.lock().unwrap().iter().map(|seen| seen.peer).collect();
    assert_eq!(
        connections.len(),
        1,
        "upstream connections used: {connections:?}"
    );
}

// --- A2A over an upstream model: the relay as A2A events ----------------------------------------

impl TestApp {
    /// `SendStreamingMessage` of `text` in `context`, returned as soon as its head arrives.
    async fn open_a2a_stream(
        &self,
        context: &str,
        text: &str,
    ) -> awc::ClientResponse<
        impl futures_util::Stream<Item = Result<Bytes, awc::error::PayloadError>>,
    > {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {
            "message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                        "contextId": context, "parts": [{"text": text}]}}});
        self.client
            .post(format!("{}/a2a", self.address))
            .insert_header(("content-type", "application/json"))
            .insert_header(("a2a-version", "1.0"))
            .send_body(body.to_string())
            .await
            .unwrap()
    }

    /// A JSON-RPC call to `/a2a`; its answer.
    async fn a2a(&self, method: &str, params: Value) -> Value {
        let mut r = self
            .client
            .post(format!("{}/a2a", self.address))
            .insert_header(("content-type", "application/json"))
            .insert_header(("a2a-version", "1.0"))
            .send_body(
                json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params}).to_string(),
            )
            .await
            .unwrap();
        r.json().limit(1 << 24).await.unwrap()
    }
}

/// The events of an A2A stream: each one's name (`message` unless named) and JSON-RPC answer.
fn a2a_events(raw: &str) -> Vec<(String, Value)> {
    raw.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let name = e
                .lines()
                .find_map(|l| l.strip_prefix("event: "))
                .unwrap_or("message");
            let data: String = e.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
            (name.to_owned(), serde_json::from_str(&data).unwrap())
        })
        .collect()
}

/// The text the artifact updates among `events` carry, in order.
fn artifact_text(events: &[(String, Value)]) -> String {
    events
        .iter()
        .filter_map(|(_, e)| e["result"]["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str())
        .collect()
}

#[actix_web::test]
async fn an_a2a_stream_relays_the_reply_as_it_comes_and_completes_after_the_commit() {
    let events = vec![
        (
            Duration::ZERO,
            chunk(json!({"role": "assistant", "content": "Your kayak "}), None),
        ),
        (
            Duration::from_millis(1500),
            chunk(json!({"content": "is green."}), None),
        ),
        (Duration::ZERO, chunk(json!({}), Some("stop"))),
        (Duration::ZERO, "[DONE]".into()),
    ];
    let (url, _) = fake_upstream(Script::Sse(events));
    let app = spawn_app(&url, |_| {}).await;
    let started = Instant::now();
    let mut response = app
        .open_a2a_stream("s-a2a-relay", "What colour is my kayak?")
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut raw = String::new();
    let mut first_chunk_at = None;
    while let Some(piece) = response.next().await {
        raw.push_str(&String::from_utf8_lossy(&piece.unwrap()));
        if first_chunk_at.is_none() && raw.contains("Your kayak ") {
            first_chunk_at = Some(started.elapsed());
        }
    }
    let total = started.elapsed();
    let first_chunk_at = first_chunk_at.expect("the first chunk");
    assert!(
        first_chunk_at < Duration::from_millis(1000),
        "first artifact chunk after {first_chunk_at:?}"
    );
    assert!(
        total >= Duration::from_millis(1500),
        "whole stream in {total:?}"
    );
    let events = a2a_events(&raw);
    let task = &events[0].1["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{raw}");
    let (name, last) = events.last().unwrap();
    assert_eq!(name, "message");
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{raw}"
    );
    let second_last = &events[events.len() - 2].1["result"]["artifactUpdate"];
    assert_eq!(second_last["lastChunk"], true, "{raw}");
    assert_eq!(artifact_text(&events), "Your kayak is green.");
    // Stored as streamed, with the turn.
    let got = app.a2a("GetTask", json!({"id": task["id"]})).await;
    assert_eq!(
        got["result"]["artifacts"][0]["parts"][0]["text"], "Your kayak is green.",
        "{got}"
    );
    let memory = app.memory("s-a2a-relay").await;
    assert_eq!(memory["working_memory"][1]["text"], "Your kayak is green.");
}

#[actix_web::test]
async fn an_a2a_stream_whose_turn_cannot_be_stored_ends_with_an_error_and_no_completion() {
    let slow = vec![
        (
            Duration::ZERO,
            chunk(json!({"role": "assistant", "content": "Noted"}), None),
        ),
        (Duration::from_millis(800), chunk(json!({}), Some("stop"))),
    ];
    let (url, _) = fake_upstream(Script::Sse(slow));
    let app = spawn_app(&url, |_| {}).await;
    let session = "s-a2a-reset-race";
    let stream = async {
        let mut response = app.open_a2a_stream(session, "My cat is called Tom.").await;
        let body = response.body().limit(1 << 24).await.unwrap();
        String::from_utf8_lossy(&body).into_owned()
    };
    let reset = async {
        actix_web::rt::time::sleep(Duration::from_millis(300)).await;
        let r = app
            .client
            .post(format!("{}/control/session/reset", app.address))
            .insert_header(("x-session-id", session))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
    };
    let (raw, ()) = futures_util::join!(stream, reset);
    let events = a2a_events(&raw);
    assert_eq!(artifact_text(&events), "Noted", "{raw}");
    let (name, last) = events.last().unwrap();
    assert_eq!(name, "error", "{raw}");
    assert_eq!(last["error"]["code"], -32603, "{raw}");
    assert_eq!(last["error"]["data"][0]["reason"], "SESSION_RESET", "{raw}");
    assert!(!raw.contains("TASK_STATE_COMPLETED"), "{raw}");
    let id = &events[0].1["result"]["task"]["id"];
    let got = app.a2a("GetTask", json!({"id": id})).await;
    assert_eq!(got["error"]["code"], -32001, "nothing stored: {got}");
    assert!(
        app.memory(session).await["working_memory"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[actix_web::test]
async fn an_a2a_stream_that_breaks_off_is_an_error_and_stores_nothing() {
    let events = vec![
        (
            Duration::ZERO,
            chunk(json!({"role": "assistant", "content": "I am "}), None),
        ),
        (Duration::ZERO, chunk(json!({"content": "cut"}), None)),
    ];
    let (url, _) = fake_upstream(Script::Sse(events));
    let app = spawn_app(&url, |_| {}).await;
    let mut response = app.open_a2a_stream("s-a2a-cut", "Hi").await;
    let raw = String::from_utf8_lossy(&response.body().limit(1 << 24).await.unwrap()).into_owned();
    let events = a2a_events(&raw);
    let (name, last) = events.last().unwrap();
    assert_eq!(name, "error", "{raw}");
    assert!(
        last["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("ended before its last chunk")),
        "{raw}"
    );
    assert!(!raw.contains("TASK_STATE_COMPLETED"), "{raw}");
    let listed = app
        .a2a("ListTasks", json!({"contextId": "s-a2a-cut"}))
        .await;
    assert_eq!(listed["result"]["totalSize"], 0, "{listed}");
    assert!(
        app.memory("s-a2a-cut").await["working_memory"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[actix_web::test]
async fn an_a2a_message_is_answered_with_the_upstreams_completion() {
    let (url, log) = fake_upstream(Script::EchoSystem);
    let app = spawn_app(&url, |_| {}).await;
    let context = "s-a2a-json";
    let message = |text: &str| {
        json!({"message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                           "contextId": context, "parts": [{"text": text}]}})
    };
    app.a2a("SendMessage", message("My favourite colour is teal."))
        .await;
    let answer = app
        .a2a("SendMessage", message("What is my favourite colour?"))
        .await;
    let task = &answer["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    // The upstream echoes its system prompt: memory reached it, and its reply is the artifact.
    let reply = task["artifacts"][0]["parts"][0]["text"].as_str().unwrap();
    assert!(reply.contains("teal"), "{reply}");
    let seen = log.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert_ne!(
        seen[1].body["stream"], true,
        "a blocking SendMessage is not streamed upstream"
    );
}
