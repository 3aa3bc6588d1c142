//! The control plane: reset, inject, memory view.

use awc::http::StatusCode;
use serde_json::json;

use crate::helpers::*;

#[actix_web::test]
async fn reset_forgets_one_session_and_reports_counts() {
    let app = spawn_app().await;
    let (a, b) = (session(), session());
    for s in [&a, &b] {
        app.ask(s, "My locker code is 4512.", None).await;
    }
    let r = app
        .control_post("/control/session/reset", &a, None, None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.raw);
    assert_eq!(r.body["session_id"], a.as_str());
    assert_eq!(
        r.body["working_items_removed"], 2,
        "the user turn and the reply"
    );
    assert_eq!(
        r.body["facts_removed"], 3,
        "the fact, and the turn's two episodes (what was said and the reply)"
    );
    assert!(
        !app.ask(&a, "What is my locker code?", None)
            .await
            .contains("4512")
    );
    assert!(
        app.ask(&b, "What is my locker code?", None)
            .await
            .contains("4512")
    );
}

#[actix_web::test]
async fn injected_facts_are_recalled_and_newer_wins() {
    let app = spawn_app().await;
    let s = session();
    let body = json!({"facts": [
        {"text": "My favourite city is Kyoto.", "observed_at": "2026-01-01T00:00:00Z"},
        {"text": "My favourite city is Oslo.", "observed_at": "2026-02-01T00:00:00Z"},
        {"text": "My favourite city is Lima.", "observed_at": "2025-12-01T00:00:00Z", "importance": 0.9}
    ]});
    let r = app
        .control_post("/control/memory/inject", &s, Some(body), None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.raw);
    let injected = r.body["injected"].as_array().unwrap();
    assert_eq!(injected.len(), 3);
    assert_eq!(
        injected[0]["key"], "favourite city",
        "key extracted from the sentence"
    );
    assert_eq!(
        injected[2]["current"], false,
        "an older observation does not win"
    );
    let answer = app
        .ask(
            &s,
            "What is my favourite city?",
            Some("2026-02-02T00:00:00Z"),
        )
        .await;
    assert!(
        answer.contains("Oslo") && !answer.contains("Kyoto") && !answer.contains("Lima"),
        "{answer}"
    );

    // Told later than the injection: the told value supersedes.
    app.ask(
        &s,
        "My favourite city is Quito.",
        Some("2026-02-03T00:00:00Z"),
    )
    .await;
    let answer = app
        .ask(
            &s,
            "What is my favourite city?",
            Some("2026-02-04T00:00:00Z"),
        )
        .await;
    assert!(
        answer.contains("Quito") && !answer.contains("Oslo"),
        "{answer}"
    );
}

#[actix_web::test]
async fn inject_validates_its_body() {
    let app = spawn_app().await;
    let s = session();
    for (body, needle) in [
        (json!({"facts": []}), "facts has 0 entries"),
        (json!({"facts": [{"text": ""}]}), "facts[0].text is empty"),
        (
            json!({"facts": [{"text": "x", "importance": 3}]}),
            "importance",
        ),
        (
            json!({"facts": [{"text": "x", "observed_at": "later"}]}),
            "observed_at",
        ),
        (json!({"facts": [{"text": "x", "colour": "red"}]}), "colour"),
        (json!({"fact": [{"text": "x"}]}), "fact"),
    ] {
        let r = app
            .control_post("/control/memory/inject", &s, Some(body.clone()), None)
            .await;
        let (_, message) = r.error(StatusCode::BAD_REQUEST);
        assert!(message.contains(needle), "{body}: {message}");
    }
}

#[actix_web::test]
async fn memory_view_shows_working_memory_and_facts_at_the_clock() {
    let app = spawn_app_with(|c| c.working_ttl = std::time::Duration::from_secs(3600)).await;
    let s = session();
    app.ask(&s, "My dog is called Rex.", Some(T0)).await;
    let view = app
        .get(
            "/control/memory",
            &[("x-session-id", &s), ("x-mock-time", T0)],
        )
        .await;
    assert_eq!(view.status, StatusCode::OK, "{}", view.raw);
    assert_eq!(view.body["now"], T0);
    let working = view.body["working_memory"].as_array().unwrap();
    assert_eq!(working.len(), 2);
    assert_eq!(working[0]["role"], "user");
    assert_eq!(working[0]["expires_at"], "2026-03-01T10:00:00Z");
    let of_kind = |view: &serde_json::Value, kind: &str| -> Vec<serde_json::Value> {
        let items = view["facts"].as_array().unwrap().iter();
        items.filter(|f| f["kind"] == kind).cloned().collect()
    };
    let facts = of_kind(&view.body, "fact");
    assert_eq!(facts.len(), 1, "{}", view.raw);
    assert_eq!(facts[0]["key"], "dog");
    assert_eq!(facts[0]["source"], "extracted");
    // The turn is kept whole too: what the user said and the reply, each with its role.
    let episodes = of_kind(&view.body, "episode");
    let roles: Vec<&str> = episodes
        .iter()
        .map(|e| e["data"]["role"].as_str().unwrap())
        .collect();
    assert_eq!(episodes.len(), 2, "{}", view.raw);
    assert!(
        roles.contains(&"user") && roles.contains(&"assistant"),
        "{roles:?}"
    );
    assert!(
        episodes
            .iter()
            .any(|e| e["text"] == "My dog is called Rex." && e["key"].is_null()),
        "{}",
        view.raw
    );

    let later = at(chrono::Duration::hours(2));
    let view = app
        .get(
            "/control/memory",
            &[("x-session-id", &s), ("x-mock-time", &later)],
        )
        .await;
    assert!(view.body["working_memory"].as_array().unwrap().is_empty());
    assert_eq!(of_kind(&view.body, "fact").len(), 1);
    assert_eq!(
        of_kind(&view.body, "episode").len(),
        2,
        "episodes stay in long-term memory after the turn leaves working memory"
    );
}
