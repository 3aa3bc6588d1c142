//! The `sim` suite: persona simulations, agent injection and A/B comparison (design documents
//! 000, 001 and 003).
//!
//! - [`persona`]: personas in YAML (the shipped panel is embedded); [`canonical`]: canonical JSON,
//!   `sha256:` hashes and seed-derived ids;
//! - [`simulator`]: the scripted and the LLM user simulators;
//! - [`injection`]: external endpoints playing a persona slot (schema, privacy, redaction,
//!   resilience, metrics, fixtures);
//! - [`runner`]: conversations round by round; [`transcript`]: the document 003 JSON and the
//!   document 001 log;
//! - [`evaluate`]: deterministic checks; [`judge`]: the optional LLM judge; [`ratings`]: A/B
//!   statistics; [`results`]: `results.json`; [`report`]: JUnit and HTML;
//! - [`suite`]: one run into its directory; [`ab`]: two runs compared; [`replay`]: fixtures
//!   replayed against another agent.

pub mod ab;
// Canonical JSON and derived ids are shared with the apps suite; the old path stays valid.
pub use crate::canonical;
pub mod evaluate;
pub mod fidelity;
pub mod injection;
pub mod judge;
pub mod persona;
pub mod ratings;
pub mod replay;
pub mod report;
pub mod results;
pub mod runner;
pub mod simulator;
pub mod suite;
pub mod transcript;

pub use persona::Persona;
pub use runner::{Conversation, SimSettings};
pub use suite::{SimError, SimOutcome, SimRunConfig, SimulatorSpec, run_sim, run_sim_observed};
