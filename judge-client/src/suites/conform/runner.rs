//! `judge conform` from the target to its run directory:
//!
//! ```text
//! runs/conform-<time>/manifest.json  judge version, target, model, APIs, header names (not values)
//!                     results.json   per check: name, api, status, reason, captured exchanges
//!                     junit.xml      one testcase per check (not applicable = skipped)
//!                     report.html    a summary per API and every failure with its exchanges
//! ```

use std::path::{Path, PathBuf};

use chrono::Utc;
use serde::{Deserialize, Serialize};

use super::checks::{self, CATALOGUE, Probe};
use super::{Api, CheckResult, ConformResults, report};
use crate::endpoint::{Credentials, FailureKind, TargetClient, TargetError, TargetSettings};
use crate::rundir::{
    Manifest, RunDirError, create_unique_dir, write_atomic, write_json, write_manifest,
};
use crate::suites::Suite;

/// What `judge conform` was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConformConfig {
    pub apis: Vec<Api>,
    /// Extra headers sent on every request (`--header`); only their names are recorded.
    #[serde(skip)]
    pub headers: Vec<(String, String)>,
}

/// A conformance run's manifest: the envelope every run has ([`Manifest`]) and these details.
pub type ConformManifest = Manifest<ConformDetails>;

/// What a conformance run records in its manifest beside the envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConformDetails {
    pub target: TargetSettings,
    pub model: String,
    pub apis: Vec<Api>,
    /// Names of the `--header`s sent (values may be secrets and are not written).
    pub header_names: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConformError {
    #[error(transparent)]
    Write(#[from] RunDirError),
    /// Not one request got an answer: 30 checks failing on the same refused connection would
    /// say nothing more.
    #[error("the target does not answer: {0}")]
    Unreachable(TargetError),
    #[error("cannot create the run directory under {path}: {source}")]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
}

pub struct ConformRun {
    pub dir: PathBuf,
    pub manifest: ConformManifest,
    pub results: ConformResults,
}

impl ConformRun {
    /// Whether every applicable check passed.
    pub fn conformant(&self) -> bool {
        self.results.failed == 0
    }
}

/// Runs the checks of `config.apis` against the target and writes the run directory. A target
/// that answers some requests and not others gets a complete run directory, each check failing
/// with its reason; one that answers nothing at all is an error.
pub async fn run(
    mut settings: TargetSettings,
    credentials: Credentials,
    config: ConformConfig,
    out_root: &Path,
) -> Result<ConformRun, ConformError> {
    // Each check is one isolated exchange: a server answering 5xx to bad input must not open the
    // circuit breaker and leave the later checks unrun.
    settings.breaker.failure_threshold = 0;
    let client =
        TargetClient::new(settings.clone(), credentials).with_headers(config.headers.clone());
    // `GET /v1/models` names the model when none was given, and shows the target answers at
    // all (any status will do; a server may not list models).
    let listed = match client.models().await {
        Ok(models) => models,
        Err(e)
            if e.status.is_none()
                && matches!(e.kind, FailureKind::InfraError | FailureKind::Timeout) =>
        {
            return Err(ConformError::Unreachable(e));
        }
        Err(_) => Vec::new(),
    };
    let model = settings
        .model
        .clone()
        .or_else(|| listed.into_iter().next())
        .unwrap_or_else(|| "default".to_owned());
    let created_at = Utc::now();
    let base = format!("conform-{}", created_at.format("%Y%m%dT%H%M%SZ"));
    let dir = create_unique_dir(out_root, &base).map_err(|source| ConformError::Dir {
        path: out_root.to_path_buf(),
        source,
    })?;
    let run_id = dir
        .file_name()
        .map_or(base, |n| n.to_string_lossy().into_owned());
    let details = ConformDetails {
        target: settings.clone(),
        model: model.clone(),
        apis: config.apis.clone(),
        header_names: config.headers.iter().map(|(n, _)| n.clone()).collect(),
    };
    let mut manifest = Manifest::running(run_id, super::Conform::KIND, created_at, details);
    write_manifest(&dir, &manifest)?;

    let probe = Probe {
        client: &client,
        model: model.clone(),
    };
    let mut checks: Vec<CheckResult> = Vec::new();
    for api in &config.apis {
        match api {
            Api::Chat => checks.extend(checks::chat::run(&probe).await),
            Api::Responses => checks.extend(checks::responses::run(&probe).await),
            Api::A2a => checks.extend(checks::a2a::run(&probe).await),
        }
    }
    let position = |c: &CheckResult| CATALOGUE.iter().position(|s| s.name == c.name);
    checks.sort_by_key(position);

    let results = ConformResults::new(settings.endpoint.clone(), model, &config.apis, checks);
    write_json(&dir.join("results.json"), &results)?;
    write_atomic(&dir.join("junit.xml"), report::junit(&results).as_bytes())?;
    manifest.complete();
    write_atomic(
        &dir.join("report.html"),
        report::html(&manifest, &results).as_bytes(),
    )?;
    write_manifest(&dir, &manifest)?;
    Ok(ConformRun {
        dir,
        manifest,
        results,
    })
}
