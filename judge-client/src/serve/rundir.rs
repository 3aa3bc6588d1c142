//! What `judge serve` adds to the run directory of a simulation it runs, next to what `judge sim`
//! writes there: `simulation.json` (the simulation as the index stores it, so the index can be
//! rebuilt from the directories alone) and, when the simulation is stopped, the stop recorded in
//! `manifest.json`, so a stopped run never looks like a finished or merely unfinished one.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::json;

use super::error::ApiError;
use super::index::records::{SIMULATION_FILE, SimulationRecord};
use crate::rundir::{self, AnyManifest, RunDirError, RunState};

fn internal(e: RunDirError) -> ApiError {
    ApiError::Internal(e.to_string())
}

pub fn write_simulation(dir: &Path, record: &SimulationRecord) -> Result<(), ApiError> {
    rundir::write_json(&dir.join(SIMULATION_FILE), record).map_err(internal)
}

/// What a stop records.
pub struct Stop {
    pub run_id: String,
    pub at: DateTime<Utc>,
    pub conversations_done: usize,
    pub conversations_planned: usize,
}

/// Records the stop in the manifest: state [`RunState::Stopped`], when, and how many
/// conversations had finished. A run stopped before `judge sim` wrote its manifest (during the
/// target's probe) gets a minimal one, so it is still listed, as stopped.
pub fn mark_stopped(dir: &Path, stop: &Stop) -> Result<(), ApiError> {
    let mut manifest: AnyManifest = rundir::read_manifest(dir)
        .unwrap_or_else(|_| AnyManifest::minimal(stop.run_id.clone(), "sim", stop.at));
    manifest.state = RunState::Stopped;
    manifest.stopped_at = Some(stop.at);
    manifest.details.insert(
        "conversations_done".to_owned(),
        json!(stop.conversations_done),
    );
    manifest.details.insert(
        "conversations_planned".to_owned(),
        json!(stop.conversations_planned),
    );
    rundir::write_manifest(dir, &manifest).map_err(internal)
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    #[test]
    fn a_stop_keeps_the_manifest_and_adds_to_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("manifest.json"),
            r#"{"run_id": "r", "suite": "sim", "created_at": "2026-01-05T08:00:00Z", "seed": 4}"#,
        )
        .unwrap();
        let at: DateTime<Utc> = "2026-01-05T09:00:00Z".parse().unwrap();
        let stop = Stop {
            run_id: "r".to_owned(),
            at,
            conversations_done: 1,
            conversations_planned: 3,
        };
        mark_stopped(dir.path(), &stop).unwrap();
        let m: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("manifest.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(m["seed"], 4);
        assert_eq!(m["state"], "stopped");
        assert_eq!(m["conversations_done"], 1);
        assert_eq!(m["stopped_at"], "2026-01-05T09:00:00Z");
        let other = tempfile::tempdir().unwrap();
        mark_stopped(other.path(), &stop).unwrap();
        let m: Value = serde_json::from_str(
            &std::fs::read_to_string(other.path().join("manifest.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            (m["suite"].as_str(), m["state"].as_str()),
            (Some("sim"), Some("stopped"))
        );
    }
}
