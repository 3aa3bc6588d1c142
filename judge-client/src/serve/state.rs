//! What `judge serve` holds in memory: its settings and the simulations created through the API
//! (their configuration, state, live events and injected endpoints' latest metrics). Finished
//! runs live on disk; a simulation only points at its run directory.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio::sync::broadcast;

use super::config::SimulationConfig;
use super::error::ApiError;
use super::index::Index;
use super::secrets::Secrets;
use crate::suites::sim::injection::EndpointMetrics;

/// Events kept per simulation for late SSE subscribers; beyond it the oldest round events go
/// (state changes are few and always kept in `state`).
const EVENT_BACKLOG: usize = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SimState {
    Created,
    Running,
    Finished,
    Failed,
    Stopped,
}

impl SimState {
    /// The state's name, as it is serialized (for messages and index rows).
    pub fn name(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Running => "running",
            Self::Finished => "finished",
            Self::Failed => "failed",
            Self::Stopped => "stopped",
        }
    }

    pub fn is_over(self) -> bool {
        matches!(self, Self::Finished | Self::Failed | Self::Stopped)
    }
}

/// One server-sent event: `kind` is the SSE event name, `data` its JSON.
#[derive(Debug, Clone, Serialize)]
pub struct SimEvent {
    pub kind: &'static str,
    pub data: serde_json::Value,
}

impl SimEvent {
    /// The last event of a stream: the simulation is over.
    pub fn is_end(&self) -> bool {
        self.kind == "end"
    }
}

pub struct Simulation {
    pub id: String,
    pub created_at: DateTime<Utc>,
    pub config: SimulationConfig,
    pub state: SimState,
    /// The run directory's id under `--runs`, once started.
    pub run_id: Option<String>,
    pub error: Option<String>,
    pub started_at: Option<DateTime<Utc>>,
    /// When it finished, failed or was stopped.
    pub ended_at: Option<DateTime<Utc>>,
    pub rounds_done: usize,
    pub conversations_done: usize,
    pub events: Vec<SimEvent>,
    pub sender: broadcast::Sender<SimEvent>,
    /// Latest metrics per injected agent id, updated after every round.
    pub metrics: BTreeMap<String, EndpointMetrics>,
    /// The background run: `stop` aborts it and waits for it to end.
    pub task: Option<tokio::task::JoinHandle<()>>,
}

impl Simulation {
    pub fn new(id: String, config: SimulationConfig) -> Self {
        Self {
            id,
            created_at: Utc::now(),
            config,
            state: SimState::Created,
            run_id: None,
            error: None,
            started_at: None,
            ended_at: None,
            rounds_done: 0,
            conversations_done: 0,
            events: Vec::new(),
            sender: broadcast::channel(1024).0,
            metrics: BTreeMap::new(),
            task: None,
        }
    }

    /// Records `event` for late subscribers and sends it to live ones.
    pub fn publish(&mut self, kind: &'static str, data: serde_json::Value) {
        let event = SimEvent { kind, data };
        if self.events.len() >= EVENT_BACKLOG
            && let Some(pos) = self.events.iter().position(|e| e.kind == "round")
        {
            self.events.remove(pos);
        }
        self.events.push(event.clone());
        // No receiver is fine: nobody watches.
        let _ = self.sender.send(event);
    }

    /// Moves to `state` and tells subscribers; a finished state also ends their streams.
    pub fn set_state(&mut self, state: SimState) {
        self.state = state;
        match state {
            SimState::Running => self.started_at = Some(Utc::now()),
            s if s.is_over() => self.ended_at = Some(Utc::now()),
            _ => {}
        }
        self.publish(
            "state",
            serde_json::json!({"state": state, "run_id": self.run_id, "error": self.error}),
        );
        if state.is_over() {
            self.task = None;
            self.publish(
                "end",
                serde_json::json!({"state": state, "run_id": self.run_id}),
            );
        }
    }
}

pub struct ServeState {
    pub runs: PathBuf,
    pub auth_token: Option<String>,
    pub simulations: Mutex<BTreeMap<String, Simulation>>,
    /// The Postgres index (`--database-url`), when there is one.
    pub index: Option<Index>,
    /// `--secrets-file`, when there is one (shared with the CLI, which reloads it on SIGHUP).
    pub secrets: Option<std::sync::Arc<Secrets>>,
}

impl ServeState {
    pub fn new(
        runs: PathBuf,
        auth_token: Option<String>,
        index: Option<Index>,
        secrets: Option<std::sync::Arc<Secrets>>,
    ) -> Self {
        Self {
            runs,
            auth_token,
            simulations: Mutex::new(BTreeMap::new()),
            index,
            secrets,
        }
    }

    pub fn secrets(&self) -> Option<&Secrets> {
        self.secrets.as_deref()
    }

    /// Runs `f` on simulation `id` under the lock (never held across an await).
    pub fn with_sim<T>(
        &self,
        id: &str,
        f: impl FnOnce(&mut Simulation) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let mut sims = self
            .simulations
            .lock()
            .map_err(|_| ApiError::Internal("the simulation registry is poisoned".to_owned()))?;
        let sim = sims
            .get_mut(id)
            .ok_or_else(|| ApiError::not_found("simulation", id))?;
        f(sim)
    }
}
