//! Start-up: migrations (concurrent, from older and newer versions, a refused extension), waiting for an unreachable dependency, then failing, and health.

use crate::harness::*;

// ---------------------------------------------------------------------------------------------
// Backend-specific tests.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_are_idempotent_and_safe_when_servers_start_together() {
    let db = TestDb::create().await;
    let open = || {
        RedisPostgresStore::connect(
            config(&redis_url(), &db.url, &unique_prefix()),
            conformance::config(),
        )
    };
    let (a, b, c) = tokio::join!(open(), open(), open());
    for store in [a, b, c] {
        store.expect("a store starting alongside others migrates or waits");
    }
    open()
        .await
        .expect("a store starting on a migrated database");
    let rows = db
        .client()
        .await
        .query(
            "SELECT version FROM agentwall_schema_migrations ORDER BY version",
            &[],
        )
        .await
        .unwrap();
    let versions: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(
        versions,
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        "each migration recorded exactly once"
    );
}

/// A database a version-7 server wrote, with episodes, is migrated on start: migration 8 counts
/// each session's episodes (BM25's document count), and the triggers keep counting from there.
#[tokio::test]
async fn a_version_7_database_gets_its_episodes_counted() {
    let db = TestDb::create().await;
    let client = db.client().await;
    let migrations = [
        include_str!("../../src/memory/redis_pg/migrations/0001_init.sql"),
        include_str!("../../src/memory/redis_pg/migrations/0002_drop_tsv_gin.sql"),
        include_str!("../../src/memory/redis_pg/migrations/0003_session_scoped_indexes.sql"),
        include_str!("../../src/memory/redis_pg/migrations/0004_restate_in_place.sql"),
        include_str!("../../src/memory/redis_pg/migrations/0005_count_kind_changes_by_row.sql"),
        include_str!("../../src/memory/redis_pg/migrations/0006_source_turn_ids.sql"),
        include_str!("../../src/memory/redis_pg/migrations/0007_episodes_and_embeddings.sql"),
    ];
    client
        .batch_execute(
            "CREATE TABLE agentwall_schema_migrations (
                 version integer PRIMARY KEY, name text NOT NULL,
                 applied_at timestamptz NOT NULL DEFAULT now());",
        )
        .await
        .unwrap();
    for (version, sql) in (1..).zip(migrations) {
        client.batch_execute(sql).await.unwrap();
        client
            .execute(
                "INSERT INTO agentwall_schema_migrations (version, name) VALUES ($1, 'old')",
                &[&version],
            )
            .await
            .unwrap();
    }
    let insert = |text: &'static str| {
        format!(
            "INSERT INTO agentwall_facts (id, session_id, kind, body, observed_at, importance, source)
             VALUES ('{}', 'counted-session', 'episode', '{text}', '2030-01-01T09:00:00Z', 0.5,
                     'extracted');",
            Uuid::new_v4()
        )
    };
    client
        .batch_execute(&format!(
            "INSERT INTO agentwall_sessions (session_id) VALUES ('counted-session');
             {} {}",
            insert("We painted the lighthouse."),
            insert("The boat is red.")
        ))
        .await
        .unwrap();
    let store = RedisPostgresStore::connect(
        config(&redis_url(), &db.url, &unique_prefix()),
        conformance::config(),
    )
    .await
    .expect("a version-7 database is migrated");
    let count = || async {
        client
            .query_one(
                "SELECT episode_count FROM agentwall_sessions WHERE session_id = 'counted-session'",
                &[],
            )
            .await
            .unwrap()
            .get::<_, i64>(0)
    };
    assert_eq!(count().await, 2, "the episodes already stored are counted");
    client.batch_execute(&insert("A third one.")).await.unwrap();
    assert_eq!(count().await, 3, "and new ones as they are written");
    let s = SessionId::parse("counted-session").unwrap();
    store.reset(&s).await.unwrap();
    assert_eq!(count().await, 0, "a reset deletes and uncounts them");
}

/// A database a version-1 server wrote is migrated on start: its facts survive, recall finds
/// them, and it ends with version 3's session-scoped indexes only, none of which covers what a
/// restatement changes (version 4), so that Postgres can update a restated fact HOT.
#[tokio::test]
async fn a_version_1_database_is_upgraded_and_keeps_its_facts() {
    let db = TestDb::create().await;
    let client = db.client().await;
    client
        .batch_execute(&format!(
            "CREATE TABLE agentwall_schema_migrations (
                 version integer PRIMARY KEY, name text NOT NULL,
                 applied_at timestamptz NOT NULL DEFAULT now());
             {}
             INSERT INTO agentwall_schema_migrations (version, name) VALUES (1, 'init');
             INSERT INTO agentwall_facts (id, session_id, kind, body, observed_at, importance, source)
             VALUES ('{}', 'upgraded-session', 'fact', 'The lighthouse keeper is Ada.',
                     '2030-01-01T09:00:00Z', 0.5, 'injected');",
            include_str!("../../src/memory/redis_pg/migrations/0001_init.sql"),
            Uuid::new_v4()
        ))
        .await
        .unwrap();
    let store = RedisPostgresStore::connect(
        config(&redis_url(), &db.url, &unique_prefix()),
        conformance::config(),
    )
    .await
    .expect("a version-1 database is migrated");
    let s = SessionId::parse("upgraded-session").unwrap();
    let ctx = store
        .recall(&s, query("Who keeps the lighthouse?"))
        .await
        .unwrap();
    let texts: Vec<&str> = ctx.facts.iter().map(|f| f.fact.text.as_str()).collect();
    assert_eq!(texts, ["The lighthouse keeper is Ada."]);
    let versions: Vec<i32> = client
        .query(
            "SELECT version FROM agentwall_schema_migrations ORDER BY version",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(versions, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    let indexes: Vec<(String, String)> = client
        .query(
            "SELECT indexname::text, indexdef FROM pg_indexes WHERE tablename = 'agentwall_facts'
             ORDER BY indexname",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    for (name, definition) in &indexes {
        for column in ["observed_at", "observed_ns", "importance", "source"] {
            assert!(
                !definition.contains(column),
                "{name} covers {column}, which a restatement changes: {definition}"
            );
        }
    }
    let options: Option<Vec<String>> = client
        .query_one(
            "SELECT reloptions FROM pg_class WHERE relname = 'agentwall_facts'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(options, Some(vec!["fillfactor=90".to_owned()]));
    let indexes: Vec<&str> = indexes.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        indexes,
        [
            "agentwall_facts_pkey",
            "agentwall_facts_session_episode_tsv",
            "agentwall_facts_session_key",
            "agentwall_facts_session_rules",
            "agentwall_facts_session_standing",
            "agentwall_facts_session_tsv"
        ],
        "one index per kind of read: migration 3 for facts and standing items, migration 7 for \
         episodes and for rules and reminders apart from episodes"
    );
}

/// A migration that cannot run names itself and says what to do, and leaves nothing behind: here
/// the role may create tables but not extensions, so version 3's CREATE EXTENSION is refused.
#[tokio::test]
async fn a_refused_extension_fails_the_start_with_a_hint_and_migrates_nothing() {
    let db = TestDb::create().await;
    let role = format!("no_extensions_{}", Uuid::new_v4().simple());
    let admin = db.client().await;
    admin
        .batch_execute(&format!(
            "CREATE ROLE {role} LOGIN;
             GRANT CONNECT ON DATABASE {} TO {role};
             GRANT CREATE ON SCHEMA public TO {role};",
            db.name
        ))
        .await
        .unwrap();
    let err = RedisPostgresStore::connect(
        config(&redis_url(), &with_user(&db.url, &role), &unique_prefix()),
        conformance::config(),
    )
    .await
    .expect_err("the role cannot create btree_gin");
    let message = err.to_string();
    assert!(
        message.contains("migration 3 (session_scoped_indexes) failed")
            && message.contains("btree_gin")
            && message.contains("contrib"),
        "{message}"
    );
    let tables = admin
        .query(
            "SELECT 1 FROM pg_tables WHERE tablename = 'agentwall_facts'",
            &[],
        )
        .await
        .unwrap();
    assert!(tables.is_empty(), "the migrations ran as one transaction");
    admin
        .batch_execute(&format!("DROP OWNED BY {role}; DROP ROLE {role};"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_database_from_a_newer_binary_is_refused() {
    let harness = Harness::new().await;
    harness
        .db
        .client()
        .await
        .batch_execute(
            "INSERT INTO agentwall_schema_migrations (version, name) VALUES (999, 'future')",
        )
        .await
        .unwrap();
    let err = RedisPostgresStore::connect(
        config(&redis_url(), &harness.db.url, &harness.prefix),
        conformance::config(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            err,
            MemoryError::Corrupt {
                dependency: "postgres",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("999"), "{err}");
}

#[tokio::test]
async fn start_up_waits_out_its_budget_then_names_the_unreachable_dependency() {
    let db = TestDb::create().await;
    let mut cfg = config(
        &format!("redis://127.0.0.1:{}", closed_port()),
        &db.url,
        &unique_prefix(),
    );
    cfg.timeout = Duration::from_secs(1);
    cfg.startup_timeout = Duration::from_secs(2);
    let started = Instant::now();
    let err = RedisPostgresStore::connect(cfg, conformance::config())
        .await
        .unwrap_err();
    assert_unavailable(&err, "redis");
    assert!(err.to_string().contains("127.0.0.1"), "says where: {err}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(1500) && waited < Duration::from_secs(5),
        "tried again for the start-up budget (2 s), then stopped: {waited:?}"
    );

    let mut cfg = config(
        &redis_url(),
        &format!("postgres://app:s3cret@127.0.0.1:{}/x", closed_port()),
        &unique_prefix(),
    );
    cfg.timeout = Duration::from_secs(1);
    cfg.startup_timeout = Duration::from_secs(2);
    let err = RedisPostgresStore::connect(cfg, conformance::config())
        .await
        .unwrap_err();
    assert_unavailable(&err, "postgres");
    assert!(
        !err.to_string().contains("s3cret"),
        "password leaked: {err}"
    );
    assert!(
        err.to_string().contains("refused"),
        "the cause, not only the kind of error: {err}"
    );
}

#[tokio::test]
async fn start_up_waits_for_a_dependency_that_comes_up_within_its_budget() {
    let db = TestDb::create().await;
    let dir = tempfile::tempdir().unwrap();
    let port = closed_port();
    let mut cfg = config(
        &format!("redis://127.0.0.1:{port}"),
        &db.url,
        &unique_prefix(),
    );
    cfg.timeout = Duration::from_secs(1);
    cfg.startup_timeout = Duration::from_secs(30);
    // Redis starts a second after the server began to connect, as in a stack whose services
    // come up in any order.
    let path = dir.path().to_owned();
    let redis = tokio::task::spawn_blocking(move || {
        std::thread::sleep(Duration::from_secs(1));
        RedisChild::start(&path, port)
    });
    let started = Instant::now();
    let store = RedisPostgresStore::connect(cfg, conformance::config()).await;
    let _redis = redis.await.unwrap();
    store.expect("the store waits for Redis within its start-up budget");
    assert!(started.elapsed() >= Duration::from_secs(1));
}

#[tokio::test]
async fn health_reports_each_dependency() {
    let harness = Harness::new().await;
    let health = harness.health().await;
    let names: Vec<&str> = health.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["redis", "postgres"]);
    assert!(health.iter().all(|h| h.ok && h.error.is_none()));
    assert_eq!(harness.backend(), "redis+postgres");
}

/// A database of version 8 holds its embeddings as `real[]`: migration 9 makes them pgvector's
/// `vector` and keeps them (semantic recall finds the item by its old vector; none is re-embedded).
#[tokio::test]
async fn a_version_8_database_keeps_its_embeddings_as_vectors() {
    let db = TestDb::create().await;
    let client = db.client().await;
    let mut setup = String::from(
        "CREATE TABLE agentwall_schema_migrations (
             version integer PRIMARY KEY, name text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now());",
    );
    for (version, sql) in [
        (
            1,
            include_str!("../../src/memory/redis_pg/migrations/0001_init.sql"),
        ),
        (
            2,
            include_str!("../../src/memory/redis_pg/migrations/0002_drop_tsv_gin.sql"),
        ),
        (
            3,
            include_str!("../../src/memory/redis_pg/migrations/0003_session_scoped_indexes.sql"),
        ),
        (
            4,
            include_str!("../../src/memory/redis_pg/migrations/0004_restate_in_place.sql"),
        ),
        (
            5,
            include_str!("../../src/memory/redis_pg/migrations/0005_count_kind_changes_by_row.sql"),
        ),
        (
            6,
            include_str!("../../src/memory/redis_pg/migrations/0006_source_turn_ids.sql"),
        ),
        (
            7,
            include_str!("../../src/memory/redis_pg/migrations/0007_episodes_and_embeddings.sql"),
        ),
        (
            8,
            include_str!("../../src/memory/redis_pg/migrations/0008_episode_count.sql"),
        ),
    ] {
        setup.push_str(sql);
        setup.push_str(&format!(
            ";\nINSERT INTO agentwall_schema_migrations (version, name) VALUES ({version}, 'v{version}');\n"
        ));
    }
    let (near, far) = (Uuid::new_v4(), Uuid::new_v4());
    setup.push_str(&format!(
        "INSERT INTO agentwall_facts (id, session_id, kind, body, observed_at, importance, source, embedding)
         VALUES ('{near}', 'vector-session', 'fact', 'The harbour master is Lin.',
                 '2030-01-01T09:00:00Z', 0.5, 'injected', '{{0.6,0.8,0}}'),
                ('{far}', 'vector-session', 'fact', 'The ferry leaves at noon.',
                 '2030-01-01T09:00:00Z', 0.5, 'injected', '{{0.8,0.6,0}}');"
    ));
    client.batch_execute(&setup).await.unwrap();
    let store = RedisPostgresStore::connect(
        config(&redis_url(), &db.url, &unique_prefix()),
        conformance::config(),
    )
    .await
    .expect("a version-8 database is migrated");
    let column: String = client
        .query_one(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute
             WHERE attrelid = 'agentwall_facts'::regclass AND attname = 'embedding'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(column, "vector");
    assert_eq!(
        store.unembedded(10).await.unwrap().total,
        0,
        "nothing to embed again"
    );
    let s = SessionId::parse("vector-session").unwrap();
    let ctx = store
        .recall(
            &s,
            RecallQuery {
                vector: Some(Arc::from(vec![0.6_f32, 0.8, 0.0])),
                ..query("zzz")
            },
        )
        .await
        .unwrap();
    let found: Vec<(&str, Option<f64>)> = ctx
        .facts
        .iter()
        .map(|f| (f.fact.text.as_str(), f.why.vector))
        .collect();
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0].0, "The harbour master is Lin.");
    assert!((found[0].1.unwrap() - 1.0).abs() < 1e-6, "{found:?}");
    assert!((found[1].1.unwrap() - 0.96).abs() < 1e-6, "{found:?}");
}

/// A Postgres without pgvector (Debian's own, here) is refused at start-up with an error that
/// names the extension and what to do, and the refused migration leaves nothing behind.
#[tokio::test]
async fn a_postgres_without_pgvector_is_refused_at_start_naming_the_extension() {
    let bindir = std::env::var("AGENTWALL_TEST_PLAIN_PG_BINDIR")
        .ok()
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| {
            panic!(
                "AGENTWALL_TEST_PLAIN_PG_BINDIR is empty: this test needs a Postgres without \
                 pgvector (apt-get install postgresql); {SETUP_HINT}"
            )
        });
    let pg = PostgresChild::init_from(&bindir);
    pg.wait_ready().await;
    let (client, connection) = tokio_postgres::connect(&pg.admin_url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let available: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(available, 0, "{bindir} must be a Postgres without pgvector");
    let err = RedisPostgresStore::connect(
        config(&redis_url(), &pg.admin_url(), &unique_prefix()),
        conformance::config(),
    )
    .await
    .expect_err("a Postgres without pgvector is refused");
    let message = err.to_string();
    assert!(
        message.contains("migration 9 (pgvector)")
            && message.contains("needs the pgvector extension"),
        "{message}"
    );
    let tables: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'agentwall%'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        tables, 0,
        "the migrations ran in one transaction, rolled back whole"
    );
}
