//! Benchmark suites: `ltm` (long-term memory), `apps` (simulated applications), `sim` (persona
//! simulations, injection, A/B) and `load` (the load generator), each behind the one [`Suite`]
//! trait that the CLI and `judge serve` read runs through.

pub mod apps;
pub mod history;
pub mod load;
pub mod ltm;
pub mod membench;
pub mod sim;
pub mod suite;

pub use history::HistoryMode;
pub use suite::{Better, Figure, Headline, Suite, UnitScore, Units};
