//! One simulation run, start to finish: probe the target, run the panel, evaluate, write the run
//! directory.
//!
//! ```text
//! <dir>/manifest.json                    settings, persona hashes, config hash, target
//! <dir>/transcripts/conversation-NNNN.json   docs/contracts/transcript.md
//! <dir>/logs/session-NNNN.log            docs/contracts/run-log.md
//! <dir>/results.json                     checks per conversation and summary (deterministic)
//! <dir>/metrics.json                     per-endpoint operational metrics (latencies)
//! <dir>/fixtures/target.json, fixtures/injected.json   with --record
//! <dir>/junit.xml, report.html
//! ```

use std::path::{Path, PathBuf};
use std::rc::Rc;

use chrono::Utc;
use serde::Serialize;

use super::canonical::{derived_uuid, sha256_of};
use super::evaluate::{check_conversation, check_injected};
use super::fidelity;
use super::injection::fixtures::{BaselineAgent, FixtureRecorder};
use super::injection::{EndpointMetrics, InjectedEndpoint, InjectionPlan, Protocol};
use super::judge::LlmJudge;
use super::persona::Persona;
use super::report;
use super::results::{SimResults, conversation_result, exclusion, summarise};
use super::runner::{Conversation, Panel, PanelObserver, SimSettings, SimulatorChoice, run_panel};
use super::transcript::{log_text, transcript_json};
use crate::endpoint::{
    Api, ApiScope, ChainNeedsResponses, Credentials, HistoryMode, TargetClient, TargetError,
    TargetSettings, TurnMode, probe_in,
};
use crate::rundir::{self, Manifest, RunDirError};
use crate::suites::concurrency::{self, RequestSpan};

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the target cannot be simulated against (capability probe): {0}")]
    Probe(TargetError),
    #[error("no personas to simulate")]
    NoPersonas,
    #[error(transparent)]
    Turns(#[from] ChainNeedsResponses),
    #[error(
        "fixtures record Chat Completions requests, which `judge replay` sends again; record with --api chat"
    )]
    RecordNeedsChat,
    #[error("{path}: cannot encode as JSON: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// Which user simulator, and where the LLM one is.
#[derive(Debug, Clone)]
pub enum SimulatorSpec {
    Scripted,
    Llm {
        settings: TargetSettings,
        credentials: Credentials,
    },
}

#[derive(Debug, Clone)]
pub struct SimRunConfig {
    pub settings: SimSettings,
    pub target: TargetSettings,
    pub credentials: Credentials,
    pub personas: Vec<Persona>,
    pub simulator: SimulatorSpec,
    /// The LLM judge's endpoint, when rubric scores are wanted.
    pub judge: Option<(TargetSettings, Credentials)>,
    pub injection: InjectionPlan,
    /// Record fixtures of every request (target and injected).
    pub record: bool,
}

impl SimRunConfig {
    /// `sha256:` of everything that decides the run's content (the `simulation_config_hash` of
    /// docs/contracts/agent-injection.md); secrets are never part of it.
    pub fn config_hash(&self) -> String {
        let personas: Vec<(String, String)> = self
            .personas
            .iter()
            .map(|p| (p.id.clone(), p.hash()))
            .collect();
        let simulator = match &self.simulator {
            SimulatorSpec::Scripted => "scripted".to_owned(),
            SimulatorSpec::Llm { settings, .. } => format!("llm:{}", settings.endpoint),
        };
        // Where an injected agent lives is not part of the simulation: the same simulation
        // against another endpoint must send identical requests (record and replay, A/B).
        let mut injection = serde_json::to_value(&self.injection).unwrap_or_default();
        if let Some(endpoints) = injection
            .get_mut("endpoints")
            .and_then(serde_json::Value::as_array_mut)
        {
            for endpoint in endpoints {
                if let Some(e) = endpoint.as_object_mut() {
                    e.remove("url");
                }
            }
        }
        sha256_of(&serde_json::json!({
            "settings": self.settings,
            "personas": personas,
            "simulator": simulator,
            "injection": injection,
        }))
    }
}

impl SimRunConfig {
    /// What makes the configuration unusable before anything is sent; else how the target's
    /// turns are sent.
    pub fn check(&self) -> Result<TurnMode, SimError> {
        if self.personas.is_empty() {
            return Err(SimError::NoPersonas);
        }
        let turns = self.settings.turns()?;
        if (self.record || self.injection.record) && turns.api != Api::Chat {
            return Err(SimError::RecordNeedsChat);
        }
        Ok(turns)
    }
}

pub struct SimOutcome {
    pub dir: PathBuf,
    pub results: SimResults,
    pub conversations: Vec<Conversation>,
    pub metrics: Vec<EndpointMetrics>,
    /// What the judge can tell about its own part in the run (wall-clock based, so not in
    /// `results.json`): shown by the summary and the report.
    pub warnings: Vec<String>,
}

/// What a sim run records in its manifest beside the envelope every run has (written only:
/// readers take it as [`crate::rundir::AnyManifest`]).
#[derive(Serialize)]
pub struct SimDetails<'a> {
    settings: &'a SimSettings,
    config_hash: &'a str,
    target: &'a TargetSettings,
    target_model: &'a str,
    simulator: &'a str,
    personas: Vec<(String, String, String)>,
    injection: &'a InjectionPlan,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> SimError + '_ {
    move |source| SimError::Io {
        path: path.to_path_buf(),
        source,
    }
}

pub(crate) fn write(path: &Path, contents: &[u8]) -> Result<(), SimError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io_err(parent))?;
    }
    std::fs::write(path, contents).map_err(io_err(path))
}

pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), SimError> {
    // An encoding failure is an error, never an empty file standing in for the results.
    let mut text = serde_json::to_vec_pretty(value).map_err(|source| SimError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    text.push(b'\n');
    write(path, &text)
}

/// Runs the simulation into `dir` (created).
pub async fn run_sim(config: &SimRunConfig, dir: &Path) -> Result<SimOutcome, SimError> {
    run_sim_observed(config, dir, None).await
}

/// [`run_sim`], telling `observer` about every round as it happens.
pub async fn run_sim_observed(
    config: &SimRunConfig,
    dir: &Path,
    observer: Option<&dyn PanelObserver>,
) -> Result<SimOutcome, SimError> {
    let turns = config.check()?;
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let run_id = rundir::run_id(dir);
    let simulator_name = match &config.simulator {
        SimulatorSpec::Scripted => "scripted",
        SimulatorSpec::Llm { .. } => "llm",
    };
    let shape = if config.settings.single_turn {
        "single-turn"
    } else {
        "multi-turn"
    };
    let mode = match turns.annotation(HistoryMode::New) {
        annotation if annotation.is_empty() => format!("sim {shape} ({simulator_name} user)"),
        annotation => format!("sim {shape} ({simulator_name} user, {annotation})"),
    };
    let mut target = TargetClient::new(config.target.clone(), config.credentials.clone());
    let probe_session = derived_uuid(config.settings.seed, "probe");
    let capabilities = match probe_in(&target, &probe_session, ApiScope::Only(turns.api)).await {
        Ok(capabilities) => capabilities,
        Err(e) => {
            let error = SimError::Probe(e.clone());
            // The error being returned matters more than a failure to record it.
            let _ = rundir::record_probe_failure(
                dir,
                "sim",
                &mode,
                &probe_session,
                &e,
                &error.to_string(),
            );
            return Err(error);
        }
    };
    target.set_model(capabilities.model.clone());
    let simulator = match &config.simulator {
        SimulatorSpec::Scripted => SimulatorChoice::Scripted,
        SimulatorSpec::Llm {
            settings,
            credentials,
        } => SimulatorChoice::Llm(Rc::new(TargetClient::new(
            settings.clone(),
            credentials.clone(),
        ))),
    };
    let injected: Vec<(String, Rc<InjectedEndpoint>)> = config
        .injection
        .endpoints
        .iter()
        .map(|spec| {
            (
                spec.agent_id.clone(),
                Rc::new(InjectedEndpoint::new(spec.clone())),
            )
        })
        .collect();
    let record = config.record || config.injection.record;
    let target_fixtures = record.then(|| {
        FixtureRecorder::new(BaselineAgent {
            endpoint: config.target.endpoint.clone(),
            model: Some(capabilities.model.clone()),
            protocol: Protocol::Openai,
        })
    });
    let injected_fixtures = (record && !injected.is_empty()).then(|| {
        let spec = &config.injection.endpoints[0];
        FixtureRecorder::new(BaselineAgent {
            endpoint: spec.url.clone(),
            model: spec.model.clone(),
            protocol: spec.protocol,
        })
    });
    let config_hash = config.config_hash();
    let details = SimDetails {
        settings: &config.settings,
        config_hash: &config_hash,
        target: &config.target,
        target_model: &capabilities.model,
        simulator: simulator_name,
        personas: config
            .personas
            .iter()
            .map(|p| (p.id.clone(), p.version.clone(), p.hash()))
            .collect(),
        injection: &config.injection,
    };
    let mut manifest = Manifest::running(run_id, "sim", Utc::now(), details);
    rundir::write_manifest(dir, &manifest)?;
    // From here on the directory holds the run: an error that ends it is recorded in it.
    let finished: Result<SimOutcome, SimError> = async {

    let panel = Panel {
        target: &target,
        mock_time: capabilities.mock_time,
        reset: capabilities.reset,
        personas: &config.personas,
        settings: &config.settings,
        simulator,
        injected: &injected,
        fallback: config.injection.fallback,
        config_hash: config_hash.clone(),
        target_fixtures: target_fixtures.as_ref(),
        injected_fixtures: injected_fixtures.as_ref(),
        observer,
    };
    let conversations = run_panel(&panel).await;
    let spans: Vec<RequestSpan> = conversations
        .iter()
        .flat_map(|c| &c.rounds)
        .filter_map(|r| r.timing)
        .collect();
    let warnings: Vec<String> = concurrency::one_at_a_time(&spans, concurrency::LOWER_CONCURRENCY)
        .into_iter()
        .collect();

    let judge = config.judge.as_ref().map(|(s, c)| {
        LlmJudge::new(
            TargetClient::new(s.clone(), c.clone()),
            config.settings.seed,
        )
    });
    let mut results = Vec::new();
    for c in &conversations {
        let persona = config
            .personas
            .iter()
            .find(|p| p.id == c.persona_id)
            .expect("conversations come from the panel");
        let transcript_file = format!("transcripts/conversation-{:04}.json", c.number);
        let log_file = format!("logs/session-{:04}.log", c.number);
        let notes = format!(
            "agentwall sim, seed {}, config {config_hash}; user{{i}} is the persona's message of round i, system{{i}} the reply of the agent under test",
            config.settings.seed
        );
        write(
            &dir.join(&transcript_file),
            transcript_json(c, &capabilities.model, &notes).as_bytes(),
        )?;
        write(&dir.join(&log_file), log_text(c, &mode).as_bytes())?;
        let checks = check_conversation(c, persona, config.settings.max_reply_chars);
        let injected_checks = check_injected(c, config.settings.max_reply_chars);
        let resolved = checks.turns_to_resolution;
        let mut result =
            conversation_result(c, checks, injected_checks, (transcript_file, log_file));
        result.user_fidelity = fidelity::check(persona, c, &config.settings.stop_token, resolved);
        result.excluded = exclusion(
            &c.stop_reason,
            &result.user_fidelity,
            config.settings.keep_unfaithful_simulator,
        );
        if let Some(judge) = &judge {
            match judge.rubric(c, persona).await {
                Ok(r) => result.rubric = Some(r),
                Err(e) => result.rubric_failure = Some(e.into()),
            }
        }
        results.push(result);
    }
    let results = SimResults {
        suite: "sim".to_owned(),
        seed: config.settings.seed,
        config_hash: config_hash.clone(),
        target_model: capabilities.model.clone(),
        simulator: simulator_name.to_owned(),
        max_turns: config.settings.max_turns(),
        api: turns.api,
        history: turns.history,
        summary: summarise(&results),
        conversations: results,
    };
    let metrics: Vec<EndpointMetrics> = injected.iter().map(|(_, e)| e.metrics()).collect();
    write_json(&dir.join("results.json"), &results)?;
    write_json(&dir.join("metrics.json"), &metrics)?;
    let now = Utc::now();
    if let Some(f) = &target_fixtures {
        write_json(&dir.join("fixtures/target.json"), &f.finish(now))?;
    }
    if let Some(f) = &injected_fixtures {
        let fixture = f.finish(now);
        write_json(&dir.join("fixtures/injected.json"), &fixture)?;
        // The `benchmark.fixture_path` of docs/contracts/agent-injection.md, `{timestamp}` filled in, as a second copy.
        if let Some(path) = &config.injection.fixture_path {
            let path = path.replace("{timestamp}", &now.format("%Y%m%dT%H%M%SZ").to_string());
            write_json(Path::new(&path), &fixture)?;
        }
    }
    write(&dir.join("junit.xml"), report::junit(&results).as_bytes())?;
    write(
        &dir.join("report.html"),
        report::html(&results, &conversations, &metrics, &warnings).as_bytes(),
    )?;
    manifest.complete();
    rundir::write_manifest(dir, &manifest)?;
    Ok(SimOutcome {
        dir: dir.to_path_buf(),
        results,
        conversations,
        metrics,
        warnings,
    })
    }
    .await;
    if let Err(e) = &finished {
        // The error being returned matters more than a failure to record it.
        let _ = rundir::mark_failed(dir, "sim", &e.to_string());
    }
    finished
}
