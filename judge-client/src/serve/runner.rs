//! Starting and stopping a simulation: `judge sim`'s own run (`run_sim_observed`) on the actix
//! runtime of the worker that took the request, each round published to the simulation's
//! events as it happens, the run directory written under `--runs` like the CLI writes it (plus
//! `simulation.json`, and the stop in the manifest: see [`super::rundir`]).

use std::sync::Arc;

use serde_json::json;

use super::error::ApiError;
use super::live::{record, reindex};
use super::rundir::{Stop, mark_stopped, write_simulation};
use super::state::{ServeState, SimState};
use crate::rundir::create_unique_dir;
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

/// Writes simulation `id`'s `simulation.json` into its run directory.
fn save(state: &ServeState, id: &str) -> Result<(), ApiError> {
    let (record, run_id) = state.with_sim(id, |sim| Ok((record(sim), sim.run_id.clone())))?;
    match run_id {
        Some(run_id) => write_simulation(&state.runs.join(run_id), &record),
        None => Ok(()),
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
            other.name()
        ))),
    })?;
    // Keys are read from the server's environment and secrets file now, and only into the
    // run's memory.
    let run_config = config.run_config(|var| std::env::var(var).ok(), state.secrets())?;
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let run_id = state.with_sim(id, |sim| {
        if sim.state != SimState::Created {
            return Err(ApiError::Conflict(format!(
                "simulation `{id}` was started meanwhile"
            )));
        }
        // Chosen and created under the registry lock, so two starts never share a directory.
        let dir = create_unique_dir(
            &state.runs,
            &format!("sim-{stamp}-seed{}", run_config.settings.seed),
        )
        .map_err(|e| ApiError::Internal(format!("{}: {e}", state.runs.display())))?;
        let run_id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        sim.run_id = Some(run_id.clone());
        sim.set_state(SimState::Running);
        write_simulation(&dir, &record(sim))?;
        let watch = Watch {
            state: state.clone(),
            id: id.to_owned(),
        };
        // Spawned on this worker's local set: the sim's clients are not Send. It cannot run
        // before this closure returns, so the handle is in place first.
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
            if let Err(e) = save(&watch.state, &watch.id) {
                eprintln!("judge serve: simulation {}: {e}", watch.id);
            }
            reindex(&watch.state, &watch.id).await;
        });
        sim.task = Some(task);
        Ok(run_id)
    })?;
    Ok(run_id)
}

/// Stops running simulation `id`: aborts its run, waits until it has ended, then records the
/// stop in the run directory's manifest (state `stopped`, when, conversations finished). What
/// the run wrote before stays (its manifest; conversations are written at the end, like the
/// CLI does), and nothing marks it complete.
pub async fn stop(state: &ServeState, id: &str) -> Result<(), ApiError> {
    let task = state.with_sim(id, |sim| {
        if sim.state != SimState::Running {
            return Err(ApiError::Conflict(format!(
                "simulation `{id}` is not running"
            )));
        }
        sim.task.take().ok_or_else(|| {
            ApiError::Conflict(format!("simulation `{id}` is being stopped already"))
        })
    })?;
    task.abort();
    // Cancelled, or it had just finished: either way nothing of it runs after this.
    let _ = task.await;
    let stop = state.with_sim(id, |sim| {
        if sim.state != SimState::Running {
            // It finished (or failed) before the abort reached it: that is its end.
            return Ok(None);
        }
        sim.error = Some("stopped through the API before the end".to_owned());
        sim.set_state(SimState::Stopped);
        Ok(sim.run_id.clone().map(|run_id| Stop {
            run_id,
            at: sim.ended_at.unwrap_or_else(chrono::Utc::now),
            conversations_done: sim.conversations_done,
            conversations_planned: sim.config.personas.len() * sim.config.run.trials as usize,
        }))
    })?;
    if let Some(stop) = stop {
        let dir = state.runs.join(&stop.run_id);
        mark_stopped(&dir, &stop)?;
        save(state, id)?;
        reindex(state, id).await;
    }
    Ok(())
}
