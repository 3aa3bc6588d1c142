//! `judge serve`: the HTTP API and dashboard over a folder of run directories.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use judge_client::serve::secrets::Secrets;

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on; anything but loopback needs --auth-token.
    #[arg(long, default_value = "127.0.0.1:8700")]
    pub addr: std::net::SocketAddr,
    /// The folder of run directories to show (simulations started here are written there too).
    #[arg(long, default_value = "runs")]
    pub runs: PathBuf,
    /// Require `Authorization: Bearer TOKEN` on every request.
    #[arg(long, env = "JUDGE_SERVE_TOKEN", hide_env_values = true)]
    pub auth_token: Option<String>,
    /// HTTP worker threads.
    #[arg(long, default_value_t = 2)]
    pub workers: usize,
    /// Keep an index of runs, simulations, agent configurations and app audit logs in this
    /// Postgres database (`postgres://user:password@host:port/db`); the run directories stay
    /// the source of truth and the index is rebuilt from them at start.
    #[arg(long, env = "JUDGE_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// A YAML (or `.json`) map of secret name -> API key that configs reference with
    /// `api_key_secret: NAME`; must not be readable by other users (`chmod 600`). Re-read on
    /// SIGHUP (a file that fails to load then keeps the keys loaded before).
    #[arg(long, env = "JUDGE_SECRETS_FILE")]
    pub secrets_file: Option<PathBuf>,
}

pub async fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let config = judge_client::serve::ServeConfig {
        addr: args.addr,
        runs: args.runs.clone(),
        auth_token: args.auth_token,
        workers: args.workers,
    };
    let secrets = match &args.secrets_file {
        Some(path) => Some(Arc::new(Secrets::load(path)?)),
        None => None,
    };
    // Before the server listens: from then on a SIGHUP must reload, not kill (its default).
    #[cfg(unix)]
    if let Some(secrets) = &secrets {
        reload_on_hangup(secrets.clone())?;
    }
    let (server, addr) = match &args.database_url {
        Some(url) => judge_client::serve::bind_with_database(config, url, secrets.clone()).await?,
        None => judge_client::serve::bind_with_secrets(config, secrets.clone())?,
    };
    let index = args.database_url.as_deref().map_or(String::new(), |url| {
        format!("; indexed in {}", judge_client::serve::index::redact(url))
    });
    let secrets = secrets.map_or(String::new(), |s| {
        format!("; {} secrets from {}", s.names().len(), s.path().display())
    });
    println!(
        "judge serve: http://{addr}/ (runs in {}{index}{secrets}; API described at /openapi.json)",
        args.runs.display()
    );
    let handle = server.handle();
    let server = actix_rt::spawn(server);
    // Signals are ours, not actix's: Ctrl-C stops the server gracefully.
    actix_rt::signal::ctrl_c().await?;
    handle.stop(true).await;
    server.await??;
    Ok(ExitCode::SUCCESS)
}

/// Re-reads the secrets file on every SIGHUP, for the rest of the process. Simulations already
/// running keep the keys they started with; later starts and health checks read the new ones.
#[cfg(unix)]
fn reload_on_hangup(secrets: Arc<Secrets>) -> std::io::Result<()> {
    use actix_rt::signal::unix::{SignalKind, signal};
    let mut hangups = signal(SignalKind::hangup())?;
    actix_rt::spawn(async move {
        while hangups.recv().await.is_some() {
            match secrets.reload() {
                Ok(count) => println!(
                    "judge serve: reloaded {count} secrets from {}",
                    secrets.path().display()
                ),
                Err(e) => eprintln!("judge serve: {e}; the secrets loaded before stay in use"),
            }
        }
    });
    Ok(())
}
