//! `judge load`: a load generator for any OpenAI-compatible chat endpoint.
//!
//! - [`schedule`]: closed loop (fixed concurrency) and open loop (constant or Poisson arrivals on
//!   the clock), the stop gate (count, duration, warm-up);
//! - [`workload`]: seeded prompt and output length distributions, pre-rendered request bodies;
//! - [`conversation`]: `--turns`: virtual users holding a session for a conversation, their
//!   messages from a seeded generator, the history left to the target or sent whole;
//! - [`exchange`]: one request, streamed or not, timed and classified;
//! - [`metrics`]: HDR histograms of latency, TTFT, ITL and TPOT (vLLM's definitions);
//! - [`slo`]: `--slo` parsing and goodput;
//! - [`cpu`]: the judge's own CPU time;
//! - [`runner`]: worker threads (one actix runtime and one awc client each) and the progress;
//! - [`report`]: `results.json` and `report.html`.

use std::path::PathBuf;

pub mod conversation;
pub mod cpu;
pub mod exchange;
pub mod metrics;
pub mod report;
pub mod runner;
pub mod schedule;
pub mod slo;
pub mod workload;

pub use conversation::{Conversations, History};
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
    /// `--api a2a`: the agent card could not be read, or does not fit the run.
    #[error("A2A agent card at {url}: {message}")]
    AgentCard { url: String, message: String },
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

use crate::report::stats::mean;
use crate::suites::{Better, Figure, Headline, Suite, UnitScore};

/// The load suite ([`Suite`]): no headline (its figures are per load level), compared level by
/// level; the run's figures are each level's figure averaged over the levels.
pub struct Load;

/// A load level's figures.
fn level_figures(step: &StepResult) -> Vec<Figure> {
    let p50 = |p: &Option<metrics::Percentiles>| p.map(|p| p.p50_ms);
    vec![
        Figure::new(
            "requests_per_s",
            Some(step.throughput.requests_per_s),
            Better::Higher,
        ),
        Figure::new(
            "output_tokens_per_s",
            Some(step.throughput.output_tokens_per_s),
            Better::Higher,
        ),
        Figure::new(
            "goodput_per_s",
            step.throughput.goodput_per_s,
            Better::Higher,
        ),
        Figure::new("error_rate", Some(step.requests.error_rate), Better::Lower),
        Figure::new("latency_p50_ms", p50(&step.latency), Better::Lower),
        Figure::new(
            "latency_p99_ms",
            step.latency.map(|p| p.p99_ms),
            Better::Lower,
        ),
        Figure::new("ttft_p50_ms", p50(&step.ttft), Better::Lower),
        Figure::new("itl_p50_ms", p50(&step.itl), Better::Lower),
    ]
}

impl Suite for Load {
    const KIND: &'static str = "load";
    const UNIT: &'static str = "load level";
    type Results = LoadResults;

    const HEADLINE: Option<Headline> = None;
    const NOISE_FLOOR: bool = false;

    fn headline(_: &Self::Results) -> Option<f64> {
        None
    }

    fn seed(r: &Self::Results) -> Option<u64> {
        Some(r.seed)
    }

    fn figures(r: &Self::Results) -> Vec<Figure> {
        let levels: Vec<Vec<Figure>> = r.steps.iter().map(level_figures).collect();
        let Some(first) = levels.first() else {
            return Vec::new();
        };
        first
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let values: Vec<f64> = levels.iter().filter_map(|l| l[i].value).collect();
                Figure::new(f.name, mean(&values), f.better)
            })
            .collect()
    }

    fn units(r: &Self::Results) -> Vec<UnitScore> {
        r.steps
            .iter()
            .map(|step| UnitScore {
                figures: level_figures(step),
                ..UnitScore::new(
                    step.label.clone(),
                    step.label.clone(),
                    Some(1.0 - step.requests.error_rate),
                    step.requests.failed == 0,
                )
            })
            .collect()
    }

    /// Every load request is one new turn.
    fn turns(r: &Self::Results) -> Option<crate::endpoint::TurnMode> {
        Some(crate::endpoint::TurnMode {
            api: r.api,
            history: crate::endpoint::HistoryMode::New,
        })
    }
}
