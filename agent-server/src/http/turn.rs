//! The first half of every turn, whichever API it came by: the new user turn and the client's
//! context split from the messages, whether the request continues a stored turn, and the model
//! name the answer carries. Both handlers (`chat.rs`, `responses/`) build their [`TurnInput`]
//! here, so the two APIs cannot drift apart on these rules.

use protocol::SessionId;
use protocol::openai::{ChatCompletionRequest, ChatMessage, Role};

use super::AppState;
use crate::agent::{TurnInput, TurnMemory};
use crate::error::ApiError;
use crate::llm::ResponsesTurn;

/// A turn ready for [`crate::agent::Agent::turn`], and the model name its answer carries.
pub(super) struct Turn {
    pub(super) input: TurnInput,
    pub(super) model: String,
}

/// The turn `request` asks for. `session` is `None` when the request belongs to no session: the
/// agent then answers without memory and stores nothing.
pub(super) fn resolve(
    state: &AppState,
    session: Option<SessionId>,
    now: chrono::DateTime<chrono::Utc>,
    request: ChatCompletionRequest,
    responses: Option<ResponsesTurn>,
    memory: TurnMemory,
) -> Result<Turn, ApiError> {
    let (user_text, history) = split_new_turn(&request)?;
    // Messages after the last user message (an assistant tool call and its tool results) continue
    // a turn that is already stored.
    let continuation = request
        .messages
        .last()
        .is_some_and(|m| m.role != Role::User);
    let model = request
        .model
        .clone()
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| state.agent.model_name().to_owned());
    Ok(Turn {
        input: TurnInput {
            session,
            now,
            user_text,
            history,
            request,
            responses,
            continuation,
            memory,
            mcp: Vec::new(),
        },
        model,
    })
}

/// The last user message is the new turn; everything before it is the client's own context.
fn split_new_turn(request: &ChatCompletionRequest) -> Result<(String, Vec<ChatMessage>), ApiError> {
    if request.messages.is_empty() {
        return Err(ApiError::invalid(
            "messages is empty; send at least one message with role \"user\"",
            Some("messages"),
        ));
    }
    let index = request
        .messages
        .iter()
        .rposition(|m| m.role == Role::User)
        .ok_or_else(|| {
            ApiError::invalid(
                "messages has no message with role \"user\"; the last user message is the new turn",
                Some("messages"),
            )
        })?;
    for (i, message) in request.messages.iter().enumerate() {
        if let Some(part) = message
            .content
            .as_ref()
            .and_then(|c| c.first_non_text_part())
        {
            return Err(ApiError::invalid(
                format!(
                    "messages[{i}].content: content part type {:?} is not supported; send text parts only",
                    part.kind
                ),
                Some(&format!("messages[{i}].content")),
            ));
        }
    }
    let text = request.messages[index]
        .text_content()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            ApiError::invalid(
                format!("messages[{index}].content is empty; the new user turn needs text"),
                Some(&format!("messages[{index}].content")),
            )
        })?;
    let mut history = request.messages.clone();
    history.remove(index);
    Ok((text, history))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_turn_is_the_last_user_message() {
        let request = ChatCompletionRequest {
            messages: vec![
                ChatMessage::system("s"),
                ChatMessage::user("first"),
                ChatMessage::assistant("a"),
                ChatMessage::user("  second "),
            ],
            ..Default::default()
        };
        let (text, history) = split_new_turn(&request).unwrap();
        assert_eq!(text, "second");
        assert_eq!(history.len(), 3);
    }
}
