//! The memory contract as executable checks. Every backend runs all of them, unchanged, through
//! [`memory_conformance_tests!`](crate::memory_conformance_tests), against a store opened with
//! [`config()`].
//!
//! Each check uses fresh random session ids, so checks may share one store and run concurrently.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use protocol::SessionId;
use protocol::control::{FactKind, FactSource};
use uuid::Uuid;

use super::ranking::Terms;
use super::{
    EpisodeData, MemoryConfig, MemoryContext, MemoryStore, NewFact, RecallQuery, Restatement,
    StoredFact, TurnRole, TurnWrite, WorkingItem, normalize_key,
};

/// The configuration every store under test must be opened with.
pub fn config() -> MemoryConfig {
    MemoryConfig {
        working_ttl: Duration::from_secs(3600),
        working_capacity: 8,
        recency_half_life: Duration::from_secs(86_400),
    }
}

/// Generates one `#[tokio::test]` per conformance check. `$make` is an expression (may use
/// `.await`) that yields something dereferencing to a `dyn MemoryStore` opened with [`config()`].
///
/// `with_vectors: $make` runs every check again with semantic recall on, through
/// [`WithVectors`]: each fact and episode written gets an embedding and each recall a query
/// embedding, so ranking fuses words and vectors. The three checks that set their own vectors
/// (and the one that needs items left unembedded), and the one of lexical scores alone, run only
/// in the plain form.
#[macro_export]
macro_rules! memory_conformance_tests {
    (with_vectors: $make:expr) => {
        $crate::memory_conformance_tests!(@common
            ::std::sync::Arc::new($crate::memory::conformance::WithVectors($make)));
    };
    ($make:expr) => {
        $crate::memory_conformance_tests!(@common $make);
        $crate::memory_conformance_tests!(@tests $make;
            semantic_recall_finds_by_meaning_and_fuses_with_words,
            unembedded_items_wait_for_the_backfill_and_take_its_vectors,
            lexical_scores_are_bm25_over_the_session,
            a_lexical_candidate_is_ranked_by_its_similarity_too,
        );
    };
    (@common $make:expr) => {
        $crate::memory_conformance_tests!(@tests $make;
            recall_finds_matching_facts_only,
            newer_value_supersedes_older_for_same_key,
            older_observation_does_not_supersede_newer,
            a_turn_retires_before_it_writes,
            working_memory_expires_on_the_session_clock,
            working_memory_keeps_the_newest_items,
            sessions_are_isolated,
            reset_removes_everything_of_one_session,
            recency_breaks_ties_between_equal_matches,
            standing_items_are_always_loaded_and_retire,
            facts_round_trip_every_field,
            recall_respects_limit_and_ignores_query_syntax,
            concurrent_turns_are_all_stored,
            concurrent_writes_of_one_key_keep_the_latest_observation,
            concurrent_recalls_each_get_their_own_session,
            snapshot_lists_facts_newest_first,
            a_turn_racing_a_reset_writes_nothing,
            a_restated_fact_keeps_its_id_and_takes_the_new_statement,
            a_restatement_of_a_fact_that_is_not_there_is_stored_anew,
            concurrent_restatements_of_one_fact_leave_one_fact,
            facts_keep_the_turns_they_came_from,
            a_recall_writes_nothing,
            episodes_are_recalled_apart_from_facts_and_never_superseded,
            a_reset_removes_episodes_and_standing_reads_skip_them,
            episodes_are_found_after_recalls_that_skipped_them,
            a_turns_episodes_outlive_its_working_items,
            a_turns_recall_leaves_out_the_episodes_working_memory_holds,
        );
    };
    (@tests $make:expr; $($check:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                let store = $make;
                $crate::memory::conformance::$check(&*store).await;
            }
        )+
    };
}

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2030-01-01T09:00:00Z")
        .unwrap()
        .to_utc()
}

fn minutes(m: i64) -> chrono::Duration {
    chrono::Duration::minutes(m)
}

fn session() -> SessionId {
    SessionId::parse(&format!("conformance-{}", Uuid::new_v4())).unwrap()
}

fn fact(key: Option<&str>, text: &str, at: DateTime<Utc>) -> NewFact {
    NewFact {
        embedding: None,
        source_turn_ids: Vec::new(),
        kind: FactKind::Fact,
        key: key.map(normalize_key),
        text: text.to_owned(),
        data: None,
        observed_at: at,
        importance: 0.5,
        source: FactSource::Extracted,
    }
}

fn user(text: &str, at: DateTime<Utc>) -> WorkingItem {
    WorkingItem::new(TurnRole::User, text, at)
}

async fn recall(
    store: &dyn MemoryStore,
    s: &SessionId,
    at: DateTime<Utc>,
    q: &str,
) -> MemoryContext {
    store
        .recall(
            s,
            RecallQuery {
                now: at,
                terms: Terms::of(q),
                limit: 10,
                episode_limit: 0,
                leave_out_working: false,
                vector: None,
            },
        )
        .await
        .expect("recall")
}

fn texts(ctx: &MemoryContext) -> Vec<&str> {
    ctx.facts.iter().map(|r| r.fact.text.as_str()).collect()
}

async fn commit_facts(store: &dyn MemoryStore, s: &SessionId, facts: Vec<NewFact>) {
    store
        .commit_turn(
            s,
            TurnWrite {
                facts,
                ..TurnWrite::default()
            },
        )
        .await
        .expect("commit_turn");
}

pub async fn recall_finds_matching_facts_only(store: &dyn MemoryStore) {
    let s = session();
    commit_facts(
        store,
        &s,
        vec![
            fact(
                Some("favourite colour"),
                "My favourite colour is teal.",
                t0(),
            ),
            fact(Some("home city"), "I live in Lisbon.", t0()),
        ],
    )
    .await;
    let ctx = recall(store, &s, t0() + minutes(1), "What is my favourite colour?").await;
    assert_eq!(texts(&ctx), ["My favourite colour is teal."]);
    assert!(
        ctx.facts[0].score > 0.0,
        "a match must have a positive score"
    );

    let ctx = recall(store, &s, t0() + minutes(1), "Which city do I live in?").await;
    assert_eq!(texts(&ctx), ["I live in Lisbon."]);

    let ctx = recall(store, &s, t0() + minutes(1), "What is the capital of Peru?").await;
    assert!(
        ctx.facts.is_empty(),
        "unrelated query recalled {:?}",
        texts(&ctx)
    );
}

pub async fn newer_value_supersedes_older_for_same_key(store: &dyn MemoryStore) {
    let s = session();
    commit_facts(
        store,
        &s,
        vec![fact(
            Some("favourite colour"),
            "My favourite colour is teal.",
            t0(),
        )],
    )
    .await;
    let stored = store
        .commit_turn(
            &s,
            TurnWrite {
                facts: vec![fact(
                    Some("Favourite Colour"),
                    "My favourite colour is green now.",
                    t0() + minutes(5),
                )],
                ..TurnWrite::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(stored.len(), 1);
    assert!(stored[0].current);
    assert_eq!(stored[0].key.as_deref(), Some("favourite colour"));

    let ctx = recall(store, &s, t0() + minutes(6), "favourite colour").await;
    assert_eq!(texts(&ctx), ["My favourite colour is green now."]);
    let snap = store.snapshot(&s, t0() + minutes(6)).await.unwrap();
    assert_eq!(snap.facts.len(), 1, "the superseded fact must be gone");
}

/// A turn's retirements come before its facts (see `memory::writes`): a fact the turn retires
/// keeps nothing of the turn out, even when it was observed later.
pub async fn a_turn_retires_before_it_writes(store: &dyn MemoryStore) {
    let s = session();
    let later = store
        .inject(
            &s,
            vec![fact(Some("city"), "I live in Porto.", t0() + minutes(10))],
        )
        .await
        .unwrap();
    let stored = store
        .commit_turn(
            &s,
            TurnWrite {
                facts: vec![fact(Some("city"), "I live in Braga.", t0())],
                retire: vec![later[0].id],
                ..TurnWrite::default()
            },
        )
        .await
        .unwrap();
    assert!(stored[0].current, "the retired fact no longer wins the key");
    let snap = store.snapshot(&s, t0() + minutes(11)).await.unwrap();
    let texts: Vec<&str> = snap.facts.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(texts, ["I live in Braga."]);
    let ctx = recall(store, &s, t0() + minutes(11), "where do I live city").await;
    assert_eq!(
        ctx.facts
            .iter()
            .map(|r| r.fact.text.as_str())
            .collect::<Vec<_>>(),
        ["I live in Braga."]
    );
}

pub async fn older_observation_does_not_supersede_newer(store: &dyn MemoryStore) {
    let s = session();
    commit_facts(
        store,
        &s,
        vec![fact(
            Some("car"),
            "My car is a red Volvo.",
            t0() + minutes(60),
        )],
    )
    .await;
    let stored = store
        .inject(&s, vec![fact(Some("car"), "My car is a blue Fiat.", t0())])
        .await
        .unwrap();
    assert_eq!(stored.len(), 1);
    assert!(
        !stored[0].current,
        "an older observation must not become current"
    );
    let ctx = recall(store, &s, t0() + minutes(61), "Which car do I drive?").await;
    assert_eq!(texts(&ctx), ["My car is a red Volvo."]);

    // A later injected value does win.
    let stored = store
        .inject(
            &s,
            vec![fact(
                Some("car"),
                "My car is a green Skoda.",
                t0() + minutes(90),
            )],
        )
        .await
        .unwrap();
    assert!(stored[0].current);
    let ctx = recall(store, &s, t0() + minutes(91), "car").await;
    assert_eq!(texts(&ctx), ["My car is a green Skoda."]);
}

pub async fn working_memory_expires_on_the_session_clock(store: &dyn MemoryStore) {
    let s = session();
    let ttl = store.config().ttl();
    store
        .commit_turn(
            &s,
            TurnWrite {
                items: vec![user("I had pasta for lunch.", t0())],
                ..TurnWrite::default()
            },
        )
        .await
        .unwrap();
    let ctx = recall(
        store,
        &s,
        t0() + ttl - chrono::Duration::seconds(1),
        "lunch",
    )
    .await;
    assert_eq!(
        ctx.working.len(),
        1,
        "item must be live just before its TTL"
    );
    assert_eq!(*ctx.working[0], user("I had pasta for lunch.", t0()));

    // The session clock jumps past the TTL although no real time passed.
    let ctx = recall(
        store,
        &s,
        t0() + ttl + chrono::Duration::seconds(1),
        "lunch",
    )
    .await;
    assert!(
        ctx.working.is_empty(),
        "item must expire on the session clock"
    );
    let snap = store
        .snapshot(&s, t0() + ttl + chrono::Duration::seconds(1))
        .await
        .unwrap();
    assert!(snap.working.is_empty());
    // Going back in time makes it visible again: expiry is a view, not a deletion, until capacity or
    // the backend's own clean-up removes it.
    let ctx = recall(store, &s, t0() + minutes(1), "lunch").await;
    assert_eq!(ctx.working.len(), 1);
}

pub async fn working_memory_keeps_the_newest_items(store: &dyn MemoryStore) {
    let s = session();
    let capacity = store.config().working_capacity;
    let total = capacity + 3;
    for i in 0..total {
        store
            .commit_turn(
                &s,
                TurnWrite {
                    items: vec![user(&format!("turn {i}"), t0() + minutes(i as i64))],
                    ..TurnWrite::default()
                },
            )
            .await
            .unwrap();
    }
    let ctx = recall(store, &s, t0() + minutes(total as i64), "turn").await;
    let got: Vec<&str> = ctx.working.iter().map(|w| w.text.as_str()).collect();
    let want: Vec<String> = (total - capacity..total)
        .map(|i| format!("turn {i}"))
        .collect();
    assert_eq!(got, want, "newest {capacity} items, oldest first");
}

pub async fn sessions_are_isolated(store: &dyn MemoryStore) {
    let (a, b) = (session(), session());
    store
        .commit_turn(
            &a,
            TurnWrite {
                items: vec![user("My dog is called Rex.", t0())],
                facts: vec![fact(Some("dog name"), "My dog is called Rex.", t0())],
                expected_epoch: None,
                ..TurnWrite::default()
            },
        )
        .await
        .unwrap();
    let ctx_b = recall(store, &b, t0() + minutes(1), "What is my dog called?").await;
    assert_eq!(
        ctx_b,
        MemoryContext::default(),
        "session B must see nothing of A"
    );

    commit_facts(
        store,
        &b,
        vec![fact(
            Some("dog name"),
            "My dog is called Bella.",
            t0() + minutes(2),
        )],
    )
    .await;
    let ctx_a = recall(store, &a, t0() + minutes(3), "dog called").await;
    assert_eq!(
        texts(&ctx_a),
        ["My dog is called Rex."],
        "same key in B must not supersede A"
    );
}

pub async fn reset_removes_everything_of_one_session(store: &dyn MemoryStore) {
    let (a, b) = (session(), session());
    for s in [&a, &b] {
        store
            .commit_turn(
                s,
                TurnWrite {
                    items: vec![
                        user("I like chess.", t0()),
                        user("I play on Sundays.", t0() + minutes(1)),
                    ],
                    facts: vec![
                        fact(Some("hobby"), "My hobby is chess.", t0()),
                        fact(None, "I play chess on Sundays.", t0()),
                    ],
                    expected_epoch: None,
                    ..TurnWrite::default()
                },
            )
            .await
            .unwrap();
    }
    let counts = store.reset(&a).await.unwrap();
    assert_eq!(counts.working_items, 2);
    assert_eq!(counts.facts, 2);

    let snap = store.snapshot(&a, t0() + minutes(2)).await.unwrap();
    assert!(snap.working.is_empty() && snap.facts.is_empty());
    let ctx = recall(store, &a, t0() + minutes(2), "chess").await;
    assert!(ctx.working.is_empty() && ctx.facts.is_empty() && ctx.standing.is_empty());
    assert!(ctx.epoch > 0, "a reset must advance the session epoch");
    assert_eq!(
        store.reset(&a).await.unwrap(),
        super::ResetCounts::default()
    );

    let snap_b = store.snapshot(&b, t0() + minutes(2)).await.unwrap();
    assert_eq!(
        (snap_b.working.len(), snap_b.facts.len()),
        (2, 2),
        "reset of A touched B"
    );
}

pub async fn recency_breaks_ties_between_equal_matches(store: &dyn MemoryStore) {
    let s = session();
    commit_facts(
        store,
        &s,
        vec![
            fact(
                None,
                "I ate pasta in the garden.",
                t0() - chrono::Duration::days(10),
            ),
            fact(None, "I ate sushi in the garden.", t0()),
        ],
    )
    .await;
    let ctx = recall(store, &s, t0() + minutes(1), "garden").await;
    assert_eq!(
        texts(&ctx),
        ["I ate sushi in the garden.", "I ate pasta in the garden."]
    );
    assert!(ctx.facts[0].score > ctx.facts[1].score);
}

pub async fn standing_items_are_always_loaded_and_retire(store: &dyn MemoryStore) {
    let s = session();
    let rule = NewFact {
        embedding: None,
        source_turn_ids: Vec::new(),
        kind: FactKind::Rule,
        key: Some("rule:banana".into()),
        text: "Whenever I say banana, reply mango.".into(),
        data: Some(serde_json::json!({"trigger": "banana", "reply": "mango"})),
        observed_at: t0(),
        importance: 0.9,
        source: FactSource::Extracted,
    };
    let reminder = NewFact {
        embedding: None,
        source_turn_ids: Vec::new(),
        kind: FactKind::Reminder,
        key: None,
        text: "Remind me to call mum.".into(),
        data: Some(serde_json::json!({"due": "2030-01-01T11:00:00Z"})),
        observed_at: t0() + minutes(1),
        importance: 0.8,
        source: FactSource::Extracted,
    };
    let stored = store
        .commit_turn(
            &s,
            TurnWrite {
                facts: vec![rule, reminder],
                ..TurnWrite::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(stored.len(), 2);

    let ctx = recall(store, &s, t0() + minutes(2), "completely unrelated words").await;
    let standing: Vec<FactKind> = ctx.standing.iter().map(|f| f.kind).collect();
    assert_eq!(
        standing,
        [FactKind::Rule, FactKind::Reminder],
        "oldest first, whatever the query"
    );
    assert!(ctx.facts.is_empty(), "standing items are not ranked facts");

    store
        .commit_turn(
            &s,
            TurnWrite {
                retire: vec![stored[1].id],
                ..TurnWrite::default()
            },
        )
        .await
        .unwrap();
    let ctx = recall(store, &s, t0() + minutes(3), "anything").await;
    assert_eq!(ctx.standing.len(), 1);
    assert_eq!(ctx.standing[0].id, stored[0].id);
}

pub async fn facts_round_trip_every_field(store: &dyn MemoryStore) {
    let s = session();
    let at = DateTime::parse_from_rfc3339("2030-01-01T09:00:00.123Z")
        .unwrap()
        .to_utc();
    let new = NewFact {
        embedding: None,
        source_turn_ids: Vec::new(),
        kind: FactKind::Fact,
        key: Some("flight date".into()),
        text: "My flight is on 2030-01-04 — gate «B12».".into(),
        data: Some(serde_json::json!({"date": "2030-01-04", "n": [1, 2.5, null]})),
        observed_at: at,
        importance: 0.75,
        source: FactSource::Injected,
    };
    let stored = store.inject(&s, vec![new.clone()]).await.unwrap();
    let snap = store.snapshot(&s, at).await.unwrap();
    assert_eq!(snap.facts.len(), 1);
    let got = &snap.facts[0];
    assert_eq!(got.id, stored[0].id);
    assert_eq!(
        (
            got.kind,
            &got.key,
            &got.text,
            &got.data,
            got.observed_at,
            got.source
        ),
        (
            new.kind,
            &new.key,
            &new.text,
            &new.data,
            new.observed_at,
            new.source
        )
    );
    assert!((got.importance - new.importance).abs() < 1e-6);
}

pub async fn recall_respects_limit_and_ignores_query_syntax(store: &dyn MemoryStore) {
    let s = session();
    let facts = (0..15)
        .map(|i| {
            fact(
                None,
                &format!("Note {i} mentions the lighthouse."),
                t0() + minutes(i),
            )
        })
        .collect();
    commit_facts(store, &s, facts).await;
    let ctx = store
        .recall(
            &s,
            RecallQuery {
                now: t0() + minutes(20),
                terms: Terms::of("lighthouse"),
                limit: 4,
                episode_limit: 0,
                leave_out_working: false,
                vector: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(ctx.facts.len(), 4);
    assert_eq!(ctx.facts[0].fact.text, "Note 14 mentions the lighthouse.");

    for hostile in [
        "\"lighthouse",
        "lighthouse*",
        "NEAR(lighthouse",
        "lighthouse AND OR NOT",
        "-lighthouse",
        "'; DROP TABLE facts; --",
        "light:house",
        "((()))",
        "",
        "?!",
        "lighthouse & | ! <->",
    ] {
        store
            .recall(
                &s,
                RecallQuery {
                    now: t0(),
                    terms: Terms::of(hostile),
                    limit: 4,
                    episode_limit: 0,
                    leave_out_working: false,
                    vector: None,
                },
            )
            .await
            .unwrap_or_else(|e| panic!("query {hostile:?} failed: {e}"));
    }
}

pub async fn concurrent_turns_are_all_stored(store: &dyn MemoryStore) {
    let sessions: Vec<SessionId> = (0..8).map(|_| session()).collect();
    let mut turns = Vec::new();
    for (i, s) in sessions.iter().enumerate() {
        for j in 0..4 {
            turns.push(async move {
                store
                    .commit_turn(
                        s,
                        TurnWrite {
                            items: vec![user(&format!("s{i} turn {j}"), t0() + minutes(j))],
                            facts: vec![fact(
                                None,
                                &format!("Session {i} fact {j} about zebras."),
                                t0() + minutes(j),
                            )],
                            expected_epoch: None,
                            ..TurnWrite::default()
                        },
                    )
                    .await
                    .unwrap()
            });
        }
    }
    futures_util::future::join_all(turns).await;
    for (i, s) in sessions.iter().enumerate() {
        let snap = store.snapshot(s, t0() + minutes(5)).await.unwrap();
        assert_eq!(snap.working.len(), 4, "session {i}");
        assert_eq!(snap.facts.len(), 4, "session {i}");
        assert!(
            snap.facts
                .iter()
                .all(|f| f.text.starts_with(&format!("Session {i} ")))
        );
    }
}

/// Many writers of one key at once (which a group-committing backend puts in one batch) leave what
/// writing them one after the other in any order would: the latest observation, once.
pub async fn concurrent_writes_of_one_key_keep_the_latest_observation(store: &dyn MemoryStore) {
    let s = session();
    commit_facts(
        store,
        &s,
        vec![fact(Some("car"), "My car is v10.", t0() + minutes(10))],
    )
    .await;
    // Minutes 0..20 in a scrambled order, each with a keyless fact and a working item alongside.
    let writes = (0..20).map(|i| (i * 7) % 20).map(|m| {
        let s = &s;
        async move {
            let turn = TurnWrite {
                items: vec![user(&format!("turn {m}"), t0() + minutes(m))],
                facts: vec![
                    fact(Some("car"), &format!("My car is v{m}."), t0() + minutes(m)),
                    fact(None, &format!("Note {m}."), t0() + minutes(m)),
                ],
                ..TurnWrite::default()
            };
            (m, store.commit_turn(s, turn).await.expect("commit_turn"))
        }
    });
    for (m, stored) in futures_util::future::join_all(writes).await {
        assert_eq!(stored.len(), 2, "minute {m}");
        // Older than the stored v10: never current. The latest: always. In between: depends on
        // the order the writes ran in.
        if m < 10 {
            assert!(!stored[0].current, "v{m} is older than the stored v10");
        }
        if m == 19 {
            assert!(stored[0].current, "v19 is the latest");
        }
        assert!(stored[1].current, "a keyless fact is always stored");
    }
    let snap = store.snapshot(&s, t0() + minutes(30)).await.unwrap();
    let cars: Vec<&str> = snap
        .facts
        .iter()
        .filter(|f| f.key.as_deref() == Some("car"))
        .map(|f| f.text.as_str())
        .collect();
    assert_eq!(cars, ["My car is v19."]);
    assert_eq!(snap.facts.len(), 21, "one car and twenty notes");
    assert_eq!(snap.working.len(), 8, "capacity 8: the newest items");
    let newest: Vec<&str> = snap.working.iter().map(|w| w.text.as_str()).collect();
    let expected: Vec<String> = (12..20).map(|m| format!("turn {m}")).collect();
    assert_eq!(newest, expected);
}

/// Recalls of many sessions at once (which a batching backend answers with one read) each get
/// their own session's facts, standing items and epoch, and nothing of another's.
pub async fn concurrent_recalls_each_get_their_own_session(store: &dyn MemoryStore) {
    let sessions: Vec<SessionId> = (0..16).map(|_| session()).collect();
    for (i, s) in sessions.iter().enumerate() {
        let mut facts = vec![fact(
            None,
            &format!("Parcel {i} went to the harbour."),
            t0(),
        )];
        if i % 3 == 0 {
            let mut rule = fact(None, &format!("Always greet parcel {i}."), t0());
            rule.kind = FactKind::Rule;
            facts.push(rule);
        }
        commit_facts(store, s, facts).await;
        // Different epochs, so an epoch handed to the wrong session shows.
        for _ in 0..i % 4 {
            store.reset(s).await.unwrap();
            commit_facts(
                store,
                s,
                vec![fact(
                    None,
                    &format!("Parcel {i} went to the harbour."),
                    t0(),
                )],
            )
            .await;
        }
    }
    let recalls = sessions
        .iter()
        .map(|s| recall(store, s, t0() + minutes(1), "Where did the parcel go?"));
    let contexts = futures_util::future::join_all(recalls).await;
    for (i, ctx) in contexts.iter().enumerate() {
        let own = format!("Parcel {i} went to the harbour.");
        assert_eq!(texts(ctx), [own.as_str()], "session {i}");
        assert_eq!(ctx.epoch, (i % 4) as u64, "session {i}");
        let rules: Vec<&str> = ctx.standing.iter().map(|f| f.text.as_str()).collect();
        let expected = format!("Always greet parcel {i}.");
        if i % 3 == 0 && i % 4 == 0 {
            assert_eq!(rules, [expected.as_str()], "session {i}");
        } else {
            assert!(rules.is_empty(), "session {i}: {rules:?}");
        }
    }
}

pub async fn snapshot_lists_facts_newest_first(store: &dyn MemoryStore) {
    let s = session();
    commit_facts(
        store,
        &s,
        vec![
            fact(None, "First.", t0()),
            fact(None, "Third.", t0() + minutes(2)),
            fact(None, "Second.", t0() + minutes(1)),
        ],
    )
    .await;
    store
        .commit_turn(
            &s,
            TurnWrite {
                items: vec![user("one", t0()), user("two", t0() + minutes(1))],
                ..TurnWrite::default()
            },
        )
        .await
        .unwrap();
    let snap = store.snapshot(&s, t0() + minutes(3)).await.unwrap();
    let facts: Vec<&str> = snap.facts.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(facts, ["Third.", "Second.", "First."]);
    let working: Vec<&str> = snap.working.iter().map(|w| w.text.as_str()).collect();
    assert_eq!(working, ["one", "two"]);
}

pub async fn a_turn_racing_a_reset_writes_nothing(store: &dyn MemoryStore) {
    let s = session();
    commit_facts(store, &s, vec![fact(Some("pet"), "My pet is a cat.", t0())]).await;
    let before = recall(store, &s, t0() + minutes(1), "pet").await;

    // A reset lands between the turn's recall and its commit.
    store.reset(&s).await.unwrap();
    let err = store
        .commit_turn(
            &s,
            TurnWrite {
                items: vec![user("My pet is a cat.", t0() + minutes(1))],
                facts: vec![fact(Some("pet"), "My pet is a cat.", t0() + minutes(1))],
                expected_epoch: Some(before.epoch),
                ..TurnWrite::default()
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, super::MemoryError::SessionReset), "{err}");
    let snap = store.snapshot(&s, t0() + minutes(2)).await.unwrap();
    assert!(
        snap.working.is_empty() && snap.facts.is_empty(),
        "the stale turn was written"
    );

    // A turn that read its context after the reset goes through.
    let after = recall(store, &s, t0() + minutes(2), "pet").await;
    assert_ne!(after.epoch, before.epoch);
    store
        .commit_turn(
            &s,
            TurnWrite {
                items: vec![user("My pet is a dog.", t0() + minutes(2))],
                expected_epoch: Some(after.epoch),
                ..TurnWrite::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .snapshot(&s, t0() + minutes(3))
            .await
            .unwrap()
            .working
            .len(),
        1
    );
}

fn restatement(id: Uuid, text: &str, at: DateTime<Utc>) -> Restatement {
    Restatement {
        source_turn_ids: Vec::new(),
        id,
        text: text.to_owned(),
        observed_at: at,
        importance: 0.7,
        source: FactSource::Promoted,
    }
}

async fn restate(store: &dyn MemoryStore, s: &SessionId, turn: TurnWrite) -> Vec<StoredFact> {
    store.commit_turn(s, turn).await.expect("commit_turn")
}

/// A restatement changes the fact in place: same id, the new text (searched by its new words
/// only), time, importance and source; the turn's other facts come first in its answer.
pub async fn a_restated_fact_keeps_its_id_and_takes_the_new_statement(store: &dyn MemoryStore) {
    let s = session();
    let stored = store
        .inject(
            &s,
            vec![
                fact(None, "The parking spot is on level three.", t0()),
                fact(None, "My sister lives in Lyon.", t0()),
            ],
        )
        .await
        .unwrap();
    let spot = stored[0].id;

    let answer = restate(
        store,
        &s,
        TurnWrite {
            facts: vec![fact(None, "Tea is my favourite drink.", t0() + minutes(5))],
            restate: vec![restatement(
                spot,
                "The parking spot is on level four.",
                t0() + minutes(5),
            )],
            ..TurnWrite::default()
        },
    )
    .await;
    assert_eq!(
        answer.len(),
        2,
        "one per new fact, then one per restatement"
    );
    assert_eq!((answer[1].id, answer[1].current), (spot, true));
    assert_ne!(answer[0].id, spot);

    let snap = store.snapshot(&s, t0() + minutes(6)).await.unwrap();
    assert_eq!(
        snap.facts.len(),
        3,
        "restated in place, not added: {snap:?}"
    );
    let got = snap.facts.iter().find(|f| f.id == spot).expect("same id");
    assert_eq!(
        (got.text.as_str(), got.observed_at, got.source, got.kind),
        (
            "The parking spot is on level four.",
            t0() + minutes(5),
            FactSource::Promoted,
            FactKind::Fact
        )
    );
    assert!((got.importance - 0.7).abs() < 1e-6);
    let at = t0() + minutes(6);
    assert_eq!(
        texts(&recall(store, &s, at, "four").await),
        [got.text.as_str()]
    );
    assert!(
        texts(&recall(store, &s, at, "three").await).is_empty(),
        "the old words were dropped from the index"
    );

    // The same text again, later: only the time (and so the recency) moves.
    restate(
        store,
        &s,
        TurnWrite {
            restate: vec![restatement(
                spot,
                "The parking spot is on level four.",
                t0() + minutes(9),
            )],
            ..TurnWrite::default()
        },
    )
    .await;
    let ctx = recall(store, &s, t0() + minutes(10), "parking four").await;
    assert_eq!(ctx.facts.len(), 1);
    assert_eq!(
        (ctx.facts[0].fact.id, ctx.facts[0].fact.observed_at),
        (spot, t0() + minutes(9))
    );
}

/// A restatement never loses the statement: when the session has no unkeyed fact with that id
/// (never had, retired it in the same turn, or the id is another session's, a keyed fact's or a
/// rule's, none of which a restatement changes), the statement is stored as a new fact.
pub async fn a_restatement_of_a_fact_that_is_not_there_is_stored_anew(store: &dyn MemoryStore) {
    let s = session();
    let other = session();
    let theirs = store
        .inject(&other, vec![fact(None, "Their cat is grey.", t0())])
        .await
        .unwrap()[0]
        .id;
    let mine = store
        .inject(
            &s,
            vec![
                fact(Some("pet"), "My pet is a dog.", t0()),
                NewFact {
                    embedding: None,
                    source_turn_ids: Vec::new(),
                    kind: FactKind::Rule,
                    ..fact(None, "Whenever I say banana, reply mango.", t0())
                },
                fact(None, "My bike is red.", t0()),
            ],
        )
        .await
        .unwrap();
    let (keyed, rule, bike) = (mine[0].id, mine[1].id, mine[2].id);
    let never = Uuid::new_v4();

    let at = t0() + minutes(1);
    let answer = restate(
        store,
        &s,
        TurnWrite {
            retire: vec![bike],
            restate: vec![
                restatement(never, "Never stored.", at),
                restatement(theirs, "My cat is grey.", at),
                restatement(keyed, "My pet is a dog.", at),
                restatement(rule, "Banana means mango.", at),
                restatement(bike, "My bike is red.", at),
            ],
            ..TurnWrite::default()
        },
    )
    .await;
    assert_eq!(answer.len(), 5);
    for (stored, old) in answer.iter().zip([never, theirs, keyed, rule, bike]) {
        assert!(stored.current && stored.key.is_none(), "{stored:?}");
        assert_ne!(stored.id, old, "{stored:?} was not stored anew");
    }

    let snap = store.snapshot(&other, at).await.unwrap();
    assert_eq!(
        snap.facts
            .iter()
            .map(|f| (f.id, f.text.as_str()))
            .collect::<Vec<_>>(),
        [(theirs, "Their cat is grey.")],
        "another session's fact is never changed"
    );
    let snap = store.snapshot(&s, at).await.unwrap();
    let mut texts: Vec<(&str, Option<&str>, FactKind)> = snap
        .facts
        .iter()
        .map(|f| (f.text.as_str(), f.key.as_deref(), f.kind))
        .collect();
    texts.sort_unstable_by_key(|(text, ..)| *text);
    assert_eq!(
        texts,
        [
            ("Banana means mango.", None, FactKind::Fact),
            ("My bike is red.", None, FactKind::Fact),
            ("My cat is grey.", None, FactKind::Fact),
            ("My pet is a dog.", None, FactKind::Fact),
            ("My pet is a dog.", Some("pet"), FactKind::Fact),
            ("Never stored.", None, FactKind::Fact),
            ("Whenever I say banana, reply mango.", None, FactKind::Rule),
        ]
    );
    assert!(snap.facts.iter().all(|f| f.id != bike), "retired first");
}

/// Turns restating one fact at once (which a batching backend may put in one batch) leave that
/// one fact, as some order of them one after the other would.
pub async fn concurrent_restatements_of_one_fact_leave_one_fact(store: &dyn MemoryStore) {
    let s = session();
    let id = store
        .inject(&s, vec![fact(None, "I like green tea.", t0())])
        .await
        .unwrap()[0]
        .id;
    let turns = (1..=16).map(|m| {
        let s = &s;
        async move {
            let said = if m % 2 == 0 {
                "I like green tea."
            } else {
                "Green tea, I like it."
            };
            let turn = TurnWrite {
                restate: vec![restatement(id, said, t0() + minutes(m))],
                ..TurnWrite::default()
            };
            restate(store, s, turn).await
        }
    });
    for answer in futures_util::future::join_all(turns).await {
        assert_eq!(answer.iter().map(|a| a.id).collect::<Vec<_>>(), [id]);
    }
    let snap = store.snapshot(&s, t0() + minutes(20)).await.unwrap();
    assert_eq!(snap.facts.len(), 1, "{snap:?}");
    assert_eq!(snap.facts[0].id, id);
    assert!(["I like green tea.", "Green tea, I like it."].contains(&snap.facts[0].text.as_str()));
}

fn from_turns(mut new: NewFact, ids: &[&str]) -> NewFact {
    new.source_turn_ids = ids.iter().map(|id| (*id).to_owned()).collect();
    new
}

fn ids_of(facts: &[super::Fact], text: &str) -> Vec<String> {
    facts
        .iter()
        .find(|f| f.text == text)
        .unwrap_or_else(|| panic!("no fact {text:?} in {facts:?}"))
        .source_turn_ids
        .clone()
}

/// Provenance: a fact keeps the ids of the turns it came from, through recall and snapshot; a
/// restatement adds its turn's id once; a replacement by key carries its own ids; a restatement
/// stored anew carries the restating turn's.
pub async fn facts_keep_the_turns_they_came_from(store: &dyn MemoryStore) {
    let s = session();
    let stored = store
        .inject(
            &s,
            vec![
                from_turns(fact(None, "Ana paints lighthouses.", t0()), &["D1:3"]),
                from_turns(fact(Some("city"), "I live in Porto.", t0()), &["D1:4"]),
                fact(None, "No provenance here.", t0()),
            ],
        )
        .await
        .unwrap();
    let paints = stored[0].id;
    let said_again = |id, turn: &str, at| Restatement {
        source_turn_ids: vec![turn.to_owned()],
        ..restatement(id, "Ana paints lighthouses.", at)
    };
    store
        .commit_turn(
            &s,
            TurnWrite {
                facts: vec![from_turns(
                    fact(Some("city"), "I live in Braga.", t0() + minutes(2)),
                    &["D2:1"],
                )],
                restate: vec![said_again(paints, "D2:1", t0() + minutes(2))],
                ..TurnWrite::default()
            },
        )
        .await
        .unwrap();
    // Said again in a later turn, and once more by a turn already named: each id once.
    store
        .commit_turn(
            &s,
            TurnWrite {
                restate: vec![
                    said_again(paints, "D3:7", t0() + minutes(3)),
                    said_again(paints, "D1:3", t0() + minutes(3)),
                ],
                ..TurnWrite::default()
            },
        )
        .await
        .unwrap();
    // A restatement of a fact that is gone is stored anew with the restating turn's id.
    store
        .commit_turn(
            &s,
            TurnWrite {
                restate: vec![Restatement {
                    source_turn_ids: vec!["D4:2".to_owned()],
                    ..restatement(
                        Uuid::new_v4(),
                        "Ana sells her paintings.",
                        t0() + minutes(4),
                    )
                }],
                ..TurnWrite::default()
            },
        )
        .await
        .unwrap();

    let ctx = recall(store, &s, t0() + minutes(5), "Ana paints sells lighthouses").await;
    let recalled: Vec<super::Fact> = ctx.facts.iter().map(|r| r.fact.clone()).collect();
    assert_eq!(
        ids_of(&recalled, "Ana paints lighthouses."),
        ["D1:3", "D2:1", "D3:7"]
    );
    assert_eq!(ids_of(&recalled, "Ana sells her paintings."), ["D4:2"]);
    let snap = store.snapshot(&s, t0() + minutes(5)).await.unwrap();
    assert_eq!(ids_of(&snap.facts, "I live in Braga."), ["D2:1"]);
    assert_eq!(
        ids_of(&snap.facts, "No provenance here."),
        Vec::<String>::new()
    );
    assert_eq!(snap.facts.len(), 4, "Porto was replaced: {:?}", snap.facts);
}

/// Recall changes nothing: what a read-only turn (`X-Memory-Write: off`) relies on, caches and
/// mirrors included. Recalls of every kind leave the snapshot as it was, and a later turn
/// finds exactly what was written.
pub async fn a_recall_writes_nothing(store: &dyn MemoryStore) {
    let s = session();
    commit_facts(
        store,
        &s,
        vec![from_turns(
            fact(None, "My dog is called Rex.", t0()),
            &["D1:1"],
        )],
    )
    .await;
    store
        .commit_turn(
            &s,
            TurnWrite {
                items: vec![user("Hello there.", t0())],
                ..TurnWrite::default()
            },
        )
        .await
        .unwrap();
    let before = store.snapshot(&s, t0() + minutes(1)).await.unwrap();
    for q in ["dog", "what is my dog called", "", "nothing matches this"] {
        for m in [1, 30, 90] {
            recall(store, &s, t0() + minutes(m), q).await;
        }
    }
    let never = session();
    recall(store, &never, t0(), "dog").await;
    assert_eq!(store.snapshot(&s, t0() + minutes(1)).await.unwrap(), before);
    let empty = store.snapshot(&never, t0()).await.unwrap();
    assert!(empty.facts.is_empty() && empty.working.is_empty());
    let ctx = recall(store, &s, t0() + minutes(1), "dog").await;
    assert_eq!(texts(&ctx), ["My dog is called Rex."]);
    assert_eq!(ctx.working.len(), 1);
}

fn episode(role: TurnRole, speaker: Option<&str>, text: &str, at: DateTime<Utc>) -> NewFact {
    NewFact::episode(
        EpisodeData {
            role,
            speaker: speaker.map(str::to_owned),
        },
        text,
        at,
        FactSource::Extracted,
        vec![format!("turn-{}", at.timestamp())],
    )
}

async fn recall_episodes(
    store: &dyn MemoryStore,
    s: &SessionId,
    at: DateTime<Utc>,
    q: &str,
    limit: usize,
) -> MemoryContext {
    store
        .recall(
            s,
            RecallQuery {
                now: at,
                terms: Terms::of(q),
                limit,
                episode_limit: limit,
                leave_out_working: false,
                vector: None,
            },
        )
        .await
        .expect("recall")
}

/// Episodes come back in their own list, ranked by their words, with their role, speaker and
/// provenance; a keyed fact and an episode saying the same never take each other's place, and
/// two episodes with the same text are both kept (an episode is never merged or superseded).
pub async fn episodes_are_recalled_apart_from_facts_and_never_superseded(store: &dyn MemoryStore) {
    let s = session();
    let said = "My favourite lake is Bled, we swam there in June.";
    commit_facts(
        store,
        &s,
        vec![
            fact(Some("favourite lake"), "Your favourite lake is Bled.", t0()),
            episode(TurnRole::User, Some("Ana"), said, t0()),
            episode(TurnRole::Assistant, None, "Noted.", t0()),
            episode(TurnRole::User, Some("Ana"), said, t0() + minutes(5)),
            episode(
                TurnRole::User,
                Some("Bo"),
                "The bakery opens at seven.",
                t0(),
            ),
        ],
    )
    .await;
    let ctx = recall_episodes(
        store,
        &s,
        t0() + minutes(10),
        "Which lake did we swim in?",
        5,
    )
    .await;
    assert_eq!(
        texts(&ctx),
        ["Your favourite lake is Bled."],
        "facts list holds facts only"
    );
    let episodes: Vec<(&str, Option<EpisodeData>)> = ctx
        .episodes
        .iter()
        .map(|r| (r.fact.text.as_str(), EpisodeData::of(&r.fact)))
        .collect();
    assert_eq!(
        episodes.len(),
        2,
        "both tellings, and only what matches: {episodes:?}"
    );
    assert!(episodes.iter().all(|(text, data)| {
        *text == said
            && data
                .as_ref()
                .is_some_and(|d| d.role == TurnRole::User && d.speaker.as_deref() == Some("Ana"))
    }));
    assert_eq!(
        ctx.episodes[0].fact.observed_at,
        t0() + minutes(5),
        "the newer telling first"
    );
    assert_eq!(
        ctx.episodes[0].fact.source_turn_ids,
        [format!("turn-{}", (t0() + minutes(5)).timestamp())]
    );
    assert!(
        ctx.episodes
            .iter()
            .all(|r| r.fact.kind == FactKind::Episode)
    );
    assert!(ctx.episodes[0].why.lexical > 0.0 && ctx.episodes[0].why.recency > 0.0);

    // A fact-only recall (episode_limit 0) reads none.
    let facts_only = recall(store, &s, t0() + minutes(10), "Which lake did we swim in?").await;
    assert!(facts_only.episodes.is_empty());

    // A newer keyed fact supersedes the fact, not the episodes.
    commit_facts(
        store,
        &s,
        vec![fact(
            Some("favourite lake"),
            "Your favourite lake is Ohrid.",
            t0() + minutes(20),
        )],
    )
    .await;
    let ctx = recall_episodes(store, &s, t0() + minutes(30), "favourite lake Bled", 5).await;
    assert_eq!(texts(&ctx), ["Your favourite lake is Ohrid."]);
    // Both tellings are still there. (Counted by text: with semantic recall, another episode
    // may be similar enough to the query to be recalled too, which is not what this checks.)
    let tellings = ctx.episodes.iter().filter(|r| r.fact.text == said).count();
    assert_eq!(tellings, 2, "episodes are kept as they were said");
}

/// A recall that asks for no episodes (a model that never reads them) does not stop a later one
/// from finding every episode: those written before it, and those written after it. A store that
/// caches what recall read must not answer the second recall from what the first one cached.
pub async fn episodes_are_found_after_recalls_that_skipped_them(store: &dyn MemoryStore) {
    let s = session();
    let lighthouse = |at| episode(TurnRole::User, None, "We painted the lighthouse blue.", at);
    commit_facts(store, &s, vec![lighthouse(t0())]).await;
    let without = recall_episodes(store, &s, t0() + minutes(1), "lighthouse", 0).await;
    assert!(without.episodes.is_empty() && without.facts.is_empty());
    commit_facts(store, &s, vec![lighthouse(t0() + minutes(2))]).await;
    let with = recall_episodes(store, &s, t0() + minutes(3), "lighthouse", 5).await;
    assert_eq!(with.episodes.len(), 2, "{:?}", with.episodes);
    // And once they are recalled, the next episodes join them.
    commit_facts(store, &s, vec![lighthouse(t0() + minutes(4))]).await;
    let again = recall_episodes(store, &s, t0() + minutes(5), "lighthouse", 5).await;
    assert_eq!(again.episodes.len(), 3, "{:?}", again.episodes);
    let newest = again.episodes.iter().map(|r| r.fact.observed_at).max();
    assert_eq!(newest, Some(t0() + minutes(4)));
}

/// A turn written as the agent writes it, its items also its episodes (same role, text and
/// time): working memory keeps the newest items, each once, while every episode stays, past the
/// working capacity; an injected episode is recalled but never joins working memory; the memory
/// view and a reset count both. (The embedded store keeps such an item and its episode as one
/// row, and must not trim it.)
pub async fn a_turns_episodes_outlive_its_working_items(store: &dyn MemoryStore) {
    let s = session();
    let capacity = store.config().working_capacity;
    let turns = capacity + 3;
    let at = |i: usize| t0() + minutes(i as i64);
    for i in 0..turns {
        let items = vec![
            user(&format!("kayak trip {i}"), at(i)),
            WorkingItem::new(TurnRole::Assistant, format!("noted kayak {i}"), at(i)),
        ];
        let facts = vec![
            episode(TurnRole::User, Some("Ana"), &items[0].text, at(i)),
            episode(TurnRole::Assistant, None, &items[1].text, at(i)),
        ];
        store
            .commit_turn(
                &s,
                TurnWrite {
                    items,
                    facts,
                    ..TurnWrite::default()
                },
            )
            .await
            .unwrap();
    }
    store
        .inject(
            &s,
            vec![NewFact::episode(
                EpisodeData {
                    role: TurnRole::User,
                    speaker: Some("Ana".to_owned()),
                },
                "an injected kayak story",
                at(1),
                FactSource::Injected,
                Vec::new(),
            )],
        )
        .await
        .unwrap();

    let now = at(turns);
    let ctx = recall_episodes(store, &s, now, "kayak", 2 * turns + 1).await;
    let working: Vec<&str> = ctx.working.iter().map(|w| w.text.as_str()).collect();
    let newest: Vec<String> = (turns - capacity / 2..turns)
        .flat_map(|i| [format!("kayak trip {i}"), format!("noted kayak {i}")])
        .collect();
    assert_eq!(working, newest, "the newest {capacity} items, each once");
    assert_eq!(ctx.episodes.len(), 2 * turns + 1, "every episode stays");
    let first = ctx
        .episodes
        .iter()
        .find(|r| r.fact.text == "kayak trip 0")
        .expect("the oldest turn's episode");
    assert_eq!(
        EpisodeData::of(&first.fact),
        Some(EpisodeData {
            role: TurnRole::User,
            speaker: Some("Ana".to_owned())
        })
    );
    assert_eq!(first.fact.observed_at, at(0));
    assert_eq!(
        first.fact.source_turn_ids,
        [format!("turn-{}", at(0).timestamp())]
    );
    let injected = ctx
        .episodes
        .iter()
        .find(|r| r.fact.source == FactSource::Injected)
        .expect("the injected episode");
    assert_eq!(injected.fact.text, "an injected kayak story");

    let snapshot = store.snapshot(&s, now).await.unwrap();
    assert_eq!(snapshot.working.len(), capacity);
    assert_eq!(
        snapshot.facts.len(),
        2 * turns + 1,
        "the memory view shows episodes"
    );
    assert!(
        snapshot
            .facts
            .windows(2)
            .all(|w| w[0].observed_at >= w[1].observed_at),
        "newest first"
    );

    let counts = store.reset(&s).await.unwrap();
    assert_eq!(counts.working_items, capacity as u64);
    assert_eq!(counts.facts, 2 * turns as u64 + 1);
    let ctx = recall_episodes(store, &s, now, "kayak", 10).await;
    assert!(ctx.working.is_empty() && ctx.episodes.is_empty());
}

/// A turn of `asked` (by the user, named `speaker`) and `answered` at `at`, each with its episode.
fn said_turn(asked: &str, answered: &str, at: DateTime<Utc>, speaker: Option<&str>) -> TurnWrite {
    TurnWrite {
        items: vec![
            user(asked, at),
            WorkingItem::new(TurnRole::Assistant, answered, at),
        ],
        facts: vec![
            episode(TurnRole::User, speaker, asked, at),
            episode(TurnRole::Assistant, None, answered, at),
        ],
        ..TurnWrite::default()
    }
}

/// A recall with [`RecallQuery::leave_out_working`] (a turn's) returns no episode that live
/// working memory holds (the same role, text and time as one of its items), and fills its places
/// with others even when the held ones rank first; an injected episode, one whose role differs,
/// and the episodes of items working memory no longer holds (trimmed, or expired on the session
/// clock) are recalled. Without it (the control plane's recall) every episode is.
pub async fn a_turns_recall_leaves_out_the_episodes_working_memory_holds(store: &dyn MemoryStore) {
    let config = *store.config();
    let s = session();
    // Two turns more than working memory holds: the first two turns' items are trimmed.
    let turns = config.working_capacity / 2 + 2;
    let at = |i: usize| t0() + minutes(i as i64);
    let said = |i: usize| [format!("kayak trip {i}"), format!("noted kayak {i}")];
    for i in 0..turns {
        let [asked, answered] = said(i);
        store
            .commit_turn(&s, said_turn(&asked, &answered, at(i), Some("Ana")))
            .await
            .unwrap();
    }
    let last = turns - 1;
    store
        .inject(
            &s,
            vec![
                episode(TurnRole::User, None, "an injected kayak story", at(last)),
                // The last user item's text and time, said by the other role: not that item.
                episode(TurnRole::Assistant, None, &said(last)[0], at(last)),
            ],
        )
        .await
        .unwrap();
    let query = |now, limit, leave_out_working| RecallQuery {
        now,
        terms: Terms::of("kayak"),
        limit,
        episode_limit: limit,
        leave_out_working,
        vector: None,
    };
    let recalled = |ctx: &MemoryContext| -> Vec<(String, TurnRole)> {
        let mut all: Vec<(String, TurnRole)> = ctx
            .episodes
            .iter()
            .map(|r| {
                let role = EpisodeData::of(&r.fact).expect("an episode").role;
                (r.fact.text.clone(), role)
            })
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.as_str().cmp(b.1.as_str())));
        all
    };

    let now = at(turns);
    let all = 2 * turns + 2;
    let ctx = store.recall(&s, query(now, all, true)).await.unwrap();
    assert_eq!(ctx.working.len(), config.working_capacity);
    assert!(ctx.episodes.iter().all(|r| !ctx.working.holds(&r.fact)));
    let mut expected: Vec<(String, TurnRole)> = [0, 1]
        .into_iter()
        .flat_map(|i| {
            let [asked, answered] = said(i);
            [(asked, TurnRole::User), (answered, TurnRole::Assistant)]
        })
        .chain([
            ("an injected kayak story".to_owned(), TurnRole::User),
            (said(last)[0].clone(), TurnRole::Assistant),
        ])
        .collect();
    expected.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.as_str().cmp(b.1.as_str())));
    assert_eq!(
        recalled(&ctx),
        expected,
        "what working memory does not hold"
    );

    // Places are filled before the pool is cut. In a session whose held episodes are the best
    // lexical matches (the newest of equal ones), then 30 old equal ones, then a recent one that
    // matches a little less (a longer text), that recent one is in the pool only if the held
    // ones left it first, and recency puts it first.
    let pooled = session();
    let old = t0() - chrono::Duration::days(400);
    let mut injected: Vec<NewFact> = (0..30)
        .map(|i| {
            episode(
                TurnRole::User,
                None,
                &format!("kayak trip {i}"),
                old + minutes(i),
            )
        })
        .collect();
    injected.push(episode(
        TurnRole::User,
        None,
        "kayak trip to the lake 7",
        now - minutes(60),
    ));
    store.inject(&pooled, injected).await.unwrap();
    for i in 0..config.working_capacity / 2 {
        let (asked, answered) = (format!("kayak trip h{i}"), format!("noted kayak h{i}"));
        store
            .commit_turn(&pooled, said_turn(&asked, &answered, at(i), None))
            .await
            .unwrap();
    }
    let ctx = store.recall(&pooled, query(now, 3, true)).await.unwrap();
    assert_eq!(ctx.episodes.len(), 3, "{:?}", recalled(&ctx));
    assert!(ctx.episodes.iter().all(|r| !ctx.working.holds(&r.fact)));
    if ctx.episodes.iter().all(|r| r.why.vector.is_none()) {
        // Lexical recall (fused with similarity, the other list has a say too).
        assert_eq!(ctx.episodes[0].fact.text, "kayak trip to the lake 7");
    }

    let ctx = store.recall(&s, query(now, all, false)).await.unwrap();
    assert_eq!(ctx.episodes.len(), all, "the control plane's recall: all");

    // Working memory expired on the session clock: every episode is recalled.
    let later = now + chrono::Duration::from_std(config.working_ttl).unwrap() + minutes(1);
    let ctx = store.recall(&s, query(later, all, true)).await.unwrap();
    assert!(ctx.working.is_empty());
    assert_eq!(ctx.episodes.len(), all);

    // A session whose episodes working memory all holds recalls none.
    let one = session();
    let [asked, answered] = said(0);
    store
        .commit_turn(&one, said_turn(&asked, &answered, at(0), None))
        .await
        .unwrap();
    let ctx = store.recall(&one, query(at(1), 5, true)).await.unwrap();
    assert_eq!(ctx.working.len(), 2);
    assert!(ctx.episodes.is_empty(), "{:?}", recalled(&ctx));
    let ctx = store.recall(&one, query(at(1), 5, false)).await.unwrap();
    assert_eq!(ctx.episodes.len(), 2);
}

/// Reset removes a session's episodes with everything else, and episodes are never standing
/// items (which every turn loads whole).
pub async fn a_reset_removes_episodes_and_standing_reads_skip_them(store: &dyn MemoryStore) {
    let s = session();
    commit_facts(
        store,
        &s,
        (0..20)
            .map(|i| episode(TurnRole::User, None, &format!("Walked {i} km today."), t0()))
            .collect(),
    )
    .await;
    let ctx = recall_episodes(store, &s, t0(), "walked", 50).await;
    assert!(ctx.standing.is_empty(), "{:?}", ctx.standing);
    assert_eq!(ctx.episodes.len(), 20);
    let snapshot = store.snapshot(&s, t0()).await.expect("snapshot");
    assert_eq!(snapshot.facts.len(), 20, "the memory view shows episodes");
    let counts = store.reset(&s).await.expect("reset");
    assert_eq!(counts.facts, 20);
    let ctx = recall_episodes(store, &s, t0(), "walked", 50).await;
    assert!(ctx.episodes.is_empty());
}

/// Lexical relevance is Okapi BM25 over the session's own items of one list, with the formula and
/// constants of the embedded store's index ([`LexicalIndex`] is the reference here): rarer words
/// and shorter texts score higher, a word in half the items or more counts a little, and neither
/// another session's items nor the other list change a score. Every text matches the query and
/// none holds a stopword: Postgres measures a text's length by its last word that is not one, and
/// averages lengths over the matches only (`redis_pg::matches`), which agree with
/// the embedded index's word counts and session-wide average only then.
pub async fn lexical_scores_are_bm25_over_the_session(store: &dyn MemoryStore) {
    let s = session();
    let texts = [
        "apple apple pie crust",
        "banana apple split",
        "cherry tart pie",
        "pie",
        "plum pie pie crumble recipe",
    ];
    let query = "apple pie recipes";
    let mut items: Vec<NewFact> = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let at = t0() + minutes(i as i64);
        items.push(fact(None, text, at));
        items.push(episode(TurnRole::User, None, text, at));
    }
    commit_facts(store, &s, items).await;
    // Another session's item: it may not move a score.
    commit_facts(
        store,
        &session(),
        vec![fact(None, "apple apple apple recipe", t0())],
    )
    .await;

    let mut index = super::lexical::LexicalIndex::default();
    for (id, text) in texts.iter().enumerate() {
        index.insert(id as i64, text);
    }
    let terms = Terms::of(query);
    let expected: std::collections::BTreeMap<&str, f64> = index
        .search(&terms)
        .into_iter()
        .map(|(id, score)| (texts[id as usize], score))
        .collect();
    assert_eq!(expected.len(), texts.len(), "every text matches");

    let ctx = recall_episodes(store, &s, t0() + minutes(10), query, 10).await;
    for (list, recalled) in [("facts", &ctx.facts), ("episodes", &ctx.episodes)] {
        let got: std::collections::BTreeMap<&str, f64> = recalled
            .iter()
            .map(|r| (r.fact.text.as_str(), r.why.lexical))
            .collect();
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>(),
            "{list}"
        );
        for (text, score) in &expected {
            // Postgres sums in double precision in another order: equal to well within 1e-9.
            assert!(
                (got[text] - score).abs() < 1e-9 * score.max(1.0),
                "{list}: {text:?} scored {} against BM25's {score}",
                got[text]
            );
        }
    }
    // The formula's consequences, stated on their own: the one text with "recipe" (the rarest
    // query word) comes first; "apple" and "pie" are in most texts and count a little only.
    assert_eq!(ctx.facts[0].fact.text, "plum pie pie crumble recipe");
    assert_eq!(ctx.episodes[0].fact.text, "plum pie pie crumble recipe");
}

/// A unit vector along axis `i` of 4, tilted towards axis `j` by `tilt` (normalised).
fn unit(i: usize, j: usize, tilt: f32) -> Arc<[f32]> {
    let mut v = [0.0_f32; 4];
    v[i] = 1.0;
    v[j] += tilt;
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / norm).collect()
}

fn embedded(mut new: NewFact, vector: Arc<[f32]>) -> NewFact {
    new.embedding = Some(vector);
    new
}

async fn recall_by_meaning(
    store: &dyn MemoryStore,
    s: &SessionId,
    q: &str,
    vector: Arc<[f32]>,
) -> MemoryContext {
    store
        .recall(
            s,
            RecallQuery {
                now: t0() + minutes(1),
                terms: Terms::of(q),
                limit: 5,
                episode_limit: 5,
                leave_out_working: false,
                vector: Some(vector),
            },
        )
        .await
        .expect("recall")
}

/// An item found by its words is ranked by its similarity too, however many items are more
/// similar: here 40 items (more than any candidate pool) are closer to the query's vector than
/// the one that holds the query's word, which must still come back with its similarity, and
/// first, since it is found by both. A store that only knew the similarity of the most similar
/// items would rank it by its words alone, below items found by meaning only.
pub async fn a_lexical_candidate_is_ranked_by_its_similarity_too(store: &dyn MemoryStore) {
    let s = session();
    let mut items: Vec<NewFact> = (0..40)
        .map(|i| {
            embedded(
                episode(
                    TurnRole::User,
                    None,
                    &format!("Chatting about the weather, part {i}."),
                    t0(),
                ),
                unit(0, 1, 0.1),
            )
        })
        .collect();
    items.push(embedded(
        episode(
            TurnRole::User,
            None,
            "We painted the lighthouse blue.",
            t0(),
        ),
        unit(0, 1, 0.9),
    ));
    commit_facts(store, &s, items).await;
    let ctx = recall_by_meaning(store, &s, "lighthouse", unit(0, 1, 0.0)).await;
    let first = &ctx.episodes[0];
    assert_eq!(first.fact.text, "We painted the lighthouse blue.");
    let expected = f64::from(unit(0, 1, 0.9)[0]);
    let similarity = first
        .why
        .vector
        .expect("the lexical candidate's similarity");
    assert!(
        (similarity - expected).abs() < 1e-6,
        "{similarity} against {expected}"
    );
}

/// With a query embedding, an item is found by meaning even when it shares no word with the
/// query, an item found by both words and meaning ranks first, an item without an embedding is
/// still found by its words, and vectors of another dimension are never compared. The vectors
/// are given (4 dimensions): this is the store's part of semantic recall, whatever the model.
pub async fn semantic_recall_finds_by_meaning_and_fuses_with_words(store: &dyn MemoryStore) {
    let s = session();
    commit_facts(
        store,
        &s,
        vec![
            embedded(
                fact(None, "Went to a support group; it was powerful.", t0()),
                unit(0, 1, 0.1),
            ),
            embedded(
                fact(None, "The heron meeting ran late.", t0()),
                unit(0, 2, 0.6),
            ),
            embedded(fact(None, "Bought a red kayak.", t0()), unit(3, 1, 0.0)),
            // A subnormal component (a model can produce one) is stored like any other.
            embedded(
                fact(None, "Tiny components are kept.", t0()),
                Arc::from(vec![1.0e-30_f32, 1.0e-40, 0.0, 1.0]),
            ),
            fact(None, "The meeting notes are on the desk.", t0()),
            embedded(
                fact(None, "Another model's meeting vector.", t0()),
                Arc::from(vec![1.0_f32, 0.0]),
            ),
            embedded(
                episode(
                    TurnRole::User,
                    None,
                    "That group session helped me a lot.",
                    t0(),
                ),
                unit(0, 1, 0.2),
            ),
        ],
    )
    .await;
    let ctx = recall_by_meaning(store, &s, "Which meeting helped?", unit(0, 1, 0.0)).await;
    let found = texts(&ctx);
    assert_eq!(
        found[0], "The heron meeting ran late.",
        "found by both words and meaning: {:?}",
        ctx.facts
    );
    assert!(
        found.contains(&"Went to a support group; it was powerful."),
        "found by meaning alone: {found:?}"
    );
    assert!(
        found.contains(&"The meeting notes are on the desk."),
        "found by words alone: {found:?}"
    );
    assert!(!found.contains(&"Bought a red kayak."), "{found:?}");
    let by_meaning = ctx
        .facts
        .iter()
        .find(|r| r.fact.text.starts_with("Went to"))
        .unwrap();
    assert_eq!(by_meaning.why.lexical, 0.0);
    assert!(
        by_meaning.why.vector.is_some_and(|v| v > 0.99),
        "{by_meaning:?}"
    );
    let other_model = ctx
        .facts
        .iter()
        .find(|r| r.fact.text.starts_with("Another"));
    assert!(
        other_model.is_none_or(|r| r.why.vector.is_none()),
        "{other_model:?}"
    );
    assert_eq!(
        ctx.episodes.len(),
        1,
        "episodes by meaning too: {:?}",
        ctx.episodes
    );
    assert!(ctx.episodes[0].why.vector.is_some_and(|v| v > 0.9));

    // Products of tiny components underflow f32; recall still answers, ranking as before.
    let tiny = Arc::from(vec![1.0e-20_f32, 1.0, 0.0, 0.0]);
    let ctx = recall_by_meaning(store, &s, "Which meeting helped?", tiny).await;
    assert!(!ctx.facts.is_empty());
}

/// Items stored without an embedding are listed for the backfill (oldest first) until it gives
/// them one; then they are found by meaning. Rules, reminders and other sessions' items are not
/// this session's to embed.
pub async fn unembedded_items_wait_for_the_backfill_and_take_its_vectors(store: &dyn MemoryStore) {
    let s = session();
    commit_facts(
        store,
        &s,
        vec![
            fact(None, "Went to a support group; it was powerful.", t0()),
            episode(
                TurnRole::User,
                None,
                "That group session helped me a lot.",
                t0(),
            ),
            embedded(fact(None, "Bought a red kayak.", t0()), unit(3, 1, 0.0)),
        ],
    )
    .await;
    let mine = |pending: &super::Unembedded| -> Vec<(Uuid, String)> {
        pending
            .items
            .iter()
            .filter(|(session, _, _)| *session == s)
            .map(|(_, id, text)| (*id, text.clone()))
            .collect()
    };
    let pending = store.unembedded(100_000).await.expect("unembedded");
    let waiting = mine(&pending);
    let waiting_texts: Vec<&str> = waiting.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(
        waiting_texts,
        [
            "Went to a support group; it was powerful.",
            "That group session helped me a lot."
        ]
    );
    assert!(pending.total >= 2);
    let before = recall_by_meaning(store, &s, "Which meeting?", unit(0, 1, 0.0)).await;
    assert!(
        before.facts.is_empty() && before.episodes.is_empty(),
        "{before:?}"
    );

    let vectors = waiting
        .iter()
        .map(|(id, _)| (*id, unit(0, 1, 0.1)))
        .collect();
    store
        .set_embeddings(&s, vectors)
        .await
        .expect("set_embeddings");
    // Another session's ids (a fact's and an episode's) change nothing here.
    let elsewhere = waiting
        .iter()
        .map(|(id, _)| (*id, unit(3, 2, 0.0)))
        .collect();
    store
        .set_embeddings(&session(), elsewhere)
        .await
        .expect("set_embeddings of another session");
    assert!(mine(&store.unembedded(100_000).await.unwrap()).is_empty());
    let after = recall_by_meaning(store, &s, "Which meeting?", unit(0, 1, 0.0)).await;
    assert_eq!(texts(&after), ["Went to a support group; it was powerful."]);
    assert_eq!(after.episodes.len(), 1);
    assert!(after.facts[0].why.vector.is_some_and(|v| v > 0.99));
}

/// A store with semantic recall on, for the checks: every fact and episode it writes without an
/// embedding gets [`toy_vector`] of its text, and every recall without a query embedding gets
/// that of its words. The vectors are a stand-in for a model's (its words hashed into 64
/// dimensions): they make the store rank by rank fusion, which is what the checks must survive,
/// without a model in the loop.
pub struct WithVectors<S>(pub S);

/// A unit vector of `text`'s content words, each hashed into one of 64 dimensions.
pub fn toy_vector(text: &str) -> Option<Arc<[f32]>> {
    let mut v = [0.0_f32; 64];
    for term in Terms::of(text).iter() {
        let bucket = term
            .bytes()
            .fold(17_u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
        v[bucket as usize % 64] += 1.0;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    (norm > 0.0).then(|| v.iter().map(|x| x / norm).collect())
}

fn with_toy_vectors(mut facts: Vec<NewFact>) -> Vec<NewFact> {
    for fact in &mut facts {
        if fact.embedding.is_none() && matches!(fact.kind, FactKind::Fact | FactKind::Episode) {
            fact.embedding = toy_vector(&fact.text);
        }
    }
    facts
}

#[async_trait::async_trait]
impl<S> MemoryStore for WithVectors<S>
where
    S: std::ops::Deref + Send + Sync + 'static,
    S::Target: MemoryStore,
{
    fn backend(&self) -> &'static str {
        self.0.backend()
    }

    fn config(&self) -> &MemoryConfig {
        self.0.config()
    }

    async fn recall(
        &self,
        session: &SessionId,
        mut query: RecallQuery,
    ) -> Result<MemoryContext, super::MemoryError> {
        if query.vector.is_none() {
            query.vector = toy_vector(&query.terms.join(" "));
        }
        self.0.recall(session, query).await
    }

    async fn commit_turn(
        &self,
        session: &SessionId,
        mut turn: TurnWrite,
    ) -> Result<Vec<StoredFact>, super::MemoryError> {
        turn.facts = with_toy_vectors(turn.facts);
        self.0.commit_turn(session, turn).await
    }

    async fn inject(
        &self,
        session: &SessionId,
        facts: Vec<NewFact>,
    ) -> Result<Vec<StoredFact>, super::MemoryError> {
        self.0.inject(session, with_toy_vectors(facts)).await
    }

    async fn reset(&self, session: &SessionId) -> Result<super::ResetCounts, super::MemoryError> {
        self.0.reset(session).await
    }

    async fn snapshot(
        &self,
        session: &SessionId,
        now: DateTime<Utc>,
    ) -> Result<super::Snapshot, super::MemoryError> {
        self.0.snapshot(session, now).await
    }

    async fn health(&self) -> Vec<protocol::control::DependencyHealth> {
        self.0.health().await
    }

    async fn unembedded(&self, limit: usize) -> Result<super::Unembedded, super::MemoryError> {
        self.0.unembedded(limit).await
    }

    async fn set_embeddings(
        &self,
        session: &SessionId,
        vectors: Vec<(Uuid, Arc<[f32]>)>,
    ) -> Result<(), super::MemoryError> {
        self.0.set_embeddings(session, vectors).await
    }
}
