//! Benchmark suites: `ltm` (long-term memory) and `sim` (persona simulations, injection, A/B).

pub mod ltm;
pub mod sim;
