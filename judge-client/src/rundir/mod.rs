//! The run-directory contract every suite writes by: `runs/<run-id>/` created once and never
//! shared ([`create`]), files replaced atomically ([`write_json`], [`write_atomic`]), a typed
//! `manifest.json` with the run's state ([`Manifest`], [`RunState`]), per-unit checkpoints under
//! `tests/` that a resumed run keeps ([`checkpoint`]), and the shard a run holds of a plan split
//! across processes ([`Shard`]).
//!
//! ```text
//! runs/<run-id>/manifest.json   what ran, against what, and its state: the only file with
//!                               wall-clock times (besides an LTM run's timing.json)
//! runs/<run-id>/results.json    the suite's results (see `crate::suites::Suite`)
//! runs/<run-id>/report.html, junit.xml, and what the suite writes beside them
//! ```

pub mod manifest;
pub mod shard;

use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

pub use manifest::{AnyManifest, MANIFEST_FILE, Manifest, RunState};
pub use shard::Shard;

/// Why reading or writing a run directory failed.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{0} is not a run directory: it has no manifest.json")]
    NotARun(PathBuf),
}

pub(crate) fn io_err(path: &Path) -> impl FnOnce(io::Error) -> RunDirError + '_ {
    move |source| RunDirError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Creates and returns `root/base`, or `root/base-2`, `-3`, ... when taken: a run never writes
/// into another's folder. Atomic (`create_dir` fails on an existing folder, and the next name is
/// tried), so two runs started in the same instant, in one process or two, get two folders.
pub fn create_unique_dir(root: &Path, base: &str) -> io::Result<PathBuf> {
    std::fs::create_dir_all(root)?;
    let mut dir = root.join(base);
    let mut n = 2;
    loop {
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                dir = root.join(format!("{base}-{n}"));
                n += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// [`create_unique_dir`] with its error naming the folder; returns the directory and its run id.
pub fn create(root: &Path, base: &str) -> Result<(PathBuf, String), RunDirError> {
    let dir = create_unique_dir(root, base).map_err(io_err(root))?;
    let id = run_id(&dir);
    Ok((dir, id))
}

/// The run id of the run directory `dir`: its folder name.
pub fn run_id(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Writes through a temporary file and a rename, so a crash never leaves half a file and a
/// reader (the catalog, the index) sees the old file or the new one. Creates missing parents.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), RunDirError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io_err(parent))?;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    std::fs::write(&tmp, contents).map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io_err(path))
}

/// `value` as pretty JSON with a final newline, written atomically. An encoding failure is an
/// error, never an empty file standing in for the data.
pub fn write_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<(), RunDirError> {
    let mut text = serde_json::to_vec_pretty(value).map_err(|source| RunDirError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    text.push(b'\n');
    write_atomic(path, &text)
}

pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, RunDirError> {
    let text = std::fs::read_to_string(path).map_err(io_err(path))?;
    serde_json::from_str(&text).map_err(|source| RunDirError::Json {
        path: path.to_path_buf(),
        source,
    })
}

/// The manifest of the run in `dir`, its suite's details typed as `D`.
pub fn read_manifest<D: DeserializeOwned>(dir: &Path) -> Result<Manifest<D>, RunDirError> {
    let path = dir.join(MANIFEST_FILE);
    if !path.is_file() {
        return Err(RunDirError::NotARun(dir.to_path_buf()));
    }
    read_json(&path)
}

/// Writes `manifest` into `dir`.
pub fn write_manifest<D: Serialize>(dir: &Path, manifest: &Manifest<D>) -> Result<(), RunDirError> {
    write_json(&dir.join(MANIFEST_FILE), manifest)
}

/// Records in `dir`'s manifest that the run ended on an error: state `failed`, when, and why. A
/// run that failed before writing its manifest gets a minimal one naming `suite`, so it is still
/// listed, as failed.
pub fn mark_failed(dir: &Path, suite: &str, why: &str) -> Result<(), RunDirError> {
    let now = chrono::Utc::now();
    let mut manifest = read_manifest::<manifest::Details>(dir)
        .unwrap_or_else(|_| AnyManifest::minimal(run_id(dir), suite, now));
    manifest.state = RunState::Failed;
    manifest.why = Some(why.to_owned());
    manifest.finished_at = Some(now);
    write_manifest(dir, &manifest)
}

/// The run log of a capability probe that failed ([`record_probe_failure`]).
pub const PROBE_LOG: &str = "logs/probe.log";

/// Records a run whose target failed the capability probe, so nothing is left half-made: the
/// probe's exchange as a run log (docs/contracts/run-log.md §"Stop reasons and failures": the
/// greeting, the failure as the assistant turn, `stop_reason` the failure's class) in
/// [`PROBE_LOG`], then the manifest marked failed with `why` ([`mark_failed`]). `mode` is the
/// run's mode as its logs give it; `session_id` the probe's session.
pub fn record_probe_failure(
    dir: &Path,
    suite: &str,
    mode: &str,
    session_id: &str,
    error: &crate::endpoint::TargetError,
    why: &str,
) -> Result<(), RunDirError> {
    use crate::report::session_log::{LogMeta, LogTurn, render_log};
    // The probe sends no X-Mock-Time: the target's clock is the wall clock.
    let at = chrono::Utc::now();
    let failure = format!("[{}] {}", error.kind, error.message);
    let log = render_log(
        &LogMeta {
            session_id,
            mode,
            scenario: "capability probe",
            max_turns: 1,
            stop_reason: error.kind.as_str(),
        },
        &[
            LogTurn {
                role: "user",
                at,
                text: crate::endpoint::PROBE_GREETING,
            },
            LogTurn {
                role: "assistant",
                at: at + chrono::Duration::seconds(1),
                text: &failure,
            },
        ],
    );
    let written = write_atomic(&dir.join(PROBE_LOG), log.as_bytes());
    // The manifest is written even when the log could not be.
    mark_failed(dir, suite, why)?;
    written
}

/// Per-unit checkpoints: `tests/<id>.json` holds one finished unit, written last, so a unit
/// without one is run again when the run is resumed.
pub mod checkpoint {
    use std::path::{Path, PathBuf};

    use serde::Serialize;
    use serde::de::DeserializeOwned;

    use super::{RunDirError, read_json, write_json};

    /// The folder of the checkpoints.
    pub const DIR: &str = "tests";

    pub fn path(dir: &Path, id: &str) -> PathBuf {
        dir.join(DIR).join(format!("{id}.json"))
    }

    pub fn write<T: Serialize>(dir: &Path, id: &str, value: &T) -> Result<(), RunDirError> {
        write_json(&path(dir, id), value)
    }

    /// The checkpoint of unit `id`, if it has a readable one.
    pub fn read<T: DeserializeOwned>(dir: &Path, id: &str) -> Option<T> {
        read_json(&path(dir, id)).ok()
    }
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

    #[test]
    fn a_failed_probe_leaves_a_run_log_with_its_stop_reason_and_a_failed_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let error = crate::endpoint::TargetError::new(
            crate::endpoint::FailureKind::InfraError,
            "connection refused",
        );
        record_probe_failure(
            dir.path(),
            "sim",
            "sim multi-turn (scripted user)",
            "s-1",
            &error,
            "probe failed",
        )
        .unwrap();
        let text = std::fs::read_to_string(dir.path().join(PROBE_LOG)).unwrap();
        let log = crate::report::session_log::parse_log(&text).unwrap();
        assert_eq!(log.meta("stop_reason"), Some("infra_error"));
        assert_eq!(log.meta("session_id"), Some("s-1"));
        assert_eq!(log.turns.len(), 2);
        assert_eq!(log.turns[1].0, "assistant");
        assert_eq!(log.turns[1].2, "[infra_error] connection refused");
        let m: AnyManifest = read_manifest(dir.path()).unwrap();
        assert_eq!((m.state, m.suite.as_str()), (RunState::Failed, "sim"));
        assert_eq!(m.why.as_deref(), Some("probe failed"));
    }

    #[test]
    fn a_failure_is_recorded_with_why_in_an_existing_or_a_new_manifest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(MANIFEST_FILE),
            r#"{"run_id": "r", "suite": "apps", "created_at": "2026-01-05T09:00:00Z", "seed": 4}"#,
        )
        .unwrap();
        mark_failed(dir.path(), "apps", "the target went away").unwrap();
        let m: AnyManifest = read_manifest(dir.path()).unwrap();
        assert_eq!(m.state, RunState::Failed);
        assert_eq!(m.why.as_deref(), Some("the target went away"));
        assert_eq!(m.details["seed"], 4);
        let empty = tempfile::tempdir().unwrap();
        mark_failed(empty.path(), "ltm", "probe: refused").unwrap();
        let m: AnyManifest = read_manifest(empty.path()).unwrap();
        assert_eq!((m.suite.as_str(), m.state), ("ltm", RunState::Failed));
    }
}
