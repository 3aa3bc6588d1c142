//! Group commit in the embedded store: concurrent writes share one transaction, yet each turn is
//! decided on its own (its epoch check), and a batch that fails fails every one of its waiters.
//!
//! Batches are made deterministic by holding SQLite's write lock from a second connection: the
//! writer thread blocks in `BEGIN IMMEDIATE` on a first "plug" write, the writes under test queue
//! behind it, and releasing the lock lets them go as one batch.
// Tests spawn their own tasks (servers, concurrent clients), outside any request.
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_server::memory::embedded::{EmbeddedOptions, EmbeddedStore};
use agent_server::memory::ranking::Terms;
use agent_server::memory::{
    MemoryConfig, MemoryError, MemoryStore, NewFact, RecallQuery, TurnRole, TurnWrite, WorkingItem,
};
use agent_server::telemetry::Metrics;
use chrono::{DateTime, Utc};
use deadpool_sqlite::rusqlite;
use futures_util::future::join_all;
use protocol::SessionId;
use protocol::control::{FactKind, FactSource};
use tempfile::TempDir;
use uuid::Uuid;

fn config() -> MemoryConfig {
    MemoryConfig {
        working_capacity: 1000,
        ..MemoryConfig::default()
    }
}

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2030-01-01T09:00:00Z")
        .unwrap()
        .to_utc()
}

fn session(name: &str) -> SessionId {
    SessionId::parse(&format!("{name}-{}", Uuid::new_v4())).unwrap()
}

/// A turn of one user item and one keyed fact, guarded by `epoch` when given.
fn turn(text: &str, epoch: Option<u64>) -> TurnWrite {
    TurnWrite {
        items: vec![WorkingItem::new(TurnRole::User, text, t0())],
        facts: vec![NewFact {
            embedding: None,
            source_turn_ids: Vec::new(),
            kind: FactKind::Fact,
            key: Some(format!("key {text}")),
            text: text.to_owned(),
            data: None,
            observed_at: t0(),
            importance: 0.5,
            source: FactSource::Extracted,
        }],
        expected_epoch: epoch,
        ..TurnWrite::default()
    }
}

async fn epoch(store: &EmbeddedStore, s: &SessionId) -> u64 {
    let query = RecallQuery {
        now: t0(),
        terms: Terms::of(""),
        limit: 1,
        episode_limit: 0,
        leave_out_working: false,
        vector: None,
    };
    store.recall(s, query).await.unwrap().epoch
}

async fn stored_texts(store: &EmbeddedStore, s: &SessionId) -> Vec<String> {
    let snap = store.snapshot(s, t0()).await.unwrap();
    snap.working.into_iter().map(|item| item.text).collect()
}

/// A second connection to the store's file holding SQLite's write lock.
fn lock_writes(path: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    conn
}

/// Blocks the writer thread on the lock with a first write, so writes queued afterwards form one
/// batch once the lock is released. Returns the plug's task.
async fn plug_writer(
    store: &std::sync::Arc<EmbeddedStore>,
) -> tokio::task::JoinHandle<Result<(), MemoryError>> {
    let store = std::sync::Arc::clone(store);
    let plug = tokio::spawn(async move {
        store
            .commit_turn(&session("plug"), turn("plug", None))
            .await
            .map(drop)
    });
    // Long enough for the writer thread to take the plug and block in BEGIN IMMEDIATE; if it were
    // slower, the plug would simply join the batch under test, which the tests tolerate.
    tokio::time::sleep(Duration::from_millis(200)).await;
    plug
}

async fn open(dir: &TempDir) -> std::sync::Arc<EmbeddedStore> {
    let path = dir.path().join("memory.sqlite3");
    std::sync::Arc::new(EmbeddedStore::open(&path, config()).await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_commits_are_all_stored() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    let sessions: Vec<SessionId> = (0..16).map(|i| session(&format!("many{i}"))).collect();
    let writes = (0..400).map(|i| {
        let s = &sessions[i % sessions.len()];
        let store = &store;
        async move {
            store
                .commit_turn(s, turn(&format!("turn {i}"), Some(0)))
                .await
        }
    });
    for result in join_all(writes).await {
        let stored = result.expect("every concurrent commit succeeds");
        assert_eq!(stored.len(), 1);
        assert!(stored[0].current);
    }
    for (n, s) in sessions.iter().enumerate() {
        let mut texts = stored_texts(&store, s).await;
        texts.sort();
        let mut expected: Vec<String> = (n..400)
            .step_by(sessions.len())
            .map(|i| format!("turn {i}"))
            .collect();
        expected.sort();
        assert_eq!(texts, expected, "session {n} has exactly its own turns");
        let snap = store.snapshot(s, t0()).await.unwrap();
        assert_eq!(snap.facts.len(), expected.len());
    }
}

/// Every batch of the writer is counted, with its jobs, in `agentwall_memory_batch_size` and
/// timed in `agentwall_memory_batch_duration_seconds` (backend `embedded`, batch `write`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_writers_batches_are_measured() {
    let metrics = Arc::new(Metrics::new());
    let batches = || metrics.batches("embedded", "write");
    let dir = TempDir::new().unwrap();
    let options = EmbeddedOptions {
        metrics: Arc::clone(&metrics),
        ..EmbeddedOptions::default()
    };
    let path = dir.path().join("memory.sqlite3");
    let store = Arc::new(
        EmbeddedStore::open_with(&path, config(), options)
            .await
            .unwrap(),
    );
    let (batches_before, jobs_before) = batches();
    let lock = lock_writes(store.path());
    let plug = plug_writer(&store).await;
    let s = session("measured");
    let writes = (0..5).map(|i| store.commit_turn(&s, turn(&format!("turn {i}"), None)));
    let release = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        lock.execute_batch("COMMIT").unwrap();
    };
    let (written, ()) = tokio::join!(join_all(writes), release);
    assert!(written.iter().all(Result::is_ok), "{written:?}");
    plug.await.unwrap().unwrap();

    // A batch is recorded just after its waiters are answered.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while batches().1 < jobs_before + 6 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (batches_after, jobs_after) = batches();
    assert!(
        jobs_after >= jobs_before + 6,
        "the plug and 5 turns: {jobs_before} -> {jobs_after}"
    );
    assert!(
        batches_after >= batches_before + 2,
        "{batches_before} -> {batches_after}"
    );
    let timed = metrics
        .batch_duration
        .with_label_values(&["embedded", "write"])
        .get_sample_count();
    assert!(
        timed >= batches_after,
        "each batch is timed: {timed} of {batches_after}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_in_a_batch_rejects_only_its_sessions_turn() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    let (reset_s, other) = (session("reset"), session("other"));
    store
        .commit_turn(&reset_s, turn("before the reset", None))
        .await
        .unwrap();
    // Both turns read their context (epoch) before the reset is queued.
    let (reset_epoch, other_epoch) = (epoch(&store, &reset_s).await, epoch(&store, &other).await);

    let lock = lock_writes(store.path());
    let plug = plug_writer(&store).await;
    let release = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        lock.execute_batch("COMMIT").unwrap();
    };
    let (reset, stale, fine, ()) = tokio::join!(
        store.reset(&reset_s),
        store.commit_turn(&reset_s, turn("stale turn", Some(reset_epoch))),
        store.commit_turn(&other, turn("other turn", Some(other_epoch))),
        release,
    );
    plug.await.unwrap().unwrap();

    assert_eq!(reset.unwrap().working_items, 1);
    assert!(
        matches!(stale, Err(MemoryError::SessionReset)),
        "the turn that read memory before the reset is rejected: {stale:?}"
    );
    fine.expect("a turn of another session in the same batch commits");
    assert!(stored_texts(&store, &reset_s).await.is_empty());
    assert_eq!(stored_texts(&store, &other).await, ["other turn"]);
    assert_eq!(epoch(&store, &reset_s).await, reset_epoch + 1);
}

/// Five turns of five sessions written as one batch, the third of them ("poison") refused by a
/// trigger raising `raise` (`ROLLBACK`: SQLite rolls back the whole transaction; `ABORT`: only
/// the statement). Returns the sessions, each turn's result and the plug's result.
async fn batch_with_poison(
    store: &std::sync::Arc<EmbeddedStore>,
    raise: &str,
) -> (
    Vec<SessionId>,
    Vec<Result<Vec<agent_server::memory::StoredFact>, MemoryError>>,
    Result<(), MemoryError>,
) {
    let lock = lock_writes(store.path());
    lock.execute_batch(&format!(
        "CREATE TRIGGER poison BEFORE INSERT ON working_items WHEN new.text = 'poison'
         BEGIN SELECT RAISE({raise}, 'poisoned'); END;"
    ))
    .unwrap();
    let plug = plug_writer(store).await;
    let sessions: Vec<SessionId> = (0..5).map(|i| session(&format!("batch{i}"))).collect();
    let writes = sessions.iter().enumerate().map(|(i, s)| {
        let text = if i == 2 { "poison" } else { "innocent" };
        async move { store.commit_turn(s, turn(text, Some(0))).await }
    });
    let release = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        lock.execute_batch("COMMIT").unwrap();
    };
    let (results, ()) = tokio::join!(join_all(writes), release);
    (sessions, results, plug.await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_batch_fails_every_waiter() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    // SQLite rolls back the whole transaction when it sees one turn: the batch holding that turn
    // cannot commit, whatever the other turns did.
    let (sessions, results, _) = batch_with_poison(&store, "ROLLBACK").await;

    for (s, result) in sessions.iter().zip(&results) {
        assert!(
            result.is_err(),
            "no waiter of the failed batch is told it succeeded: {result:?}"
        );
        assert!(
            stored_texts(&store, s).await.is_empty(),
            "nothing of the batch was stored"
        );
    }
    // The writer carries on with the next batch.
    raw_drop_trigger(store.path());
    let after = session("after");
    store
        .commit_turn(&after, turn("after the failure", None))
        .await
        .unwrap();
    assert_eq!(stored_texts(&store, &after).await, ["after the failure"]);
}

fn raw_drop_trigger(path: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn.execute_batch("DROP TRIGGER poison").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_failing_after_it_wrote_fails_alone() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    // ABORT fails only the statement: the poisoned turn has already written its fact when its
    // working item is refused, so the batch must undo that turn's writes and keep the others'.
    let (sessions, results, plug) = batch_with_poison(&store, "ABORT").await;
    plug.unwrap();

    for (i, (s, result)) in sessions.iter().zip(&results).enumerate() {
        let snap = store.snapshot(s, t0()).await.unwrap();
        if i == 2 {
            assert!(result.is_err(), "the poisoned turn fails: {result:?}");
            assert!(snap.working.is_empty() && snap.facts.is_empty(), "{snap:?}");
        } else {
            result
                .as_ref()
                .expect("the other turns of the batch commit");
            assert_eq!(stored_texts(&store, s).await, ["innocent"]);
            assert_eq!(snap.facts.len(), 1, "its fact too");
        }
    }
    // Each session carries on from what was committed: numbering, epoch and registration of the
    // re-run batch, not of the attempt that was rolled back.
    raw_drop_trigger(store.path());
    for s in &sessions {
        store.commit_turn(s, turn("next", Some(0))).await.unwrap();
    }
    assert_eq!(
        stored_texts(&store, &sessions[0]).await,
        ["innocent", "next"]
    );
    assert_eq!(stored_texts(&store, &sessions[2]).await, ["next"]);
    store.reset(&sessions[2]).await.unwrap();
    assert_eq!(epoch(&store, &sessions[2]).await, 1);
    let stale = store
        .commit_turn(&sessions[2], turn("stale", Some(0)))
        .await;
    assert!(matches!(stale, Err(MemoryError::SessionReset)), "{stale:?}");
}
