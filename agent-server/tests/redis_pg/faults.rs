//! Faults: outages, a hung Redis, a Postgres crash, and writes Postgres refuses (each store compensates, and one bad turn fails alone).

use crate::harness::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_fails_fast_stores_nothing_and_recovers_by_itself() {
    let db = TestDb::create().await;
    let dir = tempfile::tempdir().unwrap();
    let port = closed_port();
    let mut redis_server = RedisChild::start(dir.path(), port);
    let timeout = Duration::from_secs(1);
    let mut cfg = config(&redis_server.url(), &db.url, &unique_prefix());
    cfg.timeout = timeout;
    let store = RedisPostgresStore::connect(cfg, conformance::config())
        .await
        .unwrap();
    let s = session();
    store
        .commit_turn(&s, turn("I keep bees.", "I keep bees."))
        .await
        .unwrap();

    redis_server.kill();
    let started = Instant::now();
    let err = store
        .commit_turn(&s, turn("I also keep goats.", "I also keep goats."))
        .await
        .unwrap_err();
    assert_unavailable(&err, "redis");
    let err = store.recall(&s, query("bees")).await.unwrap_err();
    assert_unavailable(&err, "redis");
    assert!(
        started.elapsed() < timeout * 2,
        "failing took {:?}",
        started.elapsed()
    );
    let health = store.health().await;
    let state: Vec<(&str, bool)> = health.iter().map(|h| (h.name.as_str(), h.ok)).collect();
    assert_eq!(state, [("redis", false), ("postgres", true)]);
    assert!(health[0].error.is_some());

    // Same port, same append-only file: a Redis restart.
    let _redis_server = RedisChild::start(dir.path(), port);
    let snapshot = eventually(Duration::from_secs(10), || {
        store.snapshot(&s, t0() + chrono::Duration::minutes(1))
    })
    .await;
    let working: Vec<&str> = snapshot.working.iter().map(|w| w.text.as_str()).collect();
    assert_eq!(
        working,
        ["I keep bees."],
        "the stored turn survives, the failed one left nothing"
    );
    assert_eq!(
        fact_texts(&snapshot),
        ["I keep bees."],
        "no partial turn in postgres"
    );
    assert!(store.health().await.iter().all(|h| h.ok));
    store
        .commit_turn(&s, turn("I also keep goats.", "I also keep goats."))
        .await
        .expect("writes resume without a new store");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_redis_times_out_instead_of_hanging() {
    let db = TestDb::create().await;
    let dir = tempfile::tempdir().unwrap();
    let redis_server = RedisChild::start(dir.path(), closed_port());
    let timeout = Duration::from_millis(800);
    let mut cfg = config(&redis_server.url(), &db.url, &unique_prefix());
    cfg.timeout = timeout;
    let store = RedisPostgresStore::connect(cfg, conformance::config())
        .await
        .unwrap();
    let s = session();
    store.commit_turn(&s, turn("one", "one")).await.unwrap();

    // Frozen: the socket stays open but nothing answers.
    signal(redis_server.child.id(), "STOP");
    let started = Instant::now();
    let err = store
        .commit_turn(&s, turn("two", "Two is frozen."))
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    signal(redis_server.child.id(), "CONT");
    assert_unavailable(&err, "redis");
    // One budget for the turn, one for the compensation of an unanswered EXEC.
    assert!(
        elapsed < timeout * 2 + Duration::from_millis(500),
        "took {elapsed:?}"
    );

    let snapshot = eventually(Duration::from_secs(10), || {
        store.snapshot(&s, t0() + chrono::Duration::minutes(1))
    })
    .await;
    assert_eq!(
        fact_texts(&snapshot),
        ["one"],
        "the timed-out turn stored no fact"
    );
    let working: Vec<&str> = snapshot.working.iter().map(|w| w.text.as_str()).collect();
    assert_eq!(
        working,
        ["one"],
        "the timed-out turn's items were compensated"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_crash_and_server_restart_keep_facts() {
    let mut pg = PostgresChild::init();
    pg.wait_ready().await;
    let db = TestDb::create_on(&pg.admin_url()).await;
    let prefix = unique_prefix();
    let timeout = Duration::from_secs(1);
    let mut cfg = config(&redis_url(), &db.url, &prefix);
    cfg.timeout = timeout;
    let store = RedisPostgresStore::connect(cfg.clone(), conformance::config())
        .await
        .unwrap();
    let s = session();
    store
        .inject(&s, vec![fact(Some("boat"), "My boat is called Osprey.")])
        .await
        .unwrap();

    pg.crash();
    let started = Instant::now();
    let err = store.recall(&s, query("boat")).await.unwrap_err();
    assert_unavailable(&err, "postgres");
    assert!(
        started.elapsed() < timeout * 2,
        "took {:?}",
        started.elapsed()
    );
    let health = store.health().await;
    assert!(health.iter().any(|h| h.name == "postgres" && !h.ok));

    pg.start();
    pg.wait_ready().await;
    let ctx = eventually(Duration::from_secs(20), || store.recall(&s, query("boat"))).await;
    assert_eq!(
        ctx.facts.len(),
        1,
        "the pool reconnected and the fact survived"
    );

    // And an agent-server restarted too: a new store on the same services.
    drop(store);
    let restarted = RedisPostgresStore::connect(cfg, conformance::config())
        .await
        .unwrap();
    let ctx = restarted
        .recall(&s, query("What is my boat called?"))
        .await
        .unwrap();
    assert_eq!(ctx.facts[0].fact.text, "My boat is called Osprey.");
    drop(restarted);
    drop(db);
}

/// When Postgres refuses a fact with the body "poison".
#[derive(Clone, Copy)]
enum Refusal {
    /// At COMMIT (a deferred constraint): after the batch's Redis write, which is the
    /// compensation path.
    AtCommit,
    /// As the fact is written: the batch fails before its COMMIT, while (or after) its Redis
    /// write, which it then undoes.
    AtWrite,
}

/// Makes Postgres refuse a transaction that stores a fact with the body "poison".
async fn reject_poison(harness: &Harness, when: Refusal) {
    let trigger = match when {
        Refusal::AtCommit => {
            "CREATE CONSTRAINT TRIGGER reject_poison AFTER INSERT ON agentwall_facts
                 DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION reject_poison();"
        }
        Refusal::AtWrite => {
            "CREATE TRIGGER reject_poison BEFORE INSERT ON agentwall_facts
                 FOR EACH ROW EXECUTE FUNCTION reject_poison();"
        }
    };
    harness
        .db
        .client()
        .await
        .batch_execute(&format!(
            "CREATE FUNCTION reject_poison() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF NEW.body = 'poison' THEN RAISE EXCEPTION 'poisoned fact'; END IF;
                 RETURN NEW;
             END $$;
             {trigger}"
        ))
        .await
        .unwrap();
}

/// Two servers on one database whose Postgres refuses the poison `when` (see [`reject_poison`]),
/// and a session with one stored turn ("fine", fact "Fine.") that the second server has recalled.
async fn two_servers_refusing_poison(when: Refusal) -> (Harness, RedisPostgresStore, SessionId) {
    let harness = Harness::new().await;
    let other = harness.twin().await;
    reject_poison(&harness, when).await;
    let s = session();
    harness
        .commit_turn(&s, turn("fine", "Fine."))
        .await
        .unwrap();
    assert_eq!(
        working_texts(&other.recall(&s, query("x")).await.unwrap()),
        ["fine"]
    );
    (harness, other, s)
}

/// `s` holds its fine turn only, and both servers recall exactly that.
async fn assert_only_the_fine_turn(harness: &Harness, other: &RedisPostgresStore, s: &SessionId) {
    let snapshot = harness.snapshot(s, t0()).await.unwrap();
    let working: Vec<&str> = snapshot.working.iter().map(|w| w.text.as_str()).collect();
    assert_eq!(working, ["fine"]);
    assert_eq!(fact_texts(&snapshot), ["Fine."]);
    for server in [&**harness, other] {
        assert_eq!(
            working_texts(&server.recall(s, query("x")).await.unwrap()),
            ["fine"]
        );
    }
}

/// The session row's turn number, which `recent.rs` entries are current for.
async fn turn_seq(harness: &Harness, s: &SessionId) -> i64 {
    harness
        .db
        .client()
        .await
        .query_one(
            "SELECT turn_seq FROM agentwall_sessions WHERE session_id = $1",
            &[&s.as_str()],
        )
        .await
        .unwrap()
        .get(0)
}

/// A compensated batch's turn number is taken again by the next batch, so the compensation
/// moves the session's turn number on by itself: no server may keep, under a committed number,
/// working memory it read while the failed batch's items were in Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_rejected_by_postgres_leaves_no_working_items() {
    let (harness, other, s) = two_servers_refusing_poison(Refusal::AtCommit).await;
    let before = turn_seq(&harness, &s).await;
    a_poisoned_turn_is_refused_by_postgres(&harness, &s, "doomed").await;
    assert_only_the_fine_turn(&harness, &other, &s).await;
    assert_eq!(
        turn_seq(&harness, &s).await,
        before + 1,
        "the rolled-back batch's number came back, and the compensation took one"
    );
}

/// Postgres refusing a batch's writes: nothing of the batch stays in working memory, on any
/// server, and the batch's other turns are written alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_refused_by_postgres_leave_no_working_items() {
    let (harness, other, s) = two_servers_refusing_poison(Refusal::AtWrite).await;
    for round in 0..3 {
        a_poisoned_turn_is_refused_by_postgres(&harness, &s, &format!("doomed {round}")).await;
    }
    // A batch of a poisoned turn and good ones: the good ones are stored, the poisoned not.
    a_poisoned_turn_fails_alone(&harness, 0).await;
    assert_only_the_fine_turn(&harness, &other, &s).await;
}

/// Turns of one session that share a batch trim its set once, before any of them adds: a batch
/// that rolls back (its items compensated) then leaves exactly what readers saw. Trimmed before
/// each turn, the batch's later turns removed committed items for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolled_back_batch_of_one_sessions_turns_leaves_what_readers_saw() {
    let harness = Harness::new().await;
    reject_poison(&harness, Refusal::AtCommit).await;
    let s = session();
    let kept: Vec<String> = (0..8).map(|i| format!("kept {i}")).collect();
    for text in &kept {
        let turn = TurnWrite {
            items: vec![user(text)],
            ..TurnWrite::default()
        };
        harness.commit_turn(&s, turn).await.unwrap();
    }
    // Sixteen at once: all but the first queue behind it and share a batch, which fails at
    // COMMIT (and is then written turn by turn, each failing alone).
    let doomed = (0..16).map(|i| harness.commit_turn(&s, turn(&format!("doomed {i}"), "poison")));
    for result in futures_util::future::join_all(doomed).await {
        assert!(result.is_err(), "a poisoned turn was stored");
    }
    let snapshot = harness.snapshot(&s, t0()).await.unwrap();
    let working: Vec<&str> = snapshot.working.iter().map(|w| w.text.as_str()).collect();
    assert_eq!(working, kept);
}

/// A reset whose COMMIT fails after it cleared Redis leaves the epoch as it was, so it moves the
/// turn number on by itself: another server must not keep serving the cleared items.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_that_did_not_commit_leaves_no_server_serving_cleared_items() {
    let harness = Harness::new().await;
    let other = harness.twin().await;
    let s = session();
    let said = TurnWrite {
        items: vec![user("one")],
        ..TurnWrite::default()
    };
    harness.commit_turn(&s, said).await.unwrap();
    assert_eq!(
        working_texts(&other.recall(&s, query("x")).await.unwrap()),
        ["one"]
    );
    harness
        .db
        .client()
        .await
        .batch_execute(
            "CREATE FUNCTION refuse_reset() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF NEW.epoch <> OLD.epoch THEN RAISE EXCEPTION 'reset refused'; END IF;
                 RETURN NULL;
             END $$;
             CREATE CONSTRAINT TRIGGER refuse_reset AFTER UPDATE ON agentwall_sessions
                 DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_reset();",
        )
        .await
        .unwrap();
    let before = turn_seq(&harness, &s).await;
    harness.reset(&s).await.expect_err("the COMMIT is refused");
    assert_eq!(turn_seq(&harness, &s).await, before + 1);
    assert!(
        other
            .recall(&s, query("x"))
            .await
            .unwrap()
            .working
            .is_empty(),
        "what Redis holds now: the reset cleared it"
    );
}

/// Turns written at the same time share a batch (one transaction); a turn that breaks a
/// constraint must fail alone, not take the rest of its batch with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_bad_turn_in_a_batch_fails_alone() {
    let harness = Harness::new().await;
    reject_poison(&harness, Refusal::AtCommit).await;
    for round in 0..3 {
        a_poisoned_turn_fails_alone(&harness, round).await;
    }
}

/// Commits a turn saying `item` whose fact is the poison, and checks that Postgres refused it.
async fn a_poisoned_turn_is_refused_by_postgres(harness: &Harness, s: &SessionId, item: &str) {
    let err = harness
        .commit_turn(s, turn(item, "poison"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            MemoryError::Backend {
                dependency: "postgres",
                ..
            }
        ),
        "{err:?}"
    );
}

/// Sixteen turns of new sessions at once (so they share batches), the one at `5 + round`
/// poisoned: it alone fails, and every other is stored whole.
async fn a_poisoned_turn_fails_alone(harness: &Harness, round: usize) {
    let sessions: Vec<SessionId> = (0..16).map(|_| session()).collect();
    let poisoned = 5 + round;
    let turns = sessions.iter().enumerate().map(|(i, s)| {
        let text = if i == poisoned {
            "poison".to_owned()
        } else {
            format!("Fact {i}.")
        };
        harness.commit_turn(s, turn(&format!("item {i}"), &text))
    });
    let results = futures_util::future::join_all(turns).await;
    for (i, (s, result)) in sessions.iter().zip(results).enumerate() {
        let snapshot = harness.snapshot(s, t0()).await.unwrap();
        let working: Vec<&str> = snapshot.working.iter().map(|w| w.text.as_str()).collect();
        if i == poisoned {
            assert!(
                result.is_err(),
                "round {round}: the poisoned turn was stored"
            );
            assert!(
                working.is_empty() && snapshot.facts.is_empty(),
                "{snapshot:?}"
            );
        } else {
            result.unwrap_or_else(|e| {
                panic!("round {round}: turn {i} failed with the poisoned one: {e}")
            });
            let item = format!("item {i}");
            let fact = format!("Fact {i}.");
            assert_eq!(working, [item.as_str()]);
            assert_eq!(fact_texts(&snapshot), [fact.as_str()]);
        }
    }
}
