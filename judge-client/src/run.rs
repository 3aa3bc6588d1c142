//! A run directory from start (or resume) to its final files.
//!
//! ```text
//! runs/<run-id>/manifest.json      what ran, against what (the only file with wall-clock times,
//!                                  besides timing.json)
//! runs/<run-id>/tests/<id>.json    one finished test each: the resume checkpoint
//! runs/<run-id>/logs/session-NNNN.log  one log per session (design document 001's format)
//! runs/<run-id>/results.json       all tests and per-type scores (deterministic)
//! runs/<run-id>/junit.xml, report.html, timing.json
//! ```

use std::io;
use std::path::{Path, PathBuf};

use chrono::Utc;
use futures_util::{StreamExt, stream};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::config::{LtmConfig, config_hash};
use crate::report::manifest::{Manifest, RunState};
use crate::report::results::{RunResults, TestResult, TestTiming};
use crate::report::{html, junit, session_log, summary};
use crate::shard::Shard;
use crate::suites::ltm::TestSpec;
use crate::suites::ltm::runner::Runner;
use crate::suites::ltm::script::derive_uuid;
use crate::target::{Credentials, TargetClient, TargetError, TargetSettings, probe, telemetry};

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("the target cannot be benchmarked (capability probe): {0}")]
    Probe(TargetError),
    #[error("{0} is not a run directory: it has no manifest.json")]
    NotARun(PathBuf),
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
    pub manifest: Manifest,
    pub results: RunResults,
    /// Tests run by this invocation (not loaded from checkpoints).
    pub executed: usize,
    /// Wall-clock measurements (kept out of the results).
    pub timings: Vec<TestTiming>,
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> RunError + '_ {
    move |source| RunError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes through a temporary file and a rename, so a crash never leaves half a file.
pub(crate) fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), RunError> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, contents).map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io_err(path))
}

pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), RunError> {
    let mut text = serde_json::to_string_pretty(value).map_err(|source| RunError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, RunError> {
    let text = std::fs::read_to_string(path).map_err(io_err(path))?;
    serde_json::from_str(&text).map_err(|source| RunError::Json {
        path: path.to_path_buf(),
        source,
    })
}

/// Creates and returns `root/base`, or `root/base-2`, `-3`, ... when taken: a run never writes
/// into another's folder. Atomic (`create_dir` fails on an existing folder, and the next name is
/// tried), so two runs started in the same instant, in one process or two, get two folders.
pub fn create_unique_dir(root: &Path, base: &str) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(root)?;
    let mut dir = root.join(base);
    let mut n = 2;
    loop {
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                dir = root.join(format!("{base}-{n}"));
                n += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Probes the target, creates `out_root/<run-id>/` and runs the LTM suite.
pub async fn start(
    settings: TargetSettings,
    credentials: Credentials,
    config: LtmConfig,
    out_root: &Path,
    progress: &dyn Progress,
) -> Result<RunOutcome, RunError> {
    start_shard(settings, credentials, config, None, out_root, progress).await
}

/// [`start`], running only `shard`'s part of the plan when given (see [`crate::shard`]).
pub async fn start_shard(
    settings: TargetSettings,
    credentials: Credentials,
    config: LtmConfig,
    shard: Option<Shard>,
    out_root: &Path,
    progress: &dyn Progress,
) -> Result<RunOutcome, RunError> {
    let mut client = TargetClient::new(settings.clone(), credentials);
    let capabilities = probe(&client, &derive_uuid(config.seed, "probe"))
        .await
        .map_err(RunError::Probe)?;
    client.set_model(capabilities.model.clone());
    let now = Utc::now();
    let shard_suffix =
        shard.map_or_else(String::new, |s| format!("-shard{}of{}", s.index, s.count));
    let base = format!(
        "ltm-{}-seed{}{shard_suffix}",
        now.format("%Y%m%dT%H%M%SZ"),
        config.seed
    );
    let dir = create_run_dir(out_root, &base)?;
    let run_id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or(base);
    let planned = config.specs().len();
    let manifest = Manifest {
        judge_version: env!("CARGO_PKG_VERSION").to_owned(),
        run_id,
        suite: "ltm".to_owned(),
        state: RunState::Running,
        created_at: now,
        finished_at: None,
        resumed_at: Vec::new(),
        seed: config.seed,
        config_hash: config_hash(&config, &settings),
        tests_planned: shard.map_or(planned, |s| (0..planned).filter(|i| s.includes(*i)).count()),
        shard,
        parts: Vec::new(),
        config,
        target: settings,
        protocol: "openai".to_owned(),
        tokenizer: "cl100k_base (tiktoken-rs, ranks embedded in the binary)".to_owned(),
        capabilities,
    };
    write_json(&dir.join("manifest.json"), &manifest)?;
    execute(&client, dir, manifest, progress).await
}

/// Finishes an interrupted run: tests with a checkpoint are kept, the others run. The recorded
/// configuration and capabilities are used, so the resumed part is judged like the first part;
/// the target must still answer a chat round trip. `endpoint` replaces the recorded endpoint (a
/// target restarted elsewhere); it is recorded in the manifest.
pub async fn resume(
    run_dir: &Path,
    endpoint: Option<String>,
    credentials: Credentials,
    progress: &dyn Progress,
) -> Result<RunOutcome, RunError> {
    let manifest_path = run_dir.join("manifest.json");
    let mut manifest = read_manifest(run_dir)?;
    if let Some(endpoint) = endpoint {
        manifest.target.endpoint = endpoint;
    }
    let mut settings = manifest.target.clone();
    settings.model = Some(manifest.capabilities.model.clone());
    let client = TargetClient::new(settings, credentials);
    probe(&client, &derive_uuid(manifest.seed, "probe"))
        .await
        .map_err(RunError::Probe)?;
    manifest.state = RunState::Running;
    manifest.resumed_at.push(Utc::now());
    write_json(&manifest_path, &manifest)?;
    execute(&client, run_dir.to_path_buf(), manifest, progress).await
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

/// The manifest of the run in `dir`.
pub(crate) fn read_manifest(dir: &Path) -> Result<Manifest, RunError> {
    let path = dir.join("manifest.json");
    if !path.is_file() {
        return Err(RunError::NotARun(dir.to_path_buf()));
    }
    read_json(&path)
}

/// Creates a fresh run directory `out_root/<base>[-n]/` with its `tests/` and `logs/`.
pub(crate) fn create_run_dir(out_root: &Path, base: &str) -> Result<PathBuf, RunError> {
    let dir = create_unique_dir(out_root, base).map_err(io_err(out_root))?;
    for sub in ["tests", "logs"] {
        let path = dir.join(sub);
        std::fs::create_dir_all(&path).map_err(io_err(&path))?;
    }
    Ok(dir)
}

/// The finished result of `spec` in the run `dir`, if it has one.
pub(crate) fn read_checkpoint(dir: &Path, spec: &TestSpec) -> Option<TestResult> {
    read_json(&checkpoint_path(dir, spec)).ok()
}

pub(crate) fn read_timing(dir: &Path, spec: &TestSpec) -> Option<TestTiming> {
    read_json(&timing_path(dir, spec)).ok()
}

/// Copies the files of one finished test (checkpoint, timing, session logs) from run `from` to
/// run `to`.
pub(crate) fn copy_test_files(
    from: &Path,
    to: &Path,
    spec: &TestSpec,
    result: &TestResult,
) -> Result<(), RunError> {
    let mut files = vec![checkpoint_path(from, spec)];
    let timing = timing_path(from, spec);
    if timing.is_file() {
        files.push(timing);
    }
    files.extend(result.sessions.iter().map(|s| from.join(&s.log_file)));
    for source in files {
        let relative = source.strip_prefix(from).unwrap_or(&source);
        let target = to.join(relative);
        std::fs::copy(&source, &target).map_err(io_err(&source))?;
    }
    Ok(())
}

fn checkpoint_path(dir: &Path, spec: &TestSpec) -> PathBuf {
    dir.join("tests").join(format!("{}.json", spec.id))
}

fn timing_path(dir: &Path, spec: &TestSpec) -> PathBuf {
    dir.join("tests").join(format!("{}.timing.json", spec.id))
}

async fn execute(
    client: &TargetClient,
    dir: PathBuf,
    manifest: Manifest,
    progress: &dyn Progress,
) -> Result<RunOutcome, RunError> {
    let config = manifest.config.clone();
    let specs = config.specs();
    // Log names are numbered over the whole plan, so a shard's logs have the names an unsharded
    // run gives them.
    let names = log_names(&specs);
    let mine = |position: usize| manifest.shard.is_none_or(|s| s.includes(position));
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
            opentelemetry::KeyValue::new("run.seed", manifest.seed.to_string()),
        ],
    );
    let runner = Runner {
        client,
        capabilities: &manifest.capabilities,
        history: config.history,
        trace: run_span.clone(),
    };
    let mode = format!("ltm (history: {})", config.history);
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
            let capabilities = &manifest.capabilities;
            async move {
                let result = match capabilities.missing(&spec.requires) {
                    Some(reason) => Runner::not_applicable(spec, reason),
                    None => {
                        let (result, timing) = runner.run(spec, logs).await;
                        write_json(&timing_path(dir, spec), &timing)?;
                        for (session, record) in result.sessions.iter().enumerate() {
                            let log = session_log::render(&result, session, mode);
                            write_atomic(&dir.join(&record.log_file), log.as_bytes())?;
                        }
                        result
                    }
                };
                // The checkpoint is written last: a test without one is run again on resume.
                write_json(&checkpoint_path(dir, spec), &result)?;
                Ok::<_, RunError>((index, result))
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
    mut manifest: Manifest,
    results: Vec<TestResult>,
    timings: Vec<TestTiming>,
    executed: usize,
) -> Result<RunOutcome, RunError> {
    let results = summary::aggregate(&manifest.config, results);
    write_json(&dir.join("results.json"), &results)?;
    write_json(&dir.join("timing.json"), &timings)?;
    write_atomic(&dir.join("junit.xml"), junit::render(&results).as_bytes())?;
    manifest.state = RunState::Complete;
    manifest.finished_at = Some(Utc::now());
    write_atomic(
        &dir.join("report.html"),
        html::render(&manifest, &results, &timings).as_bytes(),
    )?;
    write_json(&dir.join("manifest.json"), &manifest)?;
    Ok(RunOutcome {
        dir,
        manifest,
        results,
        executed,
        timings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_created_at_once_never_share_a_folder() {
        let root = tempfile::tempdir().unwrap();
        let dirs: Vec<PathBuf> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| create_unique_dir(root.path(), "run-x").unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let unique: std::collections::BTreeSet<_> = dirs.iter().collect();
        assert_eq!(unique.len(), 8, "{dirs:?}");
        assert!(dirs.iter().all(|d| d.is_dir()));
        assert!(dirs.contains(&root.path().join("run-x")));
        assert!(dirs.contains(&root.path().join("run-x-8")));
    }
}
