//! `judge ltm`: the long-term-memory suite (new runs, `--resume`, `--shard`).

use std::path::PathBuf;
use std::process::ExitCode;

use super::EXIT_REGRESSION;
use super::progress::progress_bar;
use super::sim::helper_settings;
use super::summary::{fail_under, print_files};
use super::target::TargetArgs;
use anyhow::{Context, bail};
use clap::Args;
use judge_client::endpoint::{Api, Credentials, TurnMode};
use judge_client::suites::ltm::results::{RunResults, TestResult, TestStatus};
use judge_client::suites::ltm::run::{self, RunOutcome};
use judge_client::suites::ltm::shard::Shard;
use judge_client::suites::ltm::summary::render_table;
use judge_client::suites::ltm::summary::{latency, one_at_a_time};
use judge_client::suites::ltm::{Ltm, Phrasing, TestType};
use judge_client::suites::{Suite, compare};
use judge_client::{HistoryMode, LtmConfig};

#[derive(Args)]
pub struct LtmArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Finish the interrupted run in this directory (its recorded settings are used).
    #[arg(long, value_name = "RUN_DIR")]
    pub resume: Option<PathBuf>,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Tests run at once (each in its own sessions), at most 10.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Seeded trials per test type.
    #[arg(long, default_value_t = 3)]
    pub trials: u32,
    /// Filler between what is told and what is asked, in cl100k tokens.
    #[arg(long, default_value_t = 1000)]
    pub span: u32,
    /// Largest single filler turn, in tokens.
    #[arg(long, default_value_t = 250)]
    pub filler_turn_tokens: u32,
    /// `new`: send only the new user turn; `full`: send the whole conversation; `chain`: the new
    /// turn with the previous response's id (--api responses).
    #[arg(long, default_value = "new")]
    pub history: HistoryMode,
    /// The API the turns go through: `chat`, `responses` or `a2a`.
    #[arg(long, default_value = "chat")]
    pub api: Api,
    /// The phrasings of the user turns: `standard` (the documented templates) or `heldout`
    /// (everyday phrasings kept disjoint from them).
    #[arg(long, value_enum, default_value_t = Phrasing::Standard)]
    pub phrasing: Phrasing,
    /// Comma-separated test types (default: all 14).
    #[arg(long, value_delimiter = ',')]
    pub types: Vec<TestType>,
    /// Where run directories go.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// Exit 2 when the overall score (0 to 1) is below this.
    #[arg(long, value_name = "SCORE")]
    pub fail_under: Option<f64>,
    /// Run only part INDEX of COUNT of the plan (e.g. 0/4); `judge merge` combines the parts.
    #[arg(long, value_name = "INDEX/COUNT")]
    pub shard: Option<Shard>,
    /// OpenAI-compatible endpoint of the LLM grader: grades every reached check, settles those
    /// the rules leave undecided, and its agreement with the rules is reported.
    #[arg(long)]
    pub grader_endpoint: Option<String>,
    /// Model of the LLM grader (default: the first one its endpoint lists).
    #[arg(long)]
    pub grader_model: Option<String>,
    /// Bearer key for --grader-endpoint (also used by --resume of a graded run).
    #[arg(long, env = "JUDGE_GRADER_API_KEY", hide_env_values = true)]
    pub grader_api_key: Option<String>,
    /// Compare with this earlier run afterwards; exit 3 on a significant regression.
    #[arg(long, value_name = "RUN_DIR")]
    pub baseline: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

pub fn print_outcome(outcome: &RunOutcome) {
    let results: &RunResults = &outcome.results;
    println!("{}", render_table(results));
    let failures: Vec<&TestResult> = results
        .tests
        .iter()
        .filter(|t| t.failure.is_some())
        .collect();
    for t in failures {
        if let Some(f) = &t.failure {
            println!("  {}: stopped on {}: {}", t.id, f.kind, f.message);
        }
    }
    let not_applicable = results
        .tests
        .iter()
        .filter(|t| t.status == TestStatus::NotApplicable)
        .count();
    if not_applicable > 0 {
        println!("{not_applicable} test(s) not applicable to this target (see report.html)");
    }
    let not_gradable = results
        .tests
        .iter()
        .filter(|t| t.status == TestStatus::NotGradable)
        .count();
    if not_gradable > 0 {
        println!(
            "{not_gradable} test(s) not gradable: only the LLM grader grades them (--grader-endpoint)"
        );
    }
    if let Some(l) = latency(&outcome.timings) {
        println!(
            "latency: p50 {} ms, p95 {} ms, max {} ms over {} turns ({} retried)",
            l.p50_ms, l.p95_ms, l.max_ms, l.turns, l.retried
        );
    }
    if let Some(note) = one_at_a_time(&outcome.timings) {
        println!("WARNING: {note}");
    }
    print_files(&outcome.dir);
}

fn grader_credentials(args: &LtmArgs) -> Credentials {
    Credentials {
        api_key: args.grader_api_key.clone(),
        admin_token: None,
    }
}

pub async fn ltm(args: LtmArgs) -> anyhow::Result<ExitCode> {
    if let Some(threshold) = args.fail_under
        && !(0.0..=1.0).contains(&threshold)
    {
        bail!("--fail-under takes a score between 0 and 1, got {threshold}");
    }
    let bar = progress_bar(args.quiet);
    let outcome = match &args.resume {
        Some(dir) => run::resume(
            dir,
            args.target.endpoint.clone(),
            args.target.credentials(),
            grader_credentials(&args),
            &bar,
        )
        .await
        .with_context(|| format!("resuming {}", dir.display()))?,
        None => {
            TurnMode::new(args.api, args.history)?;
            let config = LtmConfig {
                seed: args.seed,
                trials: args.trials.max(1),
                span_tokens: args.span,
                filler_turn_tokens: args.filler_turn_tokens.max(32),
                history: args.history,
                api: args.api,
                phrasing: args.phrasing,
                concurrency: args.concurrency.clamp(1, 10),
                types: if args.types.is_empty() {
                    TestType::ALL.to_vec()
                } else {
                    // Each type once, in the order given.
                    let mut types = args.types.clone();
                    let mut seen = std::collections::HashSet::new();
                    types.retain(|t| seen.insert(*t));
                    types
                },
            };
            let target = args.target.settings()?;
            let grader = args.grader_endpoint.as_ref().map(|endpoint| {
                (
                    helper_settings(endpoint, args.grader_model.clone(), &target),
                    grader_credentials(&args),
                )
            });
            run::start_shard(
                target,
                args.target.credentials(),
                config,
                args.shard,
                grader,
                &args.out,
                &bar,
            )
            .await
            .context("running the LTM suite")?
        }
    };
    print_outcome(&outcome);
    let mut code = ExitCode::SUCCESS;
    if let Some(baseline) = &args.baseline {
        // The same comparison as `judge compare BASELINE RUN`.
        let before = compare::load(baseline)?;
        let after = serde_json::to_value(&outcome.results)?;
        let id = outcome
            .dir
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let run = compare::RunRef {
            id: &id,
            kind: Ltm::KIND,
            results: &after,
        };
        let comparison = compare::compare(before.as_ref(), run, 0.05)?;
        println!("against baseline {}:", baseline.display());
        print!("{}", compare::render(&comparison));
        if comparison.regression {
            code = ExitCode::from(EXIT_REGRESSION);
        }
    }
    Ok(fail_under::<Ltm>(&outcome.results, args.fail_under).unwrap_or(code))
}
