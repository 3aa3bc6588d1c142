//! Runs the load: one OS thread per worker, each with its own single-threaded actix runtime and
//! its own awc client (connections are never shared across threads, so there is no lock on the
//! hot path), and the calling thread drawing the live progress line.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use awc::http::Uri;
use awc::http::header::HeaderValue;
use protocol::openai::ModelList;

use super::conversation::{Conversation, Conversations, turn_band};
use super::cpu::{self, SATURATED_SHARE};
use super::exchange::{self, Endpoint};
use super::metrics::Metrics;
use super::report::{self, ClientCpu, LoadResults, StepResult};
use super::schedule::{
    Admission, ArrivalClock, LATE_AFTER, LoadLevel, StopGate, dispatch_open, run_closed,
};
use super::slo::Slos;
use super::workload::{LengthDist, RequestPool, Workload};
use super::{LoadError, LoadOutcome};
use crate::endpoint::Api;
use crate::endpoint::a2a::{A2aTarget, target_from_card};

/// A count run without `--duration` still stops after this long.
pub const COUNT_RUN_TIME_LIMIT: Duration = Duration::from_secs(600);
/// A run without `--requests` or `--duration` measures this long.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// Upper bounds that keep every loop finite and a typo from running for a day.
pub const MAX_DURATION: Duration = Duration::from_secs(6 * 3600);
pub const MAX_REQUESTS: u64 = 1_000_000_000;
pub const MAX_CONCURRENCY: usize = 100_000;
pub const MAX_RATE: f64 = 10_000_000.0;

/// Everything `judge load` was asked to do.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// Base URL, with or without `/v1`.
    pub endpoint: String,
    pub api_key: Option<String>,
    /// `None`: the first model `GET /v1/models` lists.
    pub model: Option<String>,
    /// Load generators are dangerous: only loopback targets unless this is set.
    pub allow_remote: bool,
    /// The API every request goes through.
    pub api: Api,
    pub stream: bool,
    /// One run per level (several make a sweep).
    pub levels: Vec<LoadLevel>,
    pub requests: Option<u64>,
    pub duration: Option<Duration>,
    pub warmup: Duration,
    pub timeout: Duration,
    pub threads: usize,
    pub seed: u64,
    pub prompt_tokens: LengthDist,
    pub output_tokens: LengthDist,
    pub sessions: u32,
    /// `--turns`: conversations (closed loop only) instead of independent requests.
    pub conversations: Option<Conversations>,
    pub slos: Slos,
    /// Open loop: requests a worker keeps outstanding at most; sends beyond are skipped and
    /// counted (the alternative, queueing them, would hide overload as client lag).
    pub max_in_flight: usize,
}

impl LoadConfig {
    pub fn validate(&self) -> Result<(), LoadError> {
        let invalid = |m: &str| Err(LoadError::Invalid(m.to_owned()));
        if self.levels.is_empty() {
            return invalid("give --concurrency or --rate");
        }
        for level in &self.levels {
            match *level {
                LoadLevel::Closed { concurrency: 0 } => {
                    return invalid("--concurrency must be at least 1");
                }
                LoadLevel::Closed { concurrency } if concurrency > MAX_CONCURRENCY => {
                    return invalid("--concurrency is at most 100000");
                }
                LoadLevel::Open { rate, .. } if !(rate > 0.0 && rate <= MAX_RATE) => {
                    return invalid("--rate must be above 0 and at most 10000000 per second");
                }
                _ => {}
            }
        }
        if self.requests == Some(0) || self.requests.is_some_and(|n| n > MAX_REQUESTS) {
            return invalid("--requests must be between 1 and 1000000000");
        }
        if self
            .duration
            .is_some_and(|d| d.is_zero() || d > MAX_DURATION)
            || self.warmup > MAX_DURATION
        {
            return invalid("--duration must be above 0 and, like --warmup, at most 6 h");
        }
        if self.timeout.is_zero() {
            return invalid("--timeout must be above 0");
        }
        if !(1..=256).contains(&self.threads) {
            return invalid("--threads must be between 1 and 256");
        }
        if self.sessions == 0 || self.max_in_flight == 0 {
            return invalid("--sessions and --max-in-flight must be at least 1");
        }
        if let Some(conversations) = &self.conversations {
            if self
                .levels
                .iter()
                .any(|l| matches!(l, LoadLevel::Open { .. }))
            {
                return invalid(
                    "--turns runs conversations closed-loop: each virtual user sends a turn after \
                     the reply to the last; give --concurrency (the number of users), not --rate",
                );
            }
            conversations.validate(self.api)?;
        }
        Ok(())
    }

    /// How long requests may start after the warm-up.
    fn measure_for(&self) -> Duration {
        match (self.duration, self.requests) {
            (Some(d), _) => d,
            (None, Some(_)) => COUNT_RUN_TIME_LIMIT,
            (None, None) => DEFAULT_DURATION,
        }
    }
}

/// `(api base, URL of a turn through api)` for an endpoint given with or without `/v1` (over
/// A2A: the agent card's URL, at the base URL without `/v1`).
pub fn api_urls(endpoint: &str, api: Api) -> (String, String) {
    let trimmed = endpoint.trim_end_matches('/');
    let base = if trimmed.ends_with("/v1") {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/v1")
    };
    let turn = match api {
        Api::A2a => format!("{}{}", base.trim_end_matches("/v1"), api.path()),
        api => format!("{base}{}", api.path()),
    };
    (base, turn)
}

/// The A2A agent card at the endpoint's base URL (docs/contracts/a2a.md), read before the load.
fn agent_card(
    endpoint: &str,
    authorization: Option<HeaderValue>,
    timeout: Duration,
) -> Result<A2aTarget, LoadError> {
    let (api_base, card_url) = api_urls(endpoint, Api::A2a);
    let base = api_base.trim_end_matches("/v1").to_owned();
    let failed = |message: String| LoadError::AgentCard {
        url: card_url.clone(),
        message,
    };
    actix_rt::System::new().block_on(async {
        let client = awc::Client::builder().timeout(timeout).finish();
        let mut request = client.get(&card_url).insert_header((
            protocol::a2a::VERSION_HEADER,
            protocol::a2a::PROTOCOL_VERSION,
        ));
        if let Some(auth) = authorization {
            request = request.insert_header((awc::http::header::AUTHORIZATION, auth));
        }
        let mut response = request.send().await.map_err(|e| failed(e.to_string()))?;
        if !response.status().is_success() {
            return Err(failed(format!("status {}", response.status())));
        }
        let body = response
            .body()
            .limit(4 * 1024 * 1024)
            .await
            .map_err(|e| failed(e.to_string()))?;
        target_from_card(&body, &card_url, &base).map_err(failed)
    })
}

/// Whether `url` points at this machine.
pub fn is_loopback(url: &Uri) -> bool {
    match url.host() {
        Some("localhost") => true,
        Some(host) => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

/// Live counters of the measured requests, read by the progress line.
#[derive(Debug, Default)]
pub struct LiveCounters {
    pub sent: AtomicU64,
    pub ok: AtomicU64,
    pub failed: AtomicU64,
}

/// A snapshot for the progress line.
#[derive(Debug, Clone, Copy)]
pub struct LiveSnapshot {
    pub elapsed: Duration,
    pub warming_up: bool,
    pub sent: u64,
    pub ok: u64,
    pub failed: u64,
}

/// Where the live progress goes (an indicatif line in the CLI, nothing in tests).
pub trait LoadProgress {
    fn step_started(&self, index: usize, total: usize, level: &LoadLevel);
    fn tick(&self, live: &LiveSnapshot);
    fn step_done(&self, step: &StepResult);
}

/// Progress that goes nowhere.
pub struct NoProgress;

impl LoadProgress for NoProgress {
    fn step_started(&self, _: usize, _: usize, _: &LoadLevel) {}
    fn tick(&self, _: &LiveSnapshot) {}
    fn step_done(&self, _: &StepResult) {}
}

/// Runs every load level in turn and writes `results.json` and `report.html` into a new run
/// directory under `out`. Blocking: call it outside any async runtime.
pub fn run(
    config: &LoadConfig,
    out: &std::path::Path,
    progress: &dyn LoadProgress,
) -> Result<LoadOutcome, LoadError> {
    config.validate()?;
    let (api_base, turn_url) = api_urls(&config.endpoint, config.api);
    let parse = |url: &str| -> Result<Uri, LoadError> {
        url.parse()
            .map_err(|e| LoadError::Invalid(format!("--endpoint {}: {e}", config.endpoint)))
    };
    let mut url = parse(&turn_url)?;
    if !config.allow_remote && !is_loopback(&url) {
        return Err(LoadError::Remote(config.endpoint.clone()));
    }
    let authorization = config
        .api_key
        .as_ref()
        .map(|key| HeaderValue::from_str(&format!("Bearer {key}")))
        .transpose()
        .map_err(|_| LoadError::Invalid("--api-key holds characters a header cannot".into()))?;
    let model = if config.api == Api::A2a {
        // The load goes to the interface the agent card names; there is no model to name, so
        // the agent's name stands for it.
        let target = agent_card(&config.endpoint, authorization.clone(), config.timeout)?;
        if config.stream && !target.streaming() {
            return Err(LoadError::AgentCard {
                url: target.card_url,
                message: "--stream: the card does not declare capabilities.streaming".into(),
            });
        }
        url = parse(&target.url)?;
        if !config.allow_remote && !is_loopback(&url) {
            return Err(LoadError::Remote(target.url));
        }
        config.model.clone().unwrap_or(target.card.name)
    } else {
        match &config.model {
            Some(model) => model.clone(),
            None => first_model(&api_base, authorization.clone(), config.timeout)?,
        }
    };
    let workload = Workload {
        model,
        api: config.api,
        stream: config.stream,
        prompt_tokens: config.prompt_tokens,
        output_tokens: config.output_tokens,
        sessions: config.sessions,
        conversations: config.conversations,
    };
    let started_at = chrono::Utc::now();
    let mut steps = Vec::with_capacity(config.levels.len());
    for (index, level) in config.levels.iter().enumerate() {
        progress.step_started(index, config.levels.len(), level);
        let step = run_step(config, &workload, &url, &authorization, *level, progress)?;
        progress.step_done(&step);
        steps.push(step);
    }
    let results = LoadResults::new(config, &workload, started_at, steps);
    let dir = report::write(out, &results)?;
    Ok(LoadOutcome { results, dir })
}

fn first_model(
    api_base: &str,
    authorization: Option<HeaderValue>,
    timeout: Duration,
) -> Result<String, LoadError> {
    let url = format!("{api_base}/models");
    let failed = |message: String| LoadError::Model {
        url: url.clone(),
        message,
    };
    actix_rt::System::new().block_on(async {
        let client = awc::Client::builder().timeout(timeout).finish();
        let mut request = client.get(&url);
        if let Some(auth) = authorization {
            request = request.insert_header((awc::http::header::AUTHORIZATION, auth));
        }
        let mut response = request.send().await.map_err(|e| failed(e.to_string()))?;
        if !response.status().is_success() {
            return Err(failed(format!("status {}", response.status())));
        }
        let list: ModelList = response
            .json()
            .limit(4 * 1024 * 1024)
            .await
            .map_err(|e| failed(e.to_string()))?;
        list.data
            .into_iter()
            .next()
            .map(|m| m.id)
            .ok_or_else(|| failed("the list is empty".into()))
    })
}

/// What one worker thread hands back.
struct WorkerReport {
    metrics: Metrics,
    cpu: Duration,
    wall: Duration,
    requests: u64,
}

/// Per-thread state shared by the worker's tasks (single-threaded, so `Rc` and `RefCell`).
struct WorkerState {
    endpoint: Endpoint,
    pool: RefCell<RequestPool>,
    /// Conversation mode: the shape, and one conversation per client, each taken by the
    /// request that sends its next turn and put back when the reply is in (so its turns go one
    /// after the other, in order). There are as many as clients, so one is always free.
    conversations: Option<(Workload, Conversations, RefCell<Vec<Conversation>>)>,
    metrics: RefCell<Metrics>,
    slos: Slos,
    live: Arc<LiveCounters>,
    requests: Cell<u64>,
}

/// Sends the next turn of a free conversation (conversation mode).
async fn one_turn(state: Rc<WorkerState>, admission: Admission) {
    let Some((workload, shape, idle)) = &state.conversations else {
        return;
    };
    let mut conversation = idle
        .borrow_mut()
        .pop()
        .expect("a conversation per client, and a client sends one turn at a time");
    let turn = conversation.next_turn(workload, shape);
    let measured = admission == Admission::Measured;
    state.requests.set(state.requests.get() + 1);
    let sent = Instant::now();
    if measured {
        state
            .metrics
            .borrow_mut()
            .record_send(sent, turn.prompt_words);
        state.live.sent.fetch_add(1, Ordering::Relaxed);
    }
    let mut reply = String::new();
    let wants_reply = conversation.wants_reply(shape);
    let result = exchange::send(
        &state.endpoint,
        turn.body,
        turn.session,
        sent,
        |gap| {
            if measured {
                state.metrics.borrow_mut().record_itl(gap);
            }
        },
        wants_reply.then_some(&mut reply),
    )
    .await;
    match &result {
        Ok(_) => conversation.replied(shape, reply),
        Err(_) => conversation.abandon(),
    }
    idle.borrow_mut().push(conversation);
    if !measured {
        return;
    }
    let done = Instant::now();
    let mut metrics = state.metrics.borrow_mut();
    let band = turn_band(turn.index);
    match result {
        Ok(times) => {
            metrics.record_ok(&times, &state.slos, done);
            metrics.record_turn(band, turn.prompt_words, Some(&times));
            state.live.ok.fetch_add(1, Ordering::Relaxed);
        }
        Err(kind) => {
            metrics.record_error(kind, done);
            metrics.record_turn(band, turn.prompt_words, None);
            state.live.failed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

async fn one_request(state: Rc<WorkerState>, admission: Admission, lag: Option<Duration>) {
    let (request, session) = state.pool.borrow_mut().take();
    let measured = admission == Admission::Measured;
    state.requests.set(state.requests.get() + 1);
    let sent = Instant::now();
    if measured {
        let mut metrics = state.metrics.borrow_mut();
        metrics.record_send(sent, request.prompt_words);
        if let Some(lag) = lag {
            metrics.record_send_lag(lag);
        }
        state.live.sent.fetch_add(1, Ordering::Relaxed);
    }
    let result = exchange::send(
        &state.endpoint,
        request.body,
        session,
        sent,
        |gap| {
            if measured {
                state.metrics.borrow_mut().record_itl(gap);
            }
        },
        None,
    )
    .await;
    if !measured {
        return;
    }
    let done = Instant::now();
    let mut metrics = state.metrics.borrow_mut();
    match result {
        Ok(times) => {
            metrics.record_ok(&times, &state.slos, done);
            state.live.ok.fetch_add(1, Ordering::Relaxed);
        }
        Err(kind) => {
            metrics.record_error(kind, done);
            state.live.failed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Plain TCP connections with TCP_NODELAY: a request is written as head and body, and with
/// Nagle's algorithm the body could wait for the ACK of the head (up to 40 ms of delayed ACK).
fn nodelay_tcp() -> impl actix_service::Service<
    actix_tls::connect::ConnectInfo<Uri>,
    Response = actix_tls::connect::Connection<Uri, actix_rt::net::TcpStream>,
    Error = actix_tls::connect::ConnectError,
> + Clone {
    use actix_service::ServiceExt as _;
    actix_tls::connect::Connector::default().service().map(
        |conn: actix_tls::connect::Connection<Uri, actix_rt::net::TcpStream>| {
            let _ = conn.io_ref().set_nodelay(true);
            conn
        },
    )
}

/// Splits `total` into `parts` near-equal shares.
fn share(total: usize, parts: usize, index: usize) -> usize {
    total / parts + usize::from(index < total % parts)
}

#[allow(clippy::too_many_arguments)]
fn worker(
    index: usize,
    workers: usize,
    level: LoadLevel,
    config: &LoadConfig,
    workload: &Workload,
    url: &Uri,
    authorization: &Option<HeaderValue>,
    gate: Arc<StopGate>,
    live: Arc<LiveCounters>,
) -> WorkerReport {
    let started = Instant::now();
    let cpu_before = cpu::thread_cpu();
    let connections = match level {
        LoadLevel::Closed { concurrency } => share(concurrency, workers, index),
        LoadLevel::Open { .. } => config.max_in_flight,
    };
    let metrics = actix_rt::System::new().block_on(async {
        let client = awc::Client::builder()
            .connector(
                awc::Connector::new()
                    .connector(nodelay_tcp())
                    .limit(connections.max(1)),
            )
            // The exchange's own timeout covers head and body alike.
            .disable_timeout()
            .finish();
        let state = Rc::new(WorkerState {
            endpoint: Endpoint {
                client,
                url: url.clone(),
                authorization: authorization.clone(),
                api: config.api,
                stream: config.stream,
                timeout: config.timeout,
            },
            pool: RefCell::new(RequestPool::new(workload, config.seed, index, workers)),
            conversations: workload.conversations.map(|shape| {
                let clients = (0..connections)
                    .map(|client| Conversation::new(config.seed, index, client))
                    .collect();
                (workload.clone(), shape, RefCell::new(clients))
            }),
            metrics: RefCell::new(Metrics::default()),
            slos: config.slos.clone(),
            live,
            requests: Cell::new(0),
        });
        match level {
            LoadLevel::Closed { .. } if state.conversations.is_some() => {
                let task_state = Rc::clone(&state);
                run_closed(connections, gate, move |admission| {
                    one_turn(Rc::clone(&task_state), admission)
                })
                .await;
            }
            LoadLevel::Closed { .. } => {
                let task_state = Rc::clone(&state);
                run_closed(connections, gate, move |admission| {
                    one_request(Rc::clone(&task_state), admission, None)
                })
                .await;
            }
            LoadLevel::Open { rate, arrivals } => {
                // Worker i sends every W-th arrival of the whole stream: a 1/W share of the rate,
                // shifted so the shares interleave (a sum of Poisson streams is Poisson).
                let mut clock = ArrivalClock::new(
                    rate / workers as f64,
                    arrivals,
                    Duration::from_secs_f64(index as f64 / rate),
                    config.seed.wrapping_add(index as u64),
                );
                let task_state = Rc::clone(&state);
                let stats = dispatch_open(
                    &mut clock,
                    &gate,
                    config.max_in_flight,
                    config.timeout + Duration::from_secs(1),
                    move |admission, lag| one_request(Rc::clone(&task_state), admission, Some(lag)),
                )
                .await;
                let mut metrics = state.metrics.borrow_mut();
                metrics.late_sends += stats.late;
                metrics.skipped_sends += stats.skipped;
            }
        }
        let metrics = state.metrics.borrow().clone();
        (metrics, state.requests.get())
    });
    WorkerReport {
        metrics: metrics.0,
        cpu: cpu::thread_cpu().saturating_sub(cpu_before),
        wall: started.elapsed(),
        requests: metrics.1,
    }
}

fn run_step(
    config: &LoadConfig,
    workload: &Workload,
    url: &Uri,
    authorization: &Option<HeaderValue>,
    level: LoadLevel,
    progress: &dyn LoadProgress,
) -> Result<StepResult, LoadError> {
    let workers = match level {
        // No thread without a client.
        LoadLevel::Closed { concurrency } => config.threads.min(concurrency),
        LoadLevel::Open { .. } => config.threads,
    };
    let live = Arc::new(LiveCounters::default());
    let process_cpu_before = cpu::process_cpu();
    let start = Instant::now();
    let gate = Arc::new(StopGate::new(
        start,
        config.warmup,
        config.measure_for(),
        config.requests,
    ));
    let reports = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|index| {
                let (gate, live) = (Arc::clone(&gate), Arc::clone(&live));
                std::thread::Builder::new()
                    .name(format!("judge-load-{index}"))
                    .spawn_scoped(scope, move || {
                        worker(
                            index,
                            workers,
                            level,
                            config,
                            workload,
                            url,
                            authorization,
                            gate,
                            live,
                        )
                    })
            })
            .collect::<Result<_, _>>()
            .map_err(|e| LoadError::Invalid(format!("cannot start a worker thread: {e}")))?;
        while !handles.iter().all(|h| h.is_finished()) {
            std::thread::sleep(Duration::from_millis(200));
            let now = Instant::now();
            progress.tick(&LiveSnapshot {
                elapsed: now - start,
                warming_up: now < gate.warmup_end(),
                sent: live.sent.load(Ordering::Relaxed),
                ok: live.ok.load(Ordering::Relaxed),
                failed: live.failed.load(Ordering::Relaxed),
            });
        }
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| LoadError::Worker))
            .collect::<Result<Vec<_>, _>>()
    })?;
    let process_cpu = cpu::process_cpu().saturating_sub(process_cpu_before);

    let mut metrics = Metrics::default();
    let mut requests = 0;
    let mut busiest = 0.0f64;
    for report in &reports {
        metrics.merge(&report.metrics);
        requests += report.requests;
        if !report.wall.is_zero() {
            busiest = busiest.max(report.cpu.as_secs_f64() / report.wall.as_secs_f64());
        }
    }
    let client = ClientCpu {
        threads: workers,
        cpu_s: process_cpu.as_secs_f64(),
        requests_including_warmup: requests,
        cpu_us_per_request: (requests > 0)
            .then(|| process_cpu.as_secs_f64() * 1e6 / requests as f64),
        busiest_thread_share: busiest,
        saturated: busiest >= SATURATED_SHARE,
    };
    Ok(StepResult::new(level, &metrics, client, LATE_AFTER))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_urls_and_loopback_check() {
        assert_eq!(
            api_urls("http://127.0.0.1:8080/", Api::Chat),
            (
                "http://127.0.0.1:8080/v1".into(),
                "http://127.0.0.1:8080/v1/chat/completions".into()
            )
        );
        assert_eq!(
            api_urls("http://h/v1", Api::Chat).1,
            "http://h/v1/chat/completions"
        );
        assert_eq!(
            api_urls("http://h/v1/", Api::Responses).1,
            "http://h/v1/responses"
        );
        assert_eq!(
            api_urls("http://h/v1/", Api::A2a).1,
            "http://h/.well-known/agent-card.json"
        );
        for (url, local) in [
            ("http://127.0.0.1:1/v1", true),
            ("http://localhost:1/v1", true),
            ("http://[::1]:1/v1", true),
            ("http://10.0.0.2:1/v1", false),
            ("https://api.example.com/v1", false),
        ] {
            assert_eq!(is_loopback(&url.parse().unwrap()), local, "{url}");
        }
    }

    #[test]
    fn shares_add_up() {
        let shares: Vec<usize> = (0..3).map(|i| share(64, 3, i)).collect();
        assert_eq!(shares, vec![22, 21, 21]);
        assert_eq!(shares.iter().sum::<usize>(), 64);
    }
}
