//! Group commit: the store's one writer, a dedicated thread that owns the write connection.
//!
//! Writes (turn commits, injects, resets) are queued here instead of each taking SQLite's write
//! lock in turn. The thread takes every job waiting in the queue (up to [`MAX_BATCH`]), applies
//! them in order inside ONE `BEGIN IMMEDIATE` transaction, commits it (one WAL sync for the whole
//! batch), and only then answers each job's waiter. So:
//! - an `Ok` is sent only after the transaction holding that job's writes has committed (with
//!   `synchronous = FULL`, after the WAL is on disk): acknowledged writes stay durable;
//! - a job that fails (a turn whose session was reset meanwhile, any SQLite error of its own) is
//!   answered with its error alone, nothing of it is written, and the rest of the batch still
//!   commits. Jobs first share the transaction ([`Isolation::Shared`]): the common failure, an
//!   epoch check, comes before a job writes anything. A job that fails after writing cannot be
//!   undone alone, so then the batch is rolled back and run again with each job in its own
//!   savepoint ([`Isolation::Savepoints`]); a job's work can run twice for that reason;
//! - the epoch, next `seq` and registration of each session come from the writer's
//!   [`SessionCursors`] rather than three statements per turn;
//! - when the batch itself fails (BEGIN, COMMIT, SQLite aborting the transaction, a panic), every
//!   waiter gets an error: never a success for something that was not committed;
//! - jobs are applied in the order they were queued, so a reset queued before a turn is seen by
//!   that turn's epoch check, exactly as with one transaction per job.
//!
//! - after a commit, each job's effect on the session cache (`cache.rs`) is applied, in queue
//!   order, just before that job is answered: a turn is visible to recall by the time its client
//!   has the reply.
//!
//! A dedicated thread rather than the blocking pool: the writer is always busy under load, and
//! one long-lived thread avoids a hand-off to a pool thread (and a connection checkout) per write.

use std::fs::File;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;

use deadpool_sqlite::rusqlite::{Connection, Transaction, TransactionBehavior};
use tokio::sync::oneshot;

use super::cache::{SessionCache, SessionChange};
use super::cursors::SessionCursors;
use super::{DEPENDENCY, sqlite_error};
use crate::memory::{MemoryConfig, MemoryError};
use crate::telemetry::Metrics;

/// Most jobs per transaction. Bounds the time the first job of a batch waits for the last one, and
/// the memory held in results until the commit; far above what 64 connections queue.
const MAX_BATCH: usize = 512;

/// Work a job does inside the batch's transaction: its result, and what it changed in one
/// session, for the cache. It may run twice (see [`Isolation`]); the first run's writes are then
/// rolled back before the second.
type Work<T> = Box<
    dyn FnMut(&Connection, &mut SessionCursors) -> Result<(T, SessionChange), MemoryError> + Send,
>;

/// How the jobs of a batch are kept apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Isolation {
    /// Jobs share the transaction. A job may fail before it writes (a turn's epoch check does);
    /// one that fails after writing has no savepoint to undo its writes alone, so the batch is
    /// rolled back and run again with `Savepoints`.
    Shared,
    /// Each job in its own savepoint, so any failure undoes that job only. It costs two
    /// statements per job and a copy of every page a job is first to change (SQLite's statement
    /// journal), so it is only the fallback.
    Savepoints,
}

/// How applying one job went, for the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Applied {
    /// Succeeded, or failed having written nothing: its outcome is its own.
    Alone,
    /// Failed after writing, without a savepoint: the batch must be rolled back and re-run.
    Entangled,
}

/// What the writer thread owns besides its connection.
pub(super) struct WriterContext {
    pub cache: Arc<SessionCache>,
    pub config: MemoryConfig,
    /// The exclusive lock on the database file: held (never read) for as long as the thread may
    /// write, so the next owner cannot start while a write of this one is still in flight.
    pub _lock: File,
    /// Where each batch is recorded (`agentwall_memory_batch_*`, batch `write`).
    pub metrics: Arc<Metrics>,
}

/// A writer thread and the queue into it: what the memory file's writer and the responses
/// file's (`responses/writer.rs`) share. Dropping it closes the queue, lets the thread finish the
/// jobs already queued, and waits for it to exit (which, for the memory file, releases its lock).
pub(super) struct WriterThread<J> {
    /// What the thread is, for errors ("the database writer").
    what: &'static str,
    jobs: Option<mpsc::Sender<J>>,
    thread: Option<JoinHandle<()>>,
}

impl<J> Drop for WriterThread<J> {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            // The thread only finishes the jobs already queued; none waits for anything else.
            let _ = thread.join();
        }
    }
}

impl<J: Send + 'static> WriterThread<J> {
    /// Starts a thread named `name` (`what` it is, in errors) that runs `run` on the queue until
    /// every job is taken and the handle is dropped.
    pub(super) fn spawn(
        name: &str,
        what: &'static str,
        run: impl FnOnce(mpsc::Receiver<J>) + Send + 'static,
    ) -> Result<Self, MemoryError> {
        let (jobs, queue) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || run(queue))
            .map_err(|e| MemoryError::Backend {
                dependency: DEPENDENCY,
                reason: format!("cannot start the {what} thread: {e}"),
            })?;
        Ok(Self {
            what,
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Queues `job`; an error when the thread has stopped.
    pub(super) fn send(&self, job: J) -> Result<(), MemoryError> {
        let jobs = self.jobs.as_ref().ok_or_else(|| self.stopped())?;
        jobs.send(job).map_err(|_| self.stopped())
    }

    /// The error of a job the thread will never answer.
    pub(super) fn stopped(&self) -> MemoryError {
        MemoryError::Unavailable {
            dependency: DEPENDENCY,
            reason: format!("the {} has stopped", self.what),
        }
    }
}

/// Handle to the memory file's writer thread.
pub(super) struct Writer {
    thread: WriterThread<Box<dyn Job>>,
}

impl Writer {
    /// Starts the writer thread on `conn`, which must be configured and migrated already.
    pub(super) fn spawn(conn: Connection, context: WriterContext) -> Result<Self, MemoryError> {
        let thread = WriterThread::spawn("embedded-writer", "database writer", move |queue| {
            run(conn, queue, context)
        })?;
        Ok(Self { thread })
    }

    /// Queues `work` and waits until its batch has committed (or failed), and its effect is in
    /// the cache.
    pub(super) async fn write<T, F>(&self, work: F) -> Result<T, MemoryError>
    where
        F: FnMut(&Connection, &mut SessionCursors) -> Result<(T, SessionChange), MemoryError>
            + Send
            + 'static,
        T: Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Pending {
            work: Box::new(work),
            result: None,
            reply,
        };
        self.thread.send(Box::new(job))?;
        // A dropped sender means the thread died without answering (it never does short of a
        // panic escaping `catch_unwind`); that is an error, never a success.
        answer.await.map_err(|_| self.thread.stopped())?
    }
}

/// One queued write, type-erased so that jobs with different results share the queue.
trait Job: Send {
    /// Runs the work in `tx` as `isolation` says, keeping its result for [`Job::settle`] and
    /// noting its change in `cursors` if it succeeded.
    fn apply(
        &mut self,
        tx: &mut Transaction<'_>,
        cursors: &mut SessionCursors,
        isolation: Isolation,
    ) -> Applied;
    /// Given how the batch's transaction ended, applies the job's cache effect (only if it
    /// committed) and answers the waiter.
    fn settle(self: Box<Self>, batch: &Result<(), MemoryError>, context: &WriterContext);
}

struct Pending<T> {
    work: Work<T>,
    result: Option<Result<(T, SessionChange), MemoryError>>,
    reply: oneshot::Sender<Result<T, MemoryError>>,
}

impl<T: Send> Job for Pending<T> {
    fn apply(
        &mut self,
        tx: &mut Transaction<'_>,
        cursors: &mut SessionCursors,
        isolation: Isolation,
    ) -> Applied {
        let result = match isolation {
            Isolation::Shared => {
                // Each statement is atomic, so a job whose statements changed no row wrote nothing.
                let before = tx.total_changes();
                let result = (self.work)(tx, cursors);
                if result.is_err() && tx.total_changes() != before {
                    return Applied::Entangled;
                }
                result
            }
            Isolation::Savepoints => tx.savepoint().map_err(sqlite_error).and_then(|savepoint| {
                let value = (self.work)(&savepoint, cursors)?;
                savepoint.commit().map_err(sqlite_error)?;
                Ok(value)
            }),
        };
        // On error the savepoint (if any) was dropped, which rolled back this job's writes only.
        if let Ok((_, change)) = &result {
            cursors.note(change);
        }
        self.result = Some(result);
        Applied::Alone
    }

    fn settle(self: Box<Self>, batch: &Result<(), MemoryError>, context: &WriterContext) {
        let answer = match (batch, self.result) {
            // The job failed on its own: nothing of it was written, whatever the batch did.
            (_, Some(Err(own))) => Err(own),
            (Ok(()), Some(Ok((value, change)))) => {
                context.cache.apply(change, &context.config);
                Ok(value)
            }
            (Err(batch), _) => Err(batch.clone()),
            // Not applied although the batch committed: only if the batch stopped early, which
            // always comes with an error; answer with one rather than inventing a result.
            (Ok(()), None) => Err(MemoryError::Backend {
                dependency: DEPENDENCY,
                reason: "the write was not applied".to_owned(),
            }),
        };
        // The waiter may have gone (a cancelled request); its write stands either way.
        let _ = self.reply.send(answer);
    }
}

/// The writer thread: batch, commit, answer, until every [`Writer`] handle is dropped.
fn run(mut conn: Connection, queue: mpsc::Receiver<Box<dyn Job>>, context: WriterContext) {
    let mut cursors = SessionCursors::default();
    while let Some(mut batch) = next_batch(&queue) {
        let started = std::time::Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            commit_batch(&mut conn, &mut batch, &mut cursors)
        }))
        .unwrap_or_else(|_| {
            Err(MemoryError::Backend {
                dependency: DEPENDENCY,
                reason: "the database writer panicked; the batch was rolled back".to_owned(),
            })
        });
        if outcome.is_err() {
            // What the batch's jobs noted was rolled back with it.
            cursors.forget_all();
        }
        if !conn.is_autocommit() {
            // Only after a panic between BEGIN and the transaction's guard: make sure nothing of
            // the failed batch can be committed by the next one.
            let _ = conn.execute_batch("ROLLBACK");
        }
        let size = batch.len();
        for job in batch {
            job.settle(&outcome, &context);
        }
        context
            .metrics
            .observe_batch(DEPENDENCY, "write", size, started.elapsed());
    }
}

/// The next batch of a group-committing writer: waits for one job, then takes every job already
/// queued behind it, up to [`MAX_BATCH`]. `None` once every sender is gone and the queue is empty.
pub(super) fn next_batch<J>(queue: &mpsc::Receiver<J>) -> Option<Vec<J>> {
    let first = queue.recv().ok()?;
    let mut batch = vec![first];
    while batch.len() < MAX_BATCH {
        match queue.try_recv() {
            Ok(job) => batch.push(job),
            Err(_) => break,
        }
    }
    Some(batch)
}

/// Applies `batch` in order in one transaction and commits it: jobs sharing the transaction
/// first, each in a savepoint if one of them fails after writing.
fn commit_batch(
    conn: &mut Connection,
    batch: &mut [Box<dyn Job>],
    cursors: &mut SessionCursors,
) -> Result<(), MemoryError> {
    if write_batch(conn, batch, cursors, Isolation::Shared)? == Applied::Alone {
        return Ok(());
    }
    // Rolled back: forget what the first run noted, and run every job again.
    cursors.forget_all();
    match write_batch(conn, batch, cursors, Isolation::Savepoints)? {
        Applied::Alone => Ok(()),
        // Cannot happen (a savepoint undoes its job alone); were it to, nothing was committed.
        Applied::Entangled => Err(MemoryError::Backend {
            dependency: DEPENDENCY,
            reason: "a write could not be undone alone; the batch was rolled back".to_owned(),
        }),
    }
}

/// One attempt at the batch: `Entangled` (nothing committed) if a job failed after writing and
/// `isolation` could not undo it alone.
fn write_batch(
    conn: &mut Connection,
    batch: &mut [Box<dyn Job>],
    cursors: &mut SessionCursors,
    isolation: Isolation,
) -> Result<Applied, MemoryError> {
    // IMMEDIATE takes the write lock up front, so each job's epoch check and writes see no other
    // writer (another process included) in between; a busy file is waited for here.
    let mut tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sqlite_error)?;
    for job in batch.iter_mut() {
        if job.apply(&mut tx, cursors, isolation) == Applied::Entangled {
            // Dropping `tx` rolls the whole attempt back.
            return Ok(Applied::Entangled);
        }
        if tx.is_autocommit() {
            // Some errors (disk full, I/O, out of memory) make SQLite roll back the whole
            // transaction, not just the statement. Carrying on would run the remaining jobs in
            // autocommit mode, outside the batch; the batch has failed instead.
            return Err(MemoryError::Unavailable {
                dependency: DEPENDENCY,
                reason: "SQLite rolled back the write transaction after an error".to_owned(),
            });
        }
    }
    tx.commit().map_err(sqlite_error)?;
    Ok(Applied::Alone)
}
