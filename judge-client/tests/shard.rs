//! `judge ltm --shard` and `judge merge`: the parts of a sharded benchmark, merged, equal the run
//! a single process makes with the same seed; a bad set of parts is refused with a reason.

mod common;

use std::path::{Path, PathBuf};

use common::{amnesiac, oracle};
use judge_client::endpoint::{Credentials, TargetSettings};
use judge_client::suites::ltm::TestType;
use judge_client::suites::ltm::run::{self, RunOutcome, Silent};
use judge_client::suites::ltm::shard::{MergeError, Shard, merge};
use judge_client::{HistoryMode, LtmConfig};

fn config(seed: u64) -> LtmConfig {
    LtmConfig {
        seed,
        trials: 2,
        span_tokens: 200,
        filler_turn_tokens: 100,
        history: HistoryMode::New,
        api: Default::default(),
        phrasing: Default::default(),
        concurrency: 4,
        types: TestType::ALL.to_vec(),
    }
}

async fn run_part(url: &str, config: LtmConfig, shard: Option<Shard>, out: &Path) -> RunOutcome {
    run::start_shard(
        TargetSettings::new(url),
        Credentials::default(),
        config,
        shard,
        None,
        out,
        &Silent,
    )
    .await
    .expect("run completes")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[actix_rt::test]
async fn merged_shards_equal_the_unsharded_run() {
    let config = config(41);
    // An amnesiac fails some tests and passes others, so the merge must keep each verdict in
    // its place; the oracle passes everything.
    for fake in [oracle(&config.specs()).await, amnesiac().await] {
        let whole_out = tempfile::tempdir().unwrap();
        let whole = run_part(&fake.url, config.clone(), None, whole_out.path()).await;

        let parts_out = tempfile::tempdir().unwrap();
        let mut parts: Vec<PathBuf> = Vec::new();
        let mut planned = 0;
        // Given out of order on purpose.
        for index in [2, 0, 1] {
            let part = run_part(
                &fake.url,
                config.clone(),
                Some(Shard { index, count: 3 }),
                parts_out.path(),
            )
            .await;
            assert!(part.results.tests.len() < whole.results.tests.len());
            planned += part.manifest.tests_planned;
            parts.push(part.dir);
        }
        assert_eq!(
            planned,
            whole.results.tests.len(),
            "shards partition the plan"
        );

        let merged_out = tempfile::tempdir().unwrap();
        let merged = merge(&parts, merged_out.path()).expect("parts merge");
        assert_eq!(merged.manifest.parts.len(), 3);
        assert_eq!(merged.manifest.shard, None);
        for file in ["results.json", "junit.xml"] {
            assert_eq!(
                read(&whole.dir.join(file)),
                read(&merged.dir.join(file)),
                "{file} differs from the unsharded run"
            );
        }
        let logs = file_names(&whole.dir.join("logs"));
        assert!(!logs.is_empty());
        assert_eq!(logs, file_names(&merged.dir.join("logs")));
        for name in &logs {
            assert_eq!(
                read(&whole.dir.join("logs").join(name)),
                read(&merged.dir.join("logs").join(name)),
                "{name}"
            );
        }
        assert!(merged.dir.join("report.html").is_file());
        fake.stop().await;
    }
}

#[actix_rt::test]
async fn merge_refuses_missing_duplicate_foreign_and_unsharded_parts() {
    let config = config(43);
    let fake = amnesiac().await;
    let out = tempfile::tempdir().unwrap();
    let zero = run_part(
        &fake.url,
        config.clone(),
        Some(Shard { index: 0, count: 2 }),
        out.path(),
    )
    .await
    .dir;
    let one = run_part(
        &fake.url,
        config.clone(),
        Some(Shard { index: 1, count: 2 }),
        out.path(),
    )
    .await
    .dir;
    let other_seed = run_part(
        &fake.url,
        LtmConfig {
            seed: 44,
            ..config.clone()
        },
        Some(Shard { index: 1, count: 2 }),
        out.path(),
    )
    .await
    .dir;
    let whole = run_part(&fake.url, config, None, out.path()).await.dir;
    fake.stop().await;
    let target = tempfile::tempdir().unwrap();

    match merge(std::slice::from_ref(&zero), target.path()) {
        Err(MergeError::MissingShards { missing, count }) => {
            assert_eq!((missing, count), (vec![1], 2));
        }
        other => panic!("expected missing shard 1, got {:?}", other.map(|o| o.dir)),
    }
    assert!(matches!(
        merge(&[zero.clone(), zero.clone()], target.path()),
        Err(MergeError::DuplicateShard(Shard { index: 0, count: 2 }))
    ));
    assert!(matches!(
        merge(&[zero.clone(), other_seed], target.path()),
        Err(MergeError::Mismatch { .. })
    ));
    assert!(matches!(
        merge(&[whole], target.path()),
        Err(MergeError::NotAShard(_))
    ));
    assert!(matches!(
        merge(&[], target.path()),
        Err(MergeError::NoParts)
    ));
    // Nothing half-written by the refusals; the good pair still merges.
    assert!(file_names(target.path()).is_empty());
    merge(&[one, zero], target.path()).expect("the two halves merge");
}
