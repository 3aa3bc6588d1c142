//! `judge`: the agentwall benchmark CLI.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use judge_client::apps::runner::{ActionMode, ScenarioOutcome};
use judge_client::apps::suite::{self as apps_suite, AppsConfig, AppsProgress};
use judge_client::apps::{Scenario, shipped};
use judge_client::config::{HistoryMode, LtmConfig};
use judge_client::report::compare;
use judge_client::report::results::{RunResults, TestResult, TestStatus};
use judge_client::report::stats::latency;
use judge_client::report::summary::render_table;
use judge_client::run::{self, Progress, RunOutcome};
use judge_client::shard::{self, Shard};
use judge_client::suites::load;
use judge_client::suites::ltm::TestType;
use judge_client::suites::sim::ab::run_ab;
use judge_client::suites::sim::injection::InjectionPlan;
use judge_client::suites::sim::injection::config::ConfigFile;
use judge_client::suites::sim::injection::fixtures::FixtureFile;
use judge_client::suites::sim::replay as sim_replay;
use judge_client::suites::sim::suite::unique_dir;
use judge_client::suites::sim::{
    SimOutcome, SimRunConfig, SimSettings, SimulatorSpec, persona, run_sim,
};
use judge_client::target::{
    BreakerPolicy, Credentials, RetryPolicy, TargetClient, TargetSettings, probe, telemetry,
};

/// Exit code when a score is below `--fail-under`.
const EXIT_BELOW_THRESHOLD: u8 = 2;
/// Exit code when `judge compare` finds a regression.
const EXIT_REGRESSION: u8 = 3;

#[derive(Parser)]
#[command(
    name = "judge",
    version,
    about = "Benchmarks any OpenAI-compatible chat endpoint over HTTP.",
    after_help = "Examples:\n  judge ltm --endpoint http://127.0.0.1:8080\n  judge apps --endpoint http://127.0.0.1:8080 --action-mode tools\n  judge sim --endpoint http://127.0.0.1:8080 --endpoint-b http://127.0.0.1:8081\n  judge load --endpoint http://127.0.0.1:8080 --concurrency 64 --duration 30s\n  judge compare runs/<run-a> runs/<run-b>\n\nEvery run writes runs/<run-id>/ with results.json, junit.xml and report.html."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the long-term-memory suite (or finish an interrupted run with --resume).
    Ltm(LtmArgs),
    /// Let the target operate simulated apps (PayPal) for scripted users; graded by final state.
    Apps(AppsArgs),
    /// Simulate persona conversations against the target (A/B with --endpoint-b).
    Sim(SimArgs),
    /// A/B comparison: the same simulation against --endpoint and --endpoint-b.
    Ab(SimArgs),
    /// Load-test the endpoint: closed or open loop, streaming or not; writes results.json and
    /// report.html.
    Load(LoadArgs),
    /// Compare two runs test by test; exits 3 on a significant regression of RUN_B against RUN_A.
    Compare(CompareArgs),
    /// Send the requests of a fixture file to another agent and compare its replies.
    Replay(ReplayArgs),
    /// Combine the run directories of the shards of one `judge ltm --shard` benchmark into one run.
    Merge(MergeArgs),
    /// Only probe the target's capabilities and print them.
    Probe(ProbeArgs),
    /// Serve the HTTP API (runs, simulations, agent injection) and the dashboard.
    Serve(ServeArgs),
}

#[derive(Args)]
struct ServeArgs {
    /// Address to listen on; anything but loopback needs --auth-token.
    #[arg(long, default_value = "127.0.0.1:8700")]
    addr: std::net::SocketAddr,
    /// The folder of run directories to show (simulations started here are written there too).
    #[arg(long, default_value = "runs")]
    runs: PathBuf,
    /// Require `Authorization: Bearer TOKEN` on every request.
    #[arg(long, env = "JUDGE_SERVE_TOKEN", hide_env_values = true)]
    auth_token: Option<String>,
    /// HTTP worker threads.
    #[arg(long, default_value_t = 2)]
    workers: usize,
}

#[derive(Args)]
struct MergeArgs {
    /// Where the merged run directory goes.
    #[arg(long, default_value = "runs")]
    out: PathBuf,
    /// The shards' run directories (every shard exactly once).
    #[arg(required = true, value_name = "PART")]
    parts: Vec<PathBuf>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum SimulatorKind {
    Scripted,
    Llm,
}

#[derive(Args)]
struct SimArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Second target: run the same simulation against it and compare (A/B).
    #[arg(long)]
    endpoint_b: Option<String>,
    /// Bearer key for --endpoint-b (defaults to --api-key).
    #[arg(long, env = "JUDGE_API_KEY_B", hide_env_values = true)]
    api_key_b: Option<String>,
    /// Model name for --endpoint-b (default: the first one it lists).
    #[arg(long)]
    model_b: Option<String>,
    /// Rounds per conversation (a user turn and a reply each).
    #[arg(long, default_value_t = 15)]
    rounds: usize,
    /// Conversations per persona (each with its own seed-derived session).
    #[arg(long, default_value_t = 1)]
    trials: u32,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Design document 001's single-turn mode: one user message, one reply.
    #[arg(long)]
    single_turn: bool,
    /// Directory of persona YAML files (default: the shipped panel).
    #[arg(long, value_name = "DIR")]
    personas: Option<PathBuf>,
    /// Only these persona ids (comma-separated).
    #[arg(long = "persona", value_delimiter = ',')]
    persona_ids: Vec<String>,
    /// User simulator (default: llm when --user-endpoint is given, else scripted).
    #[arg(long)]
    simulator: Option<SimulatorKind>,
    /// OpenAI-compatible endpoint of the LLM user simulator.
    #[arg(long)]
    user_endpoint: Option<String>,
    /// Model of the LLM user simulator (default: the first one its endpoint lists).
    #[arg(long)]
    user_model: Option<String>,
    /// Bearer key for --user-endpoint.
    #[arg(long, env = "JUDGE_USER_API_KEY", hide_env_values = true)]
    user_api_key: Option<String>,
    /// OpenAI-compatible endpoint of the LLM judge (rubric scores; pairwise preference in A/B).
    #[arg(long)]
    judge_endpoint: Option<String>,
    /// Model of the LLM judge (default: the first one its endpoint lists).
    #[arg(long)]
    judge_model: Option<String>,
    /// Bearer key for --judge-endpoint.
    #[arg(long, env = "JUDGE_JUDGE_API_KEY", hide_env_values = true)]
    judge_api_key: Option<String>,
    /// Configuration file in design document 000's YAML shape (agent injection).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Record every request and reply as fixtures (fixtures/ in the run directory).
    #[arg(long)]
    record: bool,
    /// The token that ends a conversation.
    #[arg(long, default_value = "[END]")]
    stop_token: String,
    /// Conversations run at once, at most 10.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Replies longer than this many characters count as overlong.
    #[arg(long, default_value_t = 2000)]
    max_reply_chars: usize,
    /// Where run directories go.
    #[arg(long, default_value = "runs")]
    out: PathBuf,
    /// Exit 2 when the goal rate (0 to 1) is below this.
    #[arg(long, value_name = "RATE")]
    fail_under: Option<f64>,
}

#[derive(Args)]
struct ReplayArgs {
    /// A fixture file written by `judge sim --record` (fixtures/target.json or injected.json).
    fixtures: PathBuf,
    /// The agent to replay against (base URL for openai fixtures, full URL for agentworld ones).
    #[arg(long)]
    endpoint: String,
    #[arg(long, env = "JUDGE_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Model name to send instead of the recorded one.
    #[arg(long)]
    model: Option<String>,
    /// Per-request timeout, in seconds.
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// Where the replay directory goes.
    #[arg(long, default_value = "runs")]
    out: PathBuf,
}

#[derive(Args)]
struct TargetArgs {
    /// Base URL of the target, with or without /v1 (e.g. http://127.0.0.1:8080).
    #[arg(long, env = "JUDGE_ENDPOINT")]
    endpoint: Option<String>,
    /// Bearer key for /v1.
    #[arg(long, env = "JUDGE_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Bearer token for /control (defaults to --api-key).
    #[arg(long, env = "JUDGE_ADMIN_TOKEN", hide_env_values = true)]
    admin_token: Option<String>,
    /// Model name to send (default: the first one GET /v1/models lists).
    #[arg(long)]
    model: Option<String>,
    /// Per-request timeout, in seconds.
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// Retries after 429 Too Many Requests (or a refused connection).
    #[arg(long, default_value_t = 3)]
    retries: u32,
    /// First backoff wait in milliseconds, doubled per retry (Retry-After wins when sent).
    #[arg(long, default_value_t = 1000)]
    backoff_ms: u64,
    /// Longest single backoff wait in milliseconds.
    #[arg(long, default_value_t = 60_000)]
    max_backoff_ms: u64,
    /// Consecutive failures that open the circuit breaker (0 disables it).
    #[arg(long, default_value_t = 5)]
    breaker_threshold: u32,
    /// Milliseconds the circuit stays open before one probe request goes through.
    #[arg(long, default_value_t = 30_000)]
    breaker_open_ms: u64,
    /// Most requests started per second.
    #[arg(long, default_value_t = 100)]
    max_rps: u32,
}

impl TargetArgs {
    fn settings(&self) -> anyhow::Result<TargetSettings> {
        let Some(endpoint) = self.endpoint.clone() else {
            bail!("--endpoint is required (for example --endpoint http://127.0.0.1:8080)");
        };
        if !(self.timeout > 0.0 && self.timeout.is_finite()) {
            bail!("--timeout must be a positive number of seconds");
        }
        Ok(TargetSettings {
            model: self.model.clone(),
            timeout_ms: (self.timeout * 1000.0).round() as u64,
            retry: RetryPolicy {
                max_retries: self.retries,
                base_ms: self.backoff_ms,
                max_wait_ms: self.max_backoff_ms,
            },
            breaker: BreakerPolicy {
                failure_threshold: self.breaker_threshold,
                open_ms: self.breaker_open_ms,
                ..BreakerPolicy::default()
            },
            max_rps: self.max_rps.max(1),
            ..TargetSettings::new(endpoint)
        })
    }

    fn credentials(&self) -> Credentials {
        Credentials {
            api_key: self.api_key.clone(),
            admin_token: self.admin_token.clone(),
        }
    }
}

#[derive(Args)]
struct LtmArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Finish the interrupted run in this directory (its recorded settings are used).
    #[arg(long, value_name = "RUN_DIR")]
    resume: Option<PathBuf>,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Tests run at once (each in its own sessions), at most 10.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Seeded trials per test type.
    #[arg(long, default_value_t = 3)]
    trials: u32,
    /// Filler between what is told and what is asked, in cl100k tokens.
    #[arg(long, default_value_t = 1000)]
    span: u32,
    /// Largest single filler turn, in tokens.
    #[arg(long, default_value_t = 250)]
    filler_turn_tokens: u32,
    /// `new`: send only the new user turn; `full`: send the whole conversation.
    #[arg(long, default_value = "new")]
    history: HistoryMode,
    /// Comma-separated test types (default: all 14).
    #[arg(long, value_delimiter = ',')]
    types: Vec<TestType>,
    /// Where run directories go.
    #[arg(long, default_value = "runs")]
    out: PathBuf,
    /// Exit 2 when the overall score (0 to 1) is below this.
    #[arg(long, value_name = "SCORE")]
    fail_under: Option<f64>,
    /// Run only part INDEX of COUNT of the plan (e.g. 0/4); `judge merge` combines the parts.
    #[arg(long, value_name = "INDEX/COUNT")]
    shard: Option<Shard>,
    /// Compare with this earlier run afterwards; exit 3 on a significant regression.
    #[arg(long, value_name = "RUN_DIR")]
    baseline: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(Args)]
struct CompareArgs {
    run_a: PathBuf,
    run_b: PathBuf,
    /// Significance level of the regression verdict.
    #[arg(long, default_value_t = 0.05)]
    alpha: f64,
    /// Print the comparison as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct AppsArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Folder of scenario YAML files (default: the scenarios shipped in the binary).
    #[arg(long, value_name = "DIR")]
    scenarios: Option<PathBuf>,
    /// Comma-separated scenario ids to run (default: all).
    #[arg(long, value_delimiter = ',', value_name = "ID")]
    only: Vec<String>,
    /// `tools`: OpenAI tools and tool calls; `directives`: `APP_ACTION:` lines in the reply;
    /// `auto`: tools, and directives in the text are executed too.
    #[arg(long, default_value = "auto")]
    action_mode: ActionMode,
    /// Trials per scenario (default: each scenario's own, usually 3).
    #[arg(long)]
    trials: Option<u32>,
    /// Seed of app ids and every random choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// `full`: the whole conversation each turn; `new`: the apps' instructions and the new turn.
    #[arg(long, default_value = "full")]
    history: HistoryMode,
    /// Where run directories go.
    #[arg(long, default_value = "runs")]
    out: PathBuf,
    /// Exit 2 when the mean pass^k (0 to 1) is below this.
    #[arg(long, value_name = "SCORE")]
    fail_under: Option<f64>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(Args)]
struct ProbeArgs {
    #[command(flatten)]
    target: TargetArgs,
}

#[derive(Args)]
struct LoadArgs {
    /// Base URL of the target, with or without /v1 (e.g. http://127.0.0.1:8080).
    #[arg(long, env = "JUDGE_ENDPOINT")]
    endpoint: String,
    /// Bearer key for /v1.
    #[arg(long, env = "JUDGE_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Model name to send (default: the first one GET /v1/models lists).
    #[arg(long)]
    model: Option<String>,
    /// Allow an endpoint that is not on this machine (a load test is a denial of service).
    #[arg(long)]
    allow_remote: bool,
    /// Closed loop: clients that each wait for their reply; a list (1,16,64) is a sweep.
    #[arg(long, value_delimiter = ',', conflicts_with = "rate")]
    concurrency: Vec<usize>,
    /// Open loop: requests per second, sent on the clock; a list (100,1000) is a sweep.
    #[arg(long, value_delimiter = ',')]
    rate: Vec<f64>,
    /// Open-loop arrivals: `poisson` or `constant`.
    #[arg(long, default_value = "poisson")]
    arrivals: String,
    /// Stream replies (SSE, with stream_options.include_usage).
    #[arg(long)]
    stream: bool,
    /// Measured requests per load level.
    #[arg(long)]
    requests: Option<u64>,
    /// Measured time per load level (e.g. 30s); default 10s without --requests.
    #[arg(long, value_parser = parse_duration_arg)]
    duration: Option<std::time::Duration>,
    /// Time at the start of each level whose requests are sent but not measured.
    #[arg(long, default_value = "0s", value_parser = parse_duration_arg)]
    warmup: std::time::Duration,
    /// Per-request timeout covering the whole reply.
    #[arg(long, default_value = "30s", value_parser = parse_duration_arg)]
    timeout: std::time::Duration,
    /// Worker threads, each with its own runtime and connections (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Seed of the prompts, lengths and Poisson arrivals.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Prompt length in tokens: 128, uniform:64-256 or normal:128,32.
    #[arg(long, default_value = "128")]
    prompt_tokens: String,
    /// Requested output length (max_tokens): 64, uniform:16-128 or normal:64,16.
    #[arg(long, default_value = "64")]
    output_tokens: String,
    /// Distinct X-Session-Id values.
    #[arg(long, default_value_t = 256)]
    sessions: u32,
    /// Service-level objective for goodput, repeatable: ttft=200ms, tpot=50ms, latency=1s.
    #[arg(long, value_name = "METRIC=DURATION")]
    slo: Vec<String>,
    /// Open loop: outstanding requests per worker thread beyond which sends are skipped.
    #[arg(long, default_value_t = 10_000)]
    max_in_flight: usize,
    /// Where run directories go.
    #[arg(long, default_value = "runs")]
    out: PathBuf,
    /// No progress line.
    #[arg(long)]
    quiet: bool,
}

fn parse_duration_arg(text: &str) -> Result<std::time::Duration, String> {
    load::parse_duration(text).map_err(|e| e.to_string())
}

impl LoadArgs {
    fn config(&self) -> anyhow::Result<load::LoadConfig> {
        let arrivals: load::Arrivals = self.arrivals.parse()?;
        let levels = if !self.rate.is_empty() {
            self.rate
                .iter()
                .map(|&rate| load::LoadLevel::Open { rate, arrivals })
                .collect()
        } else if !self.concurrency.is_empty() {
            self.concurrency
                .iter()
                .map(|&concurrency| load::LoadLevel::Closed { concurrency })
                .collect()
        } else {
            vec![load::LoadLevel::Closed { concurrency: 16 }]
        };
        let threads = self.threads.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        });
        Ok(load::LoadConfig {
            endpoint: self.endpoint.clone(),
            api_key: self.api_key.clone(),
            model: self.model.clone(),
            allow_remote: self.allow_remote,
            stream: self.stream,
            levels,
            requests: self.requests,
            duration: self.duration,
            warmup: self.warmup,
            timeout: self.timeout,
            threads,
            seed: self.seed,
            prompt_tokens: self.prompt_tokens.parse().context("--prompt-tokens")?,
            output_tokens: self.output_tokens.parse().context("--output-tokens")?,
            sessions: self.sessions,
            slos: load::Slos::parse_all(&self.slo).context("--slo")?,
            max_in_flight: self.max_in_flight,
        })
    }
}

/// The live progress line of `judge load`.
struct LoadLine(ProgressBar);

impl load::LoadProgress for LoadLine {
    fn step_started(&self, index: usize, total: usize, level: &load::LoadLevel) {
        self.0
            .set_prefix(format!("[{}/{total}] {level}", index + 1));
    }

    fn tick(&self, live: &load::LiveSnapshot) {
        let secs = live.elapsed.as_secs_f64().max(0.001);
        let phase = if live.warming_up { "warm-up " } else { "" };
        self.0.set_message(format!(
            "{phase}{:.1}s  sent {}  ok {}  failed {}  ~{:.0} ok/s",
            secs,
            live.sent,
            live.ok,
            live.failed,
            live.ok as f64 / secs
        ));
        self.0.tick();
    }

    fn step_done(&self, step: &load::StepResult) {
        self.0.println(step_line(step));
    }
}

fn step_line(s: &load::StepResult) -> String {
    let p = |v: &Option<judge_client::suites::load::metrics::Percentiles>| {
        v.as_ref().map_or("–".to_owned(), |p| {
            format!("{:.2}/{:.2}", p.p50_ms, p.p99_ms)
        })
    };
    let mut line = format!(
        "{}: {:.1} req/s, {:.1} output tok/s, ok {}, failed {} ({:.2} %), latency p50/p99 {} ms, ttft {} ms, client {} µs/req",
        s.label,
        s.throughput.requests_per_s,
        s.throughput.output_tokens_per_s,
        s.requests.ok,
        s.requests.failed,
        s.requests.error_rate * 100.0,
        p(&s.latency),
        p(&s.ttft),
        s.client
            .cpu_us_per_request
            .map_or("–".to_owned(), |c| format!("{c:.1}"))
    );
    if let Some(g) = s.throughput.goodput_per_s {
        line.push_str(&format!(", goodput {g:.1}/s"));
    }
    if let Some(a) = s.achieved_rate {
        line.push_str(&format!(", achieved {a:.1}/s"));
    }
    line
}

fn load_run(args: LoadArgs) -> anyhow::Result<ExitCode> {
    let config = args.config()?;
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        let bar = ProgressBar::new_spinner();
        if let Ok(style) = ProgressStyle::with_template("{spinner} {prefix} {msg}") {
            bar.set_style(style);
        }
        bar
    };
    let line = LoadLine(bar);
    let outcome = load::run(&config, &args.out, &line).context("running the load")?;
    line.0.finish_and_clear();
    for step in &outcome.results.steps {
        if args.quiet {
            println!("{}", step_line(step));
        }
        for warning in &step.warnings {
            eprintln!("warning: {}: {warning}", step.label);
        }
    }
    println!("results: {}", outcome.dir.join("results.json").display());
    println!("report: {}", outcome.dir.join("report.html").display());
    Ok(ExitCode::SUCCESS)
}

struct Bar(ProgressBar);

impl Progress for Bar {
    fn begin(&self, total: usize, already_done: usize) {
        self.0.set_length(total as u64);
        self.0.set_position(already_done as u64);
    }

    fn test_done(&self, result: &TestResult) {
        self.0
            .set_message(format!("{} {}", result.id, result.status.as_str()));
        self.0.inc(1);
    }

    fn end(&self) {
        self.0.finish_and_clear();
    }
}

fn progress_bar(quiet: bool) -> Bar {
    if quiet {
        return Bar(ProgressBar::hidden());
    }
    let bar = ProgressBar::new(0);
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}")
    {
        bar.set_style(style);
    }
    Bar(bar)
}

fn print_outcome(outcome: &RunOutcome) {
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
    if let Some(l) = latency(&outcome.timings) {
        println!(
            "latency: p50 {} ms, p95 {} ms, max {} ms over {} turns ({} retried)",
            l.p50_ms, l.p95_ms, l.max_ms, l.turns, l.retried
        );
    }
    println!("run directory: {}", outcome.dir.display());
    println!("report: {}", outcome.dir.join("report.html").display());
}

async fn ltm(args: LtmArgs) -> anyhow::Result<ExitCode> {
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
            &bar,
        )
        .await
        .with_context(|| format!("resuming {}", dir.display()))?,
        None => {
            let config = LtmConfig {
                seed: args.seed,
                trials: args.trials.max(1),
                span_tokens: args.span,
                filler_turn_tokens: args.filler_turn_tokens.max(32),
                history: args.history,
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
            run::start_shard(
                args.target.settings()?,
                args.target.credentials(),
                config,
                args.shard,
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
        let before = compare::load(baseline)?;
        let comparison = compare::compare(&before, &outcome.results, 0.05);
        println!("against baseline {}:", baseline.display());
        print!("{}", compare::render(&comparison));
        if comparison.regression {
            code = ExitCode::from(EXIT_REGRESSION);
        }
    }
    if let Some(threshold) = args.fail_under {
        let overall = outcome.results.overall.unwrap_or(0.0);
        if overall < threshold {
            println!("FAIL: overall score {overall:.3} is below --fail-under {threshold}");
            return Ok(ExitCode::from(EXIT_BELOW_THRESHOLD));
        }
    }
    Ok(code)
}

fn merge_parts(args: MergeArgs) -> anyhow::Result<ExitCode> {
    let outcome = shard::merge(&args.parts, &args.out).context("merging the shards")?;
    println!("merged {} parts", args.parts.len());
    print_outcome(&outcome);
    Ok(ExitCode::SUCCESS)
}

fn compare_runs(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let a = compare::load(&args.run_a)?;
    let b = compare::load(&args.run_b)?;
    let comparison = compare::compare(&a, &b, args.alpha);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&comparison)?);
    } else {
        print!("{}", compare::render(&comparison));
    }
    Ok(if comparison.regression {
        ExitCode::from(EXIT_REGRESSION)
    } else {
        ExitCode::SUCCESS
    })
}

async fn probe_only(args: ProbeArgs) -> anyhow::Result<ExitCode> {
    let client = TargetClient::new(args.target.settings()?, args.target.credentials());
    let capabilities = probe(&client, "judge-probe").await?;
    println!("{}", serde_json::to_string_pretty(&capabilities)?);
    Ok(ExitCode::SUCCESS)
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

async fn apps(args: AppsArgs) -> anyhow::Result<ExitCode> {
    if let Some(threshold) = args.fail_under
        && !(0.0..=1.0).contains(&threshold)
    {
        bail!("--fail-under takes a score between 0 and 1, got {threshold}");
    }
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
        trials: args.trials,
        source,
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
        "{}/{} scenarios passed every trial; mean pass^k {mean:.2} (action mode {:?})",
        results.passed_scenarios, results.graded_scenarios, results.mode
    );
    println!("run directory: {}", run.dir.display());
    println!("report: {}", run.dir.join("report.html").display());
    if let Some(threshold) = args.fail_under
        && mean < threshold
    {
        println!("FAIL: mean pass^k {mean:.3} is below --fail-under {threshold}");
        return Ok(ExitCode::from(EXIT_BELOW_THRESHOLD));
    }
    Ok(ExitCode::SUCCESS)
}

/// An OpenAI-compatible helper endpoint (user simulator, judge) with the target's resilience.
fn helper_settings(
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

async fn simulate(args: SimArgs, ab: bool) -> anyhow::Result<ExitCode> {
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
            start: SIM_START.parse().context("the simulation start time")?,
            max_reply_chars: args.max_reply_chars.max(1),
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
    std::fs::create_dir_all(&args.out)?;
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let goal_rate = match &args.endpoint_b {
        Some(endpoint_b) => {
            let dir = unique_dir(&args.out, &format!("ab-{stamp}-seed{}", args.seed));
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
            for rating in &r.ratings {
                println!(
                    "  rating {}: {:.0} (95% CI {:.0} to {:.0})",
                    rating.player, rating.rating, rating.ci_low, rating.ci_high
                );
            }
            println!("report: {}", outcome.dir.join("report.html").display());
            outcome.a.results.summary.goal_rate
        }
        None => {
            let dir = unique_dir(&args.out, &format!("sim-{stamp}-seed{}", args.seed));
            let outcome = run_sim(&config, &dir).await?;
            print_sim(&outcome);
            println!("report: {}", outcome.dir.join("report.html").display());
            outcome.results.summary.goal_rate
        }
    };
    if let Some(threshold) = args.fail_under
        && goal_rate < threshold
    {
        println!("FAIL: goal rate {goal_rate:.3} is below --fail-under {threshold}");
        return Ok(ExitCode::from(EXIT_BELOW_THRESHOLD));
    }
    Ok(ExitCode::SUCCESS)
}

async fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
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

fn print_sim(outcome: &SimOutcome) {
    let s = &outcome.results.summary;
    println!(
        "{}: {} conversations, goal rate {:.0}%, mean score {}, fallback turns {}",
        outcome.dir.display(),
        s.conversations,
        s.goal_rate * 100.0,
        s.mean_score.map_or("-".to_owned(), |m| format!("{m:.2}")),
        s.fallback_turns
    );
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

async fn replay(args: ReplayArgs) -> anyhow::Result<ExitCode> {
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
    std::fs::create_dir_all(&args.out)?;
    let dir = unique_dir(
        &args.out,
        &format!("replay-{}", chrono::Utc::now().format("%Y%m%dT%H%M%SZ")),
    );
    std::fs::create_dir_all(&dir)?;
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

/// Virtual start of every simulated conversation: fixed, so transcripts are reproducible.
const SIM_START: &str = "2026-01-05T09:00:00Z";

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
        Command::Compare(args) => compare_runs(args),
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
