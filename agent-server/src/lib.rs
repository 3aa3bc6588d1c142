//! agent-server: an OpenAI-compatible chat server that gives a model long-term memory.
//!
//! The request pipeline, in order: [`http`] parses and authenticates, the [`agent`] recalls from
//! [`memory`], asks the [`llm`] for a reply (calling remote [`mcp`] tools between rounds when the
//! request offers them), extracts and promotes what to remember, and stores the turn; only then
//! does [`http`] send the reply. See ARCHITECTURE.md for the code map.
//!
//! Public are only the modules the binary, the integration tests and the benchmarks use; the rest
//! is `pub(crate)`, and `unreachable_pub` keeps items inside it from claiming more.

#![warn(unreachable_pub)]

pub(crate) mod agent;
pub mod config;
pub mod embed;
pub(crate) mod error;
pub(crate) mod http;
pub mod llm;
pub(crate) mod mcp;
pub mod memory;
pub(crate) mod outbound;
pub mod startup;
pub mod task;
pub mod telemetry;
pub(crate) mod text;
