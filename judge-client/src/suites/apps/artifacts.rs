//! Files a scenario run leaves in the run directory, one folder per scenario and trial:
//!
//! ```text
//! <dir>/<scenario-id>/outcome.json          pass^k, per-trial status and grade (no transcripts)
//! <dir>/<scenario-id>/trial-<n>/audit.jsonl every action, in order (JSON lines)
//! <dir>/<scenario-id>/trial-<n>/final_state.json
//! <dir>/<scenario-id>/trial-<n>/grade.json  diff, collateral damage, missing phrases, hash
//! <dir>/<scenario-id>/trial-<n>/transcript.json
//! ```
//!
//! Everything written is a pure function of the outcome, so the same seed against a deterministic
//! target gives byte-identical files.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::json;

use super::runner::ScenarioOutcome;

#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {source}")]
pub struct ArtifactError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Writes `outcome` below `dir` (created if missing); returns the files written.
pub fn write_outcome(dir: &Path, outcome: &ScenarioOutcome) -> Result<Vec<PathBuf>, ArtifactError> {
    let root = dir.join(safe_name(&outcome.scenario_id));
    let mut written = Vec::new();
    let summary = json!({
        "scenario_id": outcome.scenario_id,
        "title": outcome.title,
        "goal": outcome.goal,
        "mode": outcome.mode,
        "seed": outcome.seed,
        "passed": outcome.passed,
        "graded": outcome.graded,
        "pass_hat_k": outcome.pass_hat_k,
        "pass_at_k": outcome.pass_at_k,
        "pass_rate": outcome.pass_rate,
        "why": outcome.failure_summary(),
        "trials": outcome.trials.iter().map(|t| json!({
            "trial": t.trial, "seed": t.seed, "session_id": t.session_id, "status": t.status,
            "failure": t.failure, "grade": t.grade,
        })).collect::<Vec<_>>(),
    });
    written.push(write_json(&root.join("outcome.json"), &summary)?);
    for trial in &outcome.trials {
        let folder = root.join(format!("trial-{}", trial.trial));
        let audit = folder.join("audit.jsonl");
        write_bytes(&audit, trial.audit.to_jsonl().as_bytes())?;
        written.push(audit);
        written.push(write_json(
            &folder.join("final_state.json"),
            &trial.final_state,
        )?);
        written.push(write_json(&folder.join("grade.json"), &trial.grade)?);
        written.push(write_json(
            &folder.join("transcript.json"),
            &trial.transcript,
        )?);
    }
    Ok(written)
}

/// A scenario id as a file name: anything but `[A-Za-z0-9._-]` becomes `_`.
fn safe_name(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<PathBuf, ArtifactError> {
    let mut text = serde_json::to_vec_pretty(value).map_err(|e| ArtifactError {
        path: path.to_owned(),
        source: e.into(),
    })?;
    text.push(b'\n');
    write_bytes(path, &text)?;
    Ok(path.to_owned())
}

fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), ArtifactError> {
    let fail = |source| ArtifactError {
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(fail)?;
    }
    fs::write(path, bytes).map_err(fail)
}
