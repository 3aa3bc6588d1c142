//! The capability probe: what the target offers, found out by asking it, never assumed.
//!
//! - `GET /v1/models` (optional; its first id becomes the model when none was given);
//! - one turn through the API the run speaks (required: without it there is nothing to
//!   benchmark), or through each API (`judge probe`, which reports all three and needs one); over
//!   A2A the turn first reads the agent card, and what the card declares is reported
//!   ([`AgentCardSummary`]);
//! - `POST /control/session/reset`, `POST /control/memory/inject`, `GET /control/memory`;
//! - whether `X-Mock-Time` is honoured: through `GET /control/memory`'s `now` when that exists,
//!   otherwise by asking "What is today's date?" at two different mock times and finding each date
//!   in the matching reply.

use chrono::{DateTime, TimeZone, Utc};
use protocol::control::{InjectFact, InjectRequest};
use serde::{Deserialize, Serialize};

use super::a2a::AgentCardSummary;
use super::client::{RequestContext, TargetClient};
use super::conversation::one_turn;
use super::error::TargetError;
use super::turns::Api;
use crate::text::mentions_date;

/// What the probe found, with the evidence for each decision in `notes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capabilities {
    /// Ids listed by `GET /v1/models`; `None` when that endpoint failed.
    pub models: Option<Vec<String>>,
    /// The model the run sends.
    pub model: String,
    /// `POST /v1/chat/completions` answered a turn; `None` when the probe did not ask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<bool>,
    /// `POST /v1/responses` answered a turn; `None` when the probe did not ask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responses: Option<bool>,
    /// An A2A agent answered a `SendMessage`; `None` when the probe did not ask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a2a: Option<bool>,
    /// What the agent card declares, when the probe read one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_card: Option<AgentCardSummary>,
    pub reset: bool,
    pub inject: bool,
    pub memory_view: bool,
    pub mock_time: bool,
    pub notes: Vec<String>,
}

/// A capability a test may need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Requirement {
    /// `POST /control/session/reset`.
    Reset,
    /// `POST /control/memory/inject`.
    Inject,
    /// `X-Mock-Time` honoured (time travel).
    MockTime,
}

impl Requirement {
    pub fn describe(self) -> &'static str {
        match self {
            Requirement::Reset => "POST /control/session/reset",
            Requirement::Inject => "POST /control/memory/inject",
            Requirement::MockTime => "X-Mock-Time time travel",
        }
    }
}

impl Capabilities {
    pub fn has(&self, requirement: Requirement) -> bool {
        match requirement {
            Requirement::Reset => self.reset,
            Requirement::Inject => self.inject,
            Requirement::MockTime => self.mock_time,
        }
    }

    /// Why a test needing `requirements` cannot run here, or `None` when it can.
    pub fn missing(&self, requirements: &[Requirement]) -> Option<String> {
        let missing: Vec<&str> = requirements
            .iter()
            .filter(|r| !self.has(**r))
            .map(|r| r.describe())
            .collect();
        (!missing.is_empty()).then(|| {
            format!(
                "the target does not offer {} (capability probe)",
                missing.join(" or ")
            )
        })
    }
}

/// Mock times the probe sends: far from the real clock, and from each other.
fn probe_times() -> [DateTime<Utc>; 2] {
    [
        Utc.with_ymd_and_hms(2031, 7, 19, 8, 30, 0).unwrap(),
        Utc.with_ymd_and_hms(2029, 2, 11, 16, 45, 0).unwrap(),
    ]
}

/// Notes whether an optional endpoint answered, and says so.
fn works<T>(notes: &mut Vec<String>, endpoint: &str, outcome: Result<T, TargetError>) -> bool {
    match outcome {
        Ok(_) => {
            notes.push(format!("{endpoint} works"));
            true
        }
        Err(e) => {
            notes.push(format!("{endpoint} unavailable ({e})"));
            false
        }
    }
}

/// The user message of the probe's round trip (the one request a probe cannot do without).
pub const PROBE_GREETING: &str = "Hello.";

/// Which APIs the probe sends a turn through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiScope {
    /// Only the run's API, which must answer.
    Only(Api),
    /// Each API; at least one must answer (`judge probe`).
    Every,
}

/// Whether an answer says the endpoint does not exist here, rather than that it failed.
fn not_served(e: &TargetError) -> bool {
    matches!(e.status, Some(404 | 405))
}

/// What the probe's round trips found.
struct Served {
    chat: Option<bool>,
    responses: Option<bool>,
    a2a: Option<bool>,
    /// The API the rest of the probe talks through (the first that answered).
    spoken: Api,
}

/// Sends the probe's turn through each API of `scope` (`ctx` numbers each request).
async fn round_trips(
    client: &TargetClient,
    scope: ApiScope,
    mut ctx: impl FnMut() -> RequestContext,
    notes: &mut Vec<String>,
) -> Result<Served, TargetError> {
    let apis = match scope {
        ApiScope::Only(api) => vec![api],
        ApiScope::Every => vec![Api::Chat, Api::Responses, Api::A2a],
    };
    let (mut chat, mut responses, mut a2a) = (None, None, None);
    let mut spoken = None;
    let mut first_failure = None;
    for api in apis {
        let answered = match one_turn(client, api, &ctx(), PROBE_GREETING).await {
            Ok(reply) => {
                notes.push(format!("{api} round trip answered {:?}", reply.text));
                spoken.get_or_insert(api);
                true
            }
            Err(e) => {
                notes.push(format!("{} failed ({e})", api.endpoint()));
                match scope {
                    ApiScope::Only(_) if not_served(&e) => return Err(not_served_error(api, e)),
                    ApiScope::Only(_) => return Err(e),
                    ApiScope::Every => first_failure.get_or_insert(e),
                };
                false
            }
        };
        match api {
            Api::Chat => chat = Some(answered),
            Api::Responses => responses = Some(answered),
            Api::A2a => a2a = Some(answered),
        }
    }
    match (spoken, first_failure) {
        (Some(spoken), _) => Ok(Served {
            chat,
            responses,
            a2a,
            spoken,
        }),
        (None, Some(failure)) => Err(failure),
        (None, None) => unreachable!("a probe tries at least one API"),
    }
}

/// The run's API is not served: say so, and which APIs to use instead.
fn not_served_error(api: Api, e: TargetError) -> TargetError {
    let others: Vec<&str> = [Api::Chat, Api::Responses, Api::A2a]
        .into_iter()
        .filter(|a| *a != api)
        .map(Api::as_str)
        .collect();
    let message = format!(
        "the target does not serve the {} API ({} answered HTTP {}); use --api {}",
        api.title(),
        api.endpoint(),
        e.status.unwrap_or_default(),
        others.join(" or --api ")
    );
    TargetError { message, ..e }
}

/// Probes the target for a run that speaks Chat Completions, with its own session
/// (`session_id`). Fails only when no chat round trip works.
pub async fn probe(client: &TargetClient, session_id: &str) -> Result<Capabilities, TargetError> {
    probe_in(client, session_id, ApiScope::Only(Api::Chat)).await
}

/// Probes the target with its own session (`session_id`), sending a turn through the APIs of
/// `scope`. Fails when no turn works: for a run's API not served, with a message that names the
/// other API.
pub async fn probe_in(
    client: &TargetClient,
    session_id: &str,
    scope: ApiScope,
) -> Result<Capabilities, TargetError> {
    let mut notes = Vec::new();
    let mut request_no = 0u64;
    let mut ctx = |mock_time: Option<DateTime<Utc>>| {
        request_no += 1;
        RequestContext {
            session_id: session_id.to_owned(),
            mock_time,
            request_no,
        }
    };

    let models = match client.models().await {
        Ok(models) => {
            notes.push(format!("GET /v1/models listed {models:?}"));
            Some(models)
        }
        Err(e) => {
            notes.push(format!("GET /v1/models failed ({e})"));
            None
        }
    };
    let model = client
        .settings()
        .model
        .clone()
        .or_else(|| models.as_ref().and_then(|m| m.first().cloned()))
        .unwrap_or_else(|| "default".to_owned());

    // A reset first, so that the round trip starts from a clean probe session.
    let reset = works(
        &mut notes,
        "POST /control/session/reset",
        client.reset(&ctx(None)).await,
    );

    let served = round_trips(client, scope, || ctx(None), &mut notes).await?;
    let agent_card = client.a2a_known().map(|target| {
        notes.push(format!(
            "agent card at {} names the JSONRPC interface {} (A2A {})",
            target.card_url, target.url, target.protocol_version
        ));
        target.summary()
    });

    let inject_request = InjectRequest {
        facts: vec![InjectFact {
            text: "The probe word is heliotrope.".to_owned(),
            key: Some("probe word".to_owned()),
            observed_at: None,
            importance: None,
            ..InjectFact::default()
        }],
    };
    let inject = works(
        &mut notes,
        "POST /control/memory/inject",
        client.inject(&ctx(None), &inject_request).await,
    );

    let memory_view = works(
        &mut notes,
        "GET /control/memory",
        client.memory(&ctx(None)).await,
    );

    let times = probe_times();
    let mock_time = if memory_view {
        let mut honoured = true;
        for time in times {
            match client.memory(&ctx(Some(time))).await {
                Ok(view) if view.now == time => {}
                Ok(view) => {
                    notes.push(format!(
                        "X-Mock-Time ignored: GET /control/memory said now={} for X-Mock-Time {}",
                        view.now, time
                    ));
                    honoured = false;
                }
                Err(e) => {
                    notes.push(format!(
                        "X-Mock-Time check through GET /control/memory failed ({e})"
                    ));
                    honoured = false;
                }
            }
        }
        if honoured {
            notes.push(
                "X-Mock-Time honoured: GET /control/memory reported each mock time as now"
                    .to_owned(),
            );
        }
        honoured
    } else {
        let mut honoured = true;
        for time in times {
            let question = "What is today's date?";
            match one_turn(client, served.spoken, &ctx(Some(time)), question).await {
                Ok(reply) if mentions_date(&reply.text, time.date_naive()) => {}
                Ok(reply) => {
                    notes.push(format!(
                        "X-Mock-Time not shown to be honoured: asked today's date at {}, got {:?}",
                        time.date_naive(),
                        reply.text
                    ));
                    honoured = false;
                }
                Err(e) => {
                    notes.push(format!("X-Mock-Time check by chat failed ({e})"));
                    honoured = false;
                }
            }
        }
        if honoured {
            notes.push("X-Mock-Time honoured: the reply named each mock date".to_owned());
        }
        honoured
    };

    if reset && client.reset(&ctx(None)).await.is_err() {
        notes.push("cleanup reset of the probe session failed".to_owned());
    }

    Ok(Capabilities {
        models,
        model,
        chat: served.chat,
        responses: served.responses,
        a2a: served.a2a,
        agent_card,
        reset,
        inject,
        memory_view,
        mock_time,
        notes,
    })
}
