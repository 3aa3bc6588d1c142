//! `judge membench`: LoCoMo or LongMemEval against the target, through the API wall.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use judge_client::endpoint::{Api, Credentials, TargetClient, TargetSettings};
use judge_client::rundir::{self, Manifest, Shard};
use judge_client::suites::Suite;
use judge_client::suites::membench::Membench;
use judge_client::suites::membench::dataset::Dataset;
use judge_client::suites::membench::dataset::{self, DatasetKind};
use judge_client::suites::membench::ingest::Protocol;
use judge_client::suites::membench::report::{
    MembenchDetails, MembenchManifest, TURN_ID_DESIGN, accounting, file_sha256,
};
use judge_client::suites::membench::results::CategorySummary;
use judge_client::suites::membench::run::{self as membench_run, planned};
use judge_client::suites::membench::runner::{
    MembenchConfig, RunContext, probe_capabilities, select,
};
use judge_client::suites::model_judge::ModelJudge;

use super::summary::print_files;
use super::target::TargetArgs;

#[derive(Args)]
pub struct MembenchArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Finish the interrupted run in this directory (its recorded settings and dataset file are
    /// used; give the judge endpoint again if it had one).
    #[arg(long, value_name = "RUN_DIR", conflicts_with_all = ["dataset", "data", "shard"])]
    pub resume: Option<PathBuf>,
    /// Run only part INDEX of COUNT of the selected conversations (e.g. 0/4); `judge merge`
    /// combines the parts.
    #[arg(long, value_name = "INDEX/COUNT")]
    pub shard: Option<Shard>,
    /// Which benchmark the file holds.
    #[arg(long, value_enum, required_unless_present = "resume")]
    pub dataset: Option<DatasetKind>,
    /// The dataset file in its published format (locomo10.json, longmemeval_s.json, ...).
    #[arg(long, required_unless_present = "resume")]
    pub data: Option<PathBuf>,
    /// How the history reaches the agent: chat turns, control-plane inject, or in the prompt.
    #[arg(long, value_enum, default_value = "chat")]
    pub protocol: Protocol,
    /// The API the turns and questions go through: `chat`, `responses` or `a2a`.
    #[arg(long, default_value = "chat")]
    pub api: Api,
    /// Seed of the question order and of category 5's option order.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Conversations run at once.
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
    /// Keep only these conversation or question ids (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Leave out these question ids (known label errors; recorded in the manifest).
    #[arg(long, value_delimiter = ',')]
    pub exclude: Vec<String>,
    /// Run at most this many conversations (LongMemEval: items).
    #[arg(long)]
    pub limit_conversations: Option<usize>,
    /// Ingest at most this many sessions per conversation; only questions whose evidence lies in
    /// them are asked.
    #[arg(long)]
    pub limit_sessions: Option<usize>,
    /// Ask at most this many questions per conversation.
    #[arg(long)]
    pub limit_questions: Option<usize>,
    /// `context` protocol: history budget in the prompt, in cl100k tokens.
    #[arg(long, default_value_t = 16_000)]
    pub context_tokens: usize,
    /// An OpenAI-compatible endpoint whose model judges answers (LongMemEval accuracy, LoCoMo J).
    #[arg(long)]
    pub judge_endpoint: Option<String>,
    /// The judge's model (default: the first one its /v1/models lists).
    #[arg(long)]
    pub judge_model: Option<String>,
    /// Bearer key for the judge endpoint.
    #[arg(long, env = "JUDGE_JUDGE_API_KEY", hide_env_values = true)]
    pub judge_api_key: Option<String>,
    /// Folder the run directory is written under.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// No per-question progress lines.
    #[arg(long)]
    pub quiet: bool,
}

fn print_row(c: &CategorySummary) {
    let pct = |v: Option<f64>| v.map_or("n/a".to_owned(), |v| format!("{:.1}", v * 100.0));
    let recall = |r: &Option<std::collections::BTreeMap<usize, f64>>| {
        r.as_ref().map_or("n/a".to_owned(), |r| {
            r.values()
                .map(|v| format!("{:.0}", v * 100.0))
                .collect::<Vec<_>>()
                .join("/")
        })
    };
    println!(
        "  {:<22} {:>5}  score {:>5}  J {:>5}  F1* {:>5}  agent R@5/8/20 {:>10}  BM25 R@5/8/20 {:>10}",
        c.name,
        c.questions,
        pct(c.score),
        pct(c.judge_accuracy),
        pct(c.f1_stand_in),
        recall(&c.agent_recall),
        recall(&c.bm25_recall)
    );
}

/// The client of the judge model behind `--judge-endpoint`, when one is given, its model named
/// (`--judge-model`, else the first its `/v1/models` lists).
async fn judge_client(args: &MembenchArgs) -> anyhow::Result<Option<TargetClient>> {
    let Some(endpoint) = args.judge_endpoint.as_ref() else {
        return Ok(None);
    };
    let mut client = TargetClient::new(
        TargetSettings {
            model: args.judge_model.clone(),
            ..TargetSettings::new(endpoint.clone())
        },
        Credentials {
            api_key: args.judge_api_key.clone(),
            admin_token: None,
        },
    );
    let model = match &args.judge_model {
        Some(model) => model.clone(),
        None => client
            .models()
            .await
            .with_context(|| {
                format!(
                    "asking the judge endpoint {endpoint} for its models (or give --judge-model)"
                )
            })?
            .into_iter()
            .next()
            .with_context(|| {
                format!("the judge endpoint {endpoint} lists no model: give --judge-model")
            })?,
    };
    client.set_model(model);
    Ok(Some(client))
}

/// A new run: the file read and checked, the target probed, the run directory created.
async fn start(
    args: &MembenchArgs,
    kind: DatasetKind,
    path: &Path,
    judge: Option<&TargetClient>,
) -> anyhow::Result<(PathBuf, MembenchManifest, Dataset)> {
    // The file is read and checked before anything is created or sent.
    let data = dataset::load(kind, path)?;
    let sha = file_sha256(path).with_context(|| format!("reading {}", path.display()))?;
    let run_id = format!(
        "membench-{}-{}-{}",
        kind.name().to_lowercase(),
        args.protocol.name(),
        chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
    );
    let config = MembenchConfig {
        dataset: kind,
        protocol: args.protocol,
        api: args.api,
        seed: args.seed,
        concurrency: args.concurrency.clamp(1, 32),
        only: args.only.clone(),
        exclude: args.exclude.clone(),
        limit_conversations: args.limit_conversations,
        limit_sessions: args.limit_sessions,
        limit_questions: args.limit_questions,
        context_tokens: args.context_tokens,
        session_prefix: format!("mb{}", &uuid::Uuid::new_v4().simple().to_string()[..8]),
    };
    if select(&data, &config).is_empty() {
        bail!("no question left after --only, --exclude and the limits");
    }
    let unknown: Vec<&String> = args
        .exclude
        .iter()
        .filter(|id| !data.questions().any(|(_, q)| &q.id == *id))
        .collect();
    if !unknown.is_empty() {
        bail!("--exclude names questions the file does not have: {unknown:?}");
    }

    let settings = args.target.settings()?;
    let mut client = TargetClient::new(settings, args.target.credentials());
    let capabilities = probe_capabilities(
        &client,
        &format!("{}-probe", config.session_prefix),
        config.api,
    )
    .await
    .context("probing the target")?;
    client.set_model(capabilities.base.model.clone());
    if args.protocol == Protocol::Inject && !capabilities.base.inject {
        bail!(
            "--protocol inject needs POST /control/memory/inject, which the target does not offer (capability probe); use --protocol chat"
        );
    }
    let protocol = match args.protocol {
        Protocol::Chat => format!(
            "chat: every turn one {} request in its conversation's session, in order, X-Mock-Time = its session's date (UTC), speaker on `name` and in the text, photos as captions; replies recorded, not scored",
            args.api.title()
        ),
        Protocol::Inject => "inject: each session one POST /control/memory/inject, a fact per turn observed at the session's date".to_owned(),
        Protocol::Context => format!(
            "context: nothing ingested; each question carries the most recent history fitting {} cl100k tokens in its prompt, in a fresh session",
            args.context_tokens
        ),
    };
    let mut details = MembenchDetails {
        dataset: kind,
        dataset_file: path.display().to_string(),
        dataset_sha256: sha,
        config,
        protocol,
        turn_ids: TURN_ID_DESIGN.to_owned(),
        target: client.settings().clone(),
        capabilities,
        judge_model: judge.map(|j| j.model().to_owned()),
        questions_planned: 0,
        excluded: args.exclude.clone(),
        data_problems: data.problems.clone(),
        not_supported: Vec::new(),
        wall_seconds: 0.0,
        resumed_at: Vec::new(),
        shard: args.shard,
        parts: Vec::new(),
    };
    let planned = planned(&data, &details);
    if planned.is_empty() {
        bail!(
            "shard {} holds no conversation of the selection: use fewer shards",
            args.shard.map_or(String::new(), |s| s.to_string())
        );
    }
    details.questions_planned = planned.iter().map(|c| c.questions.len()).sum();
    let mut manifest = Manifest::running(run_id, Membench::KIND, chrono::Utc::now(), details);
    let dir = membench_run::create(&args.out, &mut manifest)
        .with_context(|| format!("creating the run under {}", args.out.display()))?;
    Ok((dir, manifest, data))
}

pub async fn membench(args: MembenchArgs) -> anyhow::Result<ExitCode> {
    let judge = judge_client(&args).await?;
    let (dir, manifest, data) = match (&args.resume, args.dataset, &args.data) {
        (Some(dir), _, _) => {
            let manifest =
                membench_run::reopen(dir).with_context(|| format!("resuming {}", dir.display()))?;
            if let Some(model) = &manifest.judge_model
                && judge.is_none()
            {
                bail!(
                    "{} was judged by {model}: give --judge-endpoint (and --judge-model) again to resume it",
                    dir.display()
                );
            }
            let data = membench_run::reopen_dataset(&manifest)
                .with_context(|| format!("resuming {}", dir.display()))?;
            (dir.clone(), manifest, data)
        }
        (None, Some(kind), Some(path)) => start(&args, kind, path, judge.as_ref()).await?,
        _ => bail!("give --dataset and --data, or --resume RUN_DIR"),
    };
    // One model judge asks every verdict: deterministic requests with the run's seed; LongMemEval's
    // authors let it answer in at most 10 tokens.
    let judge = judge.map(|client| {
        let judge = ModelJudge::prompt_only(client, manifest.config.seed);
        match manifest.dataset {
            DatasetKind::Longmemeval => judge.with_max_tokens(10),
            DatasetKind::Locomo => judge,
        }
    });
    let mut settings = manifest.target.clone();
    if let Some(endpoint) = &args.target.endpoint {
        settings.endpoint = endpoint.clone();
    }
    let mut client = TargetClient::new(settings, args.target.credentials());
    client.set_model(manifest.capabilities.base.model.clone());

    let planned = manifest.questions_planned;
    let quiet = args.quiet;
    let config = manifest.config.clone();
    let capabilities = manifest.capabilities.clone();
    let context = RunContext {
        client: &client,
        judge: judge.as_ref(),
        config: &config,
        capabilities: &capabilities,
    };
    let done = std::cell::Cell::new(0usize);
    let outcome = membench_run::execute(&dir, manifest, &data, &context, &|q| {
        done.set(done.get() + 1);
        if !quiet {
            eprintln!(
                "[{}/{planned}] {} {}",
                done.get(),
                q.id,
                match (&q.failure, q.score.or(q.f1_stand_in)) {
                    (Some(f), _) => format!("failed ({})", f.kind),
                    (None, Some(s)) => format!("{s:.2}"),
                    (None, None) =>
                        q.judge_failure
                            .as_ref()
                            .map_or("not scored".to_owned(), |f| format!(
                                "excluded ({})",
                                f.kind
                            )),
                }
            );
        }
    })
    .await;
    let results = match outcome {
        Ok(results) => results,
        Err(e) => {
            let why = e.to_string();
            if let Err(mark) = rundir::mark_failed(&dir, Membench::KIND, &why) {
                eprintln!("could not record the failure in {}: {mark}", dir.display());
            }
            return Err(
                anyhow::Error::new(e).context(format!("writing the run in {}", dir.display()))
            );
        }
    };
    let undelivered: usize = results
        .ingestion
        .values()
        .map(|i| i.undelivered_assistant_turns)
        .sum();
    let summary = &results.summary;
    println!(
        "{} · protocol {} · {} questions · {}",
        config.dataset.name(),
        config.protocol.name(),
        summary.overall.questions,
        summary.score_definition
    );
    for c in summary
        .categories
        .iter()
        .chain(std::iter::once(&summary.overall))
    {
        print_row(c);
    }
    println!("  {}", accounting(&summary.overall));
    let ingestion_failures: usize = results.ingestion.values().map(|i| i.errors.len()).sum();
    if ingestion_failures > 0 {
        println!(
            "  note: {ingestion_failures} requests of the ingestion failed (listed per conversation in results.json): the questions were asked all the same"
        );
    }
    let s = &summary.speed;
    println!(
        "  ingestion: {} turns in {:.1} s ({}); question latency p50 {} ms, p95 {} ms; prompt tokens/question {}",
        s.ingested_turns,
        s.ingestion_seconds,
        s.turns_per_second
            .map_or("–".to_owned(), |t| format!("{t:.1} turns/s")),
        s.latency_p50_ms.map_or("–".to_owned(), |v| v.to_string()),
        s.latency_p95_ms.map_or("–".to_owned(), |v| v.to_string()),
        s.mean_prompt_tokens
            .map_or("not reported".to_owned(), |v| format!("{v:.0}"))
    );
    if undelivered > 0 {
        println!(
            "  note: {undelivered} LongMemEval assistant turns ending a session were not sent"
        );
    }
    for note in summary
        .agent_recall_note
        .iter()
        .chain(&summary.comparability_note)
    {
        println!("  note: {note}");
    }
    print_files(&dir);
    Ok(ExitCode::SUCCESS)
}
