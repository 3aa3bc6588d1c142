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
}

pub async fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let (server, addr) = judge_client::serve::bind(judge_client::serve::ServeConfig {
        addr: args.addr,
        runs: args.runs.clone(),
        auth_token: args.auth_token,
        workers: args.workers,
    })?;
    println!(
        "judge serve: http://{addr}/ (runs in {}; API described at /openapi.json)",
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
