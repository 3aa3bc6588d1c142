//! Semantic recall through HTTP: a paraphrase that lexical recall misses, found with the
//! in-process model and with an embeddings endpoint (the numpy reference served by
//! tests/python/embeddings_server.py); and an endpoint that is down: turns are still answered,
//! the items wait for their vectors (visible in `/readyz` and `/metrics`), and once it is back
//! the backfill embeds them, nothing lost.

use std::time::{Duration, Instant};

use awc::http::StatusCode;
use serde_json::{Value, json};
use testkit::embedding::{EmbeddingsServer, model_dir};

use crate::helpers::*;

const SAID: &str = "I went to a support group yesterday and it was so powerful.";
const OTHER: [&str; 3] = [
    "The weather in Lisbon was sunny all week.",
    "My sister bought a red bicycle.",
    "We are repainting the kitchen in spring.",
];
/// Shares no content word with [`SAID`].
const ASKED: &str = "Which meeting helped you emotionally?";

async fn tell(app: &TestApp, s: &str) {
    for text in std::iter::once(SAID).chain(OTHER) {
        app.ask(s, text, None).await;
    }
}

async fn recalled(app: &TestApp, s: &str) -> Vec<Value> {
    let r = app
        .control_post(
            "/control/memory/recall",
            s,
            Some(json!({"text": ASKED, "limit": 4})),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.raw);
    r.body["items"].as_array().unwrap().clone()
}

/// The told sentence among the items, as found by meaning alone.
fn found_by_meaning(items: &[Value]) -> bool {
    items.iter().any(|i| {
        i["text"].as_str().unwrap().contains("support group")
            && i["why"]["lexical"] == 0.0
            && i["why"]["vector"].as_f64().is_some_and(|v| v > 0.2)
    })
}

#[actix_web::test]
async fn a_paraphrase_lexical_recall_misses_is_found_in_process() {
    let lexical = spawn_app().await;
    let s = session();
    tell(&lexical, &s).await;
    let items = recalled(&lexical, &s).await;
    assert!(
        items
            .iter()
            .all(|i| !i["text"].as_str().unwrap().contains("support group")),
        "lexical recall finds no shared word: {items:?}"
    );

    let semantic = spawn_app_with(|c| {
        c.embeddings_model_dir = Some(model_dir());
        c.embeddings_model = Some("all-MiniLM-L6-v2".into());
    })
    .await;
    tell(&semantic, &s).await;
    let items = recalled(&semantic, &s).await;
    assert!(found_by_meaning(&items), "{items:#?}");
    let top = items[0]["text"].as_str().unwrap();
    assert!(top.contains("support group"), "best first: {items:#?}");
}

#[actix_web::test]
async fn an_embeddings_endpoint_finds_it_too_and_one_that_is_down_loses_nothing() {
    let endpoint = EmbeddingsServer::start(None);
    let app = spawn_app_with(|c| {
        c.embeddings_base_url = Some(endpoint.base_url());
        c.embeddings_model = Some("all-MiniLM-L6-v2".into());
        c.embeddings_timeout = Duration::from_secs(2);
    })
    .await;
    let s = session();
    tell(&app, &s).await;
    assert!(found_by_meaning(&recalled(&app, &s).await));
    let calls = endpoint.requests();
    assert!(
        !calls.is_empty() && calls.iter().all(|c| c["model"] == "all-MiniLM-L6-v2"),
        "{calls:?}"
    );

    // Failing (an error status, slower than the timeout, vectors of the wrong size, down):
    // turns are answered (lexically), their items wait for vectors, and both probes say so.
    let t = session();
    for (text, (fault, delay)) in std::iter::once(SAID).chain(OTHER).zip([
        ("error", 0.0),
        ("slow", 3.0),
        ("wrong-dimension", 0.0),
        ("not-json", 0.0),
    ]) {
        endpoint.fault(fault, delay);
        let started = Instant::now();
        app.ask(&t, text, None).await;
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{fault}: the turn waited"
        );
    }
    endpoint.fault("error", 0.0);
    let items = recalled(&app, &t).await;
    assert!(!found_by_meaning(&items), "{items:?}");
    let ready = app.get("/readyz", &[]).await;
    assert_eq!(
        ready.status,
        StatusCode::OK,
        "turns still work: {}",
        ready.raw
    );
    let embeddings = &ready.body["recall"]["embeddings"];
    assert!(
        embeddings["consecutive_failures"].as_u64() > Some(0),
        "{}",
        ready.raw
    );
    let pending = wait_for(&app, |p| p >= 8).await;
    assert!(
        pending >= 8,
        "4 turns: 4 user and 4 reply episodes at least, got {pending}"
    );
    let metrics = app.get("/metrics", &[]).await.raw;
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("agentwall_embedding_pending_items ") && !l.ends_with(" 0")),
        "{metrics}"
    );

    // Back: the backfill embeds what waited, and the paraphrase is found by meaning.
    endpoint.fault("none", 0.0);
    assert_eq!(
        wait_for(&app, |p| p == 0).await,
        0,
        "the backfill caught up"
    );
    assert!(found_by_meaning(&recalled(&app, &t).await));
}

/// Polls `/readyz` until its pending count satisfies `done` (at most 30 s); returns the count.
async fn wait_for(app: &TestApp, done: impl Fn(u64) -> bool) -> u64 {
    let started = Instant::now();
    loop {
        let ready = app.get("/readyz", &[]).await;
        let pending = ready.body["recall"]["embeddings"]["pending"]
            .as_u64()
            .unwrap_or_else(|| panic!("no pending count: {}", ready.raw));
        if done(pending) || started.elapsed() > Duration::from_secs(30) {
            return pending;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
