//! The Responses API in upstream mode, against fake upstreams (actix-web on port 0 in this
//! process). A Chat Completions upstream: the request translated to Chat Completions and the
//! completion or stream back to the Responses shape; agent-server's own state
//! (previous_response_id) resolved into messages and never forwarded; a stream's function call as
//! argument events; a broken stream as `response.failed` with nothing stored. An upstream that
//! also serves `/v1/responses`: Responses turns go to it as Responses requests (`--llm-api auto`
//! finds that out once), with agent-server's chain as input items and none of its ids, `store:
//! false`, the client's tools and unknown fields; its answer and stream come back under
//! agent-server's own ids and sequence numbers. Chat Completions turns still go as chat.
// Tests spawn their own tasks (servers), outside any request.
#![allow(clippy::disallowed_methods)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{App, HttpResponse, HttpServer, web};
use agent_server::config::Config;
use agent_server::llm::upstream_api::LlmApi;
use agent_server::startup::Application;
use awc::http::StatusCode;
use bytes::Bytes;
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use tempfile::TempDir;

type Log = Arc<Mutex<Vec<Value>>>;

/// Requests to the fake's `/v1/responses`, apart from those to its chat route.
#[derive(Clone, Default)]
struct ResponsesLog(Log);

/// The fake's stream: each entry one event's `data` (`None`: the connection breaks there).
#[derive(Clone)]
struct Stream(Vec<Option<String>>);

/// The stream the fake's `/v1/responses` sends: each entry one event's `data`.
#[derive(Clone)]
struct ResponsesStream(Vec<String>);

/// The fake's `/v1/responses`: an empty body (agent-server's probe) is refused as a server with
/// the route refuses it; else a whole response, or `ResponsesStream`, ended like LiteLLM's.
async fn responses_upstream(
    body: web::Json<Value>,
    log: web::Data<ResponsesLog>,
    stream: web::Data<ResponsesStream>,
) -> HttpResponse {
    log.0.lock().unwrap().push(body.0.clone());
    if body.0 == json!({}) {
        return HttpResponse::BadRequest().json(
            json!({"error": {"message": "model is required", "type": "invalid_request_error"}}),
        );
    }
    if body["stream"] != true {
        return HttpResponse::Ok().json(json!({"id": "resp_upstream_1", "object": "response",
            "created_at": 1, "status": "completed", "model": "fake", "output": [
                {"type": "reasoning", "id": "rs_up", "summary": []},
                {"type": "message", "id": "msg_upstream", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": "Natively from upstream.", "annotations": []}]}],
            "usage": {"input_tokens": 21, "output_tokens": 4, "total_tokens": 25,
                "input_tokens_details": {"cached_tokens": 5}, "output_tokens_details": {"reasoning_tokens": 1}}}));
    }
    let mut body = String::new();
    for data in &stream.0 {
        body.push_str(&format!("data: {data}\n\n"));
    }
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .body(body)
}

/// A streamed Responses answer: text, then a function call, as LiteLLM sends it (no `event:`
/// lines, `[DONE]` after the terminal event).
fn responses_text_and_call() -> Vec<String> {
    let added = json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call",
        "id": "fc_upstream", "call_id": "call_up", "name": "get_weather", "arguments": "", "status": "in_progress"}});
    [
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_upstream_2", "object": "response",
            "created_at": 1, "status": "in_progress", "model": "fake", "output": []}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "msg_upstream",
            "role": "assistant", "status": "in_progress", "content": []}}),
        json!({"type": "response.output_text.delta", "item_id": "msg_upstream", "output_index": 0, "content_index": 0, "delta": "Let me look."}),
        json!({"type": "response.output_text.done", "item_id": "msg_upstream", "output_index": 0, "content_index": 0, "text": "Let me look."}),
        added,
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_upstream", "output_index": 1, "delta": "{\"city\":"}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_upstream", "output_index": 1, "delta": "\"Oslo\"}"}),
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_upstream", "output_index": 1, "arguments": "{\"city\":\"Oslo\"}"}),
        json!({"type": "response.completed", "response": {"id": "resp_upstream_2", "object": "response", "created_at": 1,
            "status": "completed", "model": "fake", "output": [
                {"type": "message", "id": "msg_upstream", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}]},
                {"type": "function_call", "id": "fc_upstream", "call_id": "call_up", "name": "get_weather",
                 "arguments": "{\"city\":\"Oslo\"}", "status": "completed"}],
            "usage": {"input_tokens": 40, "output_tokens": 9, "total_tokens": 49}}}),
    ]
    .iter()
    .map(Value::to_string)
    .chain(["[DONE]".to_owned()])
    .collect()
}

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
    /// Requests to the fake's chat route.
    log: Log,
    /// Requests to the fake's `/v1/responses` (when it serves one).
    responses_log: Log,
    _data: TempDir,
}

/// What the fake upstream serves besides `/v1/chat/completions`, and agent-server's `--llm-api`.
struct Upstream {
    /// `/v1/responses`, streaming these events.
    responses: Option<Vec<String>>,
    api: LlmApi,
}

async fn spawn(stream: Vec<Option<String>>) -> TestApp {
    spawn_with(
        stream,
        Upstream {
            responses: None,
            api: LlmApi::Auto,
        },
    )
    .await
}

async fn spawn_with(stream: Vec<Option<String>>, upstream_is: Upstream) -> TestApp {
    let log: Log = Arc::default();
    let responses_log = ResponsesLog::default();
    let (data_log, data_stream) = (web::Data::new(log.clone()), web::Data::new(Stream(stream)));
    let data_responses_log = web::Data::new(responses_log.clone());
    let serves_responses = upstream_is.responses.is_some();
    let data_responses_stream =
        web::Data::new(ResponsesStream(upstream_is.responses.unwrap_or_default()));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = HttpServer::new(move || {
        let app = App::new()
            .app_data(data_log.clone())
            .app_data(data_stream.clone())
            .app_data(data_responses_log.clone())
            .app_data(data_responses_stream.clone())
            .route("/v1/chat/completions", web::post().to(upstream));
        if serves_responses {
            app.route("/v1/responses", web::post().to(responses_upstream))
        } else {
            app
        }
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
    config.llm_api = upstream_is.api;
    let app = Application::build(config).await.unwrap();
    let address = format!("http://127.0.0.1:{}", app.port());
    actix_web::rt::spawn(app.run_until_stopped());
    TestApp {
        address,
        client: awc::Client::builder()
            .timeout(Duration::from_secs(20))
            .finish(),
        log,
        responses_log: responses_log.0,
        _data: data,
    }
}

impl TestApp {
    async fn post(&self, body: Value) -> (StatusCode, String) {
        self.post_to("/v1/responses", None, body).await
    }

    async fn post_to(
        &self,
        path: &str,
        session: Option<&str>,
        body: Value,
    ) -> (StatusCode, String) {
        let mut request = self
            .client
            .post(format!("{}{path}", self.address))
            .insert_header(("content-type", "application/json"));
        if let Some(session) = session {
            request = request.insert_header(("x-session-id", session));
        }
        let mut r = request.send_body(body.to_string()).await.unwrap();
        let raw = r.body().limit(1 << 20).await.unwrap();
        (r.status(), String::from_utf8_lossy(&raw).into_owned())
    }

    async fn metrics(&self) -> String {
        let mut r = self
            .client
            .get(format!("{}/metrics", self.address))
            .send()
            .await
            .unwrap();
        String::from_utf8_lossy(&r.body().limit(1 << 20).await.unwrap()).into_owned()
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

/// The events of a streamed answer with one text delta, then a function call whose arguments
/// come in two deltas, whichever API the upstream streamed it in.
const TEXT_THEN_CALL: [&str; 14] = [
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
];

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
    assert_eq!(kinds, TEXT_THEN_CALL);
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

/// Item ids agent-server made (or was given) that an upstream must not see.
fn assert_no_agent_server_ids(body: &Value) {
    let text = body.to_string();
    for prefix in ["resp_", "msg_", "fc_", "conv_"] {
        assert!(!text.contains(prefix), "{prefix} forwarded: {body}");
    }
    for item in body["input"].as_array().unwrap() {
        assert!(item.get("id").is_none(), "an item id forwarded: {item}");
    }
}

#[actix_web::test]
async fn an_upstream_serving_responses_gets_the_turn_natively_and_none_of_agent_server_state() {
    let app = spawn_with(
        Vec::new(),
        Upstream {
            responses: Some(Vec::new()),
            api: LlmApi::Auto,
        },
    )
    .await;
    let session = Some("native-1");
    let (status, raw) = app
        .post_to("/v1/responses", session, json!({"model": "fake", "input": "My kayak is green.",
            "instructions": "Be brief.", "max_output_tokens": 50, "temperature": 0.25,
            "metadata": {"k": "v"}, "text": {"format": {"type": "text"}}, "vendor_knob": 7,
            "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
            "tool_choice": {"type": "function", "name": "get_weather"}}))
        .await;
    assert_eq!(status, StatusCode::OK, "{raw}");
    let first: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(first["output_text"], "Natively from upstream.");
    // agent-server's own response: its id and item ids, the upstream's usage.
    let id = first["id"].as_str().unwrap();
    assert!(id.starts_with("resp_") && id != "resp_upstream_1", "{id}");
    assert_eq!(first["output"].as_array().unwrap().len(), 1, "{first}");
    assert_ne!(first["output"][0]["id"], "msg_upstream");
    assert_eq!(first["usage"]["input_tokens"], 21);
    assert_eq!(first["usage"]["input_tokens_details"]["cached_tokens"], 5);
    assert_eq!(
        first["usage"]["output_tokens_details"]["reasoning_tokens"],
        1
    );
    assert_eq!(first["metadata"], json!({"k": "v"}));

    let (status, raw) = app
        .post_to(
            "/v1/responses",
            session,
            json!({"model": "fake", "input": "What colour is it?",
            "previous_response_id": id}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{raw}");
    let second: Value = serde_json::from_str(&raw).unwrap();
    // A turn outside the chain: working memory holds the committed reply text.
    let (status, raw) = app
        .post_to(
            "/v1/responses",
            session,
            json!({"model": "fake", "input": "Anything else?"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{raw}");

    assert!(
        app.log.lock().unwrap().is_empty(),
        "a Responses turn went to chat"
    );
    let seen = app.responses_log.lock().unwrap().clone();
    // The probe once, then the three turns.
    assert_eq!(seen.len(), 4, "{seen:#?}");
    assert_eq!(seen[0], json!({}));
    let (native, chained, unchained) = (&seen[1], &seen[2], &seen[3]);
    assert_eq!(native["store"], false);
    assert_eq!(native["model"], "fake");
    assert_eq!(
        native["tools"],
        json!([{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}])
    );
    assert_eq!(
        native["tool_choice"],
        json!({"type": "function", "name": "get_weather"})
    );
    assert_eq!(
        (
            native["max_output_tokens"].clone(),
            native["temperature"].clone()
        ),
        (json!(50), json!(0.25))
    );
    assert_eq!(native["metadata"], json!({"k": "v"}));
    assert_eq!(native["text"], json!({"format": {"type": "text"}}));
    assert_eq!(native["vendor_knob"], 7);
    assert!(native.get("stream").is_none(), "{native}");
    // The agent's prompt as instructions; the client's instructions and turn as input items.
    let instructions = native["instructions"].as_str().unwrap();
    assert!(
        instructions.contains("long-term memory") && instructions.contains("current date"),
        "{instructions}"
    );
    assert_eq!(
        native["input"],
        json!([
            {"type": "message", "role": "system", "content": "Be brief."},
            {"type": "message", "role": "user", "status": "completed",
             "content": [{"type": "input_text", "text": "My kayak is green."}]},
        ])
    );
    // The chain as items: the first turn's input and agent-server's output item, without ids;
    // no instructions of the first request (as at OpenAI, they do not carry over a chain).
    let chained_input = chained["input"].as_array().unwrap();
    let texts: Vec<&str> = chained_input
        .iter()
        .map(|i| {
            i["content"][0]["text"]
                .as_str()
                .or(i["content"].as_str())
                .unwrap()
        })
        .collect();
    assert_eq!(
        texts,
        [
            "My kayak is green.",
            "Natively from upstream.",
            "What colour is it?"
        ]
    );
    assert_eq!(chained_input[1]["role"], "assistant");
    let unchained_input = unchained["input"].to_string();
    assert!(
        unchained_input.contains("Natively from upstream.")
            && unchained_input.contains("What colour is it?"),
        "working memory is missing: {unchained_input}"
    );
    for body in &seen[1..] {
        assert_eq!(body["store"], false);
        for field in ["previous_response_id", "conversation"] {
            assert!(body.get(field).is_none(), "{field} forwarded: {body}");
        }
        assert_no_agent_server_ids(body);
    }
    assert_eq!(second["previous_response_id"], json!(id));

    // Chat Completions turns still go upstream as chat.
    let (status, raw) = app
        .post_to(
            "/v1/chat/completions",
            session,
            json!({"model": "fake",
            "messages": [{"role": "user", "content": "Hi"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{raw}");
    assert_eq!(app.log.lock().unwrap().len(), 1);
    assert_eq!(app.responses_log.lock().unwrap().len(), 4);
    let metrics = app.metrics().await;
    for line in [
        r#"agentwall_upstream_request_duration_seconds_count{api="responses",mode="json",outcome="ok"} 3"#,
        r#"agentwall_upstream_request_duration_seconds_count{api="chat",mode="json",outcome="ok"} 1"#,
    ] {
        assert!(metrics.contains(line), "{line} missing from\n{metrics}");
    }
}

#[actix_web::test]
async fn a_native_stream_comes_back_as_agent_server_events_and_is_stored_before_it_completes() {
    let app = spawn_with(
        Vec::new(),
        Upstream {
            responses: Some(responses_text_and_call()),
            api: LlmApi::Responses,
        },
    )
    .await;
    let (status, raw) = app
        .post(json!({"model": "fake", "input": "Weather in Oslo?", "stream": true,
            "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]}))
        .await;
    assert_eq!(status, StatusCode::OK, "{raw}");
    let events = events(&raw);
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, TEXT_THEN_CALL);
    // agent-server's own sequence numbers and ids throughout.
    let numbers: Vec<i64> = events
        .iter()
        .map(|e| e["sequence_number"].as_i64().unwrap())
        .collect();
    assert_eq!(numbers, (0..14).collect::<Vec<_>>());
    assert!(
        !raw.contains("resp_upstream")
            && !raw.contains("msg_upstream")
            && !raw.contains("fc_upstream"),
        "{raw}"
    );
    let done = &events.last().unwrap()["response"];
    assert_eq!(done["output_text"], "Let me look.");
    assert_eq!(done["output"][1]["arguments"], "{\"city\":\"Oslo\"}");
    assert_eq!(done["output"][1]["call_id"], "call_up");
    assert_eq!(done["usage"]["output_tokens"], 9);
    assert_eq!(
        app.get_status(done["id"].as_str().unwrap()).await,
        StatusCode::OK
    );

    // `--llm-api responses`: no probe, the streamed request went natively, and nothing to chat.
    let seen = app.responses_log.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:#?}");
    assert_eq!(
        (seen[0]["stream"].clone(), seen[0]["store"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!(seen[0]["tools"][0]["name"], "get_weather");
    assert_no_agent_server_ids(&seen[0]);
    assert!(app.log.lock().unwrap().is_empty());
}

#[actix_web::test]
async fn llm_api_chat_translates_even_for_an_upstream_serving_responses() {
    let app = spawn_with(
        Vec::new(),
        Upstream {
            responses: Some(Vec::new()),
            api: LlmApi::Chat,
        },
    )
    .await;
    let (status, raw) = app.post(json!({"model": "fake", "input": "Hi"})).await;
    assert_eq!(status, StatusCode::OK, "{raw}");
    assert_eq!(
        serde_json::from_str::<Value>(&raw).unwrap()["output_text"],
        "From upstream."
    );
    assert_eq!(app.log.lock().unwrap().len(), 1);
    assert!(
        app.responses_log.lock().unwrap().is_empty(),
        "probed or sent natively"
    );
}
