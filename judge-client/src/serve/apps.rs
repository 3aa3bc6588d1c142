//! The app endpoints of docs/contracts/apps.md over `judge apps` runs. Each trial of each scenario of an apps
//! run is a simulation of kind `apps` with the id `<run-id>:<scenario>:<trial>` (`:` never
//! appears in run ids, so the id splits unambiguously); its apps' state is the trial's
//! `final_state.json` and its actions are `audit.jsonl`, read from the run directory.
//! Simulations created through the API (kind `sim`) have no apps: their lists are empty.

use std::path::{Path, PathBuf};

use actix_web::{HttpResponse, get, web};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::catalog::{self, check_id};
use super::error::ApiError;
use super::state::ServeState;

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

    fn app_state(&self, app_id: &str) -> Result<Value, ApiError> {
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

/// Does `value` mention `agent` as a whole string field (a transaction's `from` or `to`)?
fn mentions(value: &Value, agent: &str) -> bool {
    match value {
        Value::String(s) => s == agent,
        Value::Array(items) => items.iter().any(|v| mentions(v, agent)),
        Value::Object(map) => map.values().any(|v| mentions(v, agent)),
        _ => false,
    }
}

/// 404 for unknown simulations of either kind; an API simulation has no apps.
fn apps_trial(state: &ServeState, id: &str) -> Result<Option<AppsTrial>, ApiError> {
    if is_apps_id(id) {
        trial(&state.runs, id).map(Some)
    } else {
        state.with_sim(id, |_| Ok(None))
    }
}

/// The simulation's apps with a summary of each one's state.
#[utoipa::path(params(("id" = String, Path)), responses((status = 200), (status = 404)))]
#[get("/simulations/{id}/apps")]
pub async fn list(
    state: web::Data<ServeState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let Some(trial) = apps_trial(&state, &id)? else {
        return Ok(HttpResponse::Ok().json(json!([])));
    };
    let apps: Vec<Value> = trial
        .final_state()?
        .into_iter()
        .map(|(app_id, s)| {
            let counts: serde_json::Map<String, Value> = s
                .as_object()
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| {
                            let n = v
                                .as_array()
                                .map(Vec::len)
                                .or_else(|| v.as_object().map(serde_json::Map::len))?;
                            Some((k.clone(), json!(n)))
                        })
                        .collect()
                })
                .unwrap_or_default();
            json!({"app_id": app_id, "counts": counts})
        })
        .collect();
    Ok(HttpResponse::Ok().json(apps))
}

/// An app's state at the end of the trial.
#[utoipa::path(params(("id" = String, Path), ("app_id" = String, Path)), responses((status = 200), (status = 404)))]
#[get("/simulations/{id}/apps/{app_id}")]
pub async fn get(
    state: web::Data<ServeState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, app_id) = path.into_inner();
    let trial = apps_trial(&state, &id)?.ok_or_else(|| ApiError::not_found("app", &app_id))?;
    let app = trial.app_state(&app_id)?;
    Ok(HttpResponse::Ok().json(json!({"app_id": app_id, "state": app})))
}

/// One agent's part of an app: its account, and the records that name it.
#[utoipa::path(params(("id" = String, Path), ("app_id" = String, Path), ("agent_id" = String, Path)), responses((status = 200), (status = 404)))]
#[get("/simulations/{id}/apps/{app_id}/agents/{agent_id}")]
pub async fn agent_state(
    state: web::Data<ServeState>,
    path: web::Path<(String, String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, app_id, agent_id) = path.into_inner();
    let trial = apps_trial(&state, &id)?.ok_or_else(|| ApiError::not_found("app", &app_id))?;
    let app = trial.app_state(&app_id)?;
    let account = app
        .pointer(&format!("/accounts/{agent_id}"))
        .cloned()
        .ok_or_else(|| ApiError::not_found("agent", &agent_id))?;
    let mut records = serde_json::Map::new();
    if let Some(map) = app.as_object() {
        for (key, value) in map {
            if let Some(items) = value.as_array() {
                let mine: Vec<Value> = items
                    .iter()
                    .filter(|v| mentions(v, &agent_id))
                    .cloned()
                    .collect();
                records.insert(key.clone(), Value::Array(mine));
            }
        }
    }
    Ok(HttpResponse::Ok().json(
        json!({"app_id": app_id, "agent_id": agent_id, "account": account, "records": records}),
    ))
}

#[derive(Deserialize)]
pub struct ActionsQuery {
    agent_id: Option<String>,
}

/// The audit log of one app in execution order, optionally of one agent.
#[utoipa::path(
    params(("id" = String, Path), ("app_id" = String, Path), ("agent_id" = Option<String>, Query)),
    responses((status = 200), (status = 404))
)]
#[get("/simulations/{id}/apps/{app_id}/actions")]
pub async fn actions(
    state: web::Data<ServeState>,
    path: web::Path<(String, String)>,
    query: web::Query<ActionsQuery>,
) -> Result<HttpResponse, ApiError> {
    let (id, app_id) = path.into_inner();
    let trial = apps_trial(&state, &id)?.ok_or_else(|| ApiError::not_found("app", &app_id))?;
    trial.app_state(&app_id)?;
    let entries: Vec<Value> = trial
        .actions()?
        .into_iter()
        .filter(|e| e["app"] == app_id.as_str())
        .filter(|e| {
            query
                .agent_id
                .as_ref()
                .is_none_or(|a| e["agent"] == a.as_str())
        })
        .collect();
    Ok(HttpResponse::Ok().json(entries))
}
