//! The `sim` suite: persona simulations, agent injection and A/B comparison (docs/contracts/agent-injection.md,
//! docs/contracts/run-log.md and docs/contracts/transcript.md).
//!
//! - [`persona`]: personas in YAML (the shipped panel is embedded); [`canonical`]: canonical JSON,
//!   `sha256:` hashes and seed-derived ids;
//! - [`simulator`]: the scripted and the LLM user simulators;
//! - [`injection`]: external endpoints playing a persona slot (schema, privacy, redaction,
//!   resilience, metrics, fixtures);
//! - [`runner`]: conversations round by round; [`transcript`]: the transcript JSON (docs/contracts/transcript.md) and the
//!   run log (docs/contracts/run-log.md);
//! - [`evaluate`]: deterministic checks; [`judge`]: the optional LLM judge; [`ratings`]: A/B
//!   statistics; [`results`]: `results.json`; [`report`]: JUnit and HTML;
//! - [`suite`]: one run into its directory; [`ab`]: two runs compared; [`replay`]: fixtures
//!   replayed against another agent.

pub mod ab;
// Canonical JSON and derived ids are shared with the apps suite; the old path stays valid.
pub use crate::canonical;
pub mod evaluate;
pub mod fidelity;
pub mod injection;
pub mod judge;
pub mod persona;
pub mod ratings;
pub mod replay;
pub mod report;
pub mod results;
pub mod runner;
pub mod simulator;
pub mod suite;
pub mod transcript;

pub use persona::Persona;
pub use runner::{Conversation, SimSettings};
pub use suite::{SimError, SimOutcome, SimRunConfig, SimulatorSpec, run_sim, run_sim_observed};

use crate::suites::{Better, Figure, Headline, Suite, UnitScore, Units};

/// The persona-simulation suite ([`Suite`]): judged on the goal rate, compared conversation by
/// conversation.
pub struct Sim;

impl Suite for Sim {
    const KIND: &'static str = "sim";
    const UNIT: &'static str = "conversation";
    type Results = results::SimResults;

    const HEADLINE: Option<Headline> = Some(Headline {
        label: "goal rate",
        units: Units::Fraction,
    });

    fn headline(r: &Self::Results) -> Option<f64> {
        r.summary.goal_rate
    }

    fn seed(r: &Self::Results) -> Option<u64> {
        Some(r.seed)
    }

    fn figures(r: &Self::Results) -> Vec<Figure> {
        let s = &r.summary;
        let count = |n: usize| Some(n as f64);
        vec![
            Figure::new("goal_rate", s.goal_rate, Better::Higher),
            Figure::new("mean_score", s.mean_score, Better::Higher),
            Figure::new(
                "mean_turns_to_resolution",
                s.mean_turns_to_resolution,
                Better::Lower,
            ),
            Figure::new("safety_hits", count(s.safety_hits), Better::Lower),
            Figure::new("refusals", count(s.refusals), Better::Lower),
            Figure::new("empty_replies", count(s.empty_replies), Better::Lower),
            Figure::new("overlong_replies", count(s.overlong_replies), Better::Lower),
            Figure::new("repeated_replies", count(s.repeated_replies), Better::Lower),
            Figure::new("fallback_turns", count(s.fallback_turns), Better::Lower),
            Figure::new("injected_mean_score", s.injected_mean_score, Better::Higher),
        ]
    }

    fn units(r: &Self::Results) -> Vec<UnitScore> {
        r.conversations
            .iter()
            .map(|c| {
                let mut unit = UnitScore::new(
                    format!("{}#{}", c.persona_id, c.trial),
                    c.persona_id.clone(),
                    Some(c.checks.score),
                    c.checks.goal_reached,
                );
                unit.excluded = c.excluded.clone();
                unit
            })
            .collect()
    }

    fn turns(r: &Self::Results) -> Option<crate::endpoint::TurnMode> {
        Some(crate::endpoint::TurnMode {
            api: r.api,
            history: r.history,
        })
    }

    /// Trials of one persona are repeated trials.
    const REPEATED_TRIALS: bool = true;
}

/// An A/B run ([`Suite`]): already a comparison of two targets, judged on A's share of the
/// decisive pairs; it has no units of its own to pair with another run.
pub struct Ab;

impl Suite for Ab {
    const KIND: &'static str = "ab";
    const UNIT: &'static str = "pair";
    type Results = ab::AbResults;

    const HEADLINE: Option<Headline> = Some(Headline {
        label: "A's share of decisive pairs",
        units: Units::Fraction,
    });

    fn headline(r: &Self::Results) -> Option<f64> {
        r.test.win_share_a
    }

    fn seed(_: &Self::Results) -> Option<u64> {
        None
    }

    fn figures(r: &Self::Results) -> Vec<Figure> {
        vec![
            Figure::new("goal_rate_a", r.goal_rate_a, Better::Higher),
            Figure::new("goal_rate_b", r.goal_rate_b, Better::Higher),
        ]
    }

    fn units(_: &Self::Results) -> Vec<UnitScore> {
        Vec::new()
    }
}
