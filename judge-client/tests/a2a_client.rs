//! The judge's A2A target against fake A2A servers (testkit::http): what a turn sends (the card
//! read once, `SendMessage` in the session's context with the wall's headers and
//! `A2A-Version`), how an answer becomes a reply, and how every way it can go wrong is classified
//! (docs/contracts/a2a.md, "Failures"): each task state without an answer, JSON-RPC errors,
//! malformed answers, HTTP statuses, a timeout, a task left working, a missing or unusable card,
//! tools offered to an agent that declares no way to take them.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{TimeZone, Utc};
use judge_client::endpoint::{
    Api, ApiScope, Credentials, FailureKind, HistoryMode, RequestContext, RetryPolicy,
    TargetClient, TargetError, TargetSettings, TurnMode, TurnSender, probe_in,
};
use protocol::a2a::TOOLS_EXTENSION;
use protocol::openai::{ChatMessage, FunctionDefinition, Tool};
use serde_json::{Value, json};

/// What the fake answers to one JSON-RPC call.
#[derive(Debug, Clone)]
enum Answer {
    /// `{"jsonrpc": "2.0", "id": <the request's>, "result": ...}`.
    Result(Value),
    /// A JSON-RPC error with this code.
    Error(i64, &'static str),
    /// This status and body as they are.
    Raw(u16, String),
    /// The answer after a wait.
    Slow(Duration, Box<Answer>),
}

#[derive(Default)]
struct Script {
    /// `None`: the card answers 404.
    card: Option<Value>,
    /// Answers to `SendMessage`, in order (the last repeats).
    send: VecDeque<Answer>,
    /// Answers to `GetTask`, in order (the last repeats).
    get: VecDeque<Answer>,
}

/// What the fake saw: each request's method, headers (lower-case names) and body.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    headers: HashMap<String, String>,
    body: Value,
}

#[derive(Default)]
struct State {
    script: Mutex<Script>,
    seen: Mutex<Vec<Seen>>,
}

fn record(state: &State, req: &HttpRequest, body: &[u8]) {
    let headers = req
        .headers()
        .iter()
        .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    state.seen.lock().unwrap().push(Seen {
        path: req.path().to_owned(),
        headers,
        body: serde_json::from_slice(body).unwrap_or(Value::Null),
    });
}

async fn card(state: web::Data<State>, req: HttpRequest) -> HttpResponse {
    record(&state, &req, b"");
    let card = state.script.lock().unwrap().card.clone();
    match card {
        None => HttpResponse::NotFound().body("no card here"),
        Some(mut card) => {
            // Interfaces point back at this server.
            let host = req.connection_info().host().to_owned();
            if let Some(interfaces) = card
                .get_mut("supportedInterfaces")
                .and_then(Value::as_array_mut)
            {
                for interface in interfaces {
                    if let Some(url) = interface["url"].as_str() {
                        interface["url"] = url.replace("{host}", &host).into();
                    }
                }
            }
            HttpResponse::Ok().json(card)
        }
    }
}

fn next(queue: &mut VecDeque<Answer>) -> Answer {
    if queue.len() > 1 {
        queue.pop_front().unwrap()
    } else {
        queue
            .front()
            .cloned()
            .unwrap_or(Answer::Raw(500, "nothing scripted".into()))
    }
}

async fn rpc(state: web::Data<State>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    record(&state, &req, &body);
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let answer = {
        let mut script = state.script.lock().unwrap();
        match request["method"].as_str() {
            Some("SendMessage") => next(&mut script.send),
            Some("GetTask") => next(&mut script.get),
            _ => Answer::Error(-32601, "Method not found"),
        }
    };
    respond(answer, &request["id"]).await
}

async fn respond(answer: Answer, id: &Value) -> HttpResponse {
    let mut answer = answer;
    loop {
        match answer {
            Answer::Slow(wait, inner) => {
                actix_web::rt::time::sleep(wait).await;
                answer = *inner;
            }
            Answer::Result(result) => {
                return HttpResponse::Ok()
                    .json(json!({"jsonrpc": "2.0", "id": id, "result": result}));
            }
            Answer::Error(code, message) => {
                return HttpResponse::Ok().json(json!({
                    "jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}
                }));
            }
            Answer::Raw(status, body) => {
                return HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap())
                    .content_type("application/json")
                    .body(body);
            }
        }
    }
}

struct Fake {
    base: String,
    state: web::Data<State>,
}

impl Fake {
    fn start(script: Script) -> Self {
        let state = web::Data::new(State {
            script: Mutex::new(script),
            seen: Mutex::default(),
        });
        let shared = state.clone();
        let port = testkit::http::serve(move |cfg| {
            cfg.app_data(shared.clone())
                .route("/.well-known/agent-card.json", web::get().to(card))
                .route("/a2a", web::post().to(rpc));
        });
        Self {
            base: format!("http://127.0.0.1:{port}"),
            state,
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    fn calls(&self, method: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.body["method"] == method)
            .collect()
    }

    fn client(&self, timeout_ms: u64) -> TargetClient {
        TargetClient::new(
            TargetSettings {
                timeout_ms,
                retry: RetryPolicy {
                    max_retries: 2,
                    base_ms: 5,
                    max_wait_ms: 20,
                },
                ..TargetSettings::new(&self.base)
            },
            Credentials::default(),
        )
    }
}

fn agent_card(extensions: &[&str]) -> Value {
    json!({
        "name": "fake-agent",
        "description": "Answers as scripted.",
        "version": "0.0.1",
        "supportedInterfaces": [
            {"url": "http://{host}/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
            {"url": "http://{host}/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {
            "streaming": false,
            "extensions": extensions.iter().map(|u| json!({"uri": u})).collect::<Vec<_>>()
        },
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "S", "description": "d", "tags": ["t"]}]
    })
}

fn script(send: Vec<Answer>) -> Script {
    Script {
        card: Some(agent_card(&[])),
        send: send.into(),
        get: VecDeque::new(),
    }
}

fn ctx(request_no: u64) -> RequestContext {
    RequestContext {
        session_id: "a2a-session-1".to_owned(),
        mock_time: Some(Utc.with_ymd_and_hms(2031, 7, 19, 8, 30, 0).unwrap()),
        request_no,
    }
}

fn task(state: &str, artifacts: &[&str], status: Option<&str>) -> Value {
    let mut task = json!({
        "id": "task-1",
        "contextId": "a2a-session-1",
        "status": {"state": state},
        "artifacts": artifacts.iter().enumerate().map(|(i, t)| json!({"artifactId": format!("a{i}"), "parts": [{"text": t}]})).collect::<Vec<_>>()
    });
    if let Some(text) = status {
        task["status"]["message"] =
            json!({"messageId": "s", "role": "ROLE_AGENT", "parts": [{"text": text}]});
    }
    json!({ "task": task })
}

async fn turn(
    client: &TargetClient,
    history: HistoryMode,
    transcript: &[ChatMessage],
) -> Result<String, TargetError> {
    let mut sender = TurnSender::new(TurnMode::new(Api::A2a, history).unwrap());
    sender
        .send(client, &ctx(transcript.len() as u64), transcript, None)
        .await
        .map(|r| r.text)
}

async fn one(client: &TargetClient, text: &str) -> Result<String, TargetError> {
    turn(client, HistoryMode::New, &[ChatMessage::user(text)]).await
}

#[actix_rt::test]
async fn a_turn_is_a_send_message_in_the_sessions_context_with_the_walls_headers() {
    let fake = Fake::start(script(vec![
        Answer::Result(
            json!({"message": {"messageId": "r1", "role": "ROLE_AGENT", "parts": [{"text": "Noted."}]}}),
        ),
        Answer::Result(task(
            "TASK_STATE_COMPLETED",
            &["Your colour ", "is teal."],
            Some("done"),
        )),
    ]));
    let client = fake.client(5_000);
    let mut transcript = vec![
        ChatMessage::system("Be brief."),
        ChatMessage::user("My favourite colour is teal."),
    ];
    assert_eq!(
        turn(&client, HistoryMode::Full, &transcript).await.unwrap(),
        "Noted."
    );
    transcript.push(ChatMessage::assistant("Noted."));
    transcript.push(ChatMessage::user("What is my favourite colour?"));
    // A task's answer is its artifacts' text, concatenated.
    assert_eq!(
        turn(&client, HistoryMode::Full, &transcript).await.unwrap(),
        "Your colour is teal."
    );
    assert_eq!(
        fake.seen()
            .iter()
            .filter(|s| s.path.ends_with("agent-card.json"))
            .count(),
        1,
        "the card is read once"
    );
    let sends = fake.calls("SendMessage");
    assert_eq!(sends.len(), 2);
    for sent in &sends {
        assert_eq!(sent.headers["a2a-version"], "1.0");
        assert_eq!(sent.headers["x-session-id"], "a2a-session-1");
        assert_eq!(sent.headers["x-mock-time"], "2031-07-19T08:30:00Z");
        assert!(sent.headers.contains_key("traceparent"));
        assert_eq!(sent.body["jsonrpc"], "2.0");
        let message = &sent.body["params"]["message"];
        assert_eq!(message["role"], "ROLE_USER");
        assert_eq!(message["contextId"], "a2a-session-1");
        assert!(!message["messageId"].as_str().unwrap().is_empty());
        assert_eq!(message["parts"][0]["text"], "Be brief.");
        assert_eq!(
            message["parts"][0]["metadata"]["agentwall/part"],
            "instructions"
        );
    }
    assert_ne!(
        sends[0].body["params"]["message"]["messageId"],
        sends[1].body["params"]["message"]["messageId"]
    );
    // `full`: the earlier conversation in a history part, the new turn last.
    let second = &sends[1].body["params"]["message"]["parts"];
    assert_eq!(second[1]["metadata"]["agentwall/part"], "history");
    assert_eq!(
        second[1]["text"],
        "Earlier in this conversation:\nUser: My favourite colour is teal.\nAgent: Noted."
    );
    assert_eq!(second[2]["text"], "What is my favourite colour?");
    assert!(second[2].get("metadata").is_none());
}

#[actix_rt::test]
async fn a_completed_task_without_artifacts_answers_with_its_status_message() {
    let fake = Fake::start(script(vec![Answer::Result(task(
        "TASK_STATE_COMPLETED",
        &[],
        Some("Teal."),
    ))]));
    assert_eq!(one(&fake.client(5_000), "?").await.unwrap(), "Teal.");
}

#[actix_rt::test]
async fn every_task_state_without_an_answer_is_an_agent_error() {
    for (state, words) in [
        ("TASK_STATE_FAILED", "failed"),
        ("TASK_STATE_REJECTED", "rejected"),
        ("TASK_STATE_CANCELED", "canceled"),
        ("TASK_STATE_INPUT_REQUIRED", "input-required"),
        ("TASK_STATE_AUTH_REQUIRED", "auth-required"),
        ("TASK_STATE_UNSPECIFIED", "no state"),
        ("TASK_STATE_PAUSED", "TASK_STATE_PAUSED"),
    ] {
        let fake = Fake::start(script(vec![Answer::Result(task(
            state,
            &["not an answer"],
            Some("why not"),
        ))]));
        let err = one(&fake.client(5_000), "Hello.").await.unwrap_err();
        assert_eq!(err.kind, FailureKind::AgentError, "{state}: {err}");
        assert!(err.message.contains(words), "{state}: {}", err.message);
        assert!(
            err.message.contains("why not") || state.ends_with("UNSPECIFIED"),
            "{}",
            err.message
        );
        assert_eq!(err.status, Some(200));
    }
}

#[actix_rt::test]
async fn a_working_task_is_polled_until_it_completes() {
    let mut s = script(vec![Answer::Result(task("TASK_STATE_WORKING", &[], None))]);
    s.get = vec![
        Answer::Result(task("TASK_STATE_WORKING", &[], None)["task"].clone()),
        Answer::Result(task("TASK_STATE_COMPLETED", &["Done."], None)["task"].clone()),
    ]
    .into();
    let fake = Fake::start(s);
    assert_eq!(one(&fake.client(5_000), "Go.").await.unwrap(), "Done.");
    let gets = fake.calls("GetTask");
    assert_eq!(gets.len(), 2);
    assert_eq!(gets[0].body["params"]["id"], "task-1");
    assert_eq!(gets[0].headers["a2a-version"], "1.0");
}

#[actix_rt::test]
async fn a_task_still_working_at_the_timeout_is_a_timeout() {
    let mut s = script(vec![Answer::Result(task(
        "TASK_STATE_SUBMITTED",
        &[],
        None,
    ))]);
    s.get = vec![Answer::Result(
        task("TASK_STATE_WORKING", &[], None)["task"].clone(),
    )]
    .into();
    let fake = Fake::start(s);
    let err = one(&fake.client(400), "Go.").await.unwrap_err();
    assert_eq!(err.kind, FailureKind::Timeout, "{err}");
    assert!(
        err.message.contains("still TASK_STATE_WORKING"),
        "{}",
        err.message
    );
    assert!(!fake.calls("GetTask").is_empty());
}

#[actix_rt::test]
async fn json_rpc_errors_are_agent_errors_that_name_their_code() {
    for (code, words) in [
        (-32601, "MethodNotFoundError"),
        (-32602, "InvalidParamsError"),
        (-32603, "InternalError"),
        (-32001, "TaskNotFoundError"),
        (-32004, "UnsupportedOperationError"),
        (-32005, "ContentTypeNotSupportedError"),
        (-32009, "VersionNotSupportedError"),
        (-32042, "-32042"),
    ] {
        let fake = Fake::start(script(vec![Answer::Error(code, "scripted")]));
        let err = one(&fake.client(5_000), "Hello.").await.unwrap_err();
        assert_eq!(err.kind, FailureKind::AgentError, "{code}");
        assert!(err.message.contains(words), "{code}: {}", err.message);
        assert!(err.message.contains(&code.to_string()), "{}", err.message);
        assert_eq!(err.attempts, 1, "never retried");
    }
}

#[actix_rt::test]
async fn malformed_answers_are_agent_errors() {
    for (answer, words) in [
        (
            Answer::Raw(200, "not json".into()),
            "expected a JSON-RPC answer",
        ),
        (Answer::Result(json!({})), "neither a task nor a message"),
        (
            Answer::Result(json!({"task": {"id": "t"}, "message": {"messageId": "m"}})),
            "neither a task nor a message",
        ),
        (
            Answer::Result(json!("a string")),
            "expected a SendMessage answer",
        ),
        (
            Answer::Raw(200, json!({"jsonrpc": "2.0", "id": 1}).to_string()),
            "neither a result nor an error",
        ),
        (
            Answer::Raw(
                200,
                json!({"jsonrpc": "2.0", "id": 999, "result": {}}).to_string(),
            ),
            "is not the request's",
        ),
        (
            Answer::Result(
                json!({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"url": "http://x/y.png"}]}}),
            ),
            "no text part",
        ),
    ] {
        let fake = Fake::start(script(vec![answer.clone()]));
        let err = one(&fake.client(5_000), "Hello.").await.unwrap_err();
        assert_eq!(err.kind, FailureKind::AgentError, "{answer:?}");
        assert!(err.message.contains(words), "{answer:?}: {}", err.message);
    }
}

#[actix_rt::test]
async fn http_statuses_are_classified_as_for_any_request() {
    let rpc_error =
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "crashed"}});
    for (status, body, kind, attempts) in [
        (429, "{}".to_owned(), FailureKind::RateLimited, 3),
        (503, "{}".to_owned(), FailureKind::InfraError, 1),
        (502, "bad gateway".to_owned(), FailureKind::InfraError, 1),
        (500, rpc_error.to_string(), FailureKind::AgentError, 1),
    ] {
        let fake = Fake::start(script(vec![Answer::Raw(status, body)]));
        let err = one(&fake.client(5_000), "Hello.").await.unwrap_err();
        assert_eq!(err.kind, kind, "{status}: {err}");
        assert_eq!(err.status, Some(status));
        assert_eq!(err.attempts, attempts, "{status}");
        if status == 500 {
            assert!(
                err.message.contains("-32603 InternalError: crashed"),
                "{}",
                err.message
            );
        }
    }
}

#[actix_rt::test]
async fn no_answer_within_the_timeout_is_a_timeout() {
    let fake = Fake::start(script(vec![Answer::Slow(
        Duration::from_secs(3),
        Box::new(Answer::Result(task(
            "TASK_STATE_COMPLETED",
            &["late"],
            None,
        ))),
    )]));
    let err = one(&fake.client(300), "Hello.").await.unwrap_err();
    assert_eq!(err.kind, FailureKind::Timeout, "{err}");
    assert_eq!(err.attempts, 1);
}

#[actix_rt::test]
async fn a_missing_or_unusable_card_is_the_targets_failure() {
    let fake = Fake::start(Script::default());
    let err = one(&fake.client(5_000), "Hello.").await.unwrap_err();
    assert_eq!((err.kind, err.status), (FailureKind::AgentError, Some(404)));
    assert!(err.message.contains("no agent card"), "{}", err.message);
    // The probe of an A2A run says what to use instead.
    let err = probe_in(&fake.client(5_000), "probe", ApiScope::Only(Api::A2a))
        .await
        .unwrap_err();
    assert!(
        err.message.contains("does not serve the A2A API"),
        "{}",
        err.message
    );
    assert!(
        err.message.contains("use --api chat or --api responses"),
        "{}",
        err.message
    );

    let mut old = agent_card(&[]);
    old["supportedInterfaces"] = json!([{"url": "http://{host}/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}]);
    let fake = Fake::start(Script {
        card: Some(old),
        ..Script::default()
    });
    let err = one(&fake.client(5_000), "Hello.").await.unwrap_err();
    assert_eq!(err.kind, FailureKind::AgentError);
    assert!(err.message.contains("JSONRPC 0.3"), "{}", err.message);
    assert!(fake.calls("SendMessage").is_empty());

    let fake = Fake::start(Script {
        card: Some(json!(["not", "a", "card"])),
        ..Script::default()
    });
    let err = one(&fake.client(5_000), "Hello.").await.unwrap_err();
    assert!(
        err.message.contains("is not an agent card"),
        "{}",
        err.message
    );
}

fn transfer_tool() -> Tool {
    Tool::function(FunctionDefinition {
        name: "paypal__transfer".into(),
        description: Some("Send money.".into()),
        parameters: Some(json!({"type": "object"})),
        strict: None,
    })
}

#[actix_rt::test]
async fn tools_go_only_to_an_agent_that_declares_the_tools_extension() {
    let transcript = [
        ChatMessage::system("You operate apps."),
        ChatMessage::user("Send bob 5."),
    ];
    let tools = [transfer_tool()];
    // No extension: refused before anything is sent, as the judge's own (not applicable).
    let fake = Fake::start(script(vec![Answer::Result(task(
        "TASK_STATE_COMPLETED",
        &["ok"],
        None,
    ))]));
    let client = fake.client(5_000);
    let mut sender = TurnSender::new(TurnMode::new(Api::A2a, HistoryMode::Full).unwrap());
    let err = sender
        .send(&client, &ctx(1), &transcript, Some(&tools))
        .await
        .unwrap_err();
    assert_eq!(err.kind, FailureKind::JudgeError, "{err}");
    assert!(err.message.starts_with("not applicable"), "{}", err.message);
    assert!(fake.calls("SendMessage").is_empty());
    assert!(!client.carries_tools(Api::A2a));

    // Declared: the tools as a data part, the agent's calls read from its data part.
    let calls = json!({"message": {"messageId": "r", "role": "ROLE_AGENT", "parts": [
        {"data": {"tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "paypal__transfer", "arguments": "{\"to\":\"bob\"}"}}]}}
    ]}});
    let fake = Fake::start(Script {
        card: Some(agent_card(&[TOOLS_EXTENSION])),
        send: vec![Answer::Result(calls)].into(),
        get: VecDeque::new(),
    });
    let client = fake.client(5_000);
    let reply = sender
        .send(&client, &ctx(1), &transcript, Some(&tools))
        .await
        .unwrap();
    assert!(client.carries_tools(Api::A2a));
    assert_eq!(reply.text, "");
    assert_eq!(reply.tool_calls[0].id, "call_1");
    assert_eq!(reply.tool_calls[0].function.arguments, "{\"to\":\"bob\"}");
    let sent = &fake.calls("SendMessage")[0];
    assert_eq!(sent.headers["a2a-extensions"], TOOLS_EXTENSION);
    let message = &sent.body["params"]["message"];
    assert_eq!(message["extensions"], json!([TOOLS_EXTENSION]));
    assert_eq!(
        message["parts"][1]["data"]["tools"][0]["function"]["name"],
        "paypal__transfer"
    );
}

#[actix_rt::test]
async fn the_probe_reports_the_agent_card() {
    let fake = Fake::start(script(vec![Answer::Result(
        json!({"message": {"messageId": "r", "role": "ROLE_AGENT", "parts": [{"text": "Hi."}]}}),
    )]));
    let capabilities = probe_in(&fake.client(5_000), "probe", ApiScope::Only(Api::A2a))
        .await
        .unwrap();
    assert_eq!(capabilities.a2a, Some(true));
    assert_eq!(capabilities.chat, None);
    let card = capabilities.agent_card.unwrap();
    assert_eq!(card.name, "fake-agent");
    assert!(
        card.url.ends_with("/a2a"),
        "the JSONRPC interface, not the first: {}",
        card.url
    );
    assert_eq!(card.protocol_version, "1.0");
    assert!(!card.streaming);
    assert_eq!(card.skills[0].id, "s");
    assert_eq!(card.input_modes, ["text/plain"]);
    // No control plane here: not applicable, never assumed.
    assert!(!capabilities.reset && !capabilities.inject && !capabilities.mock_time);
    assert!(
        capabilities
            .notes
            .iter()
            .any(|n| n.contains("agent card at")),
        "{:?}",
        capabilities.notes
    );
}
