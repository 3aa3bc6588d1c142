//! Everything that talks to the target: the HTTP client, its resilience, the capability probe,
//! and how a conversation's turns are sent through each API (an A2A agent's through [`a2a`]).

pub mod a2a;
pub mod breaker;
pub mod client;
pub mod conversation;
pub mod error;
pub mod probe;
pub mod resilience;
pub mod telemetry;
pub mod trace;
pub mod turns;

pub use a2a::{A2aTarget, AgentCardSummary};
pub use breaker::BreakerPolicy;
pub use client::{ChatReply, Credentials, RawAnswer, RequestContext, TargetClient, TargetSettings};
pub use conversation::{RemoteMcp, TurnRequest, TurnSender, one_turn};
pub use error::{Failure, FailureKind, TargetError};
pub use probe::{ApiScope, Capabilities, PROBE_GREETING, Requirement, probe, probe_in};
pub use resilience::RetryPolicy;
pub use turns::{Api, ChainNeedsResponses, HistoryMode, TurnMode};
