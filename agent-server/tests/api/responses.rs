//! The Responses and Conversations APIs over HTTP: shapes, chains, storage, foreign ids, bad input.

use awc::http::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;

/// `POST path` with a JSON body and extra headers.
pub async fn post(app: &TestApp, path: &str, body: &Value, headers: &[(&str, &str)]) -> Reply {
    let mut req = app
        .client
        .post(app.url(path))
        .insert_header(("content-type", "application/json"));
    for (k, v) in headers {
        req = req.insert_header((*k, *v));
    }
    app.send(req, Some(body.to_string().as_bytes())).await
}

pub async fn delete(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> Reply {
    let mut req = app.client.delete(app.url(path));
    for (k, v) in headers {
        req = req.insert_header((*k, *v));
    }
    app.send(req, None).await
}

/// `POST /v1/responses`, asserting 200.
pub async fn create(app: &TestApp, body: Value, headers: &[(&str, &str)]) -> Reply {
    let r = post(app, "/v1/responses", &body, headers).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.raw);
    r
}

pub fn session_of(r: &Reply) -> String {
    r.headers
        .get("x-session-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

fn id(r: &Reply) -> &str {
    r.body["id"].as_str().unwrap()
}

/// The session's memory as `/control/memory` shows it: (working items, facts).
async fn memory_counts(app: &TestApp, session: &str) -> (usize, usize) {
    let r = app
        .get("/control/memory", &[("x-session-id", session)])
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.raw);
    (
        r.body["working_memory"].as_array().map_or(0, Vec::len),
        r.body["facts"].as_array().map_or(0, Vec::len),
    )
}

#[actix_web::test]
async fn a_response_has_openais_shape_and_can_be_retrieved_listed_and_deleted() {
    let app = spawn_app().await;
    let r = create(
        &app,
        json!({"model": "m", "input": "My kayak is green."}),
        &[],
    )
    .await;
    let b = &r.body;
    assert_eq!(b["object"], "response");
    assert_eq!(b["status"], "completed");
    assert_eq!(b["model"], "m");
    assert!(
        id(&r).starts_with("resp_") && id(&r).len() > 30,
        "{}",
        id(&r)
    );
    assert_eq!(b["output"][0]["type"], "message");
    assert_eq!(b["output"][0]["role"], "assistant");
    assert_eq!(b["output"][0]["content"][0]["type"], "output_text");
    assert!(b["output_text"].as_str().unwrap().contains("green"), "{b}");
    let usage = &b["usage"];
    assert_eq!(
        usage["total_tokens"].as_u64().unwrap(),
        usage["input_tokens"].as_u64().unwrap() + usage["output_tokens"].as_u64().unwrap()
    );
    // A new session was made for it, and the turn is in its memory like a chat turn.
    let session = session_of(&r);
    assert!(session.starts_with("auto:"), "{session}");
    assert_eq!(memory_counts(&app, &session).await.0, 2);

    let path = format!("/v1/responses/{}", id(&r));
    let got = app.get(&path, &[]).await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.raw);
    assert_eq!(got.body, r.body);
    let items = app.get(&format!("{path}/input_items"), &[]).await;
    assert_eq!(items.body["object"], "list");
    assert_eq!(items.body["data"][0]["role"], "user");
    assert_eq!(
        items.body["data"][0]["content"][0],
        json!({"type": "input_text", "text": "My kayak is green."})
    );
    assert_eq!(items.body["first_id"], items.body["data"][0]["id"]);

    let deleted = delete(&app, &path, &[]).await;
    assert_eq!(deleted.body["deleted"], true, "{}", deleted.raw);
    let (code, _) = app.get(&path, &[]).await.error(StatusCode::NOT_FOUND);
    assert_eq!(code, "not_found");
}

#[actix_web::test]
async fn a_chain_carries_its_session_and_context_without_any_header() {
    let app = spawn_app().await;
    let first = create(&app, json!({"input": "My kayak is green."}), &[]).await;
    let second = create(
        &app,
        json!({"input": "What colour is my kayak?", "previous_response_id": id(&first)}),
        &[],
    )
    .await;
    assert_eq!(session_of(&second), session_of(&first));
    assert_eq!(second.body["previous_response_id"], id(&first));
    assert!(
        second.body["output_text"]
            .as_str()
            .unwrap()
            .contains("green"),
        "{}",
        second.raw
    );
    // A new chain is a new session: it knows nothing of the first.
    let other = create(&app, json!({"input": "What colour is my kayak?"}), &[]).await;
    assert_ne!(session_of(&other), session_of(&first));
    assert!(
        !other.body["output_text"]
            .as_str()
            .unwrap()
            .contains("green"),
        "{}",
        other.raw
    );
}

#[actix_web::test]
async fn a_streamed_response_sends_semantic_events_and_is_stored_when_completed() {
    let app = spawn_app().await;
    let r = post(
        &app,
        "/v1/responses",
        &json!({"input": "My kayak is green.", "stream": true}),
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
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"response.created"));
    assert_eq!(kinds.last(), Some(&"response.completed"));
    assert!(kinds.contains(&"response.output_text.delta"), "{kinds:?}");
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["sequence_number"], i, "{e}");
    }
    let completed = &events.last().unwrap()["response"];
    let got = app
        .get(
            &format!("/v1/responses/{}", completed["id"].as_str().unwrap()),
            &[],
        )
        .await;
    assert_eq!(&got.body, completed);
}

#[actix_web::test]
async fn store_false_leaves_nothing_to_retrieve_and_without_a_session_nothing_at_all() {
    let app = spawn_app().await;
    let r = create(
        &app,
        json!({"input": "My kayak is green.", "store": false}),
        &[],
    )
    .await;
    assert_eq!(r.headers.get("x-memory-write").unwrap(), "off");
    assert!(r.headers.get("x-session-id").is_none());
    let path = format!("/v1/responses/{}", id(&r));
    app.get(&path, &[]).await.error(StatusCode::NOT_FOUND);

    // With a session: memory learns (the session was named), the response is not kept.
    let session = session();
    let r = create(
        &app,
        json!({"input": "My kayak is green.", "store": false}),
        &[("x-session-id", &session)],
    )
    .await;
    assert_eq!(session_of(&r), session);
    app.get(&format!("/v1/responses/{}", id(&r)), &[])
        .await
        .error(StatusCode::NOT_FOUND);
    assert_eq!(memory_counts(&app, &session).await.0, 2);
}

#[actix_web::test]
async fn another_sessions_response_is_not_found_and_a_mismatched_chain_is_a_conflict() {
    let app = spawn_app().await;
    let (mine, theirs) = (session(), session());
    let r = create(
        &app,
        json!({"input": "My kayak is green."}),
        &[("x-session-id", &mine)],
    )
    .await;
    let path = format!("/v1/responses/{}", id(&r));
    for p in [path.clone(), format!("{path}/input_items")] {
        let (code, _) = app
            .get(&p, &[("x-session-id", &theirs)])
            .await
            .error(StatusCode::NOT_FOUND);
        assert_eq!(code, "not_found");
    }
    delete(&app, &path, &[("x-session-id", &theirs)])
        .await
        .error(StatusCode::NOT_FOUND);
    // Its own session and a holder of the id without a header see it.
    assert_eq!(
        app.get(&path, &[("x-session-id", &mine)]).await.status,
        StatusCode::OK
    );
    assert_eq!(app.get(&path, &[]).await.status, StatusCode::OK);

    let chained = post(
        &app,
        "/v1/responses",
        &json!({"input": "What colour is my kayak?", "previous_response_id": id(&r)}),
        &[("x-session-id", &theirs)],
    )
    .await;
    let (code, _) = chained.error(StatusCode::CONFLICT);
    assert_eq!(code, "session_mismatch");
    assert_eq!(memory_counts(&app, &theirs).await, (0, 0));
}

#[actix_web::test]
async fn bad_input_is_a_400_naming_the_field_and_stores_nothing() {
    let app = spawn_app().await;
    let session = session();
    let call = json!({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"});
    let cases = [
        (json!({"model": "m"}), "input"),
        (json!({"input": []}), "input"),
        (
            json!({"input": "hi", "previous_response_id": "resp_does_not_exist"}),
            "previous_response_id",
        ),
        (
            json!({"input": [{"role": "robot", "content": "hi"}]}),
            "input[0].role",
        ),
        (
            json!({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]}),
            "input[0].content",
        ),
        (json!({"input": [{"type": "reasoning"}]}), "input[0].type"),
        (
            json!({"input": [{"role": "user", "content": "hi"}, {"type": "function_call_output", "call_id": "c9", "output": "1"}]}),
            "input[1].call_id",
        ),
        (
            json!({"input": [{"role": "user", "content": "hi"}, call, {"type": "function_call_output", "call_id": "c1"}]}),
            "input[2].output",
        ),
        (
            json!({"input": "hi", "tools": [{"type": "custom", "name": "x"}]}),
            "tools[0].type",
        ),
        (json!({"input": "hi", "temperature": 3}), "temperature"),
        (
            json!({"input": "hi", "max_output_tokens": 0}),
            "max_output_tokens",
        ),
        (
            json!({"input": "hi", "previous_response_id": "resp_x", "conversation": "conv_x"}),
            "previous_response_id",
        ),
    ];
    for (body, param) in cases {
        let r = post(&app, "/v1/responses", &body, &[("x-session-id", &session)]).await;
        let (code, message) = r.error(StatusCode::BAD_REQUEST);
        assert_eq!(code, "invalid_request", "{body}");
        assert_eq!(r.body["error"]["param"], param, "{body}: {message}");
    }
    let malformed = app
        .send(
            app.client
                .post(app.url("/v1/responses"))
                .insert_header(("content-type", "application/json")),
            Some(br#"{"input": "hi""#),
        )
        .await;
    malformed.error(StatusCode::BAD_REQUEST);
    assert_eq!(memory_counts(&app, &session).await, (0, 0));
    // An unknown conversation is a 404.
    let r = post(
        &app,
        "/v1/responses",
        &json!({"input": "hi", "conversation": "conv_nope"}),
        &[],
    )
    .await;
    r.error(StatusCode::NOT_FOUND);
}

#[actix_web::test]
async fn a_function_call_round_trips_through_a_chain() {
    let app = spawn_app().await;
    let tools = json!([{"type": "function", "name": "paypal__check_balance",
        "description": "View the balance", "parameters": {"type": "object", "properties": {}}}]);
    let first = create(
        &app,
        json!({"input": "What is my PayPal balance?", "tools": tools}),
        &[],
    )
    .await;
    let call = first.body["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call")
        .unwrap_or_else(|| panic!("no function call: {}", first.raw))
        .clone();
    assert_eq!(call["name"], "paypal__check_balance");
    let back = create(
        &app,
        json!({
            "previous_response_id": id(&first),
            "tools": tools,
            "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": "{\"balance\": \"$120.00\"}"}],
        }),
        &[],
    )
    .await;
    assert!(
        back.body["output_text"].as_str().unwrap().contains("120"),
        "{}",
        back.raw
    );
    // Without the chain, the output has no call to answer.
    let orphan = post(
        &app,
        "/v1/responses",
        &json!({"input": [{"type": "function_call_output", "call_id": call["call_id"], "output": "1"}]}),
        &[],
    )
    .await;
    orphan.error(StatusCode::BAD_REQUEST);
}

#[actix_web::test]
async fn conversations_gather_their_responses_and_go_with_a_reset() {
    let app = spawn_app().await;
    let created = post(
        &app,
        "/v1/conversations",
        &json!({"metadata": {"topic": "boats"}, "items": [{"role": "user", "content": "My kayak is green."}]}),
        &[],
    )
    .await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.raw);
    assert_eq!(created.body["object"], "conversation");
    let conversation = created.body["id"].as_str().unwrap().to_owned();
    let session = session_of(&created);
    let answer = create(
        &app,
        json!({"input": "What colour is my kayak?", "conversation": conversation}),
        &[],
    )
    .await;
    assert_eq!(session_of(&answer), session);
    assert_eq!(answer.body["conversation"]["id"], conversation.as_str());
    assert!(
        answer.body["output_text"]
            .as_str()
            .unwrap()
            .contains("green"),
        "{}",
        answer.raw
    );
    let items = app
        .get(
            &format!("/v1/conversations/{conversation}/items?order=asc"),
            &[],
        )
        .await;
    let roles: Vec<&str> = items.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "user", "assistant"], "{}", items.raw);
    let updated = post(
        &app,
        &format!("/v1/conversations/{conversation}"),
        &json!({"metadata": {"topic": "kayaks"}}),
        &[],
    )
    .await;
    assert_eq!(updated.body["metadata"]["topic"], "kayaks");

    let reset = app
        .control_post("/control/session/reset", &session, None, None)
        .await;
    assert_eq!(reset.status, StatusCode::OK);
    app.get(&format!("/v1/conversations/{conversation}"), &[])
        .await
        .error(StatusCode::NOT_FOUND);
    app.get(&format!("/v1/responses/{}", id(&answer)), &[])
        .await
        .error(StatusCode::NOT_FOUND);
}

#[actix_web::test]
async fn a_responses_turn_runs_on_the_session_clock() {
    let app = spawn_app().await;
    let r = create(
        &app,
        json!({"input": "What is today's date?"}),
        &[("x-mock-time", T0)],
    )
    .await;
    let text = r.body["output_text"].as_str().unwrap();
    assert!(text.contains("March") && text.contains("2026"), "{text}");
}
