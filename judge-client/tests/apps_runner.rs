//! The scenario runner: over HTTP through the judge's target client (a fake OpenAI-compatible
//! server that plays a perfect PayPal agent), tool calls with bad arguments, target failures,
//! failure explanations, and the run-directory files.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use actix_web::{App as WebApp, HttpRequest, HttpResponse, HttpServer, web};
use judge_client::endpoint::{
    Credentials, FailureKind, TargetClient, TargetError, TargetSettings, TurnMode,
};
use judge_client::suites::apps::artifacts::write_outcome;
use judge_client::suites::apps::runner::{AgentReply, AgentTurn, TrialStatus};
use judge_client::suites::apps::scripted::ReferenceAgent;
use judge_client::suites::apps::tools::tool_call;
use judge_client::suites::apps::{
    ActionMode, AgentEndpoint, AppRegistry, Params, Scenario, TargetAgent, run_scenario,
    run_scenarios,
};
use protocol::headers::{MOCK_TIME, SESSION_ID};
use protocol::openai::{ChatCompletionRequest, ToolCall};
use serde_json::json;

fn scenario(file: &str) -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios/apps")
        .join(file);
    Scenario::load(&path).unwrap()
}

/// What the fake target saw per request: (session id, mock time, number of messages, number of
/// tools offered).
type Seen = Arc<Mutex<Vec<(Option<String>, Option<String>, usize, usize)>>>;

async fn chat(
    req: HttpRequest,
    body: web::Json<ChatCompletionRequest>,
    seen: web::Data<Seen>,
) -> HttpResponse {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    seen.lock().unwrap().push((
        header(SESSION_ID),
        header(MOCK_TIME),
        body.messages.len(),
        body.tools.as_ref().map_or(0, Vec::len),
    ));
    let last = body
        .messages
        .last()
        .and_then(|m| m.text_content())
        .unwrap_or_default();
    let text = if last.contains("send bob $30") {
        "Sending $30 to bob now.\nAPP_ACTION: paypal.transfer(to=\"bob\", amount=30, note=\"Dinner\")"
    } else {
        "I am not sure what you mean."
    };
    HttpResponse::Ok().json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "fake",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    }))
}

#[actix_rt::test]
async fn a_target_over_http_plays_a_scenario_through_the_target_client() {
    let seen: Seen = Arc::default();
    let data = web::Data::new(seen.clone());
    let server = HttpServer::new(move || {
        WebApp::new()
            .app_data(data.clone())
            .route("/v1/chat/completions", web::post().to(chat))
    })
    .workers(1)
    .disable_signals()
    .bind(("127.0.0.1", 0))
    .unwrap();
    let url = format!("http://{}", server.addrs()[0]);
    let server = server.run();
    let handle = server.handle();
    actix_rt::spawn(server);

    let mut scenario = scenario("01_transfer_basic.yaml");
    scenario.user.turns = vec!["Please send bob $30 for dinner.".to_owned()];
    scenario.trials = 2;
    let client = TargetClient::new(TargetSettings::new(url), Credentials::default());
    let mut agent = TargetAgent::new(&client, true).with_turns(TurnMode::default());
    let registry = AppRegistry::builtin();
    let outcome = run_scenario(&mut agent, &registry, &scenario, ActionMode::Auto, 5)
        .await
        .unwrap();
    handle.stop(true).await;

    // Over HTTP, auto offers the apps as tools and still executes directives in the text.
    assert_eq!(outcome.mode, ActionMode::Auto);
    assert!(outcome.all_passed(), "{:?}", outcome.failure_summary());
    assert_eq!(outcome.trials[0].audit.entries()[0].action, "transfer");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].0.as_deref(), Some("apps-transfer-basic-s5-t0"));
    // The world's logical clock: step 1 (after the setup step), a minute past the origin.
    assert_eq!(seen[0].1.as_deref(), Some("2025-01-01T09:01:00Z"));
    assert_eq!(seen[0].2, 2, "system message and the new turn only");
    assert_eq!(seen[0].3, 6, "PayPal's six actions offered as tools");
}

/// Sends one tool call with broken arguments, then a good one, then stops.
struct Clumsy {
    round: usize,
}

impl AgentEndpoint for Clumsy {
    fn supports_tools(&self) -> bool {
        true
    }

    async fn respond(&mut self, turn: AgentTurn<'_>) -> Result<AgentReply, TargetError> {
        assert!(turn.tools.is_some_and(|t| t.len() == 6));
        self.round += 1;
        let calls: Vec<ToolCall> = match self.round {
            1 => {
                let mut broken = tool_call("c1", "paypal", "transfer", &Params::new());
                broken.function.arguments = "{to: bob".to_owned();
                vec![broken]
            }
            2 => {
                let args = json!({"to": "bob", "amount": 30, "note": "Dinner"});
                vec![tool_call(
                    "c2",
                    "paypal",
                    "transfer",
                    args.as_object().unwrap(),
                )]
            }
            _ => Vec::new(),
        };
        Ok(AgentReply {
            text: if calls.is_empty() {
                "Sent $30.".to_owned()
            } else {
                String::new()
            },
            tool_calls: calls,
        })
    }
}

#[test]
fn bad_tool_arguments_fail_that_call_only() {
    let registry = AppRegistry::builtin();
    let mut scenario = scenario("01_transfer_basic.yaml");
    scenario.trials = 1;
    let outcome = actix_rt::System::new()
        .block_on(run_scenario(
            &mut Clumsy { round: 0 },
            &registry,
            &scenario,
            ActionMode::Tools,
            1,
        ))
        .unwrap();
    let trial = &outcome.trials[0];
    let log = trial.audit.entries();
    assert_eq!(log.len(), 2);
    assert!(!log[0].success && log[0].error.as_ref().unwrap().contains("not valid JSON"));
    assert!(log[1].success);
    let tool_answers: Vec<_> = trial
        .transcript
        .iter()
        .filter(|m| m.tool_call_id.is_some())
        .collect();
    assert_eq!(tool_answers.len(), 2);
    assert_eq!(trial.status, TrialStatus::Passed, "{}", trial.why());
}

/// The reference agent of a scenario (fresh per trial), except in the trials named in `fails`,
/// where every turn fails with the given class.
struct Failing {
    scenario: Scenario,
    fails: Vec<(String, FailureKind)>,
    session: String,
    current: Option<ReferenceAgent>,
}

impl Failing {
    fn new(scenario: &Scenario, fails: &[(u32, FailureKind)]) -> Self {
        Self {
            scenario: scenario.clone(),
            fails: fails
                .iter()
                .map(|(trial, kind)| (format!("-t{trial}"), *kind))
                .collect(),
            session: String::new(),
            current: None,
        }
    }
}

impl AgentEndpoint for Failing {
    fn supports_tools(&self) -> bool {
        false
    }

    async fn respond(&mut self, turn: AgentTurn<'_>) -> Result<AgentReply, TargetError> {
        if let Some((_, kind)) = self
            .fails
            .iter()
            .find(|(suffix, _)| turn.session_id.ends_with(suffix.as_str()))
        {
            return Err(TargetError::new(*kind, "no answer"));
        }
        if self.session != turn.session_id {
            self.session = turn.session_id.to_owned();
            self.current = Some(ReferenceAgent::for_scenario(&self.scenario));
        }
        self.current.as_mut().unwrap().respond(turn).await
    }
}

#[test]
fn a_target_failure_counts_against_it_and_a_judge_error_is_left_out() {
    let registry = AppRegistry::builtin();
    let mut scenario = scenario("02_check_balance.yaml");
    scenario.trials = 4;
    let mut agent = Failing::new(
        &scenario,
        &[
            (1, FailureKind::Timeout),
            (2, FailureKind::AgentError),
            (3, FailureKind::JudgeError),
        ],
    );
    let outcome = actix_rt::System::new()
        .block_on(run_scenario(
            &mut agent,
            &registry,
            &scenario,
            ActionMode::Directives,
            1,
        ))
        .unwrap();
    let statuses: Vec<TrialStatus> = outcome.trials.iter().map(|t| t.status).collect();
    assert_eq!(
        statuses,
        [
            TrialStatus::Passed,
            TrialStatus::Failed,
            TrialStatus::Failed,
            TrialStatus::Error
        ]
    );
    let kinds: Vec<Option<FailureKind>> = outcome
        .trials
        .iter()
        .map(|t| t.failure.as_ref().map(|f| f.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            None,
            Some(FailureKind::Timeout),
            Some(FailureKind::AgentError),
            Some(FailureKind::JudgeError)
        ]
    );
    // Graded: the passed trial and the two the target failed; the judge's error is left out.
    assert_eq!((outcome.graded, outcome.passed), (3, 1));
    assert_eq!(outcome.pass_rate, Some(1.0 / 3.0));
    assert_eq!(outcome.pass_hat_k, Some(0.0));
    assert!(!outcome.all_passed());
    let why = outcome.failure_summary();
    assert!(why[0].contains("trial 1: timeout: no answer"), "{why:?}");
    assert!(why[2].contains("trial 3: judge_error"), "{why:?}");
}

#[test]
fn a_target_down_in_every_trial_scores_zero_not_nothing() {
    let registry = AppRegistry::builtin();
    let scenario = scenario("02_check_balance.yaml");
    let fails: Vec<(u32, FailureKind)> = (0..scenario.trials)
        .map(|t| (t, FailureKind::Timeout))
        .collect();
    let mut down = Failing::new(&scenario, &fails);
    let outcome = actix_rt::System::new()
        .block_on(run_scenario(
            &mut down,
            &registry,
            &scenario,
            ActionMode::Directives,
            1,
        ))
        .unwrap();
    assert!(
        outcome
            .trials
            .iter()
            .all(|t| t.status == TrialStatus::Failed)
    );
    assert_eq!(
        (outcome.graded, outcome.pass_hat_k),
        (scenario.trials, Some(0.0))
    );
    assert!(outcome.failure_summary()[0].contains("timeout: no answer"));
}

#[test]
fn failures_are_explained() {
    let registry = AppRegistry::builtin();
    let scenario = scenario("01_transfer_basic.yaml");
    // A reference agent for another scenario: it checks the balance instead of paying.
    let mut wrong = ReferenceAgent::new(vec!["APP_ACTION: paypal.check_balance()".to_owned()]);
    let outcome = actix_rt::System::new()
        .block_on(run_scenario(
            &mut wrong,
            &registry,
            &scenario,
            ActionMode::Directives,
            1,
        ))
        .unwrap();
    let why = &outcome.failure_summary()[0];
    assert!(
        why.contains("/paypal/accounts/alice/balance_cents is 10000, expected 7000"),
        "{why}"
    );
    assert!(why.contains("never said \"$30\""), "{why}");
}

/// Every file below `dir`, as (path relative to `root`, bytes), sorted.
fn files_below(root: &Path, dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_below(root, &path));
        } else {
            let bytes = std::fs::read(&path).unwrap();
            out.push((path.strip_prefix(root).unwrap().to_owned(), bytes));
        }
    }
    out.sort();
    out
}

fn write_run(seed: u64) -> (tempfile::TempDir, Vec<(PathBuf, Vec<u8>)>) {
    let registry = AppRegistry::builtin();
    let scenarios = vec![
        scenario("09_pay_request.yaml"),
        scenario("13_fee_and_split.yaml"),
    ];
    let dir = tempfile::tempdir().unwrap();
    for s in &scenarios {
        let mut agent = ReferenceAgent::for_scenario(s);
        let outcomes = actix_rt::System::new()
            .block_on(run_scenarios(
                &mut agent,
                &registry,
                std::slice::from_ref(s),
                ActionMode::Directives,
                seed,
            ))
            .unwrap();
        write_outcome(dir.path(), &outcomes[0]).unwrap();
    }
    let files = files_below(dir.path(), dir.path());
    (dir, files)
}

#[test]
fn run_files_are_byte_identical_for_the_same_seed() {
    let (_a, first) = write_run(77);
    let (_b, second) = write_run(77);
    assert_eq!(first, second);
    let names: Vec<String> = first.iter().map(|(p, _)| p.display().to_string()).collect();
    assert!(
        names.contains(&"pay-request/trial-0/audit.jsonl".to_owned()),
        "{names:?}"
    );
    assert!(names.contains(&"pay-request/outcome.json".to_owned()));
    assert!(names.contains(&"fee-and-split/trial-2/grade.json".to_owned()));
    let (_c, other) = write_run(78);
    assert_ne!(first, other);
}
