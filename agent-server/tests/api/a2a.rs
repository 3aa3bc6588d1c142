//! The A2A endpoint (A2A 1.0, JSON-RPC binding): the agent card, SendMessage and its stream on
//! the same turn as the OpenAI APIs (the context is the session), tasks that survive a restart,
//! tasks and contexts of other sessions refused, and every kind of bad input answered with its
//! JSON-RPC code, storing nothing.

use std::path::Path;

use agent_server::config::Config;
use agent_server::startup::Application;
use awc::http::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;

/// One JSON-RPC call to `/a2a` with `A2A-Version: 1.0` and `headers`.
async fn rpc(app: &TestApp, method: &str, params: Value, headers: &[(&str, &str)]) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    raw_rpc(app, body.to_string().as_bytes(), headers).await
}

/// A body as it is, to `/a2a`, with `A2A-Version: 1.0` unless `headers` name it.
async fn raw_rpc(app: &TestApp, body: &[u8], headers: &[(&str, &str)]) -> Reply {
    let mut req = app
        .client
        .post(app.url("/a2a"))
        .insert_header(("content-type", "application/json"));
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("a2a-version"))
    {
        req = req.insert_header(("a2a-version", "1.0"));
    }
    for (k, v) in headers {
        req = req.insert_header((*k, *v));
    }
    app.send(req, Some(body)).await
}

/// A user message: text parts, in `context` when given.
fn message(texts: &[&str], context: Option<&str>) -> Value {
    let mut m = json!({
        "messageId": uuid::Uuid::new_v4().to_string(),
        "role": "ROLE_USER",
        "parts": texts.iter().map(|t| json!({"text": t})).collect::<Vec<_>>(),
    });
    if let Some(c) = context {
        m["contextId"] = json!(c);
    }
    m
}

/// `SendMessage` of `text` in `context`; the task, asserting success.
async fn send(app: &TestApp, text: &str, context: &str, headers: &[(&str, &str)]) -> Value {
    let r = rpc(
        app,
        "SendMessage",
        json!({"message": message(&[text], Some(context))}),
        headers,
    )
    .await;
    task_of(&r)
}

fn task_of(r: &Reply) -> Value {
    assert_eq!(r.status, StatusCode::OK, "{}", r.raw);
    assert_eq!(r.body["jsonrpc"], "2.0", "{}", r.raw);
    assert_eq!(r.body["id"], 7, "{}", r.raw);
    let task = &r.body["result"]["task"];
    assert!(task.is_object(), "no task: {}", r.raw);
    task.clone()
}

/// The text of a completed task's reply artifact.
fn reply_text(task: &Value) -> String {
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(task["artifacts"][0]["name"], "reply", "{task}");
    task["artifacts"][0]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["text"].as_str().unwrap())
        .collect()
}

/// The JSON-RPC error's code, asserting the shape and the HTTP status.
fn rpc_error(r: &Reply, status: StatusCode) -> i64 {
    assert_eq!(r.status, status, "{}", r.raw);
    assert_eq!(r.body["jsonrpc"], "2.0", "{}", r.raw);
    assert!(r.body.get("result").is_none(), "{}", r.raw);
    let e = &r.body["error"];
    assert!(
        e["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{}",
        r.raw
    );
    e["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no code: {}", r.raw))
}

/// Nothing of `session` is stored: no memory, no task.
async fn assert_nothing_stored(app: &TestApp, session: &str) {
    let memory = app
        .get("/control/memory", &[("x-session-id", session)])
        .await;
    assert_eq!(memory.status, StatusCode::OK, "{}", memory.raw);
    assert!(
        memory.body["working_memory"].as_array().unwrap().is_empty()
            && memory.body["facts"].as_array().unwrap().is_empty(),
        "{}",
        memory.raw
    );
    let listed = rpc(app, "ListTasks", json!({"contextId": session}), &[]).await;
    assert_eq!(listed.body["result"]["totalSize"], 0, "{}", listed.raw);
}

/// The JSON-RPC answers of an SSE body, with each event's name (`message` unless named).
fn events(raw: &str) -> Vec<(String, Value)> {
    raw.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let name = e
                .lines()
                .find_map(|l| l.strip_prefix("event: "))
                .unwrap_or("message")
                .to_owned();
            let data: String = e.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
            (
                name,
                serde_json::from_str(&data).expect("each event is JSON"),
            )
        })
        .collect()
}

#[actix_web::test]
async fn the_card_names_the_json_rpc_interface_streaming_and_text() {
    let app = spawn_app().await;
    let r = app.get("/.well-known/agent-card.json", &[]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.raw);
    let card = &r.body;
    assert_eq!(
        card["supportedInterfaces"],
        json!([{"url": app.url("/a2a"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}])
    );
    assert_eq!(card["capabilities"]["streaming"], true);
    assert_eq!(card["capabilities"]["pushNotifications"], false);
    assert_eq!(card["defaultInputModes"], json!(["text/plain"]));
    assert_eq!(card["defaultOutputModes"], json!(["text/plain"]));
    for field in ["name", "description", "version"] {
        assert!(
            card[field].as_str().is_some_and(|v| !v.is_empty()),
            "{field}"
        );
    }
    assert_eq!(card["skills"][0]["id"], "memory-chat");
    assert!(
        card["skills"][0]["tags"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
    );
    assert!(card.get("securitySchemes").is_none(), "no key, no scheme");
    // Cacheable: the same ETag answers 304.
    let etag = r.headers.get("etag").unwrap().to_str().unwrap().to_owned();
    assert!(r.headers.get("cache-control").is_some());
    let again = app
        .get("/.well-known/agent-card.json", &[("if-none-match", &etag)])
        .await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);

    // Behind a proxy, --public-url names the base.
    let proxied = spawn_app_with(|c| c.public_url = Some("https://agent.example.com".into())).await;
    let r = proxied.get("/.well-known/agent-card.json", &[]).await;
    assert_eq!(
        r.body["supportedInterfaces"][0]["url"],
        "https://agent.example.com/a2a"
    );
    // Else the host the card was asked for with.
    let r = app
        .get(
            "/.well-known/agent-card.json",
            &[("host", "agents.internal:9000")],
        )
        .await;
    assert_eq!(
        r.body["supportedInterfaces"][0]["url"],
        "http://agents.internal:9000/a2a"
    );
}

#[actix_web::test]
async fn with_an_api_key_the_card_declares_bearer_and_calls_need_it() {
    let app = spawn_app_with(|c| c.api_key = Some("sk-a2a".into())).await;
    let card = app.get("/.well-known/agent-card.json", &[]).await;
    assert_eq!(card.status, StatusCode::OK, "the card is public");
    assert_eq!(
        card.body["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    assert_eq!(
        card.body["securityRequirements"],
        json!([{"schemes": {"bearer": {"list": []}}}])
    );
    let context = session();
    let params = json!({"message": message(&["My kayak is green."], Some(&context))});
    let r = rpc(&app, "SendMessage", params.clone(), &[]).await;
    assert_eq!(rpc_error(&r, StatusCode::UNAUTHORIZED), -32600);
    assert_eq!(r.headers.get("www-authenticate").unwrap(), "Bearer");
    let r = rpc(
        &app,
        "SendMessage",
        params.clone(),
        &[("authorization", "Bearer nope")],
    )
    .await;
    assert_eq!(rpc_error(&r, StatusCode::UNAUTHORIZED), -32600);
    assert_nothing_stored_with_key(&app, &context).await;
    let r = rpc(
        &app,
        "SendMessage",
        params,
        &[("authorization", "Bearer sk-a2a")],
    )
    .await;
    assert!(reply_text(&task_of(&r)).contains("green"), "{}", r.raw);
}

async fn assert_nothing_stored_with_key(app: &TestApp, session: &str) {
    let memory = app
        .get("/control/memory", &[("x-session-id", session)])
        .await;
    assert!(
        memory.body["working_memory"].as_array().unwrap().is_empty(),
        "{}",
        memory.raw
    );
}

#[actix_web::test]
async fn a_context_is_a_session_and_its_messages_recall_each_other() {
    let app = spawn_app().await;
    let context = session();
    let first = send(
        &app,
        "My favourite colour is teal.",
        &context,
        &[("x-mock-time", T0)],
    )
    .await;
    assert_eq!(first["contextId"], context.as_str());
    assert_eq!(
        first["status"]["timestamp"], "2026-03-01T09:00:00.000Z",
        "the session's clock"
    );
    assert_eq!(first["history"][0]["role"], "ROLE_USER");
    assert_eq!(first["history"][0]["taskId"], first["id"]);
    assert_eq!(first["history"][1]["role"], "ROLE_AGENT");
    let later = at(chrono::Duration::hours(1));
    let second = send(
        &app,
        "What is my favourite colour?",
        &context,
        &[("x-mock-time", &later)],
    )
    .await;
    assert!(reply_text(&second).contains("teal"), "{second}");
    assert_ne!(first["id"], second["id"], "a task per message");

    // The same session through the other APIs: its memory, and a chat turn that recalls it.
    let memory = app
        .get(
            "/control/memory",
            &[("x-session-id", &context), ("x-mock-time", &later)],
        )
        .await;
    let said: Vec<&str> = memory.body["working_memory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["text"].as_str().unwrap())
        .collect();
    assert_eq!(said.len(), 4, "{}", memory.raw);
    assert_eq!(said[0], "My favourite colour is teal.");
    assert!(
        app.ask(&context, "What is my favourite colour?", Some(&later))
            .await
            .contains("teal")
    );

    // X-Session-Id names the session when given: the context is the header's.
    let header = session();
    let r = rpc(
        &app,
        "SendMessage",
        json!({"message": message(&["My kayak is green."], None)}),
        &[("x-session-id", &header)],
    )
    .await;
    let task = task_of(&r);
    assert_eq!(task["contextId"], header.as_str());
    assert_eq!(r.headers.get("x-session-id").unwrap(), header.as_str());
    assert!(
        send(
            &app,
            "What colour is my kayak?",
            &header,
            &[("x-session-id", &header)]
        )
        .await
        .to_string()
        .contains("green")
    );
}

#[actix_web::test]
async fn a_message_without_a_context_gets_a_new_one_to_continue_in() {
    let app = spawn_app().await;
    let r = rpc(
        &app,
        "SendMessage",
        json!({"message": message(&["My locker code is 4512."], None)}),
        &[],
    )
    .await;
    let first = task_of(&r);
    let context = first["contextId"].as_str().unwrap().to_owned();
    assert!(context.starts_with("auto:"), "{context}");
    let second = send(&app, "What is my locker code?", &context, &[]).await;
    assert!(reply_text(&second).contains("4512"), "{second}");
    let other = rpc(
        &app,
        "SendMessage",
        json!({"message": message(&["What is my locker code?"], None)}),
        &[],
    )
    .await;
    let other = task_of(&other);
    assert_ne!(other["contextId"], context.as_str());
    assert!(!reply_text(&other).contains("4512"), "{other}");
}

#[actix_web::test]
async fn instructions_and_history_parts_are_context_not_the_users_words() {
    let app = spawn_app().await;
    let context = session();
    let marked =
        |text: &str, kind: &str| json!({"text": text, "metadata": {"agentwall/part": kind}});
    let mut m = message(&["My name is Ada."], Some(&context));
    m["parts"] = json!([
        marked("My name is Bob. Always be brief.", "instructions"),
        marked(
            "Earlier in this conversation:\nUser: My dog is called Rex.\nAgent: Noted.",
            "history"
        ),
        {"text": "My name is Ada."},
    ]);
    let task = task_of(&rpc(&app, "SendMessage", json!({"message": m}), &[]).await);
    assert!(reply_text(&task).contains("Ada"), "{task}");
    let memory = app
        .get("/control/memory", &[("x-session-id", &context)])
        .await;
    let stored = memory.raw.clone();
    assert!(stored.contains("Ada"), "{stored}");
    for not_said in ["Bob", "Rex", "brief"] {
        assert!(
            !stored.contains(not_said),
            "{not_said} was learned: {stored}"
        );
    }
}

#[actix_web::test]
async fn the_stream_is_the_task_its_reply_in_chunks_then_the_completion_after_the_commit() {
    let app = spawn_app().await;
    let context = session();
    send(&app, "My favourite colour is teal.", &context, &[]).await;
    let r = rpc(
        &app,
        "SendStreamingMessage",
        json!({"message": message(&["What is my favourite colour? Tell me in a long sentence please."], Some(&context))}),
        &[],
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.raw);
    assert!(
        r.headers
            .get("content-type")
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let events = events(&r.raw);
    assert!(events.len() >= 3, "{}", r.raw);
    for (name, answer) in &events {
        assert_eq!(name, "message", "{}", r.raw);
        assert_eq!(answer["id"], 7);
        assert_eq!(
            answer["result"].as_object().unwrap().len(),
            1,
            "one event each"
        );
    }
    let result = |i: usize| &events[i].1["result"];
    let task = &result(0)["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING");
    let id = task["id"].as_str().unwrap();
    let last = &result(events.len() - 1)["statusUpdate"];
    assert_eq!(
        last["status"]["state"], "TASK_STATE_COMPLETED",
        "last: {}",
        r.raw
    );
    assert_eq!(last["taskId"], id);
    let chunks: Vec<&Value> = (1..events.len() - 1)
        .map(|i| &result(i)["artifactUpdate"])
        .collect();
    assert!(chunks.iter().all(|c| c.is_object()), "{}", r.raw);
    assert_eq!(
        chunks[0]["append"],
        Value::Null,
        "the first makes the artifact"
    );
    assert!(chunks[1..].iter().all(|c| c["append"] == true));
    assert_eq!(chunks.last().unwrap()["lastChunk"], true);
    let streamed: String = chunks
        .iter()
        .map(|c| c["artifact"]["parts"][0]["text"].as_str().unwrap())
        .collect();
    assert!(streamed.contains("teal"), "{streamed}");

    // Stored before the completion left: GetTask has it whole, memory has the turn.
    let got = rpc(&app, "GetTask", json!({"id": id}), &[]).await;
    assert_eq!(reply_text(&got.body["result"]), streamed);
    let memory = app
        .get("/control/memory", &[("x-session-id", &context)])
        .await;
    assert_eq!(memory.body["working_memory"].as_array().unwrap().len(), 4);
}

/// A server started by [`start_on`]: its address, its handle, and the task that runs it (which
/// drops the server, and so lets go of its data directory, only when it ends).
struct Started {
    app: TestApp,
    handle: actix_web::dev::ServerHandle,
    running: actix_web::rt::task::JoinHandle<std::io::Result<()>>,
}

/// Starts a server on `data` (embedded store, builtin model).
async fn start_on(data: &Path) -> Started {
    let mut config = Config::for_tests(data);
    config.workers = Some(1);
    let app = Application::build(config).await.expect("server starts");
    let handle = app.handle();
    let address = format!("http://127.0.0.1:{}", app.port());
    let running = actix_web::rt::spawn(app.run_until_stopped());
    Started {
        app: TestApp::at(address),
        handle,
        running,
    }
}

#[actix_web::test]
async fn a_task_is_got_after_a_restart_on_the_embedded_store() {
    let data = tempfile::tempdir().unwrap();
    let first = start_on(data.path()).await;
    let context = session();
    let task = send(&first.app, "My locker code is 4512.", &context, &[]).await;
    let id = task["id"].as_str().unwrap().to_owned();
    first.handle.stop(true).await;
    // The embedded store has one owner at a time: wait until the first server is dropped.
    first.running.await.unwrap().unwrap();

    let app = start_on(data.path()).await.app;
    let got = rpc(&app, "GetTask", json!({"id": id}), &[]).await;
    assert_eq!(
        got.body["result"], task,
        "the task as it was answered: {}",
        got.raw
    );
    let listed = rpc(
        &app,
        "ListTasks",
        json!({"contextId": context, "includeArtifacts": true}),
        &[],
    )
    .await;
    assert_eq!(listed.body["result"]["tasks"][0], task, "{}", listed.raw);
    assert!(
        reply_text(&send(&app, "What is my locker code?", &context, &[]).await).contains("4512")
    );
}

#[actix_web::test]
async fn tasks_and_contexts_of_another_session_are_refused() {
    let app = spawn_app().await;
    let (mine, theirs) = (session(), session());
    let task = send(
        &app,
        "My locker code is 4512.",
        &theirs,
        &[("x-session-id", &theirs)],
    )
    .await;
    let id = task["id"].as_str().unwrap();
    let as_mine = [("x-session-id", mine.as_str())];
    for method in ["GetTask", "CancelTask", "SubscribeToTask"] {
        let r = rpc(&app, method, json!({"id": id}), &as_mine).await;
        assert_eq!(rpc_error(&r, StatusCode::OK), -32001, "{method}: {}", r.raw);
    }
    // A message naming their task, or their context, under my session.
    let mut m = message(&["What is my locker code?"], None);
    m["taskId"] = json!(id);
    let r = rpc(&app, "SendMessage", json!({"message": m}), &as_mine).await;
    assert_eq!(rpc_error(&r, StatusCode::OK), -32001, "{}", r.raw);
    let m = message(&["What is my locker code?"], Some(&theirs));
    let r = rpc(&app, "SendMessage", json!({"message": m}), &as_mine).await;
    assert_eq!(rpc_error(&r, StatusCode::OK), -32602, "{}", r.raw);
    // Their task under my context, without a header, is not found either.
    let mut m = message(&["What is my locker code?"], Some(&mine));
    m["taskId"] = json!(id);
    let r = rpc(&app, "SendMessage", json!({"message": m}), &[]).await;
    assert_eq!(rpc_error(&r, StatusCode::OK), -32001, "{}", r.raw);
    let listed = rpc(&app, "ListTasks", json!({"contextId": theirs}), &as_mine).await;
    assert_eq!(listed.body["result"]["tasks"], json!([]), "{}", listed.raw);
    assert_nothing_stored(&app, &mine).await;

    // Their own session sees it; a finished task takes no more messages and cannot be canceled.
    let as_theirs = [("x-session-id", theirs.as_str())];
    let got = rpc(&app, "GetTask", json!({"id": id}), &as_theirs).await;
    assert_eq!(got.body["result"]["id"], id, "{}", got.raw);
    let r = rpc(&app, "CancelTask", json!({"id": id}), &as_theirs).await;
    assert_eq!(rpc_error(&r, StatusCode::OK), -32002, "{}", r.raw);
    let r = rpc(&app, "SubscribeToTask", json!({"id": id}), &as_theirs).await;
    assert_eq!(rpc_error(&r, StatusCode::OK), -32004, "{}", r.raw);
    let mut m = message(&["And my bike lock?"], Some(&theirs));
    m["taskId"] = json!(id);
    let r = rpc(&app, "SendMessage", json!({"message": m}), &as_theirs).await;
    assert_eq!(rpc_error(&r, StatusCode::OK), -32004, "{}", r.raw);
    // Without a header a task id is a capability, as a response id is on /v1.
    let got = rpc(&app, "GetTask", json!({"id": id, "historyLength": 1}), &[]).await;
    assert_eq!(got.body["result"]["history"].as_array().unwrap().len(), 1);
    assert_eq!(got.body["result"]["history"][0]["role"], "ROLE_AGENT");
}

#[actix_web::test]
async fn a_reset_forgets_the_sessions_tasks() {
    let app = spawn_app().await;
    let (a, b) = (session(), session());
    let task = send(&app, "My kayak is green.", &a, &[]).await;
    let kept = send(&app, "My kayak is red.", &b, &[]).await;
    let r = app
        .control_post("/control/session/reset", &a, None, None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.raw);
    let r = rpc(&app, "GetTask", json!({"id": task["id"]}), &[]).await;
    assert_eq!(rpc_error(&r, StatusCode::OK), -32001, "{}", r.raw);
    assert_nothing_stored(&app, &a).await;
    let r = rpc(&app, "GetTask", json!({"id": kept["id"]}), &[]).await;
    assert_eq!(r.body["result"]["id"], kept["id"], "{}", r.raw);
}

#[actix_web::test]
async fn a_message_sent_again_is_answered_with_its_task_not_a_second_turn() {
    let app = spawn_app().await;
    let context = session();
    let params = json!({"message": message(&["My kayak is green."], Some(&context))});
    let first = task_of(&rpc(&app, "SendMessage", params.clone(), &[]).await);
    let again = task_of(&rpc(&app, "SendMessage", params.clone(), &[]).await);
    assert_eq!(first, again);
    let r = rpc(&app, "SendStreamingMessage", params, &[]).await;
    let events = events(&r.raw);
    assert_eq!(events.len(), 1, "{}", r.raw);
    assert_eq!(events[0].1["result"]["task"], first);
    let memory = app
        .get("/control/memory", &[("x-session-id", &context)])
        .await;
    assert_eq!(
        memory.body["working_memory"].as_array().unwrap().len(),
        2,
        "one turn"
    );
}

#[actix_web::test]
async fn tasks_are_listed_newest_first_a_page_at_a_time() {
    let app = spawn_app().await;
    let context = session();
    let mut ids = Vec::new();
    for hour in 0..3 {
        let now = at(chrono::Duration::hours(hour));
        let task = send(
            &app,
            &format!("Note number {hour}."),
            &context,
            &[("x-mock-time", &now)],
        )
        .await;
        ids.push(task["id"].as_str().unwrap().to_owned());
    }
    ids.reverse();
    let page = rpc(
        &app,
        "ListTasks",
        json!({"contextId": context, "pageSize": 2}),
        &[],
    )
    .await;
    let result = &page.body["result"];
    assert_eq!(result["totalSize"], 3, "{}", page.raw);
    assert_eq!(result["pageSize"], 2);
    assert_eq!(result["tasks"][0]["id"], ids[0].as_str());
    assert_eq!(result["tasks"][1]["id"], ids[1].as_str());
    assert!(
        result["tasks"][0].get("artifacts").is_none(),
        "left out unless asked for"
    );
    let token = result["nextPageToken"].as_str().unwrap();
    assert!(!token.is_empty());
    let page = rpc(
        &app,
        "ListTasks",
        json!({"contextId": context, "pageSize": 2, "pageToken": token, "historyLength": 0}),
        &[],
    )
    .await;
    let result = &page.body["result"];
    assert_eq!(result["tasks"].as_array().unwrap().len(), 1, "{}", page.raw);
    assert_eq!(result["tasks"][0]["id"], ids[2].as_str());
    assert!(result["tasks"][0].get("history").is_none());
    assert_eq!(result["nextPageToken"], "");
    let after = rpc(
        &app,
        "ListTasks",
        json!({"contextId": context, "statusTimestampAfter": at(chrono::Duration::minutes(30))}),
        &[],
    )
    .await;
    assert_eq!(after.body["result"]["totalSize"], 2, "{}", after.raw);
}

/// What a bad call is, its body, its headers, and the code it is answered with.
type Case<'a> = (&'a str, String, Vec<(&'a str, &'a str)>, i64);

#[actix_web::test]
async fn bad_input_is_a_json_rpc_error_with_its_code_and_stores_nothing() {
    let app = spawn_app_with(|c| c.max_body_bytes = 4096).await;
    let context = session();
    let ok = |m: Value| json!({"message": m});
    let with_part = |part: Value| {
        let mut m = message(&["My kayak is green."], Some(&context));
        m["parts"].as_array_mut().unwrap().push(part);
        ok(m)
    };
    let request = |method: &str, params: Value| {
        json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string()
    };
    let send_params = ok(message(&["My kayak is green."], Some(&context)));
    let mut agent_role = message(&["My kayak is green."], Some(&context));
    agent_role["role"] = json!("ROLE_AGENT");
    let mut no_id = message(&["My kayak is green."], Some(&context));
    no_id.as_object_mut().unwrap().remove("messageId");
    let big = "My kayak is green. ".repeat(400);
    let cases: Vec<Case> = vec![
        (
            "malformed JSON",
            "{\"jsonrpc\": \"2.0\", \"id\": 7,".into(),
            vec![],
            -32700,
        ),
        (
            "a batch",
            format!("[{}]", request("SendMessage", send_params.clone())),
            vec![],
            -32600,
        ),
        (
            "no jsonrpc",
            json!({"id": 7, "method": "SendMessage", "params": send_params}).to_string(),
            vec![],
            -32600,
        ),
        (
            "jsonrpc 1.0",
            json!({"jsonrpc": "1.0", "id": 7, "method": "SendMessage", "params": send_params})
                .to_string(),
            vec![],
            -32600,
        ),
        (
            "no method",
            json!({"jsonrpc": "2.0", "id": 7, "params": send_params}).to_string(),
            vec![],
            -32600,
        ),
        (
            "an unknown method",
            request("SendMail", send_params.clone()),
            vec![],
            -32601,
        ),
        (
            "an A2A 0.3 method",
            request("message/send", send_params.clone()),
            vec![],
            -32601,
        ),
        (
            "no A2A-Version (0.3)",
            request("SendMessage", send_params.clone()),
            vec![("a2a-version", "")],
            -32009,
        ),
        (
            "A2A-Version 2.0",
            request("SendMessage", send_params.clone()),
            vec![("a2a-version", "2.0")],
            -32009,
        ),
        (
            "params not an object",
            request("SendMessage", json!(["hi"])),
            vec![],
            -32602,
        ),
        (
            "no message",
            request("SendMessage", json!({})),
            vec![],
            -32602,
        ),
        (
            "parts of the wrong type",
            request(
                "SendMessage",
                ok(
                    json!({"messageId": "m", "role": "ROLE_USER", "parts": "hi", "contextId": context}),
                ),
            ),
            vec![],
            -32602,
        ),
        (
            "no messageId",
            request("SendMessage", ok(no_id)),
            vec![],
            -32602,
        ),
        (
            "an agent's message",
            request("SendMessage", ok(agent_role)),
            vec![],
            -32602,
        ),
        (
            "no parts",
            request("SendMessage", ok(message(&[], Some(&context)))),
            vec![],
            -32602,
        ),
        (
            "a bad contextId",
            request(
                "SendMessage",
                ok(message(&["Hi"], Some("no spaces allowed"))),
            ),
            vec![],
            -32602,
        ),
        (
            "a bad X-Mock-Time",
            request("SendMessage", send_params.clone()),
            vec![("x-mock-time", "yesterday")],
            -32602,
        ),
        (
            "a negative historyLength",
            request(
                "SendMessage",
                json!({"message": message(&["Hi"], Some(&context)), "configuration": {"historyLength": -1}}),
            ),
            vec![],
            -32602,
        ),
        (
            "a data part",
            request("SendMessage", with_part(json!({"data": {"tools": []}}))),
            vec![],
            -32005,
        ),
        (
            "a file part by URL",
            request(
                "SendMessage",
                with_part(json!({"url": "https://x/a.png", "mediaType": "image/png"})),
            ),
            vec![],
            -32005,
        ),
        (
            "a file part inline",
            request(
                "SendMessage",
                with_part(json!({"raw": "aGk=", "filename": "a.txt"})),
            ),
            vec![],
            -32005,
        ),
        (
            "output modes without text",
            request(
                "SendMessage",
                json!({"message": message(&["Hi"], Some(&context)), "configuration": {"acceptedOutputModes": ["image/png"]}}),
            ),
            vec![],
            -32005,
        ),
        (
            "the same, streamed",
            request("SendStreamingMessage", with_part(json!({"data": {}}))),
            vec![],
            -32005,
        ),
        (
            "an oversized message",
            request("SendMessage", ok(message(&[&big], Some(&context)))),
            vec![],
            -32600,
        ),
        (
            "an unknown task",
            request("GetTask", json!({"id": "no-such-task"})),
            vec![],
            -32001,
        ),
        (
            "a task without id",
            request("GetTask", json!({})),
            vec![],
            -32602,
        ),
        (
            "an unknown task to cancel",
            request("CancelTask", json!({"id": "no-such-task"})),
            vec![],
            -32001,
        ),
        (
            "push notifications",
            request(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": "t", "url": "https://x"}),
            ),
            vec![],
            -32003,
        ),
        (
            "an extended card",
            request("GetExtendedAgentCard", json!({})),
            vec![],
            -32004,
        ),
        (
            "ListTasks of no session",
            request("ListTasks", json!({})),
            vec![],
            -32602,
        ),
        (
            "a page too large",
            request("ListTasks", json!({"contextId": context, "pageSize": 101})),
            vec![],
            -32602,
        ),
        (
            "a page token not ours",
            request(
                "ListTasks",
                json!({"contextId": context, "pageToken": "abc"}),
            ),
            vec![],
            -32602,
        ),
    ];
    for (what, body, headers, code) in cases {
        let r = raw_rpc(&app, body.as_bytes(), &headers).await;
        assert_eq!(rpc_error(&r, StatusCode::OK), code, "{what}: {}", r.raw);
        // The id is answered whenever it could be read: not from a body that is not JSON, not
        // from a batch, and not from a body refused before it was read.
        let unread = ["malformed JSON", "a batch", "an oversized message"].contains(&what);
        let expected_id = if unread { Value::Null } else { json!(7) };
        assert_eq!(r.body["id"], expected_id, "{what}: {}", r.raw);
    }
    // The oversized body says which limit it passed.
    let r = raw_rpc(
        &app,
        request("SendMessage", ok(message(&[&big], Some(&context)))).as_bytes(),
        &[],
    )
    .await;
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-body-bytes"),
        "{}",
        r.raw
    );
    // A2A errors name themselves as the specification does.
    let r = raw_rpc(
        &app,
        request("GetTask", json!({"id": "no-such-task"})).as_bytes(),
        &[],
    )
    .await;
    assert_eq!(
        r.body["error"]["data"][0],
        json!({"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND",
               "domain": "a2a-protocol.org", "metadata": {"taskId": "no-such-task"}})
    );
    assert_nothing_stored(&app, &context).await;
    // And the server still answers.
    assert!(reply_text(&send(&app, "My kayak is green.", &context, &[]).await).contains("green"));
}
