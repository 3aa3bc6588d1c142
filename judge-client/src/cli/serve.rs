//! `judge serve`: the HTTP API and dashboard over a folder of run directories.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

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
}

pub async fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let config = judge_client::serve::ServeConfig {
        addr: args.addr,
        runs: args.runs.clone(),
        auth_token: args.auth_token,
        workers: args.workers,
    };
    let (server, addr) = match &args.database_url {
        Some(url) => judge_client::serve::bind_with_database(config, url).await?,
        None => judge_client::serve::bind(config)?,
    };
    let index = args.database_url.as_deref().map_or(String::new(), |url| {
        format!("; indexed in {}", judge_client::serve::index::redact(url))
    });
    println!(
        "judge serve: http://{addr}/ (runs in {}{index}; API described at /openapi.json)",
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
