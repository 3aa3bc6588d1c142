//! `manifest.json`: what ran, against what, with which settings and capabilities. This is the one
//! file with wall-clock times (besides `timing.json`); `--resume` reads its configuration back.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::suites::ltm::LtmConfig;
use crate::suites::ltm::shard::Shard;
use crate::target::{Capabilities, TargetSettings};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    Running,
    Complete,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub judge_version: String,
    pub run_id: String,
    pub suite: String,
    pub state: RunState,
    pub created_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<DateTime<Utc>>,
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
}
