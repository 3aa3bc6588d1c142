//! A run directory from start (or resume) to its final files.
//!
//! ```text
//! runs/<run-id>/manifest.json      what ran, against what (the only file with wall-clock times,
//!                                  besides timing.json)
//! runs/<run-id>/tests/<id>.json    one finished test each: the resume checkpoint
//! runs/<run-id>/logs/session-NNNN.log  one log per session (the format of docs/contracts/run-log.md)
//! runs/<run-id>/results.json       all tests and per-type scores (deterministic)
//! runs/<run-id>/junit.xml, report.html, timing.json
//! ```

use std::path::{Path, PathBuf};

use chrono::Utc;
use futures_util::{StreamExt, stream};

use super::config::{LtmConfig, config_hash};
use super::grader::Grader;
use super::manifest::{LtmDetails, LtmManifest};
use super::results::{RunResults, TestResult, TestTiming};
use super::runner::Runner;
use super::script::derive_uuid;
use super::{TestSpec, html, junit, logs, summary};
use crate::endpoint::{
    ApiScope, ChainNeedsResponses, Credentials, TargetClient, TargetError, TargetSettings,
    TurnMode, probe_in, telemetry,
};
use crate::rundir::{self, RunDirError, RunState, Shard, checkpoint, write_atomic, write_json};

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    #[error("the target cannot be benchmarked (capability probe): {0}")]
    Probe(TargetError),
    #[error(transparent)]
    Turns(#[from] ChainNeedsResponses),
}

/// Observes a run's progress (the CLI draws a progress bar with it).
pub trait Progress {
    fn begin(&self, total: usize, already_done: usize);
    fn test_done(&self, result: &TestResult);
    fn end(&self);
}

/// A [`Progress`] that shows nothing.
pub struct Silent;

impl Progress for Silent {
    fn begin(&self, _: usize, _: usize) {}
    fn test_done(&self, _: &TestResult) {}
    fn end(&self) {}
}

pub struct RunOutcome {
    pub dir: PathBuf,
    pub manifest: LtmManifest,
    pub results: RunResults,
    /// Tests run by this invocation (not loaded from checkpoints).
    pub executed: usize,
    /// Wall-clock measurements (kept out of the results).
    pub timings: Vec<TestTiming>,
}

/// Probes the target, creates `out_root/<run-id>/` and runs the LTM suite.
pub async fn start(
    settings: TargetSettings,
    credentials: Credentials,
    config: LtmConfig,
    out_root: &Path,
    progress: &dyn Progress,
) -> Result<RunOutcome, RunError> {
    start_shard(
        settings,
        credentials,
        config,
        None,
        None,
        out_root,
        progress,
    )
    .await
}

/// [`start`], running only `shard`'s part of the plan when given (see [`crate::suites::ltm::shard`]),
/// and grading with the LLM grader at `grader` when given (see [`super::grader`]).
pub async fn start_shard(
    settings: TargetSettings,
    credentials: Credentials,
    config: LtmConfig,
    shard: Option<Shard>,
    grader: Option<(TargetSettings, Credentials)>,
    out_root: &Path,
    progress: &dyn Progress,
) -> Result<RunOutcome, RunError> {
    let turns = config.turns()?;
    let now = Utc::now();
    let shard_suffix =
        shard.map_or_else(String::new, |s| format!("-shard{}of{}", s.index, s.count));
    let base = format!(
        "ltm-{}-seed{}{shard_suffix}",
        now.format("%Y%m%dT%H%M%SZ"),
        config.seed
    );
    // The directory comes first, so a target that is down from the start still leaves a run
    // that says why it failed.
    let dir = create_run_dir(out_root, &base)?;
    let mut client = TargetClient::new(settings.clone(), credentials);
    let probe_session = derive_uuid(config.seed, "probe");
    let capabilities = match probe_in(&client, &probe_session, ApiScope::Only(turns.api)).await {
        Ok(capabilities) => capabilities,
        Err(e) => {
            let error = RunError::Probe(e.clone());
            // The error being returned matters more than a failure to record it.
            let _ = rundir::record_probe_failure(
                &dir,
                "ltm",
                &log_mode(&config),
                &probe_session,
                &e,
                &error.to_string(),
            );
            return Err(error);
        }
    };
    client.set_model(capabilities.model.clone());
    let planned = config.specs().len();
    let details = LtmDetails {
        resumed_at: Vec::new(),
        seed: config.seed,
        config_hash: config_hash(&config, &settings),
        tests_planned: shard.map_or(planned, |s| (0..planned).filter(|i| s.includes(*i)).count()),
        shard,
        parts: Vec::new(),
        grader: grader.as_ref().map(|(s, _)| s.clone()),
        config,
        target: settings,
        protocol: "openai".to_owned(),
        tokenizer: "cl100k_base (tiktoken-rs, ranks embedded in the binary)".to_owned(),
        capabilities,
    };
    let manifest = LtmManifest::running(rundir::run_id(&dir), "ltm", now, details);
    rundir::write_manifest(&dir, &manifest)?;
    let grader = grader.map(|(s, c)| Grader::new(s, c, manifest.details.seed));
    recorded(
        &dir.clone(),
        execute(&client, grader.as_ref(), dir, manifest, progress).await,
    )
}

/// Records an error that ended the run in its manifest (state `failed` and why), then returns
/// it: the directory says what happened even when nobody saw the command's output.
fn recorded<T>(dir: &Path, outcome: Result<T, RunError>) -> Result<T, RunError> {
    if let Err(e) = &outcome {
        // The error being returned matters more than a failure to record it.
        let _ = rundir::mark_failed(dir, "ltm", &e.to_string());
    }
    outcome
}

/// Finishes an interrupted run: tests with a checkpoint are kept, the others run. The recorded
/// configuration and capabilities are used, so the resumed part is judged like the first part;
/// the target must still answer a chat round trip. `endpoint` replaces the recorded endpoint (a
/// target restarted elsewhere); it is recorded in the manifest. A run with a grader grades the
/// rest with the recorded grader, with `grader_credentials`.
pub async fn resume(
    run_dir: &Path,
    endpoint: Option<String>,
    credentials: Credentials,
    grader_credentials: Credentials,
    progress: &dyn Progress,
) -> Result<RunOutcome, RunError> {
    let mut manifest: LtmManifest = rundir::read_manifest(run_dir)?;
    if let Some(endpoint) = endpoint {
        manifest.details.target.endpoint = endpoint;
    }
    let mut settings = manifest.details.target.clone();
    settings.model = Some(manifest.details.capabilities.model.clone());
    let client = TargetClient::new(settings, credentials);
    let api = manifest.details.config.api;
    probe_in(
        &client,
        &derive_uuid(manifest.details.seed, "probe"),
        ApiScope::Only(api),
    )
    .await
    .map_err(RunError::Probe)?;
    manifest.state = RunState::Running;
    manifest.why = None;
    manifest.details.resumed_at.push(Utc::now());
    rundir::write_manifest(run_dir, &manifest)?;
    let grader = manifest
        .details
        .grader
        .clone()
        .map(|s| Grader::new(s, grader_credentials, manifest.details.seed));
    recorded(
        run_dir,
        execute(
            &client,
            grader.as_ref(),
            run_dir.to_path_buf(),
            manifest,
            progress,
        )
        .await,
    )
}

/// The `mode` of the run's logs.
fn log_mode(config: &LtmConfig) -> String {
    let turns = TurnMode {
        api: config.api,
        history: config.history,
    };
    format!("ltm ({})", turns.describe())
}

/// Neutral log file names, numbered over all sessions of all tests in run order.
fn log_names(specs: &[TestSpec]) -> Vec<Vec<String>> {
    let mut n = 0usize;
    specs
        .iter()
        .map(|spec| {
            spec.sessions
                .iter()
                .map(|_| {
                    n += 1;
                    format!("logs/session-{n:04}.log")
                })
                .collect()
        })
        .collect()
}

/// Creates a fresh run directory `out_root/<base>[-n]/` with its `tests/` and `logs/`.
pub(crate) fn create_run_dir(out_root: &Path, base: &str) -> Result<PathBuf, RunError> {
    let (dir, _) = rundir::create(out_root, base)?;
    for sub in [checkpoint::DIR, "logs"] {
        let path = dir.join(sub);
        std::fs::create_dir_all(&path).map_err(rundir::io_err(&path))?;
    }
    Ok(dir)
}

/// The finished result of `spec` in the run `dir`, if it has one.
pub(crate) fn read_checkpoint(dir: &Path, spec: &TestSpec) -> Option<TestResult> {
    checkpoint::read(dir, &spec.id)
}

pub(crate) fn read_timing(dir: &Path, spec: &TestSpec) -> Option<TestTiming> {
    rundir::read_json(&timing_path(dir, spec)).ok()
}

/// Copies the files of one finished test (checkpoint, timing, session logs) from run `from` to
/// run `to`.
pub(crate) fn copy_test_files(
    from: &Path,
    to: &Path,
    spec: &TestSpec,
    result: &TestResult,
) -> Result<(), RunError> {
    let mut files = vec![checkpoint::path(from, &spec.id)];
    let timing = timing_path(from, spec);
    if timing.is_file() {
        files.push(timing);
    }
    files.extend(result.sessions.iter().map(|s| from.join(&s.log_file)));
    for source in files {
        let relative = source.strip_prefix(from).unwrap_or(&source);
        let target = to.join(relative);
        std::fs::copy(&source, &target).map_err(rundir::io_err(&source))?;
    }
    Ok(())
}

fn timing_path(dir: &Path, spec: &TestSpec) -> PathBuf {
    dir.join(checkpoint::DIR)
        .join(format!("{}.timing.json", spec.id))
}

async fn execute(
    client: &TargetClient,
    grader: Option<&Grader>,
    dir: PathBuf,
    manifest: LtmManifest,
    progress: &dyn Progress,
) -> Result<RunOutcome, RunError> {
    let config = manifest.details.config.clone();
    let specs = config.specs();
    // Log names are numbered over the whole plan, so a shard's logs have the names an unsharded
    // run gives them.
    let names = log_names(&specs);
    let mine = |position: usize| manifest.details.shard.is_none_or(|s| s.includes(position));
    let done: Vec<Option<TestResult>> = specs
        .iter()
        .map(|spec| read_checkpoint(&dir, spec))
        .collect();
    progress.begin(
        (0..specs.len()).filter(|i| mine(*i)).count(),
        done.iter().flatten().count(),
    );
    let run_span = telemetry::start(
        format!("ltm run {}", manifest.run_id),
        &opentelemetry::Context::new(),
        vec![
            opentelemetry::KeyValue::new("run.id", manifest.run_id.clone()),
            opentelemetry::KeyValue::new("run.seed", manifest.details.seed.to_string()),
        ],
    );
    let runner = Runner {
        client,
        capabilities: &manifest.details.capabilities,
        turns: TurnMode {
            api: config.api,
            history: config.history,
        },
        trace: run_span.clone(),
        grader,
    };
    let mode = log_mode(&config);
    let mut results: Vec<Option<TestResult>> = done;
    let pending: Vec<usize> = (0..specs.len())
        .filter(|i| mine(*i) && results[*i].is_none())
        .collect();
    let executed = pending.len();
    // Tests run concurrently (each in its own sessions); results keep the run order.
    let mut finished = stream::iter(pending)
        .map(|index| {
            let spec = &specs[index];
            let logs = &names[index];
            let runner = &runner;
            let mode = &mode;
            let dir = &dir;
            let capabilities = &manifest.details.capabilities;
            async move {
                let result = match capabilities.missing(&spec.requires) {
                    Some(reason) => Runner::not_applicable(spec, reason),
                    None if spec.needs_grader() && runner.grader.is_none() => {
                        Runner::not_gradable(spec)
                    }
                    None => {
                        let (result, timing) = runner.run(spec, logs).await;
                        write_json(&timing_path(dir, spec), &timing)?;
                        for (session, record) in result.sessions.iter().enumerate() {
                            let log = logs::render(&result, session, mode);
                            write_atomic(&dir.join(&record.log_file), log.as_bytes())?;
                        }
                        result
                    }
                };
                // The checkpoint is written last: a test without one is run again on resume.
                checkpoint::write(dir, &spec.id, &result)?;
                Ok::<_, RunDirError>((index, result))
            }
        })
        .buffer_unordered(config.concurrency.clamp(1, 10));
    while let Some(outcome) = finished.next().await {
        let (index, result) = outcome?;
        progress.test_done(&result);
        results[index] = Some(result);
    }
    drop(finished);
    let results: Vec<TestResult> = results.into_iter().flatten().collect();
    progress.end();
    telemetry::end(&run_span);

    let timings: Vec<TestTiming> = specs
        .iter()
        .filter_map(|spec| read_timing(&dir, spec))
        .collect();
    finish(dir, manifest, results, timings, executed)
}

/// Scores `results` (in plan order) and writes the run's final files: `results.json`,
/// `timing.json`, `junit.xml`, `report.html` and the completed manifest.
pub(crate) fn finish(
    dir: PathBuf,
    mut manifest: LtmManifest,
    results: Vec<TestResult>,
    timings: Vec<TestTiming>,
    executed: usize,
) -> Result<RunOutcome, RunError> {
    let results = summary::aggregate(&manifest.details.config, results);
    write_json(&dir.join("results.json"), &results)?;
    write_json(&dir.join("timing.json"), &timings)?;
    write_atomic(&dir.join("junit.xml"), junit::render(&results).as_bytes())?;
    manifest.complete();
    write_atomic(
        &dir.join("report.html"),
        html::render(&manifest, &results, &timings).as_bytes(),
    )?;
    rundir::write_manifest(&dir, &manifest)?;
    Ok(RunOutcome {
        dir,
        manifest,
        results,
        executed,
        timings,
    })
}
