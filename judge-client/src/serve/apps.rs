//! The app endpoints of docs/contracts/apps.md over `judge apps` runs (their trials are read by
//! [`super::trials`]). Simulations created through the API (kind `sim`) have no apps: their
//! lists are empty.

use actix_web::{HttpResponse, get, web};
use serde::Deserialize;
use serde_json::{Value, json};

use super::error::ApiError;
use super::state::ServeState;
use super::trials::{AppsTrial, is_apps_id, trial};

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
