//! The simulations alive in this server as the index stores them (and as a run directory keeps
//! one in `simulation.json`): its state and its agents from the config ([`record`]), and keeping
//! the index in step when one changes ([`reindex`]). Sits above [`super::state`] and
//! [`super::index`], which know nothing of each other's records.

use serde_json::{Value, json};

use super::config::SimulationConfig;
use super::error::ApiError;
use super::index::records::{AgentLink, AgentRecord, SimulationRecord, target_agent};
use super::state::{ServeState, Simulation};

fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn link(role: &str, label: &str, description: Option<String>, config: Value) -> AgentLink {
    AgentLink {
        role: role.to_owned(),
        agent: AgentRecord::new(role, label, description, config),
    }
}

/// Every agent of a simulation: the agent under test, each persona, each injected endpoint,
/// and the LLM user simulator and judge when the config names them.
pub fn agents_of(config: &SimulationConfig) -> Vec<AgentLink> {
    let mut agents = vec![target_agent(&to_json(&config.target))];
    for p in &config.personas {
        agents.push(link(
            "user",
            &p.name,
            Some(p.background.clone()),
            to_json(p),
        ));
    }
    for e in config.endpoints() {
        agents.push(link(
            "injected",
            &e.agent_id,
            Some(format!("an external endpoint playing {}", e.agent_id)),
            json!({"agent_id": e.agent_id, "url": e.url, "protocol": to_json(&e.protocol),
                   "model": e.model, "timeout_seconds": e.timeout_seconds,
                   "privacy_tier": e.privacy_tier.as_ref().map(to_json),
                   "api_key_env": e.api_key_env, "api_key_secret": e.api_key_secret}),
        ));
    }
    for (role, spec) in [
        ("user_simulator", &config.user_simulator),
        ("judge", &config.judge),
    ] {
        if let Some(spec) = spec {
            let label = spec.model.as_deref().unwrap_or(&spec.endpoint);
            agents.push(link(
                role,
                label,
                Some(format!(
                    "LLM {} at {}",
                    role.replace('_', " "),
                    spec.endpoint
                )),
                to_json(spec),
            ));
        }
    }
    agents
}

pub fn record(sim: &Simulation) -> SimulationRecord {
    let planned = sim.config.personas.len() * sim.config.run.trials as usize;
    SimulationRecord {
        id: sim.id.clone(),
        kind: "sim".to_owned(),
        name: sim.config.name.clone(),
        state: sim.state.name().to_owned(),
        run_id: sim.run_id.clone(),
        config: sim.config.document.clone(),
        error: sim.error.clone(),
        conversations_planned: i32::try_from(planned).ok(),
        conversations_done: i32::try_from(sim.conversations_done).unwrap_or(i32::MAX),
        created_at: sim.created_at,
        started_at: sim.started_at,
        finished_at: sim.ended_at,
        agents: agents_of(&sim.config),
        apps: Vec::new(),
    }
}

/// Every simulation of this server as the index stores it.
pub fn live_records(state: &ServeState) -> Result<Vec<SimulationRecord>, ApiError> {
    let sims = state
        .simulations
        .lock()
        .map_err(|_| ApiError::Internal("the simulation registry is poisoned".to_owned()))?;
    Ok(sims.values().map(record).collect())
}

/// Keeps the index in step after a simulation changed: its row now, then a sync (its run
/// directory changed too). The simulation already changed, so a failure is only reported: the
/// next sync repairs the index from the run directory.
pub async fn reindex(state: &ServeState, id: &str) {
    let Some(index) = &state.index else {
        return;
    };
    let outcome = async {
        let live = live_records(state)?;
        if let Some(sim) = live.iter().find(|s| s.id == id) {
            index.put_simulation(sim).await?;
        }
        index.sync(&state.runs, &live).await?;
        Ok::<_, ApiError>(())
    }
    .await;
    if let Err(e) = outcome {
        eprintln!(
            "judge serve: the index missed a change of simulation {id} (the next sync repairs it): {e}"
        );
    }
}
