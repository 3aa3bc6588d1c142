//! `judge apps`: the simulated-applications suite against an HTTP target, from probe to the files
//! of its run directory:
//!
//! ```text
//! runs/apps-<time>-seed<seed>/manifest.json   judge version, seed, settings, target, capabilities
//!                             results.json    per scenario: pass^k, pass@k, per-trial status and why
//!                             junit.xml       one testcase per scenario
//!                             report.html     summary, pass^k chart, state diffs, audit logs, transcripts
//!                             scenarios/<id>/ outcome, and per trial audit.jsonl, final_state.json,
//!                                             grade.json, transcript.json ([`super::artifacts`])
//!                             mcp-refused-calls.jsonl  (action mode mcp) calls no open trial took
//! ```
//!
//! Everything but `manifest.json` (which holds wall-clock times) is a pure function of the
//! scenarios, the seed and the target's replies.

use crate::report::stats::bounded_mean_ci;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use chrono::Utc;
use serde::{Deserialize, Serialize};

use super::artifacts::{ArtifactError, write_outcome};
use super::mcp::{McpServer, McpServerError};
use super::report;
use super::runner::{ActionMode, RunError, ScenarioOutcome, TargetAgent, run_scenario};
use super::{AppRegistry, Scenario};
use crate::endpoint::{
    Api, ApiScope, Capabilities, ChainNeedsResponses, Credentials, HistoryMode, TargetClient,
    TargetError, TargetSettings, TurnMode, probe_in,
};
use crate::rundir::{self, Manifest, RunDirError};

/// What `judge apps` was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppsConfig {
    pub seed: u64,
    pub mode: ActionMode,
    pub history: HistoryMode,
    /// The API the turns go through.
    #[serde(default)]
    pub api: Api,
    /// Overrides every scenario's own trial count.
    pub trials: Option<u32>,
    /// Where the scenarios came from: `shipped` or a folder.
    pub source: String,
    /// Where the trials' MCP server listens, and the URL agents are told (action mode `mcp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpSettings>,
}

/// The MCP server of action mode `mcp` (`--mcp-listen`, `--mcp-url`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpSettings {
    /// The address it binds (port 0: any free port).
    pub listen: SocketAddr,
    /// The base URL agents are told, when they reach the judge by another name (a container's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_url: Option<String>,
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            public_url: None,
        }
    }
}

/// An apps run's manifest.
pub type AppsManifest = Manifest<AppsDetails>;

/// What an apps run records in its manifest beside the envelope every run has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppsDetails {
    pub config: AppsConfig,
    pub target: TargetSettings,
    pub capabilities: Capabilities,
}

/// `results.json`: the outcome of every scenario (transcripts and audits are in the scenario
/// folders, not here).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppsResults {
    pub suite: String,
    pub seed: u64,
    pub mode: ActionMode,
    /// The API the turns went through.
    #[serde(default)]
    pub api: Api,
    /// What each request carried.
    #[serde(default = "full_history")]
    pub history: HistoryMode,
    pub scenarios: Vec<ScenarioSummary>,
    /// Scenarios whose every trial passed, over scenarios with a graded trial.
    pub passed_scenarios: u32,
    pub graded_scenarios: u32,
    /// Mean pass^k over scenarios with a graded trial.
    pub mean_pass_hat_k: Option<f64>,
    /// Its 95 % interval: Wilson of the mean (pass^k is in [0, 1]), honest at a few scenarios.
    #[serde(default)]
    pub mean_pass_hat_k_ci: Option<(f64, f64)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioSummary {
    pub id: String,
    pub title: String,
    pub goal: String,
    pub trials: usize,
    pub graded: u32,
    pub passed: u32,
    pub pass_hat_k: Option<f64>,
    pub pass_at_k: Option<f64>,
    pub all_passed: bool,
    /// One line per trial that did not pass.
    pub why: Vec<String>,
}

/// Apps runs send the whole conversation unless told otherwise (results that do not say).
fn full_history() -> HistoryMode {
    HistoryMode::Full
}

impl AppsConfig {
    /// How the run's turns are sent.
    pub fn turns(&self) -> Result<TurnMode, ChainNeedsResponses> {
        TurnMode::new(self.api, self.history)
    }
}

impl AppsResults {
    pub fn from_outcomes(
        seed: u64,
        mode: ActionMode,
        turns: TurnMode,
        outcomes: &[ScenarioOutcome],
    ) -> Self {
        let scenarios: Vec<ScenarioSummary> = outcomes
            .iter()
            .map(|o| ScenarioSummary {
                id: o.scenario_id.clone(),
                title: o.title.clone(),
                goal: o.goal.clone(),
                trials: o.trials.len(),
                graded: o.graded,
                passed: o.passed,
                pass_hat_k: o.pass_hat_k,
                pass_at_k: o.pass_at_k,
                all_passed: o.all_passed(),
                why: o.failure_summary(),
            })
            .collect();
        let graded: Vec<&ScenarioSummary> = scenarios.iter().filter(|s| s.graded > 0).collect();
        let mean_pass_hat_k = (!graded.is_empty())
            .then(|| graded.iter().filter_map(|s| s.pass_hat_k).sum::<f64>() / graded.len() as f64);
        Self {
            suite: "apps".to_owned(),
            seed,
            mode,
            api: turns.api,
            history: turns.history,
            passed_scenarios: graded.iter().filter(|s| s.all_passed).count() as u32,
            graded_scenarios: graded.len() as u32,
            mean_pass_hat_k,
            mean_pass_hat_k_ci: bounded_mean_ci(
                &graded
                    .iter()
                    .filter_map(|s| s.pass_hat_k)
                    .collect::<Vec<_>>(),
            ),
            scenarios,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AppsSuiteError {
    #[error("the target did not pass the capability probe: {0}")]
    Probe(TargetError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    #[error(transparent)]
    Turns(#[from] ChainNeedsResponses),
    #[error(transparent)]
    Mcp(#[from] McpServerError),
}

/// Told about each scenario as it finishes (the CLI's progress bar).
pub trait AppsProgress {
    fn scenario_done(&self, outcome: &ScenarioOutcome);
}

impl AppsProgress for () {
    fn scenario_done(&self, _: &ScenarioOutcome) {}
}

pub struct AppsRun {
    pub dir: PathBuf,
    pub results: AppsResults,
    pub outcomes: Vec<ScenarioOutcome>,
}

/// How the run is described in its logs: `apps (auto mode)`, and the API and history when they
/// are not Chat Completions with the whole conversation.
fn log_mode(config: &AppsConfig, turns: TurnMode) -> String {
    let mode = serde_json::to_value(config.mode)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    match turns.annotation(HistoryMode::Full) {
        annotation if annotation.is_empty() => format!("apps ({mode} mode)"),
        annotation => format!("apps ({mode} mode, {annotation})"),
    }
}

/// Probes the target, plays every scenario against it and writes the run directory.
pub async fn run(
    settings: TargetSettings,
    credentials: Credentials,
    config: AppsConfig,
    mut scenarios: Vec<Scenario>,
    out_root: &Path,
    progress: &dyn AppsProgress,
) -> Result<AppsRun, AppsSuiteError> {
    let turns = config.turns()?;
    let registry = AppRegistry::builtin();
    for scenario in &mut scenarios {
        if let Some(trials) = config.trials {
            scenario.trials = trials.max(1);
        }
        scenario.validate(&registry).map_err(RunError::from)?;
    }
    let created_at = Utc::now();
    let base = format!(
        "apps-{}-seed{}",
        created_at.format("%Y%m%dT%H%M%SZ"),
        config.seed
    );
    // The directory comes first, so a target that is down from the start still leaves a run
    // that says why it failed.
    let (dir, run_id) = rundir::create(out_root, &base)?;
    let mut client = TargetClient::new(settings.clone(), credentials);
    let probe_session = format!("apps-probe-s{}", config.seed);
    let capabilities = match probe_in(&client, &probe_session, ApiScope::Only(turns.api)).await {
        Ok(capabilities) => capabilities,
        Err(e) => {
            let error = AppsSuiteError::Probe(e.clone());
            let mode = log_mode(&config, turns);
            // The error being returned matters more than a failure to record it.
            let _ = rundir::record_probe_failure(
                &dir,
                "apps",
                &mode,
                &probe_session,
                &e,
                &error.to_string(),
            );
            return Err(error);
        }
    };
    client.set_model(capabilities.model.clone());
    let details = AppsDetails {
        config: config.clone(),
        target: settings,
        capabilities: capabilities.clone(),
    };
    let mut manifest = AppsManifest::running(run_id, "apps", created_at, details);
    rundir::write_manifest(&dir, &manifest)?;
    let played = play(
        &client,
        &capabilities,
        &registry,
        &config,
        &scenarios,
        &dir,
        progress,
    )
    .await;
    let outcomes = match played {
        Ok(outcomes) => outcomes,
        Err(e) => {
            // The error being returned matters more than a failure to record it.
            let _ = rundir::mark_failed(&dir, "apps", &e.to_string());
            return Err(e);
        }
    };
    let mode = outcomes.first().map_or(config.mode, |o| o.mode);
    let results = AppsResults::from_outcomes(config.seed, mode, turns, &outcomes);
    rundir::write_json(&dir.join("results.json"), &results)?;
    rundir::write_atomic(&dir.join("junit.xml"), report::junit(&results).as_bytes())?;
    manifest.complete();
    rundir::write_atomic(
        &dir.join("report.html"),
        report::html(&manifest, &results, &outcomes).as_bytes(),
    )?;
    rundir::write_manifest(&dir, &manifest)?;
    Ok(AppsRun {
        dir,
        results,
        outcomes,
    })
}

/// Plays every scenario against the target, writing each one's files as it finishes.
async fn play(
    client: &TargetClient,
    capabilities: &Capabilities,
    registry: &AppRegistry,
    config: &AppsConfig,
    scenarios: &[Scenario],
    dir: &Path,
    progress: &dyn AppsProgress,
) -> Result<Vec<ScenarioOutcome>, AppsSuiteError> {
    let turns = config.turns()?;
    let server = if config.mode == ActionMode::Mcp {
        let settings = config.mcp.clone().unwrap_or_default();
        Some(McpServer::start(
            settings.listen,
            settings.public_url.as_deref(),
        )?)
    } else {
        None
    };
    let mut agent = TargetAgent::new(client, capabilities.mock_time)
        .with_turns(turns)
        .resetting_sessions(capabilities.reset);
    if let Some(server) = &server {
        agent = agent.serving_mcp(server);
    }
    let mut outcomes = Vec::with_capacity(scenarios.len());
    for scenario in scenarios {
        let outcome =
            run_scenario(&mut agent, registry, scenario, config.mode, config.seed).await?;
        write_outcome(&dir.join("scenarios"), &outcome)?;
        progress.scenario_done(&outcome);
        outcomes.push(outcome);
    }
    if let Some(server) = &server {
        // Calls that reached no open trial (after their trial ended, or naming none): they
        // changed nothing, and the run says so.
        let refused = server.refused();
        if !refused.is_empty() {
            let mut lines = String::new();
            for call in &refused {
                lines.push_str(&serde_json::to_string(call).unwrap_or_default());
                lines.push('\n');
            }
            rundir::write_atomic(&dir.join(REFUSED_MCP_CALLS), lines.as_bytes())?;
        }
    }
    Ok(outcomes)
}

/// The run directory's file of MCP calls that reached no open trial (action mode `mcp`).
pub const REFUSED_MCP_CALLS: &str = "mcp-refused-calls.jsonl";
