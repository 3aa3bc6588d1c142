//! The endpoints' shapes: completions, streams, models, health, OpenAPI.

use awc::http::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;

#[actix_web::test]
async fn completion_has_openai_shape_with_usage() {
    let app = spawn_app().await;
    let reply = app.say(&session(), "Hello!", None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
    let b = &reply.body;
    assert!(b["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(b["object"], "chat.completion");
    assert_eq!(b["model"], "agentwall-builtin");
    assert_eq!(b["choices"][0]["message"]["role"], "assistant");
    assert_eq!(b["choices"][0]["finish_reason"], "stop");
    let usage = &b["usage"];
    assert_eq!(
        usage["total_tokens"].as_u64().unwrap(),
        usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
    );
    assert!(reply.text().starts_with("Hello!"));
}

fn sse_events(raw: &str) -> Vec<String> {
    raw.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            e.strip_prefix("data: ")
                .unwrap_or_else(|| panic!("not an SSE data line: {e:?}"))
                .to_owned()
        })
        .collect()
}

#[actix_web::test]
async fn stream_sends_chunks_usage_and_done() {
    let app = spawn_app().await;
    let s = session();
    app.ask(&s, "My favourite colour is teal.", None).await;
    let body = json!({
        "model": "m",
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "What is my favourite colour?"}]
    });
    let reply = app.chat(&s, &body, None).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(
        reply
            .headers
            .get("content-type")
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let events = sse_events(&reply.raw);
    assert_eq!(events.last().unwrap(), "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "Your favourite colour is teal.");
    let usage_chunk = chunks.last().unwrap();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert!(usage_chunk["usage"]["completion_tokens"].as_u64().unwrap() > 0);
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk" && c["id"] == chunks[0]["id"])
    );

    // Without include_usage there is no usage chunk.
    let body = json!({"stream": true, "messages": [{"role": "user", "content": "hi"}]});
    let events = sse_events(&app.chat(&s, &body, None).await.raw);
    assert!(events.iter().all(|e| !e.contains("\"usage\"")));
}

#[actix_web::test]
async fn models_health_readiness_and_openapi() {
    let app = spawn_app().await;
    let models = app.get("/v1/models", &[]).await;
    assert_eq!(models.body["data"][0]["id"], "agentwall-builtin");
    assert_eq!(models.body["object"], "list");
    assert_eq!(app.get("/healthz", &[]).await.body["status"], "ok");
    let ready = app.get("/readyz", &[]).await;
    assert_eq!(ready.status, StatusCode::OK);
    assert_eq!(ready.body["dependencies"][0]["name"], "embedded");
    assert_eq!(ready.body["dependencies"][0]["ok"], true);
    let spec = app.get("/openapi.json", &[]).await.body;
    for path in [
        "/v1/chat/completions",
        "/v1/models",
        "/control/session/reset",
        "/control/memory/inject",
        "/control/memory",
        "/healthz",
        "/readyz",
    ] {
        assert!(
            spec["paths"][path].is_object(),
            "{path} missing from /openapi.json"
        );
    }
    assert!(spec["components"]["schemas"]["ChatCompletionRequest"].is_object());
}

#[actix_web::test]
async fn same_input_and_memory_give_the_same_reply() {
    let app = spawn_app().await;
    let (a, b) = (session(), session());
    for s in [&a, &b] {
        app.ask(s, "My favourite fruit is a mango.", Some(T0)).await;
    }
    let ra = app.ask(&a, "What is my favourite fruit?", Some(T0)).await;
    let rb = app.ask(&b, "What is my favourite fruit?", Some(T0)).await;
    assert_eq!(ra, rb);
    assert!(ra.contains("mango"));
}
