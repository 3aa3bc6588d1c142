//! Benchmark suites: `ltm` (long-term memory), `apps` (simulated applications), `sim` (persona
//! simulations, injection, A/B) and `load` (the load generator).

pub mod apps;
pub mod history;
pub mod load;
pub mod ltm;
pub mod sim;

pub use history::HistoryMode;
