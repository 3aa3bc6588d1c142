//! The long-term-memory suite: seeded generators, deterministic scorers, the runner, and its run
//! directory from start (or resume) to its final files, sharded or not.
//!
//! - [`types`], [`generators`], [`filler`], [`vocab`], [`script`]: the seeded test plan;
//! - [`runner`] plays one test, [`scoring`] scores its replies;
//! - [`run`] takes a run directory from start (or `--resume`) to its final files, [`shard`]
//!   splits the plan across processes and merges the parts (`judge merge`);
//! - [`config`], [`manifest`], [`results`], [`summary`]: what a run is asked and what it writes;
//!   [`html`], [`junit`], [`logs`] render it; [`compare`] is `judge compare`.

pub mod compare;
pub mod config;
pub mod filler;
pub mod generators;
pub mod html;
pub mod junit;
pub mod logs;
pub mod manifest;
pub mod results;
pub mod run;
pub mod runner;
pub mod scoring;
pub mod script;
pub mod shard;
pub mod summary;
pub mod types;
pub mod vocab;

pub use config::LtmConfig;
pub use script::{GenParams, Step, TestSpec};
pub use types::{TestType, generate_all};
