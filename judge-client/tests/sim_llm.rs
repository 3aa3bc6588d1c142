//! The LLM user simulator and the LLM judge against fake OpenAI-compatible models (actix-web on
//! 127.0.0.1:0): the prompts they send, stop tokens, rubric parsing, and pairwise preference with
//! position swapping in an A/B run.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{App, HttpResponse, HttpServer, web};
use judge_client::endpoint::{Credentials, TargetSettings};
use judge_client::suites::sim::ab::run_ab;
use judge_client::suites::sim::injection::InjectionPlan;
use judge_client::suites::sim::persona::{select, shipped};
use judge_client::suites::sim::ratings::Preference;
use judge_client::suites::sim::{SimRunConfig, SimSettings, SimulatorSpec, run_sim};
use protocol::openai::ChatCompletionRequest;
use serde_json::json;

type Brain = fn(&ChatCompletionRequest, usize) -> String;

struct Model {
    url: String,
    requests: Arc<Mutex<Vec<ChatCompletionRequest>>>,
}

async fn model(brain: Brain) -> Model {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    let server = HttpServer::new(move || {
        let seen = seen.clone();
        App::new()
            .route(
                "/v1/models",
                web::get().to(|| async {
                    HttpResponse::Ok().json(json!({"object": "list", "data": [{"id": "fake-llm", "object": "model", "created": 0, "owned_by": "t"}]}))
                }),
            )
            .route(
                "/v1/chat/completions",
                web::post().to(move |body: web::Json<ChatCompletionRequest>| {
                    let seen = seen.clone();
                    async move {
                        let n = {
                            let mut all = seen.lock().unwrap();
                            all.push(body.0.clone());
                            all.len()
                        };
                        let text = brain(&body.0, n);
                        HttpResponse::Ok().json(json!({
                            "id": "x", "object": "chat.completion", "created": 0, "model": "fake-llm",
                            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]
                        }))
                    }
                }),
            )
    })
    .workers(1)
    .disable_signals()
    .bind(("127.0.0.1", 0))
    .unwrap();
    let addr = server.addrs()[0];
    actix_rt::spawn(server.run());
    Model {
        url: format!("http://{addr}"),
        requests,
    }
}

fn last_text(request: &ChatCompletionRequest) -> String {
    request
        .messages
        .last()
        .and_then(|m| m.text_content())
        .unwrap_or_default()
}

fn config(target: &str, ids: &[&str], rounds: usize, simulator: SimulatorSpec) -> SimRunConfig {
    SimRunConfig {
        settings: SimSettings {
            seed: 21,
            rounds,
            trials: 1,
            single_turn: false,
            stop_token: "[END]".to_owned(),
            concurrency: 2,
            start: "2026-01-05T09:00:00Z".parse().unwrap(),
            max_reply_chars: 2000,
            keep_unfaithful_simulator: false,
            api: Default::default(),
            history: Default::default(),
        },
        target: TargetSettings::new(target),
        credentials: Credentials::default(),
        personas: select(
            shipped().unwrap(),
            &ids.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
        .unwrap(),
        simulator,
        judge: None,
        injection: InjectionPlan::none(),
        record: false,
    }
}

/// Plays Gus: greets, reveals his boat when told the agent does not know, then leaves.
fn gus(request: &ChatCompletionRequest, _: usize) -> String {
    let turns = request.messages.len();
    match turns {
        // System prompt and the opening cue.
        2 => "Hello. Keep track of my boat.".to_owned(),
        _ if last_text(request).contains("don't know") => "My boat name is Saltwind.".to_owned(),
        _ if turns < 7 => "What is my boat name?".to_owned(),
        _ => "That will do. [END]".to_owned(),
    }
}

#[actix_rt::test]
async fn the_llm_user_plays_the_persona_from_a_trait_conditioned_prompt_and_stops_on_the_token() {
    let target = common::amnesiac().await;
    let user = model(gus).await;
    let dir = tempfile::tempdir().unwrap();
    let simulator = SimulatorSpec::Llm {
        settings: TargetSettings::new(&user.url),
        credentials: Credentials::default(),
    };
    let cfg = config(&target.url, &["gus"], 15, simulator);
    let outcome = actix_rt::time::timeout(Duration::from_secs(20), run_sim(&cfg, dir.path()))
        .await
        .unwrap()
        .unwrap();
    let c = &outcome.conversations[0];
    assert_eq!(c.simulator, "llm");
    assert_eq!(c.stop_reason, "stop_token");
    let users: Vec<&str> = c.rounds.iter().map(|r| r.user.as_str()).collect();
    assert_eq!(users[0], "Hello. Keep track of my boat.");
    assert_eq!(users.last().copied(), Some("That will do. [END]"));
    assert!(users.contains(&"What is my boat name?"));
    let requests = user.requests.lock().unwrap().clone();
    assert_eq!(
        requests.len(),
        c.rounds.len(),
        "one model call per user turn"
    );
    let system = requests[0].messages[0].text_content().unwrap();
    assert!(system.contains("Gus Halvorsen") && system.contains("openness low (0.20)"));
    assert!(system.contains("only when asked") && system.contains("[END]"));
    assert_eq!(requests[0].temperature, Some(0.0));
    assert_eq!(requests[0].seed, Some(21));
    // Roles are swapped: the agent's replies reach the model as `user` messages.
    let second = &requests[1].messages;
    assert_eq!(
        second[1].text_content().as_deref(),
        Some("Hello. Keep track of my boat.")
    );
    assert_eq!(format!("{:?}", second[1].role), "Assistant");
    assert_eq!(format!("{:?}", second[2].role), "User");
    assert!(!outcome.results.conversations[0].checks.goal_reached);
}

/// A judge biased to whatever is shown first.
fn biased(request: &ChatCompletionRequest, _: usize) -> String {
    if last_text(request).contains("Conversation 1:") {
        "1".to_owned()
    } else {
        r#"Scores: {"persona_consistency": 5, "coherence": 3, "instruction_following": 1}"#
            .to_owned()
    }
}

/// A judge that prefers the conversation in which the assistant said "Noted." (the amnesiac
/// target acknowledges; the stub only says hello), whichever position it is in.
fn fair(request: &ChatCompletionRequest, _: usize) -> String {
    let text = last_text(request);
    let Some(start) = text.find("Conversation 1:") else {
        return "not JSON at all".to_owned();
    };
    let second = text.find("Conversation 2:").unwrap();
    if text[start..second].contains("Noted.") {
        "1"
    } else {
        "2"
    }
    .to_owned()
}

#[actix_rt::test]
async fn pairwise_preference_swaps_positions_so_a_biased_judge_yields_ties_and_a_fair_one_a_winner()
{
    let a = common::amnesiac().await;
    let b = common::stub().await;
    for (brain, expected, consistent) in [
        (biased as Brain, Preference::Tie, false),
        (fair as Brain, Preference::A, true),
    ] {
        let judge = model(brain).await;
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(&a.url, &["maya", "gus", "lena"], 4, SimulatorSpec::Scripted);
        cfg.judge = Some((TargetSettings::new(&judge.url), Credentials::default()));
        let outcome = run_ab(
            &cfg,
            TargetSettings::new(&b.url),
            Credentials::default(),
            dir.path(),
        )
        .await
        .unwrap();
        let r = &outcome.results;
        assert_eq!(r.pairs.len(), 3);
        for pair in &r.pairs {
            assert_eq!(pair.decided_by, "llm_judge");
            assert_eq!(pair.preference, expected);
            let verdict = pair.verdict.as_ref().unwrap();
            assert_eq!(verdict.position_consistent, consistent);
        }
        assert_eq!(r.position_inconsistent, if consistent { 0 } else { 3 });
        // Two judge calls per pair (both orders) plus one rubric call per conversation; the
        // fair judge's rubric answers are not JSON, so each is asked again twice.
        let rubric_calls = if consistent { 6 * 3 } else { 6 };
        assert_eq!(judge.requests.lock().unwrap().len(), 3 * 2 + rubric_calls);
        let rubric = &outcome.a.results.conversations[0];
        if consistent {
            // The fair judge's rubric answer is not JSON: a judge_error, reported, not a score.
            assert!(rubric.rubric.is_none());
            assert_eq!(
                rubric.rubric_failure.as_ref().unwrap().kind.as_str(),
                "judge_error"
            );
            assert_eq!(r.test.wins_a, 3);
        } else {
            let scores = rubric.rubric.as_ref().unwrap();
            assert_eq!(
                (
                    scores.persona_consistency,
                    scores.coherence,
                    scores.instruction_following
                ),
                (1.0, 0.5, 0.0)
            );
            assert_eq!(r.test.ties, 3);
            assert_eq!(r.test.sign_test_p, 1.0);
        }
    }
}

/// A user simulator that says the same thing every round, as small models do.
fn parrot(request: &ChatCompletionRequest, _: usize) -> String {
    if request.messages.len() > 8 {
        "Bye. [END]".to_owned()
    } else {
        "I really want to talk about my lovely boat today.".to_owned()
    }
}

#[actix_rt::test]
async fn a_simulated_user_that_breaks_its_role_is_flagged_and_left_out_of_the_scores() {
    let target = common::amnesiac().await;
    let user = model(parrot).await;
    let simulator = SimulatorSpec::Llm {
        settings: TargetSettings::new(&user.url),
        credentials: Credentials::default(),
    };
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&target.url, &["gus"], 6, simulator.clone());
    let outcome = actix_rt::time::timeout(Duration::from_secs(20), run_sim(&cfg, dir.path()))
        .await
        .unwrap()
        .unwrap();
    let result = &outcome.results.conversations[0];
    assert!(!result.user_fidelity.held, "{result:?}");
    assert_eq!(
        result.user_fidelity.breaches[0].rule,
        judge_client::suites::sim::fidelity::Rule::RepeatsEarlierTurn
    );
    assert_eq!(result.excluded.as_deref(), Some("simulator_broke_role"));
    let summary = &outcome.results.summary;
    // Nothing is left to score: not applicable, never 0.
    assert_eq!(summary.scored_conversations, 0);
    assert_eq!(summary.goal_rate, None);
    assert_eq!(summary.mean_score, None);
    assert_eq!(summary.excluded.get("simulator_broke_role"), Some(&1));
    assert_eq!(
        summary.simulator_breaches.get("repeats_earlier_turn"),
        Some(&1)
    );

    // Kept on request: flagged still, and scored (0: the amnesiac target reaches no goal).
    let mut keep = config(&target.url, &["gus"], 6, simulator);
    keep.settings.keep_unfaithful_simulator = true;
    let dir = tempfile::tempdir().unwrap();
    let kept = run_sim(&keep, dir.path()).await.unwrap();
    let result = &kept.results.conversations[0];
    assert!(!result.user_fidelity.held);
    assert_eq!(result.excluded, None);
    assert_eq!(kept.results.summary.goal_rate, Some(0.0));
}

#[actix_rt::test]
async fn a_conversation_stopped_by_the_judges_own_simulator_is_not_the_agents_failure() {
    let target = common::amnesiac().await;
    // The user simulator's endpoint is down: every user turn is a judge error.
    let mut settings = TargetSettings::new(format!(
        "http://127.0.0.1:{}",
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    ));
    settings.retry.max_retries = 0;
    let simulator = SimulatorSpec::Llm {
        settings,
        credentials: Credentials::default(),
    };
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&target.url, &["gus", "maya"], 4, simulator);
    let outcome = actix_rt::time::timeout(Duration::from_secs(30), run_sim(&cfg, dir.path()))
        .await
        .unwrap()
        .unwrap();
    for c in &outcome.results.conversations {
        assert_eq!(c.stop_reason, "judge_error", "{c:?}");
        assert_eq!(c.excluded.as_deref(), Some("judge_error"));
    }
    let summary = &outcome.results.summary;
    assert_eq!(summary.conversations, 2);
    assert_eq!(summary.scored_conversations, 0);
    assert_eq!(summary.excluded.get("judge_error"), Some(&2));
    assert_eq!(
        summary.goal_rate, None,
        "judge errors are never scored as 0"
    );
    assert_eq!(summary.mean_score, None);
    // The logs still say why each conversation stopped.
    let log = std::fs::read_to_string(dir.path().join("logs/session-0001.log")).unwrap();
    assert!(log.contains("judge_error"), "{log}");
}

/// A judge that never answers in the asked form.
fn garbage(_: &ChatCompletionRequest, _: usize) -> String {
    "Well, it depends on how you look at it.".to_owned()
}

/// A judge that wraps its first answer to each question in prose, then corrects it when told.
fn corrects_itself(request: &ChatCompletionRequest, _: usize) -> String {
    let told = last_text(request).contains("cannot be used");
    let question = request.messages[1].text_content().unwrap_or_default();
    match (question.contains("Conversation 1:"), told) {
        (_, false) => "Let me think about it.".to_owned(),
        (true, true) => "1".to_owned(),
        (false, true) => {
            r#"{"persona_consistency": 4, "coherence": 4, "instruction_following": 4}"#.to_owned()
        }
    }
}

#[actix_rt::test]
async fn a_judge_whose_answers_stay_unusable_is_a_judge_error_left_out_of_scores_and_statistics() {
    let a = common::amnesiac().await;
    let b = common::stub().await;
    let judge = model(garbage).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&a.url, &["maya", "gus", "lena"], 4, SimulatorSpec::Scripted);
    cfg.judge = Some((TargetSettings::new(&judge.url), Credentials::default()));
    let outcome = run_ab(
        &cfg,
        TargetSettings::new(&b.url),
        Credentials::default(),
        dir.path(),
    )
    .await
    .unwrap();
    // Every question is asked three times (the answer and two retries), then given up on.
    assert_eq!(judge.requests.lock().unwrap().len(), (3 + 6) * 3);
    let retry = judge.requests.lock().unwrap()[1].clone();
    assert!(
        last_text(&retry).contains("cannot be used"),
        "a retry says why: {retry:?}"
    );
    let r = &outcome.results;
    assert_eq!(r.pairs.len(), 3, "the pairs are listed");
    for pair in &r.pairs {
        assert_eq!(pair.decided_by, "judge_error");
        let failure = pair.judge_failure.as_ref().unwrap();
        assert_eq!(failure.kind.as_str(), "judge_error");
        assert!(failure.message.contains("after 3 attempts"), "{failure:?}");
    }
    assert_eq!(r.judge_error_pairs, 3);
    assert_eq!(r.test.pairs, 0, "no judge failure reaches the paired test");
    assert_eq!(r.test.mean_difference, None);
    for side in [&outcome.a.results, &outcome.b.results] {
        assert_eq!(side.summary.rubric_judge_errors, 3);
        assert_eq!(side.summary.mean_rubric, None, "never a 0");
        // The agent's own scores do not depend on its judge.
        assert_eq!(side.summary.scored_conversations, 3);
        assert!(side.summary.goal_rate.is_some());
    }
    let report = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(report.contains("left out: judge_error"), "{report}");
    let run_report = std::fs::read_to_string(dir.path().join("a/report.html")).unwrap();
    assert!(run_report.contains("could not judge 3 conversation(s) (judge_error)"));
}

#[actix_rt::test]
async fn a_judge_that_corrects_its_answer_when_told_why_is_read_on_the_retry() {
    let a = common::amnesiac().await;
    let b = common::stub().await;
    let judge = model(corrects_itself).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&a.url, &["maya"], 4, SimulatorSpec::Scripted);
    cfg.judge = Some((TargetSettings::new(&judge.url), Credentials::default()));
    let outcome = run_ab(
        &cfg,
        TargetSettings::new(&b.url),
        Credentials::default(),
        dir.path(),
    )
    .await
    .unwrap();
    assert_eq!(judge.requests.lock().unwrap().len(), (2 + 2) * 2);
    let r = &outcome.results;
    assert_eq!(r.judge_error_pairs, 0);
    assert_eq!(r.pairs[0].decided_by, "llm_judge");
    let rubric = outcome.a.results.summary.mean_rubric.as_ref().unwrap();
    assert_eq!(rubric.coherence, 0.75);
    assert_eq!(outcome.a.results.summary.rubric_judge_errors, 0);
}
