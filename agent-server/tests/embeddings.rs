//! Both embedding providers against what we did not write: the in-process one (the `embeddings`
//! crate behind agent-server's batching thread) against the numpy reference forward pass, and the
//! endpoint one against that numpy pass served over HTTP (tests/python/embeddings_server.py), so
//! the two vectors of a text come from independent implementations; every component within
//! `testkit::embedding::TOLERANCE` (1e-4) of the other's. Then the endpoint's faults
//! (down, slow, failing, garbage) as typed errors, and how `/readyz` and `/metrics` show them.
// Tests spawn their own servers, outside any request.
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_server::config::Config;
use agent_server::embed::{
    EmbedConfig, EmbedError, Embedder, EndpointConfig, InProcessConfig, Recall, metrics,
};
use agent_server::startup::Application;
use agent_server::telemetry;
use agent_server::telemetry::{LogFormat, Metrics};
use futures_util::future::join_all;
use serde_json::Value;
use testkit::embedding::{EmbeddingsServer, assert_same_vectors, model_dir, reference};

const MODEL: &str = "all-MiniLM-L6-v2";

fn texts() -> Vec<String> {
    [
        "I went to a support group yesterday and it was so powerful.",
        "What gathering did you attend that you found inspiring?",
        "My favourite colour is teal.",
        "What is my favourite colour?",
        "Caroline is researching adoption agencies.",
        "Melanie painted a sunrise over the lake in 2022!",
        "The meeting on 7 May 2023 was moved to 3:45 pm, room B-12.",
        "Remind me to call Dr. O'Neil about the X-ray results.",
        "Café, naïve, résumé: accents are stripped.",
        "",
        "ok",
        "Do you remember the name of my dog? It's Pixel.",
        "We camped at Lake Tahoe; the kids loved the canoe.",
        "I'm allergic to peanuts and shellfish.",
        "Buy milk, eggs, bread and coffee on the way home.",
        "She said the pottery class helped her through a hard time.",
        "The quarterly revenue grew 12.5% year over year.",
        "Which book did I say I was reading last week?",
        "   leading and trailing spaces   ",
        "ALL CAPS SHOUTING IS LOWER-CASED",
        "My sister's wedding is on June 14th in Lisbon.",
        "I switched jobs: I'm a nurse at St. Mary's now.",
        "Our flight to Tokyo leaves at 6 am on Friday.",
        "I stopped eating meat last year.",
    ]
    .map(str::to_owned)
    .to_vec()
}

fn assert_close(ours: &[Vec<f32>], theirs: &[Vec<f32>], texts: &[String], what: &str) {
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    assert_same_vectors(ours, theirs, &texts, what);
}

/// The in-process provider, counting its calls in `metrics`.
async fn in_process(batch_size: usize, metrics: Arc<Metrics>) -> Recall {
    let config = InProcessConfig {
        model_dir: model_dir(),
        model: Some(MODEL.into()),
        batch_size,
    };
    Recall::start(Some(EmbedConfig::InProcess(config)), metrics)
        .await
        .expect("the model loads")
}

async fn endpoint(
    base_url: String,
    api_key: Option<&str>,
    timeout: Duration,
    batch: usize,
) -> Recall {
    let config = EndpointConfig {
        base_url,
        api_key: api_key.map(str::to_owned),
        model: MODEL.into(),
        timeout,
        batch_size: batch,
    };
    Recall::start(Some(EmbedConfig::Endpoint(config)), Arc::default())
        .await
        .expect("the endpoint's URL is valid")
}

/// Calls per provider counted in `m`, and the texts they carried.
fn calls(m: &Metrics, provider: &str) -> (u64, u64) {
    let sizes = m.embedding_batch_size.with_label_values(&[provider]);
    (
        m.embedding_requests.with_label_values(&[provider]).get(),
        sizes.get_sample_sum() as u64,
    )
}

/// `texts` embedded by `callers` concurrent callers, each with its share, joined in order.
async fn concurrently(
    embedder: &Arc<dyn Embedder>,
    texts: &[String],
    callers: usize,
) -> Vec<Vec<f32>> {
    let shares: Vec<Vec<String>> = texts
        .chunks(texts.len().div_ceil(callers))
        .map(<[String]>::to_vec)
        .collect();
    let results = join_all(shares.into_iter().map(|share| embedder.embed(share))).await;
    results
        .into_iter()
        .flat_map(|r| r.expect("embedded"))
        .collect()
}

#[actix_web::test]
async fn in_process_vectors_match_the_numpy_reference_and_concurrent_callers_share_batches() {
    let metrics = Arc::new(Metrics::new());
    let recall = in_process(8, Arc::clone(&metrics)).await;
    assert_eq!(recall.mode(), "semantic (in-process all-MiniLM-L6-v2)");
    let embedder = recall.embedder().unwrap();
    assert_eq!((embedder.model(), embedder.dimension()), (MODEL, Some(384)));
    let texts = texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let theirs = reference(&refs);

    // One caller: its 24 texts are cut into batches of at most 8.
    let (calls_before, texts_before) = calls(&metrics, "in-process");
    let ours = embedder.embed(texts.clone()).await.unwrap();
    assert_close(&ours, &theirs, &texts, "one caller");
    let (calls_after, texts_after) = calls(&metrics, "in-process");
    assert_eq!(
        (calls_after - calls_before, texts_after - texts_before),
        (3, 24)
    );

    // Twelve callers of two texts each, at once: their texts share batches.
    let ours = concurrently(embedder, &texts, 12).await;
    assert_close(&ours, &theirs, &texts, "twelve callers");
    let (calls_now, texts_now) = calls(&metrics, "in-process");
    let batches = calls_now - calls_after;
    assert_eq!(texts_now - texts_after, 24);
    assert!(
        (3..12).contains(&batches),
        "12 concurrent callers took {batches} batches: they should share (at least 3 of at most 8 texts)"
    );
}

#[actix_web::test]
async fn the_endpoint_gives_the_in_process_vectors_in_batched_requests_with_key_and_trace() {
    let _ = telemetry::init(LogFormat::Text);
    let server = EmbeddingsServer::start(Some("sk-embed"));
    let recall = endpoint(
        server.base_url(),
        Some("sk-embed"),
        Duration::from_secs(60),
        8,
    )
    .await;
    assert_eq!(recall.mode(), "semantic (endpoint all-MiniLM-L6-v2)");
    let embedder = recall.embedder().unwrap();
    assert_eq!(
        embedder.dimension(),
        None,
        "not known before the endpoint answers"
    );
    let local = in_process(32, Arc::default()).await;
    let texts = texts();

    let theirs = local
        .embedder()
        .unwrap()
        .embed(texts.clone())
        .await
        .unwrap();
    let ours = embedder.embed(texts.clone()).await.unwrap();
    assert_close(&ours, &theirs, &texts, "endpoint against in process");
    assert_eq!(embedder.dimension(), Some(384));

    // 24 texts at 8 per request: three requests, each with the key, the model, float encoding
    // and the caller's trace.
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{requests:?}");
    let trace_ids: Vec<&str> = requests
        .iter()
        .map(|r| {
            assert_eq!(r["inputs"], 8, "{r}");
            assert_eq!(r["model"], MODEL);
            assert_eq!(r["encoding_format"], "float");
            assert_eq!(r["authorization"], "Bearer sk-embed");
            assert_eq!(r["path"], "/v1/embeddings");
            r["traceparent"]
                .as_str()
                .expect("traceparent sent")
                .split('-')
                .nth(1)
                .unwrap()
        })
        .collect();
    assert!(
        trace_ids.windows(2).all(|w| w[0] == w[1]),
        "one caller, one trace: {trace_ids:?}"
    );

    // Eight callers of three texts each, at once: fewer requests than callers.
    server.reset();
    let ours = concurrently(embedder, &texts, 8).await;
    assert_close(&ours, &theirs, &texts, "eight callers");
    let requests = server.requests().len();
    assert!(
        (3..8).contains(&requests),
        "8 concurrent callers made {requests} requests"
    );

    // A wrong key is the endpoint's 401, with its message.
    let wrong = endpoint(
        server.base_url(),
        Some("sk-other"),
        Duration::from_secs(60),
        8,
    )
    .await;
    let err = wrong
        .embedder()
        .unwrap()
        .embed(vec!["x".into()])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, EmbedError::Status { status: 401, message } if message == "Incorrect API key provided"),
        "{err:?}"
    );
}

/// A served agent-server and a client for its ops endpoints.
struct App {
    app: Application,
    address: String,
    data: tempfile::TempDir,
}

async fn spawn_app(configure: impl FnOnce(&mut Config)) -> anyhow::Result<App> {
    let _ = telemetry::init(LogFormat::Text);
    let data = tempfile::tempdir().unwrap();
    let mut config = Config::for_tests(data.path());
    config.workers = Some(1);
    configure(&mut config);
    let app = Application::build(config).await?;
    let address = format!("http://127.0.0.1:{}", app.port());
    Ok(App { app, address, data })
}

impl App {
    fn run(self) -> (String, Recall, tempfile::TempDir) {
        let recall = self.app.recall().clone();
        actix_web::rt::spawn(self.app.run_until_stopped());
        (self.address, recall, self.data)
    }
}

async fn get(address: &str, path: &str) -> (u16, String) {
    let mut response = awc::Client::default()
        .get(format!("{address}{path}"))
        .send()
        .await
        .unwrap();
    let body = response.body().limit(1 << 24).await.unwrap();
    (
        response.status().as_u16(),
        String::from_utf8_lossy(&body).into_owned(),
    )
}

async fn readyz(address: &str) -> (u16, Value) {
    let (status, body) = get(address, "/readyz").await;
    (status, serde_json::from_str(&body).unwrap())
}

/// The value of one sample line of `/metrics`, 0 when absent.
fn sample(metrics: &str, name_and_labels: &str) -> f64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(name_and_labels)?.trim().parse().ok())
        .unwrap_or(0.0)
}

fn failures(metrics: &str, reason: &str) -> f64 {
    sample(
        metrics,
        &format!("agentwall_embedding_failures_total{{provider=\"endpoint\",reason=\"{reason}\"}}"),
    )
}

/// Whether an error is the one a fault should give.
type Expected = fn(&EmbedError) -> bool;

/// Calls `embedder` with two texts: the error, and how long it took.
async fn fails(embedder: &Arc<dyn Embedder>) -> (EmbedError, Duration) {
    let started = Instant::now();
    let err = embedder
        .embed(vec!["first".into(), "second".into()])
        .await
        .expect_err("the fault is an error");
    (err, started.elapsed())
}

#[actix_web::test]
async fn endpoint_faults_are_typed_errors_that_readyz_and_metrics_show() {
    let server = EmbeddingsServer::start(None);
    let base_url = server.base_url();
    let app = spawn_app(|c| {
        c.embeddings_base_url = Some(base_url);
        c.embeddings_model = Some(MODEL.into());
        c.embeddings_timeout = Duration::from_secs(2);
    })
    .await
    .unwrap();
    let server_metrics = Arc::clone(app.app.metrics());
    let (address, recall, _data) = app.run();
    let embedder = recall.embedder().unwrap();
    let (status, report) = readyz(&address).await;
    assert_eq!(
        (status, report["status"].as_str()),
        (200, Some("ok")),
        "{report}"
    );
    assert_eq!(
        report["recall"]["mode"],
        "semantic (endpoint all-MiniLM-L6-v2)"
    );
    let health = &report["recall"]["embeddings"];
    assert_eq!(health["provider"], "endpoint");
    assert_eq!(health["dimension"], Value::Null);
    assert_eq!(health["ok"], true);

    embedder.embed(vec!["warm up".into()]).await.unwrap();
    let before = get(&address, "/metrics").await.1;

    // Each fault, its error, fast: no fault costs more than the timeout.
    let cases: [(&str, Expected); 7] = [
        (
            "error",
            |e| matches!(e, EmbedError::Status { status: 500, message } if message.contains("injected failure")),
        ),
        (
            "rate-limit",
            |e| matches!(e, EmbedError::RateLimited { retry_after: Some(after), .. } if after == "7"),
        ),
        (
            "slow",
            |e| matches!(e, EmbedError::Timeout { after } if *after == Duration::from_secs(2)),
        ),
        (
            "wrong-dimension",
            |e| matches!(e, EmbedError::Garbage { reason } if reason == "383 dimensions where the model's earlier answers had 384"),
        ),
        (
            "wrong-count",
            |e| matches!(e, EmbedError::Garbage { reason } if reason == "1 embeddings for 2 inputs"),
        ),
        (
            "not-json",
            |e| matches!(e, EmbedError::Garbage { reason } if reason.starts_with("not an OpenAI embeddings list")),
        ),
        (
            "nan",
            |e| matches!(e, EmbedError::Garbage { reason } if reason.starts_with("not an OpenAI embeddings list")),
        ),
    ];
    for (failures_so_far, (fault, expected)) in cases.iter().enumerate() {
        server.fault(fault, 10.0);
        let (err, took) = fails(embedder).await;
        assert!(expected(&err), "{fault}: {err:?}");
        // Garbage is answered without a forward pass: every fault but `slow` is quick.
        let limit = if *fault == "slow" { 3500 } else { 1000 };
        assert!(took < Duration::from_millis(limit), "{fault} took {took:?}");
        if *fault == "slow" {
            assert!(
                took >= Duration::from_secs(2),
                "the timeout is 2s, took {took:?}"
            );
        }
        // Degraded, not unavailable: turns are still answered.
        let (status, report) = readyz(&address).await;
        assert_eq!(
            (status, report["status"].as_str()),
            (200, Some("degraded")),
            "{report}"
        );
        let health = &report["recall"]["embeddings"];
        assert_eq!(health["ok"], false);
        assert_eq!(health["consecutive_failures"], failures_so_far as u64 + 1);
        assert_eq!(health["last_error"], err.to_string());
    }
    // No turn is sent here: a turn embeds too (and wakes the backfill), which would add to the
    // counts below. That turns are answered while the endpoint fails, and that nothing is lost,
    // is tests/api/semantic.rs's.

    // The memory layer's count of items waiting for an embedding.
    metrics::set_pending(&server_metrics, 5);
    let (_, report) = readyz(&address).await;
    assert_eq!(report["recall"]["embeddings"]["pending"], 5);
    let after = get(&address, "/metrics").await.1;
    assert_eq!(sample(&after, "agentwall_embedding_pending_items"), 5.0);
    for (reason, count) in [
        ("status", 1.0),
        ("rate_limited", 1.0),
        ("timeout", 1.0),
        ("garbage", 4.0),
    ] {
        assert_eq!(
            failures(&after, reason) - failures(&before, reason),
            count,
            "failures for {reason}"
        );
    }
    let timeouts = "agentwall_embedding_request_duration_seconds_count{outcome=\"timeout\",provider=\"endpoint\"}";
    assert_eq!(sample(&after, timeouts) - sample(&before, timeouts), 1.0);
    metrics::set_pending(&server_metrics, 0);

    // Back to normal: ready, and the last error kept for whoever looks.
    server.fault("none", 0.0);
    embedder.embed(vec!["again".into()]).await.unwrap();
    let (status, report) = readyz(&address).await;
    assert_eq!(
        (status, report["status"].as_str()),
        (200, Some("ok")),
        "{report}"
    );
    let health = &report["recall"]["embeddings"];
    assert_eq!(
        (
            health["ok"].as_bool(),
            health["consecutive_failures"].as_u64()
        ),
        (Some(true), Some(0))
    );
    assert_eq!(health["dimension"], 384);
    assert!(health["last_error"].as_str().is_some() && health["last_success_at"].is_string());
}

#[actix_web::test]
async fn an_endpoint_that_is_down_is_unreachable_at_once() {
    let port = testkit::process::free_port();
    let recall = endpoint(
        format!("http://127.0.0.1:{port}/v1"),
        None,
        Duration::from_secs(30),
        8,
    )
    .await;
    let (err, took) = fails(recall.embedder().unwrap()).await;
    assert!(
        matches!(&err, EmbedError::Unreachable { url, .. } if url.ends_with("/v1/embeddings")),
        "{err:?}"
    );
    assert!(err.retryable());
    assert!(took < Duration::from_secs(1), "took {took:?}");
}

#[actix_web::test]
async fn readyz_names_the_recall_and_a_bad_model_directory_stops_the_start() {
    let (address, recall, _data) = spawn_app(|_| {}).await.unwrap().run();
    assert!(recall.embedder().is_none());
    let (status, report) = readyz(&address).await;
    assert_eq!(status, 200);
    assert_eq!(report["recall"], serde_json::json!({"mode": "lexical"}));
    let spec: Value = serde_json::from_str(&get(&address, "/openapi.json").await.1).unwrap();
    for schema in ["RecallHealth", "EmbeddingsHealth"] {
        assert!(
            spec["components"]["schemas"][schema].is_object(),
            "{schema} missing from /openapi.json"
        );
    }

    let (address, _recall, _data) = spawn_app(|c| {
        c.embeddings_model_dir = Some(model_dir());
        c.embeddings_model = Some(MODEL.into());
    })
    .await
    .unwrap()
    .run();
    let (_, report) = readyz(&address).await;
    assert_eq!(
        report["recall"]["mode"],
        "semantic (in-process all-MiniLM-L6-v2)"
    );
    assert_eq!(report["recall"]["embeddings"]["dimension"], 384);
    assert_eq!(report["recall"]["embeddings"]["provider"], "in-process");

    let empty = tempfile::tempdir().unwrap();
    let err = spawn_app(|c| c.embeddings_model_dir = Some(empty.path().to_owned()))
        .await
        .err()
        .expect("a directory without a model stops the start");
    let message = format!("{err:#}");
    assert!(
        message.contains("--embeddings-model-dir") && message.contains("1_Pooling/config.json"),
        "{message}"
    );
}
