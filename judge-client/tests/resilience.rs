//! Retry, backoff, timeout and failure classification against scripted fake targets.

mod common;

use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use common::{Behaviour, scripted};
use judge_client::endpoint::{
    BreakerPolicy, Credentials, FailureKind, RequestContext, RetryPolicy, TargetClient,
    TargetSettings,
};
use protocol::openai::ChatMessage;

fn client(url: &str, timeout_ms: u64, base_ms: u64) -> TargetClient {
    TargetClient::new(
        TargetSettings {
            model: Some("fake-model".to_owned()),
            timeout_ms,
            retry: RetryPolicy {
                max_retries: 3,
                base_ms,
                max_wait_ms: 5_000,
            },
            ..TargetSettings::new(url)
        },
        Credentials::default(),
    )
}

fn ctx() -> RequestContext {
    RequestContext {
        session_id: "resilience-session".to_owned(),
        mock_time: Some(Utc.with_ymd_and_hms(2026, 3, 2, 9, 0, 0).unwrap()),
        request_no: 1,
    }
}

fn turn() -> Vec<ChatMessage> {
    vec![ChatMessage::user("My favourite colour is teal.")]
}

#[actix_rt::test]
async fn retry_after_is_honoured_then_the_reply_arrives() {
    let fake = scripted(vec![
        Behaviour::RateLimited(Some("1".to_owned())),
        Behaviour::Reply("Noted.".to_owned()),
    ])
    .await;
    let started = Instant::now();
    let reply = client(&fake.url, 5_000, 10)
        .chat(&ctx(), turn())
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(reply.text, "Noted.");
    assert_eq!(reply.attempts, 2);
    assert!(elapsed >= Duration::from_secs(1), "waited only {elapsed:?}");
    assert!(elapsed < Duration::from_secs(4), "waited {elapsed:?}");
    assert_eq!(fake.chats(), 2);
    assert!(fake.state.header_problems.lock().unwrap().is_empty());
    fake.stop().await;
}

#[actix_rt::test]
async fn persistent_429_backs_off_exponentially_and_is_rate_limited() {
    let fake = scripted(vec![Behaviour::RateLimited(None); 10]).await;
    let started = Instant::now();
    let err = client(&fake.url, 5_000, 20)
        .chat(&ctx(), turn())
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    assert_eq!(err.kind, FailureKind::RateLimited);
    assert_eq!(err.status, Some(429));
    assert_eq!(err.attempts, 4, "1 try + 3 retries");
    assert_eq!(fake.chats(), 4);
    // Waits of 20, 40 and 80 ms.
    assert!(elapsed >= Duration::from_millis(140), "{elapsed:?}");
    fake.stop().await;
}

#[actix_rt::test]
async fn server_error_is_an_agent_error_and_not_retried() {
    let fake = scripted(vec![
        Behaviour::ServerError,
        Behaviour::Reply("late".into()),
    ])
    .await;
    let err = client(&fake.url, 5_000, 10)
        .chat(&ctx(), turn())
        .await
        .unwrap_err();
    assert_eq!(err.kind, FailureKind::AgentError);
    assert_eq!(err.status, Some(500));
    assert_eq!(err.attempts, 1);
    assert!(err.message.contains("the agent crashed"), "{}", err.message);
    assert_eq!(fake.chats(), 1);
    fake.stop().await;
}

#[actix_rt::test]
async fn bad_gateway_is_an_infra_error() {
    let fake = scripted(vec![Behaviour::BadGateway]).await;
    let err = client(&fake.url, 5_000, 10)
        .chat(&ctx(), turn())
        .await
        .unwrap_err();
    assert_eq!(err.kind, FailureKind::InfraError);
    assert_eq!(err.status, Some(502));
    fake.stop().await;
}

#[actix_rt::test]
async fn garbage_and_empty_completions_are_agent_errors() {
    let fake = scripted(vec![Behaviour::Garbage, Behaviour::NoChoices]).await;
    let c = client(&fake.url, 5_000, 10);
    let garbage = c.chat(&ctx(), turn()).await.unwrap_err();
    assert_eq!(garbage.kind, FailureKind::AgentError);
    assert!(
        garbage.message.contains("definitely not json"),
        "{}",
        garbage.message
    );
    let empty = c.chat(&ctx(), turn()).await.unwrap_err();
    assert_eq!(empty.kind, FailureKind::AgentError);
    assert!(empty.message.contains("no text"), "{}", empty.message);
    fake.stop().await;
}

#[actix_rt::test]
async fn a_hang_is_a_timeout_and_not_retried() {
    let fake = scripted(vec![Behaviour::Hang(Duration::from_secs(5))]).await;
    let started = Instant::now();
    let err = client(&fake.url, 300, 10)
        .chat(&ctx(), turn())
        .await
        .unwrap_err();
    assert_eq!(err.kind, FailureKind::Timeout);
    assert_eq!(err.attempts, 1);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(fake.chats(), 1);
    fake.stop().await;
}

#[actix_rt::test]
async fn a_refused_connection_is_an_infra_error_after_retries() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = client(&format!("http://127.0.0.1:{port}"), 2_000, 5)
        .chat(&ctx(), turn())
        .await
        .unwrap_err();
    assert_eq!(err.kind, FailureKind::InfraError);
    assert_eq!(err.attempts, 4);
}

#[actix_rt::test]
async fn control_plane_absence_is_a_404_agent_error() {
    let fake = scripted(vec![]).await;
    let err = client(&fake.url, 2_000, 5).reset(&ctx()).await.unwrap_err();
    assert_eq!(err.status, Some(404));
    assert_eq!(err.kind, FailureKind::AgentError);
    fake.stop().await;
}

#[actix_rt::test]
async fn the_circuit_opens_after_repeated_failures_and_recovers() {
    let mut behaviours = vec![Behaviour::Hang(Duration::from_secs(2)); 5];
    behaviours.extend([
        Behaviour::Reply("back".into()),
        Behaviour::Reply("again".into()),
    ]);
    let fake = scripted(behaviours).await;
    let c = TargetClient::new(
        TargetSettings {
            timeout_ms: 100,
            breaker: BreakerPolicy {
                failure_threshold: 5,
                open_ms: 400,
                close_after: 2,
            },
            ..TargetSettings::new(fake.url.clone())
        },
        Credentials::default(),
    );
    for _ in 0..5 {
        let err = c.chat(&ctx(), turn()).await.unwrap_err();
        assert_eq!(err.kind, FailureKind::Timeout);
    }
    let started = Instant::now();
    let open = c.chat(&ctx(), turn()).await.unwrap_err();
    assert_eq!(open.kind, FailureKind::InfraError);
    assert!(open.message.contains("circuit open"), "{}", open.message);
    assert_eq!(open.attempts, 0);
    assert!(
        started.elapsed() < Duration::from_millis(50),
        "open circuits fail fast"
    );
    assert_eq!(
        fake.chats(),
        5,
        "the open circuit kept the request away from the target"
    );
    actix_rt::time::sleep(Duration::from_millis(450)).await;
    assert_eq!(c.chat(&ctx(), turn()).await.unwrap().text, "back");
    assert_eq!(c.chat(&ctx(), turn()).await.unwrap().text, "again");
    assert_eq!(fake.chats(), 7);
    fake.stop().await;
}

#[actix_rt::test]
async fn requests_are_rate_limited_per_second() {
    let fake = scripted(vec![]).await;
    let c = TargetClient::new(
        TargetSettings {
            max_rps: 5,
            ..TargetSettings::new(fake.url.clone())
        },
        Credentials::default(),
    );
    let started = Instant::now();
    for _ in 0..8 {
        c.chat(&ctx(), turn()).await.unwrap();
    }
    // A burst of 5, then one request per 200 ms.
    assert!(
        started.elapsed() >= Duration::from_millis(550),
        "{:?}",
        started.elapsed()
    );
    fake.stop().await;
}

#[actix_rt::test]
async fn https_endpoints_get_a_real_tls_handshake() {
    // A plain-HTTP server answering an https URL: the handshake fails, which proves the client
    // has TLS at all (without it awc says "SSL is not supported" before connecting).
    let fake = scripted(vec![]).await;
    let url = fake.url.replace("http://", "https://");
    let err = client(&url, 2_000, 5).models().await.unwrap_err();
    assert_eq!(err.kind, FailureKind::InfraError, "{err}");
    assert!(
        !err.message.contains("SSL is not supported"),
        "{}",
        err.message
    );
    fake.stop().await;
}
