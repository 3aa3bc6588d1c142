//! Batching for the redis+postgres backend: requests that arrive while others are being served
//! are served together, in one Postgres statement or transaction (and one Redis round trip)
//! instead of one each.
//!
//! Why: Postgres spends most of its CPU per message (parse, bind, execute, commit, a backend
//! wake-up), not per row. Written one by one, a turn with one keyed fact cost seven messages
//! (BEGIN, session lock, three for the fact, COMMIT, and recall's one); in batches a turn costs a
//! fraction of one. The backend runs two batchers: turn commits and injects (`commit_batch`, the
//! group commit) and recalls (`recall_batch`), both in `mod.rs`.
//!
//! A [`Batcher`] task takes every job waiting in its queue (up to [`MAX_BATCH`]) and hands them to
//! its handler as one batch, in a task of its own: a panic fails that batch's waiters (their
//! reply channels close), never the loop, and a caller that stops waiting cannot cut a batch short
//! (a group commit between its Redis write and its COMMIT, say). Up to `in_flight` batches run at
//! once; jobs queue meanwhile, so the busier the server, the larger the batches, and a lone
//! request is served at once, alone.
//!
//! The loop ends when the last handle (and with it the last sender) is dropped.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::{Semaphore, mpsc, oneshot};

use crate::memory::MemoryError;

/// Most jobs per batch: bounds the statements' array sizes and how long the first job of a batch
/// waits for the last; far above what 64 connections queue.
const MAX_BATCH: usize = 256;

/// Jobs that may wait before `submit` waits for room.
const QUEUE: usize = 4096;

/// One request waiting for its batch, and where its answer goes.
pub(super) struct Job<Req, Out> {
    pub request: Req,
    pub reply: oneshot::Sender<Result<Out, MemoryError>>,
}

impl<Req, Out> Job<Req, Out> {
    /// Answers the job; a waiter that stopped waiting no longer needs the answer.
    pub fn answer(self, outcome: Result<Out, MemoryError>) {
        let _ = self.reply.send(outcome);
    }
}

/// Handle to a batching task; cheap to clone.
pub(super) struct Batcher<Req, Out> {
    jobs: mpsc::Sender<Job<Req, Out>>,
}

impl<Req, Out> Clone for Batcher<Req, Out> {
    fn clone(&self) -> Self {
        Self {
            jobs: self.jobs.clone(),
        }
    }
}

impl<Req: Send + 'static, Out: Send + 'static> Batcher<Req, Out> {
    /// Starts the task on the current runtime. `handle` must answer every job of its batch.
    pub(super) fn spawn<F, Fut>(what: &'static str, in_flight: usize, handle: F) -> Self
    where
        F: Fn(Vec<Job<Req, Out>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (jobs, queue) = mpsc::channel(QUEUE);
        tokio::spawn(run(what, in_flight, queue, handle));
        Self { jobs }
    }

    /// Queues a request and waits for the batch that carries it.
    pub(super) async fn submit(&self, request: Req) -> Result<Out, MemoryError> {
        let (reply, answer) = oneshot::channel();
        let job = Job { request, reply };
        self.jobs.send(job).await.map_err(|_| stopped())?;
        answer.await.unwrap_or_else(|_| Err(stopped()))
    }
}

fn stopped() -> MemoryError {
    MemoryError::Backend {
        dependency: "redis+postgres",
        reason: "the memory task failed".to_owned(),
    }
}

async fn run<Req, Out, F, Fut>(
    what: &'static str,
    in_flight: usize,
    mut queue: mpsc::Receiver<Job<Req, Out>>,
    handle: F,
) where
    Req: Send + 'static,
    Out: Send + 'static,
    F: Fn(Vec<Job<Req, Out>>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let slots = Arc::new(Semaphore::new(in_flight.max(1)));
    let mut jobs = Vec::with_capacity(MAX_BATCH);
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        if queue.recv_many(&mut jobs, MAX_BATCH).await == 0 {
            return;
        }
        let batch = handle(std::mem::replace(&mut jobs, Vec::with_capacity(MAX_BATCH)));
        tokio::spawn(async move {
            if let Err(e) = tokio::spawn(batch).await {
                tracing::error!(error = %e, batch = what, "a memory batch failed; its requests got an error");
            }
            drop(slot);
        });
    }
}
