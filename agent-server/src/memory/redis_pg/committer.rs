//! Group commit for the redis+postgres backend: the turns (and injects) waiting to be written
//! share one Postgres transaction and one Redis MULTI/EXEC.
//!
//! Why: Postgres spends most of its CPU per message (parse, bind, execute, commit, a process
//! wake-up), not per row. Written one by one, a turn with one keyed fact cost seven messages
//! (BEGIN, session lock, three for the fact, COMMIT, and recall's one). A batch costs BEGIN, one
//! statement each for the session locks, the current keyed facts, the retirements and the new
//! facts, and COMMIT, however many turns it holds.
//!
//! One task takes every job waiting in the queue (up to [`MAX_BATCH`]) and writes them as one
//! batch (`Inner::commit_batch`, in `mod.rs`), in a task of its own: a panic fails that batch's
//! waiters (their reply channels close), never the loop, and a caller that stops waiting cannot cut
//! a batch between the Redis write and the COMMIT. Jobs queue while a batch is in flight, so the
//! busier the server, the larger the batches; a lone turn is written at once, alone.
//!
//! The loop ends when the last store handle (and with it the last sender) is dropped.

use std::sync::Arc;

use protocol::SessionId;
use tokio::sync::{Semaphore, mpsc, oneshot};

use super::Inner;
use crate::memory::{MemoryError, StoredFact, TurnWrite};

/// Most jobs per batch: bounds the statements' array sizes and how long the first job of a batch
/// waits for the last; far above what 64 connections queue.
const MAX_BATCH: usize = 256;

/// Batches written at the same time. More than one keeps Postgres and Redis busy while a batch
/// waits for a round trip; each batch takes its sessions' row locks in the same (sorted) order,
/// so concurrent batches never deadlock.
const IN_FLIGHT: usize = 2;

/// Jobs that may wait for the committer before `submit` waits for room.
const QUEUE: usize = 4096;

/// One write waiting for its batch.
pub(super) struct Job {
    pub session: SessionId,
    pub turn: TurnWrite,
    pub reply: oneshot::Sender<Result<Vec<StoredFact>, MemoryError>>,
}

/// Handle to the committer task; cheap to clone.
#[derive(Clone)]
pub(super) struct Committer {
    jobs: mpsc::Sender<Job>,
}

impl Committer {
    /// Starts the committer task on the current runtime.
    pub(super) fn spawn(inner: Arc<Inner>) -> Self {
        let (jobs, queue) = mpsc::channel(QUEUE);
        tokio::spawn(run(inner, queue));
        Self { jobs }
    }

    /// Queues a write and waits for the batch that carries it to commit (or fail).
    pub(super) async fn submit(
        &self,
        session: SessionId,
        turn: TurnWrite,
    ) -> Result<Vec<StoredFact>, MemoryError> {
        let (reply, answer) = oneshot::channel();
        let job = Job {
            session,
            turn,
            reply,
        };
        self.jobs.send(job).await.map_err(|_| stopped())?;
        answer.await.unwrap_or_else(|_| Err(stopped()))
    }
}

fn stopped() -> MemoryError {
    MemoryError::Backend {
        dependency: "redis+postgres",
        reason: "the memory write task failed".to_owned(),
    }
}

async fn run(inner: Arc<Inner>, mut queue: mpsc::Receiver<Job>) {
    let in_flight = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut jobs = Vec::with_capacity(MAX_BATCH);
    loop {
        let Ok(permit) = in_flight.clone().acquire_owned().await else {
            return;
        };
        if queue.recv_many(&mut jobs, MAX_BATCH).await == 0 {
            return;
        }
        let batch = std::mem::replace(&mut jobs, Vec::with_capacity(MAX_BATCH));
        let inner = inner.clone();
        tokio::spawn(async move {
            let written = tokio::spawn(inner.commit_batch(batch)).await;
            if let Err(e) = written {
                tracing::error!(error = %e, "a memory write batch failed; its turns got an error");
            }
            drop(permit);
        });
    }
}
