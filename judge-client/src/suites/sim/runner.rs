//! Conversations between a user simulator (or an injected endpoint playing the persona) and the
//! target, round by round: the user speaks, the target answers. A conversation stops at the round
//! limit, at a stop token (either side), or at the target's first failure. Every round is kept,
//! including those whose user turn came from a fallback (marked).

use std::rc::Rc;

use chrono::{DateTime, Duration, Utc};
use futures_util::{StreamExt, stream};
use protocol::openai::{ChatMessage, Role};
use serde::{Deserialize, Serialize};

use super::canonical::{derived_uuid, sha256_of};
use super::injection::fixtures::{FixturePayload, FixtureRecorder};
use super::injection::privacy::{openai_system_prompt, persona_ref, persona_snapshot};
use super::injection::redact::redact;
use super::injection::schema::{
    AgentWorldRequest, ContextTurn, ConversationContext, ResponseFormat, SCHEMA_VERSION,
    TopologyEdgeContext,
};
use super::injection::{EndpointMetrics, FallbackStrategy, InjectedEndpoint, Protocol};
use super::persona::Persona;
use super::simulator::{Exchange, LlmUser, ScriptedUser, UserSimulator, UserTurn};
use crate::endpoint::Failure;
use crate::endpoint::{
    Api, ChainNeedsResponses, FailureKind, HistoryMode, RequestContext, TargetClient, TurnMode,
    TurnSender,
};
use crate::suites::concurrency::RequestSpan;

/// Turns of context sent to an injected endpoint (the `last_k_turns` of docs/contracts/agent-injection.md).
const LAST_K_TURNS: usize = 10;
const MAX_CONTEXT_CHARS: usize = 16_000;
const TOKEN_BUDGET: u32 = 4_000;
/// The sender name of the agent under test in injected requests.
pub const TARGET_SENDER: &str = "target";

/// Virtual start of every simulated conversation, whether `judge sim` or `judge serve` runs it:
/// fixed, so transcripts are reproducible (2026-01-05T09:00:00Z).
pub fn sim_start() -> DateTime<Utc> {
    DateTime::from_timestamp(1_767_603_600, 0).expect("a representable instant")
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimSettings {
    pub seed: u64,
    /// Rounds per conversation (one user turn and one reply each).
    pub rounds: usize,
    pub trials: u32,
    /// The single-turn mode of docs/contracts/run-log.md: one user message, one reply.
    pub single_turn: bool,
    pub stop_token: String,
    pub concurrency: usize,
    /// Virtual start time of every conversation (sent as `X-Mock-Time` when honoured).
    pub start: DateTime<Utc>,
    /// Replies longer than this (in characters) count as overlong.
    pub max_reply_chars: usize,
    /// Score conversations whose simulated user broke its role too (they are flagged either
    /// way; by default they are left out of the agent's scores).
    #[serde(default)]
    pub keep_unfaithful_simulator: bool,
    /// The API the target's turns go through.
    #[serde(default)]
    pub api: Api,
    /// What each request to the target carries (by default only the new turn: what the agent
    /// remembers must come from the agent).
    #[serde(default)]
    pub history: HistoryMode,
}

impl SimSettings {
    /// How the target's turns are sent.
    pub fn turns(&self) -> Result<TurnMode, ChainNeedsResponses> {
        TurnMode::new(self.api, self.history)
    }

    pub fn max_turns(&self) -> usize {
        if self.single_turn {
            1
        } else {
            self.rounds.max(1)
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UserSource {
    Simulator,
    Injected,
    /// The injected endpoint failed and the fallback strategy produced the turn.
    Fallback,
}

/// Why a turn was not the injected endpoint's own: always marked, never scored for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FallbackMark {
    pub strategy: FallbackStrategy,
    pub kind: FailureKind,
    pub message: String,
    /// The endpoint's circuit state right after the failure.
    pub circuit_state: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    pub index: usize,
    pub at: DateTime<Utc>,
    pub user: String,
    pub user_source: UserSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<FallbackMark>,
    /// Whether the user turn was sent to the target (not for error_message/skip fallbacks or a
    /// user turn carrying the stop token).
    pub sent: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_failure: Option<Failure>,
    /// When the turn was sent to the target and how long its answer took (wall clock: never
    /// written into the run's deterministic files; see [`crate::suites::concurrency`]).
    #[serde(skip)]
    pub timing: Option<RequestSpan>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    /// 1-based number in the run (neutral file names use it).
    pub number: usize,
    pub persona_id: String,
    pub trial: u32,
    pub session_id: String,
    pub simulator: String,
    /// The injected endpoint's URL when an endpoint played the persona.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injected: Option<String>,
    pub max_turns: usize,
    /// `max_turns`, `single_turn`, `stop_token`, or the failure class that ended it.
    pub stop_reason: String,
    pub rounds: Vec<Round>,
}

/// Watches a panel while it runs: `judge serve` streams rounds to dashboards as they happen,
/// rather than only after the run directory is written.
pub trait PanelObserver {
    /// A round of conversation `number` (persona `persona_id`, trial `trial`) is over;
    /// `endpoints` are the injected endpoints' metrics right after it.
    fn round(
        &self,
        number: usize,
        persona_id: &str,
        trial: u32,
        round: &Round,
        endpoints: &[EndpointMetrics],
    );
    /// Conversation `conversation` ended (its `stop_reason` is final).
    fn conversation_done(&self, conversation: &Conversation);
}

/// How user turns are produced.
#[derive(Clone)]
pub enum SimulatorChoice {
    Scripted,
    Llm(Rc<TargetClient>),
}

/// Everything a panel run needs.
pub struct Panel<'a> {
    pub target: &'a TargetClient,
    /// Send `X-Mock-Time` (the target honours it).
    pub mock_time: bool,
    /// Reset each session before its conversation (the target offers reset): session ids are
    /// derived from the seed, so a re-run must not inherit the previous run's memory.
    pub reset: bool,
    pub personas: &'a [Persona],
    pub settings: &'a SimSettings,
    pub simulator: SimulatorChoice,
    /// Injected endpoints by persona id.
    pub injected: &'a [(String, Rc<InjectedEndpoint>)],
    pub fallback: FallbackStrategy,
    pub config_hash: String,
    pub target_fixtures: Option<&'a FixtureRecorder>,
    pub injected_fixtures: Option<&'a FixtureRecorder>,
    pub observer: Option<&'a dyn PanelObserver>,
}

/// Runs every persona for every trial; conversations come back in run order.
pub async fn run_panel(panel: &Panel<'_>) -> Vec<Conversation> {
    let mut jobs = Vec::new();
    for persona in panel.personas {
        for trial in 1..=panel.settings.trials.max(1) {
            jobs.push((jobs.len() + 1, persona, trial));
        }
    }
    let mut done: Vec<Conversation> = stream::iter(jobs)
        .map(|(number, persona, trial)| run_conversation(panel, number, persona, trial))
        .buffer_unordered(panel.settings.concurrency.clamp(1, 10))
        .collect()
        .await;
    done.sort_by_key(|c| c.number);
    done
}

/// The conversation with the target so far, as chat messages: the user turns it was sent and
/// its replies.
fn said(rounds: &[Round]) -> Vec<ChatMessage> {
    rounds
        .iter()
        .filter(|r| r.sent)
        .filter_map(|r| {
            let reply = r.agent.as_ref()?;
            Some([
                ChatMessage::user(r.user.clone()),
                ChatMessage::assistant(reply.clone()),
            ])
        })
        .flatten()
        .collect()
}

fn history(rounds: &[Round]) -> Vec<Exchange<'_>> {
    rounds
        .iter()
        .map(|r| Exchange {
            user: &r.user,
            agent: r.agent.as_deref(),
        })
        .collect()
}

pub async fn run_conversation(
    panel: &Panel<'_>,
    number: usize,
    persona: &Persona,
    trial: u32,
) -> Conversation {
    let settings = panel.settings;
    let label = format!("{}/{}", persona.id, trial);
    let session_id = derived_uuid(settings.seed, &format!("session/{label}"));
    let mut simulator = match &panel.simulator {
        SimulatorChoice::Scripted => UserSimulator::Scripted(Box::new(ScriptedUser::new(
            persona.clone(),
            settings.seed,
            &label,
            &settings.stop_token,
        ))),
        SimulatorChoice::Llm(client) => UserSimulator::Llm(Box::new(LlmUser::new(
            persona.clone(),
            client.clone(),
            settings.seed,
            &label,
            &settings.stop_token,
        ))),
    };
    let endpoint = panel
        .injected
        .iter()
        .find(|(id, _)| *id == persona.id)
        .map(|(_, e)| e.clone());
    let max_turns = settings.max_turns();
    let mut rounds: Vec<Round> = Vec::new();
    let mut sender = TurnSender::new(TurnMode {
        api: settings.api,
        history: settings.history,
    });
    let mut stop_reason: Option<String> = None;
    if panel.reset {
        let ctx = RequestContext {
            session_id: session_id.clone(),
            mock_time: panel.mock_time.then_some(settings.start),
            request_no: 0,
        };
        if let Err(e) = panel.target.reset(&ctx).await {
            // Not reset means not comparable: the conversation does not start.
            stop_reason = Some(e.kind.as_str().to_owned());
        }
    }
    let mut notified = 0;
    for index in 0..max_turns {
        notify_rounds(panel, number, persona, trial, &rounds, &mut notified);
        if stop_reason.is_some() {
            break;
        }
        let at = settings.start + Duration::minutes(index as i64);
        let user = match &endpoint {
            None => simulator
                .next(&history(&rounds))
                .await
                .map(|t| (t, UserSource::Simulator, None))
                .map_err(Failure::from),
            Some(endpoint) => {
                let ctx = InjectedTurn {
                    panel,
                    persona,
                    label: &label,
                    number,
                    index,
                    session_id: &session_id,
                };
                injected_turn(&ctx, endpoint, &mut simulator, &rounds).await
            }
        };
        let (turn, source, fallback) = match user {
            Ok(user) => user,
            Err(failure) => {
                // The judge's own simulator failed: a judge error, never the target's fault.
                rounds.push(Round {
                    index,
                    at,
                    user: format!("[judge_error] user simulator: {}", failure.message),
                    user_source: UserSource::Simulator,
                    fallback: None,
                    sent: false,
                    agent: None,
                    agent_failure: None,
                    timing: None,
                });
                stop_reason = Some(FailureKind::JudgeError.as_str().to_owned());
                break;
            }
        };
        let send = !turn.stop
            && !matches!(
                fallback.as_ref().map(|f: &FallbackMark| f.strategy),
                Some(FallbackStrategy::ErrorMessage | FallbackStrategy::Skip)
            );
        let mut round = Round {
            index,
            at,
            user: turn.text.clone(),
            user_source: source,
            fallback,
            sent: send,
            agent: None,
            agent_failure: None,
            timing: None,
        };
        if turn.stop {
            rounds.push(round);
            stop_reason = Some("stop_token".to_owned());
            break;
        }
        if send {
            let ctx = RequestContext {
                session_id: session_id.clone(),
                mock_time: panel.mock_time.then_some(at),
                request_no: index as u64 + 1,
            };
            let mut transcript = said(&rounds);
            transcript.push(ChatMessage::user(turn.text.clone()));
            let request = sender.request(panel.target, &transcript, None);
            let sent = Utc::now();
            let started = std::time::Instant::now();
            let answer = sender.send(panel.target, &ctx, &transcript, None).await;
            round.timing = Some(RequestSpan {
                start_ms: sent.timestamp_millis() as f64,
                latency_ms: started.elapsed().as_secs_f64() * 1000.0,
            });
            match answer {
                Ok(reply) => {
                    if let Some(recorder) = panel.target_fixtures {
                        let value = request.to_value();
                        recorder.record(FixturePayload {
                            turn_id: derived_uuid(settings.seed, &format!("turn/{label}/{index}")),
                            agent_id: TARGET_SENDER.to_owned(),
                            request_hash: sha256_of(&value),
                            conversation: number,
                            round: index,
                            session_id: Some(session_id.clone()),
                            mock_time: ctx.mock_time,
                            request: value,
                            baseline_response: Some(
                                serde_json::json!({"response_text": reply.text}),
                            ),
                        });
                    }
                    let ends = reply.text.contains(&settings.stop_token);
                    round.agent = Some(reply.text);
                    rounds.push(round);
                    if ends {
                        stop_reason = Some("stop_token".to_owned());
                        break;
                    }
                }
                Err(e) => {
                    stop_reason = Some(e.kind.as_str().to_owned());
                    round.agent_failure = Some(e.into());
                    rounds.push(round);
                    break;
                }
            }
        } else {
            rounds.push(round);
        }
    }
    notify_rounds(panel, number, persona, trial, &rounds, &mut notified);
    let stop_reason = stop_reason.unwrap_or_else(|| {
        if settings.single_turn {
            "single_turn".to_owned()
        } else {
            "max_turns".to_owned()
        }
    });
    let conversation = Conversation {
        number,
        persona_id: persona.id.clone(),
        trial,
        session_id,
        simulator: simulator.kind().to_owned(),
        injected: endpoint.map(|e| e.spec().url.clone()),
        max_turns,
        stop_reason,
        rounds,
    };
    if let Some(observer) = panel.observer {
        observer.conversation_done(&conversation);
    }
    conversation
}

/// Tells the observer about the rounds pushed since the last call (`notified` counts them).
fn notify_rounds(
    panel: &Panel<'_>,
    number: usize,
    persona: &Persona,
    trial: u32,
    rounds: &[Round],
    notified: &mut usize,
) {
    let Some(observer) = panel.observer else {
        return;
    };
    if *notified == rounds.len() {
        return;
    }
    let metrics: Vec<EndpointMetrics> = panel.injected.iter().map(|(_, e)| e.metrics()).collect();
    for round in &rounds[*notified..] {
        observer.round(number, &persona.id, trial, round, &metrics);
    }
    *notified = rounds.len();
}

struct InjectedTurn<'a> {
    panel: &'a Panel<'a>,
    persona: &'a Persona,
    label: &'a str,
    number: usize,
    index: usize,
    session_id: &'a str,
}

type UserOutcome = Result<(UserTurn, UserSource, Option<FallbackMark>), Failure>;

/// One user turn played by the injected endpoint, or by the fallback when it fails.
async fn injected_turn(
    ctx: &InjectedTurn<'_>,
    endpoint: &InjectedEndpoint,
    simulator: &mut UserSimulator,
    rounds: &[Round],
) -> UserOutcome {
    let value = injected_request(ctx, endpoint, rounds);
    let body = serde_json::to_vec(&value).unwrap_or_default();
    match endpoint.call(&body).await {
        Ok(reply) => {
            if let Some(recorder) = ctx.panel.injected_fixtures {
                recorder.record(FixturePayload {
                    turn_id: derived_uuid(
                        ctx.panel.settings.seed,
                        &format!("turn/{}/{}", ctx.label, ctx.index),
                    ),
                    agent_id: ctx.persona.id.clone(),
                    request_hash: sha256_of(&value),
                    conversation: ctx.number,
                    round: ctx.index,
                    session_id: None,
                    mock_time: None,
                    request: value,
                    baseline_response: Some(reply.raw.clone()),
                });
            }
            let stop = reply.text.contains(&ctx.panel.settings.stop_token);
            Ok((
                UserTurn {
                    text: reply.text,
                    stop,
                },
                UserSource::Injected,
                None,
            ))
        }
        Err(error) => {
            let mark = FallbackMark {
                strategy: ctx.panel.fallback,
                kind: error.kind,
                message: error.message.clone(),
                circuit_state: endpoint.circuit_state().to_owned(),
            };
            let turn = match ctx.panel.fallback {
                FallbackStrategy::SimulatedAgent => simulator
                    .next(&history(rounds))
                    .await
                    .map_err(Failure::from)?,
                FallbackStrategy::ErrorMessage => {
                    UserTurn::say(format!("[{}] {}", error.kind, error.message))
                }
                FallbackStrategy::Skip => UserTurn::say(""),
            };
            Ok((turn, UserSource::Fallback, Some(mark)))
        }
    }
}

/// The request for the injected endpoint, as JSON, PII redacted when configured.
fn injected_request(
    ctx: &InjectedTurn<'_>,
    endpoint: &InjectedEndpoint,
    rounds: &[Round],
) -> serde_json::Value {
    let spec = endpoint.spec();
    let settings = ctx.panel.settings;
    let clean = |text: &str| {
        if spec.redact_pii {
            redact(text)
        } else {
            text.to_owned()
        }
    };
    let mut turns: Vec<ContextTurn> = Vec::new();
    for r in rounds {
        turns.push(ContextTurn {
            sender: ctx.persona.id.clone(),
            content: clean(&r.user),
            timestamp: r.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        });
        if let Some(reply) = &r.agent {
            turns.push(ContextTurn {
                sender: TARGET_SENDER.to_owned(),
                content: clean(reply),
                timestamp: (r.at + Duration::seconds(1))
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            });
        }
    }
    let skip = turns.len().saturating_sub(LAST_K_TURNS);
    let mut turns: Vec<ContextTurn> = turns.into_iter().skip(skip).collect();
    // Oldest turns go first when the context is over its character budget.
    while turns.iter().map(|t| t.content.len()).sum::<usize>() > MAX_CONTEXT_CHARS
        && !turns.is_empty()
    {
        turns.remove(0);
    }
    let stimulus = clean(rounds.last().and_then(|r| r.agent.as_deref()).unwrap_or(""));
    match spec.protocol {
        Protocol::Agentworld => {
            let mut snapshot =
                persona_snapshot(ctx.persona, spec.privacy_tier, &settings.stop_token);
            if let Some(s) = snapshot.as_mut() {
                s.background = s.background.as_deref().map(clean);
                s.system_prompt = s.system_prompt.as_deref().map(clean);
            }
            let label = format!("{}/{}", ctx.label, ctx.index);
            let request = AgentWorldRequest {
                schema_version: SCHEMA_VERSION.to_owned(),
                request_id: derived_uuid(settings.seed, &format!("request/{label}")),
                run_id: derived_uuid(settings.seed, "run"),
                turn_id: derived_uuid(settings.seed, &format!("turn/{label}")),
                message_id: derived_uuid(settings.seed, &format!("message/{label}")),
                simulation_config_hash: ctx.panel.config_hash.clone(),
                persona_hash: ctx.persona.hash(),
                agent_id: ctx.persona.id.clone(),
                persona_ref: persona_ref(ctx.persona),
                persona_snapshot: snapshot,
                conversation_context: ConversationContext {
                    conversation_summary: format!(
                        "Round {} of {} with the assistant under test (session {}).",
                        ctx.index + 1,
                        settings.max_turns(),
                        ctx.session_id
                    ),
                    last_k_turns: turns,
                    token_budget: TOKEN_BUDGET,
                    max_context_chars: MAX_CONTEXT_CHARS,
                },
                current_stimulus: stimulus,
                topology_edge_context: TopologyEdgeContext {
                    can_message: vec![TARGET_SENDER.to_owned()],
                },
                timeout_ms: spec.timeout_ms,
                response_format: ResponseFormat {
                    kind: "text".to_owned(),
                },
            };
            serde_json::to_value(&request).unwrap_or_default()
        }
        Protocol::Openai => {
            let mut messages = vec![ChatMessage::system(clean(&openai_system_prompt(
                ctx.persona,
                spec.privacy_tier,
                &settings.stop_token,
            )))];
            for t in turns {
                let role = if t.sender == TARGET_SENDER {
                    Role::User
                } else {
                    Role::Assistant
                };
                messages.push(ChatMessage::text(role, t.content));
            }
            if rounds.is_empty() {
                messages.push(ChatMessage::user("(Start the conversation.)"));
            }
            serde_json::json!({
                "model": spec.model.clone().unwrap_or_else(|| "default".to_owned()),
                "messages": messages,
                "stream": false,
                "seed": settings.seed & ((1 << 53) - 1),
            })
        }
    }
}
