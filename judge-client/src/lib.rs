//! The agentwall judge: benchmarks any OpenAI-compatible endpoint over HTTP only.
//!
//! - [`endpoint`]: the HTTP client toward the target, its resilience and the capability probe;
//! - [`suites`]: the benchmark suites, each with its run directory and its report: `ltm`
//!   (long-term memory, sharded runs and `judge merge`), `apps` (simulated applications graded
//!   by their final state), `sim` (persona simulations, agent injection, A/B comparison),
//!   `load` (throughput and latency), `membench` (LoCoMo and LongMemEval) and `conform` (API
//!   conformance);
//! - [`rundir`]: the run-directory contract every suite writes by (unique folder, atomic files,
//!   the typed manifest with the run's state, checkpoints, shards);
//! - [`report`]: the kit every suite's report is built with (page shell, charts, escaping, JUnit,
//!   statistics, session logs);
//! - [`serve`]: `judge serve`, the HTTP API and dashboard over the run directories;
//! - [`text`]: reading what a model wrote (normalisation, mentions, dates in words);
//! - [`canonical`]: canonical JSON and its `sha256:` hashes.

pub mod canonical;
pub mod endpoint;
pub mod report;
pub mod rundir;
pub mod serve;
pub mod suites;
pub mod text;

pub use suites::HistoryMode;
pub use suites::ltm::LtmConfig;
