//! What the index holds, as plain values read from the run directories (or from a simulation
//! alive in the server). No database here: [`super::store`] writes these records.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::canonical::sha256_of;
use crate::serve::catalog::{self, RunSummary};
use crate::serve::error::ApiError;
use crate::serve::trials;

/// The file `judge serve` keeps in the run directory of every simulation it starts: the
/// simulation as the index stores it, so the index can be rebuilt from disk alone.
pub const SIMULATION_FILE: &str = "simulation.json";

/// Files a run's row derives from; a change to any of them re-reads the run.
const FINGERPRINTED: [&str; 3] = ["manifest.json", "results.json", SIMULATION_FILE];

/// A row of the agents table of docs/contracts/transcript.md.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRecord {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    /// Never a key's value: keys are only ever names of environment variables.
    pub config: Value,
}

impl AgentRecord {
    /// The id derives from role and configuration: the same agent in many simulations is one row,
    /// and a changed configuration is a new agent (old simulations keep pointing at theirs).
    pub fn new(role: &str, label: &str, description: Option<String>, config: Value) -> Self {
        let hash = sha256_of(&json!({"role": role, "config": config}));
        let hex = hash.trim_start_matches("sha256:");
        let slug: String = label
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .take(40)
            .collect();
        Self {
            id: format!("{role}-{slug}-{}", &hex[..12]),
            name: label.to_owned(),
            description,
            config,
        }
    }
}

/// An agent and the part it played in a simulation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentLink {
    pub role: String,
    pub agent: AgentRecord,
}

/// The app instance of docs/contracts/apps.md, with its audit log.
#[derive(Debug, Clone, PartialEq)]
pub struct AppInstanceRecord {
    pub id: String,
    pub app_id: String,
    pub config: Value,
    pub state: Value,
    pub actions: Vec<ActionRecord>,
}

/// A row of the `app_action_log` of docs/contracts/apps.md.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionRecord {
    pub id: String,
    pub seq: i64,
    pub agent_id: String,
    pub step: i64,
    pub action_name: String,
    pub params: Value,
    pub success: bool,
    pub result: Option<Value>,
    pub error: Option<String>,
    pub executed_at: Option<DateTime<Utc>>,
}

/// A simulation: one created through the API (kind `sim`, also written to its run directory as
/// [`SIMULATION_FILE`]) or one trial of a `judge apps` run (kind `apps`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimulationRecord {
    pub id: String,
    pub kind: String,
    pub name: String,
    pub state: String,
    pub run_id: Option<String>,
    /// The config as created (the shape of docs/contracts/agent-injection.md; keys are variable names only).
    pub config: Value,
    pub error: Option<String>,
    pub conversations_planned: Option<i32>,
    pub conversations_done: i32,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub agents: Vec<AgentLink>,
    /// Only apps trials have apps; they are read from the trial's folder, not from this file.
    #[serde(skip)]
    pub apps: Vec<AppInstanceRecord>,
}

/// One run directory.
#[derive(Debug, Clone)]
pub struct RunRecord {
    pub summary: RunSummary,
    pub manifest: Value,
    pub fingerprint: String,
    pub simulations: Vec<SimulationRecord>,
}

/// Sizes and modification times of the files a run's row derives from.
pub fn fingerprint(dir: &Path) -> String {
    FINGERPRINTED
        .iter()
        .map(|name| match std::fs::metadata(dir.join(name)) {
            Ok(meta) => {
                let modified = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                format!("{name}:{}:{modified}", meta.len())
            }
            Err(_) => format!("{name}:-"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn time(value: &Value) -> Option<DateTime<Utc>> {
    value.as_str()?.parse().ok()
}

/// Run `id` as the index stores it, read from disk.
pub fn read_run(root: &Path, id: &str) -> Result<RunRecord, ApiError> {
    let detail = catalog::get(root, id)?;
    if detail.manifest.is_null() && detail.results.is_null() {
        // Neither file parses (half written, or damaged): `catalog::list` leaves it out too.
        return Err(ApiError::not_found("run", id));
    }
    let dir = catalog::run_dir(root, id)?;
    let mut simulations = Vec::new();
    if let Some(text) = std::fs::read_to_string(dir.join(SIMULATION_FILE)).ok()
        && let Ok(mut sim) = serde_json::from_str::<SimulationRecord>(&text)
    {
        // Written as running (or created) by a server that is gone: it will never end.
        if matches!(sim.state.as_str(), "created" | "running") {
            sim.state = "failed".to_owned();
            sim.error = Some("judge serve stopped before the simulation ended".to_owned());
        }
        sim.run_id = Some(id.to_owned());
        simulations.push(sim);
    }
    if detail.summary.suite == "apps" {
        for trial in trials::trials_of_run(root, id)? {
            simulations.push(apps_simulation(&trial, &detail.manifest, root)?);
        }
    }
    Ok(RunRecord {
        fingerprint: fingerprint(&dir),
        summary: detail.summary,
        manifest: detail.manifest,
        simulations,
    })
}

/// A trial of an apps run as a simulation: its apps from `final_state.json`, their audit log
/// from `audit.jsonl`, the target from the run's manifest as the system agent.
fn apps_simulation(
    trial: &trials::AppsTrial,
    manifest: &Value,
    root: &Path,
) -> Result<SimulationRecord, ApiError> {
    let view = trial.view(root);
    let created = time(&manifest["created_at"]).unwrap_or_else(Utc::now);
    let finished = time(&manifest["finished_at"]);
    let entries = trial.actions()?;
    let mut instances = Vec::new();
    for (app_id, state) in trial.final_state()? {
        let instance_id = format!("{}:{app_id}", trial.id);
        let actions = entries
            .iter()
            .filter(|e| e["app"] == app_id.as_str())
            .map(|e| {
                let seq = e["seq"].as_i64().unwrap_or_default();
                ActionRecord {
                    id: format!("{instance_id}:{seq}"),
                    seq,
                    agent_id: e["agent"].as_str().unwrap_or_default().to_owned(),
                    step: e["step"].as_i64().unwrap_or_default(),
                    action_name: e["action"].as_str().unwrap_or_default().to_owned(),
                    params: e["params"].clone(),
                    success: e["success"].as_bool().unwrap_or(false),
                    result: e.get("result").filter(|v| !v.is_null()).cloned(),
                    error: e["error"].as_str().map(str::to_owned),
                    executed_at: time(&e["time"]),
                }
            })
            .collect();
        instances.push(AppInstanceRecord {
            // The app's setup is the scenario's (not copied into the run directory): the
            // config names it, with the action mode and the trial's seed.
            config: json!({"scenario": trial.scenario, "trial": trial.trial,
                           "mode": manifest.pointer("/config/mode"),
                           "seed": view.outcome.get("seed")}),
            id: instance_id,
            app_id,
            state,
            actions,
        });
    }
    let mut agents = Vec::new();
    if let Some(target) = manifest.get("target").filter(|t| t.is_object()) {
        agents.push(target_agent(target));
    }
    Ok(SimulationRecord {
        id: trial.id.clone(),
        kind: "apps".to_owned(),
        name: format!("{} trial {}", trial.scenario, trial.trial),
        state: view.state.clone(),
        run_id: Some(trial.run_id.clone()),
        config: json!({"scenario": trial.scenario, "trial": trial.trial, "outcome": view.outcome}),
        error: None,
        conversations_planned: Some(1),
        conversations_done: 1,
        created_at: created,
        started_at: Some(created),
        finished_at: finished,
        agents,
        apps: instances,
    })
}

/// The agent under test (the system agent of docs/contracts/transcript.md), from a target's settings.
pub fn target_agent(target: &Value) -> AgentLink {
    let label = target["model"]
        .as_str()
        .or_else(|| target["endpoint"].as_str())
        .unwrap_or("target");
    AgentLink {
        role: "system".to_owned(),
        agent: AgentRecord::new(
            "system",
            label,
            target["endpoint"]
                .as_str()
                .map(|e| format!("the agent under test at {e}")),
            target.clone(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_ids_follow_the_configuration() {
        let a = AgentRecord::new("user", "Maya Chen", None, json!({"id": "maya", "v": 1}));
        let b = AgentRecord::new("user", "Maya Chen", None, json!({"id": "maya", "v": 1}));
        let c = AgentRecord::new("user", "Maya Chen", None, json!({"id": "maya", "v": 2}));
        let d = AgentRecord::new("judge", "Maya Chen", None, json!({"id": "maya", "v": 1}));
        assert_eq!(a.id, b.id);
        assert_ne!(a.id, c.id);
        assert_ne!(a.id, d.id);
        assert!(a.id.starts_with("user-maya-chen-"), "{}", a.id);
    }

    #[test]
    fn a_fingerprint_changes_with_the_results() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("manifest.json"), "{}").unwrap();
        let before = fingerprint(dir.path());
        std::fs::write(dir.path().join("results.json"), "{}").unwrap();
        assert_ne!(before, fingerprint(dir.path()));
    }
}
