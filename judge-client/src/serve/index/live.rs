//! A simulation of this server as the index stores it (and as its run directory keeps it in
//! `simulation.json`): its state, and its agents from the config.

use serde_json::{Value, json};

use super::records::{AgentLink, AgentRecord, SimulationRecord, target_agent};
use crate::serve::config::SimulationConfig;
use crate::serve::simulations::state_name;
use crate::serve::state::Simulation;

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
        state: state_name(sim.state).to_owned(),
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
