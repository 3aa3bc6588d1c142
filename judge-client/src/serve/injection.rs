//! The injection endpoints of docs/contracts/agent-injection.md: register, remove and list the external endpoints playing
//! persona slots, their metrics, and a health check. Keys are references (an environment
//! variable or a key of `--secrets-file`): what is shown is the reference and whether it
//! resolves now, never a value.

use actix_web::{HttpResponse, delete, get, post, web};
use serde::Serialize;
use serde_json::json;

use super::config::InjectBody;
use super::error::ApiError;
use super::live::reindex;
use super::secrets::Secrets;
use super::state::{ServeState, SimState, Simulation};
use crate::suites::sim::canonical::derived_uuid;
use crate::suites::sim::injection::metrics::Recorder;
use crate::suites::sim::injection::privacy::persona_ref;
use crate::suites::sim::injection::schema::{
    AgentWorldRequest, ConversationContext, ResponseFormat, SCHEMA_VERSION, TopologyEdgeContext,
};
use crate::suites::sim::injection::{EndpointMetrics, InjectedEndpoint, Protocol};

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct InjectedAgentView {
    pub agent_id: String,
    pub endpoint_url: String,
    pub protocol: String,
    pub model: Option<String>,
    pub timeout_seconds: f64,
    pub privacy_tier: Option<String>,
    /// The environment variable the key is read from when the simulation starts.
    pub api_key_env: Option<String>,
    /// Or the name of its key in the server's `--secrets-file`.
    pub api_key_secret: Option<String>,
    /// Whether that variable is set, or that secret is in the file, on the server now (the
    /// value is never shown).
    pub api_key_set: bool,
    /// `CLOSED`, `OPEN` or `HALF_OPEN`, from the latest metrics (`CLOSED` before any call).
    pub circuit_state: String,
}

fn text<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

pub fn agent_views(sim: &Simulation, secrets: Option<&Secrets>) -> Vec<InjectedAgentView> {
    sim.config
        .endpoints()
        .iter()
        .map(|e| InjectedAgentView {
            agent_id: e.agent_id.clone(),
            endpoint_url: e.url.clone(),
            protocol: text(&e.protocol),
            model: e.model.clone(),
            timeout_seconds: e.timeout_seconds,
            privacy_tier: e.privacy_tier.as_ref().map(text),
            api_key_env: e.api_key_env.clone(),
            api_key_secret: e.api_key_secret.clone(),
            api_key_set: e
                .api_key_env
                .as_deref()
                .is_some_and(|v| std::env::var_os(v).is_some())
                || e.api_key_secret
                    .as_deref()
                    .is_some_and(|name| secrets.is_some_and(|s| s.contains(name))),
            circuit_state: sim
                .metrics
                .get(&e.agent_id)
                .map_or_else(|| "CLOSED".to_owned(), |m| m.circuit_state.clone()),
        })
        .collect()
}

/// Injection changes what the run sends: only before it starts.
fn editable(sim: &Simulation) -> Result<(), ApiError> {
    if sim.state == SimState::Created {
        Ok(())
    } else {
        Err(ApiError::Conflict(format!(
            "simulation `{}` is {}: agents are injected before it starts",
            sim.id,
            sim.state.name()
        )))
    }
}

/// Registers (or replaces) the endpoint playing persona `agent_id`.
#[utoipa::path(
    params(("id" = String, Path)),
    request_body = InjectBody,
    responses((status = 201, body = InjectedAgentView), (status = 400), (status = 404), (status = 409), (status = 422, description = "an `api_key_secret` the server's secrets file does not have, or no --secrets-file"))
)]
#[post("/simulations/{id}/inject-agent")]
pub async fn inject(
    state: web::Data<ServeState>,
    id: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let value: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| ApiError::bad(format!("invalid JSON: {e}")))?;
    if value.get("api_key").is_some() {
        return Err(ApiError::bad(
            "judge serve never takes an API key's value; name the environment variable that holds it in `api_key_env`, or its name in the secrets file in `api_key_secret`",
        ));
    }
    let body: InjectBody = serde_json::from_value(value)
        .map_err(|e| ApiError::bad(format!("invalid injection: {e}")))?;
    let agent_id = body.agent_id.clone();
    let shown = state.with_sim(&id, |sim| {
        editable(sim)?;
        sim.config.inject(body, state.secrets())?;
        sim.metrics.remove(&agent_id);
        Ok(agent_views(sim, state.secrets())
            .into_iter()
            .find(|a| a.agent_id == agent_id))
    })?;
    reindex(&state, &id).await;
    Ok(HttpResponse::Created().json(shown))
}

#[utoipa::path(
    params(("id" = String, Path), ("agent_id" = String, Path)),
    responses((status = 204), (status = 404), (status = 409))
)]
#[delete("/simulations/{id}/inject-agent/{agent_id}")]
pub async fn remove(
    state: web::Data<ServeState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, agent_id) = path.into_inner();
    state.with_sim(&id, |sim| {
        editable(sim)?;
        if sim.config.remove(&agent_id) {
            sim.metrics.remove(&agent_id);
            Ok(())
        } else {
            Err(ApiError::not_found("injected agent", &agent_id))
        }
    })?;
    reindex(&state, &id).await;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(params(("id" = String, Path)), responses((status = 200, body = [InjectedAgentView]), (status = 404)))]
#[get("/simulations/{id}/injected-agents")]
pub async fn list(
    state: web::Data<ServeState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let agents = state.with_sim(&id, |sim| Ok(agent_views(sim, state.secrets())))?;
    Ok(HttpResponse::Ok().json(agents))
}

/// Latency p50/p99, error and timeout rates, circuit state and its transitions (zeros before
/// the simulation's first call to the endpoint).
#[utoipa::path(params(("id" = String, Path), ("agent_id" = String, Path)), responses((status = 200), (status = 404)))]
#[get("/simulations/{id}/inject-agent/{agent_id}/metrics")]
pub async fn metrics(
    state: web::Data<ServeState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, agent_id) = path.into_inner();
    let metrics: EndpointMetrics =
        state.with_sim(&id, |sim| {
            let endpoint = sim
                .config
                .endpoints()
                .iter()
                .find(|e| e.agent_id == agent_id)
                .ok_or_else(|| ApiError::not_found("injected agent", &agent_id))?;
            Ok(sim.metrics.get(&agent_id).cloned().unwrap_or_else(|| {
                Recorder::default().snapshot(&agent_id, &endpoint.url, "CLOSED")
            }))
        })?;
    Ok(HttpResponse::Ok().json(metrics))
}

/// The smallest request the endpoint's protocol accepts: one stimulus, minimal persona tier.
fn probe_body(
    protocol: Protocol,
    model: Option<&str>,
    persona: &crate::suites::sim::Persona,
    timeout_ms: u64,
) -> Vec<u8> {
    let value = match protocol {
        Protocol::Openai => json!({
            "model": model.unwrap_or("default"),
            "messages": [{"role": "user", "content": "Health check: reply with OK."}],
            "max_tokens": 8,
        }),
        Protocol::Agentworld => {
            let request = AgentWorldRequest {
                schema_version: SCHEMA_VERSION.to_owned(),
                request_id: derived_uuid(0, "health-check/request"),
                run_id: derived_uuid(0, "health-check"),
                turn_id: derived_uuid(0, "health-check/turn"),
                message_id: derived_uuid(0, "health-check/message"),
                simulation_config_hash: String::new(),
                persona_hash: persona.hash(),
                agent_id: persona.id.clone(),
                persona_ref: persona_ref(persona),
                persona_snapshot: None,
                conversation_context: ConversationContext {
                    last_k_turns: Vec::new(),
                    conversation_summary: "Health check from judge serve.".to_owned(),
                    token_budget: 64,
                    max_context_chars: 1_000,
                },
                current_stimulus: "Health check: reply with OK.".to_owned(),
                topology_edge_context: TopologyEdgeContext {
                    can_message: Vec::new(),
                },
                timeout_ms,
                response_format: ResponseFormat {
                    kind: "text".to_owned(),
                },
            };
            serde_json::to_value(&request).unwrap_or_default()
        }
    };
    serde_json::to_vec(&value).unwrap_or_default()
}

/// Sends one request to the endpoint (its key read from the environment now) and says whether
/// a usable answer came back. 200 either way: an unhealthy endpoint is an answer, not an error.
#[utoipa::path(params(("id" = String, Path), ("agent_id" = String, Path)), responses((status = 200), (status = 400), (status = 404), (status = 422)))]
#[post("/simulations/{id}/inject-agent/{agent_id}/health-check")]
pub async fn health_check(
    state: web::Data<ServeState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, agent_id) = path.into_inner();
    let (spec, persona) = state.with_sim(&id, |sim| {
        if !sim
            .config
            .endpoints()
            .iter()
            .any(|e| e.agent_id == agent_id)
        {
            return Err(ApiError::not_found("injected agent", &agent_id));
        }
        let plan = sim
            .config
            .run_config(|var| std::env::var(var).ok(), state.secrets())?;
        let spec = plan
            .injection
            .endpoint_for(&agent_id)
            .cloned()
            .ok_or_else(|| ApiError::not_found("injected agent", &agent_id))?;
        let persona = plan
            .personas
            .iter()
            .find(|p| p.id == agent_id)
            .cloned()
            .ok_or_else(|| ApiError::not_found("persona", &agent_id))?;
        Ok((spec, persona))
    })?;
    let body = probe_body(
        spec.protocol,
        spec.model.as_deref(),
        &persona,
        spec.timeout_ms,
    );
    let endpoint = InjectedEndpoint::new(spec);
    let outcome = endpoint.call(&body).await;
    let answer = match outcome {
        Ok(reply) => json!({"agent_id": agent_id, "healthy": true, "latency_ms": reply.latency_ms}),
        Err(e) => json!({"agent_id": agent_id, "healthy": false, "failure": e.kind.as_str(),
                         "message": e.message}),
    };
    Ok(HttpResponse::Ok().json(answer))
}
