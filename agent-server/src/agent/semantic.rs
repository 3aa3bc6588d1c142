//! Semantic recall's part of a turn, and the backfill that embeds what a turn could not.
//!
//! A turn waits for its embeddings: [`Semantic::query`] embeds the new user text before recall
//! (so recall ranks by meaning as well as by words), and [`Semantic::embed_new`] embeds what the
//! turn writes before it is committed, so a stored item is found by meaning from the next turn
//! on, and its vector is written in the same transaction as the item. When the embedder fails
//! (an endpoint down, slow or answering garbage) the turn goes on without: recall is lexical, and
//! the items are stored without a vector and left to the [`backfill`], which finds every item
//! without one in the store (so nothing is lost when the process dies first) and embeds it once
//! the embedder answers again. `/readyz` and `/metrics` show how many items wait.
//!
//! Why wait rather than acknowledge first and embed behind: recall right after a turn then sees
//! it by meaning too, which a benchmark that asks right after ingesting depends on; and the
//! in-process model embeds a short text in milliseconds, batched with concurrent turns' texts.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use protocol::SessionId;
use protocol::control::FactKind;
use tokio::sync::Notify;
use uuid::Uuid;

use crate::embed::{Embedder, metrics as embed_metrics};
use crate::memory::{MemoryStore, NewFact};
use crate::telemetry::Metrics;

/// Embeddings of one session's items, by id.
type Vectors = Vec<(Uuid, Arc<[f32]>)>;

/// How many items the backfill embeds per round.
const BACKFILL_BATCH: usize = 256;

/// How long the backfill waits after a failed round before it tries again, at first and at most
/// (doubling in between). The cap is how long an embedder that came back may wait to be used: a
/// failed round costs one query of the store and one call to the embedder.
const BACKFILL_RETRY: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(10));

/// How often the backfill looks for unembedded items when no turn woke it.
const BACKFILL_IDLE: Duration = Duration::from_secs(60);

/// The embedder as a turn uses it.
#[derive(Clone)]
pub(crate) struct Semantic {
    embedder: Arc<dyn Embedder>,
    /// Wakes the backfill: a turn stored items without their vectors.
    wake: Arc<Notify>,
    /// Where the backfill keeps the count of items waiting for an embedding.
    metrics: Arc<Metrics>,
}

impl Semantic {
    pub(crate) fn new(embedder: Arc<dyn Embedder>, metrics: Arc<Metrics>) -> Self {
        Self {
            embedder,
            wake: Arc::new(Notify::new()),
            metrics,
        }
    }

    /// The embedding of a recall's query text, or `None` (recall is then lexical; the embedder's
    /// health and metrics say why).
    pub(crate) async fn query(&self, text: &str) -> Option<Arc<[f32]>> {
        let vectors = self.embedder.embed(vec![text.to_owned()]).await.ok()?;
        vectors.into_iter().next().map(Arc::from)
    }

    /// Gives the facts and episodes among `facts` that have no embedding one; `known` is a text
    /// already embedded this turn (the query) with its vector, reused for items with that text.
    /// On failure they stay without, and the backfill is woken to embed them once stored.
    pub(crate) async fn embed_new(
        &self,
        facts: &mut [NewFact],
        known: Option<(&str, &Arc<[f32]>)>,
    ) {
        let mut wanted: Vec<usize> = Vec::new();
        for (i, fact) in facts.iter_mut().enumerate() {
            if fact.embedding.is_some() || !embeddable(fact.kind) {
                continue;
            }
            match known {
                Some((text, vector)) if text == fact.text => fact.embedding = Some(vector.clone()),
                _ => wanted.push(i),
            }
        }
        if wanted.is_empty() {
            return;
        }
        let texts: Vec<String> = wanted.iter().map(|&i| facts[i].text.clone()).collect();
        match self.embedder.embed(texts).await {
            Ok(vectors) => {
                for (i, vector) in wanted.into_iter().zip(vectors) {
                    facts[i].embedding = Some(Arc::from(vector));
                }
            }
            Err(_) => self.wake.notify_one(),
        }
    }

    /// Starts the backfill on the runtime; it runs as long as the server does.
    pub(crate) fn start_backfill(&self, store: Arc<dyn MemoryStore>) {
        let (embedder, wake) = (Arc::clone(&self.embedder), Arc::clone(&self.wake));
        crate::task::server_work(backfill(store, embedder, wake, Arc::clone(&self.metrics)));
    }
}

/// Whether recall ranks items of this kind by meaning: facts and episodes. Rules and reminders
/// are loaded whole on every turn.
fn embeddable(kind: FactKind) -> bool {
    matches!(kind, FactKind::Fact | FactKind::Episode)
}

/// Embeds every stored fact and episode that has no vector, round after round, and keeps the
/// pending gauge. A failed round (the store or the embedder) is retried after a pause that
/// doubles up to ten seconds; an idle backfill looks again every minute, or when a turn wakes it.
async fn backfill(
    store: Arc<dyn MemoryStore>,
    embedder: Arc<dyn Embedder>,
    wake: Arc<Notify>,
    metrics: Arc<Metrics>,
) {
    let mut retry = BACKFILL_RETRY.0;
    loop {
        match backfill_round(store.as_ref(), embedder.as_ref(), &metrics).await {
            Ok(0) => {
                retry = BACKFILL_RETRY.0;
                let _ = tokio::time::timeout(BACKFILL_IDLE, wake.notified()).await;
            }
            Ok(_) => retry = BACKFILL_RETRY.0,
            Err(reason) => {
                tracing::warn!(%reason, retry_in = ?retry, "embedding backfill failed");
                tokio::time::sleep(retry).await;
                retry = (retry * 2).min(BACKFILL_RETRY.1);
            }
        }
    }
}

/// One round: embeds up to [`BACKFILL_BATCH`] items; returns how many.
async fn backfill_round(
    store: &dyn MemoryStore,
    embedder: &dyn Embedder,
    metrics: &Metrics,
) -> Result<usize, String> {
    let pending = store
        .unembedded(BACKFILL_BATCH)
        .await
        .map_err(|e| e.to_string())?;
    embed_metrics::set_pending(
        metrics,
        usize::try_from(pending.total).unwrap_or(usize::MAX),
    );
    if pending.items.is_empty() {
        return Ok(0);
    }
    let texts: Vec<String> = pending.items.iter().map(|(_, _, t)| t.clone()).collect();
    let vectors = embedder.embed(texts).await.map_err(|e| e.to_string())?;
    let mut by_session: BTreeMap<&SessionId, Vectors> = BTreeMap::new();
    for ((session, id, _), vector) in pending.items.iter().zip(vectors) {
        by_session
            .entry(session)
            .or_default()
            .push((*id, Arc::from(vector)));
    }
    for (session, vectors) in by_session {
        store
            .set_embeddings(session, vectors)
            .await
            .map_err(|e| e.to_string())?;
    }
    let done = pending.items.len();
    embed_metrics::set_pending(
        metrics,
        usize::try_from(pending.total).unwrap_or(usize::MAX) - done,
    );
    Ok(done)
}
