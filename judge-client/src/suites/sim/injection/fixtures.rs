//! Record and replay (the benchmark mode of docs/contracts/agent-injection.md): every request sent across a
//! boundary (to the target, or to an injected endpoint) is stored with the reply it got, keyed by
//! the sha256 of its canonical JSON. `judge replay` sends the identical requests to another agent
//! and compares the replies at the same decision points.

use std::cell::RefCell;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::super::canonical::sha256_of;
use super::config::Protocol;

pub const FIXTURE_VERSION: &str = "1.0";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineAgent {
    pub endpoint: String,
    #[serde(default)]
    pub model: Option<String>,
    pub protocol: Protocol,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixturePayload {
    pub turn_id: String,
    pub agent_id: String,
    /// `sha256:` of the request's canonical JSON.
    pub request_hash: String,
    /// Conversation number in the run and round within it: the decision point.
    pub conversation: usize,
    pub round: usize,
    /// For the `openai` protocol: the session the request belongs to, and its virtual time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mock_time: Option<DateTime<Utc>>,
    pub request: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_response: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixtureFile {
    pub fixture_version: String,
    pub created_at: DateTime<Utc>,
    pub baseline_agent: BaselineAgent,
    pub payloads: Vec<FixturePayload>,
}

#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error("{path}: fixture version {found}, expected {FIXTURE_VERSION}")]
    Version { path: String, found: String },
    #[error("{path}: payload {index} does not match its request_hash")]
    Tampered { path: String, index: usize },
}

impl FixtureFile {
    pub fn load(path: &Path) -> Result<Self, FixtureError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| FixtureError::Io {
            path: shown.clone(),
            source,
        })?;
        let file: FixtureFile =
            serde_json::from_str(&text).map_err(|source| FixtureError::Json {
                path: shown.clone(),
                source,
            })?;
        if file.fixture_version != FIXTURE_VERSION {
            return Err(FixtureError::Version {
                path: shown,
                found: file.fixture_version,
            });
        }
        if let Some(index) = file
            .payloads
            .iter()
            .position(|p| sha256_of(&p.request) != p.request_hash)
        {
            return Err(FixtureError::Tampered { path: shown, index });
        }
        Ok(file)
    }
}

/// Collects payloads during a run (conversations run concurrently; the file is sorted by
/// decision point when written, so it is the same on every run).
#[derive(Debug)]
pub struct FixtureRecorder {
    pub baseline: BaselineAgent,
    payloads: RefCell<Vec<FixturePayload>>,
}

impl FixtureRecorder {
    pub fn new(baseline: BaselineAgent) -> Self {
        Self {
            baseline,
            payloads: RefCell::new(Vec::new()),
        }
    }

    pub fn record(&self, payload: FixturePayload) {
        self.payloads.borrow_mut().push(payload);
    }

    pub fn is_empty(&self) -> bool {
        self.payloads.borrow().is_empty()
    }

    pub fn finish(&self, created_at: DateTime<Utc>) -> FixtureFile {
        let mut payloads = self.payloads.borrow().clone();
        payloads.sort_by_key(|p| (p.conversation, p.round));
        FixtureFile {
            fixture_version: FIXTURE_VERSION.to_owned(),
            created_at,
            baseline_agent: self.baseline.clone(),
            payloads,
        }
    }
}
