//! Sessions of requests without `X-Session-Id` (docs/agent-server.md, "Sessions").

use awc::http::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::responses::{post, session_of};

async fn chat(app: &TestApp, body: Value, headers: &[(&str, &str)]) -> Reply {
    let r = post(app, "/v1/chat/completions", &body, headers).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.raw);
    r
}

fn said(text: &str) -> Value {
    json!({"messages": [{"role": "user", "content": text}]})
}

#[actix_web::test]
async fn a_chat_without_a_session_is_answered_without_memory_and_says_so() {
    let app = spawn_app().await;
    let r = chat(&app, said("I live in Oslo."), &[]).await;
    assert_eq!(r.headers.get("x-memory-write").unwrap(), "off");
    assert!(r.headers.get("x-session-id").is_none());
    let r = chat(&app, said("Where do I live?"), &[]).await;
    assert!(!r.text().contains("Oslo"), "nothing was stored: {}", r.raw);

    // What the message itself says is answered, memory or not.
    let r = chat(
        &app,
        said("My favourite colour is teal. What is my favourite colour?"),
        &[],
    )
    .await;
    assert!(r.text().contains("teal"), "{}", r.raw);

    let session = session();
    let r = chat(&app, said("hi"), &[("x-session-id", &session)]).await;
    assert_eq!(session_of(&r), session);
    assert!(r.headers.get("x-memory-write").is_none());
}

#[actix_web::test]
async fn session_from_user_names_a_hashed_session_per_user() {
    let app = spawn_app_with(|c| c.session_from_user = true).await;
    let alice =
        |text: &str| json!({"user": "alice", "messages": [{"role": "user", "content": text}]});
    let first = chat(&app, alice("I live in Oslo."), &[]).await;
    let session = session_of(&first);
    assert!(
        session.starts_with("user:") && !session.contains("alice"),
        "{session}"
    );
    let again = chat(&app, alice("Where do I live?"), &[]).await;
    assert_eq!(session_of(&again), session);
    assert!(again.text().contains("Oslo"), "{}", again.raw);
    let bob = json!({"user": "bob", "messages": [{"role": "user", "content": "Where do I live?"}]});
    let r = chat(&app, bob, &[]).await;
    assert_ne!(session_of(&r), session);
    assert!(!r.text().contains("Oslo"), "{}", r.raw);
    // A Responses request of the same user is in the same session.
    let r = post(
        &app,
        "/v1/responses",
        &json!({"user": "alice", "input": "Where do I live?"}),
        &[],
    )
    .await;
    assert_eq!(session_of(&r), session);
    // Nobody can name such a session in the header.
    let r = post(
        &app,
        "/v1/chat/completions",
        &said("hi"),
        &[("x-session-id", &session)],
    )
    .await;
    let (code, _) = r.error(StatusCode::BAD_REQUEST);
    assert_eq!(code, "invalid_header");

    // Without the flag, `user` names nothing.
    let plain = spawn_app().await;
    let r = chat(&plain, alice("I live in Oslo."), &[]).await;
    assert_eq!(r.headers.get("x-memory-write").unwrap(), "off");
}

#[actix_web::test]
async fn require_session_refuses_every_v1_request_without_the_header() {
    let app = spawn_app_with(|c| c.require_session = true).await;
    for (path, body) in [
        ("/v1/responses", json!({"input": "hi"})),
        ("/v1/conversations", json!({})),
        ("/v1/chat/completions", said("hi")),
    ] {
        let (code, message) = post(&app, path, &body, &[])
            .await
            .error(StatusCode::BAD_REQUEST);
        assert_eq!(code, "missing_header", "{path}");
        assert!(message.contains("--require-session"), "{message}");
    }
    let session = session();
    let r = post(
        &app,
        "/v1/responses",
        &json!({"input": "hi"}),
        &[("x-session-id", &session)],
    )
    .await;
    assert_eq!(session_of(&r), session);
}
