//! `/simulations`: create from a config, list, get, start, stop, and the live events as SSE.

use std::sync::Arc;

use actix_web::http::header::CONTENT_TYPE;
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use futures_util::{StreamExt, stream};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use super::config::{SimulationConfig, parse_document};
use super::error::ApiError;
use super::injection::{InjectedAgentView, agent_views};
use super::live;
use super::secrets::Secrets;
use super::state::{ServeState, SimEvent, SimState, Simulation};
use super::trials;

/// What the API shows of a simulation.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SimulationView {
    pub id: String,
    pub name: String,
    /// `sim` for simulations created here; `apps` for `judge apps` runs shown as simulations.
    pub kind: String,
    pub state: SimState,
    pub created_at: String,
    pub started_at: Option<String>,
    /// When it finished, failed or was stopped.
    pub ended_at: Option<String>,
    pub run_id: Option<String>,
    pub error: Option<String>,
    pub personas: Vec<String>,
    pub planned_conversations: usize,
    pub conversations_done: usize,
    pub rounds_done: usize,
    pub injected_agents: Vec<InjectedAgentView>,
    /// The config as created (keys are references only: `api_key_env` or `api_key_secret`).
    #[schema(value_type = Object)]
    pub config: Value,
}

/// `secrets`: to tell whether each injected agent's secret is in the file now.
pub fn view(sim: &Simulation, secrets: Option<&Secrets>) -> SimulationView {
    SimulationView {
        id: sim.id.clone(),
        name: sim.config.name.clone(),
        kind: "sim".to_owned(),
        state: sim.state,
        created_at: sim.created_at.to_rfc3339(),
        started_at: sim.started_at.map(|t| t.to_rfc3339()),
        ended_at: sim.ended_at.map(|t| t.to_rfc3339()),
        run_id: sim.run_id.clone(),
        error: sim.error.clone(),
        personas: sim.config.persona_ids(),
        planned_conversations: sim.config.personas.len() * sim.config.run.trials as usize,
        conversations_done: sim.conversations_done,
        rounds_done: sim.rounds_done,
        injected_agents: agent_views(sim, secrets),
        config: sim.config.document.clone(),
    }
}

/// Creates a simulation from a config in the YAML shape of docs/contracts/agent-injection.md (`Content-Type:
/// application/yaml`) or the same in JSON.
#[utoipa::path(
    request_body(content = Object, description = "{simulation, injection?, target, run?}"),
    responses((status = 201, body = SimulationView), (status = 400), (status = 422, description = "an `api_key_secret` the server's secrets file does not have, or no --secrets-file"))
)]
#[post("/simulations")]
pub async fn create(
    state: web::Data<ServeState>,
    req: HttpRequest,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let content_type = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let config =
        SimulationConfig::from_document(parse_document(&body, content_type)?, state.secrets())?;
    let id = format!("sim-{}", uuid::Uuid::new_v4().simple());
    let sim = Simulation::new(id.clone(), config);
    let shown = view(&sim, state.secrets());
    // Indexed first: when the index is down nothing is created and the client can retry.
    if let Some(index) = &state.index {
        index.put_simulation(&live::record(&sim)).await?;
    }
    state
        .simulations
        .lock()
        .map_err(|_| ApiError::Internal("the simulation registry is poisoned".to_owned()))?
        .insert(id.clone(), sim);
    Ok(HttpResponse::Created()
        .insert_header(("Location", format!("/simulations/{id}")))
        .json(shown))
}

/// Every simulation created since the server started (oldest first), then every trial of the
/// `judge apps` runs on disk as simulations of kind `apps`.
#[utoipa::path(responses((status = 200, body = [SimulationView])))]
#[get("/simulations")]
pub async fn list(state: web::Data<ServeState>) -> Result<HttpResponse, ApiError> {
    let mut views: Vec<SimulationView> = {
        let sims = state
            .simulations
            .lock()
            .map_err(|_| ApiError::Internal("the simulation registry is poisoned".to_owned()))?;
        sims.values()
            .map(|sim| view(sim, state.secrets()))
            .collect()
    };
    views.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
    let mut all: Vec<Value> = views
        .iter()
        .map(|v| serde_json::to_value(v).unwrap_or_default())
        .collect();
    for trial in trials::all_trials(&state.runs)? {
        all.push(serde_json::to_value(trial.view(&state.runs)).unwrap_or_default());
    }
    Ok(HttpResponse::Ok().json(all))
}

#[utoipa::path(params(("id" = String, Path)), responses((status = 200, body = SimulationView), (status = 404)))]
#[get("/simulations/{id}")]
pub async fn get(
    state: web::Data<ServeState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    if trials::is_apps_id(&id) {
        let trial = trials::trial(&state.runs, &id)?;
        return Ok(HttpResponse::Ok().json(trial.view(&state.runs)));
    }
    let shown = state.with_sim(&id, |sim| Ok(view(sim, state.secrets())))?;
    Ok(HttpResponse::Ok().json(shown))
}

/// Runs the simulation in the background; 202 with the run directory's id.
#[utoipa::path(params(("id" = String, Path)), responses((status = 202, body = SimulationView), (status = 400), (status = 404), (status = 409), (status = 422)))]
#[post("/simulations/{id}/start")]
pub async fn start(
    state: web::Data<ServeState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let shared: Arc<ServeState> = state.clone().into_inner();
    super::runner::start(&shared, &id)?;
    live::reindex(&state, &id).await;
    let shown = state.with_sim(&id, |sim| Ok(view(sim, state.secrets())))?;
    Ok(HttpResponse::Accepted().json(shown))
}

#[utoipa::path(params(("id" = String, Path)), responses((status = 200, body = SimulationView), (status = 404), (status = 409)))]
#[post("/simulations/{id}/stop")]
pub async fn stop(
    state: web::Data<ServeState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    super::runner::stop(&state, &id).await?;
    let shown = state.with_sim(&id, |sim| Ok(view(sim, state.secrets())))?;
    Ok(HttpResponse::Ok().json(shown))
}

fn sse_frame(event: &SimEvent) -> Bytes {
    Bytes::from(format!(
        "event: {}\ndata: {}\n\n",
        event.kind,
        serde_json::to_string(&event.data).unwrap_or_default()
    ))
}

/// Server-sent events: everything that happened so far, then live `round`, `conversation`,
/// `metrics`, `summary` and `state` events; the stream ends after `end`.
#[utoipa::path(params(("id" = String, Path)), responses((status = 200, content_type = "text/event-stream"), (status = 404)))]
#[get("/simulations/{id}/events")]
pub async fn events(
    state: web::Data<ServeState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    // The backlog and the subscription are taken under one lock: no event is missed or doubled.
    let (backlog, receiver) =
        state.with_sim(&id, |sim| Ok((sim.events.clone(), sim.sender.subscribe())))?;
    let ended = backlog.iter().any(SimEvent::is_end);
    let past = stream::iter(backlog.into_iter().map(|e| sse_frame(&e)));
    let live = stream::unfold((receiver, ended), |(mut receiver, ended)| async move {
        if ended {
            return None;
        }
        loop {
            match receiver.recv().await {
                Ok(event) => {
                    let end = event.is_end();
                    return Some((sse_frame(&event), (receiver, end)));
                }
                // A slow reader skips what it missed; the run directory has everything.
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return None,
            }
        }
    });
    let body = past.chain(live).map(Ok::<_, actix_web::Error>);
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("Cache-Control", "no-cache"))
        .streaming(body))
}
