//! The trials of `judge apps` runs, read from their run directories: each trial of each scenario
//! of an apps run is a simulation of kind `apps` with the id `<run-id>:<scenario>:<trial>` (`:`
//! never appears in run ids, so the id splits unambiguously); its apps' state is the trial's
//! `final_state.json` and its actions are `audit.jsonl`. Read by the app endpoints
//! ([`super::apps`]), the simulation list and the index; knows nothing of the server's state.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::catalog::{self, check_id};
use super::error::ApiError;

/// One trial of an apps run, found on disk.
pub struct AppsTrial {
    pub id: String,
    pub run_id: String,
    pub scenario: String,
    pub trial: u32,
    dir: PathBuf,
}

/// What `GET /simulations` and `GET /simulations/{id}` show of an apps trial.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AppsSimulationView {
    pub id: String,
    pub kind: String,
    pub state: String,
    pub run_id: String,
    pub scenario: String,
    pub trial: u32,
    /// The trial's status and grade from the scenario's outcome.json.
    #[schema(value_type = Object)]
    pub outcome: Value,
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Is `id` the id of an apps trial (rather than of a simulation made here)?
pub fn is_apps_id(id: &str) -> bool {
    id.contains(':')
}

/// The trial `id` names; 400 for a malformed id, 404 when the run, scenario or trial is absent.
pub fn trial(root: &Path, id: &str) -> Result<AppsTrial, ApiError> {
    let parts: Vec<&str> = id.split(':').collect();
    let [run_id, scenario, trial] = parts.as_slice() else {
        return Err(ApiError::bad(format!(
            "`{id}` is not an apps simulation id: `<run-id>:<scenario>:<trial>`"
        )));
    };
    check_id(run_id)?;
    check_id(scenario)?;
    let number: u32 = trial
        .parse()
        .map_err(|_| ApiError::bad(format!("`{trial}` is not a trial number")))?;
    let run = catalog::get(root, run_id)?;
    if run.summary.suite != "apps" {
        return Err(ApiError::not_found("apps simulation", id));
    }
    let dir = root
        .join(run_id)
        .join("scenarios")
        .join(scenario)
        .join(format!("trial-{number}"));
    if !dir.is_dir() {
        return Err(ApiError::not_found("apps simulation", id));
    }
    Ok(AppsTrial {
        id: id.to_owned(),
        run_id: (*run_id).to_owned(),
        scenario: (*scenario).to_owned(),
        trial: number,
        dir,
    })
}

impl AppsTrial {
    pub(crate) fn final_state(&self) -> Result<serde_json::Map<String, Value>, ApiError> {
        match read_json(&self.dir.join("final_state.json")) {
            Some(Value::Object(map)) => Ok(map),
            _ => Err(ApiError::Internal(format!(
                "{}: no readable final_state.json",
                self.dir.display()
            ))),
        }
    }

    pub(crate) fn app_state(&self, app_id: &str) -> Result<Value, ApiError> {
        self.final_state()?
            .remove(app_id)
            .ok_or_else(|| ApiError::not_found("app", app_id))
    }

    /// The audit log in execution order.
    pub(crate) fn actions(&self) -> Result<Vec<Value>, ApiError> {
        let path = self.dir.join("audit.jsonl");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| ApiError::Internal(format!("{}: {e}", path.display())))?;
        let mut entries: Vec<Value> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str(l)
                    .map_err(|e| ApiError::Internal(format!("{}: {e}", path.display())))
            })
            .collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e["seq"].as_u64().unwrap_or(u64::MAX));
        Ok(entries)
    }

    pub fn view(&self, root: &Path) -> AppsSimulationView {
        let outcome = read_json(
            &root
                .join(&self.run_id)
                .join("scenarios")
                .join(&self.scenario)
                .join("outcome.json"),
        );
        let trial = outcome
            .as_ref()
            .and_then(|o| o["trials"].as_array())
            .and_then(|ts| ts.iter().find(|t| t["trial"] == self.trial))
            .cloned()
            .unwrap_or(Value::Null);
        AppsSimulationView {
            id: self.id.clone(),
            kind: "apps".to_owned(),
            state: "finished".to_owned(),
            run_id: self.run_id.clone(),
            scenario: self.scenario.clone(),
            trial: self.trial,
            outcome: trial,
        }
    }
}

/// Every trial of every apps run under `root`.
pub fn all_trials(root: &Path) -> Result<Vec<AppsTrial>, ApiError> {
    let mut trials = Vec::new();
    for run in catalog::list(root)?
        .into_iter()
        .filter(|r| r.suite == "apps")
    {
        trials.extend(trials_of_run(root, &run.id)?);
    }
    Ok(trials)
}

/// Every trial of apps run `run_id`, by scenario then trial number.
pub fn trials_of_run(root: &Path, run_id: &str) -> Result<Vec<AppsTrial>, ApiError> {
    check_id(run_id)?;
    let mut trials = Vec::new();
    let scenarios_dir = root.join(run_id).join("scenarios");
    let Ok(scenarios) = std::fs::read_dir(&scenarios_dir) else {
        return Ok(trials);
    };
    let mut names: Vec<String> = scenarios
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for scenario in names {
        let Ok(entries) = std::fs::read_dir(scenarios_dir.join(&scenario)) else {
            continue;
        };
        let mut numbers: Vec<u32> = entries
            .flatten()
            .filter_map(|e| {
                e.file_name()
                    .to_string_lossy()
                    .strip_prefix("trial-")?
                    .parse()
                    .ok()
            })
            .collect();
        numbers.sort_unstable();
        for n in numbers {
            if let Ok(t) = trial(root, &format!("{run_id}:{scenario}:{n}")) {
                trials.push(t);
            }
        }
    }
    Ok(trials)
}
