//! What a server keeps in its process (working memory, facts) against what other servers write, resets and Redis's TTL; several servers on one store.

use crate::harness::*;
use agent_server::memory::{EpisodeData, MemoryContext};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_share_sessions_and_resets() {
    let harness = Harness::new().await;
    let other = harness.twin().await;
    let s = session();
    let before = other.recall(&s, query("kayak")).await.unwrap();
    harness
        .commit_turn(&s, turn("I paddle a kayak.", "I paddle a green kayak."))
        .await
        .unwrap();
    let ctx = other
        .recall(&s, query("Which kayak do I paddle?"))
        .await
        .unwrap();
    assert_eq!(ctx.facts[0].fact.text, "I paddle a green kayak.");
    assert_eq!(ctx.working[0].text, "I paddle a kayak.");

    other.reset(&s).await.unwrap();
    let err = harness
        .commit_turn(
            &s,
            TurnWrite {
                expected_epoch: Some(before.epoch),
                ..turn("stale", "A stale fact.")
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::SessionReset), "{err:?}");
    let snapshot = harness.snapshot(&s, t0()).await.unwrap();
    assert!(snapshot.working.is_empty() && snapshot.facts.is_empty());
}

/// Each server keeps the working memory of sessions it read or wrote, and uses it only while the
/// session's turn number in Postgres says nobody wrote since: what another server writes, resets
/// included, is seen at once, and what Redis expired is not served from memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn working_memory_kept_in_process_follows_other_servers_and_the_redis_ttl() {
    let harness = Harness::new().await;
    let other = harness.twin().await;
    let s = session();
    let said = |text: &str| TurnWrite {
        items: vec![user(text)],
        ..TurnWrite::default()
    };
    harness.commit_turn(&s, said("one")).await.unwrap();
    let ctx = harness.recall(&s, query("x")).await.unwrap();
    assert_eq!(working_texts(&ctx), ["one"]);
    // Its own next turn: from memory; another server's: from Redis.
    harness.commit_turn(&s, said("two")).await.unwrap();
    other.commit_turn(&s, said("three")).await.unwrap();
    let ctx = harness.recall(&s, query("x")).await.unwrap();
    assert_eq!(working_texts(&ctx), ["one", "two", "three"]);
    // Interleaved writers, then a reset by the other server.
    harness.commit_turn(&s, said("four")).await.unwrap();
    other.commit_turn(&s, said("five")).await.unwrap();
    harness.commit_turn(&s, said("six")).await.unwrap();
    let ctx = harness.recall(&s, query("x")).await.unwrap();
    assert_eq!(
        working_texts(&ctx),
        ["one", "two", "three", "four", "five", "six"]
    );
    other.reset(&s).await.unwrap();
    assert!(
        harness
            .recall(&s, query("x"))
            .await
            .unwrap()
            .working
            .is_empty()
    );

    // A one-second real TTL: once Redis has dropped the key, memory does not answer for it.
    let mut cfg = config(&redis_url(), &harness.db.url, &harness.prefix);
    cfg.redis_key_ttl = Some(Duration::from_secs(1));
    let short = RedisPostgresStore::connect(cfg, conformance::config())
        .await
        .unwrap();
    let s = session();
    short.commit_turn(&s, said("fleeting")).await.unwrap();
    assert_eq!(
        working_texts(&short.recall(&s, query("x")).await.unwrap()),
        ["fleeting"]
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        short
            .recall(&s, query("x"))
            .await
            .unwrap()
            .working
            .is_empty()
    );
}

/// A server that wrote and read a session recalls its facts as a server holding nothing does,
/// after every kind of write (new, keyed and replaced, of another kind, restated with and without
/// a new text, retired), and after another server's writes and reset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recall_after_every_kind_of_write_is_what_a_fresh_server_reads() {
    let harness = Harness::new().await;
    let other = harness.twin().await;
    let s = session();
    let words = "kayak lake paddle green river boat";
    // Checks the harness's recall against a fresh server's, which holds nothing.
    let check = |step: &'static str| {
        let (harness, s) = (&harness, &s);
        async move {
            let here = harness.recall(s, query(words)).await.unwrap();
            let fresh = harness.twin().await;
            let read = fresh.recall(s, query(words)).await.unwrap();
            assert_eq!(recalled_facts(&here), recalled_facts(&read), "{step}");
            assert_eq!(here.epoch, read.epoch, "{step}");
            here
        }
    };
    let at = |minutes: i64| t0() + chrono::Duration::minutes(minutes);
    let said = |facts: Vec<NewFact>| TurnWrite {
        items: vec![user("said")],
        facts,
        ..TurnWrite::default()
    };
    let new = |key: Option<&str>, kind: FactKind, text: &str, minutes: i64| NewFact {
        embedding: None,
        source_turn_ids: Vec::new(),
        kind,
        observed_at: at(minutes),
        ..fact(key, text)
    };
    harness
        .commit_turn(
            &s,
            said(vec![
                new(None, FactKind::Fact, "I paddle a kayak on the lake.", 1),
                new(
                    None,
                    FactKind::Fact,
                    "My kayak is green, green as a lake.",
                    2,
                ),
                new(Some("boat"), FactKind::Fact, "My boat is a river kayak.", 3),
                new(None, FactKind::Rule, "Always mention the river.", 4),
            ]),
        )
        .await
        .unwrap();
    check("written").await;
    check("read again").await;

    let stored = harness
        .commit_turn(
            &s,
            said(vec![
                new(
                    Some("boat"),
                    FactKind::Fact,
                    "My boat is a green canoe, not a kayak.",
                    5,
                ),
                new(None, FactKind::Reminder, "Paddle the river at noon.", 5),
            ]),
        )
        .await
        .unwrap();
    check("a keyed fact replaced, a reminder added").await;

    let ctx = harness.recall(&s, query(words)).await.unwrap();
    let lake = ctx
        .facts
        .iter()
        .find(|r| r.fact.text.starts_with("I paddle"))
        .expect("recalled")
        .fact
        .id;
    let restate = |text: &str, minutes: i64| Restatement {
        source_turn_ids: Vec::new(),
        id: lake,
        text: text.to_owned(),
        observed_at: at(minutes),
        importance: 0.9,
        source: FactSource::Promoted,
    };
    let restated = TurnWrite {
        restate: vec![restate("I paddle a kayak on the lake.", 6)],
        ..said(Vec::new())
    };
    harness.commit_turn(&s, restated).await.unwrap();
    check("restated, same text").await;
    let rewritten = TurnWrite {
        restate: vec![restate("I paddle a kayak on the river, lake and river.", 7)],
        ..said(Vec::new())
    };
    harness.commit_turn(&s, rewritten).await.unwrap();
    check("restated, new text").await;

    let rule = new(Some("boat"), FactKind::Rule, "Call the boat a kayak.", 8);
    harness.commit_turn(&s, said(vec![rule])).await.unwrap();
    check("a keyed fact replaced by a rule").await;
    let retired = TurnWrite {
        retire: vec![stored[1].id, lake],
        ..said(Vec::new())
    };
    harness.commit_turn(&s, retired).await.unwrap();
    check("retired").await;

    // Another server writes: the harness's entry is stale, and read again.
    let theirs = new(
        None,
        FactKind::Fact,
        "A green river boat waits by the lake.",
        9,
    );
    other.commit_turn(&s, said(vec![theirs])).await.unwrap();
    let ctx = check("written by another server").await;
    assert!(
        ctx.facts
            .iter()
            .any(|r| r.fact.text.starts_with("A green river boat"))
    );
    other.reset(&s).await.unwrap();
    let ctx = check("reset by another server").await;
    assert!(ctx.facts.is_empty() && ctx.standing.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_racing_a_reset_never_survive_it() {
    let harness = Harness::new().await;
    let s = session();
    for round in 0..5 {
        let epoch = harness.recall(&s, query("x")).await.unwrap().epoch;
        let turns = (0..12).map(|i| {
            harness.commit_turn(
                &s,
                TurnWrite {
                    expected_epoch: Some(epoch),
                    ..turn(
                        &format!("round {round} turn {i}"),
                        &format!("Fact {round}.{i}."),
                    )
                },
            )
        });
        let (results, reset) = tokio::join!(futures_util::future::join_all(turns), async {
            tokio::time::sleep(Duration::from_millis(3)).await;
            harness.reset(&s).await
        });
        reset.unwrap();
        for result in results {
            match result {
                Ok(_) | Err(MemoryError::SessionReset) => {}
                Err(e) => panic!("unexpected failure: {e}"),
            }
        }
        // Every turn either ran before the reset (and was wiped) or was refused.
        let snapshot = harness.snapshot(&s, t0()).await.unwrap();
        assert!(
            snapshot.working.is_empty() && snapshot.facts.is_empty(),
            "round {round}: a stale turn survived the reset: {snapshot:?}"
        );
    }
}

/// A session this server wrote last is recalled from memory, without Redis: shown by deleting
/// the key behind its back (nothing in the contract does that, which is why it shows the cache).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_this_server_wrote_last_is_recalled_without_redis() {
    let harness = Harness::new().await;
    let s = session();
    let said = |text: &str| TurnWrite {
        items: vec![user(text)],
        ..TurnWrite::default()
    };
    harness.commit_turn(&s, said("one")).await.unwrap();
    harness.recall(&s, query("x")).await.unwrap();
    harness.commit_turn(&s, said("two")).await.unwrap();
    let client = redis::Client::open(redis_url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let key = format!("{}:s:{}:wm", harness.prefix, s);
    let deleted: i64 = redis::cmd("DEL")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    assert_eq!(
        working_texts(&harness.recall(&s, query("x")).await.unwrap()),
        ["one", "two"],
        "served from memory"
    );
    // A server that did not see the session reads Redis.
    let other = harness.twin().await;
    assert!(
        other
            .recall(&s, query("x"))
            .await
            .unwrap()
            .working
            .is_empty()
    );
}

/// A turn's recall leaves out the episodes working memory holds whether this server's mirror of
/// working memory is current (the held episodes are skipped before they are read) or not
/// (another server wrote the session: as many more are read, then left out): both servers
/// recall the same, and the held episodes, the best lexical matches, do not crowd out the
/// recent one that recency puts first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turns_recall_leaves_out_held_episodes_with_or_without_the_mirror() {
    let harness = Harness::new().await;
    let other = harness.twin().await;
    let s = session();
    let episode = |text: &str, role: TurnRole, at: DateTime<Utc>| {
        NewFact::episode(
            EpisodeData {
                role,
                speaker: None,
            },
            text,
            at,
            FactSource::Injected,
            Vec::new(),
        )
    };
    let old = t0() - chrono::Duration::days(400);
    let mut injected: Vec<NewFact> = (0..30)
        .map(|i| {
            let at = old + chrono::Duration::minutes(i);
            episode(&format!("kayak trip {i}"), TurnRole::User, at)
        })
        .collect();
    injected.push(episode("kayak trip to the lake 7", TurnRole::User, t0()));
    harness.inject(&s, injected).await.unwrap();
    for i in 0..harness.config().working_capacity / 2 {
        let at = t0() + chrono::Duration::minutes(i as i64);
        let (asked, answered) = (format!("kayak trip h{i}"), format!("noted kayak h{i}"));
        harness
            .commit_turn(
                &s,
                TurnWrite {
                    items: vec![
                        WorkingItem::new(TurnRole::User, asked.clone(), at),
                        WorkingItem::new(TurnRole::Assistant, answered.clone(), at),
                    ],
                    facts: vec![
                        episode(&asked, TurnRole::User, at),
                        episode(&answered, TurnRole::Assistant, at),
                    ],
                    ..TurnWrite::default()
                },
            )
            .await
            .unwrap();
    }
    let query = RecallQuery {
        now: t0() + chrono::Duration::minutes(10),
        episode_limit: 3,
        leave_out_working: true,
        ..query("kayak")
    };
    let texts = |ctx: &MemoryContext| -> Vec<String> {
        ctx.episodes.iter().map(|r| r.fact.text.clone()).collect()
    };
    let mirrored = harness.recall(&s, query.clone()).await.unwrap();
    let read = other.recall(&s, query).await.unwrap();
    assert_eq!(mirrored.working, read.working);
    assert_eq!(texts(&mirrored), texts(&read));
    assert_eq!(texts(&read)[0], "kayak trip to the lake 7");
    assert!(read.episodes.iter().all(|r| !read.working.holds(&r.fact)));
}
