//! The run directories under `--runs`, read from disk on every request: they are the source of
//! truth, and a run written by `judge ltm` or `judge apps` while the server runs shows up at once.

use std::path::{Path, PathBuf};

use chrono::SecondsFormat;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::ApiError;
use crate::rundir::{AnyManifest, RunState};
use crate::suites::{Suite, SuiteVisitor, visit};

/// One line of `GET /runs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunSummary {
    pub id: String,
    /// The suite's kind (`ltm`, `apps`, `sim`, `ab`, `load`, `membench`, `conform`).
    pub suite: String,
    /// RFC 3339, from the manifest (or the results of a load run).
    pub created: Option<String>,
    /// `running`, `complete`, `stopped` (a simulation stopped through the API: its manifest
    /// says when and after how many conversations), `failed` (its manifest says why), or
    /// `incomplete` (no results.json).
    pub state: String,
    /// What the suite is judged on, 0 to 1: ltm's overall score, sim's goal rate, apps' mean
    /// pass^k; none for load runs (their figures are per load level) and unfinished runs.
    pub score: Option<f64>,
    pub score_label: Option<String>,
}

/// `GET /runs/{id}`: the summary and the run's own files as they are on disk.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RunDetail {
    #[serde(flatten)]
    pub summary: RunSummary,
    #[schema(value_type = Object)]
    pub manifest: Value,
    #[schema(value_type = Object)]
    pub results: Value,
    /// Injected endpoints' metrics of sim runs (`metrics.json`).
    #[schema(value_type = Object)]
    pub metrics: Value,
}

/// Refuses ids that could leave the runs folder: run ids are single path components made of
/// the characters judge itself uses (`ltm-20260105T090000Z-seed1-2`).
pub fn check_id(id: &str) -> Result<(), ApiError> {
    let fine = !id.is_empty()
        && id.len() <= 200
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if fine {
        Ok(())
    } else {
        Err(ApiError::bad(format!(
            "`{id}` is not a run id: ids are letters, digits, `-`, `_` and `.`, not starting with `.`"
        )))
    }
}

fn read_json(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// The directory of run `id`, which must exist and hold a manifest or results.
pub fn run_dir(root: &Path, id: &str) -> Result<PathBuf, ApiError> {
    check_id(id)?;
    let dir = root.join(id);
    if dir.join("manifest.json").is_file() || dir.join("results.json").is_file() {
        Ok(dir)
    } else {
        Err(ApiError::not_found("run", id))
    }
}

fn text(value: &Value, pointer: &str) -> Option<String> {
    value.pointer(pointer)?.as_str().map(str::to_owned)
}

/// A suite's headline: its label, and its value in `results` when they are the suite's results.
struct HeadlineOf<'a>(Option<&'a Value>);

impl SuiteVisitor for HeadlineOf<'_> {
    type Output = (Option<&'static str>, Option<f64>);

    fn visit<S: Suite>(self) -> Self::Output {
        let value = self
            .0
            .and_then(|r| serde_json::from_value::<S::Results>(r.clone()).ok())
            .and_then(|r| S::headline(&r));
        (S::HEADLINE.map(|h| h.label), value)
    }
}

fn summarise(id: &str, manifest: &Value, results: Option<&Value>) -> RunSummary {
    let typed: Option<AnyManifest> = serde_json::from_value(manifest.clone()).ok();
    let suite = typed
        .as_ref()
        .map(|m| m.suite.clone())
        .or_else(|| results.and_then(|r| text(r, "/suite")))
        .unwrap_or_else(|| "unknown".to_owned());
    let created = typed
        .as_ref()
        .map(|m| m.created_at.to_rfc3339_opts(SecondsFormat::AutoSi, true))
        .or_else(|| results.and_then(|r| text(r, "/started_at")));
    let (label, score) = visit(&suite, HeadlineOf(results)).unwrap_or((None, None));
    let state = match (results, typed.map(|m| m.state)) {
        // A stop can race the last writes of a run: the manifest's word is final.
        (_, Some(s @ (RunState::Stopped | RunState::Failed))) => s.as_str().to_owned(),
        (Some(_), _) => "complete".to_owned(),
        (None, Some(RunState::Running)) => "running".to_owned(),
        (None, _) => "incomplete".to_owned(),
    };
    RunSummary {
        id: id.to_owned(),
        suite,
        created,
        state,
        score,
        score_label: label.map(str::to_owned),
    }
}

/// The ids of the run directories under `root` (those [`run_dir`] accepts), unordered, without
/// reading any file: the index's sync stats each run and parses only the changed ones.
pub fn run_ids(root: &Path) -> Result<Vec<String>, ApiError> {
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        // No run yet: the folder appears with the first one.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(ApiError::Internal(format!("{}: {e}", root.display()))),
    };
    Ok(entries
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|id| run_dir(root, id).is_ok())
        .collect())
}

/// Every run under `root` with a readable manifest or results, newest first.
pub fn list(root: &Path) -> Result<Vec<RunSummary>, ApiError> {
    let mut runs = Vec::new();
    for id in run_ids(root)? {
        let dir = root.join(&id);
        let manifest = read_json(&dir.join("manifest.json"));
        let results = read_json(&dir.join("results.json"));
        if manifest.is_none() && results.is_none() {
            continue;
        }
        let manifest = manifest.unwrap_or(Value::Null);
        runs.push(summarise(&id, &manifest, results.as_ref()));
    }
    sort(&mut runs);
    Ok(runs)
}

/// Newest first (runs with no time last), then by id: the one order of every run list.
pub fn sort(runs: &mut [RunSummary]) {
    runs.sort_by(|a, b| b.created.cmp(&a.created).then_with(|| a.id.cmp(&b.id)));
}

/// Run `id` with its manifest, results and metrics.
pub fn get(root: &Path, id: &str) -> Result<RunDetail, ApiError> {
    let dir = run_dir(root, id)?;
    let manifest = read_json(&dir.join("manifest.json")).unwrap_or(Value::Null);
    let results = read_json(&dir.join("results.json"));
    let metrics = read_json(&dir.join("metrics.json")).unwrap_or(Value::Null);
    Ok(RunDetail {
        summary: summarise(id, &manifest, results.as_ref()),
        manifest,
        results: results.unwrap_or(Value::Null),
        metrics,
    })
}

/// A file of run `id` at `relative` (a transcript), refusing anything outside the run.
pub fn run_file(root: &Path, id: &str, relative: &str) -> Result<Value, ApiError> {
    let dir = run_dir(root, id)?;
    let safe = relative
        .split('/')
        .all(|part| check_id(part).is_ok() && part != "..");
    if !safe {
        return Err(ApiError::bad(format!(
            "`{relative}` is not a file of a run"
        )));
    }
    read_json(&dir.join(relative)).ok_or_else(|| ApiError::not_found("file", relative))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_could_leave_the_folder_are_refused() {
        for id in [
            "..", ".", "../x", "a/b", "a\\b", ".hidden", "", "a b", "%2e%2e",
        ] {
            assert!(check_id(id).is_err(), "{id:?} accepted");
        }
        for id in ["ltm-20260105T090000Z-seed1", "sim-x-2", "a.b_c"] {
            assert!(check_id(id).is_ok(), "{id:?} refused");
        }
    }

    #[test]
    fn run_ids_are_the_folders_holding_a_manifest_or_results() {
        let root = tempfile::tempdir().unwrap();
        assert!(run_ids(&root.path().join("absent")).unwrap().is_empty());
        for (id, file) in [
            ("ltm-1", Some("manifest.json")),
            ("sim-2", Some("results.json")),
            ("empty", None),
            ("other", Some("notes.txt")),
        ] {
            let dir = root.path().join(id);
            std::fs::create_dir(&dir).unwrap();
            if let Some(file) = file {
                std::fs::write(dir.join(file), "{}").unwrap();
            }
        }
        std::fs::write(root.path().join("manifest.json"), "{}").unwrap();
        let mut ids = run_ids(root.path()).unwrap();
        ids.sort();
        assert_eq!(ids, ["ltm-1", "sim-2"]);
    }

    #[test]
    fn headline_scores_per_suite() {
        let manifest = serde_json::json!({"suite": "sim", "created_at": "2026-01-05T09:00:00Z"});
        let mut summary = crate::suites::sim::results::summarise(&[]);
        summary.goal_rate = Some(0.5);
        let results = serde_json::to_value(crate::suites::sim::results::SimResults {
            suite: "sim".to_owned(),
            seed: 1,
            config_hash: String::new(),
            target_model: "m".to_owned(),
            simulator: "scripted".to_owned(),
            max_turns: 3,
            api: Default::default(),
            history: Default::default(),
            summary,
            conversations: Vec::new(),
        })
        .unwrap();
        let s = summarise("r", &manifest, Some(&results));
        assert_eq!((s.score, s.state.as_str()), (Some(0.5), "complete"));
        let running = serde_json::json!({"run_id": "r", "suite": "ltm", "state": "running",
            "created_at": "2026-01-05T09:00:00Z"});
        let s = summarise("r", &running, None);
        assert_eq!((s.score, s.state.as_str()), (None, "running"));
    }
}
