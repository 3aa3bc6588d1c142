//! What `judge serve` adds to the run directory of a simulation it runs, next to what `judge sim`
//! writes there: `simulation.json` (the simulation as the index stores it, so the index can be
//! rebuilt from the directories alone) and, when the simulation is stopped, the stop recorded in
//! `manifest.json`, so a stopped run never looks like a finished or merely unfinished one.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::error::ApiError;
use super::index::records::{SIMULATION_FILE, SimulationRecord};

/// Writes `value` to `dir/name` through a temporary file and a rename, so a reader (the
/// catalog, the index) sees the old file or the new one, never half of one.
fn write_atomic(dir: &Path, name: &str, value: &Value) -> Result<(), ApiError> {
    let fail = |e: std::io::Error| ApiError::Internal(format!("{}: {e}", dir.join(name).display()));
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut text =
        serde_json::to_vec_pretty(value).map_err(|e| ApiError::Internal(format!("{name}: {e}")))?;
    text.push(b'\n');
    std::fs::write(&tmp, text).map_err(fail)?;
    std::fs::rename(&tmp, dir.join(name)).map_err(fail)
}

pub fn write_simulation(dir: &Path, record: &SimulationRecord) -> Result<(), ApiError> {
    let value = serde_json::to_value(record).map_err(|e| ApiError::Internal(format!("{e}")))?;
    write_atomic(dir, SIMULATION_FILE, &value)
}

/// What a stop records.
pub struct Stop {
    pub run_id: String,
    pub at: DateTime<Utc>,
    pub conversations_done: usize,
    pub conversations_planned: usize,
}

/// Records the stop in the manifest: `state: "stopped"`, when, and how many conversations had
/// finished. A run stopped before `judge sim` wrote its manifest (during the target's probe)
/// gets a minimal one, so it is still listed, as stopped.
pub fn mark_stopped(dir: &Path, stop: &Stop) -> Result<(), ApiError> {
    let manifest = std::fs::read_to_string(dir.join("manifest.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .filter(Value::is_object);
    let mut manifest = manifest
        .unwrap_or_else(|| json!({"run_id": stop.run_id, "suite": "sim", "created_at": stop.at}));
    manifest["state"] = json!("stopped");
    manifest["stopped_at"] = json!(stop.at);
    manifest["conversations_done"] = json!(stop.conversations_done);
    manifest["conversations_planned"] = json!(stop.conversations_planned);
    write_atomic(dir, "manifest.json", &manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_keeps_the_manifest_and_adds_to_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("manifest.json"),
            r#"{"run_id": "r", "suite": "sim", "seed": 4}"#,
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
