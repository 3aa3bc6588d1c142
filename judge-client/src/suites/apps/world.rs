//! The app world of one run: app instances, the logical clock, the step counter, the audit log and
//! the observations waiting for each agent. Checkpoints capture all of it, so a run can be restored
//! or branched from any step.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Duration, SecondsFormat, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::audit::{AuditEntry, AuditLog, INVALID_DIRECTIVE};
use super::directive::{Directive, ParsedMessage, parse_message};
use super::{App, AppError, AppRegistry, AppResult, Observation, Params};

/// A world shared between the runner and the server that lets an agent act on it over MCP
/// ([`super::mcp`]). Every access is one short critical section; none is held across an await.
#[derive(Clone)]
pub struct SharedWorld(Arc<Mutex<World>>);

impl SharedWorld {
    pub fn new(world: World) -> Self {
        Self(Arc::new(Mutex::new(world)))
    }

    /// Runs `f` on the world. A panic in an earlier access does not poison it for later ones: the
    /// world's state is what that access left, and grading reads it as it is.
    pub fn with<R>(&self, f: impl FnOnce(&mut World) -> R) -> R {
        let mut world = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut world)
    }
}

/// Logical time: `start + step × step_seconds`. Nothing in the world reads the wall clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogicalClock {
    pub start: DateTime<Utc>,
    pub step: u64,
    pub step_seconds: i64,
}

impl LogicalClock {
    pub fn new(start: DateTime<Utc>, step_seconds: i64) -> Self {
        Self {
            start,
            step: 0,
            step_seconds,
        }
    }

    pub fn now(&self) -> DateTime<Utc> {
        let seconds = i64::try_from(self.step)
            .unwrap_or(i64::MAX)
            .saturating_mul(self.step_seconds);
        self.start + Duration::seconds(seconds)
    }

    /// `now` in RFC 3339 with a `Z`, to the second.
    pub fn timestamp(&self) -> String {
        self.now().to_rfc3339_opts(SecondsFormat::Secs, true)
    }

    /// The logical day, `YYYY-MM-DD` (for daily limits).
    pub fn day(&self) -> String {
        self.now().format("%Y-%m-%d").to_string()
    }
}

impl Default for LogicalClock {
    /// 2025-01-01T09:00:00Z, a minute per step: a fixed origin keeps runs reproducible.
    fn default() -> Self {
        let start = Utc
            .with_ymd_and_hms(2025, 1, 1, 9, 0, 0)
            .single()
            .unwrap_or(DateTime::<Utc>::UNIX_EPOCH);
        Self::new(start, 60)
    }
}

/// An app of the world and its configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppSetup {
    pub id: String,
    #[serde(default)]
    pub config: Value,
}

/// Everything needed to put a world back as it was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub seed: u64,
    pub agents: Vec<String>,
    pub clock: LogicalClock,
    /// Each app's snapshot, by app id.
    pub app_states: BTreeMap<String, Value>,
    pub audit: AuditLog,
    /// Results not yet shown to their agent.
    pub pending: BTreeMap<String, Vec<Observation>>,
}

#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    #[error(transparent)]
    App(#[from] AppError),
    #[error("the checkpoint holds apps {found:?}, this world has {expected:?}")]
    AppsMismatch {
        found: Vec<String>,
        expected: Vec<String>,
    },
}

/// What executing one agent message did.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub parsed: ParsedMessage,
    /// One result per directive, malformed ones included, in order.
    pub results: Vec<AppResult>,
}

pub struct World {
    seed: u64,
    agents: Vec<String>,
    apps: BTreeMap<String, Box<dyn App>>,
    clock: LogicalClock,
    audit: AuditLog,
    pending: BTreeMap<String, Vec<Observation>>,
}

impl World {
    /// A world with `apps` initialised for `agents`. Each app gets its own seed, derived from the
    /// run's seed and its id, so adding an app does not change another app's ids.
    pub fn new(
        registry: &AppRegistry,
        apps: &[AppSetup],
        agents: &[String],
        seed: u64,
        clock: LogicalClock,
    ) -> Result<Self, WorldError> {
        let mut instances = BTreeMap::new();
        for setup in apps {
            let mut app = registry.create(&setup.id)?;
            app.initialize(agents, &setup.config, app_seed(seed, &setup.id))?;
            instances.insert(setup.id.clone(), app);
        }
        Ok(Self {
            seed,
            agents: agents.to_vec(),
            apps: instances,
            clock,
            audit: AuditLog::new(),
            pending: BTreeMap::new(),
        })
    }

    /// A new world continuing from `checkpoint`: a branch of the run it was taken from.
    pub fn from_checkpoint(
        registry: &AppRegistry,
        checkpoint: &Checkpoint,
    ) -> Result<Self, WorldError> {
        let mut apps = BTreeMap::new();
        for id in checkpoint.app_states.keys() {
            apps.insert(id.clone(), registry.create(id)?);
        }
        let mut world = Self {
            seed: checkpoint.seed,
            agents: checkpoint.agents.clone(),
            apps,
            clock: checkpoint.clock.clone(),
            audit: AuditLog::new(),
            pending: BTreeMap::new(),
        };
        world.restore(checkpoint)?;
        Ok(world)
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn agents(&self) -> &[String] {
        &self.agents
    }

    pub fn clock(&self) -> &LogicalClock {
        &self.clock
    }

    pub fn step(&self) -> u64 {
        self.clock.step
    }

    pub fn audit(&self) -> &AuditLog {
        &self.audit
    }

    pub fn apps(&self) -> impl Iterator<Item = &dyn App> {
        self.apps.values().map(|a| a.as_ref())
    }

    pub fn app(&self, id: &str) -> Option<&dyn App> {
        self.apps.get(id).map(|a| a.as_ref())
    }

    /// Ends the current step: later actions carry the next step number and time.
    pub fn advance(&mut self) {
        self.clock.step += 1;
    }

    /// Runs one action for `agent`, logs it, and queues its result for the agent to see.
    pub fn execute(&mut self, agent: &str, app: &str, action: &str, params: &Params) -> AppResult {
        let result = match self.apps.get_mut(app) {
            Some(instance) => instance.execute(agent, action, params, &self.clock),
            None => AppResult::fail(format!("Unknown app: {app}")),
        };
        self.conclude(agent, app, action, Value::Object(params.clone()), result)
    }

    /// Logs and reports an action refused before reaching its app (a tool call whose arguments are
    /// not a JSON object, say), exactly as a failed action.
    pub fn reject(
        &mut self,
        agent: &str,
        app: &str,
        action: &str,
        raw: Value,
        error: String,
    ) -> AppResult {
        self.conclude(agent, app, action, raw, AppResult::fail(error))
    }

    /// Marks the action just logged as asked by MCP request `id` (see [`AuditEntry`]).
    pub fn tag_last_call(&mut self, id: &str) {
        self.audit.tag_last(id);
    }

    /// Drops `agent`'s queued own results: in tool mode they already went back as tool messages.
    /// Notifications from apps (money received...) stay.
    pub fn forget_results(&mut self, agent: &str) {
        if let Some(queue) = self.pending.get_mut(agent) {
            queue.retain(|o| o.data.get("type") != Some(&json!("result")));
        }
    }

    fn conclude(
        &mut self,
        agent: &str,
        app: &str,
        action: &str,
        params: Value,
        result: AppResult,
    ) -> AppResult {
        self.log(agent, app, action, params, &result);
        let verdict = if result.success { "ok" } else { "failed" };
        self.notify(
            agent,
            Observation {
                app_id: app.to_owned(),
                message: format!("{app}.{action} {verdict}: {}", result.message),
                data: json!({"type": "result", "action": action, "success": result.success,
                             "data": result.data, "error": result.error}),
                priority: 2,
            },
        );
        result
    }

    pub fn execute_directive(&mut self, agent: &str, directive: &Directive) -> AppResult {
        self.execute(agent, &directive.app, &directive.action, &directive.params)
    }

    /// Parses an agent message and runs its directives in order; a malformed directive is logged
    /// and becomes an error observation, and the ones after it still run.
    pub fn act(&mut self, agent: &str, text: &str) -> Turn {
        let parsed = parse_message(text);
        let mut results = Vec::with_capacity(parsed.directives.len());
        for item in &parsed.directives {
            let result = match item {
                Ok(directive) => self.execute_directive(agent, directive),
                Err(error) => {
                    let result = AppResult::fail(error.to_string());
                    self.log(
                        agent,
                        "",
                        INVALID_DIRECTIVE,
                        json!({"text": error.raw}),
                        &result,
                    );
                    self.notify(
                        agent,
                        Observation {
                            app_id: String::new(),
                            message: format!("Your action was not executed: {error}"),
                            data: json!({"type": "error", "error": error.reason, "text": error.raw}),
                            priority: 3,
                        },
                    );
                    result
                }
            };
            results.push(result);
        }
        Turn { parsed, results }
    }

    /// What `agent` perceives now: its own results and the apps' notifications, most important
    /// first (ties in the order they happened). Taking them empties the queue.
    pub fn observations(&mut self, agent: &str) -> Vec<Observation> {
        let mut all = self.pending.remove(agent).unwrap_or_default();
        for app in self.apps.values_mut() {
            all.extend(app.drain_observations(agent));
        }
        all.sort_by_key(|o| std::cmp::Reverse(o.priority));
        all
    }

    pub fn agent_state(&self, app: &str, agent: &str) -> Option<Value> {
        self.apps.get(app)?.agent_state(agent)
    }

    /// The graded state of every app, by app id.
    pub fn state(&self) -> Value {
        Value::Object(
            self.apps
                .iter()
                .map(|(id, app)| (id.clone(), app.state()))
                .collect(),
        )
    }

    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            seed: self.seed,
            agents: self.agents.clone(),
            clock: self.clock.clone(),
            app_states: self
                .apps
                .iter()
                .map(|(id, app)| (id.clone(), app.snapshot()))
                .collect(),
            audit: self.audit.clone(),
            pending: self.pending.clone(),
        }
    }

    /// Puts this world back to `checkpoint`, which must hold exactly this world's apps.
    pub fn restore(&mut self, checkpoint: &Checkpoint) -> Result<(), WorldError> {
        let expected: Vec<String> = self.apps.keys().cloned().collect();
        let found: Vec<String> = checkpoint.app_states.keys().cloned().collect();
        if expected != found {
            return Err(WorldError::AppsMismatch { found, expected });
        }
        for (id, app) in &mut self.apps {
            app.restore(&checkpoint.app_states[id])?;
        }
        self.seed = checkpoint.seed;
        self.agents = checkpoint.agents.clone();
        self.clock = checkpoint.clock.clone();
        self.audit = checkpoint.audit.clone();
        self.pending = checkpoint.pending.clone();
        Ok(())
    }

    fn notify(&mut self, agent: &str, observation: Observation) {
        self.pending
            .entry(agent.to_owned())
            .or_default()
            .push(observation);
    }

    fn log(&mut self, agent: &str, app: &str, action: &str, params: Value, result: &AppResult) {
        self.audit.record(AuditEntry {
            seq: 0,
            step: self.clock.step,
            agent: agent.to_owned(),
            app: app.to_owned(),
            action: action.to_owned(),
            params,
            success: result.success,
            result: result.data.clone(),
            error: result.error.clone(),
            time: self.clock.timestamp(),
            mcp_request_id: None,
        });
    }
}

/// The seed of app `id` in a run seeded `seed`: the first 8 bytes of SHA-256(seed ‖ id).
fn app_seed(seed: u64, id: &str) -> u64 {
    let digest = Sha256::new()
        .chain_update(seed.to_le_bytes())
        .chain_update(id.as_bytes())
        .finalize();
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(bytes)
}
