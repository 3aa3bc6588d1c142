//! How a membench run counts failures (docs/judge.md, "How failures are counted"): a fake target
//! that fails some questions (HTTP 500, no answer in time) and a recall, and a fake judge model
//! that fails some verdicts (HTTP 500, unreadable noise), over the small fixtures.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use protocol::headers::{MEMORY_WRITE, MEMORY_WRITE_OFF};
use protocol::openai::ChatCompletionRequest;
use serde_json::{Value, json};

use super::dataset::fixtures::fixture;
use super::dataset::{DatasetKind, load};
use super::ingest::Protocol;
use super::results::{MembenchResults, Outcome, QuestionResult};
use super::runner::{MembenchCapabilities, MembenchConfig, RunContext, run, select};
use crate::endpoint::{Capabilities, Credentials, FailureKind, TargetClient, TargetSettings};
use crate::suites::model_judge::{ModelJudge, PARSE_RETRIES};

/// The fake target's per-request timeout; the slow answer takes far longer.
const TIMEOUT_MS: u64 = 300;

fn completion(text: &str) -> HttpResponse {
    HttpResponse::Ok().json(json!({
        "id": "x", "object": "chat.completion", "created": 0, "model": "fake",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
    }))
}

fn last_text(body: &ChatCompletionRequest) -> String {
    body.messages
        .last()
        .and_then(|m| m.text_content())
        .unwrap_or_default()
}

/// What each kind of question gets from the fake target, by the words it contains.
async fn target_chat(req: HttpRequest, body: web::Json<ChatCompletionRequest>) -> HttpResponse {
    let asked = req
        .headers()
        .get(MEMORY_WRITE)
        .is_some_and(|v| v == MEMORY_WRITE_OFF);
    if !asked {
        return completion("Noted.");
    }
    let text = last_text(&body);
    if text.contains("first sunrise") || text.contains("degree") {
        return HttpResponse::InternalServerError().json(json!({"error": {"message": "boom", "type": "server_error", "param": null, "code": null}}));
    }
    if text.contains("What has Ana painted") || text.contains("plants") {
        actix_rt::time::sleep(Duration::from_millis(TIMEOUT_MS * 10)).await;
        return completion("too late");
    }
    let reply = if text.contains("art class") {
        "Yes; she paints"
    } else if text.contains("sister") {
        "Lisbon"
    } else if text.contains("dog") {
        "Pixel"
    } else if text.contains("marathon") {
        "Boston"
    } else if text.contains("cat") {
        "You never mentioned a cat."
    } else {
        "(a)"
    };
    completion(reply)
}

async fn target_recall(body: web::Json<Value>) -> HttpResponse {
    if body["text"].as_str().is_some_and(|t| t.contains("dog")) {
        return HttpResponse::InternalServerError().finish();
    }
    HttpResponse::Ok().json(json!({"items": []}))
}

/// The fake judge model: the verdict it gives depends on the question in its prompt.
async fn judge_chat(
    body: web::Json<ChatCompletionRequest>,
    seen: web::Data<Mutex<Vec<String>>>,
) -> HttpResponse {
    let prompt = body
        .messages
        .first()
        .and_then(|m| m.text_content())
        .unwrap_or_default();
    seen.lock().unwrap().push(prompt.clone());
    if prompt.contains("art class") || prompt.contains("name of my cat") {
        return HttpResponse::InternalServerError().finish();
    }
    if prompt.contains("sister") {
        return completion("%%% banana ### 42");
    }
    if prompt.contains("marathon") {
        return completion(r#"{"label": "WRONG"}"#);
    }
    if prompt.contains("Answer yes or no only.") {
        return completion("yes");
    }
    completion(r#"It matches. {"label": "CORRECT"}"#)
}

/// Serves the fake target and the fake judge; returns their URLs and what the judge was asked.
fn servers() -> (String, String, Arc<Mutex<Vec<String>>>) {
    let target = HttpServer::new(|| {
        App::new()
            .route("/v1/chat/completions", web::post().to(target_chat))
            .route("/control/memory/recall", web::post().to(target_recall))
    })
    .workers(1)
    .disable_signals()
    .bind(("127.0.0.1", 0))
    .unwrap();
    let target_url = format!("http://{}", target.addrs()[0]);
    actix_rt::spawn(target.run());
    let seen = web::Data::new(Mutex::new(Vec::new()));
    let judged = seen.clone().into_inner();
    let judge = HttpServer::new(move || {
        App::new()
            .app_data(seen.clone())
            .route("/v1/chat/completions", web::post().to(judge_chat))
    })
    .workers(1)
    .disable_signals()
    .bind(("127.0.0.1", 0))
    .unwrap();
    let judge_url = format!("http://{}", judge.addrs()[0]);
    actix_rt::spawn(judge.run());
    (target_url, judge_url, judged)
}

fn config(dataset: DatasetKind) -> MembenchConfig {
    MembenchConfig {
        dataset,
        protocol: Protocol::Chat,
        api: crate::endpoint::Api::Chat,
        seed: 3,
        concurrency: 1,
        only: Vec::new(),
        exclude: Vec::new(),
        limit_conversations: None,
        limit_sessions: None,
        limit_questions: None,
        context_tokens: 1000,
        session_prefix: "acct".to_owned(),
    }
}

/// `recall` doubles as the reset capability: the fake target claims both, and serves no reset.
fn capabilities(recall: bool) -> MembenchCapabilities {
    MembenchCapabilities {
        base: Capabilities {
            models: None,
            model: "fake".to_owned(),
            chat: Some(true),
            responses: None,
            a2a: None,
            agent_card: None,
            reset: recall,
            inject: false,
            memory_view: false,
            mock_time: true,
            notes: Vec::new(),
        },
        recall,
        read_only_questions: true,
        notes: Vec::new(),
    }
}

async fn run_against_fakes(
    dataset: DatasetKind,
    file: &str,
    recall: bool,
) -> (MembenchResults, Vec<String>) {
    let (target_url, judge_url, judged) = servers();
    let mut settings = TargetSettings::new(target_url);
    settings.timeout_ms = TIMEOUT_MS;
    let mut client = TargetClient::new(settings, Credentials::default());
    client.set_model("fake".to_owned());
    let mut judge_client =
        TargetClient::new(TargetSettings::new(judge_url), Credentials::default());
    judge_client.set_model("judge-model".to_owned());
    let config = config(dataset);
    let judge = ModelJudge::prompt_only(judge_client, config.seed);
    let capabilities = capabilities(recall);
    let data = load(dataset, &fixture(file)).unwrap();
    let conversations = select(&data, &config);
    let context = RunContext {
        client: &client,
        judge: Some(&judge),
        config: &config,
        capabilities: &capabilities,
    };
    let results = run(&context, &conversations, &|_| {}).await;
    let prompts = judged.lock().unwrap().clone();
    (results, prompts)
}

fn question<'a>(results: &'a MembenchResults, words: &str) -> &'a QuestionResult {
    results
        .questions
        .iter()
        .find(|q| q.asked.contains(words))
        .unwrap_or_else(|| panic!("no question with {words:?}"))
}

#[actix_rt::test]
async fn locomo_counts_target_failures_against_it_and_judge_failures_apart() {
    let (results, prompts) =
        run_against_fakes(DatasetKind::Locomo, "locomo_small.json", true).await;

    // HTTP 500 from the target: a failed question, classified, F1 0 and J 0.
    let q = question(&results, "first sunrise");
    let failure = q.failure.as_ref().expect("classified");
    assert_eq!(
        (failure.kind, failure.status),
        (FailureKind::AgentError, Some(500))
    );
    assert_eq!(q.outcome(), Outcome::Failed(FailureKind::AgentError));
    assert_eq!((q.score, q.judge_score), (Some(0.0), Some(0.0)));

    // No answer in time: a failed question, classified `timeout`.
    let q = question(&results, "What has Ana painted");
    assert_eq!(q.failure.as_ref().unwrap().kind, FailureKind::Timeout);
    assert_eq!(q.outcome(), Outcome::Failed(FailureKind::Timeout));
    assert_eq!((q.score, q.judge_score), (Some(0.0), Some(0.0)));

    // The judge model answered 500: F1 stands, J leaves it out, the failure is a judge_error.
    let q = question(&results, "art class");
    assert_eq!(q.outcome(), Outcome::Answered);
    assert!(q.score.is_some_and(|s| s > 0.0), "{:?}", q.score);
    assert_eq!(
        q.judge_failure.as_ref().unwrap().kind,
        FailureKind::JudgeError
    );
    assert_eq!((q.judge.as_ref(), q.judge_score), (None, None));

    // Noise from the judge model: asked again, then a judge_error, never "wrong".
    let q = question(&results, "sister");
    let failure = q
        .judge_failure
        .as_ref()
        .expect("unreadable is a judge_error");
    assert_eq!(failure.kind, FailureKind::JudgeError);
    assert!(
        failure.message.contains("unusable answer"),
        "{}",
        failure.message
    );
    assert_eq!((q.judge.as_ref(), q.judge_score), (None, None));
    assert_eq!(
        prompts.iter().filter(|p| p.contains("sister")).count(),
        1 + PARSE_RETRIES,
        "the unreadable verdict is asked again"
    );

    // Readable verdicts count, both ways; the target's failed recall is recall 0, counted.
    let q = question(&results, "dog");
    assert_eq!(q.judge_score, Some(1.0));
    assert_eq!(
        q.recall_failure.as_ref().unwrap().kind,
        FailureKind::AgentError
    );
    assert!(q.agent_recall.as_ref().unwrap().values().all(|r| *r == 0.0));
    assert_eq!(question(&results, "marathon").judge_score, Some(0.0));
    // Category 5 is not judged.
    assert_eq!(question(&results, "canoe").judge_score, None);

    // The questions the target failed never reached the judge.
    assert!(!prompts.iter().any(|p| p.contains("first sunrise")));

    let all = &results.summary.overall;
    assert_eq!(all.questions, 7);
    assert_eq!((all.answered, all.failed, all.excluded), (5, 2, 0));
    assert_eq!(all.answered + all.failed + all.excluded, all.questions);
    assert_eq!(all.failures.get("agent_error"), Some(&1));
    assert_eq!(all.failures.get("timeout"), Some(&1));
    assert_eq!((all.judged, all.judge_errors), (4, 2));
    // J: the dog (correct) over the two failed questions, the dog and the marathon.
    assert_eq!(all.judge_accuracy, Some(0.25));
    assert_eq!(all.recall_failures, 1);
    // F1's mean holds every question, the failed ones as 0.
    let scores: Vec<f64> = results.questions.iter().filter_map(|q| q.score).collect();
    assert_eq!(scores.len(), 7);
    for c in &results.summary.categories {
        assert_eq!(
            c.answered + c.failed + c.excluded,
            c.questions,
            "{}",
            c.name
        );
    }
    // The reset before each conversation's ingestion failed (404): kept, classified, counted.
    for ingestion in results.ingestion.values() {
        assert!(
            ingestion.errors[0].starts_with("reset: agent_error"),
            "{:?}",
            ingestion.errors
        );
    }
    assert_eq!(results.summary.speed.failed_requests, 2 + 2 + 1);
}

#[actix_rt::test]
async fn longmemeval_leaves_a_failed_verdict_out_of_the_score_and_counts_it() {
    let (results, _) =
        run_against_fakes(DatasetKind::Longmemeval, "longmemeval_small.json", false).await;

    // The target's 500 and its timeout: accuracy 0, counted against it.
    let q = question(&results, "degree");
    assert_eq!(q.outcome(), Outcome::Failed(FailureKind::AgentError));
    assert_eq!(q.score, Some(0.0));
    let q = question(&results, "plants");
    assert_eq!(q.outcome(), Outcome::Failed(FailureKind::Timeout));
    assert_eq!(q.score, Some(0.0));
    // The judge's 500: no verdict, so no score; excluded and counted.
    let q = question(&results, "cat");
    assert_eq!(q.outcome(), Outcome::Excluded(FailureKind::JudgeError));
    assert_eq!(q.score, None);

    let all = &results.summary.overall;
    assert_eq!(all.questions, 3);
    assert_eq!((all.answered, all.failed, all.excluded), (0, 2, 1));
    assert_eq!(all.failures.get("judge_error"), Some(&1));
    assert_eq!(all.judge_errors, 1);
    assert_eq!(
        all.score,
        Some(0.0),
        "the mean over the two failed questions"
    );
}
