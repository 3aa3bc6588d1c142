//! Head sampling end to end: the real agent-server binary exporting over OTLP/HTTP to a sink in
//! this process that decodes what it receives, in upstream mode against a fake OpenAI-compatible
//! model that records the `traceparent` it is sent.
//!
//! With `OTEL_TRACES_SAMPLER=parentbased_always_off`, a turn whose caller sampled its trace is
//! exported whole (request, recall, model call, store), streamed or not, under the caller's span;
//! a turn whose caller did not, or that starts a new trace, exports nothing, and its model call
//! is sent the trace with the sampled flag cleared. With `traceidratio` at one half, every new
//! trace the head decision keeps is exported whole, and only those: the tracer does not sample
//! again.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{HttpRequest, HttpResponse, web};
use common::Server;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message as _;
use serde_json::{Value, json};
use testkit::http::serve;

/// One exported span.
#[derive(Clone, Debug)]
struct Exported {
    name: String,
    span_id: String,
    parent_id: String,
    /// The names of its attributes.
    attributes: Vec<String>,
}

/// The spans exported, by trace id (hex).
type Traces = Arc<Mutex<BTreeMap<String, Vec<Exported>>>>;

/// Every `traceparent` the fake model was sent.
type Sent = Arc<Mutex<Vec<String>>>;

/// The spans of one streamed or JSON turn.
const WHOLE: [&str; 4] = [
    "POST /v1/chat/completions",
    "chat fake-model",
    "recall",
    "store",
];

/// The span id callers send in these tests.
const CALLER_SPAN: &str = "00f067aa0ba902b7";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

async fn collect(body: web::Bytes, traces: web::Data<Traces>) -> HttpResponse {
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return HttpResponse::BadRequest().finish();
    };
    let mut traces = traces.lock().unwrap();
    for span in request
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| &s.spans)
    {
        traces
            .entry(hex(&span.trace_id))
            .or_default()
            .push(Exported {
                name: span.name.clone(),
                span_id: hex(&span.span_id),
                parent_id: hex(&span.parent_span_id),
                attributes: span.attributes.iter().map(|a| a.key.clone()).collect(),
            });
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

/// agent-server in upstream mode with `sampler` (`OTEL_TRACES_SAMPLER` and its argument),
/// exporting to a sink, in front of the fake model.
struct Setup {
    traces: Traces,
    sent: Sent,
    server: Server,
    _data: tempfile::TempDir,
}

impl Setup {
    fn start(sampler: &[(&str, &str)]) -> Self {
        let traces = Traces::default();
        let sink = {
            let traces = traces.clone();
            serve(move |app| {
                app.app_data(web::Data::new(traces.clone()))
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
        let mut env = vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ];
        env.extend_from_slice(sampler);
        let server = Server::start_with_env(
            data.path(),
            &["--llm-base-url", &model_url, "--llm-model", "fake-model"],
            &env,
        );
        Self {
            traces,
            sent,
            server,
            _data: data,
        }
    }

    /// One turn, with `traceparent` when given; the body read whole.
    fn turn(&self, stream: bool, traceparent: Option<&str>) {
        let body = json!({
            "model": "fake-model", "stream": stream,
            "messages": [{"role": "user", "content": "My kayak is green."}],
        });
        let mut request = ureq::post(&format!("{}/v1/chat/completions", self.server.base_url))
            .header("X-Session-Id", "sampling");
        if let Some(traceparent) = traceparent {
            request = request.header("traceparent", traceparent);
        }
        let mut response = request.send_json(&body).unwrap();
        let text = response.body_mut().read_to_string().unwrap();
        assert!(text.contains("Noted."), "{text}");
    }

    /// Waits until every trace of `traces` is exported whole; returns all the sink holds.
    fn exported_whole(&self, traces: &[&str]) -> BTreeMap<String, Vec<Exported>> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let exported = self.traces.lock().unwrap().clone();
            let whole = |trace: &&str| {
                let names: BTreeSet<&str> = exported
                    .get(*trace)
                    .map(|spans| spans.iter().map(|s| s.name.as_str()).collect())
                    .unwrap_or_default();
                names == BTreeSet::from(WHOLE)
            };
            if traces.iter().all(whole) {
                return exported;
            }
            assert!(
                Instant::now() < deadline,
                "traces {traces:?} not exported whole: {exported:?}\n{}",
                self.server.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What the fake model was sent: (trace id, parent span id, flags) of each call.
    fn sent(&self) -> Vec<(String, String, String)> {
        self.sent
            .lock()
            .unwrap()
            .iter()
            .map(|traceparent| {
                let parts: Vec<&str> = traceparent.split('-').collect();
                assert_eq!(parts.len(), 4, "{traceparent}");
                (
                    parts[1].to_owned(),
                    parts[2].to_owned(),
                    parts[3].to_owned(),
                )
            })
            .collect()
    }
}

/// The span named `name` of `spans`.
fn named<'a>(spans: &'a [Exported], name: &str) -> &'a Exported {
    spans
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no span {name} in {spans:?}"))
}

#[test]
fn only_traces_the_sampler_keeps_are_built_and_exported() {
    let setup = Setup::start(&[("OTEL_TRACES_SAMPLER", "parentbased_always_off")]);
    let not_sampled = "0af7651916cd43dd8448eb211c80319c";
    let kept_json = "4bf92f3577b34da6a3ce929d0e0e4736";
    let kept_stream = "5c1c63257de34c67a9d4c2f3b9e1d2a7";
    let traceparent = |trace: &str, flags: &str| format!("00-{trace}-{CALLER_SPAN}-{flags}");
    // Turns that export nothing first: their spans, had any been built, would have ended and
    // been exported before those of the turns after them.
    setup.turn(false, None);
    setup.turn(true, Some(&traceparent(not_sampled, "00")));
    setup.turn(false, Some(&traceparent(kept_json, "01")));
    setup.turn(true, Some(&traceparent(kept_stream, "01")));

    let exported = setup.exported_whole(&[kept_json, kept_stream]);
    assert_eq!(
        exported.keys().collect::<Vec<_>>(),
        [kept_json, kept_stream],
        "only the sampled turns' traces are exported"
    );
    let sent = setup.sent();
    assert_eq!(sent.len(), 4, "{sent:?}");
    // A new trace not sampled: its own id, not one of the callers', marked not sampled.
    assert!(
        ![not_sampled, kept_json, kept_stream].contains(&sent[0].0.as_str()),
        "{sent:?}"
    );
    assert_eq!(sent[0].2, "00");
    assert_eq!(
        (sent[1].0.as_str(), sent[1].2.as_str()),
        (not_sampled, "00")
    );
    for (trace, call) in [(kept_json, &sent[2]), (kept_stream, &sent[3])] {
        let spans = &exported[trace];
        let request = named(spans, "POST /v1/chat/completions");
        assert_eq!(request.parent_id, CALLER_SPAN, "under the caller's span");
        for step in ["recall", "chat fake-model", "store"] {
            assert_eq!(named(spans, step).parent_id, request.span_id, "{step}");
        }
        // The model is called under the model-call span, in the caller's trace, sampled.
        let model_call = named(spans, "chat fake-model");
        assert!(
            model_call
                .attributes
                .iter()
                .any(|a| a == "http.response.status_code"),
            "the model's response status is on the model-call span: {model_call:?}"
        );
        assert_eq!(
            (call.0.as_str(), call.1.as_str(), call.2.as_str()),
            (trace, model_call.span_id.as_str(), "01")
        );
    }
}

#[test]
fn every_new_trace_the_head_decision_keeps_is_exported_whole() {
    let setup = Setup::start(&[
        ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
        ("OTEL_TRACES_SAMPLER_ARG", "0.5"),
    ]);
    let turns = 400;
    for turn in 0..turns {
        setup.turn(turn % 4 == 1, None);
    }
    let sent = setup.sent();
    assert_eq!(sent.len(), turns, "{sent:?}");
    let kept: Vec<&str> = sent
        .iter()
        .filter(|(_, _, flags)| flags == "01")
        .map(|(trace, _, _)| trace.as_str())
        .collect();
    // Half of 400 is 200, give or take 10 (one standard deviation). A tracer that sampled
    // again would keep a quarter, 100 give or take 9, and fail this.
    assert!(
        (150..250).contains(&kept.len()),
        "about half kept: {} of {turns}",
        kept.len()
    );
    let exported = setup.exported_whole(&kept);
    // Readiness checks (`GET /healthz`) are sampled too: only the turns' traces count here.
    let turns_exported: BTreeSet<&str> = exported
        .iter()
        .filter(|(_, spans)| spans.iter().any(|s| s.name == WHOLE[0]))
        .map(|(trace, _)| trace.as_str())
        .collect();
    // With a tracer that sampled again at one half, about half of these would be missing.
    assert_eq!(
        turns_exported,
        kept.iter().copied().collect::<BTreeSet<_>>(),
        "exactly the traces kept"
    );
}
