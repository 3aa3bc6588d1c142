//! An LTM run's configuration, which goes into the manifest (and is read back by `--resume`).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{GenParams, Phrasing, TestSpec, TestType, generate_all};
use crate::endpoint::{Api, ChainNeedsResponses, HistoryMode, TargetSettings, TurnMode};

/// Settings of an LTM run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LtmConfig {
    pub seed: u64,
    /// Seeded trials per test type.
    pub trials: u32,
    /// Filler between what is told and what is asked, in cl100k tokens.
    pub span_tokens: u32,
    /// Largest single filler turn, in tokens.
    pub filler_turn_tokens: u32,
    pub history: HistoryMode,
    /// The API the turns go through.
    #[serde(default)]
    pub api: Api,
    /// The set of phrasings the user turns are written in (`standard` in runs made before the
    /// choice existed).
    #[serde(default)]
    pub phrasing: Phrasing,
    /// Tests run at once. Does not change content or scores: every test has its own sessions.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    pub types: Vec<TestType>,
}

fn default_concurrency() -> usize {
    4
}

impl Default for LtmConfig {
    fn default() -> Self {
        Self {
            seed: 1,
            trials: 3,
            span_tokens: 1000,
            filler_turn_tokens: 250,
            history: HistoryMode::New,
            api: Api::Chat,
            phrasing: Phrasing::Standard,
            concurrency: default_concurrency(),
            types: TestType::ALL.to_vec(),
        }
    }
}

impl LtmConfig {
    /// How the run's turns are sent.
    pub fn turns(&self) -> Result<TurnMode, ChainNeedsResponses> {
        TurnMode::new(self.api, self.history)
    }

    /// What the generators need of this configuration.
    pub fn gen_params(&self) -> GenParams {
        GenParams {
            run_seed: self.seed,
            span_tokens: self.span_tokens,
            filler_turn_tokens: self.filler_turn_tokens,
            phrasing: self.phrasing,
        }
    }

    /// Every test of a run with this configuration, in run order.
    pub fn specs(&self) -> Vec<TestSpec> {
        generate_all(&self.types, self.trials, self.gen_params())
    }
}

/// Short hash of everything that decides a run's content and its target.
pub fn config_hash(config: &LtmConfig, target: &TargetSettings) -> String {
    let json = serde_json::to_string(&(config, target)).unwrap_or_default();
    Sha256::digest(json.as_bytes())
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}
