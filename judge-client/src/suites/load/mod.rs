//! `judge load`: a load generator for any OpenAI-compatible chat endpoint.
//!
//! - [`schedule`]: closed loop (fixed concurrency) and open loop (constant or Poisson arrivals on
//!   the clock), the stop gate (count, duration, warm-up);
//! - [`workload`]: seeded prompt and output length distributions, pre-rendered request bodies;
//! - [`exchange`]: one request, streamed or not, timed and classified;
//! - [`metrics`]: HDR histograms of latency, TTFT, ITL and TPOT (vLLM's definitions);
//! - [`slo`]: `--slo` parsing and goodput;
//! - [`cpu`]: the judge's own CPU time;
//! - [`runner`]: worker threads (one actix runtime and one awc client each) and the progress;
//! - [`report`]: `results.json` and `report.html`.

use std::path::PathBuf;

pub mod cpu;
pub mod exchange;
pub mod metrics;
pub mod report;
pub mod runner;
pub mod schedule;
pub mod slo;
pub mod workload;

pub use report::{LoadResults, StepResult};
pub use runner::{LiveSnapshot, LoadConfig, LoadProgress, NoProgress, run};
pub use schedule::{Arrivals, LoadLevel};
pub use slo::{Slo, SloError, Slos, parse_duration};
pub use workload::LengthDist;

/// Why a load run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Slo(#[from] SloError),
    #[error(
        "{0} is not on this machine; a load generator only targets loopback addresses unless --allow-remote is given"
    )]
    Remote(String),
    #[error("no model found at {url} ({message}); pass --model")]
    Model { url: String, message: String },
    #[error("writing the run directory: {0}")]
    Write(#[from] crate::rundir::RunDirError),
    #[error("a worker thread panicked")]
    Worker,
}

/// A finished load run.
#[derive(Debug)]
pub struct LoadOutcome {
    pub results: LoadResults,
    /// The run directory holding `results.json` and `report.html`.
    pub dir: PathBuf,
}
