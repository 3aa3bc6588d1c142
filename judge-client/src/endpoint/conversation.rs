//! How a turn is sent: one session's conversation turned into requests, through Chat Completions
//! or the Responses API, carrying as much of it as the [`HistoryMode`] says. The one place the
//! suites that converse (ltm, apps, sim) and the probe build their turns.
//!
//! A suite keeps its conversation as chat messages (its transcript: leading system messages, the
//! user's turns, the agent's replies with their tool calls, the tool results) and hands the whole
//! of it to [`TurnSender::send`] each time; the last user message is the new turn. What goes out:
//!
//! - `full`: the whole transcript;
//! - `new`: the system messages and the transcript from the last user message on (in a tool round,
//!   this turn's calls and results with it: results without their question cannot be read);
//! - `chain` (Responses only): the system messages as `instructions` (OpenAI does not carry them
//!   over a chain) and what was added since the last response, with its id as
//!   `previous_response_id`; the first request of a session, or the first after a reset, starts a
//!   new chain as `new` would.
//!
//! Through the Responses API the system messages become `instructions`, the rest input items
//! (tool calls as `function_call` items, tool results as `function_call_output` items with their
//! `call_id`), and tools are sent in its flat shape.
//!
//! Over A2A a request is one user message in the session's context ([`super::a2a::turn_message`]:
//! the instructions, with `full` the earlier conversation, the tools, and what is new to the
//! agent since its last reply); `new` carries no earlier turn, since an A2A agent keeps the
//! conversation by `contextId`.

use protocol::a2a::SendMessageRequest;
use protocol::apps::MCP_SERVER_URL_HEADER;
use protocol::openai::responses::{
    FunctionTool, Item, McpTool, ResponseCreateRequest, ResponseInput,
};
use protocol::openai::{ChatCompletionRequest, ChatMessage, Role, Tool};

use super::client::{ChatReply, RequestContext, TargetClient};
use super::error::TargetError;
use super::turns::{Api, HistoryMode, TurnMode};

/// An MCP server the agent is to use this turn (docs/contracts/apps.md, "MCP mode"): through
/// the Responses API an `mcp` tool in the request, through Chat Completions the
/// `X-MCP-Server-URL` header (its URL is in the system message too).
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteMcp {
    /// The tool's `server_label`.
    pub label: String,
    pub url: String,
}

/// One request of a conversation, as it will be sent.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // one per turn, built and sent at once
pub enum TurnRequest {
    Chat(ChatCompletionRequest),
    Responses(ResponseCreateRequest),
    /// The `SendMessage` params; the `contextId`, `messageId` and `tenant` are set when it is
    /// sent.
    A2a(SendMessageRequest),
}

impl TurnRequest {
    /// The request body as JSON (what `judge sim --record` keeps).
    pub fn to_value(&self) -> serde_json::Value {
        match self {
            TurnRequest::Chat(r) => serde_json::to_value(r),
            TurnRequest::Responses(r) => serde_json::to_value(r),
            TurnRequest::A2a(r) => serde_json::to_value(r),
        }
        .unwrap_or_default()
    }
}

/// The session's last response in a chain, and how many transcript messages it accounts for
/// (those it was sent on top of its predecessors, and its reply, the message after them).
#[derive(Debug, Clone, PartialEq)]
struct ChainHead {
    response_id: String,
    covered: usize,
}

/// One session's requests. Holds only what the server holds for it: the head of a chain.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnSender {
    mode: TurnMode,
    head: Option<ChainHead>,
}

impl TurnSender {
    pub fn new(mode: TurnMode) -> Self {
        Self { mode, head: None }
    }

    pub fn mode(&self) -> TurnMode {
        self.mode
    }

    /// The id the next chained request names as `previous_response_id`, if any.
    pub fn previous_response_id(&self) -> Option<&str> {
        self.head.as_ref().map(|h| h.response_id.as_str())
    }

    /// The session was reset: the server forgot its responses with its memory, so the next
    /// request starts a new chain.
    pub fn restart(&mut self) {
        self.head = None;
    }

    /// The request that [`TurnSender::send`] sends for `transcript`.
    pub fn request(
        &self,
        client: &TargetClient,
        transcript: &[ChatMessage],
        tools: Option<&[Tool]>,
    ) -> TurnRequest {
        let (system, rest) = self.carried(transcript);
        match self.mode.api {
            Api::Chat => {
                let mut request =
                    client.chat_request_for(system.iter().chain(rest).cloned().collect());
                request.tools = tools.filter(|t| !t.is_empty()).map(<[Tool]>::to_vec);
                TurnRequest::Chat(request)
            }
            Api::Responses => {
                let instructions: Vec<String> = system
                    .iter()
                    .filter_map(ChatMessage::text_content)
                    .collect();
                let chain = self.mode.history == HistoryMode::Chain;
                TurnRequest::Responses(ResponseCreateRequest {
                    model: Some(client.model().to_owned()),
                    input: Some(ResponseInput::Items(items(rest))),
                    instructions: (!instructions.is_empty()).then(|| instructions.join("\n\n")),
                    tools: tools
                        .filter(|t| !t.is_empty())
                        .map(|t| t.iter().map(function_tool).collect()),
                    max_output_tokens: client.settings().max_tokens,
                    // Only a chain reads its responses back; the others leave nothing behind.
                    store: Some(chain),
                    previous_response_id: self
                        .previous_response_id()
                        .filter(|_| chain)
                        .map(str::to_owned),
                    stream: Some(false),
                    ..ResponseCreateRequest::default()
                })
            }
            Api::A2a => TurnRequest::A2a(SendMessageRequest {
                message: super::a2a::turn_message(self.mode.history, transcript, tools),
                ..SendMessageRequest::default()
            }),
        }
    }

    /// Sends the next request of a conversation whose transcript so far is `transcript` (its
    /// last user message is the new turn), offering `tools` when given. The caller adds the
    /// reply to the transcript as one assistant message (with its tool calls) before the next
    /// request, and any tool results after it.
    pub async fn send(
        &mut self,
        client: &TargetClient,
        ctx: &RequestContext,
        transcript: &[ChatMessage],
        tools: Option<&[Tool]>,
    ) -> Result<ChatReply, TargetError> {
        self.send_with(client, ctx, transcript, tools, None).await
    }

    /// [`TurnSender::send`], telling the agent of the MCP server `mcp` when given.
    pub async fn send_with(
        &mut self,
        client: &TargetClient,
        ctx: &RequestContext,
        transcript: &[ChatMessage],
        tools: Option<&[Tool]>,
        mcp: Option<&RemoteMcp>,
    ) -> Result<ChatReply, TargetError> {
        let reply = match self.request(client, transcript, tools) {
            TurnRequest::Chat(request) => {
                let headers: Vec<(&'static str, String)> = mcp
                    .map(|m| (MCP_SERVER_URL_HEADER, m.url.clone()))
                    .into_iter()
                    .collect();
                client
                    .chat_request_with_headers(ctx, &request, &headers)
                    .await?
            }
            TurnRequest::Responses(mut request) => {
                if let Some(mcp) = mcp {
                    request
                        .tools
                        .get_or_insert_with(Vec::new)
                        .push(mcp_tool(mcp));
                }
                client.responses_request(ctx, &request).await?
            }
            TurnRequest::A2a(request) => {
                // As through Chat Completions: the header (and the URL in the instructions).
                let headers: Vec<(&'static str, String)> = mcp
                    .map(|m| (MCP_SERVER_URL_HEADER, m.url.clone()))
                    .into_iter()
                    .collect();
                client.a2a_turn(ctx, request, &headers).await?
            }
        };
        if self.mode.history == HistoryMode::Chain {
            self.head = reply.response_id.clone().map(|response_id| ChainHead {
                response_id,
                covered: transcript.len() + 1,
            });
        }
        Ok(reply)
    }

    /// [`TurnSender::send`] of `transcript` without tools, with `headers` beside the wall's own
    /// (benchmark annotations: `X-Turn-Id`, `X-Memory-Write`).
    pub async fn send_with_headers(
        &mut self,
        client: &TargetClient,
        ctx: &RequestContext,
        transcript: &[ChatMessage],
        headers: &[(&'static str, String)],
    ) -> Result<ChatReply, TargetError> {
        let reply = match self.request(client, transcript, None) {
            TurnRequest::Chat(request) => {
                client
                    .chat_request_with_headers(ctx, &request, headers)
                    .await?
            }
            TurnRequest::Responses(request) => {
                client
                    .responses_request_with_headers(ctx, &request, headers)
                    .await?
            }
            TurnRequest::A2a(request) => client.a2a_turn(ctx, request, headers).await?,
        };
        if self.mode.history == HistoryMode::Chain {
            self.head = reply.response_id.clone().map(|response_id| ChainHead {
                response_id,
                covered: transcript.len() + 1,
            });
        }
        Ok(reply)
    }

    /// The leading system messages, and the rest of what this request carries.
    fn carried<'t>(&self, transcript: &'t [ChatMessage]) -> (&'t [ChatMessage], &'t [ChatMessage]) {
        let system = transcript
            .iter()
            .take_while(|m| m.role == Role::System)
            .count();
        let since_last_user = transcript
            .iter()
            .rposition(|m| m.role == Role::User)
            .unwrap_or(0)
            .max(system);
        let start = match (self.mode.history, &self.head) {
            (HistoryMode::Full, _) => system,
            (HistoryMode::Chain, Some(head)) if head.covered <= transcript.len() => {
                head.covered.max(system)
            }
            (HistoryMode::New | HistoryMode::Chain, _) => since_last_user,
        };
        (&transcript[..system], &transcript[start..])
    }
}

/// Sends one user message as a conversation of its own (the probe's questions).
pub async fn one_turn(
    client: &TargetClient,
    api: Api,
    ctx: &RequestContext,
    text: &str,
) -> Result<ChatReply, TargetError> {
    let mode = TurnMode {
        api,
        history: HistoryMode::New,
    };
    TurnSender::new(mode)
        .send(client, ctx, &[ChatMessage::user(text)], None)
        .await
}

/// OpenAI's remote MCP tool: `{"type": "mcp", "server_label", "server_url",
/// "require_approval": "never"}` (the judge's server asks no approvals: its calls are graded).
fn mcp_tool(mcp: &RemoteMcp) -> FunctionTool {
    FunctionTool::mcp(McpTool {
        server_label: Some(mcp.label.clone()),
        server_url: Some(mcp.url.clone()),
        require_approval: Some("never".into()),
        ..McpTool::default()
    })
}

/// Chat messages as Responses input items.
fn items(messages: &[ChatMessage]) -> Vec<Item> {
    let mut out = Vec::new();
    for message in messages {
        let text = message.text_content().unwrap_or_default();
        match message.role {
            Role::Tool => out.push(Item::function_call_output(
                message.tool_call_id.as_deref().unwrap_or_default(),
                text,
            )),
            Role::Assistant => {
                if !text.is_empty() {
                    out.push(Item::message("assistant", text));
                }
                for call in message.tool_calls.iter().flatten() {
                    out.push(Item::function_call(
                        &call.id,
                        &call.function.name,
                        &call.function.arguments,
                    ));
                }
            }
            role => out.push(Item::message(role.as_str(), text)),
        }
    }
    out
}

/// A chat tool in the Responses shape (flat: `{"type": "function", "name", "parameters"}`).
fn function_tool(tool: &Tool) -> FunctionTool {
    FunctionTool {
        kind: tool.kind.clone(),
        name: tool.function.name.clone(),
        description: tool.function.description.clone(),
        parameters: tool.function.parameters.clone(),
        strict: tool.function.strict,
        extra: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use protocol::openai::{FunctionCall, FunctionDefinition, ToolCall};
    use serde_json::json;

    use super::*;
    use crate::endpoint::TargetSettings;

    fn client() -> TargetClient {
        TargetClient::new(
            TargetSettings {
                model: Some("m".into()),
                max_tokens: Some(64),
                ..TargetSettings::new("http://127.0.0.1:1")
            },
            Default::default(),
        )
    }

    fn mode(api: Api, history: HistoryMode) -> TurnSender {
        TurnSender::new(TurnMode::new(api, history).unwrap())
    }

    /// A tool round: system, two user turns with a reply between, and a call answered.
    fn transcript() -> Vec<ChatMessage> {
        let mut call = ChatMessage::assistant("");
        call.content = None;
        call.tool_calls = Some(vec![ToolCall {
            id: "call_1".into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "paypal_transfer".into(),
                arguments: "{\"to\":\"bob\"}".into(),
            },
        }]);
        let mut result = ChatMessage::text(Role::Tool, "{\"success\":true}");
        result.tool_call_id = Some("call_1".into());
        vec![
            ChatMessage::system("apps"),
            ChatMessage::user("one"),
            ChatMessage::assistant("done one"),
            ChatMessage::user("two"),
            call,
            result,
        ]
    }

    fn chat_texts(request: &TurnRequest) -> Vec<(Role, Option<String>)> {
        let TurnRequest::Chat(r) = request else {
            panic!("a chat request")
        };
        r.messages
            .iter()
            .map(|m| (m.role, m.text_content()))
            .collect()
    }

    #[test]
    fn chat_new_keeps_the_system_message_and_the_new_turn_with_its_tool_round() {
        let client = client();
        let all = transcript();
        let new = mode(Api::Chat, HistoryMode::New);
        let roles: Vec<Role> = chat_texts(&new.request(&client, &all, None))
            .into_iter()
            .map(|(r, _)| r)
            .collect();
        assert_eq!(
            roles,
            [Role::System, Role::User, Role::Assistant, Role::Tool]
        );
        // Before the tool round: the system message and the new turn.
        assert_eq!(
            chat_texts(&new.request(&client, &all[..4], None)),
            [
                (Role::System, Some("apps".into())),
                (Role::User, Some("two".into()))
            ]
        );
        let full = mode(Api::Chat, HistoryMode::Full);
        assert_eq!(chat_texts(&full.request(&client, &all, None)).len(), 6);
    }

    #[test]
    fn responses_full_sends_instructions_items_and_flat_tools() {
        let client = client();
        let tool = Tool::function(FunctionDefinition {
            name: "paypal_transfer".into(),
            description: Some("send money".into()),
            parameters: Some(json!({"type": "object"})),
            strict: None,
        });
        let request = mode(Api::Responses, HistoryMode::Full).request(
            &client,
            &transcript(),
            Some(std::slice::from_ref(&tool)),
        );
        let json = request.to_value();
        assert_eq!(json["instructions"], "apps");
        assert_eq!(json["model"], "m");
        assert_eq!(json["max_output_tokens"], 64);
        assert_eq!(json["store"], false);
        assert!(json.get("previous_response_id").is_none());
        assert_eq!(
            json["tools"],
            json!([{"type": "function", "name": "paypal_transfer", "description": "send money", "parameters": {"type": "object"}}])
        );
        let input = json["input"].as_array().unwrap();
        let kinds: Vec<(&str, &str)> = input
            .iter()
            .map(|i| {
                (
                    i["type"].as_str().unwrap(),
                    i["role"].as_str().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("message", "user"),
                ("message", "assistant"),
                ("message", "user"),
                ("function_call", ""),
                ("function_call_output", "")
            ]
        );
        assert_eq!(input[3]["call_id"], "call_1");
        assert_eq!(input[3]["arguments"], "{\"to\":\"bob\"}");
        assert_eq!(input[4]["call_id"], "call_1");
        assert_eq!(input[4]["output"], "{\"success\":true}");
    }

    #[test]
    fn a_chain_sends_what_came_after_its_head_and_starts_over_after_a_restart() {
        let client = client();
        let all = transcript();
        let mut chain = mode(Api::Responses, HistoryMode::Chain);
        // The first request starts the chain: the new turn only, stored.
        let first = chain.request(&client, &all[..2], None).to_value();
        assert_eq!(first["input"].as_array().unwrap().len(), 1);
        assert_eq!(first["store"], true);
        assert!(first.get("previous_response_id").is_none());
        // It was answered by resp_1 ("done one"); the next request carries only "two".
        chain.head = Some(ChainHead {
            response_id: "resp_1".into(),
            covered: 3,
        });
        let second = chain.request(&client, &all[..4], None).to_value();
        assert_eq!(second["previous_response_id"], "resp_1");
        assert_eq!(second["instructions"], "apps");
        assert_eq!(
            second["input"],
            json!([{"type": "message", "role": "user", "content": "two"}])
        );
        // Answered by a call (resp_2): the next request carries only its output.
        chain.head = Some(ChainHead {
            response_id: "resp_2".into(),
            covered: 5,
        });
        let third = chain.request(&client, &all, None).to_value();
        assert_eq!(third["previous_response_id"], "resp_2");
        assert_eq!(third["input"][0]["type"], "function_call_output");
        assert_eq!(third["input"].as_array().unwrap().len(), 1);
        chain.restart();
        let fresh = chain.request(&client, &all[..4], None).to_value();
        assert!(fresh.get("previous_response_id").is_none());
        assert_eq!(fresh["input"][0]["content"], "two");
    }
}
