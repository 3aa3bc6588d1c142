//! `SendStreamingMessage` as server-sent events: each event's `data` is a JSON-RPC answer to the
//! request whose `result` is one stream response (A2A 1.0, JSON-RPC binding); an error is an
//! event named `error` whose `data` is a JSON-RPC error answer (as the official SDK's server
//! sends it, and its client reads it).
//!
//! A task's stream, in order: the task (working, its history the user's message), the reply as
//! artifact chunks (the first makes the `reply` artifact, the others append, the last says it is
//! whole), then the status update that completes it, which ends the stream. The invariant of
//! every API here: that last event leaves only after the turn is committed and the task stored.
//! A builtin model's reply is whole once committed, so its stream is written at once; an
//! upstream model's stream is relayed as it comes ([`relayed`]), the completion held back until
//! the relay's `Done` (the commit) and the task's storage. A stream that fails before then ends
//! with an error event, and nothing was stored.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt as _;
use protocol::a2a::{JsonRpcId, JsonRpcResponse, StreamEvent as A2aEvent, StreamResponse, Task};
use protocol::openai::ChatCompletionChunk;
use serde_json::Value;

use super::task::Exchange;
use crate::agent::{StreamEvent, TurnStream};
use crate::error::A2aError;
use crate::http::chat::content_pieces;
use crate::memory::tasks::TaskStore;

/// Server-sent events being written, all answering request `id`.
pub(super) struct Events {
    id: Option<JsonRpcId>,
    out: Vec<u8>,
}

impl Events {
    pub(super) fn new(id: Option<JsonRpcId>) -> Self {
        Self {
            id,
            out: Vec::new(),
        }
    }

    /// One stream response.
    pub(super) fn push(&mut self, event: A2aEvent) {
        let answer = JsonRpcResponse::success(self.id.clone(), StreamResponse::from(event));
        self.out.extend_from_slice(b"data: ");
        serde_json::to_writer(&mut self.out, &answer).expect("stream responses serialise");
        self.out.extend_from_slice(b"\n\n");
    }

    /// The error that ends the stream.
    pub(super) fn fail(&mut self, error: &A2aError) {
        tracing::error!(error = %error, "an A2A stream ended with an error");
        let answer = JsonRpcResponse::<Value>::failure(self.id.clone(), error.rpc_error());
        self.out.extend_from_slice(b"event: error\ndata: ");
        serde_json::to_writer(&mut self.out, &answer).expect("error answers serialise");
        self.out.extend_from_slice(b"\n\n");
    }

    /// What was written since the last take.
    pub(super) fn take(&mut self) -> Bytes {
        Bytes::from(std::mem::take(&mut self.out))
    }
}

/// The whole stream of a task already stored, answered with `reply`: the task, the reply in
/// pieces of a few words, the completion.
pub(super) fn whole(id: Option<JsonRpcId>, exchange: &Exchange, reply: &str) -> Bytes {
    let mut events = Events::new(id);
    events.push(A2aEvent::Task(exchange.working()));
    let pieces = content_pieces(reply);
    let count = pieces.len().max(1);
    for (i, piece) in pieces
        .into_iter()
        .chain((reply.is_empty()).then(String::new))
        .enumerate()
    {
        events.push(A2aEvent::ArtifactUpdate(exchange.chunk(
            &piece,
            i == 0,
            i + 1 == count,
        )));
    }
    events.push(A2aEvent::StatusUpdate(exchange.done()));
    events.take()
}

/// The stream of a task found already answered (a message sent again): that task, whole, which
/// ends the stream.
pub(super) fn answered(id: Option<JsonRpcId>, task: Task) -> Bytes {
    let mut events = Events::new(id);
    events.push(A2aEvent::Task(task));
    events.take()
}

/// The reply text an upstream chunk adds.
fn delta(chunk: &ChatCompletionChunk) -> String {
    chunk
        .choices
        .iter()
        .filter(|c| c.index == 0)
        .filter_map(|c| c.delta.content.as_deref())
        .collect()
}

/// What a relayed turn's events add to the reply; `Ok(true)` once the turn is stored (`Done`).
fn read_batch(batch: Vec<StreamEvent>, text: &mut String) -> Result<(Vec<String>, bool), A2aError> {
    let mut pieces = Vec::new();
    for event in batch {
        let piece = match event {
            StreamEvent::Forwarded(data) => {
                match serde_json::from_str::<ChatCompletionChunk>(&data) {
                    Ok(chunk) => delta(&chunk),
                    Err(e) => {
                        tracing::warn!(error = %e, "an upstream chunk did not parse; skipped");
                        String::new()
                    }
                }
            }
            StreamEvent::Chunk(chunk) => delta(&chunk),
            StreamEvent::Done => return Ok((pieces, true)),
            StreamEvent::Failed(e) => return Err(e.into()),
        };
        if !piece.is_empty() {
            text.push_str(&piece);
            pieces.push(piece);
        }
    }
    Ok((pieces, false))
}

/// The reply of a relayed turn, whole: for a `SendMessage` answered by a stream.
pub(super) async fn collect(mut turn: TurnStream) -> Result<String, A2aError> {
    let mut text = String::new();
    while let Some(batch) = turn.next_batch().await {
        if read_batch(batch, &mut text)?.1 {
            return Ok(text);
        }
    }
    Err(A2aError::Api(crate::error::ApiError::Internal(
        "the relayed stream ended before the turn was stored",
    )))
}

/// A relayed upstream stream as A2A events: the task at once, the reply's chunks as they come,
/// and, after the turn's commit (`Done`) and the task's storage, the last chunk and the
/// completion.
pub(super) fn relayed(
    id: Option<JsonRpcId>,
    exchange: Exchange,
    turn: TurnStream,
    tasks: Arc<dyn TaskStore>,
) -> impl futures_util::Stream<Item = Result<Bytes, Infallible>> + 'static {
    let mut events = Events::new(id);
    events.push(A2aEvent::Task(exchange.working()));
    let opening = events.take();
    let relay = Relay {
        events,
        exchange,
        turn,
        tasks,
        text: String::new(),
        first: true,
    };
    let rest = futures_util::stream::unfold(Some(relay), |relay| async move {
        let mut relay = relay?;
        // None: the relay stopped without an end (the client went away); nothing more to say.
        let batch = relay.turn.next_batch().await?;
        let ended = match read_batch(batch, &mut relay.text) {
            Ok((pieces, done)) => {
                for piece in pieces {
                    let chunk = relay.exchange.chunk(&piece, relay.first, false);
                    relay.first = false;
                    relay.events.push(A2aEvent::ArtifactUpdate(chunk));
                }
                if done {
                    relay.finish().await;
                }
                done
            }
            Err(e) => {
                relay.events.fail(&e);
                true
            }
        };
        let bytes = relay.events.take();
        Some((Ok(bytes), (!ended).then_some(relay)))
    });
    futures_util::stream::once(async move { Ok(opening) }).chain(rest)
}

struct Relay {
    events: Events,
    exchange: Exchange,
    turn: TurnStream,
    tasks: Arc<dyn TaskStore>,
    /// The reply so far.
    text: String,
    /// No chunk has gone out yet.
    first: bool,
}

impl Relay {
    /// The turn is committed: stores the task, then says the reply is whole and the task done.
    async fn finish(&mut self) {
        let task = self.exchange.completed(&self.text);
        let stored = match self.exchange.stored(&task) {
            Ok(stored) => stored,
            Err(e) => return self.events.fail(&e),
        };
        if let Err(e) = self.tasks.put_task(&stored).await {
            return self.events.fail(&e.into());
        }
        let last = self.exchange.chunk("", self.first, true);
        self.events.push(A2aEvent::ArtifactUpdate(last));
        self.events
            .push(A2aEvent::StatusUpdate(self.exchange.done()));
    }
}
