//! What is stored, and how: Redis keys and their TTL, times and odd text round-tripping.

use crate::harness::*;

#[tokio::test]
async fn redis_keys_are_namespaced_and_carry_a_real_ttl() {
    let harness = Harness::new().await;
    let s = session();
    harness
        .commit_turn(&s, turn("hello", "Hello."))
        .await
        .unwrap();
    let client = redis::Client::open(redis_url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}:*", harness.prefix))
        .query_async(&mut conn)
        .await
        .unwrap();
    let key = format!("{}:s:{}:wm", harness.prefix, s);
    assert_eq!(keys, [key.as_str()]);
    let ttl: i64 = redis::cmd("TTL")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .unwrap();
    let max = conformance::config().working_ttl.as_secs() as i64;
    assert!(ttl > 0 && ttl <= max, "TTL {ttl} not in (0, {max}]");

    harness.reset(&s).await.unwrap();
    let exists: bool = redis::cmd("EXISTS")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(!exists, "reset deletes the key");
}

#[tokio::test]
async fn times_round_trip_to_the_nanosecond_and_nul_does_not_fail_a_turn() {
    let harness = Harness::new().await;
    let s = session();
    // Before 2000-01-01 (Postgres' epoch) and below timestamptz's microsecond resolution.
    let at = DateTime::parse_from_rfc3339("1999-12-31T23:59:59.123456789Z")
        .unwrap()
        .to_utc();
    let item = user("late \u{0} night").with_time(at);
    let stored = harness
        .commit_turn(
            &s,
            TurnWrite {
                items: vec![item.clone()],
                facts: vec![NewFact {
                    embedding: None,
                    source_turn_ids: Vec::new(),
                    observed_at: at,
                    ..fact(Some("odd\u{0}key"), "A fact with a \u{0} inside.")
                }],
                ..TurnWrite::default()
            },
        )
        .await
        .expect("a NUL character must not fail the turn");
    assert_eq!(stored[0].key.as_deref(), Some("odd\u{fffd}key"));
    let snapshot = harness.snapshot(&s, at).await.unwrap();
    assert_eq!(
        snapshot.working,
        [item],
        "working memory keeps the text verbatim"
    );
    assert_eq!(snapshot.facts[0].observed_at, at);
    assert_eq!(snapshot.facts[0].text, "A fact with a \u{fffd} inside.");
}

/// Provenance survives a restart: another store on the same database (a restarted server, its
/// mirrors empty) reads each fact's turn ids back, by snapshot and by recall.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_turn_ids_survive_a_restart() {
    let h = Harness::new().await;
    let s = session();
    let mut told = turn("I keep bees.", "I keep bees on the roof.");
    told.facts[0].source_turn_ids = vec!["D1:2".to_owned()];
    h.commit_turn(&s, told).await.unwrap();
    let restarted = h.twin().await;
    let snap = restarted.snapshot(&s, t0()).await.unwrap();
    assert_eq!(snap.facts[0].source_turn_ids, ["D1:2"]);
    let ctx = restarted.recall(&s, query("bees")).await.unwrap();
    assert_eq!(ctx.facts[0].fact.source_turn_ids, ["D1:2"]);
}
