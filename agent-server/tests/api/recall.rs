//! Retrieval over HTTP: `X-Turn-Id` provenance, `POST /control/memory/recall`, and read-only
//! turns (`X-Memory-Write: off`).

use awc::http::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;

impl TestApp {
    async fn say_with(&self, session: &str, text: &str, headers: &[(&str, &str)]) -> Reply {
        let body =
            json!({"model": "agentwall-builtin", "messages": [{"role": "user", "content": text}]});
        let mut req = self
            .client
            .post(self.url("/v1/chat/completions"))
            .insert_header(("content-type", "application/json"))
            .insert_header(("x-session-id", session));
        for (name, value) in headers {
            req = req.insert_header((*name, *value));
        }
        self.send(req, Some(body.to_string().as_bytes())).await
    }

    async fn recall(&self, session: &str, text: &str, limit: u32) -> Reply {
        let body = json!({"text": text, "limit": limit});
        self.control_post("/control/memory/recall", session, Some(body), None)
            .await
    }

    /// The session's memory as `GET /control/memory` shows it, without its `now`.
    async fn memory(&self, session: &str) -> Value {
        let mut reply = self
            .get("/control/memory", &[("x-session-id", session)])
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.raw);
        reply.body.as_object_mut().unwrap().remove("now");
        reply.body
    }
}

fn item_texts(reply: &Reply) -> Vec<String> {
    reply.body["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items: {}", reply.raw))
        .iter()
        .map(|item| item["text"].as_str().unwrap().to_owned())
        .collect()
}

#[actix_web::test]
async fn recall_returns_what_a_turn_would_recall_with_the_turns_it_came_from() {
    let app = spawn_app().await;
    let s = session();
    let told = app
        .say_with(
            &s,
            "My favourite colour is teal.",
            &[("x-turn-id", "D1:1, D1:2")],
        )
        .await;
    assert_eq!(told.status, StatusCode::OK, "{}", told.raw);
    let injected = app
        .control_post(
            "/control/memory/inject",
            &s,
            Some(json!({"facts": [{"text": "Ana paints lighthouses."}, {"text": "Ana sells teal boats."}]})),
            None,
        )
        .await;
    assert_eq!(injected.status, StatusCode::OK, "{}", injected.raw);
    let with_ids = app
        .client
        .post(app.url("/control/memory/inject"))
        .insert_header(("content-type", "application/json"))
        .insert_header(("x-session-id", s.as_str()))
        .insert_header(("x-turn-id", "D2:1,D2:2"));
    let body = json!({"facts": [{"text": "Bo paints barns."}, {"text": "Bo likes teal."}]});
    let r = app.send(with_ids, Some(body.to_string().as_bytes())).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.raw);

    let r = app.recall(&s, "What is my favourite colour? teal", 3).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.raw);
    let items = r.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 3, "limited: {}", r.raw);
    // The same ranking as a turn: the fact that matches best first, each with its provenance
    // (the new user message's id for a chat turn; one per fact for an inject; none unnamed).
    assert!(
        items[0]["text"]
            .as_str()
            .unwrap()
            .contains("favourite colour")
    );
    assert_eq!(items[0]["source_turn_ids"], json!(["D1:2"]));
    // The told turn is also kept whole, as an episode with the same provenance, so it is among
    // the first three too; the injected facts come after it.
    let everything = app
        .recall(&s, "What is my favourite colour? teal", 10)
        .await;
    let all = everything.body["items"].as_array().unwrap();
    let of = |text: &str| {
        all.iter()
            .find(|i| i["text"] == text)
            .map(|i| i["source_turn_ids"].clone())
    };
    let episode = all
        .iter()
        .find(|i| i["why"]["episode"] == 1.0 && i["text"] == "My favourite colour is teal.")
        .unwrap_or_else(|| panic!("the told turn as an episode: {}", everything.raw));
    assert_eq!(episode["source_turn_ids"], json!(["D1:2"]));
    assert!(
        episode["why"]["lexical"].as_f64().unwrap() > 0.0,
        "{episode}"
    );
    assert!(
        episode["why"]["recency"].as_f64().unwrap() > 0.0,
        "{episode}"
    );
    assert_eq!(of("Bo likes teal."), Some(json!(["D2:2"])));
    assert_eq!(of("Ana sells teal boats."), Some(json!([])));
    assert!(items.iter().all(|i| i["score"].as_f64().is_some()));
    let scores: Vec<f64> = items.iter().map(|i| i["score"].as_f64().unwrap()).collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "best first: {scores:?}"
    );

    // Recall wrote nothing, and another session recalls nothing of this one.
    let before = app.memory(&s).await;
    app.recall(&s, "teal", 5).await;
    assert_eq!(app.memory(&s).await, before);
    assert!(item_texts(&app.recall(&session(), "teal", 5).await).is_empty());
}

#[actix_web::test]
async fn recall_and_turn_ids_refuse_bad_input_with_a_400() {
    let app = spawn_app().await;
    let s = session();
    for (body, param) in [
        (json!({"text": "  ", "limit": 5}), "text"),
        (json!({"text": "teal", "limit": 0}), "limit"),
        (json!({"text": "teal", "limit": 1001}), "limit"),
    ] {
        let r = app
            .control_post("/control/memory/recall", &s, Some(body), None)
            .await;
        r.error(StatusCode::BAD_REQUEST);
        assert_eq!(r.body["error"]["param"], param, "{}", r.raw);
    }
    let r = app
        .control_post(
            "/control/memory/recall",
            &s,
            Some(json!({"text": "x"})),
            None,
        )
        .await;
    r.error(StatusCode::BAD_REQUEST);
    let r = app
        .client
        .post(app.url("/control/memory/recall"))
        .insert_header(("content-type", "application/json"))
        .send_body(json!({"text": "x", "limit": 1}).to_string())
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST, "no X-Session-Id");

    let r = app
        .say_with(&s, "Hello.", &[("x-turn-id", "D1:1,,D1:3")])
        .await;
    let (code, message) = r.error(StatusCode::BAD_REQUEST);
    assert_eq!(code, "invalid_header");
    assert!(message.contains("empty"), "{message}");
    let three_ids = app
        .client
        .post(app.url("/control/memory/inject"))
        .insert_header(("content-type", "application/json"))
        .insert_header(("x-session-id", s.as_str()))
        .insert_header(("x-turn-id", "a,b,c"));
    let body = json!({"facts": [{"text": "One."}, {"text": "Two."}]});
    let r = app.send(three_ids, Some(body.to_string().as_bytes())).await;
    let (_, message) = r.error(StatusCode::BAD_REQUEST);
    assert!(message.contains("3 ids for 2 facts"), "{message}");
    assert!(
        app.memory(&s).await["facts"].as_array().unwrap().is_empty(),
        "nothing of a refused request is written"
    );
}

#[actix_web::test]
async fn a_read_only_turn_reads_memory_and_writes_nothing() {
    let app = spawn_app().await;
    let s = session();
    assert_eq!(
        app.say(&s, "My favourite colour is teal.", None)
            .await
            .status,
        StatusCode::OK
    );
    let before = app.memory(&s).await;

    let off = [("x-memory-write", "off")];
    let answer = app.say_with(&s, "What is my favourite colour?", &off).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.raw);
    assert!(
        answer.text().contains("teal"),
        "memory was read: {}",
        answer.raw
    );
    assert_eq!(
        answer
            .headers
            .get("x-memory-write")
            .map(|v| v.to_str().unwrap()),
        Some("off"),
        "the header is echoed"
    );
    let taught = app
        .say_with(&s, "My dog is called Rex.", &[("x-memory-write", "OFF")])
        .await;
    assert_eq!(taught.status, StatusCode::OK, "{}", taught.raw);
    assert_eq!(app.memory(&s).await, before, "no working memory, no facts");
    assert!(
        !app.ask(&s, "What is my dog called?", None)
            .await
            .contains("Rex")
    );

    // A turn that writes says nothing of the header.
    let written = app.say(&s, "Hello.", None).await;
    assert!(written.headers.get("x-memory-write").is_none());
    let r = app
        .say_with(&s, "Hello.", &[("x-memory-write", "no")])
        .await;
    let (code, message) = r.error(StatusCode::BAD_REQUEST);
    assert_eq!(code, "invalid_header");
    assert!(message.contains("off"), "{message}");
}
