//! Commands over finished runs: `judge compare`, `judge merge`, and `judge probe` (which APIs and
//! capabilities a target offers).

use std::path::PathBuf;
use std::process::ExitCode;

use super::EXIT_REGRESSION;
use super::summary;
use super::target::TargetArgs;
use clap::Args;
use judge_client::endpoint::{ApiScope, TargetClient, probe_in};
use judge_client::suites::compare;

#[derive(Args)]
pub struct MergeArgs {
    /// Where the merged run directory goes.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// The shards' run directories (every shard exactly once).
    #[arg(required = true, value_name = "PART")]
    pub parts: Vec<PathBuf>,
}

#[derive(Args)]
pub struct CompareArgs {
    pub run_a: PathBuf,
    pub run_b: PathBuf,
    /// Significance level of the regression verdict.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ProbeArgs {
    #[command(flatten)]
    pub target: TargetArgs,
}

pub fn merge_parts(args: MergeArgs) -> anyhow::Result<ExitCode> {
    let dir = summary::merge(&args.parts, &args.out)?;
    println!("merged {} parts", args.parts.len());
    summary::print_run(&dir)?;
    Ok(ExitCode::SUCCESS)
}

pub fn compare_runs(args: CompareArgs) -> anyhow::Result<ExitCode> {
    // The one comparison `judge serve` and `--baseline` make too.
    let (a, b) = (compare::load(&args.run_a)?, compare::load(&args.run_b)?);
    let comparison = compare::compare(a.as_ref(), b.as_ref(), args.alpha)?;
    print_comparison(
        args.json,
        &comparison,
        compare::render(&comparison),
        comparison.regression,
    )
}

/// Prints a comparison (as JSON with `--json`, else `rendered`); exit 3 on a regression.
pub fn print_comparison<T: serde::Serialize>(
    json: bool,
    comparison: &T,
    rendered: String,
    regression: bool,
) -> anyhow::Result<ExitCode> {
    if json {
        println!("{}", serde_json::to_string_pretty(comparison)?);
    } else {
        print!("{rendered}");
    }
    Ok(if regression {
        ExitCode::from(EXIT_REGRESSION)
    } else {
        ExitCode::SUCCESS
    })
}

pub async fn probe_only(args: ProbeArgs) -> anyhow::Result<ExitCode> {
    let client = TargetClient::new(args.target.settings()?, args.target.credentials());
    // Every API is tried: the report says which ones the target serves.
    let capabilities = probe_in(&client, "judge-probe", ApiScope::Every).await?;
    println!("{}", serde_json::to_string_pretty(&capabilities)?);
    Ok(ExitCode::SUCCESS)
}
