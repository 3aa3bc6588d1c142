//! Commands over finished runs: `judge compare`, `judge merge`, and `judge probe` (which APIs and
//! capabilities a target offers).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::EXIT_REGRESSION;
use super::summary;
use super::target::TargetArgs;
use anyhow::{anyhow, bail};
use clap::Args;
use judge_client::endpoint::{ApiScope, TargetClient, probe_in};
use judge_client::rundir::{self, manifest::Details};
use judge_client::serve::{self, catalog};
use judge_client::suites::Suite;
use judge_client::suites::ltm::{Ltm, compare};
use judge_client::suites::membench::{self, Membench};

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
    // LTM and membench runs keep their own pairing and text (per test type, per category);
    // every other suite compares through its `Suite` contract, as `judge serve` does.
    let kind = rundir::read_manifest::<Details>(&args.run_a).map(|m| m.suite);
    match kind.as_deref() {
        Ok(Membench::KIND) => return compare_membench(&args),
        Ok(Ltm::KIND) | Err(_) => {}
        Ok(_) => return compare_any(&args),
    }
    let a = compare::load(&args.run_a)?;
    let b = compare::load(&args.run_b)?;
    let comparison = compare::compare(&a, &b, args.alpha);
    print_comparison(
        args.json,
        &comparison,
        compare::render(&comparison),
        comparison.regression,
    )
}

/// `judge compare` of two runs of any other suite, paired unit by unit through its [`Suite`].
fn compare_any(args: &CompareArgs) -> anyhow::Result<ExitCode> {
    let detail = |dir: &Path| -> anyhow::Result<catalog::RunDetail> {
        let (Some(root), Some(id)) = (dir.parent(), dir.file_name().and_then(|n| n.to_str()))
        else {
            bail!("{} is not a run directory", dir.display());
        };
        catalog::get(root, id).map_err(|e| anyhow!("{}: {e}", dir.display()))
    };
    let (a, b) = (detail(&args.run_a)?, detail(&args.run_b)?);
    let comparison = serve::compare::compare(&a, &b, args.alpha).map_err(|e| anyhow!("{e}"))?;
    print_comparison(
        args.json,
        &comparison,
        serve::compare::render(&comparison),
        comparison.regression,
    )
}

/// `judge compare` of two membench runs, paired per question.
fn compare_membench(args: &CompareArgs) -> anyhow::Result<ExitCode> {
    let a = membench::compare::load(&args.run_a)?;
    let b = membench::compare::load(&args.run_b)?;
    let comparison = membench::compare::compare(&a, &b, args.alpha)?;
    print_comparison(
        args.json,
        &comparison,
        membench::compare::render(&comparison),
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
