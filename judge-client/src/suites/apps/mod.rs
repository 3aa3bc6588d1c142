//! Simulated applications (docs/contracts/apps.md): the agent under test operates apps
//! whose whole state lives in the judge, so its actions can be graded by the state they leave.
//!
//! - [`App`] is the plugin contract and [`AppRegistry`] the place new apps are added (no change to
//!   the core is needed: register a factory);
//! - [`paypal`] is the PayPal app of docs/contracts/apps.md, with money in [`money`] cents;
//! - [`directive`] parses `APP_ACTION: app.action(k=v, ...)` out of agent text, [`tools`] maps the
//!   same actions to OpenAI tools and tool calls;
//! - [`mcp`] serves each trial's world as an MCP server (action mode `mcp`), its tools the same
//!   actions;
//! - [`world`] holds one run's apps, logical clock, step counter and [`audit`] log, with
//!   checkpoint, restore and branching;
//! - [`scenario`] loads YAML scenarios and [`grade`] grades a final state; [`runner`] plays a
//!   scenario against an agent (the HTTP target or a scripted one) for several trials, and
//!   [`artifacts`] writes its files into the run directory;
//! - [`suite`] is `judge apps` from probe to run directory, with [`report`] (JUnit, HTML) and the
//!   [`shipped`] scenarios compiled into the binary.

pub mod artifacts;
pub mod audit;
pub mod directive;
pub mod grade;
pub mod mcp;
pub mod money;
pub mod paypal;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod scripted;
pub mod shipped;
pub mod suite;
pub mod tools;
pub mod world;

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use audit::{AuditEntry, AuditLog};
pub use directive::{Directive, ParsedMessage, parse_message};
pub use runner::{
    ActionMode, AgentEndpoint, ScenarioOutcome, TargetAgent, run_scenario, run_scenarios,
};
pub use scenario::Scenario;
pub use world::{Checkpoint, LogicalClock, World};

use crate::report::stats::mean;
use crate::suites::{Better, Figure, Headline, Suite, UnitScore, Units};

/// The simulated-applications suite ([`Suite`]): judged on the mean pass^k over scenarios,
/// compared scenario by scenario.
pub struct Apps;

impl Suite for Apps {
    const KIND: &'static str = "apps";
    const UNIT: &'static str = "scenario";
    type Results = suite::AppsResults;

    const HEADLINE: Option<Headline> = Some(Headline {
        label: "mean pass^k",
        units: Units::Fraction,
    });

    fn headline(r: &Self::Results) -> Option<f64> {
        r.mean_pass_hat_k
    }

    fn seed(r: &Self::Results) -> Option<u64> {
        Some(r.seed)
    }

    fn figures(r: &Self::Results) -> Vec<Figure> {
        let pass_at_k: Vec<f64> = r.scenarios.iter().filter_map(|s| s.pass_at_k).collect();
        vec![
            Figure::new("mean_pass_hat_k", r.mean_pass_hat_k, Better::Higher),
            Figure::new("mean_pass_at_k", mean(&pass_at_k), Better::Higher),
            Figure::new(
                "passed_scenarios",
                Some(f64::from(r.passed_scenarios)),
                Better::Higher,
            ),
            Figure::new(
                "graded_scenarios",
                Some(f64::from(r.graded_scenarios)),
                Better::Higher,
            ),
        ]
    }

    fn units(r: &Self::Results) -> Vec<UnitScore> {
        r.scenarios
            .iter()
            .map(|s| {
                UnitScore::new(
                    s.id.clone(),
                    s.id.clone(),
                    s.pass_hat_k,
                    s.graded > 0 && s.all_passed,
                )
            })
            .collect()
    }

    fn turns(r: &Self::Results) -> Option<crate::endpoint::TurnMode> {
        Some(crate::endpoint::TurnMode {
            api: r.api,
            history: r.history,
        })
    }
}

/// Parameters of an action call: a JSON object, as a directive or a tool call gives them.
pub type Params = Map<String, Value>;

/// One action an app offers, described for the agent (system prompt or OpenAI tool).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the parameters (an `object` schema).
    pub parameters: Value,
    /// What a successful result's `data` holds, as a JSON Schema-like sketch.
    pub returns: Value,
}

/// The outcome of one action: what the acting agent is told, and what the audit log keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppResult {
    pub success: bool,
    pub data: Option<Value>,
    pub error: Option<String>,
    /// One human sentence for the acting agent ("Sent $30.00 to bob. Balance: $70.00").
    pub message: String,
}

impl AppResult {
    pub fn ok(message: impl Into<String>, data: Value) -> Self {
        Self {
            success: true,
            data: Some(data),
            error: None,
            message: message.into(),
        }
    }

    pub fn fail(error: impl Into<String>) -> Self {
        let error = error.into();
        Self {
            success: false,
            data: None,
            message: error.clone(),
            error: Some(error),
        }
    }
}

/// Something an agent perceives at its next turn: its own results, money received, requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub app_id: String,
    pub message: String,
    pub data: Value,
    /// Higher is more important; the prompt lists observations by descending priority.
    #[serde(default)]
    pub priority: i32,
}

/// Errors of app set-up and state handling (action failures are [`AppResult`]s, not errors).
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("unknown app `{0}`")]
    UnknownApp(String),
    #[error("app `{app}`: invalid configuration: {reason}")]
    Config { app: String, reason: String },
    #[error("app `{app}`: cannot restore its snapshot: {source}")]
    Snapshot {
        app: String,
        #[source]
        source: serde_json::Error,
    },
}

/// A simulated application. Every method runs synchronously on state held in memory: the world is
/// the judge, so there is nothing to wait for, and determinism is easier to keep.
pub trait App: Send {
    /// Unique id used in directives and tool names: `paypal`.
    fn id(&self) -> &str;
    /// Display name: `PayPal`.
    fn name(&self) -> &str;
    /// One paragraph for the agent's system prompt.
    fn description(&self) -> &str {
        ""
    }
    fn actions(&self) -> Vec<ActionSpec>;
    /// Sets up the initial state for `agents`; ids and any randomness derive from `seed` only.
    fn initialize(&mut self, agents: &[String], config: &Value, seed: u64) -> Result<(), AppError>;
    /// Runs `action` for `agent` at the world's logical time.
    fn execute(
        &mut self,
        agent: &str,
        action: &str,
        params: &Params,
        clock: &LogicalClock,
    ) -> AppResult;
    /// The agent's own view (balance, pending requests); `None` for an agent the app does not know.
    fn agent_state(&self, _agent: &str) -> Option<Value> {
        None
    }
    /// Takes the observations queued for `agent` (counterparty notifications).
    fn drain_observations(&mut self, _agent: &str) -> Vec<Observation> {
        Vec::new()
    }
    /// The state graded at the end of a scenario. Defaults to the full snapshot.
    fn state(&self) -> Value {
        self.snapshot()
    }
    /// Everything needed to restore the app exactly, queued observations and id generator included.
    fn snapshot(&self) -> Value;
    fn restore(&mut self, snapshot: &Value) -> Result<(), AppError>;
}

type Factory = Box<dyn Fn() -> Box<dyn App> + Send + Sync>;

/// App factories by id. The world asks it for fresh instances, so adding an app is one
/// [`AppRegistry::register`] call.
#[derive(Default)]
pub struct AppRegistry {
    factories: BTreeMap<String, Factory>,
}

impl fmt::Debug for AppRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppRegistry")
            .field("apps", &self.ids())
            .finish()
    }
}

impl AppRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The apps shipped with the judge.
    pub fn builtin() -> Self {
        let mut registry = Self::new();
        registry.register(paypal::APP_ID, || Box::new(paypal::PayPal::new()));
        registry
    }

    /// Adds (or replaces) the factory of app `id`.
    pub fn register<F>(&mut self, id: &str, factory: F)
    where
        F: Fn() -> Box<dyn App> + Send + Sync + 'static,
    {
        self.factories.insert(id.to_owned(), Box::new(factory));
    }

    /// A fresh, uninitialised instance of app `id`.
    pub fn create(&self, id: &str) -> Result<Box<dyn App>, AppError> {
        self.factories
            .get(id)
            .map(|factory| factory())
            .ok_or_else(|| AppError::UnknownApp(id.to_owned()))
    }

    pub fn contains(&self, id: &str) -> bool {
        self.factories.contains_key(id)
    }

    pub fn ids(&self) -> Vec<String> {
        self.factories.keys().cloned().collect()
    }
}
