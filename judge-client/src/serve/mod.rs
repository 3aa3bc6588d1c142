//! `judge serve`: an HTTP API over run directories and simulations (docs/contracts/agent-injection.md and
//! docs/contracts/apps.md), documented at `/openapi.json`.
//!
//! - [`catalog`]: run directories under `--runs`, read from disk (the source of truth);
//!   [`trials`]: the trials of `judge apps` runs in them; [`index`]: with `--database-url`, a
//!   rebuildable index of them in Postgres; [`rundir`]: what the server adds to the run
//!   directories of the simulations it runs;
//! - [`config`]: a simulation's config (the YAML or JSON of docs/contracts/agent-injection.md), validated; [`secrets`]:
//!   `--secrets-file`, the keys configs name in `api_key_secret`;
//! - [`state`]: simulations in memory, their events; [`live`]: them as the index stores them,
//!   and keeping the index in step; [`runner`]: a simulation run in the background; [`error`]:
//!   the one error-to-status table; [`auth`]: `--auth-token`;
//! - routes per resource: [`runs`] (with the comparison of two runs,
//!   [`crate::suites::compare`]), [`simulations`], [`injection`], [`apps`] (the endpoints of docs/contracts/apps.md over `judge apps` runs); [`openapi`];
//!   [`dashboard`] at `/`.
//!
//! Imports go one way, from routes down to what they use: routes → [`runner`] → [`live`] →
//! [`state`] and [`index`] → [`trials`] and [`catalog`] → [`error`]. The state holds no runner
//! and the index no simulation: a runner is handed the state, and [`live`] turns simulations
//! into the index's records.

pub mod apps;
pub mod auth;
pub mod catalog;
pub mod config;
pub mod dashboard;
pub mod error;
pub mod index;
pub mod injection;
pub mod live;
pub mod openapi;
pub mod rundir;
pub mod runner;
pub mod runs;
pub mod secrets;
pub mod simulations;
pub mod state;
pub mod trials;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use actix_web::dev::Server;
use actix_web::middleware::from_fn;
use actix_web::{App, HttpServer, web};

use self::error::ApiError;
use self::index::{Index, IndexError, SYNC_INTERVAL};
use self::secrets::Secrets;
use self::state::ServeState;

/// Largest simulation config or injection body.
const MAX_BODY: usize = 256 * 1024;

#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub addr: SocketAddr,
    pub runs: PathBuf,
    pub auth_token: Option<String>,
    /// HTTP workers (each runs its simulations on its own thread).
    pub workers: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "refusing to listen on {0} without --auth-token: anyone who can reach it could start simulations and read every run; bind to 127.0.0.1 or pass --auth-token"
    )]
    OpenWithoutToken(SocketAddr),
    #[error("--auth-token must not be empty")]
    EmptyToken,
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    Index(#[from] IndexError),
}

/// Registers every route (the tests build the same app).
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(dashboard::index)
        .service(openapi::openapi_json)
        .service(runs::list)
        .service(runs::file)
        .service(runs::compare_runs)
        .service(runs::get)
        .service(simulations::create)
        .service(simulations::list)
        .service(simulations::get)
        .service(simulations::start)
        .service(simulations::stop)
        .service(simulations::events)
        .service(injection::inject)
        .service(injection::remove)
        .service(injection::list)
        .service(injection::metrics)
        .service(injection::health_check)
        .service(apps::list)
        .service(apps::actions)
        .service(apps::agent_state)
        .service(apps::get);
}

/// Binds the server (port 0 picks a free port: read it from the returned address).
pub fn bind(config: ServeConfig) -> Result<(Server, SocketAddr), ServeError> {
    bind_with_secrets(config, None)
}

/// [`bind`] with `--secrets-file`, loaded by the caller (which may reload it).
pub fn bind_with_secrets(
    config: ServeConfig,
    secrets: Option<Arc<Secrets>>,
) -> Result<(Server, SocketAddr), ServeError> {
    check(&config)?;
    bind_with(config, None, secrets)
}

/// [`bind`] with the Postgres index at `database_url`: connects and migrates, indexes every
/// run directory, and only then listens; keeps the index in step every [`SYNC_INTERVAL`]
/// while the server runs. Fails with the URL (password hidden) and what to do when the
/// database cannot be used. Must run on the actix runtime that will run the server.
pub async fn bind_with_database(
    config: ServeConfig,
    database_url: &str,
    secrets: Option<Arc<Secrets>>,
) -> Result<(Server, SocketAddr), ServeError> {
    check(&config)?;
    let index = Index::connect(database_url).await?;
    index.sync(&config.runs, &[]).await?;
    let (server, addr, state) = bind_state(config, Some(index.clone()), secrets)?;
    // Holds the state weakly: the loop ends once the server is gone.
    let weak = std::sync::Arc::downgrade(&state.into_inner());
    actix_web::rt::spawn(async move {
        loop {
            actix_web::rt::time::sleep(SYNC_INTERVAL).await;
            let Some(state) = weak.upgrade() else {
                return;
            };
            let live = match live::live_records(&state) {
                Ok(live) => live,
                Err(_) => return,
            };
            if let Err(e) = index.sync(&state.runs, &live).await {
                eprintln!("judge serve: index sync failed (retried in {SYNC_INTERVAL:?}): {e}");
            }
        }
    });
    Ok((server, addr))
}

fn check(config: &ServeConfig) -> Result<(), ServeError> {
    if config.auth_token.as_deref() == Some("") {
        return Err(ServeError::EmptyToken);
    }
    if !config.addr.ip().is_loopback() && config.auth_token.is_none() {
        return Err(ServeError::OpenWithoutToken(config.addr));
    }
    Ok(())
}

fn bind_with(
    config: ServeConfig,
    index: Option<Index>,
    secrets: Option<Arc<Secrets>>,
) -> Result<(Server, SocketAddr), ServeError> {
    bind_state(config, index, secrets).map(|(server, addr, _)| (server, addr))
}

fn bind_state(
    config: ServeConfig,
    index: Option<Index>,
    secrets: Option<Arc<Secrets>>,
) -> Result<(Server, SocketAddr, web::Data<ServeState>), ServeError> {
    let state = web::Data::new(ServeState::new(
        config.runs.clone(),
        config.auth_token,
        index,
        secrets,
    ));
    let shared = state.clone();
    let addr = config.addr;
    let server = HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            .app_data(web::PayloadConfig::new(MAX_BODY))
            .app_data(
                web::JsonConfig::default()
                    .limit(MAX_BODY)
                    .error_handler(|e, _| error::from_actix(e)),
            )
            .app_data(web::PathConfig::default().error_handler(|e, _| error::from_actix(e)))
            .app_data(web::QueryConfig::default().error_handler(|e, _| error::from_actix(e)))
            .wrap(from_fn(auth::require_token))
            .configure(routes)
            .default_service(web::to(|req: actix_web::HttpRequest| async move {
                Err::<actix_web::HttpResponse, _>(ApiError::not_found("route", req.path()))
            }))
    })
    .workers(config.workers.max(1))
    .disable_signals()
    .bind(addr)
    .map_err(|source| ServeError::Bind { addr, source })?;
    let bound = server.addrs()[0];
    Ok((server.run(), bound, shared))
}
