//! Scenarios in YAML: the apps and their initial state, the user side (a script of turns, and an
//! optional persona id), a goal, and what the final state must be. Also pass^k over trials.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::AppRegistry;
use super::directive::{Directive, parse_message};
use super::grade::Expectations;
use super::world::AppSetup;
use protocol::apps::DIRECTIVE_MARKER as MARKER;

fn default_trials() -> u32 {
    3
}

/// One scenario file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub description: String,
    pub apps: Vec<AppSetup>,
    /// Every account holder of the world.
    pub agents: Vec<String>,
    /// The one the target plays.
    pub agent: String,
    /// Actions other agents take before the first turn (a request to pay, say).
    #[serde(default)]
    pub setup: Vec<SetupAction>,
    pub user: UserSide,
    /// What the user wants done, in words (for reports).
    pub goal: String,
    /// The graded part of the final state (partial, see [`super::grade`]).
    pub expected: Value,
    /// Paths that may change although `expected` does not name them.
    #[serde(default)]
    pub allowed_changes: Vec<String>,
    /// Phrases the agent must say (case-insensitive) in some reply.
    #[serde(default)]
    pub required_phrases: Vec<String>,
    /// Pins the whole final state: SHA-256 of its canonical JSON.
    #[serde(default)]
    pub expected_hash: Option<String>,
    #[serde(default = "default_trials")]
    pub trials: u32,
    /// A perfect agent's reply to each user turn, proving the scenario passable. `{{key}}` stands
    /// for the latest value of `key` in the agent's observations (a request id, say).
    #[serde(default)]
    pub reference: Vec<String>,
    /// Outcomes the scenario exercises (`insufficient_funds`, `unknown_recipient`...), for coverage.
    #[serde(default)]
    pub covers: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserSide {
    #[serde(default)]
    pub persona: Option<String>,
    pub turns: Vec<String>,
}

/// `agent` runs `action`, written as a directive without its marker:
/// `paypal.request_money(from="alice", amount=25)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetupAction {
    pub agent: String,
    pub action: String,
}

impl SetupAction {
    pub fn directive(&self) -> Result<Directive, ScenarioError> {
        let parsed = parse_message(&format!("{MARKER} {}", self.action));
        match parsed.directives.into_iter().next() {
            Some(Ok(directive)) if parsed.prose.is_empty() => Ok(directive),
            Some(Err(e)) => Err(ScenarioError::Invalid(e.to_string())),
            _ => Err(ScenarioError::Invalid(format!(
                "setup action `{}` is not one directive",
                self.action
            ))),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Yaml {
        path: PathBuf,
        #[source]
        source: serde_norway::Error,
    },
    #[error("invalid scenario: {0}")]
    Invalid(String),
}

impl Scenario {
    pub fn from_yaml(text: &str) -> Result<Self, ScenarioError> {
        serde_norway::from_str(text).map_err(|source| ScenarioError::Yaml {
            path: PathBuf::from("<text>"),
            source,
        })
    }

    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
            path: path.to_owned(),
            source,
        })?;
        serde_norway::from_str(&text).map_err(|source| ScenarioError::Yaml {
            path: path.to_owned(),
            source,
        })
    }

    /// Every `*.yaml` / `*.yml` file of `dir`, sorted by file name.
    pub fn load_dir(dir: &Path) -> Result<Vec<Self>, ScenarioError> {
        let io = |source| ScenarioError::Io {
            path: dir.to_owned(),
            source,
        };
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(io)?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
            .collect();
        paths.sort();
        paths.iter().map(|p| Self::load(p)).collect()
    }

    /// Checks what YAML typing cannot: known apps, the agent among the agents, readable setup
    /// actions, one reference reply per turn.
    pub fn validate(&self, registry: &AppRegistry) -> Result<(), ScenarioError> {
        let fail = |reason: String| Err(ScenarioError::Invalid(format!("{}: {reason}", self.id)));
        if let Some(app) = self.apps.iter().find(|a| !registry.contains(&a.id)) {
            return fail(format!("unknown app `{}`", app.id));
        }
        if !self.agents.contains(&self.agent) {
            return fail(format!("agent `{}` is not among the agents", self.agent));
        }
        if self.user.turns.is_empty() {
            return fail("the user has no turns".to_owned());
        }
        if self.trials == 0 {
            return fail("trials must be at least 1".to_owned());
        }
        if !self.reference.is_empty() && self.reference.len() != self.user.turns.len() {
            return fail(format!(
                "{} reference replies for {} turns",
                self.reference.len(),
                self.user.turns.len()
            ));
        }
        for action in &self.setup {
            if !self.agents.contains(&action.agent) {
                return fail(format!("setup agent `{}` is unknown", action.agent));
            }
            action.directive()?;
        }
        Ok(())
    }

    pub fn expectations(&self) -> Expectations<'_> {
        Expectations {
            expected: &self.expected,
            allowed_changes: &self.allowed_changes,
            required_phrases: &self.required_phrases,
            expected_hash: self.expected_hash.as_deref(),
        }
    }
}

/// pass^k estimated from `passed` successes in `trials` trials: the chance that `k` trials drawn
/// without replacement all pass, C(passed, k) / C(trials, k) (τ-bench's estimator).
pub fn pass_hat_k(trials: u32, passed: u32, k: u32) -> Option<f64> {
    if k == 0 || k > trials || passed > trials {
        return None;
    }
    if passed < k {
        return Some(0.0);
    }
    // Product form of the ratio of binomials, exact enough and free of overflow.
    Some(
        (0..k)
            .map(|i| f64::from(passed - i) / f64::from(trials - i))
            .product(),
    )
}

/// pass@k: the chance that at least one of `k` trials drawn without replacement passes.
pub fn pass_at_k(trials: u32, passed: u32, k: u32) -> Option<f64> {
    if k == 0 || k > trials || passed > trials {
        return None;
    }
    let failed = trials - passed;
    if failed < k {
        return Some(1.0);
    }
    let all_fail: f64 = (0..k)
        .map(|i| f64::from(failed - i) / f64::from(trials - i))
        .product();
    Some(1.0 - all_fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_hat_k_and_pass_at_k() {
        assert_eq!(pass_hat_k(3, 3, 3), Some(1.0));
        assert_eq!(pass_hat_k(3, 2, 3), Some(0.0));
        assert_eq!(pass_hat_k(4, 2, 1), Some(0.5));
        assert!((pass_hat_k(4, 3, 2).unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(pass_at_k(3, 1, 3), Some(1.0));
        assert_eq!(pass_at_k(3, 0, 2), Some(0.0));
        assert_eq!(pass_hat_k(2, 1, 3), None);
    }
}
