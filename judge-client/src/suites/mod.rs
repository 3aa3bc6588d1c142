//! Benchmark suites: `ltm` (long-term memory), `sim` (persona simulations, injection, A/B),
//! `load` (the load generator) and `conform` (OpenAI API conformance of any server).

pub mod conform;
pub mod load;
pub mod ltm;
pub mod sim;
