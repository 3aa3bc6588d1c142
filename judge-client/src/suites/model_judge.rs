//! Asking a model to judge, and what counts as its failure: the one place where the judge's own
//! model calls (sim's rubric and pairwise judge, LTM's grader, membench's LongMemEval accuracy
//! and LoCoMo "J") are made and their answers read.
//!
//! A model's answer that cannot be read is asked again, with the reason, up to [`PARSE_RETRIES`]
//! times: small models often wrap or drift from the asked format once, then correct it when
//! told. An answer still unusable after that, or a call that failed, is a `judge_error`: the
//! judge's failure, never the agent's, so callers leave it out of the agent's scores and count
//! it apart (ARCHITECTURE.md, invariant 5).

use protocol::openai::ChatMessage;

use crate::canonical::derived_uuid;
use crate::endpoint::{FailureKind, RequestContext, TargetClient, TargetError};

/// How many times an unusable answer is asked again before it is a `judge_error` (so a question
/// gets at most `1 + PARSE_RETRIES` answers).
pub const PARSE_RETRIES: usize = 2;

/// A model used as a judge: deterministic requests (temperature 0, the run's seed), one session
/// per question.
pub struct ModelJudge {
    client: TargetClient,
    seed: u64,
    system: Option<String>,
    max_tokens: Option<u32>,
}

impl ModelJudge {
    /// `system` is the judge's role, sent as the system message of every question.
    pub fn new(client: TargetClient, seed: u64, system: impl Into<String>) -> Self {
        Self {
            client,
            seed,
            system: Some(system.into()),
            max_tokens: None,
        }
    }

    /// A judge asked with the prompt alone, no system message: for benchmarks whose authors
    /// define the judge's prompt and nothing else (membench).
    pub fn prompt_only(client: TargetClient, seed: u64) -> Self {
        Self {
            client,
            seed,
            system: None,
            max_tokens: None,
        }
    }

    /// Caps the tokens of each answer (LongMemEval's authors ask for at most 10).
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// The judge's model, as its requests name it.
    pub fn model(&self) -> &str {
        self.client.model()
    }

    /// Asks `prompt` and reads the answer with `parse` (which says why an answer is unusable).
    /// `label` names the question; its session id derives from it and the seed.
    pub async fn ask<T>(
        &self,
        label: &str,
        prompt: String,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Result<T, TargetError> {
        let mut messages: Vec<ChatMessage> = self
            .system
            .iter()
            .map(|s| ChatMessage::system(s.clone()))
            .collect();
        messages.push(ChatMessage::user(prompt));
        let session_id = derived_uuid(self.seed, &format!("judge/{label}"));
        let mut why = String::new();
        for attempt in 0..=PARSE_RETRIES {
            let mut request = self.client.chat_request_for(messages.clone());
            request.temperature = Some(0.0);
            if self.max_tokens.is_some() {
                request.max_tokens = self.max_tokens;
            }
            request.seed = Some((self.seed & ((1 << 53) - 1)) as i64);
            let ctx = RequestContext {
                session_id: session_id.clone(),
                mock_time: None,
                request_no: attempt as u64 + 1,
            };
            let text = self
                .client
                .chat_request(&ctx, &request)
                .await
                .map(|r| r.text)
                // Whatever went wrong, it went wrong in the judging, not in the agent under test.
                .map_err(|e| TargetError::new(FailureKind::JudgeError, e.to_string()))?;
            match parse(&text) {
                Ok(value) => return Ok(value),
                Err(reason) => {
                    why = format!("{reason}: {text:?}");
                    // The next attempt sees its unusable answer and why, so a model at
                    // temperature 0 is not simply asked to repeat itself.
                    messages.push(ChatMessage::assistant(text));
                    messages.push(ChatMessage::user(format!(
                        "That answer cannot be used ({reason}). Answer again, exactly in the form asked and nothing else."
                    )));
                }
            }
        }
        Err(TargetError::new(
            FailureKind::JudgeError,
            format!(
                "unusable answer after {} attempts; the last: {why}",
                PARSE_RETRIES + 1
            ),
        ))
    }
}

/// The first JSON object in a text (models like to wrap it in prose or fences).
pub fn json_object(text: &str) -> Option<serde_json::Value> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    serde_json::from_str(text.get(start..=end)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_object_is_found_inside_prose_and_fences() {
        assert_eq!(
            json_object("Sure! ```{\"a\": 1}```").unwrap()["a"],
            serde_json::json!(1)
        );
        assert!(json_object("no object here").is_none());
        assert!(json_object("} backwards {").is_none());
    }
}
