//! A membench run directory from start (or `--resume`) to its final files, sharded or not, by
//! the run-directory contract ([`crate::rundir`]):
//!
//! ```text
//! runs/<run-id>/manifest.json                what ran, against what, and where the run is
//! runs/<run-id>/tests/<conversation>.json    one finished conversation each: the checkpoint
//!                                            `--resume` keeps and `judge merge` reads
//! runs/<run-id>/results.json, junit.xml, report.html   once every conversation is done
//! ```
//!
//! A shard (`--shard INDEX/COUNT`) runs the selected conversations whose position `i` in the
//! selection has `i % COUNT == INDEX`. Sessions are named by the run's prefix and the
//! conversation, so shards never share one, and a conversation's questions depend only on the
//! seed and the conversation: the merged run scores what one process would have.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::dataset::{self, Conversation, Dataset, DatasetError};
use super::report::{self, MembenchDetails, MembenchManifest, file_sha256};
use super::results::{MembenchResults, QuestionResult};
use super::runner::{ConversationResult, RunContext, run_conversations, select, summarise_run};
use crate::rundir::shard::{MergeError, PartOf, part_of, read_parts};
use crate::rundir::{self, RunDirError, Shard, checkpoint};

#[derive(Debug, thiserror::Error)]
pub enum MembenchRunError {
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    #[error(
        "{path} is not the file the run read (its SHA-256 was {expected}, now {found}): resume or \
         merge with the same dataset file"
    )]
    DatasetChanged {
        path: String,
        expected: String,
        found: String,
    },
    #[error("{0} is complete already: nothing to resume")]
    Complete(PathBuf),
}

impl PartOf for MembenchDetails {
    fn shard(&self) -> Option<Shard> {
        self.shard
    }

    /// The same dataset and the same selection, seed and protocol; the session prefix and the
    /// concurrency may differ between shards.
    fn same_plan(&self, other: &Self) -> bool {
        let comparable = |d: &Self| {
            let mut config = d.config.clone();
            config.session_prefix.clear();
            config.concurrency = 0;
            (d.dataset_sha256.clone(), config)
        };
        comparable(self) == comparable(other)
    }
}

/// The checkpoint id of a conversation: its id, with what a file name cannot hold replaced.
fn checkpoint_id(conversation: &str) -> String {
    conversation
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The conversations this run holds: the selection, cut to its shard.
pub fn planned(data: &Dataset, details: &MembenchDetails) -> Vec<Conversation> {
    select(data, &details.config)
        .into_iter()
        .enumerate()
        .filter(|(position, _)| details.shard.is_none_or(|s| s.includes(*position)))
        .map(|(_, c)| c)
        .collect()
}

/// The dataset the manifest names, checked to be the file the run read.
pub fn reopen_dataset(details: &MembenchDetails) -> Result<Dataset, MembenchRunError> {
    let path = Path::new(&details.dataset_file);
    let data = dataset::load(details.dataset, path)?;
    let found = file_sha256(path).map_err(|source| DatasetError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if found != details.dataset_sha256 {
        return Err(MembenchRunError::DatasetChanged {
            path: details.dataset_file.clone(),
            expected: details.dataset_sha256.clone(),
            found,
        });
    }
    Ok(data)
}

/// Creates the run directory under `out_root` and writes its manifest (state `running`); the
/// manifest's run id becomes the directory's name.
pub fn create(out_root: &Path, manifest: &mut MembenchManifest) -> Result<PathBuf, RunDirError> {
    let (dir, run_id) = rundir::create(out_root, &manifest.run_id)?;
    manifest.run_id = run_id;
    rundir::write_manifest(&dir, manifest)?;
    Ok(dir)
}

/// The manifest of the unfinished run in `dir`, marked resumed now.
pub fn reopen(dir: &Path) -> Result<MembenchManifest, MembenchRunError> {
    let mut manifest: MembenchManifest = rundir::read_manifest(dir)?;
    if manifest.state == rundir::RunState::Complete {
        return Err(MembenchRunError::Complete(dir.to_path_buf()));
    }
    manifest.state = rundir::RunState::Running;
    manifest.why = None;
    manifest.finished_at = None;
    manifest.details.resumed_at.push(chrono::Utc::now());
    rundir::write_manifest(dir, &manifest)?;
    Ok(manifest)
}

/// Runs the conversations of the plan that have no checkpoint in `dir` yet, checkpointing each
/// as it finishes, then writes the final files.
pub async fn execute(
    dir: &Path,
    mut manifest: MembenchManifest,
    data: &Dataset,
    context: &RunContext<'_>,
    on_question: &dyn Fn(&QuestionResult),
) -> Result<MembenchResults, MembenchRunError> {
    let plan = planned(data, &manifest);
    let mut done: BTreeMap<String, ConversationResult> = plan
        .iter()
        .filter_map(|c| {
            checkpoint::read::<ConversationResult>(dir, &checkpoint_id(&c.id))
                .map(|r| (c.id.clone(), r))
        })
        .collect();
    let todo: Vec<Conversation> = plan
        .iter()
        .filter(|c| !done.contains_key(&c.id))
        .cloned()
        .collect();
    let started = Instant::now();
    let failed: RefCell<Option<RunDirError>> = RefCell::new(None);
    let ran = run_conversations(context, &todo, on_question, &|c| {
        if let Err(e) = checkpoint::write(dir, &checkpoint_id(&c.conversation), c) {
            failed.borrow_mut().get_or_insert(e);
        }
    })
    .await;
    if let Some(e) = failed.into_inner() {
        return Err(e.into());
    }
    manifest.details.wall_seconds += started.elapsed().as_secs_f64();
    for c in ran {
        done.insert(c.conversation.clone(), c);
    }
    let outcomes = plan.iter().filter_map(|c| done.remove(&c.id)).collect();
    finish(dir, manifest, outcomes, data)
}

/// Summarises the conversations (in plan order) and writes `results.json`, `junit.xml`,
/// `report.html`, and the manifest, complete.
fn finish(
    dir: &Path,
    mut manifest: MembenchManifest,
    outcomes: Vec<ConversationResult>,
    data: &Dataset,
) -> Result<MembenchResults, MembenchRunError> {
    let results = summarise_run(
        &manifest.config,
        &manifest.capabilities,
        manifest.judge_model.is_some(),
        outcomes,
        manifest.wall_seconds,
    );
    rundir::write_json(&dir.join("results.json"), &results)?;
    rundir::write_atomic(
        &dir.join("junit.xml"),
        report::junit(&manifest, &results).as_bytes(),
    )?;
    manifest.complete();
    rundir::write_atomic(
        &dir.join("report.html"),
        report::html(&manifest, &results, data).as_bytes(),
    )?;
    rundir::write_manifest(dir, &manifest)?;
    Ok(results)
}

/// `judge merge` of membench shards: the parts' conversations, in plan order, written as one
/// run under `out_root` (the dataset file the parts read is read again, and must be the same).
pub fn merge(parts: &[PathBuf], out_root: &Path) -> Result<PathBuf, MergeError<MembenchRunError>> {
    let parts = read_parts::<MembenchDetails, MembenchRunError>(parts)?;
    let first = &parts[0].1;
    let data = reopen_dataset(first)?;
    let mut manifest = first.clone();
    manifest.details.shard = None;
    manifest.details.parts = parts.iter().map(|(_, m)| m.run_id.clone()).collect();
    manifest.details.resumed_at = Vec::new();
    // The shards ran side by side: the merged run took as long as the slowest.
    manifest.details.wall_seconds = parts
        .iter()
        .map(|(_, m)| m.wall_seconds)
        .fold(0.0, f64::max);
    manifest.created_at = parts
        .iter()
        .map(|(_, m)| m.created_at)
        .min()
        .unwrap_or(first.created_at);
    let plan = select(&data, &manifest.config);
    manifest.details.questions_planned = plan.iter().map(|c| c.questions.len()).sum();
    let mut outcomes = Vec::with_capacity(plan.len());
    for (position, c) in plan.iter().enumerate() {
        let result: ConversationResult =
            checkpoint::read(part_of(&parts, position), &checkpoint_id(&c.id))
                .ok_or_else(|| MergeError::MissingUnit(format!("conversation {}", c.id)))?;
        outcomes.push(result);
    }
    let base = format!("{}-merged", first.run_id);
    let (dir, run_id) = rundir::create(out_root, &base).map_err(MembenchRunError::from)?;
    manifest.run_id = run_id;
    manifest.state = rundir::RunState::Running;
    finish(&dir, manifest, outcomes, &data)?;
    Ok(dir)
}
