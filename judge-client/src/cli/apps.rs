//! `judge apps`: the simulated-applications suite.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use super::progress::{Bar, progress_bar};
use super::summary::{fail_under, print_files};
use super::target::TargetArgs;
use anyhow::{Context, bail};
use clap::Args;
use judge_client::HistoryMode;
use judge_client::endpoint::{Api, TurnMode};
use judge_client::suites::apps::runner::{ActionMode, ScenarioOutcome};
use judge_client::suites::apps::suite::{
    self as apps_suite, AppsConfig, AppsProgress, McpSettings,
};
use judge_client::suites::apps::{Apps, Scenario, shipped};

#[derive(Args)]
pub struct AppsArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Folder of scenario YAML files (default: the scenarios shipped in the binary).
    #[arg(long, value_name = "DIR")]
    pub scenarios: Option<PathBuf>,
    /// Comma-separated scenario ids to run (default: all).
    #[arg(long, value_delimiter = ',', value_name = "ID")]
    pub only: Vec<String>,
    /// `tools`: OpenAI tools and tool calls; `directives`: `APP_ACTION:` lines in the reply;
    /// `auto`: tools, and directives in the text are executed too; `mcp`: each trial's apps
    /// served as an MCP server the agent calls itself (an `mcp` tool through the Responses API,
    /// the `X-MCP-Server-URL` header and the system message through Chat Completions).
    #[arg(long, default_value = "auto")]
    pub action_mode: ActionMode,
    /// Where the MCP server of `--action-mode mcp` listens (port 0: any free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub mcp_listen: SocketAddr,
    /// The base URL agents are told for that server, when they reach the judge by another name
    /// (in compose: `http://judge:7600` with `--mcp-listen 0.0.0.0:7600`). Default: the bound
    /// address.
    #[arg(long, value_name = "URL")]
    pub mcp_url: Option<String>,
    /// Trials per scenario (default: each scenario's own, usually 3).
    #[arg(long)]
    pub trials: Option<u32>,
    /// Seed of app ids and every random choice.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// `full`: the whole conversation each turn; `new`: the apps' instructions and the new turn;
    /// `chain`: the instructions and what is new, with the previous response's id (--api
    /// responses).
    #[arg(long, default_value = "full")]
    pub history: HistoryMode,
    /// The API the turns go through: `chat`, `responses` (tools in its shape) or `a2a` (tools
    /// only to an agent whose card declares agentwall's tools extension).
    #[arg(long, default_value = "chat")]
    pub api: Api,
    /// Where run directories go.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// Exit 2 when the mean pass^k (0 to 1) is below this.
    #[arg(long, value_name = "SCORE")]
    pub fail_under: Option<f64>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

impl AppsProgress for Bar {
    fn scenario_done(&self, outcome: &ScenarioOutcome) {
        self.0.set_message(format!(
            "{} {}/{}",
            outcome.scenario_id,
            outcome.passed,
            outcome.trials.len()
        ));
        self.0.inc(1);
    }
}

pub async fn apps(args: AppsArgs) -> anyhow::Result<ExitCode> {
    if let Some(threshold) = args.fail_under
        && !(0.0..=1.0).contains(&threshold)
    {
        bail!("--fail-under takes a score between 0 and 1, got {threshold}");
    }
    TurnMode::new(args.api, args.history)?;
    let (mut scenarios, source) = match &args.scenarios {
        Some(dir) => (
            Scenario::load_dir(dir)
                .with_context(|| format!("loading scenarios from {}", dir.display()))?,
            dir.display().to_string(),
        ),
        None => (shipped::scenarios()?, "shipped".to_owned()),
    };
    if !args.only.is_empty() {
        let unknown: Vec<&String> = args
            .only
            .iter()
            .filter(|id| !scenarios.iter().any(|s| &s.id == *id))
            .collect();
        if !unknown.is_empty() {
            let known: Vec<&str> = scenarios.iter().map(|s| s.id.as_str()).collect();
            bail!(
                "--only names unknown scenario(s) {unknown:?}; known: {}",
                known.join(", ")
            );
        }
        scenarios.retain(|s| args.only.contains(&s.id));
    }
    if scenarios.is_empty() {
        bail!("no scenarios to run (is {source} a folder of *.yaml scenarios?)");
    }
    let bar = progress_bar(args.quiet);
    bar.0.set_length(scenarios.len() as u64);
    let config = AppsConfig {
        seed: args.seed,
        mode: args.action_mode,
        history: args.history,
        api: args.api,
        trials: args.trials,
        source,
        mcp: (args.action_mode == ActionMode::Mcp).then(|| McpSettings {
            listen: args.mcp_listen,
            public_url: args.mcp_url.clone(),
        }),
    };
    let run = apps_suite::run(
        args.target.settings()?,
        args.target.credentials(),
        config,
        scenarios,
        &args.out,
        &bar,
    )
    .await
    .context("running the apps suite")?;
    bar.0.finish_and_clear();
    let results = &run.results;
    for s in &results.scenarios {
        let mark = if s.all_passed { "PASS" } else { "FAIL" };
        println!(
            "{mark} {:<32} {}/{} trials  pass^k {}",
            s.id,
            s.passed,
            s.trials,
            s.pass_hat_k.map_or("–".to_owned(), |v| format!("{:.2}", v))
        );
        // Trials of a deterministic agent usually fail alike: say a shared reason once.
        let reasons: Vec<&str> = s
            .why
            .iter()
            .map(|w| w.split_once(": ").map_or(w.as_str(), |(_, r)| r))
            .collect();
        if reasons.len() > 1 && reasons.iter().all(|r| *r == reasons[0]) {
            println!("       all {} trials: {}", reasons.len(), reasons[0]);
        } else {
            for why in &s.why {
                println!("       {why}");
            }
        }
    }
    let mean = results.mean_pass_hat_k.unwrap_or(0.0);
    println!(
        "{}/{} scenarios passed every trial; mean pass^k {mean:.2} (action mode {:?}, {} API, history {})",
        results.passed_scenarios,
        results.graded_scenarios,
        results.mode,
        results.api,
        results.history
    );
    print_files(&run.dir);
    Ok(fail_under::<Apps>(results, args.fail_under).unwrap_or(ExitCode::SUCCESS))
}
