//! The embedded store: the shared conformance suite, plus what only a file-backed store has
//! (reopening, migrations, several processes or pools on one file, crash durability).

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::Command;

use agent_server::memory::embedded::{APPLICATION_ID, EmbeddedStore, SCHEMA_VERSION};
use agent_server::memory::{
    MemoryConfig, MemoryError, MemoryStore, NewFact, RecallQuery, TurnRole, TurnWrite, WorkingItem,
    conformance,
};
use chrono::{DateTime, Utc};
use deadpool_sqlite::rusqlite;
use protocol::SessionId;
use protocol::control::{FactKind, FactSource};
use tempfile::TempDir;
use uuid::Uuid;

/// A store on a fresh temporary directory, which lives exactly as long as the store.
struct TestStore {
    // Declared first so that it is dropped (its connections closed) before the directory goes.
    store: EmbeddedStore,
    dir: TempDir,
}

impl Deref for TestStore {
    type Target = EmbeddedStore;
    fn deref(&self) -> &EmbeddedStore {
        &self.store
    }
}

impl TestStore {
    async fn new() -> Self {
        let dir = TempDir::new().expect("temp dir");
        let store = EmbeddedStore::open(&db_path(&dir), conformance::config())
            .await
            .expect("open the embedded store");
        Self { store, dir }
    }

    fn path(&self) -> PathBuf {
        db_path(&self.dir)
    }
}

/// A path one directory down, so that `open` has to create the parent.
fn db_path(dir: &TempDir) -> PathBuf {
    dir.path().join("data").join("memory.sqlite3")
}

agent_server::memory_conformance_tests!(TestStore::new().await);

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2030-01-01T09:00:00Z")
        .unwrap()
        .to_utc()
}

fn session(name: &str) -> SessionId {
    SessionId::parse(&format!("{name}-{}", Uuid::new_v4())).unwrap()
}

fn fact(key: Option<&str>, text: &str, at: DateTime<Utc>) -> NewFact {
    NewFact {
        kind: FactKind::Fact,
        key: key.map(str::to_owned),
        text: text.to_owned(),
        data: None,
        observed_at: at,
        importance: 0.5,
        source: FactSource::Extracted,
    }
}

fn user(text: &str, at: DateTime<Utc>) -> WorkingItem {
    WorkingItem {
        role: TurnRole::User,
        text: text.to_owned(),
        at,
    }
}

async fn recall_texts(store: &EmbeddedStore, s: &SessionId, q: &str) -> Vec<String> {
    store
        .recall(
            s,
            RecallQuery {
                now: t0(),
                text: q,
                limit: 10,
            },
        )
        .await
        .unwrap()
        .facts
        .into_iter()
        .map(|r| r.fact.text)
        .collect()
}

/// Direct access to the file, for what the store's API cannot do (forge a version, check the
/// full-text index).
fn raw(path: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    conn
}

fn fts_integrity_check(path: &Path) {
    raw(path)
        .execute(
            "INSERT INTO facts_fts (facts_fts, rank) VALUES ('integrity-check', 1)",
            [],
        )
        .expect("the full-text index matches the facts table");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_survives_closing_and_reopening_the_file() {
    let dir = TempDir::new().unwrap();
    let path = db_path(&dir);
    let (s, reset_s) = (session("reopen"), session("reopen-reset"));
    {
        let store = EmbeddedStore::open(&path, conformance::config())
            .await
            .unwrap();
        store
            .commit_turn(
                &s,
                TurnWrite {
                    items: vec![user("I keep bees.", t0())],
                    facts: vec![fact(Some("hobby"), "I keep bees on the roof.", t0())],
                    ..TurnWrite::default()
                },
            )
            .await
            .unwrap();
        store.reset(&reset_s).await.unwrap();
        store.reset(&reset_s).await.unwrap();
    }
    let store = EmbeddedStore::open(&path, conformance::config())
        .await
        .unwrap();
    let snap = store.snapshot(&s, t0()).await.unwrap();
    assert_eq!(snap.working, [user("I keep bees.", t0())]);
    assert_eq!(snap.facts.len(), 1);
    // The full-text index came back too, not only the rows.
    assert_eq!(
        recall_texts(&store, &s, "bees").await,
        ["I keep bees on the roof."]
    );
    let ctx = store
        .recall(
            &reset_s,
            RecallQuery {
                now: t0(),
                text: "",
                limit: 1,
            },
        )
        .await
        .unwrap();
    assert_eq!(ctx.epoch, 2, "epochs survive a restart");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_are_idempotent() {
    let dir = TempDir::new().unwrap();
    let path = db_path(&dir);
    // Two concurrent first opens of a new file: exactly one applies the migrations.
    let (a, b) = tokio::join!(
        EmbeddedStore::open(&path, conformance::config()),
        EmbeddedStore::open(&path, conformance::config()),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    let s = session("migrate");
    a.inject(&s, vec![fact(None, "Written before reopening.", t0())])
        .await
        .unwrap();
    drop((a, b));
    for _ in 0..2 {
        let store = EmbeddedStore::open(&path, conformance::config())
            .await
            .unwrap();
        assert_eq!(store.schema_version().await.unwrap(), SCHEMA_VERSION);
        assert_eq!(store.snapshot(&s, t0()).await.unwrap().facts.len(), 1);
    }
    let conn = raw(&path);
    let app_id: i32 = conn
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .unwrap();
    assert_eq!(app_id, APPLICATION_ID);
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_schema_is_refused_untouched() {
    let dir = TempDir::new().unwrap();
    let path = db_path(&dir);
    drop(
        EmbeddedStore::open(&path, conformance::config())
            .await
            .unwrap(),
    );
    raw(&path)
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    let err = EmbeddedStore::open(&path, conformance::config())
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("newer"), "{err}");
    let version: u32 = raw(&path)
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION + 1, "the newer file was modified");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_files_are_refused() {
    let dir = TempDir::new().unwrap();

    let garbage = dir.path().join("garbage.sqlite3");
    std::fs::write(&garbage, vec![0x5a; 8192]).unwrap();
    let err = EmbeddedStore::open(&garbage, conformance::config())
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::Corrupt { .. }), "{err}");

    let other_app = dir.path().join("other.sqlite3");
    raw(&other_app)
        .execute_batch("CREATE TABLE accounts (id INTEGER PRIMARY KEY)")
        .unwrap();
    let err = EmbeddedStore::open(&other_app, conformance::config())
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::Corrupt { .. }), "{err}");

    let err = EmbeddedStore::open(Path::new(":memory:"), conformance::config())
        .await
        .unwrap_err();
    assert_eq!(err.dependency(), "embedded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_opens_of_one_file_lose_no_writes() {
    let dir = TempDir::new().unwrap();
    let path = db_path(&dir);
    let config = MemoryConfig {
        working_capacity: 1000,
        ..conformance::config()
    };
    let a = EmbeddedStore::open(&path, config).await.unwrap();
    let b = EmbeddedStore::open(&path, config).await.unwrap();
    let shared = session("shared");
    const PER_STORE: i64 = 25;

    let writes = |store: &'static EmbeddedStore, name: &'static str| {
        let shared = shared.clone();
        (0..PER_STORE).map(move |i| {
            let shared = shared.clone();
            tokio::spawn(async move {
                let at = t0() + chrono::Duration::seconds(i);
                store
                    .commit_turn(
                        &shared,
                        TurnWrite {
                            items: vec![user(&format!("{name} turn {i}"), at)],
                            facts: vec![
                                fact(None, &format!("{name} note {i}"), at),
                                // Both stores race on one key; the latest observation must win.
                                fact(Some("counter"), &format!("{name} counter {i}"), at),
                            ],
                            // The epoch check reads before anything is written.
                            expected_epoch: Some(0),
                            ..TurnWrite::default()
                        },
                    )
                    .await
                    .unwrap()
            })
        })
    };
    // The tasks borrow the stores for 'static; leaking two small stores in a test is harmless.
    let (a, b): (&'static EmbeddedStore, &'static EmbeddedStore) =
        (Box::leak(Box::new(a)), Box::leak(Box::new(b)));
    let tasks: Vec<_> = writes(a, "a").chain(writes(b, "b")).collect();
    for task in tasks {
        task.await.unwrap();
    }

    for store in [a, b] {
        let snap = store
            .snapshot(
                &shared,
                t0() + chrono::Duration::hours(1) - chrono::Duration::seconds(1),
            )
            .await
            .unwrap();
        assert_eq!(snap.working.len(), 2 * PER_STORE as usize);
        let notes = snap.facts.iter().filter(|f| f.key.is_none()).count();
        assert_eq!(notes, 2 * PER_STORE as usize);
        let counters: Vec<&str> = snap
            .facts
            .iter()
            .filter(|f| f.key.is_some())
            .map(|f| f.text.as_str())
            .collect();
        assert_eq!(counters.len(), 1, "one current fact per key");
        let last = PER_STORE - 1;
        assert!(
            counters[0] == format!("a counter {last}")
                || counters[0] == format!("b counter {last}"),
            "the latest observation is current, got {counters:?}"
        );
    }
    fts_integrity_check(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_full_text_index_follows_every_write() {
    let store = TestStore::new().await;
    let s = session("fts");
    let stored = store
        .inject(
            &s,
            vec![
                fact(Some("drink"), "I drink green tea.", t0()),
                fact(None, "Tea with lemon is fine.", t0()),
            ],
        )
        .await
        .unwrap();
    // Supersession, retirement and reset each delete rows; their index entries must go with them.
    store
        .inject(
            &s,
            vec![fact(
                Some("drink"),
                "I drink black coffee.",
                t0() + chrono::Duration::minutes(1),
            )],
        )
        .await
        .unwrap();
    assert_eq!(
        recall_texts(&store, &s, "green").await,
        Vec::<String>::new()
    );
    assert_eq!(
        recall_texts(&store, &s, "coffee").await,
        ["I drink black coffee."]
    );
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
    assert_eq!(
        recall_texts(&store, &s, "lemon").await,
        Vec::<String>::new()
    );
    // Porter stemming: "drinking" finds "drink".
    assert_eq!(
        recall_texts(&store, &s, "drinking").await,
        ["I drink black coffee."]
    );
    fts_integrity_check(&store.path());
    store.reset(&s).await.unwrap();
    fts_integrity_check(&store.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_reports_only_its_surviving_fact_as_current() {
    let store = TestStore::new().await;
    let s = session("batch");
    let stored = store
        .inject(
            &s,
            vec![
                fact(Some("city"), "I live in Porto.", t0()),
                fact(Some("city"), "I live in Braga.", t0()),
                fact(
                    Some("city"),
                    "I lived in Faro.",
                    t0() - chrono::Duration::days(1),
                ),
            ],
        )
        .await
        .unwrap();
    let current: Vec<bool> = stored.iter().map(|f| f.current).collect();
    // Equal observation times: the later write wins; an older one never does.
    assert_eq!(current, [false, true, false]);
    let snap = store.snapshot(&s, t0()).await.unwrap();
    assert_eq!(snap.facts.len(), 1);
    assert_eq!(snap.facts[0].id, stored[1].id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_unicode_queries_never_fail() {
    let store = TestStore::new().await;
    let s = session("unicode");
    store
        .inject(
            &s,
            vec![fact(None, "Ich wohne in Köln, 東京 früher.", t0())],
        )
        .await
        .unwrap();
    assert_eq!(
        recall_texts(&store, &s, "köln").await,
        ["Ich wohne in Köln, 東京 früher."]
    );
    for q in [
        "e\u{301}\u{301}",
        "²³ ½ ⅷ",
        "東京",
        "🦀🦀 crab",
        "٣٤٥ عربى",
        "\u{0}\u{1} nul",
        "x\u{200b}y zero width",
        "ﬁnance ligature",
        "İstanbul",
    ] {
        store
            .recall(
                &s,
                RecallQuery {
                    now: t0(),
                    text: q,
                    limit: 3,
                },
            )
            .await
            .unwrap_or_else(|e| panic!("query {q:?} failed: {e}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_reports_one_embedded_dependency() {
    let store = TestStore::new().await;
    let health = store.health().await;
    assert_eq!(health.len(), 1);
    assert_eq!(health[0].name, "embedded");
    assert!(health[0].ok, "{:?}", health[0].error);
    assert_eq!(store.backend(), "embedded");
}

/// Environment variable that turns [`crash_child`] into the crashing process.
const CRASH_DB: &str = "AGENTWALL_EMBEDDED_CRASH_DB";

/// The child half of [`an_acknowledged_write_survives_the_process_dying`]: when started by it,
/// writes one turn and kills its own process without any clean-up. Otherwise it does nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_child() {
    let Some(path) = std::env::var_os(CRASH_DB) else {
        return;
    };
    let store = EmbeddedStore::open(Path::new(&path), conformance::config())
        .await
        .unwrap();
    let s = SessionId::parse("crash").unwrap();
    store
        .commit_turn(
            &s,
            TurnWrite {
                items: vec![user("Written just before dying.", t0())],
                facts: vec![fact(Some("last words"), "Acknowledged, then killed.", t0())],
                ..TurnWrite::default()
            },
        )
        .await
        .unwrap();
    // Like SIGKILL: no destructors, no connection close, no WAL checkpoint.
    std::process::abort();
}

// Unix only: the check that the child died by a signal (not a failed assertion) is a Unix notion.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acknowledged_write_survives_the_process_dying() {
    let dir = TempDir::new().unwrap();
    let path = db_path(&dir);
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
        .env(CRASH_DB, &path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&child.stderr);
    // Died by a signal (abort), not by a failed assertion (exit code 101).
    assert_eq!(
        child.status.code(),
        None,
        "the child did not abort: {stderr}"
    );

    let store = EmbeddedStore::open(&path, conformance::config())
        .await
        .unwrap();
    let s = SessionId::parse("crash").unwrap();
    let snap = store.snapshot(&s, t0()).await.unwrap();
    assert_eq!(snap.working, [user("Written just before dying.", t0())]);
    assert_eq!(snap.facts.len(), 1);
    assert_eq!(snap.facts[0].text, "Acknowledged, then killed.");
}
