//! Starting and stopping a simulation: `judge sim`'s own run (`run_sim_observed`) on the actix
//! runtime of the worker that took the request, each round published to the simulation's
//! events as it happens, the run directory written under `--runs` like the CLI writes it.

use std::sync::Arc;

use serde_json::json;

use super::error::ApiError;
use super::simulations::state_name;
use super::state::{ServeState, SimState};
use crate::run::unique_dir;
use crate::suites::sim::injection::EndpointMetrics;
use crate::suites::sim::run_sim_observed;
use crate::suites::sim::runner::{Conversation, PanelObserver, Round};

/// Publishes a running panel into the simulation's events.
struct Watch {
    state: Arc<ServeState>,
    id: String,
}

impl PanelObserver for Watch {
    fn round(
        &self,
        number: usize,
        persona_id: &str,
        trial: u32,
        round: &Round,
        endpoints: &[EndpointMetrics],
    ) {
        // A simulation deleted or poisoned mid-run has nobody to tell.
        let _ = self.state.with_sim(&self.id, |sim| {
            sim.rounds_done += 1;
            for m in endpoints {
                sim.metrics.insert(m.agent_id.clone(), m.clone());
            }
            sim.publish(
                "round",
                json!({"conversation": number, "persona_id": persona_id, "trial": trial,
                       "round": round}),
            );
            if !endpoints.is_empty() {
                sim.publish("metrics", json!(endpoints));
            }
            Ok(())
        });
    }

    fn conversation_done(&self, c: &Conversation) {
        let _ = self.state.with_sim(&self.id, |sim| {
            sim.conversations_done += 1;
            sim.publish(
                "conversation",
                json!({"conversation": c.number, "persona_id": c.persona_id, "trial": c.trial,
                       "rounds": c.rounds.len(), "stop_reason": c.stop_reason}),
            );
            Ok(())
        });
    }
}

/// Starts simulation `id` in the background; its run directory's id is returned.
pub fn start(state: &Arc<ServeState>, id: &str) -> Result<String, ApiError> {
    let config = state.with_sim(id, |sim| match sim.state {
        SimState::Created => Ok(sim.config.clone()),
        SimState::Running => Err(ApiError::Conflict(format!(
            "simulation `{id}` is already running"
        ))),
        other => Err(ApiError::Conflict(format!(
            "simulation `{id}` has already run (it is {}); create a new one to run it again",
            state_name(other)
        ))),
    })?;
    // Keys are read from the server's environment now, and only into the run's memory.
    let run_config = config.run_config(|var| std::env::var(var).ok())?;
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let run_id = state.with_sim(id, |sim| {
        if sim.state != SimState::Created {
            return Err(ApiError::Conflict(format!(
                "simulation `{id}` was started meanwhile"
            )));
        }
        // Chosen and created under the registry lock, so two starts never share a directory.
        let dir = unique_dir(
            &state.runs,
            &format!("sim-{stamp}-seed{}", run_config.settings.seed),
        );
        std::fs::create_dir_all(&dir)
            .map_err(|e| ApiError::Internal(format!("{}: {e}", dir.display())))?;
        let run_id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        sim.run_id = Some(run_id.clone());
        sim.set_state(SimState::Running);
        let watch = Watch {
            state: state.clone(),
            id: id.to_owned(),
        };
        // Spawned on this worker's local set: the sim's clients are not Send. It cannot run
        // before this closure returns, so the abort handle is in place first.
        let task = actix_web::rt::spawn(async move {
            let outcome = run_sim_observed(&run_config, &dir, Some(&watch)).await;
            let _ = watch.state.with_sim(&watch.id, |sim| {
                match outcome {
                    Ok(outcome) => {
                        for m in &outcome.metrics {
                            sim.metrics.insert(m.agent_id.clone(), m.clone());
                        }
                        sim.publish("summary", json!(outcome.results.summary));
                        sim.set_state(SimState::Finished);
                    }
                    Err(e) => {
                        sim.error = Some(e.to_string());
                        sim.set_state(SimState::Failed);
                    }
                }
                Ok(())
            });
        });
        sim.task = Some(task.abort_handle());
        Ok(run_id)
    })?;
    Ok(run_id)
}

/// Stops running simulation `id`. Its run directory keeps what was written before (the
/// manifest, and no results: the CLI writes them at the end too).
pub fn stop(state: &ServeState, id: &str) -> Result<(), ApiError> {
    state.with_sim(id, |sim| {
        if sim.state != SimState::Running {
            return Err(ApiError::Conflict(format!(
                "simulation `{id}` is not running"
            )));
        }
        if let Some(task) = sim.task.take() {
            task.abort();
        }
        sim.error = Some("stopped through the API before the end".to_owned());
        sim.set_state(SimState::Stopped);
        Ok(())
    })
}
