//! Head sampling end to end: the real agent-server binary exporting over OTLP/HTTP to a sink in
//! this process that decodes what it receives, in upstream mode against a fake OpenAI-compatible
//! model that records the `traceparent` it is sent.
//!
//! With `OTEL_TRACES_SAMPLER=parentbased_always_off`, a turn whose caller sampled its trace is
//! exported whole (request, recall, model call, store), streamed or not; a turn whose caller did
//! not, or that starts a new trace, exports nothing, and its model call is sent the trace with
//! the sampled flag cleared.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use common::Server;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message as _;
use serde_json::{Value, json};

/// The spans exported, by trace id (hex): each span's name.
type Exported = Arc<Mutex<BTreeMap<String, Vec<String>>>>;

/// Every `traceparent` the fake model was sent.
type Sent = Arc<Mutex<Vec<String>>>;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Serves an app configured by `configure` on a free loopback port, from a thread of its own;
/// returns the port.
fn serve(configure: impl Fn(&mut web::ServiceConfig) + Send + Clone + 'static) -> u16 {
    let (port_tx, port_rx) = mpsc::channel();
    std::thread::spawn(move || {
        actix_rt::System::new().block_on(async move {
            let server = HttpServer::new(move || App::new().configure(configure.clone()))
                .workers(1)
                .bind(("127.0.0.1", 0))
                .unwrap();
            port_tx.send(server.addrs()[0].port()).unwrap();
            server.run().await.unwrap();
        });
    });
    port_rx.recv().unwrap()
}

async fn collect(body: web::Bytes, exported: web::Data<Exported>) -> HttpResponse {
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return HttpResponse::BadRequest().finish();
    };
    let mut exported = exported.lock().unwrap();
    for span in request
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| &s.spans)
    {
        exported
            .entry(hex(&span.trace_id))
            .or_default()
            .push(span.name.clone());
    }
    HttpResponse::Ok()
        .content_type("application/x-protobuf")
        .finish()
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let chunk = json!({
        "id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {chunk}\n\n")
}

async fn model(req: HttpRequest, body: web::Json<Value>, sent: web::Data<Sent>) -> HttpResponse {
    if let Some(traceparent) = req.headers().get("traceparent") {
        sent.lock()
            .unwrap()
            .push(traceparent.to_str().unwrap().to_owned());
    }
    if body["stream"] == json!(true) {
        let events = [
            chunk(json!({"role": "assistant", "content": "Noted."}), None),
            chunk(json!({}), Some("stop")),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat();
        return HttpResponse::Ok()
            .content_type("text/event-stream")
            .body(events);
    }
    HttpResponse::Ok().json(json!({
        "id": "c1", "object": "chat.completion", "created": 0, "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Noted."},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }))
}

/// One turn, with `traceparent` when given; the body read whole.
fn turn(server: &Server, stream: bool, traceparent: Option<&str>) {
    let body = json!({
        "model": "fake-model", "stream": stream,
        "messages": [{"role": "user", "content": "My kayak is green."}],
    });
    let mut request = ureq::post(&format!("{}/v1/chat/completions", server.base_url))
        .header("X-Session-Id", "sampling");
    if let Some(traceparent) = traceparent {
        request = request.header("traceparent", traceparent);
    }
    let mut response = request.send_json(&body).unwrap();
    let text = response.body_mut().read_to_string().unwrap();
    assert!(text.contains("Noted."), "{text}");
}

/// The trace id and flags of a `traceparent`.
fn trace_and_flags(traceparent: &str) -> (String, String) {
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.len(), 4, "{traceparent}");
    (parts[1].to_owned(), parts[3].to_owned())
}

#[test]
fn only_traces_the_sampler_keeps_are_built_and_exported() {
    let exported = Exported::default();
    let sink = {
        let exported = exported.clone();
        serve(move |app| {
            app.app_data(web::Data::new(exported.clone()))
                .app_data(web::PayloadConfig::new(64 << 20))
                .route("/v1/traces", web::post().to(collect));
        })
    };
    let sent = Sent::default();
    let upstream = {
        let sent = sent.clone();
        serve(move |app| {
            app.app_data(web::Data::new(sent.clone()))
                .route("/v1/chat/completions", web::post().to(model));
        })
    };
    let data = tempfile::tempdir().unwrap();
    let endpoint = format!("http://127.0.0.1:{sink}");
    let model_url = format!("http://127.0.0.1:{upstream}/v1");
    let server = Server::start_with_env(
        data.path(),
        &["--llm-base-url", &model_url, "--llm-model", "fake-model"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_TRACES_SAMPLER", "parentbased_always_off"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );

    let not_sampled = "0af7651916cd43dd8448eb211c80319c";
    let kept_json = "4bf92f3577b34da6a3ce929d0e0e4736";
    let kept_stream = "5c1c63257de34c67a9d4c2f3b9e1d2a7";
    // Turns that export nothing first: their spans, had any been built, would have ended and
    // been exported before those of the turns after them.
    turn(&server, false, None);
    turn(
        &server,
        true,
        Some(&format!("00-{not_sampled}-00f067aa0ba902b7-00")),
    );
    turn(
        &server,
        false,
        Some(&format!("00-{kept_json}-00f067aa0ba902b7-01")),
    );
    turn(
        &server,
        true,
        Some(&format!("00-{kept_stream}-00f067aa0ba902b7-01")),
    );

    let whole: BTreeSet<&str> = [
        "POST /v1/chat/completions",
        "recall",
        "chat fake-model",
        "store",
    ]
    .into_iter()
    .collect();
    let names = |trace: &str| -> BTreeSet<String> {
        exported
            .lock()
            .unwrap()
            .get(trace)
            .map(|names| names.iter().cloned().collect())
            .unwrap_or_default()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while [kept_json, kept_stream]
        .iter()
        .any(|trace| names(trace).len() < whole.len())
    {
        assert!(
            Instant::now() < deadline,
            "sampled traces not exported whole: {:?}\n{}",
            exported.lock().unwrap(),
            server.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    for trace in [kept_json, kept_stream] {
        let names = names(trace);
        assert_eq!(
            names.iter().map(String::as_str).collect::<BTreeSet<_>>(),
            whole,
            "trace {trace}"
        );
    }
    let traces: Vec<String> = exported.lock().unwrap().keys().cloned().collect();
    assert_eq!(
        traces,
        [kept_json, kept_stream],
        "only the sampled turns' traces are exported"
    );

    let sent: Vec<(String, String)> = sent
        .lock()
        .unwrap()
        .iter()
        .map(|t| trace_and_flags(t))
        .collect();
    assert_eq!(sent.len(), 4, "{sent:?}");
    // A new trace not sampled: its own id, not one of the callers', marked not sampled.
    assert!(
        ![not_sampled, kept_json, kept_stream].contains(&sent[0].0.as_str()),
        "{sent:?}"
    );
    assert_eq!(sent[0].1, "00");
    assert_eq!(sent[1], (not_sampled.to_owned(), "00".to_owned()));
    assert_eq!(sent[2], (kept_json.to_owned(), "01".to_owned()));
    assert_eq!(sent[3], (kept_stream.to_owned(), "01".to_owned()));
}
