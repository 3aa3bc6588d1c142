//! Everything that talks to the target: the HTTP client, its resilience, the capability probe.

pub mod breaker;
pub mod client;
pub mod error;
pub mod probe;
pub mod resilience;
pub mod telemetry;
pub mod trace;

pub use breaker::BreakerPolicy;
pub use client::{ChatReply, Credentials, RawAnswer, RequestContext, TargetClient, TargetSettings};
pub use error::{Failure, FailureKind, TargetError};
pub use probe::{Capabilities, PROBE_GREETING, Requirement, probe};
pub use resilience::RetryPolicy;
