//! The queue between callers and a provider's thread.
//!
//! A caller's texts are cut into pieces of at most the batch size ([`Queue::embed`]); the
//! provider's thread takes the first piece waiting and adds every other piece already waiting
//! while the batch stays within the batch size ([`Gatherer`]), so concurrent callers (many turns
//! recalling at once, the memory layer's background embedding) share model calls, and a piece
//! arriving while a call runs waits for the next one, not behind every later piece. Each piece
//! gets its own vectors back on a oneshot channel; a caller that went away is skipped.

use std::collections::HashMap;

use futures_util::future::join_all;
use tokio::sync::{mpsc, oneshot};
use tracing::Span;

use super::EmbedError;
use crate::telemetry::propagation;

type Vectors = Result<Vec<Vec<f32>>, EmbedError>;

/// Part of one caller's texts, at most the batch size.
pub struct Piece {
    texts: Vec<String>,
    reply: oneshot::Sender<Vectors>,
    /// The caller's span: the call's HTTP status is recorded on it.
    span: Span,
    /// The trace context to send with a request made for this piece (`traceparent`, ...).
    headers: HashMap<String, String>,
}

/// The callers' side.
pub struct Queue {
    tx: mpsc::UnboundedSender<Piece>,
    batch_size: usize,
}

impl Queue {
    /// A queue of batches of at most `batch_size` texts, and the provider's end of it.
    pub fn new(batch_size: usize) -> (Self, Gatherer) {
        let batch_size = batch_size.max(1);
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Self { tx, batch_size },
            Gatherer {
                rx,
                batch_size,
                held: None,
            },
        )
    }

    /// Embeds `texts` in pieces and joins the pieces' vectors in order. `span` is the caller's
    /// span of the whole call: its outcome is recorded on it. With `propagate`, requests carry
    /// the span's trace context.
    pub async fn embed(&self, texts: Vec<String>, span: Span, propagate: bool) -> Vectors {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let count = texts.len();
        let mut headers = HashMap::new();
        if propagate {
            let cx = propagation::outgoing(&span);
            opentelemetry::global::get_text_map_propagator(|p| {
                p.inject_context(&cx, &mut headers);
            });
        }
        let mut replies = Vec::with_capacity(count.div_ceil(self.batch_size));
        let mut rest = texts;
        while !rest.is_empty() {
            let tail = rest.split_off(rest.len().min(self.batch_size));
            let (reply, rx) = oneshot::channel();
            let piece = Piece {
                texts: rest,
                reply,
                span: span.clone(),
                headers: headers.clone(),
            };
            if self.tx.send(piece).is_err() {
                return failed(&span, EmbedError::Stopped);
            }
            replies.push(rx);
            rest = tail;
        }
        let mut vectors = Vec::with_capacity(count);
        for reply in join_all(replies).await {
            match reply.unwrap_or(Err(EmbedError::Stopped)) {
                Ok(piece) => vectors.extend(piece),
                Err(e) => return failed(&span, e),
            }
        }
        Ok(vectors)
    }
}

fn failed(span: &Span, e: EmbedError) -> Vectors {
    span.record("otel.status_code", "error");
    span.record("error.type", e.kind());
    tracing::debug!(parent: span, error = %e, "texts not embedded");
    Err(e)
}

/// The provider's side: the batches to run, in order.
pub struct Gatherer {
    rx: mpsc::UnboundedReceiver<Piece>,
    batch_size: usize,
    /// A piece taken that did not fit in the last batch: it opens the next.
    held: Option<Piece>,
}

impl Gatherer {
    /// The next batch; `None` once every caller's queue is dropped. For a thread of its own.
    pub fn next_blocking(&mut self) -> Option<Batch> {
        loop {
            let first = match self.held.take() {
                Some(piece) => piece,
                None => self.rx.blocking_recv()?,
            };
            if let Some(batch) = self.fill(first) {
                return Some(batch);
            }
        }
    }

    /// The next batch; `None` once every caller's queue is dropped. Cancel-safe: a piece is
    /// taken off the channel only where no `.await` follows.
    pub async fn next(&mut self) -> Option<Batch> {
        loop {
            let first = match self.held.take() {
                Some(piece) => piece,
                None => self.rx.recv().await?,
            };
            if let Some(batch) = self.fill(first) {
                return Some(batch);
            }
        }
    }

    /// `first` and the pieces waiting behind it that fit; `None` when every caller went away.
    fn fill(&mut self, first: Piece) -> Option<Batch> {
        let mut batch = Batch {
            pieces: Vec::new(),
            texts: 0,
        };
        let mut next = Some(first);
        while let Some(piece) = next.take() {
            if piece.reply.is_closed() {
                // Its caller is gone (a turn that timed out): no model time for it.
            } else if batch.texts + piece.texts.len() > self.batch_size && batch.texts > 0 {
                self.held = Some(piece);
                break;
            } else {
                batch.texts += piece.texts.len();
                batch.pieces.push(piece);
            }
            if batch.texts < self.batch_size {
                next = self.rx.try_recv().ok();
            }
        }
        (!batch.pieces.is_empty()).then_some(batch)
    }
}

/// Pieces of one or more callers, embedded together.
pub struct Batch {
    pieces: Vec<Piece>,
    texts: usize,
}

impl Batch {
    /// How many texts.
    pub fn len(&self) -> usize {
        self.texts
    }

    /// Never true: a batch holds at least one piece of at least one text.
    pub fn is_empty(&self) -> bool {
        self.texts == 0
    }

    /// Every text, in order.
    pub fn texts(&self) -> Vec<&str> {
        self.pieces
            .iter()
            .flat_map(|p| p.texts.iter().map(String::as_str))
            .collect()
    }

    /// The trace context of the first caller: a request serves them all, and continues its trace.
    pub fn headers(&self) -> &HashMap<String, String> {
        &self.pieces[0].headers
    }

    /// The span of the first caller, whose trace the batch's work joins.
    pub fn span(&self) -> &Span {
        &self.pieces[0].span
    }

    /// Records `value` as `field` on every caller's span.
    pub fn record(&self, field: &str, value: u64) {
        for piece in &self.pieces {
            piece.span.record(field, value);
        }
    }

    /// Gives each caller its vectors, or the error.
    pub fn answer(self, result: Vectors) {
        let result = result.and_then(|vectors| {
            if vectors.len() == self.texts {
                Ok(vectors)
            } else {
                Err(EmbedError::Garbage {
                    reason: format!("{} vectors for {} texts", vectors.len(), self.texts),
                })
            }
        });
        match result {
            Ok(vectors) => {
                let mut vectors = vectors.into_iter();
                for piece in self.pieces {
                    let own = vectors.by_ref().take(piece.texts.len()).collect();
                    let _ = piece.reply.send(Ok(own));
                }
            }
            Err(e) => {
                for piece in self.pieces {
                    let _ = piece.reply.send(Err(e.clone()));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(prefix: &str, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{prefix}{i}")).collect()
    }

    /// A provider that returns, for each text, a vector holding its length: enough to see which
    /// text got which vector.
    fn serve(mut gatherer: Gatherer, sizes: std::sync::Arc<std::sync::Mutex<Vec<usize>>>) {
        std::thread::spawn(move || {
            while let Some(batch) = gatherer.next_blocking() {
                sizes.lock().unwrap().push(batch.len());
                let vectors = batch.texts().iter().map(|t| vec![t.len() as f32]).collect();
                batch.answer(Ok(vectors));
            }
        });
    }

    #[tokio::test]
    async fn a_call_above_the_batch_size_is_cut_and_joined_in_order() {
        let (queue, gatherer) = Queue::new(4);
        let sizes = std::sync::Arc::default();
        serve(gatherer, std::sync::Arc::clone(&sizes));
        let input = texts("x", 10);
        let vectors = queue
            .embed(input.clone(), Span::none(), false)
            .await
            .unwrap();
        let lengths: Vec<f32> = input.iter().map(|t| t.len() as f32).collect();
        assert_eq!(vectors.concat(), lengths);
        assert_eq!(*sizes.lock().unwrap(), [4, 4, 2]);
        assert!(
            queue
                .embed(Vec::new(), Span::none(), false)
                .await
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn waiting_pieces_share_a_batch_up_to_its_size_and_the_rest_opens_the_next() {
        let (queue, mut gatherer) = Queue::new(5);
        let mut replies = Vec::new();
        for (name, n) in [("a", 2), ("b", 2), ("c", 3), ("d", 1)] {
            let (reply, rx) = oneshot::channel();
            replies.push(rx);
            queue
                .tx
                .send(Piece {
                    texts: texts(name, n),
                    reply,
                    span: Span::none(),
                    headers: HashMap::new(),
                })
                .unwrap();
        }
        let first = gatherer.next_blocking().unwrap();
        assert_eq!(first.texts(), ["a0", "a1", "b0", "b1"]);
        let second = gatherer.next_blocking().unwrap();
        assert_eq!(second.texts(), ["c0", "c1", "c2", "d0"]);
        second.answer(Ok(vec![vec![1.0]; 4]));
        // A wrong count from the provider is an error for every caller of the batch.
        first.answer(Ok(vec![vec![1.0]; 3]));
        let results: Vec<_> = replies
            .into_iter()
            .map(|r| r.blocking_recv().unwrap())
            .collect();
        assert!(
            matches!(&results[0], Err(EmbedError::Garbage { reason }) if reason == "3 vectors for 4 texts")
        );
        assert_eq!(results[1], results[0]);
        assert_eq!(results[2].as_ref().unwrap().len(), 3);
        assert_eq!(results[3].as_ref().unwrap().len(), 1);
    }

    #[test]
    fn a_piece_whose_caller_went_away_is_not_embedded() {
        let (queue, mut gatherer) = Queue::new(8);
        let (gone, rx) = oneshot::channel();
        drop(rx);
        let (kept, _rx) = oneshot::channel();
        for (reply, name) in [(gone, "gone"), (kept, "kept")] {
            queue
                .tx
                .send(Piece {
                    texts: texts(name, 1),
                    reply,
                    span: Span::none(),
                    headers: HashMap::new(),
                })
                .unwrap();
        }
        assert_eq!(gatherer.next_blocking().unwrap().texts(), ["kept0"]);
        drop(queue);
        assert!(gatherer.next_blocking().is_none());
    }

    #[tokio::test]
    async fn a_stopped_provider_is_an_error_not_a_hang() {
        let (queue, gatherer) = Queue::new(8);
        drop(gatherer);
        assert_eq!(
            queue.embed(texts("x", 3), Span::none(), false).await,
            Err(EmbedError::Stopped)
        );
    }
}
