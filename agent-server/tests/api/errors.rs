//! Bad input: every case is a 4xx in OpenAI's error shape that says what to fix; none panics or hangs.

use awc::http::StatusCode;
use serde_json::json;

use crate::helpers::*;

async fn post_raw(app: &TestApp, body: &[u8], headers: &[(&str, &str)]) -> Reply {
    let mut req = app.client.post(app.url("/v1/chat/completions"));
    for (k, v) in headers {
        req = req.insert_header((*k, *v));
    }
    app.send(req, Some(body)).await
}

const JSON_AND_SESSION: &[(&str, &str)] =
    &[("content-type", "application/json"), ("x-session-id", "s1")];

/// With `--require-session`, as before sessions could be resolved without the header: a request
/// without it is a 400. (Without the flag, tests/api/sessions.rs.)
#[actix_web::test]
async fn session_header_is_required_with_require_session_and_always_validated() {
    let app = spawn_app_with(|c| c.require_session = true).await;
    let body = br#"{"messages":[{"role":"user","content":"hi"}]}"#;
    let r = post_raw(&app, body, &[("content-type", "application/json")]).await;
    let (code, message) = r.error(StatusCode::BAD_REQUEST);
    assert_eq!(code, "missing_header");
    assert_eq!(r.body["error"]["param"], "x-session-id");
    assert!(message.contains("x-session-id"), "{message}");
    for bad in ["has space", "slash/no", &"a".repeat(129)] {
        let r = post_raw(
            &app,
            body,
            &[("content-type", "application/json"), ("x-session-id", bad)],
        )
        .await;
        let (code, _) = r.error(StatusCode::BAD_REQUEST);
        assert_eq!(code, "invalid_header", "{bad}");
    }
    let r = app
        .control_post("/control/session/reset", "", None, None)
        .await;
    r.error(StatusCode::BAD_REQUEST);
}

#[actix_web::test]
async fn mock_time_must_be_rfc3339_and_can_be_denied() {
    let app = spawn_app().await;
    let r = app.say(&session(), "hi", Some("yesterday")).await;
    let (code, message) = r.error(StatusCode::BAD_REQUEST);
    assert_eq!(code, "invalid_header");
    assert!(message.contains("RFC 3339"), "{message}");

    let strict = spawn_app_with(|c| c.deny_mock_time = true).await;
    let (code, _) = strict
        .say(&session(), "hi", Some(T0))
        .await
        .error(StatusCode::FORBIDDEN);
    assert_eq!(code, "mock_time_denied");
    assert_eq!(
        strict.say(&session(), "hi", None).await.status,
        StatusCode::OK
    );
}

#[actix_web::test]
async fn malformed_bodies_name_what_is_wrong() {
    let app = spawn_app().await;
    let cases: &[(&[u8], &str)] = &[
        (b"{not json", "not valid JSON"),
        (b"", "empty"),
        (br#"{"messages": "hello"}"#, "messages"),
        (br#"{"messages": []}"#, "messages is empty"),
        (br#"{"messages":[{"role":"system","content":"x"}]}"#, "no message with role \"user\""),
        (br#"{"messages":[{"role":"robot","content":"x"}]}"#, "robot"),
        (br#"{"messages":[{"role":"user","content":"   "}]}"#, "empty"),
        (br#"{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"http://x/y.png"}}]}]}"#, "image_url"),
        (br#"{"messages":[{"role":"user","content":"hi"}],"temperature":7}"#, "temperature"),
        (br#"{"messages":[{"role":"user","content":"hi"}],"max_tokens":"ten"}"#, "max_tokens"),
        (br#"[1,2,3]"#, "not valid JSON for this endpoint"),
        (
            br#"{"messages":[{"role":"user","content":"hi"}]} {"more": 1}"#,
            "trailing characters",
        ),
    ];
    for (body, needle) in cases {
        let r = post_raw(&app, body, JSON_AND_SESSION).await;
        let (_, message) = r.error(StatusCode::BAD_REQUEST);
        assert!(
            message.contains(needle),
            "{:?}: {message}",
            String::from_utf8_lossy(body)
        );
    }
    let r = post_raw(
        &app,
        br#"{"messages":[{"role":"robot","content":"x"}]}"#,
        JSON_AND_SESSION,
    )
    .await;
    assert_eq!(r.body["error"]["param"], "messages[0].role");
}

#[actix_web::test]
async fn oversized_and_wrongly_typed_bodies_are_refused() {
    let app = spawn_app_with(|c| c.max_body_bytes = 1024).await;
    let big = json!({"messages": [{"role": "user", "content": "x".repeat(4096)}]}).to_string();
    let (code, message) = post_raw(&app, big.as_bytes(), JSON_AND_SESSION)
        .await
        .error(StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(code, "payload_too_large");
    assert!(message.contains("1024"), "{message}");
    let r = post_raw(
        &app,
        b"messages=hi",
        &[
            ("content-type", "application/x-www-form-urlencoded"),
            ("x-session-id", "s"),
        ],
    )
    .await;
    r.error(StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

#[actix_web::test]
async fn unknown_routes_and_methods_answer_in_openai_shape() {
    let app = spawn_app().await;
    let (code, _) = app
        .get("/v1/nothing", &[])
        .await
        .error(StatusCode::NOT_FOUND);
    assert_eq!(code, "not_found");
    let (code, message) = app
        .get("/v1/chat/completions", &[])
        .await
        .error(StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(code, "method_not_allowed");
    assert!(message.contains("POST"), "{message}");
}

#[actix_web::test]
async fn api_key_and_admin_token_are_enforced_separately() {
    let app = spawn_app_with(|c| {
        c.api_key = Some("sk-test".into());
        c.admin_token = Some("admin-secret".into());
    })
    .await;
    let body = br#"{"messages":[{"role":"user","content":"hi"}]}"#;
    let r = post_raw(&app, body, JSON_AND_SESSION).await;
    let (code, message) = r.error(StatusCode::UNAUTHORIZED);
    assert_eq!(code, "invalid_api_key");
    assert!(message.contains("Bearer"), "{message}");
    let r = post_raw(
        &app,
        body,
        &[
            ("content-type", "application/json"),
            ("x-session-id", "s"),
            ("authorization", "Bearer wrong"),
        ],
    )
    .await;
    r.error(StatusCode::UNAUTHORIZED);
    let r = post_raw(
        &app,
        body,
        &[
            ("content-type", "application/json"),
            ("x-session-id", "s"),
            ("authorization", "Bearer sk-test"),
        ],
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    app.get("/v1/models", &[])
        .await
        .error(StatusCode::UNAUTHORIZED);

    // The API key does not open the control plane; the admin token does.
    let req = |token: &str| {
        app.client
            .post(app.url("/control/session/reset"))
            .insert_header(("x-session-id", "s"))
            .insert_header(("authorization", format!("Bearer {token}")))
    };
    app.send(req("sk-test"), None)
        .await
        .error(StatusCode::UNAUTHORIZED);
    assert_eq!(
        app.send(req("admin-secret"), None).await.status,
        StatusCode::OK
    );
    let via_header = app
        .client
        .post(app.url("/control/session/reset"))
        .insert_header(("x-session-id", "s"))
        .insert_header(("x-admin-token", "admin-secret"));
    assert_eq!(app.send(via_header, None).await.status, StatusCode::OK);
    // Health stays open for probes.
    assert_eq!(app.get("/healthz", &[]).await.status, StatusCode::OK);
}
