//! The optional LLM judge (`--judge-endpoint`, any OpenAI-compatible model): rubric scores per
//! conversation, and pairwise preference between two agents' conversations with position
//! swapping (each pair is judged twice, with the two conversations in both orders; a verdict
//! that flips with the order is a tie). An answer that stays unusable after the retries of
//! [`crate::suites::model_judge`] is a `judge_error`.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::persona::Persona;
use super::ratings::Preference;
use super::runner::Conversation;
use crate::endpoint::{TargetClient, TargetError};
use crate::suites::model_judge::{ModelJudge, json_object};

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
    model: ModelJudge,
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

/// The rubric in a judge's answer: three scores from 1 to 5, mapped to 0–1.
fn parse_rubric(text: &str) -> Result<Rubric, String> {
    let value = json_object(text).ok_or("no JSON object")?;
    let score = |k: &str| {
        value
            .get(k)
            .and_then(serde_json::Value::as_f64)
            .filter(|v| (1.0..=5.0).contains(v))
            .map(|v| (v - 1.0) / 4.0)
            .ok_or_else(|| format!("no score from 1 to 5 for {k}"))
    };
    Ok(Rubric {
        persona_consistency: score("persona_consistency")?,
        coherence: score("coherence")?,
        instruction_following: score("instruction_following")?,
    })
}

impl LlmJudge {
    pub fn new(client: TargetClient, seed: u64) -> Self {
        Self {
            model: ModelJudge::new(
                client,
                seed,
                "You are a strict, fair evaluator of conversations between a user and an AI assistant.",
            ),
        }
    }

    /// Rubric scores of the assistant in `c`; a `judge_error` when the judge fails or its answer
    /// stays unusable (see [`crate::suites::model_judge`]).
    pub async fn rubric(&self, c: &Conversation, persona: &Persona) -> Result<Rubric, TargetError> {
        let prompt = format!(
            "The user is {}.\nConversation:\n{}\nScore the ASSISTANT from 1 to 5 on persona_consistency (it treats the user as who they are and keeps what they said straight), coherence, and instruction_following. Answer only with JSON: {{\"persona_consistency\": n, \"coherence\": n, \"instruction_following\": n}}",
            persona_brief(persona),
            render(c)
        );
        self.model
            .ask(&format!("rubric/{}", c.number), prompt, parse_rubric)
            .await
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
        let a_first = self
            .model
            .ask(&format!("{label}/ab"), prompt(a, b), |t| {
                parse_choice(t, "A", "B")
            })
            .await?;
        let b_first = self
            .model
            .ask(&format!("{label}/ba"), prompt(b, a), |t| {
                parse_choice(t, "B", "A")
            })
            .await?;
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
) -> Result<&'static str, String> {
    let t = text
        .trim()
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_uppercase();
    match t.as_str() {
        "1" => Ok(first),
        "2" => Ok(second),
        "TIE" => Ok("TIE"),
        _ => Err("not one of 1, 2, TIE".to_owned()),
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
    }
}
