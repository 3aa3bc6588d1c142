//! Plays a scenario against an agent for several trials and grades each trial by its final state.
//!
//! The agent is anything implementing [`AgentEndpoint`]: [`TargetAgent`] wraps the judge's HTTP
//! [`TargetClient`], and [`super::scripted::ReferenceAgent`] replays a scenario's reference
//! replies (no network), which is how the shipped scenarios are proven passable.
//!
//! One trial: a fresh world seeded from the run seed and the trial number; the setup actions of
//! other agents; then, per user turn, the agent's pending observations and the user's words go
//! out as one user message, and the reply's directives (and tool calls, in tool mode, answered
//! until the agent stops calling) run at that step. By default the full conversation is sent every
//! turn, since the apps' instructions live in the system message; how each request is sent (API
//! and history) is [`TurnSender`]'s business.

use std::future::Future;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use protocol::openai::{ChatMessage, MessageContent, Tool, ToolCall};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::audit::AuditLog;
use super::grade::{Grade, grade};
use super::mcp::{McpServer, SERVER_LABEL};
use super::scenario::{Scenario, ScenarioError, pass_at_k, pass_hat_k};
use super::tools::{execute_tool_calls, instructions, tools};
use super::world::{LogicalClock, SharedWorld, World, WorldError};
use super::{AppRegistry, Observation};
use crate::endpoint::{
    Api, FailureKind, HistoryMode, RemoteMcp, RequestContext, TargetClient, TargetError, TurnMode,
    TurnSender,
};

/// Tool-call rounds allowed within one user turn before the judge stops answering calls.
pub const MAX_TOOL_ROUNDS: usize = 8;

/// How the agent acts on the apps (`--action-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ActionMode {
    /// `APP_ACTION:` lines in the reply text.
    Directives,
    /// OpenAI tools and `tool_calls`.
    Tools,
    /// Tools when the endpoint can carry them, and directives in the text either way.
    Auto,
    /// The trial's world served as an MCP server: the agent lists and calls its tools itself
    /// ([`super::mcp`]).
    Mcp,
}

impl FromStr for ActionMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "directives" => Ok(Self::Directives),
            "tools" => Ok(Self::Tools),
            "auto" => Ok(Self::Auto),
            "mcp" => Ok(Self::Mcp),
            other => Err(format!(
                "unknown action mode `{other}` (directives, tools, auto or mcp)"
            )),
        }
    }
}

/// What the endpoint is asked at one step.
pub struct AgentTurn<'a> {
    pub session_id: &'a str,
    /// The world's logical time (for `X-Mock-Time`).
    pub now: DateTime<Utc>,
    pub messages: &'a [ChatMessage],
    /// `Some` in tool mode.
    pub tools: Option<&'a [Tool]>,
    /// The observations rendered into the last user message, structured.
    pub observations: &'a [Observation],
    /// In MCP mode, the trial's MCP server URL.
    pub mcp_url: Option<&'a str>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentReply {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
}

/// An agent the runner can talk to.
pub trait AgentEndpoint {
    /// Whether requests can carry `tools` and replies bring back `tool_calls`.
    fn supports_tools(&self) -> bool;

    /// The MCP server the trials' worlds are served on, for an agent that can be told one.
    fn mcp_server(&self) -> Option<&McpServer> {
        None
    }

    fn respond(
        &mut self,
        turn: AgentTurn<'_>,
    ) -> impl Future<Output = Result<AgentReply, TargetError>>;
}

/// The HTTP target through the judge's client. Any OpenAI-compatible endpoint can carry `tools`,
/// so `auto` plays tool mode there (directives in the text are executed too); an A2A agent only
/// when its card declares agentwall's tools extension (docs/contracts/a2a.md), else `auto` plays
/// directives and `tools` is not applicable.
pub struct TargetAgent<'a> {
    pub client: &'a TargetClient,
    /// Send the logical time as `X-Mock-Time` (when the probe found it honoured).
    pub send_mock_time: bool,
    /// Reset each trial's session before its first turn (when the target has the control plane),
    /// so a rerun with the same seed starts from the same empty memory.
    pub reset_sessions: bool,
    /// How each request is sent. History `full` (the default here): the whole conversation each
    /// turn; `new`: the system message (the apps' instructions) and the new user turn only, so
    /// earlier turns must come from the agent's memory, as in the other suites; `chain`: the
    /// Responses API holds the conversation.
    sender: TurnSender,
    requests: u64,
    current_session: Option<String>,
    mcp: Option<&'a McpServer>,
}

impl<'a> TargetAgent<'a> {
    pub fn new(client: &'a TargetClient, send_mock_time: bool) -> Self {
        Self {
            client,
            send_mock_time,
            reset_sessions: false,
            sender: TurnSender::new(TurnMode {
                api: Api::Chat,
                history: HistoryMode::Full,
            }),
            requests: 0,
            current_session: None,
            mcp: None,
        }
    }

    /// Serves the trials' worlds on `server` (action mode `mcp`).
    pub fn serving_mcp(mut self, server: &'a McpServer) -> Self {
        self.mcp = Some(server);
        self
    }

    pub fn with_turns(mut self, turns: TurnMode) -> Self {
        self.sender = TurnSender::new(turns);
        self
    }

    pub fn resetting_sessions(mut self, reset: bool) -> Self {
        self.reset_sessions = reset;
        self
    }
}

impl AgentEndpoint for TargetAgent<'_> {
    fn supports_tools(&self) -> bool {
        self.client.carries_tools(self.sender.mode().api)
    }

    fn mcp_server(&self) -> Option<&McpServer> {
        self.mcp
    }

    async fn respond(&mut self, turn: AgentTurn<'_>) -> Result<AgentReply, TargetError> {
        self.requests += 1;
        let ctx = RequestContext {
            session_id: turn.session_id.to_owned(),
            mock_time: self.send_mock_time.then_some(turn.now),
            request_no: self.requests,
        };
        if self.current_session.as_deref() != Some(turn.session_id) {
            self.current_session = Some(turn.session_id.to_owned());
            // A new trial: its conversation starts over (and a chain with it).
            self.sender.restart();
            if self.reset_sessions {
                self.client.reset(&ctx).await?;
            }
        }
        let remote = turn.mcp_url.map(|url| RemoteMcp {
            label: SERVER_LABEL.to_owned(),
            url: url.to_owned(),
        });
        let reply = self
            .sender
            .send_with(
                self.client,
                &ctx,
                turn.messages,
                turn.tools,
                remote.as_ref(),
            )
            .await?;
        Ok(AgentReply {
            text: reply.text,
            tool_calls: reply.tool_calls,
        })
    }
}

/// How one trial ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrialStatus {
    Passed,
    /// Graded and not passed, or the target failed a turn (classified in `failure`): either
    /// way it counts against the target.
    Failed,
    /// The judge's own side failed (`judge_error` in `failure`): not graded, counted apart.
    Error,
    /// The scenario needs what the endpoint lacks (tool mode without tools, MCP mode without
    /// an MCP server).
    NotApplicable,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialFailure {
    pub kind: FailureKind,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialOutcome {
    pub trial: u32,
    pub seed: u64,
    pub session_id: String,
    pub status: TrialStatus,
    pub grade: Option<Grade>,
    pub failure: Option<TrialFailure>,
    pub audit: AuditLog,
    pub final_state: Value,
    pub transcript: Vec<ChatMessage>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioOutcome {
    pub scenario_id: String,
    pub title: String,
    pub goal: String,
    /// The mode actually played (`auto` resolved).
    pub mode: ActionMode,
    pub seed: u64,
    pub trials: Vec<TrialOutcome>,
    /// Graded trials that passed.
    pub passed: u32,
    /// Trials graded: passed and failed ones, a trial the target failed included (the judge's
    /// errors and not-applicable trials excluded).
    pub graded: u32,
    /// pass^k with k = the number of graded trials; `None` when nothing was graded.
    pub pass_hat_k: Option<f64>,
    pub pass_at_k: Option<f64>,
    /// pass^1: the share of graded trials that passed.
    pub pass_rate: Option<f64>,
}

impl ScenarioOutcome {
    /// Every trial graded and passed.
    pub fn all_passed(&self) -> bool {
        self.graded > 0 && self.passed == self.graded && self.graded as usize == self.trials.len()
    }

    /// Why trials did not pass, one line per trial (empty when all passed): for JUnit failure
    /// messages and the report.
    pub fn failure_summary(&self) -> Vec<String> {
        self.trials
            .iter()
            .filter(|t| t.status != TrialStatus::Passed)
            .map(|t| format!("trial {}: {}", t.trial, t.why()))
            .collect()
    }
}

impl TrialOutcome {
    /// A one-line reason for the trial's status.
    pub fn why(&self) -> String {
        if let Some(failure) = &self.failure {
            return format!("{}: {}", failure.kind, failure.message);
        }
        let Some(grade) = &self.grade else {
            return "not graded".to_owned();
        };
        let mut reasons = Vec::new();
        for m in &grade.mismatches {
            let actual = m
                .actual
                .as_ref()
                .map_or_else(|| "missing".to_owned(), Value::to_string);
            reasons.push(format!("{} is {actual}, expected {}", m.path, m.expected));
        }
        for c in &grade.collateral {
            reasons.push(format!("collateral change at {}", c.path));
        }
        for phrase in &grade.missing_phrases {
            reasons.push(format!("never said \"{phrase}\""));
        }
        if grade.hash_matches == Some(false) {
            reasons.push(format!(
                "state hash {} is not the pinned one",
                grade.state_hash
            ));
        }
        if reasons.is_empty() {
            "passed".to_owned()
        } else {
            reasons.join("; ")
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error(transparent)]
    World(#[from] WorldError),
}

/// The seed of trial `trial` of a run seeded `seed`.
pub fn trial_seed(seed: u64, trial: u32) -> u64 {
    seed.wrapping_add(u64::from(trial))
}

/// Plays `scenario.trials` trials against `agent` and grades them. Errors are the judge's own
/// (an invalid scenario); the target's failures are recorded in the trials.
pub async fn run_scenario<A: AgentEndpoint>(
    agent: &mut A,
    registry: &AppRegistry,
    scenario: &Scenario,
    mode: ActionMode,
    seed: u64,
) -> Result<ScenarioOutcome, RunError> {
    scenario.validate(registry)?;
    let resolved = match mode {
        ActionMode::Auto if !agent.supports_tools() => ActionMode::Directives,
        other => other,
    };
    let mut trials = Vec::new();
    for trial in 0..scenario.trials {
        let outcome = run_trial(agent, registry, scenario, resolved, trial, seed).await?;
        trials.push(outcome);
    }
    let graded = trials
        .iter()
        .filter(|t| matches!(t.status, TrialStatus::Passed | TrialStatus::Failed))
        .count() as u32;
    let passed = trials
        .iter()
        .filter(|t| t.status == TrialStatus::Passed)
        .count() as u32;
    Ok(ScenarioOutcome {
        scenario_id: scenario.id.clone(),
        title: scenario.title.clone(),
        goal: scenario.goal.clone(),
        mode: resolved,
        seed,
        trials,
        passed,
        graded,
        pass_hat_k: pass_hat_k(graded, passed, graded),
        pass_at_k: pass_at_k(graded, passed, graded),
        pass_rate: pass_hat_k(graded, passed, 1),
    })
}

/// Plays every scenario in turn against the same agent; outcomes in the scenarios' order.
pub async fn run_scenarios<A: AgentEndpoint>(
    agent: &mut A,
    registry: &AppRegistry,
    scenarios: &[Scenario],
    mode: ActionMode,
    seed: u64,
) -> Result<Vec<ScenarioOutcome>, RunError> {
    let mut outcomes = Vec::with_capacity(scenarios.len());
    for scenario in scenarios {
        outcomes.push(run_scenario(agent, registry, scenario, mode, seed).await?);
    }
    Ok(outcomes)
}

/// A fresh world for trial `seed` of `scenario`, its setup actions done.
pub fn prepare_world(
    registry: &AppRegistry,
    scenario: &Scenario,
    seed: u64,
) -> Result<World, RunError> {
    let mut world = World::new(
        registry,
        &scenario.apps,
        &scenario.agents,
        seed,
        LogicalClock::default(),
    )?;
    for action in &scenario.setup {
        let directive = action.directive()?;
        world.execute_directive(&action.agent, &directive);
    }
    // The setup actors' own results are not anyone's business in the scenario.
    for action in &scenario.setup {
        if action.agent != scenario.agent {
            world.observations(&action.agent);
        }
    }
    world.advance();
    Ok(world)
}

async fn run_trial<A: AgentEndpoint>(
    agent: &mut A,
    registry: &AppRegistry,
    scenario: &Scenario,
    mode: ActionMode,
    trial: u32,
    run_seed: u64,
) -> Result<TrialOutcome, RunError> {
    let seed = trial_seed(run_seed, trial);
    let session_id = format!("apps-{}-s{run_seed}-t{trial}", scenario.id);
    let world = SharedWorld::new(prepare_world(registry, scenario, seed)?);
    let initial = world.with(|w| w.state());
    let use_mcp = mode == ActionMode::Mcp;
    let use_tools = matches!(mode, ActionMode::Tools | ActionMode::Auto);
    let use_directives = matches!(mode, ActionMode::Directives | ActionMode::Auto);
    let finish = |world: &SharedWorld, status, grade, failure, transcript| {
        world.with(|w| TrialOutcome {
            trial,
            seed,
            session_id: session_id.clone(),
            status,
            grade,
            failure,
            audit: w.audit().clone(),
            final_state: w.state(),
            transcript,
        })
    };
    let missing = if use_tools && !agent.supports_tools() {
        Some("tool mode asked, but this endpoint cannot carry tools")
    } else if use_mcp && agent.mcp_server().is_none() {
        Some("MCP mode asked, but this agent cannot be given an MCP server")
    } else {
        None
    };
    if let Some(message) = missing {
        let failure = TrialFailure {
            kind: FailureKind::JudgeError,
            message: message.to_owned(),
        };
        return Ok(finish(
            &world,
            TrialStatus::NotApplicable,
            None,
            Some(failure),
            Vec::new(),
        ));
    }
    // In MCP mode the world is on the server for the whole trial, and off it (later calls
    // refused) once this guard drops at the trial's end.
    let served = agent
        .mcp_server()
        .filter(|_| use_mcp)
        .map(|server| server.open(&session_id, &scenario.agent, world.clone()));
    let mcp_url = served.as_ref().map(|trial| trial.url().to_owned());
    let tool_list = use_tools.then(|| world.with(|w| tools(w)));
    let mut system = world.with(|w| instructions(w, use_directives));
    if let Some(url) = &mcp_url {
        system.push_str(&format!(
            "\nTheir actions are the tools of the MCP server at {url} (streamable HTTP); \
             call them yourself."
        ));
    }
    system.push_str(&format!(
        "\nYou act for the user `{}`. Tell the user what you did.",
        scenario.agent
    ));
    let mut messages = vec![ChatMessage::system(system)];
    let mut said = Vec::new();

    for user_turn in &scenario.user.turns {
        let observations = world.with(|w| w.observations(&scenario.agent));
        messages.push(ChatMessage::user(render_turn(&observations, user_turn)));
        let mut pending_observations = observations;
        for _round in 0..MAX_TOOL_ROUNDS {
            let request = AgentTurn {
                session_id: &session_id,
                now: world.with(|w| w.clock().now()),
                messages: &messages,
                tools: tool_list.as_deref(),
                observations: &pending_observations,
                mcp_url: mcp_url.as_deref(),
            };
            let reply = match agent.respond(request).await {
                Ok(reply) => reply,
                Err(e) => {
                    // The target's failure counts against it (a failed trial); the judge's own
                    // is left out of the grades (docs/judge.md, "How failures are counted").
                    let status = if e.kind == FailureKind::JudgeError {
                        TrialStatus::Error
                    } else {
                        TrialStatus::Failed
                    };
                    let failure = TrialFailure {
                        kind: e.kind,
                        message: e.message,
                    };
                    drop(served);
                    return Ok(finish(&world, status, None, Some(failure), messages));
                }
            };
            messages.push(assistant_message(&reply));
            if use_directives {
                let turn = world.with(|w| w.act(&scenario.agent, &reply.text));
                said.push(turn.parsed.prose);
            } else {
                said.push(reply.text.clone());
            }
            if use_mcp {
                // The agent's MCP calls were answered as they were made.
                world.with(|w| w.forget_results(&scenario.agent));
            }
            if !use_tools || reply.tool_calls.is_empty() {
                break;
            }
            let answers = world.with(|w| execute_tool_calls(w, &scenario.agent, &reply.tool_calls));
            world.with(|w| w.forget_results(&scenario.agent));
            messages.extend(answers);
            pending_observations = Vec::new();
        }
        world.with(World::advance);
    }
    drop(served);

    let verdict = grade(
        &initial,
        &world.with(|w| w.state()),
        &scenario.expectations(),
        &said,
    );
    let status = if verdict.passed {
        TrialStatus::Passed
    } else {
        TrialStatus::Failed
    };
    Ok(finish(&world, status, Some(verdict), None, messages))
}

/// The user message: what the apps reported since the agent's last turn, then the user's words.
pub fn render_turn(observations: &[Observation], text: &str) -> String {
    if observations.is_empty() {
        return text.to_owned();
    }
    let mut out = format!("{}\n", protocol::apps::NOTIFICATIONS_HEADER);
    for observation in observations {
        out.push_str("- ");
        out.push_str(&observation.message);
        out.push('\n');
    }
    out.push('\n');
    out.push_str(text);
    out
}

fn assistant_message(reply: &AgentReply) -> ChatMessage {
    let mut message = ChatMessage::assistant(reply.text.clone());
    if !reply.tool_calls.is_empty() {
        message.tool_calls = Some(reply.tool_calls.clone());
        if reply.text.is_empty() {
            message.content = None::<MessageContent>;
        }
    }
    message
}
