//! Agent injection against a fake `agentworld` endpoint (actix-web on 127.0.0.1:0) that answers,
//! hangs, rate-limits, sends garbage or is down; the agent under test is the fake `amnesiac`
//! target. Checks the failure handling of docs/contracts/agent-injection.md, the breaker, the caps, redaction on the bytes
//! sent, determinism of requests, record and replay, and that every turn is accounted for.

mod common;

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::dev::ServerHandle;
use actix_web::{App, HttpResponse, HttpServer, web};
use judge_client::endpoint::{Credentials, FailureKind, TargetSettings};
use judge_client::suites::sim::injection::config::ConfigFile;
use judge_client::suites::sim::injection::fixtures::FixtureFile;
use judge_client::suites::sim::injection::schema::AgentWorldRequest;
use judge_client::suites::sim::injection::{FallbackStrategy, InjectionPlan};
use judge_client::suites::sim::persona::{self, Persona};
use judge_client::suites::sim::runner::UserSource;
use judge_client::suites::sim::transcript::parse_transcript;
use judge_client::suites::sim::{SimOutcome, SimRunConfig, SimSettings, SimulatorSpec, run_sim};
use serde_json::json;

/// What the fake endpoint does with the next request.
#[derive(Debug, Clone)]
enum Act {
    Say(&'static str),
    Hang(Duration),
    TooMany(&'static str),
    ServerError,
    Garbage,
    ErrorObject(&'static str),
    NoText,
}

struct EndpointState {
    script: Mutex<VecDeque<Act>>,
    /// What to say once the script is used up.
    default: &'static str,
    bodies: Mutex<Vec<Vec<u8>>>,
    arrivals: Mutex<Vec<Instant>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    delay: Duration,
}

struct FakeEndpoint {
    url: String,
    state: Arc<EndpointState>,
    handle: ServerHandle,
}

impl FakeEndpoint {
    fn bodies(&self) -> Vec<Vec<u8>> {
        self.state.bodies.lock().unwrap().clone()
    }
}

async fn respond(body: web::Bytes, state: web::Data<EndpointState>) -> HttpResponse {
    state.bodies.lock().unwrap().push(body.to_vec());
    state.arrivals.lock().unwrap().push(Instant::now());
    let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    state.max_in_flight.fetch_max(now, Ordering::SeqCst);
    if !state.delay.is_zero() {
        actix_rt::time::sleep(state.delay).await;
    }
    let act = state
        .script
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or(Act::Say(state.default));
    let response = match act {
        Act::Say(text) => HttpResponse::Ok().json(json!({
            "response_text": text, "confidence": 0.9, "latency_ms": 1,
            "debug": {"model": "fake", "temperature": 0.0, "tool_calls_count": 0}
        })),
        Act::Hang(d) => {
            actix_rt::time::sleep(d).await;
            HttpResponse::Ok().json(json!({"response_text": "too late"}))
        }
        Act::TooMany(retry_after) => HttpResponse::TooManyRequests()
            .insert_header(("Retry-After", retry_after))
            .json(json!({"error": {"code": "RATE_LIMITED", "message": "slow down"}})),
        Act::ServerError => HttpResponse::ServiceUnavailable().body("down for maintenance"),
        Act::Garbage => HttpResponse::Ok()
            .content_type("application/json")
            .body("<html>not json"),
        Act::ErrorObject(code) => {
            HttpResponse::Ok().json(json!({"error": {"code": code, "message": "it broke"}}))
        }
        Act::NoText => HttpResponse::Ok().json(json!({"explanation": "nothing to say"})),
    };
    state.in_flight.fetch_sub(1, Ordering::SeqCst);
    response
}

async fn endpoint(script: Vec<Act>, default: &'static str, delay: Duration) -> FakeEndpoint {
    let state = Arc::new(EndpointState {
        script: Mutex::new(script.into()),
        default,
        bodies: Mutex::new(Vec::new()),
        arrivals: Mutex::new(Vec::new()),
        in_flight: AtomicUsize::new(0),
        max_in_flight: AtomicUsize::new(0),
        delay,
    });
    let data = web::Data::from(state.clone());
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .route("/respond", web::post().to(respond))
    })
    .workers(2)
    .disable_signals()
    .bind(("127.0.0.1", 0))
    .unwrap();
    let addr = server.addrs()[0];
    let server = server.run();
    let handle = server.handle();
    actix_rt::spawn(server);
    FakeEndpoint {
        url: format!("http://{addr}/respond"),
        state,
        handle,
    }
}

/// A URL nothing listens on.
fn down_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/respond")
}

struct Injection<'a> {
    url: &'a str,
    timeout_seconds: f64,
    fallback: &'a str,
    breaker: (u32, f64, u32),
    inflight: usize,
    qps: u32,
    tier: &'a str,
    redact: bool,
}

impl Default for Injection<'_> {
    fn default() -> Self {
        Self {
            url: "",
            timeout_seconds: 0.3,
            fallback: "simulated_agent",
            breaker: (5, 30.0, 2),
            inflight: 10,
            qps: 100,
            tier: "basic",
            redact: true,
        }
    }
}

/// The injection plan from a configuration file in the shape of docs/contracts/agent-injection.md, for persona `agent_id`.
fn plan(agent_id: &str, i: &Injection<'_>) -> InjectionPlan {
    let yaml = format!(
        r#"
simulation:
  name: injection test
  agent_injection:
    endpoints:
      - agent_id: {agent_id}
        url: "{url}"
        timeout_seconds: {timeout}
        privacy_tier: {tier}
    circuit_breaker:
      failure_threshold: {ft}
      half_open_probe_interval_seconds: {open}
      success_threshold: {st}
    concurrency:
      max_inflight_per_endpoint: {inflight}
      qps_cap: {qps}
    fallback:
      strategy: {fallback}
    rate_limit:
      max_retries: 2
      base_backoff_ms: 10
  injection:
    privacy_tier: basic
    send_persona_details_externally: true
    redact_pii_patterns: {redact}
"#,
        url = i.url,
        timeout = i.timeout_seconds,
        tier = i.tier,
        ft = i.breaker.0,
        open = i.breaker.1,
        st = i.breaker.2,
        inflight = i.inflight,
        qps = i.qps,
        fallback = i.fallback,
        redact = i.redact,
    );
    ConfigFile::parse("test", &yaml)
        .unwrap()
        .plan(|_| None)
        .unwrap()
}

fn personas(ids: &[&str]) -> Vec<Persona> {
    persona::select(
        persona::shipped().unwrap(),
        &ids.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
    )
    .unwrap()
}

fn config(
    target: &str,
    personas: Vec<Persona>,
    rounds: usize,
    injection: InjectionPlan,
) -> SimRunConfig {
    SimRunConfig {
        settings: SimSettings {
            seed: 11,
            rounds,
            trials: 1,
            single_turn: false,
            stop_token: "[END]".to_owned(),
            concurrency: 4,
            start: "2026-01-05T09:00:00Z".parse().unwrap(),
            max_reply_chars: 2000,
            keep_unfaithful_simulator: false,
            api: Default::default(),
            history: Default::default(),
        },
        target: TargetSettings {
            timeout_ms: 5_000,
            ..TargetSettings::new(target)
        },
        credentials: Credentials::default(),
        personas,
        simulator: SimulatorSpec::Scripted,
        judge: None,
        injection,
        record: false,
    }
}

/// Runs with an overall deadline: nothing may hang.
async fn run(config: &SimRunConfig, dir: &Path) -> SimOutcome {
    actix_rt::time::timeout(Duration::from_secs(30), run_sim(config, dir))
        .await
        .expect("the simulation finished in time")
        .expect("the simulation ran")
}

/// Every round has a user turn from exactly one source, fallbacks are marked, and the target got
/// exactly the turns marked as sent (`target_chats` = chats during the run less the probe's).
fn assert_accounted(outcome: &SimOutcome, target_chats: usize) {
    let mut sent = 0;
    for c in &outcome.conversations {
        assert_eq!(c.rounds.len(), c.max_turns.min(c.rounds.len()));
        for (i, r) in c.rounds.iter().enumerate() {
            assert_eq!(r.index, i, "rounds are numbered without gaps");
            assert_eq!(r.fallback.is_some(), r.user_source == UserSource::Fallback);
            assert_eq!(r.sent, r.agent.is_some() || r.agent_failure.is_some());
            sent += usize::from(r.sent);
        }
    }
    assert_eq!(target_chats, sent);
}

#[actix_rt::test]
async fn timeouts_fall_back_to_the_simulated_persona_and_are_marked_and_excluded() {
    let target = common::amnesiac().await;
    let fake = endpoint(
        vec![
            Act::Say("Hello, I am Maya and I am planning a trip."),
            Act::Hang(Duration::from_secs(3)),
            Act::Hang(Duration::from_secs(3)),
        ],
        "Tell me more about that.",
        Duration::ZERO,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let injection = plan(
        "maya",
        &Injection {
            url: &fake.url,
            ..Injection::default()
        },
    );
    let cfg = config(&target.url, personas(&["maya"]), 6, injection);
    let started = Instant::now();
    let outcome = run(&cfg, dir.path()).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "timeouts cut the hangs short"
    );
    let c = &outcome.conversations[0];
    assert_eq!(c.rounds.len(), 6);
    assert_eq!(c.stop_reason, "max_turns");
    let sources: Vec<UserSource> = c.rounds.iter().map(|r| r.user_source).collect();
    use UserSource::{Fallback, Injected};
    assert_eq!(
        sources,
        [Injected, Fallback, Fallback, Injected, Injected, Injected]
    );
    for r in &c.rounds[1..3] {
        let mark = r.fallback.as_ref().unwrap();
        assert_eq!(mark.kind, FailureKind::Timeout);
        assert_eq!(mark.strategy, FallbackStrategy::SimulatedAgent);
        // The simulated persona took the turn, and it was sent to the target.
        assert!(r.sent && !r.user.is_empty() && r.user != "too late");
    }
    let checks = outcome.results.conversations[0].injected.clone().unwrap();
    assert_eq!((checks.scored_turns, checks.fallback_turns), (4, 2));
    // Its own turns: one greeting and three identical lines: two repeats out of four.
    assert_eq!(checks.repeated, 2);
    assert_eq!(checks.score, Some(0.5));
    let m = &outcome.metrics[0];
    assert_eq!((m.calls, m.timeouts, m.successes), (6, 2, 4));
    assert!((m.timeout_rate - 2.0 / 6.0).abs() < 1e-9);
    assert!(m.latency_p50_ms.is_some() && m.latency_p99_ms.is_some());
    assert_eq!(m.circuit_state, "CLOSED");
    let text =
        std::fs::read_to_string(dir.path().join("transcripts/conversation-0001.json")).unwrap();
    let parsed = parse_transcript(&text).unwrap();
    assert_eq!(parsed.rounds.len(), 6);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(
        v["turn_marks"]["user1"]
            .as_str()
            .unwrap()
            .contains("timeout")
    );
    assert!(
        v["turn_marks"]["user2"]
            .as_str()
            .unwrap()
            .contains("simulated_agent")
    );
    assert!(v["turn_marks"].get("user0").is_none());
    let log = std::fs::read_to_string(dir.path().join("logs/session-0001.log")).unwrap();
    assert_eq!(
        log.matches("[fallback: simulated_agent after timeout, circuit CLOSED]")
            .count(),
        2
    );
    let probe = probe_cost(&target).await;
    assert_accounted(&outcome, target.chats() - 2 * probe);
    fake.handle.stop(false).await;
}

/// Chat requests the capability probe makes against `target` (measured by probing once).
async fn probe_cost(target: &common::Fake) -> usize {
    let before = target.chats();
    let client = judge_client::endpoint::TargetClient::new(
        TargetSettings::new(&target.url),
        Credentials::default(),
    );
    judge_client::endpoint::probe(&client, "probe-cost")
        .await
        .unwrap();
    target.chats() - before
}

#[actix_rt::test]
async fn rate_limits_back_off_honouring_retry_after_then_fail_closed_into_error_messages() {
    let target = common::amnesiac().await;
    // First call: one 429 asking for 1 s, then an answer. Second call: 429 until the retries
    // (2) are spent. Then answers.
    let fake = endpoint(
        vec![
            Act::TooMany("1"),
            Act::Say("Hi there."),
            Act::TooMany("0"),
            Act::TooMany("0"),
            Act::TooMany("0"),
        ],
        "Okay.",
        Duration::ZERO,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let injection = plan(
        "gus",
        &Injection {
            url: &fake.url,
            fallback: "error_message",
            ..Injection::default()
        },
    );
    let cfg = config(&target.url, personas(&["gus"]), 3, injection);
    let before = target.chats();
    let outcome = run(&cfg, dir.path()).await;
    let arrivals = fake.state.arrivals.lock().unwrap().clone();
    assert_eq!(arrivals.len(), 6, "1 + 1 retry, 1 + 2 retries, 1");
    assert!(
        arrivals[1] - arrivals[0] >= Duration::from_millis(950),
        "Retry-After: 1 was honoured ({:?})",
        arrivals[1] - arrivals[0]
    );
    let c = &outcome.conversations[0];
    assert_eq!(c.rounds[0].user, "Hi there.");
    assert_eq!(c.rounds[0].user_source, UserSource::Injected);
    let failed = &c.rounds[1];
    assert_eq!(
        failed.fallback.as_ref().unwrap().kind,
        FailureKind::RateLimited
    );
    assert!(failed.user.starts_with("[rate_limited]"), "{}", failed.user);
    assert!(
        !failed.sent && failed.agent.is_none(),
        "an error message is not sent to the target"
    );
    assert_eq!(c.rounds[2].user, "Okay.");
    let m = &outcome.metrics[0];
    assert_eq!((m.calls, m.rate_limited, m.retries), (3, 1, 3));
    // 429s are neutral for the breaker.
    assert_eq!(m.circuit_state, "CLOSED");
    assert!(m.transitions.is_empty());
    let probe = probe_cost(&target).await;
    assert_eq!(
        target.chats() - before - 2 * probe,
        2,
        "only the two sent rounds reached the target"
    );
    assert_accounted(&outcome, 2);
    fake.handle.stop(false).await;
}

#[actix_rt::test]
async fn garbage_and_error_objects_are_invalid_responses_and_skip_leaves_marked_empty_turns() {
    let target = common::amnesiac().await;
    let fake = endpoint(
        vec![
            Act::Garbage,
            Act::ErrorObject("INTERNAL"),
            Act::NoText,
            Act::ErrorObject("TIMEOUT"),
        ],
        "Fine.",
        Duration::ZERO,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let injection = plan(
        "lena",
        &Injection {
            url: &fake.url,
            fallback: "skip",
            ..Injection::default()
        },
    );
    let cfg = config(&target.url, personas(&["lena"]), 5, injection);
    let before = target.chats();
    let outcome = run(&cfg, dir.path()).await;
    let c = &outcome.conversations[0];
    let kinds: Vec<Option<FailureKind>> = c
        .rounds
        .iter()
        .map(|r| r.fallback.as_ref().map(|f| f.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            Some(FailureKind::AgentError),
            Some(FailureKind::AgentError),
            Some(FailureKind::AgentError),
            Some(FailureKind::Timeout),
            None
        ]
    );
    for r in &c.rounds[..4] {
        assert_eq!(r.user, "");
        assert!(!r.sent);
    }
    assert_eq!(c.rounds[4].user, "Fine.");
    let m = &outcome.metrics[0];
    assert_eq!((m.invalid_responses, m.errors, m.successes), (4, 4, 1));
    // A 200 with garbage is not an outage: the breaker stays closed.
    assert_eq!(m.circuit_state, "CLOSED");
    let checks = outcome.results.conversations[0].injected.clone().unwrap();
    assert_eq!(
        (checks.scored_turns, checks.fallback_turns, checks.empty),
        (1, 4, 0)
    );
    let probe = probe_cost(&target).await;
    assert_eq!(
        target.chats() - before - 2 * probe,
        1,
        "only the one sent round reached the target"
    );
    assert_accounted(&outcome, 1);
    let text =
        std::fs::read_to_string(dir.path().join("transcripts/conversation-0001.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["turn_marks"].as_object().unwrap().len(), 4);
    fake.handle.stop(false).await;
}

#[actix_rt::test]
async fn a_down_endpoint_opens_the_breaker_and_rejections_are_immediate() {
    let target = common::amnesiac().await;
    let dir = tempfile::tempdir().unwrap();
    let url = down_url();
    let injection = plan(
        "kenji",
        &Injection {
            url: &url,
            breaker: (2, 30.0, 2),
            ..Injection::default()
        },
    );
    let cfg = config(&target.url, personas(&["kenji"]), 15, injection);
    let started = Instant::now();
    let outcome = run(&cfg, dir.path()).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    let c = &outcome.conversations[0];
    // The simulated persona carried the whole conversation (it gives up on the amnesiac target
    // after its patience runs out, with the stop token).
    let rounds = c.rounds.len() as u64;
    assert!(rounds >= 8, "{rounds}");
    assert_eq!(c.stop_reason, "stop_token");
    assert!(
        c.rounds
            .iter()
            .all(|r| r.user_source == UserSource::Fallback)
    );
    let m = &outcome.metrics[0];
    assert_eq!(m.calls, rounds);
    assert_eq!(m.infra_errors, rounds);
    assert_eq!(
        m.circuit_rejections,
        rounds - 2,
        "after 2 failures every call is refused"
    );
    assert_eq!(m.circuit_state, "OPEN");
    assert_eq!(m.transitions.len(), 1);
    assert_eq!(
        (m.transitions[0].from.as_str(), m.transitions[0].to.as_str()),
        ("CLOSED", "OPEN")
    );
    assert_eq!(m.transitions[0].call, 2);
    assert_eq!(m.error_rate, 1.0);
    let marks: Vec<&str> = c
        .rounds
        .iter()
        .map(|r| r.fallback.as_ref().unwrap().circuit_state.as_str())
        .collect();
    assert_eq!(marks[0], "CLOSED");
    assert!(marks[1..].iter().all(|s| *s == "OPEN"), "{marks:?}");
    assert!(
        c.rounds[5]
            .fallback
            .as_ref()
            .unwrap()
            .message
            .contains("circuit OPEN")
    );
    assert_eq!(
        outcome.results.conversations[0].fallback_turns as u64,
        rounds
    );
    assert_eq!(
        outcome.results.conversations[0]
            .injected
            .as_ref()
            .unwrap()
            .score,
        None
    );
}

#[actix_rt::test]
async fn the_breaker_opens_on_failures_then_half_opens_and_closes_after_successful_probes() {
    // Each target reply takes 40 ms, so the 150 ms open period passes within a few rounds.
    let target =
        common::spawn_with_delay(common::Brain::Amnesiac, true, Duration::from_millis(40)).await;
    let fake = endpoint(
        vec![Act::ServerError, Act::ServerError],
        "Still here.",
        Duration::ZERO,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let injection = plan(
        "amara",
        &Injection {
            url: &fake.url,
            breaker: (2, 0.15, 2),
            ..Injection::default()
        },
    );
    let cfg = config(&target.url, personas(&["amara"]), 12, injection);
    let outcome = run(&cfg, dir.path()).await;
    let m = &outcome.metrics[0];
    let path: Vec<(String, String)> = m
        .transitions
        .iter()
        .map(|t| (t.from.clone(), t.to.clone()))
        .collect();
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(
        path,
        [
            pair("CLOSED", "OPEN"),
            pair("OPEN", "HALF_OPEN"),
            pair("HALF_OPEN", "CLOSED")
        ],
        "{:?}",
        m.transitions
    );
    assert_eq!(m.circuit_state, "CLOSED");
    assert!(m.circuit_rejections >= 1, "calls while open were refused");
    // Requests that reached the endpoint = calls − rejections.
    assert_eq!(fake.bodies().len() as u64, m.calls - m.circuit_rejections);
    let c = &outcome.conversations[0];
    assert_eq!(c.rounds.len(), 12);
    let last = c.rounds.last().unwrap();
    assert_eq!(
        (last.user_source, last.user.as_str()),
        (UserSource::Injected, "Still here.")
    );
    let fallbacks = c
        .rounds
        .iter()
        .filter(|r| r.user_source == UserSource::Fallback)
        .count() as u64;
    assert_eq!(fallbacks, 2 + m.circuit_rejections);
    fake.handle.stop(false).await;
}

#[actix_rt::test]
async fn pii_is_redacted_in_the_bytes_sent_and_only_when_enabled() {
    let target = common::amnesiac().await;
    let pii = "Write to maya.ortiz@example.org or call +34 612 345 678, card 4111 1111 1111 1111, IBAN DE89 3704 0044 0532 0130 00.";
    let mut maya = personas(&["maya"]);
    maya[0].background = format!("A nurse. {pii}");
    let raw_markers = [
        "maya.ortiz@example.org",
        "612 345 678",
        "4111 1111 1111 1111",
        "DE89 3704",
    ];
    for redact in [true, false] {
        let fake = endpoint(vec![Act::Say(pii)], "Anything else?", Duration::ZERO).await;
        let dir = tempfile::tempdir().unwrap();
        let injection = plan(
            "maya",
            &Injection {
                url: &fake.url,
                tier: "full",
                redact,
                ..Injection::default()
            },
        );
        let cfg = config(&target.url, maya.clone(), 3, injection);
        run(&cfg, dir.path()).await;
        let bodies = fake.bodies();
        assert_eq!(bodies.len(), 3);
        // The first request carries the background (full tier); later ones also the PII the
        // endpoint itself said in round 0 (in last_k_turns).
        let sent = String::from_utf8(bodies.concat()).unwrap();
        for marker in raw_markers {
            assert_eq!(
                sent.contains(marker),
                !redact,
                "{marker} with redact={redact}"
            );
        }
        for placeholder in ["[EMAIL]", "[PHONE]", "[CARD]", "[IBAN]"] {
            assert_eq!(sent.contains(placeholder), redact, "{placeholder}");
        }
        let later = String::from_utf8(bodies[1].clone()).unwrap();
        assert!(later.contains("last_k_turns"));
        fake.handle.stop(false).await;
    }
}

#[actix_rt::test]
async fn requests_follow_the_schema_are_seed_deterministic_and_replay_identically() {
    let target = common::amnesiac().await;
    let mut bodies_per_run = Vec::new();
    let mut fixture_path = None;
    for run_no in 0..2 {
        let fake = endpoint(vec![], "Sounds good.", Duration::ZERO).await;
        let dir = tempfile::tempdir().unwrap();
        let injection = plan(
            "priya",
            &Injection {
                url: &fake.url,
                tier: "minimal",
                ..Injection::default()
            },
        );
        let mut cfg = config(&target.url, personas(&["priya"]), 4, injection);
        cfg.record = true;
        run(&cfg, dir.path()).await;
        let bodies = fake.bodies();
        let first: AgentWorldRequest = serde_json::from_slice(&bodies[0]).unwrap();
        assert_eq!(first.schema_version, "1.0");
        assert_eq!(first.agent_id, "priya");
        let priya = &personas(&["priya"])[0];
        assert_eq!(first.persona_hash, priya.hash());
        assert_eq!(first.persona_ref.persona_hash, priya.hash());
        assert!(
            first.persona_snapshot.is_none(),
            "minimal tier sends the reference only"
        );
        assert!(first.simulation_config_hash.starts_with("sha256:"));
        assert_eq!(first.timeout_ms, 300);
        let second: AgentWorldRequest = serde_json::from_slice(&bodies[1]).unwrap();
        assert_ne!(first.turn_id, second.turn_id);
        assert_eq!(first.run_id, second.run_id);
        assert_eq!(second.current_stimulus, "Noted.");
        assert_eq!(second.conversation_context.last_k_turns.len(), 2);
        bodies_per_run.push(bodies);
        if run_no == 1 {
            let path = dir.path().join("fixtures/injected.json");
            let fixture = FixtureFile::load(&path).unwrap();
            assert_eq!(fixture.payloads.len(), 4);
            assert_eq!(fixture.payloads[0].agent_id, "priya");
            assert!(dir.path().join("fixtures/target.json").is_file());
            fixture_path = Some((dir, fixture));
        }
        fake.handle.stop(false).await;
    }
    let text = |bodies: &Vec<Vec<u8>>| -> Vec<String> {
        bodies
            .iter()
            .map(|b| String::from_utf8(b.clone()).unwrap())
            .collect()
    };
    assert!(
        text(&bodies_per_run[0]) == text(&bodies_per_run[1]),
        "same seed, byte-identical requests"
    );
    // Replay to another endpoint: the identical bytes arrive, the replies are compared.
    let (_dir, fixture) = fixture_path.unwrap();
    let other = endpoint(
        vec![Act::Say("Sounds good.")],
        "Something else entirely.",
        Duration::ZERO,
    )
    .await;
    let report = judge_client::suites::sim::replay::replay(
        &fixture,
        &other.url,
        Credentials::default(),
        2_000,
        None,
    )
    .await;
    assert!(
        text(&other.bodies()) == text(&bodies_per_run[1]),
        "replayed bytes are the recorded ones"
    );
    assert_eq!(
        (
            report.points,
            report.identical,
            report.differing,
            report.failed
        ),
        (4, 1, 3, 0)
    );
    other.handle.stop(false).await;
}

#[actix_rt::test]
async fn in_flight_and_qps_caps_hold_for_concurrent_calls_to_one_endpoint() {
    use judge_client::suites::sim::injection::InjectedEndpoint;
    // At most 2 in flight: six concurrent calls of 100 ms each never overlap more than twice.
    let slow = endpoint(vec![], "Right.", Duration::from_millis(100)).await;
    let spec = plan(
        "maya",
        &Injection {
            url: &slow.url,
            inflight: 2,
            ..Injection::default()
        },
    )
    .endpoints
    .remove(0);
    let client = InjectedEndpoint::new(spec);
    let started = Instant::now();
    let calls = (0..6).map(|_| client.call(b"{}"));
    let replies = futures_util::future::join_all(calls).await;
    assert!(
        replies
            .iter()
            .all(|r| r.as_ref().is_ok_and(|r| r.text == "Right."))
    );
    assert_eq!(slow.state.max_in_flight.load(Ordering::SeqCst), 2);
    assert_eq!(client.metrics().max_in_flight, 2);
    assert!(
        started.elapsed() >= Duration::from_millis(290),
        "three waves of two"
    );
    slow.handle.stop(false).await;

    // At most 5 per second: ten immediate calls take a burst of 5, then one every 200 ms.
    let fast = endpoint(vec![], "Right.", Duration::ZERO).await;
    let spec = plan(
        "maya",
        &Injection {
            url: &fast.url,
            qps: 5,
            ..Injection::default()
        },
    )
    .endpoints
    .remove(0);
    let client = InjectedEndpoint::new(spec);
    let calls = (0..10).map(|_| client.call(b"{}"));
    futures_util::future::join_all(calls).await;
    let arrivals = fast.state.arrivals.lock().unwrap().clone();
    assert_eq!(arrivals.len(), 10);
    let span = *arrivals.iter().max().unwrap() - *arrivals.iter().min().unwrap();
    assert!(
        span >= Duration::from_millis(900),
        "10 calls at 5 per second took {span:?}"
    );
    let m = client.metrics();
    assert_eq!((m.calls, m.successes, m.errors), (10, 10, 0));
    fast.handle.stop(false).await;
}
