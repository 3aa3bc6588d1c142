//! Fake OpenAI-compatible targets for the judge's own tests, served by actix-web on 127.0.0.1:0.
//!
//! - `oracle`: answers every scripted turn with the generator's ideal reply (so every applicable
//!   test must pass), with the full control plane and `X-Mock-Time` honoured;
//! - `amnesiac`: same control plane, remembers nothing ("Noted." / "I don't know.");
//! - `stub`: a plain chat endpoint with no control plane that ignores `X-Mock-Time`;
//! - `scripted`: plays a queue of behaviours (429, 500, garbage, hang, ...) for resilience tests.

#![allow(dead_code)]

pub mod serve;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::http::Method;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use chrono::{DateTime, Utc};
use judge_client::suites::ltm::{Step, TestSpec};
use protocol::control::{InjectRequest, InjectResponse, InjectedFact, MemoryView, ResetResponse};
use protocol::headers::{MOCK_TIME, SESSION_ID, TRACEPARENT, parse_mock_time};
use protocol::openai::ChatCompletionRequest;
use serde_json::json;

/// What a scripted target does with the next chat request.
#[derive(Debug, Clone)]
pub enum Behaviour {
    Reply(String),
    RateLimited(Option<String>),
    ServerError,
    BadGateway,
    Garbage,
    NoChoices,
    Hang(Duration),
}

pub enum Brain {
    Oracle(HashMap<(String, String), String>),
    Amnesiac,
    Stub,
    Scripted(Mutex<VecDeque<Behaviour>>),
}

pub struct FakeState {
    pub brain: Brain,
    pub control: bool,
    /// Chat requests received (probe included).
    pub chats: AtomicUsize,
    /// Requests that lacked a header the judge must always send.
    pub header_problems: Mutex<Vec<String>>,
    /// Chat requests that carried `X-Mock-Time`.
    pub mock_times: AtomicUsize,
    /// Largest number of messages in one chat request.
    pub max_messages: AtomicUsize,
    /// Added before every chat reply (a slow target).
    pub delay: Duration,
    /// Every `traceparent` received on a chat request.
    pub traceparents: Mutex<Vec<String>>,
    /// OTLP exports received (`POST /v1/traces`), when used as a collector.
    pub trace_exports: AtomicUsize,
}

pub struct Fake {
    pub url: String,
    pub state: Arc<FakeState>,
    handle: ServerHandle,
}

impl Fake {
    pub fn chats(&self) -> usize {
        self.state.chats.load(Ordering::SeqCst)
    }

    pub async fn stop(self) {
        self.handle.stop(false).await;
    }
}

/// The oracle's answer table: (session id, user text) -> ideal reply, from the same generators.
pub fn oracle_table(specs: &[TestSpec]) -> HashMap<(String, String), String> {
    let mut table = HashMap::new();
    for spec in specs {
        for step in &spec.steps {
            if let Step::Say {
                session,
                text,
                ideal,
                ..
            } = step
            {
                let key = (spec.sessions[*session].session_id.clone(), text.clone());
                if let Some(previous) = table.insert(key, ideal.clone()) {
                    assert_eq!(&previous, ideal, "ambiguous oracle entry in {}", spec.id);
                }
            }
        }
    }
    table
}

fn completion(text: &str) -> HttpResponse {
    HttpResponse::Ok().json(json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    }))
}

fn header(req: &HttpRequest, name: &str) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

fn today(mock: Option<DateTime<Utc>>) -> String {
    match mock {
        Some(time) => format!("Today is {}.", time.format("%B %-d, %Y")),
        None => "Hello there.".to_owned(),
    }
}

async fn handle(req: HttpRequest, body: web::Bytes, state: web::Data<FakeState>) -> HttpResponse {
    let session = header(&req, SESSION_ID);
    let mock = header(&req, MOCK_TIME);
    let path = req.path().to_owned();
    if path == "/v1/traces" {
        state.trace_exports.fetch_add(1, Ordering::SeqCst);
        return HttpResponse::Ok()
            .content_type("application/x-protobuf")
            .finish();
    }
    let is_models = path == "/v1/models";
    if !is_models {
        let mut problems = state.header_problems.lock().unwrap();
        if session.is_none() {
            problems.push(format!("{path}: no X-Session-Id"));
        }
        match header(&req, TRACEPARENT) {
            Some(t) if t.len() == 55 && t.starts_with("00-") => {}
            other => problems.push(format!("{path}: bad traceparent {other:?}")),
        }
        if let Some(m) = &mock
            && !m.ends_with('Z')
        {
            problems.push(format!("{path}: X-Mock-Time not in UTC: {m}"));
        }
    }
    let mock_time = mock.as_deref().and_then(|m| parse_mock_time(m).ok());
    let honours_time = !matches!(state.brain, Brain::Stub | Brain::Scripted(_));
    let session = session.unwrap_or_default();
    match (req.method().clone(), path.as_str()) {
        (Method::GET, "/v1/models") => HttpResponse::Ok().json(json!({
            "object": "list",
            "data": [{"id": "fake-model", "object": "model", "created": 0, "owned_by": "tests"}]
        })),
        (Method::POST, "/v1/chat/completions") => {
            state.chats.fetch_add(1, Ordering::SeqCst);
            if let Some(t) = header(&req, TRACEPARENT) {
                state.traceparents.lock().unwrap().push(t);
            }
            if !state.delay.is_zero() {
                actix_rt::time::sleep(state.delay).await;
            }
            if mock.is_some() {
                state.mock_times.fetch_add(1, Ordering::SeqCst);
            }
            let request: ChatCompletionRequest = match serde_json::from_slice(&body) {
                Ok(r) => r,
                Err(e) => return HttpResponse::BadRequest().body(e.to_string()),
            };
            state
                .max_messages
                .fetch_max(request.messages.len(), Ordering::SeqCst);
            let text = request
                .messages
                .last()
                .and_then(|m| m.text_content())
                .unwrap_or_default();
            if text == "What is today's date?" {
                return completion(&today(mock_time.filter(|_| honours_time)));
            }
            match &state.brain {
                Brain::Oracle(table) => completion(
                    table
                        .get(&(session, text))
                        .map(String::as_str)
                        .unwrap_or("Noted."),
                ),
                Brain::Amnesiac => completion(if text.ends_with('?') {
                    "I don't know."
                } else {
                    "Noted."
                }),
                Brain::Stub => completion("Hello there."),
                Brain::Scripted(queue) => {
                    if text == "Hello." {
                        return completion("Hello there.");
                    }
                    let next = queue.lock().unwrap().pop_front();
                    match next.unwrap_or(Behaviour::Reply("Noted.".to_owned())) {
                        Behaviour::Reply(text) => completion(&text),
                        Behaviour::RateLimited(retry_after) => {
                            let mut response = HttpResponse::TooManyRequests();
                            if let Some(value) = retry_after {
                                response.insert_header(("Retry-After", value));
                            }
                            response.json(json!({"error": {"message": "slow down", "type": "rate_limit_error", "param": null, "code": null}}))
                        }
                        Behaviour::ServerError => HttpResponse::InternalServerError().json(
                            json!({"error": {"message": "the agent crashed", "type": "server_error", "param": null, "code": null}}),
                        ),
                        Behaviour::BadGateway => HttpResponse::BadGateway().body("upstream down"),
                        Behaviour::Garbage => HttpResponse::Ok()
                            .content_type("application/json")
                            .body("<html>definitely not json"),
                        Behaviour::NoChoices => HttpResponse::Ok().json(json!({
                            "id": "x", "object": "chat.completion", "created": 0,
                            "model": "fake", "choices": []
                        })),
                        Behaviour::Hang(d) => {
                            actix_rt::time::sleep(d).await;
                            completion("too late")
                        }
                    }
                }
            }
        }
        (method, control) if state.control && control.starts_with("/control/") => {
            match (method, control) {
                (Method::POST, "/control/session/reset") => HttpResponse::Ok().json(ResetResponse {
                    session_id: session,
                    working_items_removed: 0,
                    facts_removed: 0,
                }),
                (Method::POST, "/control/memory/inject") => {
                    let request: InjectRequest = match serde_json::from_slice(&body) {
                        Ok(r) => r,
                        Err(e) => return HttpResponse::BadRequest().body(e.to_string()),
                    };
                    HttpResponse::Ok().json(InjectResponse {
                        session_id: session,
                        injected: request
                            .facts
                            .iter()
                            .map(|f| InjectedFact {
                                id: uuid::Uuid::nil(),
                                key: f.key.clone(),
                                current: true,
                            })
                            .collect(),
                    })
                }
                (Method::GET, "/control/memory") => HttpResponse::Ok().json(MemoryView {
                    session_id: session,
                    now: mock_time.unwrap_or_else(Utc::now),
                    working_memory: vec![],
                    facts: vec![],
                }),
                _ => HttpResponse::NotFound().finish(),
            }
        }
        _ => HttpResponse::NotFound().json(
            json!({"error": {"message": "no such route", "type": "invalid_request_error", "param": null, "code": null}}),
        ),
    }
}

pub async fn spawn(brain: Brain, control: bool) -> Fake {
    spawn_with_delay(brain, control, Duration::ZERO).await
}

pub async fn spawn_with_delay(brain: Brain, control: bool, delay: Duration) -> Fake {
    let state = Arc::new(FakeState {
        brain,
        control,
        chats: AtomicUsize::new(0),
        header_problems: Mutex::new(Vec::new()),
        mock_times: AtomicUsize::new(0),
        max_messages: AtomicUsize::new(0),
        delay,
        traceparents: Mutex::new(Vec::new()),
        trace_exports: AtomicUsize::new(0),
    });
    let data = web::Data::from(state.clone());
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .app_data(web::PayloadConfig::new(16 * 1024 * 1024))
            .default_service(web::to(handle))
    })
    .workers(1)
    .disable_signals()
    .bind(("127.0.0.1", 0))
    .expect("bind 127.0.0.1:0");
    let addr = server.addrs()[0];
    let server = server.run();
    let handle = server.handle();
    actix_rt::spawn(server);
    Fake {
        url: format!("http://{addr}"),
        state,
        handle,
    }
}

pub async fn oracle(specs: &[TestSpec]) -> Fake {
    spawn(Brain::Oracle(oracle_table(specs)), true).await
}

/// An oracle that takes `delay` over every chat reply.
pub async fn slow_oracle(specs: &[TestSpec], delay: Duration) -> Fake {
    spawn_with_delay(Brain::Oracle(oracle_table(specs)), true, delay).await
}

pub async fn amnesiac() -> Fake {
    spawn(Brain::Amnesiac, true).await
}

pub async fn stub() -> Fake {
    spawn(Brain::Stub, false).await
}

pub async fn scripted(behaviours: Vec<Behaviour>) -> Fake {
    spawn(Brain::Scripted(Mutex::new(behaviours.into())), false).await
}

/// The shipped transfer scenario (`01_transfer_basic.yaml`) played `trials` times by its
/// reference agent in directive mode, seed 1: the apps run the `judge serve` tests index, list and
/// compare. Callers write it out with the manifest and results their test needs.
pub async fn play_transfer_scenario(trials: u32) -> judge_client::suites::apps::ScenarioOutcome {
    use judge_client::suites::apps::scripted::ReferenceAgent;
    use judge_client::suites::apps::{ActionMode, AppRegistry, Scenario, run_scenario};
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios/apps/01_transfer_basic.yaml");
    let mut scenario = Scenario::load(&path).unwrap();
    scenario.trials = trials;
    let mut agent = ReferenceAgent::new(scenario.reference.clone());
    run_scenario(
        &mut agent,
        &AppRegistry::builtin(),
        &scenario,
        ActionMode::Directives,
        1,
    )
    .await
    .unwrap()
}
