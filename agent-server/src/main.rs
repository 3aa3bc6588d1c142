use agent_server::config::Config;
use agent_server::startup::Application;
use clap::Parser;

/// mimalloc rather than glibc's malloc: a turn allocates many small strings (terms, facts,
/// JSON), and glibc's allocator showed up as about 15 % of the server's CPU under load
/// (docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::parse();
    let telemetry = agent_server::telemetry::init(config.log_format);
    let result = run(config).await;
    if let Err(e) = &result {
        tracing::error!(error = %format!("{e:#}"), "agent-server failed");
    }
    // After SIGTERM/SIGINT too: the last spans are exported before the process exits.
    telemetry.shutdown();
    result
}

async fn run(config: Config) -> anyhow::Result<()> {
    let app = Application::build(config).await?;
    app.run_until_stopped().await?;
    tracing::info!("agent-server stopped");
    Ok(())
}
