//! What an LTM run records in its `manifest.json` beside the envelope every run has
//! ([`crate::rundir::Manifest`]); `--resume` and `judge merge` read it back.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::config::LtmConfig;
use crate::endpoint::{Capabilities, TargetSettings};
use crate::rundir::{Manifest, Shard};

/// An LTM run's manifest.
pub type LtmManifest = Manifest<LtmDetails>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LtmDetails {
    /// Times the run was resumed.
    #[serde(default)]
    pub resumed_at: Vec<DateTime<Utc>>,
    pub seed: u64,
    pub config: LtmConfig,
    pub config_hash: String,
    pub target: TargetSettings,
    /// `openai` (the only protocol so far).
    pub protocol: String,
    pub tokenizer: String,
    pub capabilities: Capabilities,
    /// Tests this run directory was to hold (a shard's share of the plan).
    pub tests_planned: usize,
    /// Set when this run is one shard of a benchmark (`judge ltm --shard`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// The run ids of the shards a merged run was made from (`judge merge`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<String>,
    /// The LLM grader's endpoint and model (`--grader-endpoint`; its key is never recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grader: Option<TargetSettings>,
}
