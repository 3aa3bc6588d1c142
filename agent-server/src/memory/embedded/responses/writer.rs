//! Group commit for the responses file: one thread owns its write connection, takes every write
//! waiting in the queue, applies them in one `BEGIN IMMEDIATE` transaction and commits it (one WAL
//! sync for the batch, where each response alone would take one), then applies each write's
//! effect to the cache (`cache.rs`) and answers it.
//!
//! The same discipline as the memory file's writer (`../writer.rs`), simpler: responses need no
//! session cursors, and each write runs in its own savepoint, so a write that fails is undone
//! alone and the rest of its batch still commits (a response write is a few small statements, so
//! the savepoint's cost does not matter here). An `Ok` is sent only after the batch committed;
//! when the batch fails, every write in it gets the error.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, mpsc};

use deadpool_sqlite::rusqlite::{Connection, Transaction, TransactionBehavior};
use protocol::SessionId;
use tokio::sync::oneshot;

use super::super::writer::{WriterThread, next_batch};
use super::super::{DEPENDENCY, sqlite_error};
use super::cache::ResponseCache;
use crate::memory::MemoryError;
use crate::memory::responses::StoredResponse;

/// What a committed write changes in the cache.
pub(super) enum CacheEffect {
    None,
    /// A response was stored; its stored size in bytes.
    Put(Arc<StoredResponse>, usize),
    /// A response was deleted.
    Remove(String),
    /// A session was reset.
    Reset(SessionId),
}

/// A write's statements: its result and its cache effect. Runs once, in its own savepoint.
type Work<T> = Box<dyn FnOnce(&Connection) -> Result<(T, CacheEffect), MemoryError> + Send>;

/// Handle to the responses file's writer thread.
pub(super) struct ResponsesWriter {
    thread: WriterThread<Box<dyn Job>>,
}

impl ResponsesWriter {
    /// Starts the writer on `conn`, configured and with the schema in place.
    pub(super) fn spawn(conn: Connection, cache: Arc<ResponseCache>) -> Result<Self, MemoryError> {
        let thread = WriterThread::spawn("responses-writer", "responses writer", move |queue| {
            run(conn, queue, cache)
        })?;
        Ok(Self { thread })
    }

    /// Queues `work` and waits until its batch committed (or failed) and its effect is cached.
    pub(super) async fn write<T, F>(&self, work: F) -> Result<T, MemoryError>
    where
        F: FnOnce(&Connection) -> Result<(T, CacheEffect), MemoryError> + Send + 'static,
        T: Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Pending {
            work: Some(Box::new(work)),
            result: None,
            reply,
        };
        self.thread.send(Box::new(job))?;
        answer.await.map_err(|_| self.thread.stopped())?
    }
}

/// One queued write, type-erased so that writes with different results share the queue.
trait Job: Send {
    /// Runs the write in a savepoint of `tx`, keeping its result for [`Job::settle`].
    fn apply(&mut self, tx: &mut Transaction<'_>);
    /// Given how the batch ended, applies the cache effect (only if it committed) and answers.
    fn settle(self: Box<Self>, batch: &Result<(), MemoryError>, cache: &ResponseCache);
}

struct Pending<T> {
    work: Option<Work<T>>,
    result: Option<Result<(T, CacheEffect), MemoryError>>,
    reply: oneshot::Sender<Result<T, MemoryError>>,
}

impl<T: Send> Job for Pending<T> {
    fn apply(&mut self, tx: &mut Transaction<'_>) {
        let Some(work) = self.work.take() else {
            return;
        };
        // Dropping the savepoint on error rolls back this write only.
        self.result = Some(tx.savepoint().map_err(sqlite_error).and_then(|savepoint| {
            let value = work(&savepoint)?;
            savepoint.commit().map_err(sqlite_error)?;
            Ok(value)
        }));
    }

    fn settle(self: Box<Self>, batch: &Result<(), MemoryError>, cache: &ResponseCache) {
        let answer = match (batch, self.result) {
            (_, Some(Err(own))) => Err(own),
            (Ok(()), Some(Ok((value, effect)))) => {
                match effect {
                    CacheEffect::None => {}
                    CacheEffect::Put(response, size) => cache.put(response, size),
                    CacheEffect::Remove(id) => cache.remove(&id),
                    CacheEffect::Reset(session) => cache.remove_session(&session),
                }
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

fn run(mut conn: Connection, queue: mpsc::Receiver<Box<dyn Job>>, cache: Arc<ResponseCache>) {
    while let Some(mut batch) = next_batch(&queue) {
        let outcome = catch_unwind(AssertUnwindSafe(|| commit_batch(&mut conn, &mut batch)))
            .unwrap_or_else(|_| {
                Err(MemoryError::Backend {
                    dependency: DEPENDENCY,
                    reason: "the responses writer panicked; the batch was rolled back".to_owned(),
                })
            });
        if !conn.is_autocommit() {
            // Only after a panic inside the transaction: nothing of it may reach the next batch.
            let _ = conn.execute_batch("ROLLBACK");
        }
        for job in batch {
            job.settle(&outcome, &cache);
        }
    }
}

fn commit_batch(conn: &mut Connection, batch: &mut [Box<dyn Job>]) -> Result<(), MemoryError> {
    let mut tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sqlite_error)?;
    for job in batch.iter_mut() {
        job.apply(&mut tx);
        if tx.is_autocommit() {
            // SQLite rolled the whole transaction back (disk full, I/O error): the batch failed.
            return Err(MemoryError::Unavailable {
                dependency: DEPENDENCY,
                reason: "SQLite rolled back the responses transaction after an error".to_owned(),
            });
        }
    }
    tx.commit().map_err(sqlite_error)
}
