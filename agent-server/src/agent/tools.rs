//! A turn with remote MCP tools: the servers' tools offered to the model beside the client's own,
//! and the model asked again after each round of calls, until it answers without one.
//!
//! 1. After recall, every server is connected and listed at once ([`Toolbox::open`]); a server
//!    that fails is a listing with its error, and the turn goes on without its tools.
//! 2. Each round the model answers the prompt with the rounds so far appended: its message with
//!    the tool calls, then one `tool` message per call (the result, or the error). Its MCP calls
//!    run one at a time, in order, each against the server that offered the name.
//! 3. The loop ends when the model answers without an MCP call; or when it also calls a function
//!    tool of the client's (the answer goes back to the client as any other, and the MCP calls
//!    beside it are not run); or after the round that reached `--mcp-max-calls`. Calls beyond the
//!    cap are not run (their records say so, and the model is told), and the model is asked once
//!    more with `tool_choice: "none"`; MCP calls it makes even then are not run either, and its
//!    answer is what it said (or, if it said nothing, that the limit stopped it).
//! 4. The turn is committed once, with the user's text and the last answer's text, as any turn.
//!
//! The last answer carries no MCP call (the client could not run it), and its usage adds up the
//! token counts of every round. Text the model wrote beside its MCP calls is context for the next
//! round, not output. A streamed request gets the whole answer, encoded as events by the API.
//!
//! The rounds reach the builtin model and a Chat Completions upstream as messages (the prompt's
//! history and the request's messages), and an upstream serving the Responses API as
//! `function_call` and `function_call_output` items; the `mcp` tools themselves never go
//! upstream, only the functions they offer.

use std::collections::HashSet;
use std::sync::Arc;

use protocol::openai::responses::{ResponseTool, tool_type};
use protocol::openai::{
    ChatCompletionRequest, ChatMessage, FinishReason, Role, ToolCall, ToolChoice, Usage,
};
use serde_json::{Value, json};

use super::{Agent, AgentError, PreparedTurn, TurnInput, TurnOutput, Turned};
use crate::llm::prompt::reply_text;
use crate::llm::{Prompt, ResponsesTurn};
use crate::mcp::{McpFailure, McpServer, ToolEvent, Toolbox};

impl Agent {
    /// The whole turn of `input`, whose model may use the tools of `servers`.
    pub(super) async fn turn_with_tools(
        self: &Arc<Self>,
        input: TurnInput,
        servers: &[McpServer],
    ) -> Result<Turned, AgentError> {
        let turn = self.prepare(input).await?;
        let taken: HashSet<&str> = turn
            .input
            .request
            .tools
            .iter()
            .flatten()
            .map(|tool| tool.function.name.as_str())
            .collect();
        let toolbox = Toolbox::open(servers, self.mcp.call_timeout, &taken).await;
        let mut events: Vec<ToolEvent> =
            toolbox.listings().cloned().map(ToolEvent::Listed).collect();
        let mut rounds = Rounds::new(&turn.input, &toolbox);
        let limit = self.mcp.max_calls.max(1);
        let mut made = 0;
        let mut last = false;
        let mut usage = Usage::default();
        let output = loop {
            let output = self.ask(rounds.prompt(&turn)).await?;
            add_usage(&mut usage, &output);
            let wanted = tool_calls(&output);
            let calls: Vec<ToolCall> = wanted
                .iter()
                .filter(|call| toolbox.offers(&call.function.name))
                .cloned()
                .collect();
            if calls.is_empty() {
                break output;
            }
            if calls.len() < wanted.len() {
                // A function tool of the client's: the answer goes back to it.
                break without_mcp_calls(output, &toolbox, None);
            }
            if last {
                for call in &calls {
                    let failure = McpFailure::Limit { limit };
                    let record =
                        toolbox.failed(&call.function.name, &call.function.arguments, &failure);
                    events.push(ToolEvent::Called(record));
                }
                break without_mcp_calls(output, &toolbox, Some(limit));
            }
            let mut told = Vec::with_capacity(calls.len());
            let calls: Vec<ToolCall> = calls.into_iter().map(with_id).collect();
            for call in &calls {
                let (name, arguments) = (&call.function.name, &call.function.arguments);
                let record = if made < limit {
                    made += 1;
                    toolbox.call(name, arguments).await
                } else {
                    toolbox.failed(name, arguments, &McpFailure::Limit { limit })
                };
                told.push(record.told());
                events.push(ToolEvent::Called(record));
            }
            rounds.add(&said(&output), &calls, &told);
            if made >= limit {
                last = true;
                rounds.last_round();
            }
        };
        let output = with_usage(output, usage);
        let text = match &output {
            TurnOutput::Reply(reply) => reply.text.clone(),
            TurnOutput::Completion(completion) => completion
                .choices
                .first()
                .map(|c| reply_text(&c.message))
                .unwrap_or_default(),
            TurnOutput::Stream(_) => String::new(),
        };
        self.commit(turn, &text).await?;
        Ok(Turned {
            output,
            tools: events,
        })
    }

    /// One round: the model's whole answer (an upstream's own completion, unstreamed).
    async fn ask(&self, prompt: Prompt<'_>) -> Result<TurnOutput, AgentError> {
        Ok(match self.model.pass_through() {
            None => TurnOutput::Reply(self.respond(prompt).await?),
            Some(upstream) => TurnOutput::Completion(upstream.completion(prompt).await?),
        })
    }
}

/// The turn as the rounds so far leave it: the client's request, history and Responses turn,
/// with the servers' tools offered and every round's calls and results appended.
struct Rounds {
    request: ChatCompletionRequest,
    history: Vec<protocol::openai::ChatMessage>,
    responses: Option<ResponsesTurn>,
}

impl Rounds {
    fn new(input: &TurnInput, toolbox: &Toolbox) -> Self {
        let mut request = input.request.clone();
        let functions = toolbox.functions();
        if !functions.is_empty() {
            request.tools.get_or_insert_with(Vec::new).extend(functions);
        }
        let responses = input.responses.clone().map(|mut turn| {
            let mut tools: Vec<ResponseTool> = turn
                .request
                .tools
                .take()
                .unwrap_or_default()
                .into_iter()
                .filter(|tool| !tool.is(tool_type::MCP))
                .collect();
            tools.extend(toolbox.response_functions());
            turn.request.tools = (!tools.is_empty()).then_some(tools);
            turn
        });
        Self {
            request,
            history: input.history.clone(),
            responses,
        }
    }

    fn prompt<'a>(&'a self, turn: &'a PreparedTurn) -> Prompt<'a> {
        Prompt {
            history: &self.history,
            request: &self.request,
            responses: self.responses.as_ref(),
            ..turn.prompt()
        }
    }

    /// A round: the model's message (`text` beside its `calls`) and what each call `told` it.
    fn add(&mut self, text: &str, calls: &[ToolCall], told: &[String]) {
        let mut messages = Vec::with_capacity(calls.len() + 1);
        let mut asked = ChatMessage::assistant(text);
        if text.is_empty() {
            asked.content = None;
        }
        asked.tool_calls = Some(calls.to_vec());
        messages.push(asked);
        for (call, told) in calls.iter().zip(told) {
            let mut result = ChatMessage::text(Role::Tool, told.clone());
            result.tool_call_id = Some(call.id.clone());
            messages.push(result);
        }
        self.history.extend(messages.iter().cloned());
        self.request.messages.extend(messages);
        if let Some(turn) = &mut self.responses {
            if !text.is_empty() {
                turn.items
                    .push(json!({"type": "message", "role": "assistant", "content": text}));
            }
            for call in calls {
                turn.items.push(json!({
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.function.name,
                    "arguments": call.function.arguments,
                }));
            }
            for (call, told) in calls.iter().zip(told) {
                turn.items.push(json!({
                    "type": "function_call_output",
                    "call_id": call.id,
                    "output": told,
                }));
            }
        }
    }

    /// The next round is the last: the model is asked to answer without tools.
    fn last_round(&mut self) {
        self.request.tool_choice = Some(ToolChoice::Mode("none".to_owned()));
        if let Some(turn) = &mut self.responses {
            turn.request.tool_choice = Some(Value::String("none".to_owned()));
        }
    }
}

/// The tool calls of an answer.
fn tool_calls(output: &TurnOutput) -> &[ToolCall] {
    match output {
        TurnOutput::Reply(reply) => &reply.tool_calls,
        TurnOutput::Completion(completion) => completion
            .choices
            .first()
            .and_then(|c| c.message.tool_calls.as_deref())
            .unwrap_or_default(),
        TurnOutput::Stream(_) => &[],
    }
}

/// The text an answer says beside its tool calls.
fn said(output: &TurnOutput) -> String {
    match output {
        TurnOutput::Reply(reply) => reply.text.clone(),
        TurnOutput::Completion(completion) => completion
            .choices
            .first()
            .and_then(|c| c.message.text_content())
            .unwrap_or_default(),
        TurnOutput::Stream(_) => String::new(),
    }
}

/// A call with an id to pair its result with (some models send none).
fn with_id(mut call: ToolCall) -> ToolCall {
    if call.id.is_empty() {
        call.id = format!("call_{}", uuid::Uuid::new_v4().simple());
    }
    call
}

/// The answer without its MCP calls; when `stopped` by the limit, an answer that says nothing
/// says so.
fn without_mcp_calls(
    mut output: TurnOutput,
    toolbox: &Toolbox,
    stopped: Option<usize>,
) -> TurnOutput {
    let stop_note =
        |limit: usize| format!("I stopped: this turn reached its limit of {limit} tool calls.");
    match &mut output {
        TurnOutput::Reply(reply) => {
            reply
                .tool_calls
                .retain(|call| !toolbox.offers(&call.function.name));
            if reply.tool_calls.is_empty() && reply.finish_reason == FinishReason::ToolCalls {
                reply.finish_reason = FinishReason::Stop;
            }
            if let Some(limit) = stopped
                && reply.text.trim().is_empty()
            {
                reply.text = stop_note(limit);
            }
        }
        TurnOutput::Completion(completion) => {
            if let Some(choice) = completion.choices.first_mut() {
                let message = &mut choice.message;
                if let Some(calls) = &mut message.tool_calls {
                    calls.retain(|call| !toolbox.offers(&call.function.name));
                    if calls.is_empty() {
                        message.tool_calls = None;
                        if choice.finish_reason == Some(FinishReason::ToolCalls) {
                            choice.finish_reason = Some(FinishReason::Stop);
                        }
                    }
                }
                if let Some(limit) = stopped
                    && message.text_content().is_none_or(|t| t.trim().is_empty())
                {
                    message.content = ChatMessage::assistant(stop_note(limit)).content;
                }
            }
        }
        TurnOutput::Stream(_) => {}
    }
    output
}

fn add_usage(total: &mut Usage, output: &TurnOutput) {
    let usage = match output {
        TurnOutput::Reply(reply) => Some(&reply.usage),
        TurnOutput::Completion(completion) => completion.usage.as_ref(),
        TurnOutput::Stream(_) => None,
    };
    if let Some(usage) = usage {
        total.prompt_tokens = total.prompt_tokens.saturating_add(usage.prompt_tokens);
        total.completion_tokens = total
            .completion_tokens
            .saturating_add(usage.completion_tokens);
        total.total_tokens = total.total_tokens.saturating_add(usage.total_tokens);
    }
}

/// The last answer with the token counts of every round (its own details kept).
fn with_usage(mut output: TurnOutput, total: Usage) -> TurnOutput {
    let usage = match &mut output {
        TurnOutput::Reply(reply) => Some(&mut reply.usage),
        TurnOutput::Completion(completion) => completion.usage.as_mut(),
        TurnOutput::Stream(_) => None,
    };
    if let Some(usage) = usage {
        usage.prompt_tokens = total.prompt_tokens;
        usage.completion_tokens = total.completion_tokens;
        usage.total_tokens = total.total_tokens;
    }
    output
}
