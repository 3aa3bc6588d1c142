//! `judge serve --database-url` against a real Postgres: the index's tables (the apps' tables of docs/contracts/apps.md and
//! the agents table of docs/contracts/transcript.md), a `judge apps` run directory indexed with its audit log, a
//! simulation started through the API indexed with its agents, restarts that reindex without
//! duplicates, a deleted run directory leaving the index (the directories are the source of
//! truth), and the failures: a database that cannot be reached at start, one that goes away.
//!
//! Needs `AGENTWALL_TEST_DATABASE_URL`, an admin URL (every test creates its own database):
//!
//! ```sh
//! scripts/test-services.sh run cargo nextest run -p judge-client --test serve_index
//! ```
//!
//! Without it every test fails and says so; none is skipped.

mod common;

use std::path::Path;
use std::time::Duration;

use judge_client::serve::{ServeConfig, ServeError, bind_with_database, catalog};
use judge_client::suites::apps::artifacts::write_outcome;
use serde_json::json;

use common::serve::Serve;
use testkit::postgres::TestDb;

const SETUP_HINT: &str = "start a throwaway Postgres first: `eval \"$(scripts/test-services.sh)\"`, \
    or run the tests through `scripts/test-services.sh run cargo nextest run -p judge-client --test serve_index`";

const APPS_RUN: &str = "apps-20260105T090000Z-seed1";

async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {url}: {e}; {SETUP_HINT}"));
    actix_rt::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// `judge serve` on a runs folder, with its index in `database_url`.
async fn start_serve(runs: &Path, database_url: &str) -> Serve {
    let (server, addr) = bind_with_database(config(runs), database_url, None)
        .await
        .expect("judge serve starts with the index");
    Serve::spawn(server, addr, None)
}

fn config(runs: &Path) -> ServeConfig {
    ServeConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        runs: runs.to_path_buf(),
        auth_token: None,
        workers: 1,
    }
}

/// The shipped transfer scenario played by the reference agent, written as `judge apps` does.
async fn apps_run(root: &Path) -> usize {
    let outcome = common::play_transfer_scenario(2).await;
    let actions: usize = outcome.trials.iter().map(|t| t.audit.entries().len()).sum();
    let dir = root.join(APPS_RUN);
    write_outcome(&dir.join("scenarios"), &outcome).unwrap();
    let manifest = json!({"run_id": APPS_RUN, "suite": "apps", "created_at": "2026-01-05T09:00:00Z",
                          "target": {"endpoint": "http://127.0.0.1:9", "model": "reference"}});
    let results = json!({"suite": "apps", "mean_pass_hat_k": 1.0});
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    std::fs::write(dir.join("results.json"), results.to_string()).unwrap();
    actions
}

async fn count(db: &tokio_postgres::Client, sql: &str) -> i64 {
    db.query_one(sql, &[]).await.expect(sql).get(0)
}

/// Row counts of every table of the index.
async fn counts(db: &tokio_postgres::Client) -> Vec<(&'static str, i64)> {
    let mut all = Vec::new();
    for table in [
        "runs",
        "simulations",
        "agents",
        "simulation_agents",
        "app_instances",
        "app_action_log",
    ] {
        all.push((
            table,
            count(db, &format!("SELECT count(*) FROM {table}")).await,
        ));
    }
    all
}

#[actix_rt::test]
async fn the_index_follows_the_run_directories() {
    let db = TestDb::create().await;
    let runs = tempfile::tempdir().unwrap();
    let actions = apps_run(runs.path()).await;
    assert!(actions > 0);
    let target = common::amnesiac().await;
    let s = start_serve(runs.path(), &db.url).await;
    let pg = connect(&db.url).await;

    // The documents' tables with their columns.
    for (table, columns) in [
        (
            "agents",
            &[
                "id",
                "name",
                "description",
                "config",
                "knowledge_base_id",
                "created_at",
                "updated_at",
            ][..],
        ),
        (
            "app_instances",
            &[
                "id",
                "simulation_id",
                "app_id",
                "config",
                "state",
                "created_at",
                "updated_at",
            ][..],
        ),
        (
            "app_action_log",
            &[
                "id",
                "app_instance_id",
                "agent_id",
                "step",
                "action_name",
                "params",
                "success",
                "result",
                "error",
                "executed_at",
            ][..],
        ),
        ("simulations", &["id", "kind", "state", "run_id"][..]),
        ("runs", &["id", "suite", "state", "summary", "manifest"][..]),
    ] {
        let found: Vec<String> = pg
            .query(
                "SELECT column_name::text FROM information_schema.columns WHERE table_name = $1",
                &[&table],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        for c in columns {
            assert!(
                found.iter().any(|f| f == c),
                "{table}.{c} missing: {found:?}"
            );
        }
    }
    for index in [
        "idx_app_instances_sim",
        "idx_action_log_instance",
        "idx_action_log_agent",
        "idx_action_log_step",
    ] {
        let n = count(
            &pg,
            &format!("SELECT count(*) FROM pg_indexes WHERE indexname = '{index}'"),
        )
        .await;
        assert_eq!(n, 1, "{index}");
    }

    // The apps run was indexed at start: the run, its two trials as simulations, their app and
    // every action of the audit log, in order.
    let row = pg
        .query_one("SELECT suite, state FROM runs WHERE id = $1", &[&APPS_RUN])
        .await
        .expect("the apps run is indexed");
    assert_eq!(
        (row.get::<_, String>(0), row.get::<_, String>(1)),
        ("apps".to_owned(), "complete".to_owned())
    );
    assert_eq!(
        count(
            &pg,
            "SELECT count(*) FROM simulations WHERE kind = 'apps' AND run_id = 'apps-20260105T090000Z-seed1'"
        )
        .await,
        2
    );
    assert_eq!(
        count(
            &pg,
            "SELECT count(*) FROM app_instances WHERE app_id = 'paypal'"
        )
        .await,
        2
    );
    assert_eq!(
        count(&pg, "SELECT count(*) FROM app_action_log").await,
        actions as i64
    );
    let trial: String = pg
        .query_one("SELECT min(id) FROM simulations WHERE kind = 'apps'", &[])
        .await
        .unwrap()
        .get(0);
    assert!(
        trial.starts_with(&format!("{APPS_RUN}:transfer-basic:")),
        "{trial}"
    );
    let first = pg
        .query_one(
            "SELECT l.agent_id, l.action_name, l.success, l.params FROM app_action_log l
             JOIN app_instances i ON i.id = l.app_instance_id
             WHERE i.simulation_id = $1 AND l.action_name = 'transfer' ORDER BY l.seq LIMIT 1",
            &[&trial],
        )
        .await
        .expect("the trial's transfer is in the audit log");
    assert_eq!(first.get::<_, String>(0), "alice");
    assert!(first.get::<_, bool>(2));
    let (_, over_http) = s
        .get(&format!("/simulations/{trial}/apps/paypal/actions"))
        .await;
    let in_db: i64 = pg
        .query_one(
            "SELECT count(*) FROM app_action_log l JOIN app_instances i ON i.id = l.app_instance_id
             WHERE i.simulation_id = $1",
            &[&trial],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(over_http.as_array().unwrap().len() as i64, in_db);

    // A simulation through the API: a row when created (with its agents), then its run.
    let sim_config = json!({
        "simulation": {"name": "indexed"},
        "target": {"endpoint": target.url, "model": "amnesiac", "timeout_seconds": 10},
        "run": {"seed": 5, "rounds": 2, "personas": ["maya", "gus"]}
    });
    let (status, created) = s.post_json("/simulations", &sim_config).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let state: String = pg
        .query_one("SELECT state FROM simulations WHERE id = $1", &[&id])
        .await
        .expect("indexed when created")
        .get(0);
    assert_eq!(state, "created");
    let (status, _) = s
        .post_json(&format!("/simulations/{id}/start"), &json!({}))
        .await;
    assert_eq!(status, 202);
    let sim = s.wait_over(&id).await;
    assert_eq!(sim["state"], "finished", "{sim}");
    let run_id = sim["run_id"].as_str().unwrap().to_owned();
    // The index follows the simulation's end right after it (the run's task writes it): the
    // simulation's row first, then its run's, by a sync; wait for both.
    for _ in 0..100 {
        let indexed: String = pg
            .query_one("SELECT state FROM simulations WHERE id = $1", &[&id])
            .await
            .unwrap()
            .get(0);
        let run_indexed = pg
            .query_opt("SELECT 1 FROM runs WHERE id = $1", &[&run_id])
            .await
            .unwrap()
            .is_some();
        if indexed == "finished" && run_indexed {
            break;
        }
        actix_rt::time::sleep(Duration::from_millis(100)).await;
    }
    let row = pg
        .query_one(
            "SELECT state, run_id, conversations_done, finished_at IS NOT NULL FROM simulations WHERE id = $1",
            &[&id],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "finished");
    assert_eq!(
        row.get::<_, Option<String>>(1).as_deref(),
        Some(run_id.as_str())
    );
    assert_eq!(row.get::<_, i32>(2), 2);
    assert!(row.get::<_, bool>(3));
    let roles: Vec<(String, String)> = pg
        .query(
            "SELECT s.role, a.name FROM simulation_agents s JOIN agents a ON a.id = s.agent_id
             WHERE s.simulation_id = $1 ORDER BY s.role, a.name",
            &[&id],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(roles.len(), 3, "{roles:?}");
    assert_eq!(roles[0], ("system".to_owned(), "amnesiac".to_owned()));
    assert!(
        roles[1..].iter().all(|(role, _)| role == "user"),
        "{roles:?}"
    );
    let run_state: String = pg
        .query_one("SELECT state FROM runs WHERE id = $1", &[&run_id])
        .await
        .expect("the simulation's run is indexed when it ends")
        .get(0);
    assert_eq!(run_state, "complete");

    // GET /runs answers from the index, and it is the catalog's list.
    let (status, listed) = s.get("/runs").await;
    assert_eq!(status, 200);
    let on_disk = serde_json::to_value(catalog::list(runs.path()).unwrap()).unwrap();
    assert_eq!(listed, on_disk);
    assert_eq!(listed.as_array().unwrap().len(), 2);

    // A restart reindexes everything: the same rows, no duplicates; the finished simulation
    // comes back from its run directory.
    let before = counts(&pg).await;
    s.stop().await;
    let s = start_serve(runs.path(), &db.url).await;
    assert_eq!(counts(&pg).await, before);
    let state: String = pg
        .query_one("SELECT state FROM simulations WHERE id = $1", &[&id])
        .await
        .expect("the API simulation is rebuilt from its run directory")
        .get(0);
    assert_eq!(state, "finished");

    // The directories are the source of truth: a deleted run leaves the index at the next
    // start, with its simulations, apps and audit log; agents nobody uses go too.
    s.stop().await;
    std::fs::remove_dir_all(runs.path().join(APPS_RUN)).unwrap();
    let s = start_serve(runs.path(), &db.url).await;
    assert_eq!(
        count(
            &pg,
            "SELECT count(*) FROM runs WHERE id = 'apps-20260105T090000Z-seed1'"
        )
        .await,
        0
    );
    assert_eq!(
        count(&pg, "SELECT count(*) FROM simulations WHERE kind = 'apps'").await,
        0
    );
    assert_eq!(count(&pg, "SELECT count(*) FROM app_instances").await, 0);
    assert_eq!(count(&pg, "SELECT count(*) FROM app_action_log").await, 0);
    assert_eq!(
        count(&pg, "SELECT count(*) FROM agents WHERE name = 'reference'").await,
        0
    );
    assert_eq!(count(&pg, "SELECT count(*) FROM runs").await, 1);
    s.stop().await;
    target.stop().await;
}

#[actix_rt::test]
async fn an_unreachable_database_stops_the_start_with_the_url_and_what_to_do() {
    let runs = tempfile::tempdir().unwrap();
    // Nothing listens on the discard port.
    let url = "postgres://judge:hunter2-secret@127.0.0.1:9/runs";
    let err = match bind_with_database(config(runs.path()), url, None).await {
        Err(e @ ServeError::Index(_)) => e.to_string(),
        Err(other) => panic!("wrong error: {other}"),
        Ok(_) => panic!("started without its database"),
    };
    assert!(
        err.contains("postgres://judge:***@127.0.0.1:9/runs"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "the password is shown: {err}");
    assert!(err.contains("--database-url"), "{err}");
    let err = bind_with_database(config(runs.path()), "mysql://x", None)
        .await
        .err()
        .expect("not a Postgres URL")
        .to_string();
    assert!(err.contains("--database-url"), "{err}");
}

#[actix_rt::test]
async fn a_database_gone_later_is_503_with_a_clear_message() {
    let db = TestDb::create().await;
    let runs = tempfile::tempdir().unwrap();
    let s = start_serve(runs.path(), &db.url).await;
    assert_eq!(s.get("/runs").await.0, 200);
    db.drop_now().await;
    let (status, body) = s.get("/runs").await;
    assert_eq!(status, 503, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("index database is unavailable"),
        "{message}"
    );
    let (status, body) = s
        .post_json(
            "/simulations",
            &json!({"simulation": {"name": "x"}, "target": {"endpoint": "http://127.0.0.1:9"},
                    "run": {"rounds": 1, "personas": ["maya"]}}),
        )
        .await;
    assert_eq!(status, 503, "{body}");
    // Nothing was created while the index could not record it.
    let (_, sims) = s.get("/simulations").await;
    assert_eq!(sims, json!([]));
    s.stop().await;
}

/// Sync reads only runs whose files changed; a run appears once something in it can be read,
/// follows edits to its files, and leaves the list when nothing in it can be read any more, in
/// step with the directory listing `judge serve` gives without an index.
#[actix_rt::test]
async fn the_index_lists_readable_runs_and_follows_their_edits() {
    let db = TestDb::create().await;
    let runs = tempfile::tempdir().unwrap();
    let s = start_serve(runs.path(), &db.url).await;
    let dir = runs.path().join("ltm-20260105T090000Z-seed1");
    std::fs::create_dir(&dir).unwrap();
    let listed = || async {
        let (status, body) = s.get("/runs").await;
        assert_eq!(status, 200, "{body}");
        let from_index: Vec<(String, String)> = body
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["id"].as_str().unwrap().to_owned(),
                    r["state"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let from_disk: Vec<(String, String)> = catalog::list(runs.path())
            .unwrap()
            .into_iter()
            .map(|r| (r.id, r.state))
            .collect();
        assert_eq!(
            from_index, from_disk,
            "the index lists what the directories hold"
        );
        from_index
    };

    // Half written: nothing readable yet.
    std::fs::write(dir.join("manifest.json"), "{\"suite\": \"lt").unwrap();
    assert!(listed().await.is_empty());

    std::fs::write(
        dir.join("manifest.json"),
        r#"{"suite": "ltm", "created_at": "2026-01-05T09:00:00Z", "state": "running"}"#,
    )
    .unwrap();
    assert_eq!(
        listed().await,
        [(
            "ltm-20260105T090000Z-seed1".to_owned(),
            "running".to_owned()
        )]
    );

    // A new file changes the run's fingerprint: it is read again.
    std::fs::write(
        dir.join("results.json"),
        r#"{"summary": {"pass_rate": 1.0}}"#,
    )
    .unwrap();
    assert_eq!(
        listed().await,
        [(
            "ltm-20260105T090000Z-seed1".to_owned(),
            "complete".to_owned()
        )]
    );

    // Damaged: it leaves the list (and the index) until it can be read again.
    std::fs::write(dir.join("manifest.json"), "not json").unwrap();
    std::fs::remove_file(dir.join("results.json")).unwrap();
    assert!(listed().await.is_empty());
    s.stop().await;
    db.drop_now().await;
}
