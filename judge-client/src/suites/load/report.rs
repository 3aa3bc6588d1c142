//! The results of a load run: `results.json` (for CI and scripts) and a self-contained
//! `report.html` (inline CSS and SVG, nothing fetched) with the definitions of every metric.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::LoadError;
use super::conversation::band_turns;
use super::metrics::{Metrics, Percentiles};
use super::runner::LoadConfig;
use super::schedule::LoadLevel;
use super::slo::Slos;
use super::workload::Workload;
use crate::endpoint::Api;
use crate::report::chart::{Bar, BarChart, Scale, Series, colour};
use crate::report::escape::escape;
use crate::report::html::page_head;
use crate::rundir::{self, Manifest};

/// Each figure's definition, written into both files so a reader never has to guess.
pub const DEFINITIONS: [(&str, &str); 11] = [
    (
        "latency",
        "End-to-end request latency (vLLM's E2EL): from sending the request to the last byte of the reply.",
    ),
    (
        "ttft",
        "Time to first token: from sending the request to the first streamed chunk carrying output text (on the Responses API, the first response.output_text.delta event). A non-streamed reply arrives whole, so its TTFT equals its latency.",
    ),
    (
        "itl",
        "Inter-token latency: the gap between two consecutive output chunks of a stream (response.output_text.delta events on the Responses API); every gap is one sample (streaming only).",
    ),
    (
        "tpot",
        "Time per output token, per request: (latency - TTFT) / (output tokens - 1), for streamed replies of 2 or more tokens.",
    ),
    (
        "output_tokens",
        "usage.completion_tokens (usage.output_tokens on the Responses API) as the server reports it; without usage, the number of output chunks (streaming) or words (non-streaming).",
    ),
    (
        "requests_per_s",
        "Successful requests divided by the measured window (first measured send to last measured reply).",
    ),
    (
        "output_tokens_per_s",
        "Output tokens of successful requests divided by the measured window.",
    ),
    (
        "goodput_per_s",
        "Successful requests that met every --slo, divided by the measured window (absent without --slo).",
    ),
    (
        "error_rate",
        "Failed measured requests over all finished measured requests; failures by class: agent_error (an HTTP error status or an unusable body), timeout, rate_limited (429), infra_error (connection, 502-504, a cut-off stream), judge_error.",
    ),
    (
        "achieved_rate",
        "Open loop: measured sends divided by the time from the first to the last measured send; compare with target_rate. late_sends started more than 2 ms after their scheduled time, skipped_sends were not made because --max-in-flight requests were outstanding.",
    ),
    (
        "client_cpu",
        "The judge's own CPU time (getrusage, user + system) over the step divided by every request it made, warm-up included. The judge warns when a worker thread was busy for 90 % or more of its wall time: then the figures are the judge's limit, not the target's.",
    ),
];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RequestCounts {
    pub sent: u64,
    pub ok: u64,
    pub failed: u64,
    pub error_rate: f64,
    /// Written per failure class; not read back (the names are the judge's own constants).
    #[serde(skip_deserializing)]
    pub errors: BTreeMap<&'static str, u64>,
    pub late_sends: u64,
    pub skipped_sends: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Throughput {
    pub requests_per_s: f64,
    pub output_tokens_per_s: f64,
    pub output_tokens: u64,
    pub goodput_per_s: Option<f64>,
    pub good_requests: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientCpu {
    pub threads: usize,
    pub cpu_s: f64,
    pub requests_including_warmup: u64,
    pub cpu_us_per_request: Option<f64>,
    /// The busiest worker thread's CPU time over its wall time.
    pub busiest_thread_share: f64,
    pub saturated: bool,
}

/// One load level's figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepResult {
    pub label: String,
    pub level: LoadLevel,
    pub target_rate: Option<f64>,
    pub achieved_rate: Option<f64>,
    pub duration_s: f64,
    pub requests: RequestCounts,
    pub throughput: Throughput,
    pub latency: Option<Percentiles>,
    pub ttft: Option<Percentiles>,
    pub itl: Option<Percentiles>,
    pub tpot: Option<Percentiles>,
    pub send_lag: Option<Percentiles>,
    pub client: ClientCpu,
    pub warnings: Vec<String>,
    /// Conversation mode (`--turns`): the figures by band of turn index, first turns first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_turn: Vec<TurnFigures>,
}

/// The measured turns of conversations whose index is in `first_turn..=last_turn`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TurnFigures {
    pub first_turn: u32,
    pub last_turn: u32,
    pub ok: u64,
    pub failed: u64,
    pub latency: Option<Percentiles>,
    pub ttft: Option<Percentiles>,
    /// Mean words of a prompt (with full history, the whole conversation sent).
    pub mean_prompt_words: f64,
    pub mean_output_tokens: Option<f64>,
}

impl TurnFigures {
    fn of(m: &Metrics) -> Vec<Self> {
        m.by_turn
            .iter()
            .enumerate()
            .filter(|(_, t)| t.ok + t.failed > 0)
            .map(|(band, t)| {
                let (first_turn, last_turn) = band_turns(band);
                TurnFigures {
                    first_turn,
                    last_turn,
                    ok: t.ok,
                    failed: t.failed,
                    latency: Percentiles::of(&t.latency),
                    ttft: Percentiles::of(&t.ttft),
                    mean_prompt_words: t.prompt_words as f64 / (t.ok + t.failed) as f64,
                    mean_output_tokens: (t.ok > 0).then(|| t.output_tokens as f64 / t.ok as f64),
                }
            })
            .collect()
    }

    /// `1`, or `5-8`.
    pub fn turns(&self) -> String {
        if self.first_turn == self.last_turn {
            self.first_turn.to_string()
        } else {
            format!("{}-{}", self.first_turn, self.last_turn)
        }
    }
}

impl StepResult {
    pub fn new(level: LoadLevel, m: &Metrics, client: ClientCpu, late_after: Duration) -> Self {
        let window = match (m.first_send, m.last_done) {
            (Some(first), Some(last)) => last.saturating_duration_since(first).as_secs_f64(),
            _ => 0.0,
        };
        let per_s = |n: u64| if window > 0.0 { n as f64 / window } else { 0.0 };
        let finished = m.ok + m.failed();
        let target_rate = match level {
            LoadLevel::Open { rate, .. } => Some(rate),
            LoadLevel::Closed { .. } => None,
        };
        let achieved_rate = match (m.first_send, m.last_send) {
            (Some(first), Some(last)) if m.sent > 1 && last > first => {
                Some((m.sent - 1) as f64 / (last - first).as_secs_f64())
            }
            _ => None,
        };
        let mut warnings = Vec::new();
        if client.saturated {
            warnings.push(format!(
                "the judge was saturated (a worker thread was busy {:.0} % of the time): these figures may be the client's limit; add --threads or lower the load",
                client.busiest_thread_share * 100.0
            ));
        }
        if m.late_sends > 0 && m.late_sends * 100 >= m.sent {
            warnings.push(format!(
                "{} of {} sends started more than {} ms late: the judge could not keep the schedule",
                m.late_sends,
                m.sent,
                late_after.as_millis()
            ));
        }
        if m.skipped_sends > 0 {
            warnings.push(format!(
                "{} sends were skipped because --max-in-flight requests were outstanding: the target cannot keep up with this rate",
                m.skipped_sends
            ));
        }
        if let (Some(target), Some(achieved)) = (target_rate, achieved_rate)
            && achieved < 0.95 * target
        {
            warnings.push(format!(
                "achieved {achieved:.1} sends/s of the {target} asked for"
            ));
        }
        if m.sent == 0 {
            warnings.push("no request was measured (is the warm-up longer than the run?)".into());
        }
        Self {
            label: level.to_string(),
            level,
            target_rate,
            achieved_rate,
            duration_s: window,
            requests: RequestCounts {
                sent: m.sent,
                ok: m.ok,
                failed: m.failed(),
                error_rate: if finished > 0 {
                    m.failed() as f64 / finished as f64
                } else {
                    0.0
                },
                errors: m.errors_by_class(),
                late_sends: m.late_sends,
                skipped_sends: m.skipped_sends,
            },
            throughput: Throughput {
                requests_per_s: per_s(m.ok),
                output_tokens_per_s: per_s(m.output_tokens),
                output_tokens: m.output_tokens,
                goodput_per_s: None,
                good_requests: None,
            },
            latency: Percentiles::of(&m.latency),
            ttft: Percentiles::of(&m.ttft),
            itl: Percentiles::of(&m.itl),
            tpot: Percentiles::of(&m.tpot),
            send_lag: Percentiles::of(&m.send_lag),
            client,
            warnings,
            by_turn: TurnFigures::of(m),
        }
        .with_goodput(m, window)
    }

    fn with_goodput(mut self, m: &Metrics, window: f64) -> Self {
        // Goodput only means something against objectives; LoadResults clears it without any.
        self.throughput.good_requests = Some(m.good);
        self.throughput.goodput_per_s = Some(if window > 0.0 {
            m.good as f64 / window
        } else {
            0.0
        });
        self
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkloadSummary {
    pub prompt_tokens: String,
    pub output_tokens: String,
    pub sessions: u32,
    /// Conversation mode: turns per conversation and where the history lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversations: Option<ConversationSummary>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConversationSummary {
    pub turns: String,
    pub history: String,
}

/// Everything `results.json` holds. Read back (by `judge serve`) without the fields that are the
/// judge's own constants or the run's flags: they are written for people and other tools.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadResults {
    #[serde(skip_deserializing)]
    pub suite: &'static str,
    #[serde(skip_deserializing)]
    pub judge_version: &'static str,
    pub started_at: DateTime<Utc>,
    pub endpoint: String,
    pub model: String,
    /// The API every request went through.
    #[serde(default)]
    pub api: Api,
    pub stream: bool,
    pub seed: u64,
    pub workload: WorkloadSummary,
    pub warmup_s: f64,
    pub requests_per_step: Option<u64>,
    pub duration_per_step_s: Option<f64>,
    pub threads: usize,
    #[serde(skip_deserializing)]
    pub slos: Slos,
    #[serde(skip_deserializing)]
    pub definitions: BTreeMap<&'static str, &'static str>,
    pub steps: Vec<StepResult>,
}

impl LoadResults {
    pub fn new(
        config: &LoadConfig,
        workload: &Workload,
        started_at: DateTime<Utc>,
        mut steps: Vec<StepResult>,
    ) -> Self {
        if config.slos.is_empty() {
            for step in &mut steps {
                step.throughput.goodput_per_s = None;
                step.throughput.good_requests = None;
            }
        }
        Self {
            suite: "load",
            judge_version: env!("CARGO_PKG_VERSION"),
            started_at,
            endpoint: config.endpoint.clone(),
            model: workload.model.clone(),
            api: config.api,
            stream: config.stream,
            seed: config.seed,
            workload: WorkloadSummary {
                prompt_tokens: workload.prompt_tokens.to_string(),
                output_tokens: workload.output_tokens.to_string(),
                sessions: workload.sessions,
                conversations: workload.conversations.map(|c| ConversationSummary {
                    turns: c.turns.to_string(),
                    history: c.history.to_string(),
                }),
            },
            warmup_s: config.warmup.as_secs_f64(),
            requests_per_step: config.requests,
            duration_per_step_s: config.duration.map(|d| d.as_secs_f64()),
            threads: config.threads,
            slos: config.slos.clone(),
            definitions: DEFINITIONS.into_iter().collect(),
            steps,
        }
    }
}

/// What a load run records in its manifest beside the envelope every run has.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadDetails {
    pub endpoint: String,
    pub model: String,
    #[serde(default)]
    pub api: Api,
    pub stream: bool,
    pub seed: u64,
}

/// Writes `manifest.json`, `results.json` and `report.html` into `<out>/load-<time>/` and
/// returns that directory. The manifest's `created_at` is the results' `started_at`.
pub fn write(out: &Path, results: &LoadResults) -> Result<PathBuf, LoadError> {
    let stamp = results.started_at.format("%Y%m%dT%H%M%S%.3fZ");
    let (dir, run_id) = rundir::create(out, &format!("load-{stamp}"))?;
    let details = LoadDetails {
        endpoint: results.endpoint.clone(),
        model: results.model.clone(),
        api: results.api,
        stream: results.stream,
        seed: results.seed,
    };
    let mut manifest = Manifest::running(run_id, "load", results.started_at, details);
    rundir::write_json(&dir.join("results.json"), results)?;
    rundir::write_atomic(&dir.join("report.html"), render_html(results).as_bytes())?;
    manifest.complete();
    rundir::write_manifest(&dir, &manifest)?;
    Ok(dir)
}

/// What the load report changes of the shared stylesheet: wider, figures right-aligned.
const EXTRA_STYLE: &str = "body{max-width:1100px}td,th{text-align:right}
th:first-child,td:first-child{text-align:left}.warn{color:#b42318}dt{font-weight:bold;margin-top:.4em}";

fn ms(p: &Option<Percentiles>, pick: fn(&Percentiles) -> f64) -> String {
    p.as_ref().map_or("–".into(), |p| format!("{:.2}", pick(p)))
}

/// Grouped bars: p50, p90, p99, p99.9 of one metric per step, on a shared linear scale.
fn percentile_chart(
    title: &str,
    steps: &[StepResult],
    pick: fn(&StepResult) -> &Option<Percentiles>,
) -> String {
    let mut chart = BarChart::new(title, Scale::Linear, colour::BLUE);
    chart.heading = true;
    (chart.label_width, chart.width, chart.bar_height) = (170.0, 560.0, 11.0);
    chart.series = ["p50", "p90", "p99", "p99.9"]
        .into_iter()
        .zip(["#93c5fd", "#3b82f6", "#1d4ed8", "#172554"])
        .map(|(name, colour)| Series { name, colour })
        .collect();
    for s in steps {
        if let Some(p) = pick(s) {
            let bars = [p.p50_ms, p.p90_ms, p.p99_ms, p.p999_ms]
                .into_iter()
                .zip(["p50", "p90", "p99", "p99.9"])
                .map(|(value, name)| Bar::new(Some(value), format!("{name} {value:.2} ms")))
                .collect();
            chart.row(s.label.as_str(), bars);
        }
    }
    chart.render()
}

/// Throughput per step (the shape of a sweep: where it stops growing is the knee).
fn throughput_chart(steps: &[StepResult]) -> String {
    let mut chart = BarChart::new("Requests/s per load level", Scale::Linear, colour::GREEN);
    chart.heading = true;
    (chart.label_width, chart.width, chart.bar_height) = (170.0, 560.0, 16.0);
    for s in steps {
        let value = s.throughput.requests_per_s;
        chart.row(
            s.label.as_str(),
            vec![Bar::new(Some(value), format!("{value:.1}/s"))],
        );
    }
    chart.render()
}

pub fn render_html(r: &LoadResults) -> String {
    let mut h = page_head(&format!("judge load: {}", r.endpoint), EXTRA_STYLE);
    let _ = write!(
        h,
        "<h1>Load: {}</h1><p>model <code>{}</code>, {} API, {}, prompts {} tokens, outputs {} tokens, {} sessions, seed {}, warm-up {} s excluded, {} worker threads, started {}</p>",
        escape(&r.endpoint),
        escape(&r.model),
        r.api.title(),
        if r.stream {
            "streaming"
        } else {
            "non-streaming"
        },
        escape(&r.workload.prompt_tokens),
        escape(&r.workload.output_tokens),
        r.workload.sessions,
        r.seed,
        r.warmup_s,
        r.threads,
        r.started_at.to_rfc3339()
    );
    if !r.slos.is_empty() {
        let slos: Vec<String> = r.slos.iter().map(|s| s.to_string()).collect();
        let _ = write!(h, "<p>SLOs: {}</p>", escape(&slos.join(", ")));
    }
    h.push_str("<table><tr><th>load</th><th>req/s</th><th>target/achieved rate</th><th>output tok/s</th><th>goodput/s</th><th>ok</th><th>error rate</th><th>errors by class</th><th>latency p50/p99 ms</th><th>TTFT p99 ms</th><th>ITL p99 ms</th><th>TPOT p99 ms</th><th>client µs/req</th></tr>");
    for s in &r.steps {
        let errors: Vec<String> = s
            .requests
            .errors
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let rate = match (s.target_rate, s.achieved_rate) {
            (Some(t), Some(a)) => format!("{t} / {a:.1}"),
            (Some(t), None) => format!("{t} / –"),
            _ => "–".into(),
        };
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{:.1}</td><td>{rate}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{:.2} %</td><td>{}</td><td>{} / {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&s.label),
            s.throughput.requests_per_s,
            s.throughput.output_tokens_per_s,
            s.throughput
                .goodput_per_s
                .map_or("–".into(), |g| format!("{g:.1}")),
            s.requests.ok,
            s.requests.error_rate * 100.0,
            escape(&errors.join(", ")),
            ms(&s.latency, |p| p.p50_ms),
            ms(&s.latency, |p| p.p99_ms),
            ms(&s.ttft, |p| p.p99_ms),
            ms(&s.itl, |p| p.p99_ms),
            ms(&s.tpot, |p| p.p99_ms),
            s.client
                .cpu_us_per_request
                .map_or("–".into(), |c| format!("{c:.1}")),
        );
    }
    h.push_str("</table>");
    if let Some(c) = &r.workload.conversations {
        let _ = write!(
            h,
            "<h2>By turn index</h2><p>Conversations of {} turns, history {} (each virtual user \
             holds one session per conversation and sends a turn after the reply to the last).</p>",
            escape(&c.turns),
            escape(&c.history)
        );
        for s in r.steps.iter().filter(|s| !s.by_turn.is_empty()) {
            let _ = write!(
                h,
                "<h3>{}</h3><table><tr><th>turns</th><th>ok</th><th>failed</th><th>latency p50/p90/p99 ms</th><th>TTFT p50/p99 ms</th><th>prompt words</th><th>output tokens</th></tr>",
                escape(&s.label)
            );
            for t in &s.by_turn {
                let _ = write!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} / {} / {}</td><td>{} / {}</td><td>{:.0}</td><td>{}</td></tr>",
                    t.turns(),
                    t.ok,
                    t.failed,
                    ms(&t.latency, |p| p.p50_ms),
                    ms(&t.latency, |p| p.p90_ms),
                    ms(&t.latency, |p| p.p99_ms),
                    ms(&t.ttft, |p| p.p50_ms),
                    ms(&t.ttft, |p| p.p99_ms),
                    t.mean_prompt_words,
                    t.mean_output_tokens
                        .map_or("–".into(), |o| format!("{o:.1}")),
                );
            }
            h.push_str("</table>");
        }
    }
    for s in &r.steps {
        for w in &s.warnings {
            let _ = write!(
                h,
                "<p class=\"warn\">{}: {}</p>",
                escape(&s.label),
                escape(w)
            );
        }
    }
    if r.steps.len() > 1 {
        h.push_str(&throughput_chart(&r.steps));
    }
    h.push_str(&percentile_chart("Request latency (ms)", &r.steps, |s| {
        &s.latency
    }));
    if r.stream {
        h.push_str(&percentile_chart(
            "Time to first token (ms)",
            &r.steps,
            |s| &s.ttft,
        ));
        h.push_str(&percentile_chart(
            "Inter-token latency (ms)",
            &r.steps,
            |s| &s.itl,
        ));
        h.push_str(&percentile_chart(
            "Time per output token (ms)",
            &r.steps,
            |s| &s.tpot,
        ));
    }
    h.push_str("<h2>Definitions</h2><dl>");
    for (name, text) in &r.definitions {
        let _ = write!(h, "<dt>{}</dt><dd>{}</dd>", escape(name), escape(text));
    }
    h.push_str("</dl></body></html>\n");
    h
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::suites::load::metrics::StreamTimer;
    use crate::suites::load::schedule::Arrivals;

    fn client(saturated: bool) -> ClientCpu {
        ClientCpu {
            threads: 1,
            cpu_s: 1.0,
            requests_including_warmup: 100,
            cpu_us_per_request: Some(10_000.0),
            busiest_thread_share: if saturated { 0.97 } else { 0.2 },
            saturated,
        }
    }

    /// 100 sends 10 ms apart (99/0.99 s = 100/s), replies 5 ms after each.
    fn metrics(late: u64, skipped: u64) -> Metrics {
        let t0 = Instant::now();
        let mut m = Metrics::default();
        for i in 0..100u64 {
            let sent = t0 + Duration::from_millis(10 * i);
            m.record_send(sent, 4);
            let done = sent + Duration::from_millis(5);
            m.record_ok(&StreamTimer::whole(sent, done, 3), &Slos::default(), done);
        }
        m.late_sends = late;
        m.skipped_sends = skipped;
        m
    }

    fn results(steps: Vec<StepResult>) -> LoadResults {
        LoadResults {
            suite: "load",
            judge_version: "0",
            started_at: Utc::now(),
            endpoint: "http://127.0.0.1:1".into(),
            model: "m<x>".into(),
            api: Api::Chat,
            stream: true,
            seed: 1,
            workload: WorkloadSummary {
                prompt_tokens: "4".into(),
                output_tokens: "3".into(),
                sessions: 1,
                conversations: None,
            },
            warmup_s: 0.0,
            requests_per_step: None,
            duration_per_step_s: Some(1.0),
            threads: 1,
            slos: Slos::default(),
            definitions: DEFINITIONS.into_iter().collect(),
            steps,
        }
    }

    #[test]
    fn two_runs_started_in_the_same_millisecond_get_two_folders() {
        let out = tempfile::tempdir().unwrap();
        let results = results(Vec::new());
        let first = write(out.path(), &results).unwrap();
        let second = write(out.path(), &results).unwrap();
        assert_ne!(first, second);
        for dir in [first, second] {
            assert!(dir.join("results.json").is_file());
            assert!(dir.join("report.html").is_file());
        }
    }

    #[test]
    fn step_figures_come_from_the_measured_window() {
        let level = LoadLevel::Open {
            rate: 100.0,
            arrivals: Arrivals::Constant,
        };
        let step = StepResult::new(
            level,
            &metrics(0, 0),
            client(false),
            Duration::from_millis(2),
        );
        assert!(step.warnings.is_empty(), "{:?}", step.warnings);
        // First send at 0, last reply at 995 ms.
        assert!((step.duration_s - 0.995).abs() < 1e-9);
        assert!((step.throughput.requests_per_s - 100.0 / 0.995).abs() < 1e-6);
        assert!((step.throughput.output_tokens_per_s - 300.0 / 0.995).abs() < 1e-6);
        assert!((step.achieved_rate.unwrap() - 100.0).abs() < 1e-6);
        assert_eq!(step.target_rate, Some(100.0));
    }

    #[test]
    fn a_saturated_or_late_judge_and_an_unkept_rate_are_warned_about() {
        let level = LoadLevel::Open {
            rate: 200.0,
            arrivals: Arrivals::Poisson,
        };
        let step = StepResult::new(
            level,
            &metrics(5, 7),
            client(true),
            Duration::from_millis(2),
        );
        let all = step.warnings.join("\n");
        assert!(all.contains("the judge was saturated"), "{all}");
        assert!(
            all.contains("5 of 100 sends started more than 2 ms late"),
            "{all}"
        );
        assert!(all.contains("7 sends were skipped"), "{all}");
        assert!(
            all.contains("achieved 100.0 sends/s of the 200 asked for"),
            "{all}"
        );
        let html = render_html(&results(vec![step]));
        assert!(html.contains("the judge was saturated"));
        assert!(html.contains("m&lt;x&gt;"), "escaped");
        assert!(html.contains("<svg"));
    }
}
