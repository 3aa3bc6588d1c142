//! The agentwall judge: benchmarks any OpenAI-compatible endpoint over HTTP only.
//!
//! - [`target`]: the HTTP client toward the target, its resilience and the capability probe;
//! - [`suites`]: benchmark suites (`ltm`, long-term memory; `sim`, persona simulations, agent
//!   injection and A/B comparison);
//! - [`report`]: results, JUnit, the HTML report, session logs, statistics, comparisons;
//! - [`run`]: a run directory from start (or resume) to its final files;
//! - [`shard`]: one benchmark split across processes (`--shard`) and merged back (`judge merge`).

pub mod apps;
pub mod canonical;
pub mod config;
pub mod report;
pub mod run;
pub mod serve;
pub mod shard;
pub mod suites;
pub mod target;

pub use config::{HistoryMode, LtmConfig};
