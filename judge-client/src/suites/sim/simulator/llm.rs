//! The LLM user: any OpenAI-compatible model (`--user-endpoint`) plays the persona. The prompt is
//! conditioned on the persona's traits and states the rules: reveal facts gradually and only when
//! asked, invent nothing, end with the stop token. The request carries a seed derived from the run
//! seed and temperature 0, so a deterministic model replays the same conversation.

use std::fmt::Write;

use protocol::openai::{ChatMessage, Role};

use super::super::canonical::derived_uuid;
use super::super::persona::{Persona, Traits};
use super::{Exchange, UserTurn};
use crate::endpoint::{RequestContext, TargetClient, TargetError};

pub struct LlmUser {
    persona: Persona,
    client: std::rc::Rc<TargetClient>,
    stop_token: String,
    session_id: String,
    seed: i64,
    requests: u64,
}

/// Words for a trait value, so the model reads a disposition rather than a number.
fn degree(value: f64) -> &'static str {
    match value {
        v if v < 0.2 => "very low",
        v if v < 0.4 => "low",
        v if v < 0.6 => "moderate",
        v if v < 0.8 => "high",
        _ => "very high",
    }
}

/// The system prompt that makes a model play `persona`.
pub fn persona_prompt(persona: &Persona, stop_token: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "You are {}, talking to an AI assistant. Stay in character as this user; never act as the assistant.",
        persona.name
    );
    let _ = writeln!(out, "Background: {}", persona.background);
    let _ = writeln!(
        out,
        "Personality (Big Five): {}.",
        describe(&persona.traits)
    );
    let _ = writeln!(out, "What you want from the assistant:");
    for goal in &persona.goals {
        let _ = writeln!(out, "- {} (ask: \"{}\")", goal.description, goal.ask);
    }
    let _ = writeln!(
        out,
        "Facts you know. Reveal each one only when the assistant asks for it or shows it does not know it, one at a time:"
    );
    for fact in &persona.facts {
        let _ = writeln!(out, "- {}", fact.text);
    }
    let _ = writeln!(
        out,
        "Rules: write one short message per turn; reveal facts gradually and only when asked; invent nothing beyond your background and these facts; when your goals are met, or after {} unhelpful answers in a row, say goodbye and end the message with {stop_token}.",
        persona.stop.patience
    );
    out
}

fn describe(traits: &Traits) -> String {
    traits
        .named()
        .iter()
        .map(|(name, v)| format!("{name} {} ({v:.2})", degree(*v)))
        .collect::<Vec<_>>()
        .join(", ")
}

impl LlmUser {
    pub fn new(
        persona: Persona,
        client: std::rc::Rc<TargetClient>,
        seed: u64,
        label: &str,
        stop_token: &str,
    ) -> Self {
        Self {
            session_id: derived_uuid(seed, &format!("user-llm/{label}")),
            // The low 53 bits: a seed every OpenAI-compatible server accepts as a JSON number.
            seed: (seed & ((1 << 53) - 1)) as i64,
            persona,
            client,
            stop_token: stop_token.to_owned(),
            requests: 0,
        }
    }

    pub fn persona(&self) -> &Persona {
        &self.persona
    }

    /// The model's next message as the persona. The model sees the conversation with roles
    /// swapped: the assistant's replies are its `user` messages.
    pub async fn next(&mut self, history: &[Exchange<'_>]) -> Result<UserTurn, TargetError> {
        let mut messages = vec![ChatMessage::system(persona_prompt(
            &self.persona,
            &self.stop_token,
        ))];
        if history.is_empty() {
            messages.push(ChatMessage::text(
                Role::User,
                "(The conversation starts. Write your first message to the assistant.)",
            ));
        }
        for exchange in history {
            messages.push(ChatMessage::assistant(exchange.user));
            if let Some(reply) = exchange.agent {
                messages.push(ChatMessage::user(reply));
            }
        }
        let mut request = self.client.chat_request_for(messages);
        request.seed = Some(self.seed);
        request.temperature = Some(0.0);
        self.requests += 1;
        let ctx = RequestContext {
            session_id: self.session_id.clone(),
            mock_time: None,
            request_no: self.requests,
        };
        let reply = self.client.chat_request(&ctx, &request).await?;
        let stop = reply.text.contains(&self.stop_token);
        Ok(UserTurn {
            text: reply.text.trim().to_owned(),
            stop,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::persona::shipped;
    use super::*;

    #[test]
    fn the_prompt_carries_traits_goals_facts_and_rules() {
        let persona = shipped().unwrap().remove(1);
        let prompt = persona_prompt(&persona, "[END]");
        assert!(prompt.contains("Gus Halvorsen"));
        assert!(prompt.contains("openness low (0.20)"), "{prompt}");
        assert!(prompt.contains("My boat name is Saltwind."));
        assert!(prompt.contains("only when asked"));
        assert!(prompt.contains("invent nothing"));
        assert!(prompt.contains("[END]"));
        assert!(prompt.contains("after 2 unhelpful answers"));
    }
}
