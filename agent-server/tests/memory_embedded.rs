//! The embedded store: the shared conformance suite, plus what only a file-backed store has
//! (reopening, migrations, several processes or pools on one file, crash durability).
// Tests spawn their own tasks (servers, concurrent clients), outside any request.
#![allow(clippy::disallowed_methods)]

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use agent_server::memory::embedded::{
    APPLICATION_ID, EmbeddedStore, SCHEMA_VERSION, WAL_AUTOCHECKPOINT_FRAMES,
};
use agent_server::memory::ranking::Terms;
use agent_server::memory::{
    MemoryConfig, MemoryError, MemoryStore, NewFact, RecallQuery, Restatement, TurnRole, TurnWrite,
    WorkingItem, conformance,
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
    _dir: TempDir,
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
        Self { store, _dir: dir }
    }
}

/// A path one directory down, so that `open` has to create the parent.
fn db_path(dir: &TempDir) -> PathBuf {
    dir.path().join("data").join("memory.sqlite3")
}

agent_server::memory_conformance_tests!(TestStore::new().await);

/// The same checks with semantic recall on.
mod with_vectors {
    use super::TestStore;
    agent_server::memory_conformance_tests!(with_vectors: TestStore::new().await);
}

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
        embedding: None,
        source_turn_ids: Vec::new(),
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
    WorkingItem::new(TurnRole::User, text, at)
}

async fn recall_texts(store: &EmbeddedStore, s: &SessionId, q: &str) -> Vec<String> {
    store
        .recall(
            s,
            RecallQuery {
                now: t0(),
                terms: Terms::of(q),
                limit: 10,
                episode_limit: 0,
                leave_out_working: false,
                vector: None,
            },
        )
        .await
        .unwrap()
        .facts
        .into_iter()
        .map(|r| r.fact.text)
        .collect()
}

/// Direct access to the file, for what the store's API cannot do (forge a version).
fn raw(path: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    conn
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
                    facts: vec![
                        NewFact {
                            embedding: None,
                            source_turn_ids: vec!["D1:2".to_owned()],
                            ..fact(Some("hobby"), "I keep bees on the roof.", t0())
                        },
                        NewFact {
                            embedding: Some(Arc::from(vec![0.6_f32, 0.8])),
                            ..fact(None, "Our hives sit by the chimney.", t0())
                        },
                    ],
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
    assert_eq!(snap.facts.len(), 2);
    let bees = snap.facts.iter().find(|f| f.key.is_some()).unwrap();
    assert_eq!(bees.source_turn_ids, ["D1:2"], "provenance survives");
    // Embeddings too: found by its vector alone (no shared word), with the stored similarity.
    let by_meaning = store
        .recall(
            &s,
            RecallQuery {
                now: t0(),
                terms: Terms::of("apiary"),
                limit: 5,
                episode_limit: 0,
                leave_out_working: false,
                vector: Some(Arc::from(vec![0.6_f32, 0.8])),
            },
        )
        .await
        .unwrap();
    let found: Vec<(&str, Option<f64>)> = by_meaning
        .facts
        .iter()
        .map(|r| (r.fact.text.as_str(), r.why.vector))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "Our hives sit by the chimney.");
    assert!(
        found[0].1.is_some_and(|v| (v - 1.0).abs() < 1e-6),
        "{found:?}"
    );
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
                terms: Terms::of(""),
                limit: 1,
                episode_limit: 0,
                leave_out_working: false,
                vector: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(ctx.epoch, 2, "epochs survive a restart");
}

/// The log is copied into the database file as it fills, while the store is open, so it stays
/// near its checkpoint size however much is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_write_ahead_log_is_checkpointed_while_the_store_is_open() {
    let dir = TempDir::new().unwrap();
    let path = db_path(&dir);
    let store = EmbeddedStore::open(&path, conformance::config())
        .await
        .unwrap();
    // About 1.6 times the checkpoint size in facts of 4 KiB, 50 per write.
    let page = 4096 + 24;
    let limit = u64::from(WAL_AUTOCHECKPOINT_FRAMES) * page;
    let written = limit * 8 / 5;
    let text = "bees ".repeat(800);
    let s = session("wal");
    for _ in 0..written / (50 * 4096) {
        let facts = (0..50).map(|_| fact(None, &text, t0())).collect();
        store.inject(&s, facts).await.unwrap();
    }
    let size = |suffix: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        std::fs::metadata(name).map_or(0, |m| m.len())
    };
    let (database, log) = (size(""), size("-wal"));
    // Filled up to the interval (the file is reused, not shrunk, while open), and no further
    // than the frames of the write that crossed it.
    assert!(
        (limit * 9 / 10..=limit + 200 * page).contains(&log),
        "log of {log} bytes"
    );
    assert!(
        database >= written / 2,
        "the database file holds {database} bytes of {written} written"
    );
    drop(store);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_are_idempotent() {
    let dir = TempDir::new().unwrap();
    let path = db_path(&dir);
    // Two concurrent first opens of a new file: exactly one gets it (and migrates it).
    let (a, b) = tokio::join!(
        EmbeddedStore::open(&path, conformance::config()),
        EmbeddedStore::open(&path, conformance::config()),
    );
    let (owner, refused) = match (a, b) {
        (Ok(owner), Err(refused)) | (Err(refused), Ok(owner)) => (owner, refused),
        (a, b) => panic!("expected exactly one open to succeed, got {a:?} and {b:?}"),
    };
    assert!(
        matches!(refused, MemoryError::Unavailable { .. }),
        "{refused}"
    );
    let s = session("migrate");
    owner
        .inject(&s, vec![fact(None, "Written before reopening.", t0())])
        .await
        .unwrap();
    drop(owner);
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
async fn a_file_has_one_owner_at_a_time() {
    let dir = TempDir::new().unwrap();
    let path = db_path(&dir);
    let owner = EmbeddedStore::open(&path, conformance::config())
        .await
        .unwrap();
    let s = session("owned");
    owner
        .inject(&s, vec![fact(None, "Owned by the first store.", t0())])
        .await
        .unwrap();
    let err = EmbeddedStore::open(&path, conformance::config())
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::Unavailable { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("in use") && message.contains("--data-dir"),
        "the refusal says why and what to do: {message}"
    );
    // The refused open changed nothing; dropping the owner hands the file over.
    drop(owner);
    let next = EmbeddedStore::open(&path, conformance::config())
        .await
        .unwrap();
    assert_eq!(
        recall_texts(&next, &s, "owned").await,
        ["Owned by the first store."]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_follows_every_write() {
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
    store.reset(&s).await.unwrap();
    assert_eq!(
        recall_texts(&store, &s, "coffee").await,
        Vec::<String>::new()
    );
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
                    terms: Terms::of(q),
                    limit: 3,
                    episode_limit: 0,
                    leave_out_working: false,
                    vector: None,
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

/// What recall returned, without the fact ids (random per store) so two stores can be compared.
fn comparable(ctx: &agent_server::memory::MemoryContext) -> String {
    let facts: Vec<_> = ctx
        .facts
        .iter()
        .map(|r| (&r.fact.text, &r.fact.key, r.fact.observed_at, r.score))
        .collect();
    let standing: Vec<_> = ctx
        .standing
        .iter()
        .map(|f| (&f.text, f.kind, f.observed_at))
        .collect();
    format!(
        "{:?} | {facts:?} | {standing:?} | epoch {}",
        ctx.working, ctx.epoch
    )
}

/// The session cache is a mirror of the file: after every step of a long random mix of turns,
/// supersessions, retirements, restatements, injects and resets over three sessions, a store whose cache
/// applies each change recalls exactly what a store that reloads every session from disk
/// (budget 1: every other session is evicted) recalls, and so does the first store reopened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_cache_always_equals_a_reload_from_disk() {
    use agent_server::memory::embedded::EmbeddedOptions;

    let dir = TempDir::new().unwrap();
    let config = MemoryConfig {
        working_capacity: 5,
        ..conformance::config()
    };
    let open = |name: &str, cache_items: usize| {
        let path = dir.path().join(name);
        async move {
            EmbeddedStore::open_with(
                &path,
                config,
                EmbeddedOptions {
                    cache_items,
                    ..EmbeddedOptions::default()
                },
            )
            .await
            .unwrap()
        }
    };
    let cached = open("cached.sqlite3", 1_000_000).await;
    let reloading = open("reloading.sqlite3", 1).await;

    let sessions = [session("mix-a"), session("mix-b"), session("mix-c")];
    let words = ["tea", "boat", "lisbon", "red", "piano", "garden"];
    let mut rng: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    // Fact ids per store and session, to retire the same fact in both.
    let mut ids: Vec<Vec<(Uuid, Uuid)>> = vec![Vec::new(); sessions.len()];
    for step in 0..300i64 {
        let at = t0() + chrono::Duration::seconds(step);
        let which = next(sessions.len() as u64) as usize;
        let s = &sessions[which];
        let word = |n: u64| words[n as usize];
        match next(10) {
            0 => {
                cached.reset(s).await.unwrap();
                reloading.reset(s).await.unwrap();
                ids[which].clear();
            }
            1 if !ids[which].is_empty() => {
                let pick = next(ids[which].len() as u64) as usize;
                let (a, b) = ids[which].remove(pick);
                for (store, id) in [(&cached, a), (&reloading, b)] {
                    let turn = TurnWrite {
                        retire: vec![id],
                        ..TurnWrite::default()
                    };
                    store.commit_turn(s, turn).await.unwrap();
                }
            }
            9 if !ids[which].is_empty() => {
                // Said again: in place for an unkeyed fact, anew for anything else.
                let pick = next(ids[which].len() as u64) as usize;
                let (a, b) = ids[which][pick];
                let text = format!("I like the {} again {step}", word(next(6)));
                let turn = |id| TurnWrite {
                    items: vec![user(&format!("turn {step}"), at)],
                    restate: vec![Restatement {
                        source_turn_ids: Vec::new(),
                        id,
                        text: text.clone(),
                        observed_at: at,
                        importance: 0.7,
                        source: FactSource::Promoted,
                    }],
                    ..TurnWrite::default()
                };
                let a_now = cached.commit_turn(s, turn(a)).await.unwrap()[0].id;
                let b_now = reloading.commit_turn(s, turn(b)).await.unwrap()[0].id;
                assert_eq!(
                    a_now == a,
                    b_now == b,
                    "step {step}: restated in place in one only"
                );
                if a_now != a {
                    ids[which].push((a_now, b_now));
                }
            }
            kind => {
                let key = (kind % 3 == 0).then(|| format!("k{}", next(3)));
                let text = format!(
                    "I like the {} and the {} {step}",
                    word(next(6)),
                    word(next(6))
                );
                let mut new = fact(key.as_deref(), &text, at);
                if kind == 2 {
                    new.kind = FactKind::Rule;
                }
                let turn = || TurnWrite {
                    items: vec![user(&format!("turn {step}"), at)],
                    facts: vec![new.clone()],
                    ..TurnWrite::default()
                };
                let a = cached.commit_turn(s, turn()).await.unwrap();
                let b = reloading.commit_turn(s, turn()).await.unwrap();
                assert_eq!(a[0].current, b[0].current);
                ids[which].push((a[0].id, b[0].id));
            }
        }
        let query = format!("{} {}", word(next(6)), word(next(6)));
        for s in &sessions {
            let q = RecallQuery {
                now: at,
                terms: Terms::of(&query),
                limit: 4,
                episode_limit: 0,
                leave_out_working: false,
                vector: None,
            };
            let a = cached.recall(s, q.clone()).await.unwrap();
            let b = reloading.recall(s, q).await.unwrap();
            assert_eq!(comparable(&a), comparable(&b), "step {step}, {s:?}");
        }
    }
    assert!(
        reloading.cache_usage().0 <= 1,
        "the tiny cache kept evicting"
    );

    // And after a restart, the first store recalls what it did before.
    let now = t0() + chrono::Duration::seconds(300);
    let before = {
        let mut all = Vec::new();
        for s in &sessions {
            let q = RecallQuery {
                now,
                terms: Terms::of("tea boat lisbon red piano garden"),
                limit: 10,
                episode_limit: 0,
                leave_out_working: false,
                vector: None,
            };
            all.push(comparable(&cached.recall(s, q).await.unwrap()));
        }
        all
    };
    drop(cached);
    let reopened = open("cached.sqlite3", 1_000_000).await;
    for (s, before) in sessions.iter().zip(before) {
        let q = RecallQuery {
            now,
            terms: Terms::of("tea boat lisbon red piano garden"),
            limit: 10,
            episode_limit: 0,
            leave_out_working: false,
            vector: None,
        };
        assert_eq!(comparable(&reopened.recall(s, q).await.unwrap()), before);
    }
}

/// Loads of uncached sessions race with writes of the same sessions (a cache with room for one
/// session, eight tasks on three sessions): every task still reads its own acknowledged turn, and
/// at the end the cache agrees with a reload from disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn loads_racing_writes_never_cache_a_stale_session() {
    use agent_server::memory::embedded::EmbeddedOptions;
    use std::sync::Arc;

    let dir = TempDir::new().unwrap();
    let path = dir.path().join("race.sqlite3");
    let config = MemoryConfig {
        working_capacity: 1000,
        ..conformance::config()
    };
    let options = EmbeddedOptions {
        cache_items: 40,
        ..EmbeddedOptions::default()
    };
    let store = Arc::new(
        EmbeddedStore::open_with(&path, config, options)
            .await
            .unwrap(),
    );
    let sessions: Vec<SessionId> = (0..3).map(|i| session(&format!("race-{i}"))).collect();

    let mut tasks = Vec::new();
    for task in 0..8 {
        let (store, sessions) = (store.clone(), sessions.clone());
        tasks.push(tokio::spawn(async move {
            for step in 0..40 {
                let s = &sessions[(task + step) % sessions.len()];
                let at = t0() + chrono::Duration::seconds(step as i64);
                let text = format!("task {task} step {step} likes kiwi{task}x{step}");
                let turn = TurnWrite {
                    items: vec![user(&text, at)],
                    facts: vec![fact(None, &text, at)],
                    ..TurnWrite::default()
                };
                store.commit_turn(s, turn).await.unwrap();
                let q = RecallQuery {
                    now: at,
                    terms: Terms::of(&format!("kiwi{task}x{step}")),
                    limit: 3,
                    episode_limit: 0,
                    leave_out_working: false,
                    vector: None,
                };
                let ctx = store.recall(s, q).await.unwrap();
                assert!(
                    ctx.working.iter().any(|w| w.text == text),
                    "task {task} step {step}: its acknowledged turn is missing from working memory"
                );
                assert!(
                    ctx.facts.iter().any(|r| r.fact.text == text),
                    "task {task} step {step}: its acknowledged fact is not recalled"
                );
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }

    let now = t0() + chrono::Duration::seconds(40);
    let query = "likes task step";
    let mut before = Vec::new();
    for s in &sessions {
        let q = RecallQuery {
            now,
            terms: Terms::of(query),
            limit: 1000,
            episode_limit: 0,
            leave_out_working: false,
            vector: None,
        };
        before.push(comparable(&store.recall(s, q).await.unwrap()));
    }
    drop(Arc::try_unwrap(store).expect("no task holds the store"));
    let reopened = EmbeddedStore::open_with(&path, config, EmbeddedOptions::default())
        .await
        .unwrap();
    for (s, before) in sessions.iter().zip(before) {
        let q = RecallQuery {
            now,
            terms: Terms::of(query),
            limit: 1000,
            episode_limit: 0,
            leave_out_working: false,
            vector: None,
        };
        assert_eq!(comparable(&reopened.recall(s, q).await.unwrap()), before);
    }
}

/// Old working items are trimmed in batches rather than on every turn: the file keeps at most
/// about twice the capacity per session, readers (recall, a reload, the reset count) see exactly
/// the newest `working_capacity`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn working_memory_is_trimmed_in_batches_and_read_exactly() {
    let dir = TempDir::new().unwrap();
    let path = db_path(&dir);
    let config = conformance::config();
    let capacity = config.working_capacity;
    let s = session("trim");
    let turns = capacity * 5 + 1;
    {
        let store = EmbeddedStore::open(&path, config).await.unwrap();
        for i in 0..turns {
            let at = t0() + chrono::Duration::seconds(i as i64);
            let turn = TurnWrite {
                items: vec![
                    user(&format!("question {i}"), at),
                    WorkingItem::new(TurnRole::Assistant, format!("answer {i}"), at),
                ],
                ..TurnWrite::default()
            };
            store.commit_turn(&s, turn).await.unwrap();
        }
        let rows: i64 = raw(&path)
            .query_row(
                "SELECT count(*) FROM working_items WHERE session_id = ?1",
                [s.as_str()],
                |r| r.get(0),
            )
            .unwrap();
        let rows = usize::try_from(rows).unwrap();
        assert!(
            (capacity..=2 * capacity + 2).contains(&rows),
            "{rows} rows kept for a capacity of {capacity}"
        );
    }
    // Reopened, so working memory comes from the file, not the cache.
    let store = EmbeddedStore::open(&path, config).await.unwrap();
    let now = t0() + chrono::Duration::seconds(turns as i64);
    let ctx = store
        .recall(
            &s,
            RecallQuery {
                now,
                terms: Terms::of("question"),
                limit: 1,
                episode_limit: 0,
                leave_out_working: false,
                vector: None,
            },
        )
        .await
        .unwrap();
    let newest: Vec<String> = (turns - capacity / 2..turns)
        .flat_map(|i| [format!("question {i}"), format!("answer {i}")])
        .collect();
    let got: Vec<&str> = ctx.working.iter().map(|w| w.text.as_str()).collect();
    assert_eq!(got, newest);
    let counts = store.reset(&s).await.unwrap();
    assert_eq!(counts.working_items, capacity as u64);
}
