//! Query plans: recall and the group commit's lookups reach rows through an index, whatever the statistics.

use agent_server::memory::EpisodeData;

use crate::harness::*;

/// Every node of a plan (`EXPLAIN (ANALYZE, FORMAT JSON)`), each an object of its fields.
fn plan_nodes(plan: &serde_json::Value) -> Vec<&serde_json::Map<String, serde_json::Value>> {
    let mut found = Vec::new();
    let mut nodes = vec![plan];
    while let Some(node) = nodes.pop() {
        match node {
            serde_json::Value::Array(items) => nodes.extend(items),
            serde_json::Value::Object(fields) => {
                found.push(fields);
                nodes.extend(fields.values());
            }
            _ => {}
        }
    }
    found
}

/// The scans of a plan through GIN index `index`: for each, whether its condition holds the
/// query's words (`@@`) and whether it ran.
fn gin_scans(plan: &serde_json::Value, index: &str) -> Vec<(bool, bool)> {
    plan_nodes(plan)
        .into_iter()
        .filter(|fields| fields.get("Index Name").and_then(|n| n.as_str()) == Some(index))
        .map(|fields| {
            let searched = fields
                .get("Index Cond")
                .and_then(|c| c.as_str())
                .is_some_and(|c| c.contains("@@"));
            let ran = fields.get("Actual Loops").and_then(|l| l.as_u64()) > Some(0);
            (searched, ran)
        })
        .collect()
}

/// How many times a plan ran a scan of `agentwall_facts` (through any index).
fn facts_scanned(plan: &serde_json::Value) -> u64 {
    plan_nodes(plan)
        .into_iter()
        .filter(|fields| {
            fields.get("Relation Name").and_then(|n| n.as_str()) == Some("agentwall_facts")
        })
        .map(|fields| {
            fields
                .get("Actual Loops")
                .and_then(|l| l.as_u64())
                .unwrap_or(0)
        })
        .sum()
}

/// Recall must cost what its own session costs, whatever other sessions hold: a small session is
/// read whole through its entry of a list's GIN index, a large one (more than 256 items of the
/// list, a session may hold 100,000) is searched through it with the query's words; for facts and
/// for episodes alike. Checked on the plan Postgres runs, before statistics and after them; and
/// `fact_count`, which chooses for facts, follows the writes.
#[tokio::test]
async fn recall_reads_a_small_session_and_searches_a_large_one_through_its_index() {
    let harness = Harness::new().await;
    let fill = |session: &'static str, n: usize, word: &'static str| {
        let store = harness.store.clone();
        async move {
            let session = SessionId::parse(session).unwrap();
            for start in (0..n).step_by(1_000) {
                let batch = (start..n.min(start + 1_000))
                    .map(|i| NewFact {
                        embedding: None,
                        source_turn_ids: Vec::new(),
                        kind: FactKind::Fact,
                        key: None,
                        text: format!("Note {i}: the {word} number {} is blue.", i % 97),
                        data: None,
                        observed_at: t0(),
                        importance: 0.5,
                        source: FactSource::Injected,
                    })
                    .collect();
                store.inject(&session, batch).await.unwrap();
                let episodes = (start..n.min(start + 1_000))
                    .map(|i| {
                        NewFact::episode(
                            EpisodeData {
                                role: TurnRole::User,
                                speaker: None,
                            },
                            format!("Turn {i}: the {word} number {} is red.", i % 97),
                            t0(),
                            FactSource::Injected,
                            Vec::new(),
                        )
                    })
                    .collect();
                store.inject(&session, episodes).await.unwrap();
            }
        }
    };
    fill("large-session", 5_000, "lighthouse").await;
    fill("small-session", 20, "lighthouse").await;
    fill("other-session", 5_000, "harbour").await;
    let client = harness.db.client().await;
    let fact_count = |session: &'static str| {
        let client = &client;
        async move {
            client
                .query_one(
                    "SELECT fact_count FROM agentwall_sessions WHERE session_id = $1",
                    &[&session],
                )
                .await
                .unwrap()
                .get::<_, i64>(0)
        }
    };
    assert_eq!(fact_count("large-session").await, 5_000);
    assert_eq!(fact_count("small-session").await, 20);

    for analyzed in [false, true] {
        if analyzed {
            client
                .batch_execute("ANALYZE agentwall_facts")
                .await
                .unwrap();
        }
        let words = Some("lighthouse | 42");
        for (session, scan) in [
            ("large-session", Some(true)),
            ("small-session", Some(false)),
        ] {
            let sql = format!(
                "EXPLAIN (ANALYZE, FORMAT JSON) {}",
                agent_server::memory::redis_pg::recall_statement()
            );
            let plan: serde_json::Value = client
                .query_one(
                    &sql,
                    &[&vec![session], &vec![words], &vec![8_i64], &vec![8_i64]],
                )
                .await
                .unwrap()
                .get(0);
            for index in [
                "agentwall_facts_session_tsv",
                "agentwall_facts_session_episode_tsv",
            ] {
                let scans = gin_scans(&plan, index);
                let ran: Vec<bool> = scans.iter().filter(|s| s.1).map(|s| s.0).collect();
                // A small session's episodes may also be read whole through the btree index of
                // its items that are not facts: either way by session, never with the words.
                let ok = match scan {
                    Some(false) if index.contains("episode") => !ran.contains(&true),
                    _ => ran == Vec::from_iter(scan),
                };
                assert!(
                    ok,
                    "recall in {session} (analyzed: {analyzed}) should run {} of {index}: \
                     {scans:?}\n{plan:#}",
                    match scan {
                        Some(true) => "one scan, with the words,",
                        Some(false) => "one scan, by session,",
                        None => "no scan",
                    }
                );
            }
            let text = plan.to_string();
            assert!(!text.contains("\"Seq Scan\""), "{plan:#}");
            if scan.is_none() {
                assert_eq!(facts_scanned(&plan), 0, "{plan:#}");
            }
        }
    }
    let ctx = harness
        .store
        .recall(
            &SessionId::parse("large-session").unwrap(),
            query("Which lighthouse is number 42?"),
        )
        .await
        .unwrap();
    assert!(!ctx.facts.is_empty());
    assert!(
        ctx.facts.iter().all(|f| f.fact.text.contains("number 42 ")),
        "the best matches hold both words: {:?}",
        ctx.facts.iter().map(|f| &f.fact.text).collect::<Vec<_>>()
    );

    // A keyed fact and its replacement count once; a reset empties the count.
    let small = SessionId::parse("small-session").unwrap();
    for text in ["My locker is 12.", "My locker is 14."] {
        harness
            .store
            .commit_turn(
                &small,
                TurnWrite {
                    items: vec![user(text)],
                    facts: vec![fact(Some("locker"), text)],
                    ..TurnWrite::default()
                },
            )
            .await
            .unwrap();
    }
    assert_eq!(fact_count("small-session").await, 21);
    // A keyed fact replaced by a rule (a change of kind) no longer counts, and counts again when
    // a fact replaces the rule; a restatement changes no count (migration 5's row trigger).
    let keyed = |kind: FactKind, text: &str| TurnWrite {
        items: vec![user(text)],
        facts: vec![NewFact {
            embedding: None,
            source_turn_ids: Vec::new(),
            kind,
            ..fact(Some("locker"), text)
        }],
        ..TurnWrite::default()
    };
    let rule = keyed(FactKind::Rule, "Always use locker 16.");
    harness.store.commit_turn(&small, rule).await.unwrap();
    assert_eq!(fact_count("small-session").await, 20);
    let back = keyed(FactKind::Fact, "My locker is 18.");
    harness.store.commit_turn(&small, back).await.unwrap();
    assert_eq!(fact_count("small-session").await, 21);
    client
        .batch_execute(
            "UPDATE agentwall_facts SET importance = 0.9 WHERE session_id = 'small-session';
             UPDATE agentwall_facts SET kind = 'reminder'
              WHERE session_id = 'small-session' AND fact_key = 'locker'",
        )
        .await
        .unwrap();
    assert_eq!(fact_count("small-session").await, 20);
    harness.store.reset(&small).await.unwrap();
    assert_eq!(fact_count("small-session").await, 0);
    assert_eq!(fact_count("large-session").await, 5_000);
}

/// The store's statements are planned once, when prepared: a recall planned at every execution
/// spent 1.1 ms planning against 0.3 ms running (docs/results/added-latency.md). Its plans are
/// the generic ones the tests of this file check; and semantic recall's index walks keep the
/// order they need.
#[tokio::test]
async fn the_stores_connections_plan_once_and_walk_vector_indexes_in_order() {
    let harness = Harness::new().await;
    for (name, expected) in [
        ("plan_cache_mode", "force_generic_plan"),
        ("hnsw.iterative_scan", "strict_order"),
        ("client_min_messages", "warning"),
    ] {
        let value = harness.store.connection_setting(name).await.unwrap();
        assert_eq!(value, expected, "{name}");
    }
}

/// A group commit finds the facts it restates, retires or replaces, and recall the sessions it
/// reads, through an index whatever the statistics say, so a batch costs what its own sessions
/// hold, not what the tables hold. Checked on the generic plan of each statement (the only plan
/// the store's connections use: see the test above), on tables without statistics (as every
/// fresh database is until autovacuum's first `ANALYZE`; the plain joins of `unnest(...)` these
/// statements once were scanned whole tables there) and after `ANALYZE`.
#[tokio::test]
async fn batches_find_rows_through_an_index_with_or_without_statistics() {
    let harness = Harness::new().await;
    let client = harness.db.client().await;
    // Other sessions' rows, enough that reading them all costs more than an index.
    client
        .batch_execute(
            "INSERT INTO agentwall_sessions (session_id)
             SELECT 'other-' || n FROM generate_series(1, 2000) AS n",
        )
        .await
        .unwrap();
    for s in 0..8 {
        let session = SessionId::parse(&format!("lookup-{s}")).unwrap();
        let facts = (0..100)
            .map(|i| NewFact {
                embedding: None,
                source_turn_ids: Vec::new(),
                kind: FactKind::Fact,
                key: (i % 4 == 0).then(|| format!("key-{i}")),
                text: format!("Note {i} of session {s}: the tide comes in at {i} past."),
                data: None,
                observed_at: t0(),
                importance: 0.5,
                source: FactSource::Injected,
            })
            .collect();
        harness.store.inject(&session, facts).await.unwrap();
    }
    client
        .batch_execute("SET plan_cache_mode = force_generic_plan")
        .await
        .unwrap();
    for analyzed in [false, true] {
        if analyzed {
            client.batch_execute("ANALYZE").await.unwrap();
        }
        let recall = ("recall", agent_server::memory::redis_pg::recall_statement());
        let statements = agent_server::memory::redis_pg::fact_lookup_statements();
        for &(name, sql) in statements.iter().chain([&recall]) {
            let prepared = format!("{name}_{analyzed}");
            client
                .batch_execute(&format!("PREPARE {prepared} AS {sql}"))
                .await
                .unwrap_or_else(|e| panic!("prepare {name}: {e}"));
            let nulls = vec!["NULL"; highest_parameter(sql)].join(", ");
            let plan: Vec<String> = client
                .query(&format!("EXPLAIN EXECUTE {prepared}({nulls})"), &[])
                .await
                .unwrap()
                .iter()
                .map(|row| row.get(0))
                .collect();
            let plan = plan.join("\n");
            assert!(
                !plan.contains("Seq Scan"),
                "{name} (analyzed: {analyzed}) scans a whole table:\n{plan}"
            );
        }
    }
}

/// The highest `$n` in `sql`: how many parameters it takes.
fn highest_parameter(sql: &str) -> usize {
    sql.split('$')
        .skip(1)
        .filter_map(|after| {
            let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .max()
        .unwrap_or(0)
}

/// A unit vector of 8 dimensions for item `i`: distinct directions, so that each item is its own
/// nearest neighbour.
fn direction(i: usize) -> Arc<[f32]> {
    let v: Vec<f32> = (0..8)
        .map(|d| ((i * 7 + 1) as f32 * (d as f32 + 1.0) * 0.618).sin())
        .collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / norm).collect()
}

/// Semantic recall (pgvector) reads a small session exactly and walks the HNSW index of the
/// vectors' dimension for a large one, which the store builds by itself when it first recalls
/// from a large session; both find an item's own vector first. Checked on the plan Postgres runs.
#[tokio::test]
async fn semantic_recall_reads_a_small_session_exactly_and_a_large_one_through_hnsw() {
    let harness = Harness::new().await;
    let large = agent_server::memory::redis_pg::SIMILAR_EXACT_UP_TO as usize + 100;
    let fill = |session: &'static str, n: usize| {
        let store = harness.store.clone();
        async move {
            let session = SessionId::parse(session).unwrap();
            for start in (0..n).step_by(500) {
                let batch = (start..n.min(start + 500))
                    .map(|i| NewFact {
                        embedding: Some(direction(i)),
                        ..fact(None, &format!("Note {i} of {session}."))
                    })
                    .collect();
                store.inject(&session, batch).await.unwrap();
            }
        }
    };
    fill("small-session", 20).await;
    fill("large-session", large).await;
    let client = harness.db.client().await;
    let index_count = async || -> i64 {
        client
            .query_one(
                "SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'agentwall_facts_embedding%'",
                &[],
            )
            .await
            .unwrap()
            .get(0)
    };
    assert_eq!(
        index_count().await,
        0,
        "no index while every session is small enough"
    );
    // The first recall of a large session reads exactly and has the index built.
    let ctx = harness
        .store
        .recall(
            &SessionId::parse("large-session").unwrap(),
            RecallQuery {
                vector: Some(direction(7)),
                ..query("nothing lexical here")
            },
        )
        .await
        .unwrap();
    assert_eq!(
        ctx.facts.first().map(|f| f.fact.text.as_str()),
        Some("Note 7 of large-session.")
    );
    eventually(Duration::from_secs(60), || {
        let client = &client;
        async move {
            client
                .query_opt(
                    "SELECT 1 FROM pg_class AS c JOIN pg_index AS i ON i.indexrelid = c.oid
                     WHERE c.relname = 'agentwall_facts_embedding_hnsw_8_fact' AND i.indisvalid",
                    &[],
                )
                .await
                .unwrap()
                .map(|_| ())
                .ok_or_else(|| MemoryError::Backend {
                    dependency: "postgres",
                    reason: "the HNSW index is not built yet".to_owned(),
                })
        }
    })
    .await;
    client
        .batch_execute("ANALYZE agentwall_facts")
        .await
        .unwrap();
    let sql = format!(
        "EXPLAIN (ANALYZE, FORMAT JSON) {}",
        agent_server::memory::redis_pg::similar_statement(8)
    );
    for (session, through_index) in [("large-session", true), ("small-session", false)] {
        let vector: Vec<f32> = direction(7).to_vec();
        let plan: serde_json::Value = client
            .query_one(
                &sql,
                &[
                    &session,
                    &vector,
                    &32_i64,
                    &true,
                    &false,
                    &Vec::<Uuid>::new(),
                    &false,
                ],
            )
            .await
            .unwrap()
            .get(0);
        let hnsw_ran = plan_nodes(&plan).into_iter().any(|fields| {
            fields.get("Index Name").and_then(|n| n.as_str())
                == Some("agentwall_facts_embedding_hnsw_8_fact")
                && fields.get("Actual Loops").and_then(|l| l.as_u64()) > Some(0)
        });
        assert_eq!(hnsw_ran, through_index, "{session}: {plan:#}");
        let scanned_table = plan_nodes(&plan).into_iter().any(|fields| {
            fields.get("Node Type").and_then(|n| n.as_str()) == Some("Seq Scan")
                && fields.get("Actual Loops").and_then(|l| l.as_u64()) > Some(0)
        });
        assert!(!scanned_table, "{session}: {plan:#}");

        let ctx = harness
            .store
            .recall(
                &SessionId::parse(session).unwrap(),
                RecallQuery {
                    vector: Some(direction(7)),
                    ..query("nothing lexical here")
                },
            )
            .await
            .unwrap();
        assert_eq!(
            ctx.facts.first().map(|f| f.fact.text.as_str()),
            Some(format!("Note 7 of {session}.").as_str()),
            "the item whose vector the query is comes first"
        );
    }
}
