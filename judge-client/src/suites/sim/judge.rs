//! The optional LLM judge (`--judge-endpoint`, any OpenAI-compatible model): rubric scores per
//! conversation, and pairwise preference between two agents' conversations with position
//! swapping (each pair is judged twice, with the two conversations in both orders; a verdict
//! that flips with the order is a tie).

use std::fmt::Write;

use protocol::openai::ChatMessage;
use serde::{Deserialize, Serialize};

use super::canonical::derived_uuid;
use super::persona::Persona;
use super::ratings::Preference;
use super::runner::Conversation;
use crate::target::{FailureKind, RequestContext, TargetClient, TargetError};

/// Rubric scores, each mapped from the judge's 1–5 to 0–1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rubric {
    pub persona_consistency: f64,
    pub coherence: f64,
    pub instruction_following: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairVerdict {
    pub preference: Preference,
    /// Both orders gave the same winner (or both a tie).
    pub position_consistent: bool,
    /// What the judge said with A shown first, and with B shown first (as "A", "B", "TIE").
    pub a_first: String,
    pub b_first: String,
}

pub struct LlmJudge {
    client: TargetClient,
    seed: u64,
}

fn render(c: &Conversation) -> String {
    let mut out = String::new();
    for r in &c.rounds {
        let _ = writeln!(out, "USER: {}", r.user);
        if let Some(a) = &r.agent {
            let _ = writeln!(out, "ASSISTANT: {a}");
        }
    }
    out
}

fn persona_brief(p: &Persona) -> String {
    let goals: Vec<&str> = p.goals.iter().map(|g| g.description.as_str()).collect();
    format!("{} ({}). Goals: {}", p.name, p.background, goals.join("; "))
}

/// The first JSON object in a text (models like to wrap it in prose or fences).
fn json_object(text: &str) -> Option<serde_json::Value> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    serde_json::from_str(text.get(start..=end)?).ok()
}

impl LlmJudge {
    pub fn new(client: TargetClient, seed: u64) -> Self {
        Self { client, seed }
    }

    async fn ask(&self, label: &str, prompt: String) -> Result<String, TargetError> {
        let mut request = self.client.chat_request_for(vec![
            ChatMessage::system("You are a strict, fair evaluator of conversations between a user and an AI assistant."),
            ChatMessage::user(prompt),
        ]);
        request.temperature = Some(0.0);
        request.seed = Some((self.seed & ((1 << 53) - 1)) as i64);
        let ctx = RequestContext {
            session_id: derived_uuid(self.seed, &format!("judge/{label}")),
            mock_time: None,
            request_no: 1,
        };
        self.client
            .chat_request(&ctx, &request)
            .await
            .map(|r| r.text)
            // Whatever went wrong, it went wrong in the judging, not in the agent under test.
            .map_err(|e| TargetError::new(FailureKind::JudgeError, e.to_string()))
    }

    pub async fn rubric(&self, c: &Conversation, persona: &Persona) -> Result<Rubric, TargetError> {
        let prompt = format!(
            "The user is {}.\nConversation:\n{}\nScore the ASSISTANT from 1 to 5 on persona_consistency (it treats the user as who they are and keeps what they said straight), coherence, and instruction_following. Answer only with JSON: {{\"persona_consistency\": n, \"coherence\": n, \"instruction_following\": n}}",
            persona_brief(persona),
            render(c)
        );
        let text = self.ask(&format!("rubric/{}", c.number), prompt).await?;
        let bad = || {
            TargetError::new(
                FailureKind::JudgeError,
                format!("unusable rubric answer: {text:?}"),
            )
        };
        let value = json_object(&text).ok_or_else(bad)?;
        let score = |k: &str| {
            value
                .get(k)
                .and_then(serde_json::Value::as_f64)
                .filter(|v| (1.0..=5.0).contains(v))
                .map(|v| (v - 1.0) / 4.0)
                .ok_or_else(bad)
        };
        Ok(Rubric {
            persona_consistency: score("persona_consistency")?,
            coherence: score("coherence")?,
            instruction_following: score("instruction_following")?,
        })
    }

    /// Which conversation's assistant served the persona better, judged in both orders.
    pub async fn pairwise(
        &self,
        persona: &Persona,
        a: &Conversation,
        b: &Conversation,
    ) -> Result<PairVerdict, TargetError> {
        let prompt = |first: &Conversation, second: &Conversation| {
            format!(
                "The user is {}.\nConversation 1:\n{}\nConversation 2:\n{}\nIn which conversation did the ASSISTANT serve this user better? Answer with exactly one of: 1, 2, TIE.",
                persona_brief(persona),
                render(first),
                render(second)
            )
        };
        let label = format!("pair/{}/{}", a.persona_id, a.trial);
        let a_first = parse_choice(
            &self.ask(&format!("{label}/ab"), prompt(a, b)).await?,
            "A",
            "B",
        )?;
        let b_first = parse_choice(
            &self.ask(&format!("{label}/ba"), prompt(b, a)).await?,
            "B",
            "A",
        )?;
        let preference = if a_first == b_first {
            match a_first {
                "A" => Preference::A,
                "B" => Preference::B,
                _ => Preference::Tie,
            }
        } else {
            Preference::Tie
        };
        Ok(PairVerdict {
            preference,
            position_consistent: a_first == b_first,
            a_first: a_first.to_owned(),
            b_first: b_first.to_owned(),
        })
    }
}

/// Maps the judge's "1"/"2"/"TIE" to the agent shown in that position.
fn parse_choice(
    text: &str,
    first: &'static str,
    second: &'static str,
) -> Result<&'static str, TargetError> {
    let t = text
        .trim()
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_uppercase();
    match t.as_str() {
        "1" => Ok(first),
        "2" => Ok(second),
        "TIE" => Ok("TIE"),
        _ => Err(TargetError::new(
            FailureKind::JudgeError,
            format!("unusable preference answer: {text:?}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_map_back_through_the_swap() {
        assert_eq!(parse_choice(" 1.", "A", "B").unwrap(), "A");
        assert_eq!(parse_choice("2", "B", "A").unwrap(), "A");
        assert_eq!(parse_choice("tie", "B", "A").unwrap(), "TIE");
        assert!(parse_choice("Conversation 1 is better", "A", "B").is_err());
        assert_eq!(
            json_object("Sure! ```{\"a\": 1}```").unwrap()["a"],
            serde_json::json!(1)
        );
    }
}
