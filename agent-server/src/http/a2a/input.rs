//! What an A2A message says, in the terms of a turn: the new user text, and the client's context
//! beside it (standing instructions, the earlier conversation), read from its parts.
//!
//! - A text part is the user's words, unless its metadata `agentwall/part` says the client put
//!   something else in it ([`part_kind`], docs/contracts/a2a.md): `instructions` become a system
//!   message, as Chat Completions sends them; `history` (the earlier conversation rendered as
//!   text) is read back into the messages it renders. Both are the client's context: used, not
//!   stored, as a chat request's earlier messages are.
//! - The user's text parts, in order, joined by newlines, are the new user turn.
//! - Only text is read (`text/plain`, the card's input mode): a file part (`raw`, `url`) or a
//!   data part is refused (ContentTypeNotSupported, -32005), as is a text part that says it is
//!   of another media type; the card declares no extension that would carry data.
//!
//! Nothing here touches memory: a message refused here stores nothing.

use protocol::a2a::{MEDIA_TYPE_TEXT, Message, Part, Role, SendMessageConfiguration, part_kind};
use protocol::openai::ChatMessage;

use crate::error::A2aError;

/// The first line of a `history` part, as the judge renders it.
const HISTORY_HEADER: &str = "Earlier in this conversation:";

/// A message read as a turn.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Said {
    /// The client's context, oldest first: instructions (as system messages), then the earlier
    /// conversation.
    pub(super) context: Vec<ChatMessage>,
    /// The new user turn.
    pub(super) text: String,
}

/// Reads `message` (the params' `message`) as a turn, or says which field is wrong.
pub(super) fn read_message(message: &Message) -> Result<Said, A2aError> {
    if message.message_id.trim().is_empty() {
        return Err(A2aError::invalid_params(
            "message.messageId is missing; every message needs a unique id (a UUID)",
            Some("message.messageId"),
        ));
    }
    if message.role != Role::User {
        return Err(A2aError::invalid_params(
            format!(
                "message.role is {:?}; a client sends messages of role ROLE_USER",
                message.role.as_str()
            ),
            Some("message.role"),
        ));
    }
    if message.parts.is_empty() {
        return Err(A2aError::invalid_params(
            "message.parts is empty; send at least one text part",
            Some("message.parts"),
        ));
    }
    let mut instructions = Vec::new();
    let mut history = Vec::new();
    let mut words = Vec::new();
    for (i, part) in message.parts.iter().enumerate() {
        let field = format!("message.parts[{i}]");
        let text = text_of(part, &field)?;
        match kind(part) {
            Some(part_kind::INSTRUCTIONS) => instructions.push(text),
            Some(part_kind::HISTORY) => history.extend(read_history(text)),
            _ => words.push(text),
        }
    }
    let text = words.join("\n").trim().to_owned();
    if text.is_empty() {
        return Err(A2aError::invalid_params(
            "the message has no text of the user's (its text parts are empty, or all are \
             instructions or history); the user's words are the new turn",
            Some("message.parts"),
        ));
    }
    let mut context: Vec<ChatMessage> = instructions
        .into_iter()
        .filter(|i| !i.trim().is_empty())
        .map(ChatMessage::system)
        .collect();
    context.extend(history);
    Ok(Said { context, text })
}

/// The text of a part, when it is a text part this agent reads.
fn text_of<'p>(part: &'p Part, field: &str) -> Result<&'p str, A2aError> {
    if part.contents() != 1 {
        return Err(A2aError::invalid_params(
            format!(
                "{field} sets {} of text, raw, url and data; a part sets exactly one",
                part.contents()
            ),
            Some(field),
        ));
    }
    let media = part.media_type.as_deref().unwrap_or_default();
    let refused = |what: &str| A2aError::ContentTypeNotSupported {
        message: format!(
            "{field} is {what}; this agent reads {MEDIA_TYPE_TEXT} only (its card's \
             defaultInputModes)"
        ),
        field: Some(field.to_owned()),
    };
    if part.raw.is_some() || part.url.is_some() {
        return Err(refused(&format!(
            "a file part{}",
            if media.is_empty() {
                String::new()
            } else {
                format!(" of media type {media}")
            }
        )));
    }
    if part.data.is_some() {
        return Err(refused(&format!(
            "a data part ({})",
            if media.is_empty() {
                "application/json"
            } else {
                media
            }
        )));
    }
    let essence = media.split(';').next().unwrap_or_default().trim();
    if !(essence.is_empty() || essence.to_ascii_lowercase().starts_with("text/")) {
        return Err(refused(&format!("a text part of media type {media}")));
    }
    Ok(part.text.as_deref().unwrap_or_default())
}

/// The part's `agentwall/part` metadata, if it has one.
fn kind(part: &Part) -> Option<&str> {
    part.metadata.as_ref()?.get(part_kind::KEY)?.as_str()
}

/// The messages a `history` part renders (docs/contracts/a2a.md): after the header line, a line
/// `User: ...`, `Agent: ...` or `System: ...` begins a message of that speaker; the agent's tool
/// calls (`Agent called ...`) and their results (`Tool result [...]: ...`) are kept as lines of
/// the agent's message; any other line continues the message before it. A part that does not
/// begin with the header is one system message: context the client gave in its own words.
fn read_history(text: &str) -> Vec<ChatMessage> {
    let Some(body) = text.strip_prefix(HISTORY_HEADER) else {
        return (!text.trim().is_empty())
            .then(|| ChatMessage::system(text))
            .into_iter()
            .collect();
    };
    let mut messages: Vec<(Speaker, String)> = Vec::new();
    for line in body.split('\n').skip(1) {
        let (speaker, text) = if let Some(rest) = line.strip_prefix("User: ") {
            (Some(Speaker::User), rest)
        } else if let Some(rest) = line.strip_prefix("Agent: ") {
            (Some(Speaker::Agent), rest)
        } else if let Some(rest) = line.strip_prefix("System: ") {
            (Some(Speaker::System), rest)
        } else if line.starts_with("Agent called ") || line.starts_with("Tool result [") {
            (Some(Speaker::Agent), line)
        } else {
            (None, line)
        };
        match (speaker, messages.last_mut()) {
            // An agent's tool calls and results join its message.
            (Some(Speaker::Agent), Some((Speaker::Agent, last)))
                if !line.starts_with("Agent: ") =>
            {
                last.push('\n');
                last.push_str(text);
            }
            (Some(speaker), _) => messages.push((speaker, text.to_owned())),
            (None, Some((_, last))) => {
                last.push('\n');
                last.push_str(text);
            }
            (None, None) => messages.push((Speaker::System, text.to_owned())),
        }
    }
    messages
        .into_iter()
        .map(|(speaker, text)| match speaker {
            Speaker::User => ChatMessage::user(text),
            Speaker::Agent => ChatMessage::assistant(text),
            Speaker::System => ChatMessage::system(text),
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Speaker {
    User,
    Agent,
    System,
}

/// Refuses a request whose `acceptedOutputModes` take no text: every answer is `text/plain`.
pub(super) fn check_output_modes(
    configuration: Option<&SendMessageConfiguration>,
) -> Result<(), A2aError> {
    let modes = configuration.map_or(&[][..], |c| c.accepted_output_modes.as_slice());
    let takes_text = |mode: &String| {
        let essence = mode.split(';').next().unwrap_or_default().trim();
        ["text/plain", "text/*", "*/*"]
            .iter()
            .any(|m| essence.eq_ignore_ascii_case(m))
    };
    if modes.is_empty() || modes.iter().any(takes_text) {
        return Ok(());
    }
    Err(A2aError::ContentTypeNotSupported {
        message: format!(
            "configuration.acceptedOutputModes is {modes:?}; this agent answers in \
             {MEDIA_TYPE_TEXT} only (its card's defaultOutputModes)"
        ),
        field: Some("configuration.acceptedOutputModes".to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use protocol::a2a::ErrorCode;
    use protocol::openai::Role as ChatRole;
    use serde_json::json;

    use super::*;

    fn message(parts: Vec<Part>) -> Message {
        Message::new(Role::User, "m-1", parts)
    }

    fn code(e: &A2aError) -> i64 {
        e.rpc_error().code
    }

    fn roles_and_texts(messages: &[ChatMessage]) -> Vec<(ChatRole, String)> {
        messages
            .iter()
            .map(|m| (m.role, m.text_content().unwrap_or_default()))
            .collect()
    }

    #[test]
    fn the_users_text_parts_are_the_turn_and_marked_parts_its_context() {
        let said = read_message(&message(vec![
            Part::text("You operate apps.").with_metadata(part_kind::KEY, "instructions"),
            Part::text(
                "Earlier in this conversation:\nUser: My kayak is green.\nAgent: Noted.\n\
                 It is a nice colour.\nAgent called f({}) [call c1]\nUser: And my canoe?",
            )
            .with_metadata(part_kind::KEY, "history"),
            Part::text("What colour "),
            Part::text(" is my kayak?"),
        ]))
        .unwrap();
        assert_eq!(said.text, "What colour \n is my kayak?");
        assert_eq!(
            roles_and_texts(&said.context),
            [
                (ChatRole::System, "You operate apps.".to_owned()),
                (ChatRole::User, "My kayak is green.".to_owned()),
                (
                    ChatRole::Assistant,
                    "Noted.\nIt is a nice colour.\nAgent called f({}) [call c1]".to_owned()
                ),
                (ChatRole::User, "And my canoe?".to_owned()),
            ]
        );
    }

    #[test]
    fn history_in_other_words_is_one_system_message() {
        let said = read_message(&message(vec![
            Part::text("We talked about boats.").with_metadata(part_kind::KEY, "history"),
            Part::text("Hi"),
        ]))
        .unwrap();
        assert_eq!(
            roles_and_texts(&said.context),
            [(ChatRole::System, "We talked about boats.".to_owned())]
        );
    }

    #[test]
    fn parts_other_than_text_are_refused_by_media_type() {
        let cases = [
            Part::data(json!({"tools": []})),
            Part {
                url: Some("https://x/y.png".into()),
                media_type: Some("image/png".into()),
                ..Part::default()
            },
            Part {
                raw: Some("aGk=".into()),
                ..Part::default()
            },
            Part {
                media_type: Some("image/png".into()),
                ..Part::text("not really")
            },
        ];
        for part in cases {
            let e = read_message(&message(vec![Part::text("hi"), part.clone()])).unwrap_err();
            assert_eq!(
                code(&e),
                ErrorCode::ContentTypeNotSupported.code(),
                "{part:?}"
            );
            assert!(e.to_string().contains("message.parts[1]"), "{e}");
        }
        let markdown = Part {
            media_type: Some("text/markdown; charset=utf-8".into()),
            ..Part::text("**hi**")
        };
        assert_eq!(
            read_message(&message(vec![markdown])).unwrap().text,
            "**hi**"
        );
    }

    #[test]
    fn malformed_messages_are_invalid_params_naming_the_field() {
        let mut no_id = message(vec![Part::text("hi")]);
        no_id.message_id = String::new();
        let mut agent = message(vec![Part::text("hi")]);
        agent.role = Role::Agent;
        let two = Part {
            data: Some(json!(1)),
            ..Part::text("hi")
        };
        for (m, field) in [
            (no_id, "message.messageId"),
            (agent, "message.role"),
            (message(vec![]), "message.parts"),
            (message(vec![Part::default()]), "message.parts[0]"),
            (message(vec![two]), "message.parts[0]"),
            (message(vec![Part::text("  ")]), "message.parts"),
            (
                message(vec![
                    Part::text("rules").with_metadata(part_kind::KEY, "instructions"),
                ]),
                "message.parts",
            ),
        ] {
            let e = read_message(&m).unwrap_err();
            assert_eq!(code(&e), ErrorCode::InvalidParams.code(), "{e}");
            let data = e.rpc_error().data.unwrap();
            assert_eq!(data[0]["fieldViolations"][0]["field"], field, "{e}");
        }
    }

    #[test]
    fn output_modes_must_take_text() {
        let config = |modes: &[&str]| SendMessageConfiguration {
            accepted_output_modes: modes.iter().map(|m| (*m).to_owned()).collect(),
            ..SendMessageConfiguration::default()
        };
        assert!(check_output_modes(None).is_ok());
        assert!(check_output_modes(Some(&config(&[]))).is_ok());
        assert!(check_output_modes(Some(&config(&["application/json", "text/plain"]))).is_ok());
        assert!(check_output_modes(Some(&config(&["*/*"]))).is_ok());
        let e = check_output_modes(Some(&config(&["image/png"]))).unwrap_err();
        assert_eq!(code(&e), ErrorCode::ContentTypeNotSupported.code());
    }
}
