//! Measurements: time in each dependency, and the batches of the group commit and of recall.

use crate::harness::*;

/// Every step against Redis and Postgres is timed in
/// `agentwall_memory_dependency_duration_seconds`, by dependency.
#[tokio::test]
async fn time_in_each_dependency_is_measured() {
    let metrics = Arc::new(Metrics::new());
    let steps = |dependency: &str| {
        metrics
            .dependency_duration
            .with_label_values(&[dependency, "ok"])
            .get_sample_count()
    };
    let harness = Harness::measured(Arc::clone(&metrics)).await;
    let (redis_before, postgres_before) = (steps("redis"), steps("postgres"));
    let s = session();
    harness
        .commit_turn(&s, turn("I keep bees.", "I keep bees."))
        .await
        .unwrap();
    harness.recall(&s, query("bees")).await.unwrap();
    // A turn's batch: BEGIN, lock, keyed facts, fact writes (postgres) and one EXEC (redis);
    // recall: one read of each. Start-up's steps (migrate, ping) are counted before.
    assert!(steps("redis") >= redis_before + 2, "redis steps");
    assert!(steps("postgres") >= postgres_before + 5, "postgres steps");
    let exposition = metrics.render();
    assert!(
        exposition.contains("agentwall_memory_dependency_duration_seconds_count{dependency=\"postgres\",outcome=\"ok\"}"),
        "{exposition}"
    );
}

/// The group commit's and the recalls' batches are counted, with their jobs, in
/// `agentwall_memory_batch_size` and timed in `agentwall_memory_batch_duration_seconds`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_are_measured() {
    let metrics = Arc::new(Metrics::new());
    let batches = |batch| metrics.batches("redis+postgres", batch);
    let harness = Harness::measured(Arc::clone(&metrics)).await;
    let (commits_before, recalls_before) = (batches("commit"), batches("recall"));
    let s = session();
    let turns = (0..6).map(|i| harness.commit_turn(&s, turn(&format!("turn {i}"), "A fact.")));
    for result in futures_util::future::join_all(turns).await {
        result.unwrap();
    }
    harness.recall(&s, query("fact")).await.unwrap();

    // A batch is recorded just after its waiters are answered.
    let recorded =
        || batches("commit").1 >= commits_before.1 + 6 && batches("recall").1 > recalls_before.1;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while !recorded() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let (commits, recalls) = (batches("commit"), batches("recall"));
    assert!(
        commits.1 >= commits_before.1 + 6,
        "6 turns: {commits_before:?} -> {commits:?}"
    );
    assert!(
        commits.0 > commits_before.0,
        "{commits_before:?} -> {commits:?}"
    );
    assert!(
        recalls.1 > recalls_before.1,
        "{recalls_before:?} -> {recalls:?}"
    );
    let timed = metrics
        .batch_duration
        .with_label_values(&["redis+postgres", "commit"])
        .get_sample_count();
    assert!(
        timed >= commits.0,
        "each batch is timed: {timed} of {}",
        commits.0
    );
    let exposition = metrics.render();
    assert!(
        exposition.contains(
            "agentwall_memory_batch_size_sum{backend=\"redis+postgres\",batch=\"commit\"}"
        ),
        "{exposition}"
    );
}
