//! The relay of an upstream model's stream: the turn's chunks reach the client as they arrive,
//! and the turn is stored before the stream completes.
//!
//! The invariant every API encoding relies on: [`StreamEvent::Done`] (Chat Completions' final
//! chunks and `[DONE]`) comes only after the turn was committed. A stream that ends any other way
//! ends with [`StreamEvent::Failed`] or just stops (the client went away), and then nothing was
//! stored (except after a relay panic past the commit, as for a client that loses the connection).
//!
//! - Chunks pass through unchanged as they arrive (the upstream's own bytes, unless they carry a
//!   `usage` the client did not ask for), except the final ones (those with a `finish_reason`,
//!   and the usage chunk), which are held back until the commit.
//! - Chunks that have already arrived when one is read go out as one batch, so a burst of tokens
//!   costs one write, not one each.
//! - If the commit fails, or the upstream fails mid-stream: [`StreamEvent::Failed`], no
//!   [`StreamEvent::Done`]; the turn was not stored.
//! - If the client goes away (the [`TurnStream`] is dropped), the relay stops, which stops reading
//!   the upstream, and nothing is stored, as for a non-streamed request whose client disconnects
//!   before the reply.
//! - If the relay panics (a bug), the stream ends with [`StreamEvent::Failed`] instead of just
//!   stopping: without a final event or an error, a client could take the cut stream, or an empty
//!   200, for a complete reply.
//!
//! The usage chunk (the upstream is always asked for one) is kept only when the client asked for
//! `stream_options.include_usage`; otherwise `usage` is removed from every chunk.

use std::collections::BTreeMap;
use std::sync::Arc;

use protocol::openai::{ChatCompletionChunk, ChatMessage, Delta};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::Instrument as _;

use super::{Agent, AgentError, PreparedTurn};
use crate::llm::ChunkStream;
use crate::llm::prompt::reply_text;
use crate::task;

/// One event of a relayed turn, in the order a client must see them.
#[derive(Debug)]
pub(crate) enum StreamEvent {
    /// An upstream chunk as the upstream sent it: its event's `data`.
    Forwarded(String),
    /// A chunk to encode anew: one whose unwanted `usage` was removed, or a final chunk held
    /// until the commit.
    Chunk(ChatCompletionChunk),
    /// The turn is stored and the stream complete.
    Done,
    /// The stream failed; nothing more follows.
    Failed(AgentError),
}

/// A turn whose reply is being relayed. Dropping it stops the relay.
pub(crate) struct TurnStream {
    events: mpsc::Receiver<Vec<StreamEvent>>,
    /// Until the relay's end has been looked at, for a panic.
    relay: Option<JoinHandle<()>>,
}

impl TurnStream {
    /// Relays `chunks` for `turn` in a local task on this worker, inside the request's trace.
    pub(super) fn start(
        agent: Arc<Agent>,
        turn: PreparedTurn,
        chunks: ChunkStream,
        include_usage: bool,
    ) -> Self {
        let (tx, rx) = mpsc::channel(64);
        let relay = task::local_in_request(
            relay(agent, turn, chunks, include_usage, tx).instrument(tracing::Span::current()),
        );
        Self::from_parts(rx, relay)
    }

    pub(crate) fn from_parts(
        events: mpsc::Receiver<Vec<StreamEvent>>,
        relay: JoinHandle<()>,
    ) -> Self {
        Self {
            events,
            relay: Some(relay),
        }
    }

    /// The next batch of events: those that arrived together. `None` once the stream has ended.
    /// Cancel-safe: a batch is not lost if the future is dropped before it resolves.
    pub(crate) async fn next_batch(&mut self) -> Option<Vec<StreamEvent>> {
        if let Some(batch) = self.events.recv().await {
            return Some(batch);
        }
        let relay = self.relay.as_mut()?;
        let ended = relay.await;
        self.relay = None;
        // A relay that stopped because the client went away needs nothing: it was dropped too.
        let panic = ended.err().and_then(|e| e.try_into_panic().ok())?;
        // The panic's own message, for the log the error event points to.
        let message = crate::task::panic_message(&*panic);
        tracing::error!(panic = message, "the relay of an upstream stream panicked");
        Some(vec![StreamEvent::Failed(AgentError::RelayFailed)])
    }
}

/// Relays one upstream stream; see the module's documentation.
async fn relay(
    agent: Arc<Agent>,
    turn: PreparedTurn,
    mut chunks: ChunkStream,
    include_usage: bool,
    tx: mpsc::Sender<Vec<StreamEvent>>,
) {
    let mut reply = AssembledReply::default();
    let mut held = Vec::new();
    let mut finished = false;
    while let Some(item) = chunks.recv().await {
        let mut events = Vec::new();
        let mut next = Some(item);
        while let Some(item) = next {
            let streamed = match item {
                Ok(streamed) => streamed,
                Err(e) => {
                    events.push(StreamEvent::Failed(e.into()));
                    let _ = tx.send(events).await;
                    return;
                }
            };
            let mut chunk = streamed.chunk;
            reply.observe(&chunk);
            // Final: the chunk with the finish reason and everything after it, and usage chunks
            // (servers differ: `choices: []`, or an empty delta).
            finished |= chunk.choices.iter().any(|c| c.finish_reason.is_some());
            if finished || chunk.usage.is_some() || chunk.choices.is_empty() {
                // Without `include_usage`, usage is removed, and a chunk that carried nothing
                // else is dropped.
                let unwanted = !include_usage
                    && chunk.usage.take().is_some()
                    && chunk
                        .choices
                        .iter()
                        .all(|c| c.finish_reason.is_none() && c.delta == Delta::default());
                if !unwanted {
                    held.push(StreamEvent::Chunk(chunk));
                }
            } else if include_usage || !streamed.data.contains("\"usage\"") {
                // Not final, so it carries no usage: the upstream's bytes go on as they are.
                events.push(StreamEvent::Forwarded(streamed.data));
            } else {
                // `"usage": null`, as OpenAI writes it in every chunk once usage is asked for
                // (this server always asks): the client did not ask, so it is left out.
                events.push(StreamEvent::Chunk(chunk));
            }
            next = chunks.try_recv().ok();
        }
        if !events.is_empty() && tx.send(events).await.is_err() {
            return;
        }
    }
    if let Err(e) = agent.commit(turn, &reply.text()).await {
        let _ = tx.send(vec![StreamEvent::Failed(e)]).await;
        return;
    }
    held.push(StreamEvent::Done);
    let _ = tx.send(held).await;
}

/// The reply a stream carried, for memory: its text, or a note of its tool calls.
#[derive(Default)]
struct AssembledReply {
    content: String,
    /// Tool calls by index: (name, arguments).
    tool_calls: BTreeMap<u32, (String, String)>,
}

impl AssembledReply {
    fn observe(&mut self, chunk: &ChatCompletionChunk) {
        for choice in chunk.choices.iter().filter(|c| c.index == 0) {
            if let Some(text) = &choice.delta.content {
                self.content.push_str(text);
            }
            for call in choice.delta.tool_calls.iter().flatten() {
                let entry = self.tool_calls.entry(call.index).or_default();
                if let Some(f) = &call.function {
                    entry.0.push_str(f.name.as_deref().unwrap_or_default());
                    entry.1.push_str(f.arguments.as_deref().unwrap_or_default());
                }
            }
        }
    }

    fn text(&self) -> String {
        let mut message = ChatMessage::assistant(self.content.clone());
        if !self.tool_calls.is_empty() {
            message.tool_calls = Some(
                self.tool_calls
                    .values()
                    .map(|(name, arguments)| protocol::openai::ToolCall {
                        id: String::new(),
                        kind: "function".into(),
                        function: protocol::openai::FunctionCall {
                            name: name.clone(),
                            arguments: arguments.clone(),
                        },
                    })
                    .collect(),
            );
        }
        reply_text(&message)
    }
}
