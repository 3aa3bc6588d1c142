//! Benchmark suites. Only `ltm` exists so far.

pub mod ltm;
