//! The long-term-memory suite: seeded generators, deterministic scorers, the runner.

pub mod filler;
pub mod generators;
pub mod runner;
pub mod scoring;
pub mod script;
pub mod types;
pub mod vocab;

pub use script::{GenParams, Step, TestSpec};
pub use types::{TestType, generate_all};
