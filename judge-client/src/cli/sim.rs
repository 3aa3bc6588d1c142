//! `judge sim`, `judge ab` and `judge replay`: persona simulations, A/B and fixture replay.

use std::path::PathBuf;
use std::process::ExitCode;

use super::EXIT_NOT_MEASURED;
use super::summary::{fail_under, print_files};
use super::target::TargetArgs;
use anyhow::{Context, bail};
use clap::Args;
use judge_client::endpoint::{Api, Credentials, HistoryMode, TargetSettings};
use judge_client::rundir::create_unique_dir;
use judge_client::suites::Suite;
use judge_client::suites::sim::ab::run_ab;
use judge_client::suites::sim::injection::InjectionPlan;
use judge_client::suites::sim::injection::config::ConfigFile;
use judge_client::suites::sim::injection::fixtures::FixtureFile;
use judge_client::suites::sim::replay as sim_replay;
use judge_client::suites::sim::runner::sim_start;
use judge_client::suites::sim::{
    Sim, SimOutcome, SimRunConfig, SimSettings, SimulatorSpec, persona, run_sim,
};

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum SimulatorKind {
    Scripted,
    Llm,
}

#[derive(Args)]
pub struct SimArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Second target: run the same simulation against it and compare (A/B).
    #[arg(long)]
    pub endpoint_b: Option<String>,
    /// Bearer key for --endpoint-b (defaults to --api-key).
    #[arg(long, env = "JUDGE_API_KEY_B", hide_env_values = true)]
    pub api_key_b: Option<String>,
    /// Model name for --endpoint-b (default: the first one it lists).
    #[arg(long)]
    pub model_b: Option<String>,
    /// Rounds per conversation (a user turn and a reply each).
    #[arg(long, default_value_t = 15)]
    pub rounds: usize,
    /// Conversations per persona (each with its own seed-derived session).
    #[arg(long, default_value_t = 1)]
    pub trials: u32,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The single-turn mode of docs/contracts/run-log.md: one user message, one reply.
    #[arg(long)]
    pub single_turn: bool,
    /// Directory of persona YAML files (default: the shipped panel).
    #[arg(long, value_name = "DIR")]
    pub personas: Option<PathBuf>,
    /// Only these persona ids (comma-separated).
    #[arg(long = "persona", value_delimiter = ',')]
    pub persona_ids: Vec<String>,
    /// User simulator (default: llm when --user-endpoint is given, else scripted).
    #[arg(long)]
    pub simulator: Option<SimulatorKind>,
    /// OpenAI-compatible endpoint of the LLM user simulator.
    #[arg(long)]
    pub user_endpoint: Option<String>,
    /// Model of the LLM user simulator (default: the first one its endpoint lists).
    #[arg(long)]
    pub user_model: Option<String>,
    /// Bearer key for --user-endpoint.
    #[arg(long, env = "JUDGE_USER_API_KEY", hide_env_values = true)]
    pub user_api_key: Option<String>,
    /// OpenAI-compatible endpoint of the LLM judge (rubric scores; pairwise preference in A/B).
    #[arg(long)]
    pub judge_endpoint: Option<String>,
    /// Model of the LLM judge (default: the first one its endpoint lists).
    #[arg(long)]
    pub judge_model: Option<String>,
    /// Bearer key for --judge-endpoint.
    #[arg(long, env = "JUDGE_JUDGE_API_KEY", hide_env_values = true)]
    pub judge_api_key: Option<String>,
    /// Configuration file in the YAML shape of docs/contracts/agent-injection.md (agent injection).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The API the target's turns go through: `chat`, `responses` or `a2a`.
    #[arg(long, default_value = "chat")]
    pub api: Api,
    /// `new`: send only the new user turn; `full`: the whole conversation; `chain`: the new turn
    /// with the previous response's id (--api responses).
    #[arg(long, default_value = "new")]
    pub history: HistoryMode,
    /// Record every request and reply as fixtures (fixtures/ in the run directory).
    #[arg(long)]
    pub record: bool,
    /// The token that ends a conversation.
    #[arg(long, default_value = "[END]")]
    pub stop_token: String,
    /// Conversations run at once, at most 10.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Replies longer than this many characters count as overlong.
    #[arg(long, default_value_t = 2000)]
    pub max_reply_chars: usize,
    /// Where run directories go.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// Exit 2 when the goal rate (0 to 1) is below this.
    #[arg(long, value_name = "RATE")]
    pub fail_under: Option<f64>,
    /// Score conversations whose simulated user broke its role too (repeated itself, talked
    /// like the assistant, ...): they are flagged either way, and left out by default
    #[arg(long)]
    pub keep_unfaithful_simulator: bool,
}

#[derive(Args)]
pub struct ReplayArgs {
    /// A fixture file written by `judge sim --record` (fixtures/target.json or injected.json).
    pub fixtures: PathBuf,
    /// The agent to replay against (base URL for openai fixtures, full URL for agentworld ones).
    #[arg(long)]
    pub endpoint: String,
    #[arg(long, env = "JUDGE_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Model name to send instead of the recorded one.
    #[arg(long)]
    pub model: Option<String>,
    /// Per-request timeout, in seconds.
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
    /// Where the replay directory goes.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
}

/// An OpenAI-compatible helper endpoint (user simulator, judge) with the target's resilience.
pub fn helper_settings(
    endpoint: &str,
    model: Option<String>,
    target: &TargetSettings,
) -> TargetSettings {
    TargetSettings {
        endpoint: endpoint.to_owned(),
        model,
        ..target.clone()
    }
}

pub async fn simulate(args: SimArgs, ab: bool) -> anyhow::Result<ExitCode> {
    if ab && args.endpoint_b.is_none() {
        bail!("judge ab needs --endpoint-b");
    }
    if let Some(rate) = args.fail_under
        && !(0.0..=1.0).contains(&rate)
    {
        bail!("--fail-under takes a rate between 0 and 1, got {rate}");
    }
    let target = args.target.settings()?;
    let panel = match &args.personas {
        Some(dir) => persona::load_dir(dir)?,
        None => persona::shipped()?,
    };
    let personas = persona::select(panel, &args.persona_ids)?;
    let simulator = match (args.simulator, &args.user_endpoint) {
        (Some(SimulatorKind::Scripted), _) | (None, None) => SimulatorSpec::Scripted,
        (Some(SimulatorKind::Llm), None) => bail!("--simulator llm needs --user-endpoint"),
        (_, Some(endpoint)) => SimulatorSpec::Llm {
            settings: helper_settings(endpoint, args.user_model.clone(), &target),
            credentials: Credentials {
                api_key: args.user_api_key.clone(),
                admin_token: None,
            },
        },
    };
    let injection = match &args.config {
        Some(path) => ConfigFile::load(path)?
            .plan(|var| std::env::var(var).ok())
            .with_context(|| format!("in {}", path.display()))?,
        None => InjectionPlan::none(),
    };
    let config = SimRunConfig {
        settings: SimSettings {
            seed: args.seed,
            rounds: args.rounds.max(1),
            trials: args.trials.max(1),
            single_turn: args.single_turn,
            stop_token: args.stop_token.clone(),
            concurrency: args.concurrency.clamp(1, 10),
            start: sim_start(),
            max_reply_chars: args.max_reply_chars.max(1),
            keep_unfaithful_simulator: args.keep_unfaithful_simulator,
            api: args.api,
            history: args.history,
        },
        judge: args.judge_endpoint.as_ref().map(|endpoint| {
            (
                helper_settings(endpoint, args.judge_model.clone(), &target),
                Credentials {
                    api_key: args.judge_api_key.clone(),
                    admin_token: None,
                },
            )
        }),
        target: target.clone(),
        credentials: args.target.credentials(),
        personas,
        simulator,
        injection,
        record: args.record,
    };
    config.check()?;
    std::fs::create_dir_all(&args.out)?;
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let judged = match &args.endpoint_b {
        Some(endpoint_b) => {
            let dir = create_unique_dir(&args.out, &format!("ab-{stamp}-seed{}", args.seed))?;
            let target_b = TargetSettings {
                endpoint: endpoint_b.clone(),
                model: args.model_b.clone(),
                ..target
            };
            let credentials_b = Credentials {
                api_key: args.api_key_b.clone().or(args.target.api_key.clone()),
                admin_token: args.target.admin_token.clone(),
            };
            let outcome = run_ab(&config, target_b, credentials_b, &dir).await?;
            print_sim(&outcome.a);
            print_sim(&outcome.b);
            let r = &outcome.results;
            println!(
                "A/B over {} pairs: A wins {}, B wins {}, ties {}; sign test p = {:.6}; A's share of decisive pairs {} (95% Wilson {})",
                r.test.pairs,
                r.test.wins_a,
                r.test.wins_b,
                r.test.ties,
                r.test.sign_test_p,
                r.test
                    .win_share_a
                    .map_or("-".to_owned(), |w| format!("{w:.2}")),
                r.test
                    .win_share_ci
                    .map_or("-".to_owned(), |(lo, hi)| format!("{lo:.2} to {hi:.2}"))
            );
            if r.judge_error_pairs > 0 || r.excluded_pairs > 0 {
                println!(
                    "  left out of the statistics: {} pair(s) the LLM judge could not decide (judge_error), {} pair(s) not scorable",
                    r.judge_error_pairs, r.excluded_pairs
                );
            }
            for rating in &r.ratings {
                println!(
                    "  rating {}: {:.0} (95% CI {:.0} to {:.0})",
                    rating.player, rating.rating, rating.ci_low, rating.ci_high
                );
            }
            print_files(&outcome.dir);
            outcome.a.results
        }
        None => {
            let dir = create_unique_dir(&args.out, &format!("sim-{stamp}-seed{}", args.seed))?;
            let outcome = run_sim(&config, &dir).await?;
            print_sim(&outcome);
            print_files(&outcome.dir);
            outcome.results
        }
    };
    if Sim::headline(&judged).is_none() {
        println!(
            "NOT MEASURED: no conversation could be scored (each was stopped by the judge's own failure or spoiled by its simulated user; see the report)"
        );
        return Ok(ExitCode::from(EXIT_NOT_MEASURED));
    };
    Ok(fail_under::<Sim>(&judged, args.fail_under).unwrap_or(ExitCode::SUCCESS))
}

pub fn print_sim(outcome: &SimOutcome) {
    let s = &outcome.results.summary;
    println!(
        "{}: {} conversations ({} scored), goal rate {}, mean score {}, fallback turns {}",
        outcome.dir.display(),
        s.conversations,
        s.scored_conversations,
        s.goal_rate
            .map_or("n/a".to_owned(), |g| format!("{:.0}%", g * 100.0)),
        s.mean_score.map_or("-".to_owned(), |m| format!("{m:.2}")),
        s.fallback_turns
    );
    for note in &outcome.warnings {
        println!("WARNING: {note}");
    }
    if s.rubric_judge_errors > 0 {
        println!(
            "  the LLM judge could not judge {} conversation(s) (judge_error): no rubric for them",
            s.rubric_judge_errors
        );
    }
    for c in &outcome.results.conversations {
        println!(
            "  {:<10} trial {} {:>2} rounds  goals {}/{}  stop {}",
            c.persona_id,
            c.trial,
            c.rounds,
            c.checks.goals_reached.len(),
            c.checks.goals_total,
            c.stop_reason
        );
    }
    for m in &outcome.metrics {
        println!(
            "  endpoint {}: {} calls, p50 {} ms, p99 {} ms, error rate {:.2}, timeout rate {:.2}, circuit {}",
            m.agent_id,
            m.calls,
            m.latency_p50_ms.map_or("-".into(), |v| v.to_string()),
            m.latency_p99_ms.map_or("-".into(), |v| v.to_string()),
            m.error_rate,
            m.timeout_rate,
            m.circuit_state
        );
    }
}

pub async fn replay(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    if !(args.timeout > 0.0 && args.timeout.is_finite()) {
        bail!("--timeout must be a positive number of seconds");
    }
    let fixture = FixtureFile::load(&args.fixtures)?;
    let report = sim_replay::replay(
        &fixture,
        &args.endpoint,
        Credentials {
            api_key: args.api_key.clone(),
            admin_token: None,
        },
        (args.timeout * 1000.0).round() as u64,
        args.model.clone(),
    )
    .await;
    let dir = create_unique_dir(
        &args.out,
        &format!("replay-{}", chrono::Utc::now().format("%Y%m%dT%H%M%SZ")),
    )?;
    let path = dir.join("replay.json");
    std::fs::write(&path, serde_json::to_string_pretty(&report)? + "\n")?;
    println!(
        "replayed {} decision points against {}: {} identical, {} differing, {} failed, mean similarity {}",
        report.points,
        report.endpoint,
        report.identical,
        report.differing,
        report.failed,
        report
            .mean_similarity
            .map_or("-".to_owned(), |m| format!("{m:.3}"))
    );
    println!("comparison: {}", path.display());
    Ok(ExitCode::SUCCESS)
}
