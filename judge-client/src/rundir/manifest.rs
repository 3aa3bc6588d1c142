//! `manifest.json`: what ran, against what, and where the run is (its [`RunState`]). One type for
//! every suite: the envelope every run has, and the suite's own details (its configuration,
//! target, capabilities) flattened beside it, typed by the suite (`Manifest<LtmDetails>`) or left
//! as JSON by readers that serve every suite ([`AnyManifest`]).
//!
//! This is the one file with wall-clock times (besides an LTM run's `timing.json`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The manifest's file name in a run directory.
pub const MANIFEST_FILE: &str = "manifest.json";

/// Where a run is. Written as `"running"`, `"complete"`, `"stopped"`, `"failed"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Started and not ended; also what a manifest without a state reads as (the run's
    /// `results.json` then tells whether it finished).
    #[default]
    Running,
    /// Every planned unit ran and the final files are written.
    Complete,
    /// Stopped on request (`judge serve`'s stop): `stopped_at` says when.
    Stopped,
    /// Ended on an error: the manifest's `why` says which.
    Failed,
}

impl RunState {
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Complete => "complete",
            RunState::Stopped => "stopped",
            RunState::Failed => "failed",
        }
    }
}

/// A suite's manifest details read without knowing the suite: every field but the envelope's.
pub type Details = Map<String, Value>;

/// A manifest of any suite.
pub type AnyManifest = Manifest<Details>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest<D> {
    /// Absent only in the minimal manifest of a run stopped or failed before it wrote its own.
    #[serde(default)]
    pub judge_version: String,
    /// The run directory's folder name (which is what identifies a run when this is absent).
    #[serde(default)]
    pub run_id: String,
    /// The suite's kind (see `crate::suites::registry::KINDS`).
    pub suite: String,
    #[serde(default)]
    pub state: RunState,
    pub created_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<DateTime<Utc>>,
    /// When the run was stopped ([`RunState::Stopped`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<DateTime<Utc>>,
    /// Why the run failed ([`RunState::Failed`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The suite's own fields (configuration, target, capabilities, ...).
    #[serde(flatten)]
    pub details: D,
}

impl<D> Manifest<D> {
    /// A new manifest of a running run.
    pub fn running(run_id: String, suite: &str, created_at: DateTime<Utc>, details: D) -> Self {
        Self {
            judge_version: env!("CARGO_PKG_VERSION").to_owned(),
            run_id,
            suite: suite.to_owned(),
            state: RunState::Running,
            created_at,
            finished_at: None,
            stopped_at: None,
            why: None,
            details,
        }
    }

    /// Marks the run complete, now.
    pub fn complete(&mut self) {
        self.state = RunState::Complete;
        self.finished_at = Some(Utc::now());
    }
}

/// The suite's details read as the manifest's own fields (`manifest.seed`), as they are in the
/// JSON, where they sit beside the envelope's.
impl<D> std::ops::Deref for Manifest<D> {
    type Target = D;
    fn deref(&self) -> &D {
        &self.details
    }
}

impl<D> std::ops::DerefMut for Manifest<D> {
    fn deref_mut(&mut self) -> &mut D {
        &mut self.details
    }
}

impl AnyManifest {
    /// The manifest of a run that ended before writing its own: only what the run's folder says.
    pub fn minimal(run_id: String, suite: &str, at: DateTime<Utc>) -> Self {
        Self::running(run_id, suite, at, Details::new())
    }
}
