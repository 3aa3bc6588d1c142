//! What a load run measures, with the definitions of vLLM's serving benchmark, recorded into HDR
//! histograms (microsecond resolution, 3 significant digits, so percentiles stay exact to 0.1 %
//! at any count without keeping samples).
//!
//! - **latency** (vLLM's E2EL): from sending the request to the last byte of the reply.
//! - **TTFT**: from sending the request to the first chunk that carries output text. A
//!   non-streamed reply arrives whole, so its TTFT is its latency.
//! - **ITL**: the gap between two consecutive output chunks of a stream; every gap is one
//!   sample (a chunk holding several tokens counts once, as in vLLM).
//! - **TPOT**: per request, `(latency - TTFT) / (output tokens - 1)`, for streamed replies of at
//!   least 2 output tokens. Output tokens are the server's `usage.completion_tokens` when it
//!   reports them, otherwise the number of output chunks.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::slo::Slos;
use crate::endpoint::FailureKind;

/// The five failure classes, in report order.
pub const FAILURE_KINDS: [FailureKind; 5] = [
    FailureKind::AgentError,
    FailureKind::Timeout,
    FailureKind::RateLimited,
    FailureKind::InfraError,
    FailureKind::JudgeError,
];

fn kind_index(kind: FailureKind) -> usize {
    FAILURE_KINDS
        .iter()
        .position(|k| *k == kind)
        .expect("every kind is listed")
}

/// The timing of one completed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestTimes {
    pub latency: Duration,
    pub ttft: Duration,
    pub tpot: Option<Duration>,
    pub output_tokens: u64,
}

/// Follows one streamed reply chunk by chunk.
#[derive(Debug, Clone, Copy)]
pub struct StreamTimer {
    sent: Instant,
    first: Option<Instant>,
    last: Option<Instant>,
    chunks: u64,
}

impl StreamTimer {
    pub fn new(sent: Instant) -> Self {
        Self {
            sent,
            first: None,
            last: None,
            chunks: 0,
        }
    }

    /// A chunk carrying output text arrived at `at`. Returns the inter-token latency sample it
    /// ends, if it is not the first.
    pub fn output_chunk(&mut self, at: Instant) -> Option<Duration> {
        self.chunks += 1;
        let gap = self.last.map(|last| at.saturating_duration_since(last));
        self.first.get_or_insert(at);
        self.last = Some(at);
        gap
    }

    /// The reply ended at `end`; `usage_tokens` is the server's count when it sent one.
    pub fn finish(&self, end: Instant, usage_tokens: Option<u64>) -> RequestTimes {
        let latency = end.saturating_duration_since(self.sent);
        let ttft = self
            .first
            .map_or(latency, |first| first.saturating_duration_since(self.sent));
        let output_tokens = usage_tokens.unwrap_or(self.chunks);
        let tpot = (self.first.is_some() && output_tokens >= 2).then(|| {
            let decode = latency.saturating_sub(ttft);
            Duration::from_secs_f64(decode.as_secs_f64() / (output_tokens - 1) as f64)
        });
        RequestTimes {
            latency,
            ttft,
            tpot,
            output_tokens,
        }
    }

    /// Timing of a non-streamed reply: everything arrives at once.
    pub fn whole(sent: Instant, end: Instant, output_tokens: u64) -> RequestTimes {
        let latency = end.saturating_duration_since(sent);
        RequestTimes {
            latency,
            ttft: latency,
            tpot: None,
            output_tokens,
        }
    }
}

fn histogram() -> Histogram<u64> {
    // 1 µs to 1 hour; values above are clamped by saturating_record.
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("static bounds are valid")
}

fn micros(d: Duration) -> u64 {
    (d.as_micros() as u64).max(1)
}

/// One worker's (or, merged, one step's) measurements of the measured requests only.
#[derive(Debug, Clone)]
pub struct Metrics {
    pub latency: Histogram<u64>,
    pub ttft: Histogram<u64>,
    pub itl: Histogram<u64>,
    pub tpot: Histogram<u64>,
    /// How long after its scheduled time each open-loop request started.
    pub send_lag: Histogram<u64>,
    pub sent: u64,
    pub ok: u64,
    /// Indexed like [`FAILURE_KINDS`].
    pub errors: [u64; 5],
    /// Completed requests that met every SLO.
    pub good: u64,
    pub output_tokens: u64,
    pub prompt_words: u64,
    pub late_sends: u64,
    pub skipped_sends: u64,
    pub first_send: Option<Instant>,
    pub last_send: Option<Instant>,
    pub last_done: Option<Instant>,
    /// Conversation mode: the measured turns by band of turn index
    /// (`conversation::turn_band`); empty otherwise.
    pub by_turn: Vec<TurnMetrics>,
}

/// The measured turns of one band of turn indexes.
#[derive(Debug, Clone)]
pub struct TurnMetrics {
    pub latency: Histogram<u64>,
    pub ttft: Histogram<u64>,
    pub ok: u64,
    pub failed: u64,
    /// Words of the prompts sent (with full history, the whole conversation's).
    pub prompt_words: u64,
    pub output_tokens: u64,
}

impl Default for TurnMetrics {
    fn default() -> Self {
        Self {
            latency: histogram(),
            ttft: histogram(),
            ok: 0,
            failed: 0,
            prompt_words: 0,
            output_tokens: 0,
        }
    }
}

impl TurnMetrics {
    fn merge(&mut self, other: &TurnMetrics) {
        self.latency
            .add(&other.latency)
            .expect("histograms with the same bounds add");
        self.ttft
            .add(&other.ttft)
            .expect("histograms with the same bounds add");
        self.ok += other.ok;
        self.failed += other.failed;
        self.prompt_words += other.prompt_words;
        self.output_tokens += other.output_tokens;
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            latency: histogram(),
            ttft: histogram(),
            itl: histogram(),
            tpot: histogram(),
            send_lag: histogram(),
            sent: 0,
            ok: 0,
            errors: [0; 5],
            good: 0,
            output_tokens: 0,
            prompt_words: 0,
            late_sends: 0,
            skipped_sends: 0,
            first_send: None,
            last_send: None,
            last_done: None,
            by_turn: Vec::new(),
        }
    }
}

impl Metrics {
    pub fn record_send(&mut self, at: Instant, prompt_words: u32) {
        self.sent += 1;
        self.prompt_words += u64::from(prompt_words);
        self.first_send = Some(self.first_send.map_or(at, |f| f.min(at)));
        self.last_send = Some(self.last_send.map_or(at, |l| l.max(at)));
    }

    pub fn record_send_lag(&mut self, lag: Duration) {
        self.send_lag.saturating_record(micros(lag));
    }

    pub fn record_itl(&mut self, gap: Duration) {
        self.itl.saturating_record(micros(gap));
    }

    pub fn record_ok(&mut self, times: &RequestTimes, slos: &Slos, done: Instant) {
        self.ok += 1;
        self.latency.saturating_record(micros(times.latency));
        self.ttft.saturating_record(micros(times.ttft));
        if let Some(tpot) = times.tpot {
            self.tpot.saturating_record(micros(tpot));
        }
        self.output_tokens += times.output_tokens;
        self.good += u64::from(slos.met(times));
        self.mark_done(done);
    }

    pub fn record_error(&mut self, kind: FailureKind, done: Instant) {
        self.errors[kind_index(kind)] += 1;
        self.mark_done(done);
    }

    /// A measured turn of a conversation, in the band of its index: its times when it succeeded.
    pub fn record_turn(&mut self, band: usize, prompt_words: u32, times: Option<&RequestTimes>) {
        if self.by_turn.len() <= band {
            self.by_turn.resize_with(band + 1, TurnMetrics::default);
        }
        let turn = &mut self.by_turn[band];
        turn.prompt_words += u64::from(prompt_words);
        match times {
            Some(times) => {
                turn.ok += 1;
                turn.latency.saturating_record(micros(times.latency));
                turn.ttft.saturating_record(micros(times.ttft));
                turn.output_tokens += times.output_tokens;
            }
            None => turn.failed += 1,
        }
    }

    fn mark_done(&mut self, at: Instant) {
        self.last_done = Some(self.last_done.map_or(at, |l| l.max(at)));
    }

    pub fn failed(&self) -> u64 {
        self.errors.iter().sum()
    }

    pub fn merge(&mut self, other: &Metrics) {
        for (mine, theirs) in [
            (&mut self.latency, &other.latency),
            (&mut self.ttft, &other.ttft),
            (&mut self.itl, &other.itl),
            (&mut self.tpot, &other.tpot),
            (&mut self.send_lag, &other.send_lag),
        ] {
            mine.add(theirs)
                .expect("histograms with the same bounds add");
        }
        self.sent += other.sent;
        self.ok += other.ok;
        for (mine, theirs) in self.errors.iter_mut().zip(other.errors) {
            *mine += theirs;
        }
        self.good += other.good;
        self.output_tokens += other.output_tokens;
        self.prompt_words += other.prompt_words;
        self.late_sends += other.late_sends;
        self.skipped_sends += other.skipped_sends;
        let earliest = |a: Option<Instant>, b: Option<Instant>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let latest = |a: Option<Instant>, b: Option<Instant>| match (a, b) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        if self.by_turn.len() < other.by_turn.len() {
            self.by_turn
                .resize_with(other.by_turn.len(), TurnMetrics::default);
        }
        for (mine, theirs) in self.by_turn.iter_mut().zip(&other.by_turn) {
            mine.merge(theirs);
        }
        self.first_send = earliest(self.first_send, other.first_send);
        self.last_send = latest(self.last_send, other.last_send);
        self.last_done = latest(self.last_done, other.last_done);
    }

    /// Errors per class, by name.
    pub fn errors_by_class(&self) -> BTreeMap<&'static str, u64> {
        FAILURE_KINDS
            .iter()
            .zip(self.errors)
            .map(|(kind, n)| (kind.as_str(), n))
            .collect()
    }
}

/// Percentiles of one histogram, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub count: u64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

impl Percentiles {
    /// `None` for an empty histogram (the metric does not apply, e.g. ITL without streaming).
    pub fn of(h: &Histogram<u64>) -> Option<Self> {
        if h.is_empty() {
            return None;
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Some(Self {
            count: h.len(),
            mean_ms: h.mean() / 1000.0,
            p50_ms: ms(h.value_at_quantile(0.50)),
            p90_ms: ms(h.value_at_quantile(0.90)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p999_ms: ms(h.value_at_quantile(0.999)),
            max_ms: ms(h.max()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn stream_timer_computes_ttft_itl_and_tpot_as_vllm_defines_them() {
        let t0 = Instant::now();
        let mut timer = StreamTimer::new(t0);
        // Output chunks at 100, 110, 130 and 160 ms; the stream ends at 170 ms.
        let gaps: Vec<Option<Duration>> = [100, 110, 130, 160]
            .iter()
            .map(|&at| timer.output_chunk(t0 + ms(at)))
            .collect();
        assert_eq!(gaps, vec![None, Some(ms(10)), Some(ms(20)), Some(ms(30))]);
        let times = timer.finish(t0 + ms(170), None);
        assert_eq!(times.latency, ms(170));
        assert_eq!(times.ttft, ms(100));
        assert_eq!(times.output_tokens, 4, "no usage: one token per chunk");
        // (170 - 100) / (4 - 1)
        assert_eq!(times.tpot, Some(Duration::from_secs_f64(0.070 / 3.0)));
        // With the server's usage count (8 tokens in those 4 chunks): 70 / 7 = 10 ms.
        let with_usage = timer.finish(t0 + ms(170), Some(8));
        assert_eq!(with_usage.output_tokens, 8);
        assert_eq!(with_usage.tpot, Some(ms(10)));
    }

    #[test]
    fn one_token_replies_have_no_tpot_and_whole_replies_have_ttft_equal_latency() {
        let t0 = Instant::now();
        let mut timer = StreamTimer::new(t0);
        assert_eq!(timer.output_chunk(t0 + ms(40)), None);
        let times = timer.finish(t0 + ms(45), Some(1));
        assert_eq!((times.ttft, times.tpot), (ms(40), None));
        let whole = StreamTimer::whole(t0, t0 + ms(25), 12);
        assert_eq!(
            (whole.latency, whole.ttft, whole.tpot),
            (ms(25), ms(25), None)
        );
    }

    #[test]
    fn metrics_merge_and_report_percentiles_in_ms() {
        let t0 = Instant::now();
        let slos = Slos::parse_all(&["latency=50ms"]).unwrap();
        let mut a = Metrics::default();
        let mut b = Metrics::default();
        for i in 1..=100u64 {
            let m = if i % 2 == 0 { &mut a } else { &mut b };
            m.record_send(t0, 3);
            m.record_ok(&StreamTimer::whole(t0, t0 + ms(i), 2), &slos, t0 + ms(i));
        }
        a.record_error(FailureKind::RateLimited, t0 + ms(200));
        a.merge(&b);
        assert_eq!((a.sent, a.ok, a.failed(), a.good), (100, 100, 1, 50));
        assert_eq!(a.errors_by_class()["rate_limited"], 1);
        assert_eq!(a.output_tokens, 200);
        assert_eq!(a.last_done, Some(t0 + ms(200)));
        let p = Percentiles::of(&a.latency).unwrap();
        assert_eq!(p.count, 100);
        assert!((p.p50_ms - 50.0).abs() < 0.1, "{p:?}");
        assert!((p.p90_ms - 90.0).abs() < 0.1, "{p:?}");
        assert!((p.p99_ms - 99.0).abs() < 0.1, "{p:?}");
        assert!((p.max_ms - 100.0).abs() < 0.1, "{p:?}");
        assert!(Percentiles::of(&a.itl).is_none());
    }
}
