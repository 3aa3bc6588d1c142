//! Memory end to end over HTTP: recall, time travel, promotion, standing items, isolation.

use std::time::Duration;

use awc::http::StatusCode;
use chrono::Duration as Span;

use crate::helpers::*;

#[actix_web::test]
async fn a_fact_told_once_is_recalled_by_a_later_request_alone() {
    let app = spawn_app().await;
    let s = session();
    let ack = app.ask(&s, "My favourite colour is teal.", None).await;
    assert!(ack.contains("teal"), "{ack}");
    let answer = app.ask(&s, "What is my favourite colour?", None).await;
    assert!(answer.contains("teal"), "{answer}");
    let unknown = app.ask(&s, "What is my favourite band?", None).await;
    assert!(unknown.contains("don't know"), "{unknown}");
}

#[actix_web::test]
async fn memory_off_stores_and_recalls_nothing() {
    let app = spawn_app_with(|c| c.memory = agent_server::config::MemorySwitch::Off).await;
    let s = session();
    app.ask(&s, "My favourite colour is teal.", None).await;
    let answer = app.ask(&s, "What is my favourite colour?", None).await;
    assert!(!answer.contains("teal"), "{answer}");
    let view = app.get("/control/memory", &[("x-session-id", &s)]).await;
    assert!(view.body["working_memory"].as_array().unwrap().is_empty());
    assert!(view.body["facts"].as_array().unwrap().is_empty());
}

#[actix_web::test]
async fn working_memory_expires_on_mock_time_unless_promoted() {
    let app = spawn_app_with(|c| c.working_ttl = Duration::from_secs(6 * 3600)).await;
    let s = session();
    // Not a fact the extractor keeps: it lives in working memory only.
    app.ask(&s, "I had pasta for lunch.", Some(T0)).await;
    // Marked important: promoted to long-term memory.
    app.ask(&s, "Important: I parked the car on level 3.", Some(T0))
        .await;
    // Said twice: promoted.
    app.ask(&s, "I met Jonas at the bakery.", Some(T0)).await;
    app.ask(
        &s,
        "I met Jonas at the bakery.",
        Some(&at(Span::minutes(5))),
    )
    .await;

    let soon = at(Span::hours(1));
    assert!(
        app.ask(&s, "What did I have for lunch?", Some(&soon))
            .await
            .contains("pasta")
    );

    let later = at(Span::hours(7));
    let lunch = app
        .ask(&s, "What did I have for lunch?", Some(&later))
        .await;
    assert!(
        !lunch.contains("pasta"),
        "expired working memory was recalled: {lunch}"
    );
    let parked = app.ask(&s, "Where did I park the car?", Some(&later)).await;
    assert!(parked.contains("level 3"), "{parked}");
    let met = app
        .ask(&s, "Who did I meet at the bakery?", Some(&later))
        .await;
    assert!(met.contains("Jonas"), "{met}");
}

#[actix_web::test]
async fn a_statement_repeated_many_times_is_one_fact_at_its_latest_time() {
    let app = spawn_app().await;
    let s = session();
    for minutes in 0..5 {
        app.ask(
            &s,
            "I met Jonas at the bakery.",
            Some(&at(Span::minutes(minutes))),
        )
        .await;
    }
    let view = app.get("/control/memory", &[("x-session-id", &s)]).await;
    let (facts, episodes): (Vec<&serde_json::Value>, Vec<&serde_json::Value>) = view.body["facts"]
        .as_array()
        .unwrap()
        .iter()
        .partition(|f| f["kind"] == "fact");
    assert_eq!(
        facts.len(),
        1,
        "one fact, not one per repetition: {facts:?}"
    );
    // Episodes are never merged: each time it was said (and each reply) is kept.
    assert_eq!(episodes.len(), 10, "{episodes:?}");
    assert_eq!(facts[0]["text"], "I met Jonas at the bakery.");
    let observed = facts[0]["observed_at"].as_str().unwrap();
    assert_eq!(
        chrono::DateTime::parse_from_rfc3339(observed).unwrap(),
        chrono::DateTime::parse_from_rfc3339(&at(Span::minutes(4))).unwrap(),
        "the copy kept is the latest"
    );
}

#[actix_web::test]
async fn relative_dates_rules_reminders_and_lists() {
    let app = spawn_app().await;
    let s = session();
    app.ask(&s, "My flight is in 3 days.", Some(T0)).await;
    let answer = app
        .ask(&s, "When is my flight?", Some(&at(Span::days(5))))
        .await;
    assert!(answer.contains("2026-03-04"), "{answer}");

    app.ask(&s, "Whenever I say banana, reply mango.", Some(T0))
        .await;
    assert_eq!(app.ask(&s, "banana", Some(T0)).await, "mango");
    assert!(
        !app.ask(&s, "I like apples.", Some(T0))
            .await
            .contains("mango")
    );

    app.ask(&s, "Remind me to call mum in 2 hours.", Some(T0))
        .await;
    assert!(
        !app.ask(&s, "Hello", Some(&at(Span::hours(1))))
            .await
            .contains("call mum")
    );
    let due = app.ask(&s, "Hello", Some(&at(Span::hours(3)))).await;
    assert!(due.contains("Reminder: call mum"), "{due}");
    assert!(
        !app.ask(&s, "Hello", Some(&at(Span::hours(4))))
            .await
            .contains("call mum"),
        "fires once"
    );

    app.ask(&s, "Add 2 apples and milk to my shopping list.", Some(T0))
        .await;
    app.ask(&s, "Add 3 apples to my shopping list.", Some(T0))
        .await;
    app.ask(&s, "Remove the milk from my shopping list.", Some(T0))
        .await;
    let list = app.ask(&s, "What is on my shopping list?", Some(T0)).await;
    assert!(
        list.contains("5 apples") && !list.contains("milk"),
        "{list}"
    );
}

#[actix_web::test]
async fn sessions_stay_isolated_under_concurrent_load() {
    let app = spawn_app().await;
    let sessions: Vec<String> = (0..50).map(|_| session()).collect();
    // 50 sessions each tell a secret, then 150 questions interleave across all of them: 200
    // concurrent requests in all.
    let tells = sessions.iter().enumerate().map(|(i, s)| {
        let app = &app;
        async move {
            let r = app
                .say(s, &format!("My secret number is {}.", 1000 + i), None)
                .await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.raw);
        }
    });
    futures_util::future::join_all(tells).await;
    let asks = (0..150).map(|k| {
        let app = &app;
        let i = (k * 7) % sessions.len();
        let s = &sessions[i];
        async move {
            let answer = app.ask(s, "What is my secret number?", None).await;
            (i, answer)
        }
    });
    for (i, answer) in futures_util::future::join_all(asks).await {
        let mine = format!("{}", 1000 + i);
        assert!(
            answer.contains(&mine),
            "session {i} lost its own secret: {answer}"
        );
        let others = (0..50).filter(|j| *j != i).map(|j| format!("{}", 1000 + j));
        for other in others {
            assert!(
                !answer.contains(&other),
                "session {i} saw {other}: {answer}"
            );
        }
    }
}
