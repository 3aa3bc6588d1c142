//! What an upstream model sees for one turn, built from a [`Prompt`], in the same order whichever
//! API carries it:
//!
//! 1. the system text: the system prompt (`--system-prompt-file`), the session clock, recalled
//!    long-term facts and episodes (dated, with who said them), standing rules and reminders, and
//!    what this turn's reply must say;
//! 2. working memory: the session's recent turns, as user and assistant messages;
//! 3. the client's own messages, unchanged and in their order (its system messages, tool calls and
//!    tool results included), ending with the new turn.
//!
//! Working-memory turns the client also sent itself are left out, so nothing appears twice.
//!
//! Chat Completions ([`messages`]) carries all three as messages. The Responses API
//! ([`responses_input`]) carries the system text as `instructions` and the rest as `input` items:
//! the client's own instructions as a system message, then its items as it sent them (function
//! calls and their outputs included), without agent-server's item ids.

use std::collections::HashSet;
use std::fmt::Write as _;

use protocol::openai::responses::Item;
use protocol::openai::{ChatMessage, Role};

use super::{Prompt, ResponsesTurn};
use crate::memory::{EpisodeData, TextHasher, TurnRole};

/// The text stored in working memory for an assistant message: its content, or a note of the
/// tool calls it made.
pub fn reply_text(message: &ChatMessage) -> String {
    let text = message.text_content().unwrap_or_default();
    if !text.is_empty() {
        return text;
    }
    let calls: Vec<String> = message
        .tool_calls
        .iter()
        .flatten()
        .map(|c| format!("{}({})", c.function.name, c.function.arguments))
        .collect();
    if calls.is_empty() {
        text
    } else {
        format!("(called {})", calls.join(", "))
    }
}

/// Used when no `--system-prompt-file` is given.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are a helpful assistant with long-term memory. \
Use what you remember about the user when it is relevant, prefer newer facts over older ones, \
and say so when you do not know something rather than guessing.";

/// Parts 1 and 2, which agent-server adds to what the client sent.
struct Opening<'a> {
    system: String,
    /// Working-memory turns the client did not send itself, oldest first.
    working: Vec<(Role, &'a str)>,
}

fn opening<'a>(system_prompt: &str, prompt: &Prompt<'a>) -> Opening<'a> {
    // As working memory holds them: text, or the note of an assistant message's tool calls. A
    // Responses request's items are here too, translated to messages, with the same texts.
    // Hashed with foldhash: every working item (64 by default) is looked up on every turn, and
    // SipHash over their whole texts was a measurable share of an upstream turn.
    let sent_texts: Vec<String> = prompt.request.messages.iter().map(reply_text).collect();
    let sent: HashSet<&str, TextHasher> = sent_texts.iter().map(|t| t.trim()).collect();
    let working = prompt
        .memory
        .working
        .iter()
        .filter(|item| !sent.contains(item.text.trim()))
        .map(|item| {
            let role = match item.role {
                TurnRole::User => Role::User,
                TurnRole::Assistant => Role::Assistant,
            };
            (role, item.text.as_str())
        })
        .collect();
    Opening {
        system: system_message(system_prompt, prompt),
        working,
    }
}

/// The Chat Completions request's messages for `prompt`.
pub fn messages(system_prompt: &str, prompt: &Prompt<'_>) -> Vec<ChatMessage> {
    let client = &prompt.request.messages;
    let Opening { system, working } = opening(system_prompt, prompt);
    let mut out = Vec::with_capacity(client.len() + working.len() + 1);
    out.push(ChatMessage::system(system));
    out.extend(
        working
            .into_iter()
            .map(|(role, text)| ChatMessage::text(role, text)),
    );
    out.extend(client.iter().cloned());
    out
}

/// The Responses API request's `instructions` and `input` for `prompt`, a turn that came through
/// that API as `turn`.
pub fn responses_input(
    system_prompt: &str,
    prompt: &Prompt<'_>,
    turn: &ResponsesTurn,
) -> (String, Vec<Item>) {
    let Opening { system, working } = opening(system_prompt, prompt);
    let mut input = Vec::with_capacity(turn.items.len() + working.len() + 1);
    input.extend(working.into_iter().map(|(role, text)| {
        let role = if role == Role::Assistant {
            "assistant"
        } else {
            "user"
        };
        Item::message(role, text)
    }));
    if let Some(instructions) = turn
        .request
        .instructions
        .as_deref()
        .filter(|t| !t.is_empty())
    {
        input.push(Item::message("system", instructions));
    }
    input.extend(turn.items.iter().filter_map(|value| {
        // Items were checked on the way in; one that no longer parses is left out, as the chat
        // translation leaves it out.
        let mut item: Item = serde_json::from_value(value.clone()).ok()?;
        // Item ids are agent-server's own (or the client's, given to agent-server): the upstream
        // stores nothing (`store: false`) and would not know them.
        item.id = None;
        Some(item)
    }));
    (system, input)
}

fn system_message(system_prompt: &str, prompt: &Prompt<'_>) -> String {
    // `write!` to a String cannot fail.
    let mut text = system_prompt.trim().to_owned();
    let _ = write!(
        text,
        "\n\nThe current date and time is {}.",
        prompt.now.format("%A %Y-%m-%d %H:%M UTC")
    );
    let memory = prompt.memory;
    if !memory.facts.is_empty() {
        text.push_str("\n\nWhat you remember about the user from earlier conversations (most relevant first):");
        for recalled in &memory.facts {
            let f = &recalled.fact;
            let _ = write!(
                text,
                "\n- {} (noted {})",
                f.text,
                f.observed_at.format("%Y-%m-%d")
            );
        }
    }
    // A turn's recall left out the episodes working memory holds: those are in the messages.
    let episodes = memory.episodes.iter().map(|r| &r.fact);
    if !memory.episodes.is_empty() {
        text.push_str(
            "\n\nWhat was said in earlier conversations that may be relevant (most relevant first):",
        );
        for episode in episodes {
            let who = match EpisodeData::of(episode) {
                Some(EpisodeData {
                    speaker: Some(name),
                    ..
                }) => name,
                Some(EpisodeData { role, .. }) => match role {
                    TurnRole::User => "user".to_owned(),
                    TurnRole::Assistant => "you".to_owned(),
                },
                None => "user".to_owned(),
            };
            let _ = write!(
                text,
                "\n- [{}] {who}: {}",
                episode.observed_at.format("%Y-%m-%d %H:%M"),
                episode.text
            );
        }
    }
    if !memory.standing.is_empty() {
        text.push_str("\n\nStanding instructions and reminders the user gave you:");
        for f in &memory.standing {
            text.push_str("\n- ");
            text.push_str(&f.text);
        }
    }
    if !prompt.must_say.is_empty() {
        text.push_str("\n\nBecause of those instructions your reply must include, in this order:");
        for o in prompt.must_say {
            text.push_str("\n- ");
            text.push_str(o.text());
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use chrono::{TimeZone, Utc};
    use protocol::openai::ChatCompletionRequest;

    use super::*;
    use crate::memory::{MemoryContext, WorkingItem};
    use crate::text::standing::Obligation;

    #[test]
    fn memory_goes_first_then_working_memory_then_the_clients_messages() {
        let now = Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 0).unwrap();
        let memory = MemoryContext {
            working: vec![
                Arc::new(WorkingItem::new(TurnRole::User, "I live in Oslo.", now)),
                Arc::new(WorkingItem::new(TurnRole::Assistant, "Noted.", now)),
                Arc::new(WorkingItem::new(
                    TurnRole::User,
                    "Sent again by the client",
                    now,
                )),
            ]
            .into(),
            ..MemoryContext::default()
        };
        let request = ChatCompletionRequest {
            messages: vec![
                ChatMessage::system("Be brief."),
                ChatMessage::user("Sent again by the client"),
                ChatMessage::user("Where do I live?"),
            ],
            ..Default::default()
        };
        let must_say = [Obligation::Reminder("Call mum.".into())];
        let prompt = Prompt {
            now,
            user_text: "Where do I live?",
            history: &request.messages[..2],
            memory: &memory,
            learned: &[],
            must_say: &must_say,
            request: &request,
            responses: None,
        };
        let out = messages("SYSTEM", &prompt);
        let texts: Vec<String> = out.iter().map(|m| m.text_content().unwrap()).collect();
        assert!(texts[0].starts_with("SYSTEM"), "{}", texts[0]);
        assert!(
            texts[0].contains("2026-03-01") && texts[0].contains("Call mum."),
            "{}",
            texts[0]
        );
        assert_eq!(
            texts[1..],
            [
                "I live in Oslo.",
                "Noted.",
                "Be brief.",
                "Sent again by the client",
                "Where do I live?"
            ]
        );
        assert_eq!(out[2].role, Role::Assistant);
    }

    #[test]
    fn a_responses_turn_keeps_its_items_after_the_same_opening_without_agent_server_ids() {
        let now = Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 0).unwrap();
        let memory = MemoryContext {
            working: vec![
                Arc::new(WorkingItem::new(TurnRole::User, "I live in Oslo.", now)),
                Arc::new(WorkingItem::new(TurnRole::Assistant, "Weather?", now)),
            ]
            .into(),
            ..MemoryContext::default()
        };
        let items = vec![
            serde_json::json!({"type": "message", "id": "msg_1", "role": "user", "status": "completed",
                "content": [{"type": "input_text", "text": "Weather?"}]}),
            serde_json::json!({"type": "function_call", "id": "fc_1", "call_id": "call_1",
                "name": "weather", "arguments": "{}", "status": "completed"}),
            serde_json::json!({"type": "function_call_output", "id": "fco_1", "call_id": "call_1",
                "output": "sunny", "status": "completed"}),
        ];
        let turn = ResponsesTurn {
            request: serde_json::from_value(serde_json::json!({"instructions": "Be brief."}))
                .unwrap(),
            items,
        };
        // The chat translation of the same items, as the HTTP layer makes it.
        let request = ChatCompletionRequest {
            messages: vec![
                ChatMessage::system("Be brief."),
                ChatMessage::user("Weather?"),
            ],
            ..Default::default()
        };
        let prompt = Prompt {
            now,
            user_text: "Weather?",
            history: &request.messages[..1],
            memory: &memory,
            learned: &[],
            must_say: &[],
            request: &request,
            responses: Some(&turn),
        };
        let (instructions, input) = responses_input("SYSTEM", &prompt, &turn);
        assert_eq!(
            instructions,
            messages("SYSTEM", &prompt)[0].text_content().unwrap()
        );
        let input = serde_json::to_value(&input).unwrap();
        assert_eq!(
            input,
            serde_json::json!([
                {"type": "message", "role": "user", "content": "I live in Oslo."},
                {"type": "message", "role": "system", "content": "Be brief."},
                {"type": "message", "role": "user", "status": "completed",
                    "content": [{"type": "input_text", "text": "Weather?"}]},
                {"type": "function_call", "call_id": "call_1", "name": "weather",
                    "arguments": "{}", "status": "completed"},
                {"type": "function_call_output", "call_id": "call_1", "output": "sunny",
                    "status": "completed"},
            ])
        );
    }
}
