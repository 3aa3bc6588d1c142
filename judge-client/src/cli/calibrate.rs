//! `judge calibrate`: finished runs of one suite against a ladder of targets, read back: does the
//! suite order them, with intervals, and how far apart are adjacent rungs in noise floors.
//! `scripts/calibrate.sh` starts the targets, makes the runs and calls this.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use judge_client::rundir;
use judge_client::suites::calibrate::{self, Measure, RungRun};

#[derive(Args)]
#[command(
    after_help = "Example:\n  judge calibrate --out runs/ladder \\\n    \"no memory=runs/ltm-a\" \"facts only=runs/ltm-b\" \"episodes=runs/ltm-c\"\n\n\
A step is told apart when the upper rung's mean exceeds the lower's by at least one noise floor,\n\
(1.96 + 0.84) x sqrt(se_lower^2 + se_upper^2): the smallest difference found at 95 % confidence\n\
with 80 % power. The ladder is ordered when every rung scores at least the one below it."
)]
pub struct CalibrateArgs {
    /// The rungs, lowest first: LABEL=RUN_DIR, each a finished run of the same suite (LTM runs
    /// of one phrasing).
    #[arg(required = true, num_args = 2.., value_name = "LABEL=RUN_DIR")]
    pub rungs: Vec<String>,
    /// What each unit is measured by: `score` (LTM: a test's score; membench: LoCoMo F1 or
    /// LongMemEval's verdict) or, for membench, `recall@K`, the agent's evidence recall@K
    /// (K = 5, 8 or 20).
    #[arg(long, default_value = "score")]
    pub measure: Measure,
    /// Also write the table as `calibration.md` and the ladder as `calibration.json` into this
    /// folder (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print the ladder as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

pub fn calibrate(args: CalibrateArgs) -> anyhow::Result<ExitCode> {
    let rungs = args
        .rungs
        .iter()
        .map(|r| r.parse::<RungRun>())
        .collect::<Result<Vec<_>, _>>()?;
    let ladder = calibrate::ladder(&rungs, args.measure)?;
    let table = ladder.markdown();
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
        rundir::write_atomic(&out.join("calibration.md"), table.as_bytes())?;
        rundir::write_json(&out.join("calibration.json"), &ladder)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&ladder)?);
    } else {
        print!("{table}");
    }
    Ok(ExitCode::SUCCESS)
}
