//! Benchmark suites: `ltm` (long-term memory), `apps` (simulated applications), `sim` (persona
//! simulations, injection, A/B), `load` (the load generator), `membench` (the field's memory
//! benchmarks, LoCoMo and LongMemEval) and `conform` (OpenAI API conformance of any server);
//! `calibrate` reads runs of one suite against a ladder of targets and checks the suite orders them.
//! Every one is behind the one [`Suite`] trait that the CLI and `judge serve` read runs through,
//! and [`registry`] finds a suite by its kind.

pub mod apps;
pub mod calibrate;
pub mod compare;
pub mod concurrency;
pub mod conform;
pub mod load;
pub mod ltm;
pub mod membench;
pub mod model_judge;
pub mod registry;
pub mod sim;
pub mod suite;

pub use crate::endpoint::HistoryMode;
pub use registry::{SuiteVisitor, visit};
pub use suite::{Better, Figure, Headline, Setting, Suite, UnitScore, Units, WhenDifferent};
