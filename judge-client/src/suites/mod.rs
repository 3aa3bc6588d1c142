//! Benchmark suites: `ltm` (long-term memory) and `load` (the load generator).

pub mod load;
pub mod ltm;
