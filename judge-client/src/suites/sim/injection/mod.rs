//! Agent injection (docs/contracts/agent-injection.md): a persona slot of the panel is played by an external
//! endpoint instead of the judge's own simulator.
//!
//! - [`config`]: the YAML configuration of docs/contracts/agent-injection.md, resolved into [`EndpointSpec`]s;
//! - [`schema`]: the `agentworld` request and response (schema version 1.0);
//! - [`privacy`]: what persona context each privacy tier sends; [`redact`]: PII redaction;
//! - [`endpoint`]: the HTTP client with timeouts, 429 backoff, circuit breaker, in-flight and QPS
//!   caps, and its per-endpoint [`metrics`];
//! - [`fixtures`]: record and replay of the exact requests sent.

pub mod config;
pub mod endpoint;
pub mod fixtures;
pub mod metrics;
pub mod privacy;
pub mod redact;
pub mod schema;

pub use config::{EndpointSpec, FallbackStrategy, InjectionPlan, PrivacyTier, Protocol};
pub use endpoint::InjectedEndpoint;
pub use metrics::EndpointMetrics;
