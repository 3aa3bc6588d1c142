//! `judge load`: the load generator (its own runtimes, one per worker thread).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::summary::print_files;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use judge_client::endpoint::Api;
use judge_client::suites::load;

#[derive(Args)]
pub struct LoadArgs {
    /// Base URL of the target, with or without /v1 (e.g. http://127.0.0.1:8080).
    #[arg(long, env = "JUDGE_ENDPOINT")]
    pub endpoint: String,
    /// Bearer key for /v1.
    #[arg(long, env = "JUDGE_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Model name to send (default: the first one GET /v1/models lists).
    #[arg(long)]
    pub model: Option<String>,
    /// Allow an endpoint that is not on this machine (a load test is a denial of service).
    #[arg(long)]
    pub allow_remote: bool,
    /// Closed loop: clients that each wait for their reply; a list (1,16,64) is a sweep.
    #[arg(long, value_delimiter = ',', conflicts_with = "rate")]
    pub concurrency: Vec<usize>,
    /// Open loop: requests per second, sent on the clock; a list (100,1000) is a sweep.
    #[arg(long, value_delimiter = ',')]
    pub rate: Vec<f64>,
    /// Open-loop arrivals: `poisson` or `constant`.
    #[arg(long, default_value = "poisson")]
    pub arrivals: String,
    /// The API every request goes through: `chat`, `responses` or `a2a`.
    #[arg(long, default_value = "chat")]
    pub api: Api,
    /// Stream replies (SSE; Chat Completions with stream_options.include_usage).
    #[arg(long)]
    pub stream: bool,
    /// Measured requests per load level.
    #[arg(long)]
    pub requests: Option<u64>,
    /// Measured time per load level (e.g. 30s); default 10s without --requests.
    #[arg(long, value_parser = parse_duration_arg)]
    pub duration: Option<std::time::Duration>,
    /// Time at the start of each level whose requests are sent but not measured.
    #[arg(long, default_value = "0s", value_parser = parse_duration_arg)]
    pub warmup: std::time::Duration,
    /// Per-request timeout covering the whole reply.
    #[arg(long, default_value = "30s", value_parser = parse_duration_arg)]
    pub timeout: std::time::Duration,
    /// Worker threads, each with its own runtime and connections (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Seed of the prompts, lengths and Poisson arrivals.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Prompt length in tokens: 128, uniform:64-256 or normal:128,32.
    #[arg(long, default_value = "128")]
    pub prompt_tokens: String,
    /// Requested output length (max_tokens): 64, uniform:16-128 or normal:64,16.
    #[arg(long, default_value = "64")]
    pub output_tokens: String,
    /// Distinct X-Session-Id values (independent requests; conversations have one each).
    #[arg(long, default_value_t = 256)]
    pub sessions: u32,
    /// Conversations instead of independent requests: each --concurrency client is a user who
    /// holds one session for this many turns (200, uniform:50-400 or normal:200,50), sends a turn
    /// after the reply to the last, then starts a new conversation. Figures by turn index too.
    #[arg(long, value_name = "TURNS", conflicts_with = "rate")]
    pub turns: Option<String>,
    /// With --turns: `memory` sends the new message only (the target remembers the rest);
    /// `full` sends every earlier message and reply (Chat Completions; prompts grow).
    #[arg(long, default_value = "memory", requires = "turns")]
    pub history: String,
    /// Service-level objective for goodput, repeatable: ttft=200ms, tpot=50ms, latency=1s.
    #[arg(long, value_name = "METRIC=DURATION")]
    pub slo: Vec<String>,
    /// Open loop: outstanding requests per worker thread beyond which sends are skipped.
    #[arg(long, default_value_t = 10_000)]
    pub max_in_flight: usize,
    /// Where run directories go.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// No progress line.
    #[arg(long)]
    pub quiet: bool,
}

pub fn parse_duration_arg(text: &str) -> Result<std::time::Duration, String> {
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
            api: self.api,
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
            conversations: self
                .turns
                .as_deref()
                .map(|turns| -> anyhow::Result<load::Conversations> {
                    Ok(load::Conversations {
                        turns: turns.parse().context("--turns")?,
                        history: self.history.parse()?,
                    })
                })
                .transpose()?,
            slos: load::Slos::parse_all(&self.slo).context("--slo")?,
            max_in_flight: self.max_in_flight,
        })
    }
}

/// The live progress line of `judge load`.
pub struct LoadLine(pub ProgressBar);

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

pub fn step_line(s: &load::StepResult) -> String {
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

pub fn load_run(args: LoadArgs) -> anyhow::Result<ExitCode> {
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
    print_files(&outcome.dir);
    Ok(ExitCode::SUCCESS)
}
