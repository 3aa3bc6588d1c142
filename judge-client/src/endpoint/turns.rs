//! How a conversation's turns reach the target: which API carries them ([`Api`]: OpenAI's Chat
//! Completions or Responses API, or the Agent2Agent protocol) and how much of the conversation
//! each request carries ([`HistoryMode`]), together a [`TurnMode`]. Every suite that converses
//! (ltm, apps, sim, membench) and the load generator take these; [`super::conversation`] sends
//! the requests they describe.
//!
//! A2A is an `--api` value rather than a flag of its own: it is one more way the same turns
//! reach the target, combined with the same history modes, recorded and compared where the
//! API is (and `judge membench` already has a `--protocol`, how its history is ingested).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The API a turn goes through.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// `POST /v1/chat/completions`.
    #[default]
    Chat,
    /// `POST /v1/responses` (and its retrieval, input items and deletion).
    Responses,
    /// A2A 1.0 over JSON-RPC: `SendMessage` to the interface the agent card at
    /// `/.well-known/agent-card.json` names (docs/contracts/a2a.md).
    A2a,
}

impl Api {
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Responses => "responses",
            Api::A2a => "a2a",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Api::Chat => "Chat Completions",
            Api::Responses => "Responses",
            Api::A2a => "A2A",
        }
    }

    /// Where a turn is posted, below the API base (`…/v1`); for A2A, where the agent card is,
    /// below the base URL (its turns go to the interface the card names).
    pub fn path(self) -> &'static str {
        match self {
            Api::Chat => "/chat/completions",
            Api::Responses => "/responses",
            Api::A2a => protocol::a2a::AGENT_CARD_PATH,
        }
    }

    /// The request that finds out whether the target serves this API, as the probe's notes say
    /// it: `POST /v1/chat/completions`, `GET /.well-known/agent-card.json`, ...
    pub fn endpoint(self) -> String {
        match self {
            Api::A2a => format!("GET {}", self.path()),
            api => format!("POST /v1{}", api.path()),
        }
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown API {0:?}; use `chat`, `responses` or `a2a`")]
pub struct UnknownApi(pub String);

impl FromStr for Api {
    type Err = UnknownApi;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "chat" => Ok(Api::Chat),
            "responses" => Ok(Api::Responses),
            "a2a" => Ok(Api::A2a),
            other => Err(UnknownApi(other.to_owned())),
        }
    }
}

/// What each request of a conversation carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum HistoryMode {
    /// Only the new user turn: memory must come from the agent (the default).
    #[default]
    New,
    /// The whole conversation of the session so far, to benchmark stateless models fairly.
    Full,
    /// The new turn with the `previous_response_id` of the session's last response: the server
    /// holds the conversation (the Responses API only).
    Chain,
}

impl HistoryMode {
    pub fn as_str(self) -> &'static str {
        match self {
            HistoryMode::New => "new",
            HistoryMode::Full => "full",
            HistoryMode::Chain => "chain",
        }
    }

    /// What the mode sends, in words for a report.
    pub fn meaning(self) -> &'static str {
        match self {
            HistoryMode::New => "only the new user turn is sent; memory must come from the agent",
            HistoryMode::Full => "the whole conversation is sent with every turn",
            HistoryMode::Chain => {
                "the new turn is sent with the previous response's id; the server holds the conversation"
            }
        }
    }
}

impl fmt::Display for HistoryMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown history mode {0:?}; use `new`, `full` or `chain`")]
pub struct UnknownHistoryMode(pub String);

impl FromStr for HistoryMode {
    type Err = UnknownHistoryMode;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "new" => Ok(HistoryMode::New),
            "full" => Ok(HistoryMode::Full),
            "chain" => Ok(HistoryMode::Chain),
            other => Err(UnknownHistoryMode(other.to_owned())),
        }
    }
}

/// A combination of API and history mode that cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--history chain needs --api responses: only the Responses API chains requests with previous_response_id (use --history new or full with --api chat or a2a)"
)]
pub struct ChainNeedsResponses;

/// How a conversation's turns are sent: through which API, carrying how much of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TurnMode {
    pub api: Api,
    pub history: HistoryMode,
}

impl TurnMode {
    /// The mode, when the API can carry the history that way.
    pub fn new(api: Api, history: HistoryMode) -> Result<Self, ChainNeedsResponses> {
        if history == HistoryMode::Chain && api != Api::Responses {
            return Err(ChainNeedsResponses);
        }
        Ok(Self { api, history })
    }

    /// How the mode reads in a run's description: `history: new` through Chat Completions,
    /// `responses API, history: chain` through the Responses API.
    pub fn describe(&self) -> String {
        match self.api {
            Api::Chat => format!("history: {}", self.history),
            api => format!("{api} API, history: {}", self.history),
        }
    }

    /// [`TurnMode::describe`] for a description that names the mode only when it is not the
    /// suite's usual one (Chat Completions with `default_history`): empty then, so those
    /// descriptions read as they always have.
    pub fn annotation(&self, default_history: HistoryMode) -> String {
        if self.api == Api::Chat && self.history == default_history {
            String::new()
        } else {
            self.describe()
        }
    }
}

impl fmt::Display for TurnMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "api {}, history {}", self.api, self.history)
    }
}

/// The line a comparison of two runs shows when they sent their turns differently (`None`: a
/// run that does not record it). The runs still compare; the line says what else differed.
pub fn difference(a: Option<TurnMode>, b: Option<TurnMode>) -> Option<String> {
    let show = |t: Option<TurnMode>| t.map_or("not recorded".to_owned(), |t| t.to_string());
    (a != b).then(|| {
        format!(
            "note: the runs sent their turns differently (A: {}; B: {}): scores may differ for that too",
            show(a),
            show(b)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_needs_the_responses_api() {
        assert_eq!(
            TurnMode::new(Api::Chat, HistoryMode::Chain),
            Err(ChainNeedsResponses)
        );
        assert!(ChainNeedsResponses.to_string().contains("--api responses"));
        for history in [HistoryMode::New, HistoryMode::Full, HistoryMode::Chain] {
            assert!(TurnMode::new(Api::Responses, history).is_ok());
        }
        assert!(TurnMode::new(Api::Chat, HistoryMode::Full).is_ok());
    }

    #[test]
    fn names_parse_back() {
        for api in [Api::Chat, Api::Responses, Api::A2a] {
            assert_eq!(api.as_str().parse::<Api>(), Ok(api));
        }
        assert_eq!(serde_json::to_value(Api::A2a).unwrap(), "a2a");
        assert!(TurnMode::new(Api::A2a, HistoryMode::Chain).is_err());
        assert!(TurnMode::new(Api::A2a, HistoryMode::Full).is_ok());
        for history in [HistoryMode::New, HistoryMode::Full, HistoryMode::Chain] {
            assert_eq!(history.as_str().parse::<HistoryMode>(), Ok(history));
        }
        assert!("both".parse::<Api>().is_err());
        let json = serde_json::to_value(TurnMode {
            api: Api::Responses,
            history: HistoryMode::Chain,
        })
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({"api": "responses", "history": "chain"})
        );
    }

    #[test]
    fn a_comparison_names_a_difference_only() {
        let chat = Some(TurnMode::default());
        let chain = TurnMode::new(Api::Responses, HistoryMode::Chain).ok();
        assert_eq!(difference(chat, chat), None);
        assert_eq!(difference(None, None), None);
        let note = difference(chat, chain).unwrap();
        assert!(
            note.contains("A: api chat, history new; B: api responses, history chain"),
            "{note}"
        );
        assert!(difference(None, chat).unwrap().contains("A: not recorded"));
    }

    #[test]
    fn annotations_leave_the_default_alone() {
        let chat_new = TurnMode::default();
        assert_eq!(chat_new.describe(), "history: new");
        assert_eq!(chat_new.annotation(HistoryMode::New), "");
        assert_eq!(chat_new.annotation(HistoryMode::Full), "history: new");
        let chain = TurnMode::new(Api::Responses, HistoryMode::Chain).unwrap();
        assert_eq!(
            chain.annotation(HistoryMode::New),
            "responses API, history: chain"
        );
    }
}
