//! agent-server: an OpenAI-compatible chat server that gives a model long-term memory.
//!
//! The request pipeline, in order: [`http`] parses and authenticates, the [`agent`] recalls from
//! [`memory`], asks the [`llm`] for a reply, extracts and promotes what to remember, and stores the
//! turn; only then does [`http`] send the reply. See ARCHITECTURE.md for the code map.

pub mod agent;
pub mod config;
pub mod embed;
pub mod error;
pub mod http;
pub mod llm;
pub mod memory;
pub mod outbound;
pub mod startup;
pub mod task;
pub mod telemetry;
pub mod text;
