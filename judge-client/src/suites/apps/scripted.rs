//! A scripted agent with no network: it replies to each user turn with the next line of a script,
//! filling `{{key}}` from what it has observed. Used to prove scenarios passable and to test the
//! runner; the CLI can use it as a self-check of the shipped scenarios.

use std::collections::BTreeMap;

use protocol::openai::{ChatMessage, Role};
use serde_json::Value;

use super::directive::parse_message;
use super::runner::{AgentEndpoint, AgentReply, AgentTurn};
use super::scenario::Scenario;
use super::tools::{message_text, tool_call};
use crate::endpoint::TargetError;

pub struct ReferenceAgent {
    replies: Vec<String>,
    next: usize,
    /// Latest value seen for each observation field.
    values: BTreeMap<String, String>,
    /// Turn the script's directives into tool calls instead of text.
    use_tools: bool,
    /// In tool mode, the round after the calls: answer with prose only.
    awaiting_results: bool,
}

impl ReferenceAgent {
    pub fn new(replies: Vec<String>) -> Self {
        Self {
            replies,
            next: 0,
            values: BTreeMap::new(),
            use_tools: false,
            awaiting_results: false,
        }
    }

    /// Replays `scenario`'s reference replies.
    pub fn for_scenario(scenario: &Scenario) -> Self {
        Self::new(scenario.reference.clone())
    }

    /// Acts through tool calls (the endpoint then supports tools).
    pub fn with_tools(mut self) -> Self {
        self.use_tools = true;
        self
    }

    /// `{{key}}` replaced by the latest observed value of `key`; unknown keys stay as written.
    pub fn fill(&self, template: &str) -> String {
        let mut out = template.to_owned();
        for (key, value) in &self.values {
            out = out.replace(&format!("{{{{{key}}}}}"), value);
        }
        out
    }

    fn learn(&mut self, value: &Value) {
        match value {
            Value::Object(map) => {
                for (key, v) in map {
                    match v {
                        Value::String(s) => {
                            self.values.insert(key.clone(), s.clone());
                        }
                        Value::Number(n) => {
                            self.values.insert(key.clone(), n.to_string());
                        }
                        nested => self.learn(nested),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| self.learn(v)),
            _ => {}
        }
    }

    /// Learns from tool answers at the end of the conversation (tool mode).
    fn learn_tool_answers(&mut self, messages: &[ChatMessage]) {
        let answers: Vec<Value> = messages
            .iter()
            .rev()
            .take_while(|m| m.role == Role::Tool)
            .filter_map(|m| serde_json::from_str(&message_text(m)).ok())
            .collect();
        for answer in answers.iter().rev() {
            self.learn(answer);
        }
    }

    fn reply(&mut self) -> AgentReply {
        if self.awaiting_results {
            self.awaiting_results = false;
            return AgentReply {
                text: "Done.".to_owned(),
                tool_calls: Vec::new(),
            };
        }
        let template = self.replies.get(self.next).cloned().unwrap_or_default();
        self.next += 1;
        let text = self.fill(&template);
        if !self.use_tools {
            return AgentReply {
                text,
                tool_calls: Vec::new(),
            };
        }
        let parsed = parse_message(&text);
        let tool_calls: Vec<_> = parsed
            .valid()
            .enumerate()
            .map(|(i, d)| {
                tool_call(
                    &format!("call_{}_{i}", self.next),
                    &d.app,
                    &d.action,
                    &d.params,
                )
            })
            .collect();
        self.awaiting_results = !tool_calls.is_empty();
        AgentReply {
            text: parsed.prose,
            tool_calls,
        }
    }
}

impl AgentEndpoint for ReferenceAgent {
    fn supports_tools(&self) -> bool {
        self.use_tools
    }

    async fn respond(&mut self, turn: AgentTurn<'_>) -> Result<AgentReply, TargetError> {
        for observation in turn.observations {
            self.learn(&observation.data);
        }
        self.learn_tool_answers(turn.messages);
        Ok(self.reply())
    }
}
