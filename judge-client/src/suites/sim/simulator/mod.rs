//! User simulators: who speaks for the persona. [`scripted`] is deterministic with simple
//! branching on the agent's reply; [`llm`] asks any OpenAI-compatible model to play the persona.

pub mod llm;
pub mod scripted;

pub use llm::LlmUser;
pub use scripted::ScriptedUser;

use crate::endpoint::TargetError;

use super::persona::Persona;

/// The token a simulated user ends a conversation with (unless configured otherwise).
pub const DEFAULT_STOP_TOKEN: &str = "[END]";

/// One message of the simulated user.
#[derive(Debug, Clone, PartialEq)]
pub struct UserTurn {
    pub text: String,
    /// The message carries the stop token: the conversation ends after it.
    pub stop: bool,
}

impl UserTurn {
    pub fn say(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            stop: false,
        }
    }

    /// A message, ending with the stop token.
    pub fn leave(text: &str, stop_token: &str) -> Self {
        Self {
            text: format!("{text} {stop_token}"),
            stop: true,
        }
    }
}

/// A conversation so far, from the runner's point of view: each round's user text and agent reply.
#[derive(Debug, Clone, Copy)]
pub struct Exchange<'a> {
    pub user: &'a str,
    pub agent: Option<&'a str>,
}

/// A user simulator playing one persona in one conversation.
pub enum UserSimulator {
    Scripted(Box<ScriptedUser>),
    Llm(Box<LlmUser>),
}

impl UserSimulator {
    pub fn persona(&self) -> &Persona {
        match self {
            UserSimulator::Scripted(s) => s.persona(),
            UserSimulator::Llm(l) => l.persona(),
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            UserSimulator::Scripted(_) => "scripted",
            UserSimulator::Llm(_) => "llm",
        }
    }

    /// The next user message, given the conversation so far (the last exchange holds the reply
    /// the persona reacts to).
    pub async fn next(&mut self, history: &[Exchange<'_>]) -> Result<UserTurn, TargetError> {
        match self {
            UserSimulator::Scripted(s) => Ok(s.next(history.last().and_then(|e| e.agent))),
            UserSimulator::Llm(l) => l.next(history).await,
        }
    }
}

/// Whether a reply says the agent lacks something ("I don't know", "you haven't told me").
pub fn admits_not_knowing(reply: &str) -> bool {
    let lower = reply.to_lowercase();
    [
        "don't know",
        "do not know",
        "haven't told",
        "have not told",
        "not sure",
        "no record",
        "don't have that",
        "do not have that",
    ]
    .iter()
    .any(|p| lower.contains(p))
}
