//! `judge`: the agentwall benchmark CLI.

mod cli;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use cli::apps::{AppsArgs, apps};
use cli::calibrate::{CalibrateArgs, calibrate};
use cli::conform::{ConformArgs, conform};
use cli::load::{LoadArgs, load_run};
use cli::ltm::{LtmArgs, ltm};
use cli::membench::{MembenchArgs, membench};
use cli::runs::{CompareArgs, MergeArgs, ProbeArgs, compare_runs, merge_parts, probe_only};
use cli::serve::{ServeArgs, serve};
use cli::sim::{ReplayArgs, SimArgs, replay, simulate};
use judge_client::endpoint::telemetry;

#[derive(Parser)]
#[command(
    name = "judge",
    version,
    about = "Benchmarks any OpenAI-compatible chat endpoint over HTTP.",
    after_help = "Examples:\n  judge ltm --endpoint http://127.0.0.1:8080\n  judge apps --endpoint http://127.0.0.1:8080 --action-mode tools\n  judge sim --endpoint http://127.0.0.1:8080 --endpoint-b http://127.0.0.1:8081\n  judge load --endpoint http://127.0.0.1:8080 --concurrency 64 --duration 30s\n  judge conform --endpoint http://127.0.0.1:8080 --api both\n  judge compare runs/<run-a> runs/<run-b>\n  judge calibrate \"no memory=runs/<run-a>\" \"memory=runs/<run-b>\"\n\nEvery run writes runs/<run-id>/ with results.json, junit.xml and report.html."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the long-term-memory suite (or finish an interrupted run with --resume).
    Ltm(LtmArgs),
    /// Run LoCoMo or LongMemEval (the published files) against the target: answers scored as
    /// the datasets' authors define, retrieval measured by recall@k.
    Membench(MembenchArgs),
    /// Let the target operate simulated apps (PayPal) for scripted users; graded by final state.
    Apps(AppsArgs),
    /// Simulate persona conversations against the target (A/B with --endpoint-b).
    Sim(SimArgs),
    /// A/B comparison: the same simulation against --endpoint and --endpoint-b.
    Ab(SimArgs),
    /// Load-test the endpoint: closed or open loop, streaming or not; writes results.json and
    /// report.html.
    Load(LoadArgs),
    /// Check that the endpoint speaks Chat Completions and the Responses API as OpenAI's clients
    /// expect; exits 5 when any applicable check fails.
    Conform(ConformArgs),
    /// Compare two runs test by test; exits 3 on a significant regression of RUN_B against RUN_A.
    Compare(CompareArgs),
    /// Read finished runs of one suite against a ladder of targets (lowest first): does the suite
    /// order them, with intervals, and how far apart are adjacent rungs in noise floors.
    Calibrate(CalibrateArgs),
    /// Send the requests of a fixture file to another agent and compare its replies.
    Replay(ReplayArgs),
    /// Combine the run directories of the shards of one `judge ltm --shard` benchmark into one run.
    Merge(MergeArgs),
    /// Only probe the target's capabilities and print them.
    Probe(ProbeArgs),
    /// Serve the HTTP API (runs, simulations, agent injection) and the dashboard.
    Serve(ServeArgs),
}

fn main() -> anyhow::Result<ExitCode> {
    match Cli::parse().command {
        // The load generator runs its own runtimes, one per worker thread.
        Command::Load(args) => load_run(args),
        command => actix_rt::System::new().block_on(run_command(command)),
    }
}

async fn run_command(command: Command) -> anyhow::Result<ExitCode> {
    // Spans go out over OTLP/HTTP only when OTEL_EXPORTER_OTLP_ENDPOINT is set.
    let provider = telemetry::install()?;
    let outcome = match command {
        Command::Ltm(args) => ltm(args).await,
        Command::Membench(args) => membench(args).await,
        Command::Compare(args) => compare_runs(args),
        Command::Calibrate(args) => calibrate(args),
        Command::Conform(args) => conform(args).await,
        Command::Probe(args) => probe_only(args).await,
        Command::Apps(args) => apps(args).await,
        Command::Merge(args) => merge_parts(args),
        Command::Sim(args) => simulate(args, false).await,
        Command::Ab(args) => simulate(args, true).await,
        Command::Replay(args) => replay(args).await,
        Command::Serve(args) => serve(args).await,
        Command::Load(_) => unreachable!("main runs the load outside any runtime"),
    };
    if let Some(provider) = provider
        && let Err(e) = provider.shutdown()
    {
        eprintln!("judge: could not flush spans: {e}");
    }
    outcome
}
