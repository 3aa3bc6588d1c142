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
//! (a group commit between its Redis write and its COMMIT, say). Jobs queue while a batch runs, so
//! the busier the server, the larger the batches, and a lone request is served at once, alone.
//!
//! A batch runs alone for up to [`ALONE_FOR`]: the next one starts when it ends, carrying every
//! job that arrived meanwhile, since a turn costs Postgres less in a larger batch (on this
//! project's 2-core machine, two batches at once gave 12 % fewer turns/s). A batch still running
//! after that (waiting out a timeout, retrying its jobs one by one, compensating) no longer holds
//! the others back: up to `in_flight` batches then run at once.
//!
//! The loop ends when the last handle (and with it the last sender) is dropped.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{Semaphore, mpsc, oneshot};

use crate::memory::MemoryError;
use crate::task;
use crate::telemetry::Metrics;

/// Most jobs per batch: bounds the statements' array sizes and how long the first job of a batch
/// waits for the last; far above what 64 connections queue.
const MAX_BATCH: usize = 256;

/// Jobs that may wait before `submit` waits for room.
const QUEUE: usize = 4096;

/// How long a batch runs before the next may start alongside it; far above a healthy batch's
/// few milliseconds, far below an operation's timeout.
const ALONE_FOR: Duration = Duration::from_millis(20);

/// One request waiting for its batch, and where its answer goes.
pub(super) struct Job<Req, Out> {
    pub request: Req,
    pub reply: oneshot::Sender<Result<Out, MemoryError>>,
}

impl<Req, Out> Job<Req, Out> {
    /// Answers the job; a waiter that stopped waiting no longer needs the answer.
    pub(super) fn answer(self, outcome: Result<Out, MemoryError>) {
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
    /// Starts the task on the current runtime; each batch is recorded in `metrics`. `handle`
    /// must answer every job of its batch.
    pub(super) fn spawn<F, Fut>(
        what: &'static str,
        in_flight: usize,
        metrics: &Arc<Metrics>,
        handle: F,
    ) -> Self
    where
        F: Fn(Vec<Job<Req, Out>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Self::spawn_with(what, in_flight, ALONE_FOR, Arc::clone(metrics), handle)
    }

    /// [`Batcher::spawn`] with another time a batch runs alone.
    fn spawn_with<F, Fut>(
        what: &'static str,
        in_flight: usize,
        alone_for: Duration,
        metrics: Arc<Metrics>,
        handle: F,
    ) -> Self
    where
        F: Fn(Vec<Job<Req, Out>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (jobs, queue) = mpsc::channel(QUEUE);
        task::server_work(run(what, in_flight, alone_for, metrics, queue, handle));
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
        dependency: super::BACKEND,
        reason: "the memory task failed".to_owned(),
    }
}

async fn run<Req, Out, F, Fut>(
    what: &'static str,
    in_flight: usize,
    alone_for: Duration,
    metrics: Arc<Metrics>,
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
        let size = jobs.len();
        let started = Instant::now();
        let batch = handle(std::mem::replace(&mut jobs, Vec::with_capacity(MAX_BATCH)));
        let (done, finished) = oneshot::channel::<()>();
        let metrics = Arc::clone(&metrics);
        task::server_work(async move {
            if let Err(e) = task::server_work(batch).await {
                tracing::error!(error = %e, batch = what, "a memory batch failed; its requests got an error");
            }
            metrics.observe_batch(super::BACKEND, what, size, started.elapsed());
            drop(slot);
            drop(done);
        });
        // Either way the channel closes: `done` is dropped when the batch ends.
        let _ = tokio::time::timeout(alone_for, finished).await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Runs 64 submissions through a batcher whose handler takes `each` per batch and whose
    /// batches run alone for `alone_for`; returns the most batches that ran at once and how many
    /// batches there were.
    async fn run_batches(each: Duration, alone_for: Duration) -> (usize, usize) {
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let batches = Arc::new(AtomicUsize::new(0));
        let batcher: Batcher<u32, u32> =
            Batcher::spawn_with("test", 2, alone_for, Arc::default(), {
                let (running, most, batches) = (running.clone(), most.clone(), batches.clone());
                move |jobs: Vec<Job<u32, u32>>| {
                    let (running, most, batches) = (running.clone(), most.clone(), batches.clone());
                    async move {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        batches.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(each).await;
                        running.fetch_sub(1, Ordering::SeqCst);
                        for job in jobs {
                            let n = job.request;
                            job.answer(Ok(n * 2));
                        }
                    }
                }
            });
        // One job first, alone in the first batch; the rest while it runs.
        let answers = (0..64u32).map(|n| {
            let batcher = batcher.clone();
            async move {
                if n > 0 {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                (n, batcher.submit(n).await)
            }
        });
        for (n, answer) in futures_util::future::join_all(answers).await {
            assert_eq!(answer.unwrap(), n * 2, "every job gets its own answer");
        }
        (most.load(Ordering::SeqCst), batches.load(Ordering::SeqCst))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_quick_batch_runs_alone_and_a_slow_one_lets_the_next_start() {
        // Margins of 100x and 30x, for a shared machine that may stall a task for a while.
        let (most, _) = run_batches(Duration::from_millis(2), Duration::from_millis(200)).await;
        assert_eq!(
            most, 1,
            "batches well under the time they run alone never overlap"
        );
        let (most, batches) =
            run_batches(Duration::from_millis(300), Duration::from_millis(10)).await;
        assert!(
            batches >= 2,
            "the first job alone, then the rest: {batches} batches"
        );
        assert_eq!(
            most, 2,
            "a batch past that time lets the next one run beside it"
        );
    }
}
