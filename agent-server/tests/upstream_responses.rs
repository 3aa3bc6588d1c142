//! The Responses API in upstream mode, against a fake Chat Completions upstream (actix-web on port
//! 0 in this process): the request translated to Chat Completions and the completion or stream
//! back to the Responses shape; agent-server's own state (previous_response_id) resolved into
//! messages and never forwarded; a stream's function call as argument events; a broken stream as
//! `response.failed` with nothing stored.
// Tests spawn their own tasks (servers), outside any request.
#![allow(clippy::disallowed_methods)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{App, HttpResponse, HttpServer, web};
use agent_server::config::Config;
use agent_server::startup::Application;
use awc::http::StatusCode;
use bytes::Bytes;
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use tempfile::TempDir;

type Log = Arc<Mutex<Vec<Value>>>;

/// The fake's stream: each entry one event's `data` (`None`: the connection breaks there).
#[derive(Clone)]
struct Stream(Vec<Option<String>>);

async fn upstream(
    body: web::Json<Value>,
    log: web::Data<Log>,
    stream: web::Data<Stream>,
) -> HttpResponse {
    log.lock().unwrap().push(body.0.clone());
    if body["stream"] != true {
        return HttpResponse::Ok().json(
            json!({"id": "up", "object": "chat.completion", "created": 1,
            "model": "fake", "choices": [{"index": 0, "message": {"role": "assistant",
            "content": "From upstream."}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}}),
        );
    }
    let events = stream.0.clone();
    let body = futures_util::stream::iter(events).then(|data| async move {
        match data {
            Some(data) => Ok(Bytes::from(format!("data: {data}\n\n"))),
            None => {
                // Past the head and the first chunk: the break is mid-stream.
                actix_web::rt::time::sleep(Duration::from_millis(200)).await;
                Err(actix_web::error::ErrorInternalServerError("cut"))
            }
        }
    });
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .streaming(body)
}

fn chunk(delta: Value, finish: Option<&str>) -> Option<String> {
    Some(
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "fake",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string(),
    )
}

fn text_and_call() -> Vec<Option<String>> {
    let call = |v: Value| chunk(json!({"tool_calls": [v]}), None);
    vec![
        chunk(json!({"role": "assistant", "content": "Let me look. "}), None),
        call(json!({"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":"}})),
        call(json!({"index": 0, "function": {"arguments": "\"Oslo\"}"}})),
        chunk(json!({}), Some("tool_calls")),
        Some(json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "fake", "choices": [],
            "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}}).to_string()),
        Some("[DONE]".into()),
    ]
}

struct TestApp {
    address: String,
    client: awc::Client,
    log: Log,
    _data: TempDir,
}

async fn spawn(stream: Vec<Option<String>>) -> TestApp {
    let log: Log = Arc::default();
    let (data_log, data_stream) = (web::Data::new(log.clone()), web::Data::new(Stream(stream)));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data_log.clone())
            .app_data(data_stream.clone())
            .route("/v1/chat/completions", web::post().to(upstream))
    })
    .workers(1)
    .listen(listener)
    .unwrap()
    .run();
    actix_web::rt::spawn(server);

    let data = tempfile::tempdir().unwrap();
    let mut config = Config::for_tests(data.path());
    config.workers = Some(1);
    config.llm_base_url = Some(format!("http://127.0.0.1:{port}/v1"));
    config.llm_timeout = Duration::from_secs(5);
    let app = Application::build(config).await.unwrap();
    let address = format!("http://127.0.0.1:{}", app.port());
    actix_web::rt::spawn(app.run_until_stopped());
    TestApp {
        address,
        client: awc::Client::builder()
            .timeout(Duration::from_secs(20))
            .finish(),
        log,
        _data: data,
    }
}

impl TestApp {
    async fn post(&self, body: Value) -> (StatusCode, String) {
        let mut r = self
            .client
            .post(format!("{}/v1/responses", self.address))
            .insert_header(("content-type", "application/json"))
            .send_body(body.to_string())
            .await
            .unwrap();
        let raw = r.body().await.unwrap();
        (r.status(), String::from_utf8_lossy(&raw).into_owned())
    }

    async fn get_status(&self, id: &str) -> StatusCode {
        self.client
            .get(format!("{}/v1/responses/{id}", self.address))
            .send()
            .await
            .unwrap()
            .status()
    }
}

fn events(raw: &str) -> Vec<Value> {
    raw.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[actix_web::test]
async fn a_chain_is_translated_to_messages_and_its_ids_stay_here() {
    let app = spawn(Vec::new()).await;
    let (status, raw) = app
        .post(json!({"model": "fake", "input": "My kayak is green.", "instructions": "Be brief.",
            "max_output_tokens": 50, "metadata": {"k": "v"},
            "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
            "tool_choice": {"type": "function", "name": "get_weather"}}))
        .await;
    assert_eq!(status, StatusCode::OK, "{raw}");
    let first: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(first["output_text"], "From upstream.");
    assert_eq!(first["usage"]["input_tokens"], 11);
    assert_eq!(first["metadata"], json!({"k": "v"}));

    let (status, raw) = app
        .post(json!({"model": "fake", "input": "What colour is it?", "previous_response_id": first["id"]}))
        .await;
    assert_eq!(status, StatusCode::OK, "{raw}");
    let seen = app.log.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    // The first request as Chat Completions: instructions as a system message, the flat tool in
    // the chat shape, max_output_tokens as max_tokens.
    let messages = seen[0]["messages"].to_string();
    assert!(messages.contains("Be brief."), "{messages}");
    assert_eq!(seen[0]["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(seen[0]["tool_choice"]["function"]["name"], "get_weather");
    assert_eq!(seen[0]["max_tokens"], 50);
    // The chained one carries the first turn as messages, and none of agent-server's ids.
    let chained = seen[1]["messages"].to_string();
    assert!(
        chained.contains("My kayak is green.") && chained.contains("From upstream."),
        "{chained}"
    );
    for body in &seen {
        for field in [
            "previous_response_id",
            "conversation",
            "store",
            "metadata",
            "input",
        ] {
            assert!(body.get(field).is_none(), "{field} forwarded: {body}");
        }
        assert!(!body.to_string().contains("resp_"), "{body}");
    }
}

#[actix_web::test]
async fn a_relayed_stream_becomes_semantic_events_and_is_stored_before_it_completes() {
    let app = spawn(text_and_call()).await;
    let (status, raw) = app
        .post(json!({"model": "fake", "input": "Weather in Oslo?", "stream": true}))
        .await;
    assert_eq!(status, StatusCode::OK, "{raw}");
    let events = events(&raw);
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let done = &events.last().unwrap()["response"];
    assert_eq!(done["output"][1]["arguments"], "{\"city\":\"Oslo\"}");
    assert_eq!(done["output"][1]["call_id"], "call_1");
    assert_eq!(done["usage"]["output_tokens"], 9);
    assert_eq!(
        app.get_status(done["id"].as_str().unwrap()).await,
        StatusCode::OK
    );
    // The relay was asked for usage, so the terminal event has it.
    assert_eq!(
        app.log.lock().unwrap()[0]["stream_options"]["include_usage"],
        true
    );
}

#[actix_web::test]
async fn a_stream_that_breaks_off_fails_and_stores_nothing() {
    let app = spawn(vec![chunk(json!({"content": "Half"}), None), None]).await;
    let (status, raw) = app
        .post(json!({"model": "fake", "input": "Hi", "stream": true}))
        .await;
    assert_eq!(status, StatusCode::OK, "{raw}");
    let events = events(&raw);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "response.failed", "{raw}");
    assert!(last["response"]["error"]["message"].is_string(), "{last}");
    assert!(!raw.contains("response.completed"));
    let id = events[0]["response"]["id"].as_str().unwrap();
    assert_eq!(app.get_status(id).await, StatusCode::NOT_FOUND);
}
