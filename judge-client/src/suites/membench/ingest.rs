//! How a conversation reaches the agent: the three ingestion protocols.
//!
//! - `chat`: every dataset turn is one turn through the run's API (`--api`: one
//!   `POST /v1/chat/completions`, a Responses API request, or an A2A `SendMessage` in the session's
//!   context) in the conversation's session, in order, with `X-Mock-Time` set to its session's
//!   date and time. The speaker's name is on the
//!   message's `name` and at the start of its text ("Ana: ..."); a shared photo is its caption
//!   ("[shares a photo of ...]"). The agent's replies are recorded, not scored. LongMemEval's
//!   assistant turns go as the `assistant` message before the next user turn of their session (as
//!   a client sends history); a session's last assistant turn has no next user turn and is not sent
//!   (counted in the manifest).
//! - `inject`: each session is one `POST /control/memory/inject`, one fact per turn (its line as
//!   above, assistant turns included), observed at the session's date.
//! - `context`: nothing is ingested; each question carries the history in its prompt
//!   ([`context_prompt`]).
//!
//! Every request names the dataset turns it carries in `X-Turn-Id` (comma-separated, in message
//! or fact order), so an agent can keep them and name them back in `POST /control/memory/recall`.

use std::time::Instant;

use protocol::control::{InjectFact, InjectRequest};
use protocol::headers::TURN_ID;
use protocol::openai::ChatMessage;
use serde::{Deserialize, Serialize};

use super::dataset::{Conversation, DatasetKind, Role, Turn};
use crate::endpoint::{Api, HistoryMode, RequestContext, TargetClient, TurnMode, TurnSender};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Chat,
    Inject,
    Context,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Chat => "chat",
            Protocol::Inject => "inject",
            Protocol::Context => "context",
        }
    }
}

/// What ingesting one conversation did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ingestion {
    /// Dataset turns delivered to the agent.
    pub turns: usize,
    /// Requests sent.
    pub requests: usize,
    /// LongMemEval assistant turns `chat` could not deliver (a session's last turn).
    pub undelivered_assistant_turns: usize,
    pub seconds: f64,
    /// The agent's replies to `chat` turns, in order (recorded, not scored): (turn id, reply).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replies: Vec<(String, String)>,
    /// Requests that failed (the reset before the ingestion included), each with what it was
    /// and its failure class and message; the run goes on, and the questions are asked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// A name OpenAI's `name` field accepts: `[A-Za-z0-9_-]`, at most 64 characters.
fn message_name(speaker: &str) -> String {
    speaker
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

fn user_message(turn: &Turn) -> ChatMessage {
    ChatMessage {
        name: Some(message_name(&turn.speaker)),
        ..ChatMessage::user(turn.line())
    }
}

/// The turn as an assistant message (LongMemEval's assistant side).
fn assistant_message(turn: &Turn) -> ChatMessage {
    ChatMessage::assistant(turn.text.clone())
}

/// Ingests `conversation` into `session` by `protocol` (nothing for `context`).
pub async fn ingest(
    client: &TargetClient,
    protocol: Protocol,
    api: Api,
    session: &str,
    conversation: &Conversation,
    request_no: &mut u64,
) -> Ingestion {
    let started = Instant::now();
    let mut out = Ingestion::default();
    for s in &conversation.sessions {
        let ctx = |n: &mut u64| {
            *n += 1;
            RequestContext {
                session_id: session.to_owned(),
                mock_time: Some(s.date),
                request_no: *n,
            }
        };
        match protocol {
            Protocol::Context => {}
            Protocol::Chat => {
                let mut pending: Vec<&Turn> = Vec::new();
                for turn in &s.turns {
                    if turn.role == Role::Assistant {
                        pending.push(turn);
                        continue;
                    }
                    let mut messages: Vec<ChatMessage> =
                        pending.iter().map(|t| assistant_message(t)).collect();
                    messages.push(user_message(turn));
                    let ids: Vec<&str> = pending
                        .iter()
                        .chain(std::iter::once(&turn))
                        .map(|t| t.id.as_str())
                        .collect();
                    let delivered = ids.len();
                    pending.clear();
                    let headers = [(TURN_ID, ids.join(","))];
                    out.requests += 1;
                    // The messages of this request are all it carries (`full`): earlier turns
                    // reached the agent with earlier requests.
                    let mut sender = TurnSender::new(TurnMode {
                        api,
                        history: HistoryMode::Full,
                    });
                    match sender
                        .send_with_headers(client, &ctx(request_no), &messages, &headers)
                        .await
                    {
                        Ok(reply) => {
                            out.turns += delivered;
                            out.replies.push((turn.id.clone(), reply.text));
                        }
                        Err(e) => out.errors.push(format!("turn {}: {e}", turn.id)),
                    }
                }
                out.undelivered_assistant_turns += pending.len();
            }
            Protocol::Inject => {
                if s.turns.is_empty() {
                    continue;
                }
                let request = InjectRequest {
                    facts: s
                        .turns
                        .iter()
                        .map(|t| InjectFact {
                            text: t.line(),
                            key: None,
                            observed_at: Some(s.date),
                            importance: None,
                            ..InjectFact::default()
                        })
                        .collect(),
                };
                let ids: Vec<&str> = s.turns.iter().map(|t| t.id.as_str()).collect();
                let headers = [(TURN_ID, ids.join(","))];
                out.requests += 1;
                match client
                    .inject_with_headers(&ctx(request_no), &request, &headers)
                    .await
                {
                    Ok(_) => out.turns += s.turns.len(),
                    Err(e) => out.errors.push(format!("session {}: {e}", s.id)),
                }
            }
        }
    }
    out.seconds = started.elapsed().as_secs_f64();
    out
}

/// The history as `context` mode puts it in the prompt: the most recent sessions (and, in the
/// oldest one kept, its most recent turns) that fit in `budget` cl100k tokens, oldest first, as
/// LoCoMo's baselines truncated it. Returns the text and whether anything was cut.
pub fn context_history(
    kind: DatasetKind,
    conversation: &Conversation,
    budget: usize,
) -> (String, bool) {
    let bpe = tiktoken_rs::cl100k_base_singleton();
    let count = |text: &str| bpe.encode_with_special_tokens(text).len();
    let mut kept: Vec<String> = Vec::new();
    let mut used = 0usize;
    let mut cut = false;
    'sessions: for s in conversation.sessions.iter().rev() {
        let header = match kind {
            DatasetKind::Locomo => format!("DATE: {}\nCONVERSATION:\n", s.date_text),
            DatasetKind::Longmemeval => format!("Session date: {}\n", s.date_text),
        };
        let mut lines: Vec<String> = Vec::new();
        used += count(&header);
        for turn in s.turns.iter().rev() {
            let line = match kind {
                DatasetKind::Locomo => {
                    let mut line = format!("{} said, \"{}\"\n", turn.speaker, turn.text);
                    if let Some(caption) = &turn.caption {
                        line.push_str(&format!("[shares {caption}]\n"));
                    }
                    line
                }
                DatasetKind::Longmemeval => format!("{}: {}\n", turn.speaker, turn.text),
            };
            let tokens = count(&line);
            if used + tokens > budget {
                cut = true;
                if !lines.is_empty() {
                    lines.reverse();
                    kept.push(format!("{header}{}", lines.concat()));
                }
                break 'sessions;
            }
            used += tokens;
            lines.push(line);
        }
        lines.reverse();
        kept.push(format!("{header}{}", lines.concat()));
    }
    kept.reverse();
    (kept.join("\n\n"), cut)
}

/// The whole `context`-mode prompt for `question` (already carrying its per-category words).
pub fn context_prompt(
    kind: DatasetKind,
    conversation: &Conversation,
    question: &str,
    category: &str,
    budget: usize,
) -> (String, bool) {
    let (history, cut) = context_history(kind, conversation, budget);
    let prompt = match kind {
        DatasetKind::Locomo => {
            let speakers = conversation.speakers.join(" and ");
            let ask = if category == "5" {
                "Based on the above context, answer the following question."
            } else {
                "Based on the above context, write an answer in the form of a short phrase for the following question. Answer with exact words from the context whenever possible."
            };
            format!(
                "Below is a conversation between two people: {speakers}. The conversation takes place over multiple days and the date of each conversation is written at the beginning of the conversation.\n\n{history}\n\n{ask}\n\nQuestion: {question} Short answer:"
            )
        }
        DatasetKind::Longmemeval => format!(
            "I will give you several history chats between you and a user. Please answer the question based on the relevant chat history.\n\nHistory Chats:\n\n{history}\n\nQuestion: {question}\nAnswer:"
        ),
    };
    (prompt, cut)
}

#[cfg(test)]
mod tests {
    use super::super::dataset::fixtures::fixture;
    use super::super::dataset::load;
    use super::*;

    #[test]
    fn names_fit_openai_rules() {
        assert_eq!(message_name("Ana María"), "Ana_Mar_a");
        assert_eq!(message_name("Jolene"), "Jolene");
    }

    #[test]
    fn context_keeps_the_most_recent_turns_within_budget() {
        let data = load(DatasetKind::Locomo, &fixture("locomo_small.json")).unwrap();
        let c = &data.conversations[0];
        let (whole, cut) = context_history(DatasetKind::Locomo, c, 10_000);
        assert!(!cut);
        assert!(whole.starts_with("DATE: 1:56 pm on 8 May, 2023\nCONVERSATION:\nAna said"));
        assert!(whole.contains("[shares a photo of a red kayak]"));
        let (short, cut) = context_history(DatasetKind::Locomo, c, 45);
        assert!(cut);
        assert!(short.contains("Lisbon"), "the last turn is kept: {short}");
        assert!(
            !short.contains("sunrise"),
            "the oldest turns are cut: {short}"
        );
        let (prompt, _) = context_prompt(DatasetKind::Locomo, c, "Where?", "4", 10_000);
        assert!(prompt.starts_with("Below is a conversation between two people: Ana and Ben."));
        assert!(prompt.ends_with("Question: Where? Short answer:"));
    }
}
