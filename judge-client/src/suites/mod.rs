//! Benchmark suites: `ltm` (long-term memory), `sim` (persona simulations, injection, A/B) and
//! `load` (the load generator).

pub mod load;
pub mod ltm;
pub mod membench;
pub mod sim;
