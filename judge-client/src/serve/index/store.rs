//! Every SQL statement of the index: migrations, and writing the records of [`super::records`].
//! Writes replace what a run or simulation had (delete its dependent rows, insert them again),
//! so indexing the same directory twice leaves the same rows, never duplicates.

use deadpool_postgres::GenericClient;
use tokio_postgres::types::Json;

use super::records::{RunRecord, SimulationRecord};

/// Versioned migrations, applied in order and recorded in `judge_index_migrations` (its own
/// table, so the index may share a database with agent-server's memory). Never edit an applied
/// one; add the next version.
pub const MIGRATIONS: &[(i32, &str, &str)] =
    &[(1, "init", include_str!("migrations/0001_init.sql"))];

/// Serialises migrations of one database across servers ("judgeidx").
const MIGRATION_LOCK: i64 = 0x6a75_6467_6569_6478;

/// The newest version the database has, when it is newer than this binary knows.
pub async fn migrate(
    client: &mut deadpool_postgres::Object,
) -> Result<Option<i32>, tokio_postgres::Error> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS judge_index_migrations (
             version    integer PRIMARY KEY,
             name       text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
         )",
    )
    .await?;
    let applied: Vec<i32> = tx
        .query("SELECT version FROM judge_index_migrations", &[])
        .await?
        .iter()
        .map(|row| row.get(0))
        .collect();
    let known = MIGRATIONS.last().map_or(0, |m| m.0);
    if let Some(newer) = applied.iter().copied().filter(|v| *v > known).max() {
        return Ok(Some(newer));
    }
    for (version, name, sql) in MIGRATIONS {
        if applied.contains(version) {
            continue;
        }
        tx.batch_execute(sql).await?;
        tx.execute(
            "INSERT INTO judge_index_migrations (version, name) VALUES ($1, $2)",
            &[version, name],
        )
        .await?;
    }
    tx.commit().await?;
    Ok(None)
}

/// `(id, fingerprint)` of every indexed run.
pub async fn fingerprints(
    client: &impl GenericClient,
) -> Result<Vec<(String, String)>, tokio_postgres::Error> {
    Ok(client
        .query("SELECT id, fingerprint FROM runs", &[])
        .await?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect())
}

/// Writes run `run` and everything in it, replacing what the index had of it.
pub async fn put_run(
    client: &impl GenericClient,
    run: &RunRecord,
) -> Result<(), tokio_postgres::Error> {
    let s = &run.summary;
    client
        .execute("DELETE FROM simulations WHERE run_id = $1", &[&s.id])
        .await?;
    let created: Option<chrono::DateTime<chrono::Utc>> =
        s.created.as_deref().and_then(|c| c.parse().ok());
    let summary = serde_json::to_value(s).unwrap_or_default();
    client
        .execute(
            "INSERT INTO runs (id, suite, state, created_at, score, score_label, summary, manifest,
                               fingerprint, indexed_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, now())
             ON CONFLICT (id) DO UPDATE SET suite = EXCLUDED.suite, state = EXCLUDED.state,
                 created_at = EXCLUDED.created_at, score = EXCLUDED.score,
                 score_label = EXCLUDED.score_label, summary = EXCLUDED.summary,
                 manifest = EXCLUDED.manifest, fingerprint = EXCLUDED.fingerprint,
                 indexed_at = now()",
            &[
                &s.id,
                &s.suite,
                &s.state,
                &created,
                &s.score,
                &s.score_label,
                &Json(&summary),
                &Json(&run.manifest),
                &run.fingerprint,
            ],
        )
        .await?;
    for sim in &run.simulations {
        put_simulation(client, sim).await?;
    }
    Ok(())
}

/// Writes simulation `sim` with its agents and apps, replacing what the index had of it.
pub async fn put_simulation(
    client: &impl GenericClient,
    sim: &SimulationRecord,
) -> Result<(), tokio_postgres::Error> {
    for link in &sim.agents {
        let a = &link.agent;
        client
            .execute(
                "INSERT INTO agents (id, name, description, config) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name,
                     description = EXCLUDED.description, updated_at = now()
                 WHERE (agents.name, agents.description)
                       IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.description)",
                &[&a.id, &a.name, &a.description, &Json(&a.config)],
            )
            .await?;
    }
    client
        .execute(
            "INSERT INTO simulations (id, kind, name, state, run_id, config, error,
                 conversations_planned, conversations_done, created_at, started_at, finished_at,
                 updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, now())
             ON CONFLICT (id) DO UPDATE SET kind = EXCLUDED.kind, name = EXCLUDED.name,
                 state = EXCLUDED.state, run_id = EXCLUDED.run_id, config = EXCLUDED.config,
                 error = EXCLUDED.error, conversations_planned = EXCLUDED.conversations_planned,
                 conversations_done = EXCLUDED.conversations_done,
                 created_at = EXCLUDED.created_at, started_at = EXCLUDED.started_at,
                 finished_at = EXCLUDED.finished_at, updated_at = now()",
            &[
                &sim.id,
                &sim.kind,
                &sim.name,
                &sim.state,
                &sim.run_id,
                &Json(&sim.config),
                &sim.error,
                &sim.conversations_planned,
                &sim.conversations_done,
                &sim.created_at,
                &sim.started_at,
                &sim.finished_at,
            ],
        )
        .await?;
    client
        .execute(
            "DELETE FROM simulation_agents WHERE simulation_id = $1",
            &[&sim.id],
        )
        .await?;
    for link in &sim.agents {
        client
            .execute(
                "INSERT INTO simulation_agents (simulation_id, agent_id, role) VALUES ($1, $2, $3)
                 ON CONFLICT DO NOTHING",
                &[&sim.id, &link.agent.id, &link.role],
            )
            .await?;
    }
    client
        .execute(
            "DELETE FROM app_instances WHERE simulation_id = $1",
            &[&sim.id],
        )
        .await?;
    for app in &sim.apps {
        client
            .execute(
                "INSERT INTO app_instances (id, simulation_id, app_id, config, state)
                 VALUES ($1, $2, $3, $4, $5)",
                &[
                    &app.id,
                    &sim.id,
                    &app.app_id,
                    &Json(&app.config),
                    &Json(&app.state),
                ],
            )
            .await?;
        for a in &app.actions {
            client
                .execute(
                    "INSERT INTO app_action_log (id, app_instance_id, seq, agent_id, step,
                         action_name, params, success, result, error, executed_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, COALESCE($11, now()))",
                    &[
                        &a.id,
                        &app.id,
                        &a.seq,
                        &a.agent_id,
                        &a.step,
                        &a.action_name,
                        &Json(&a.params),
                        &a.success,
                        &a.result.as_ref().map(Json),
                        &a.error,
                        &a.executed_at,
                    ],
                )
                .await?;
        }
    }
    Ok(())
}

/// Removes runs not in `on_disk` (their simulations with them), simulations of kind `sim` with
/// no run that are not in `live`, and agents no simulation uses any more.
pub async fn prune(
    client: &impl GenericClient,
    on_disk: &[String],
    live: &[String],
) -> Result<(), tokio_postgres::Error> {
    client
        .execute(
            "DELETE FROM simulations
             WHERE (run_id IS NOT NULL AND NOT (run_id = ANY($1)) AND NOT (id = ANY($2)))
                OR (run_id IS NULL AND NOT (id = ANY($2)))",
            &[&on_disk, &live],
        )
        .await?;
    client
        .execute("DELETE FROM runs WHERE NOT (id = ANY($1))", &[&on_disk])
        .await?;
    client
        .execute(
            "DELETE FROM agents a
             WHERE NOT EXISTS (SELECT 1 FROM simulation_agents s WHERE s.agent_id = a.id)",
            &[],
        )
        .await?;
    Ok(())
}

/// Every indexed run's summary line, as GET /runs serves it.
pub async fn summaries(
    client: &impl GenericClient,
) -> Result<Vec<serde_json::Value>, tokio_postgres::Error> {
    Ok(client
        .query("SELECT summary FROM runs", &[])
        .await?
        .iter()
        .map(|r| r.get::<_, Json<serde_json::Value>>(0).0)
        .collect())
}
