//! When requests start: closed loop (a fixed number of clients, each sending its next request when
//! the previous reply is complete) or open loop (sends scheduled by the clock at a constant or
//! Poisson rate, whatever the replies do, so an overloaded target cannot slow the load down and
//! hide its queueing).
//!
//! Every loop here is bounded twice: by a request count or a duration, and always by a deadline.

use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::rc::Rc;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::LoadError;

/// A send that starts more than this after its scheduled time is counted as late: the judge (not
/// the target) could not keep up. Tokio's timer wheel has 1 ms ticks, so 1 ms of lag is normal.
pub const LATE_AFTER: Duration = Duration::from_millis(2);

/// How open-loop sends are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Exactly `1 / rate` apart.
    Constant,
    /// Exponentially distributed gaps with mean `1 / rate` (a Poisson process), as real users
    /// arrive independently of each other.
    Poisson,
}

impl FromStr for Arrivals {
    type Err = LoadError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "constant" => Ok(Arrivals::Constant),
            "poisson" => Ok(Arrivals::Poisson),
            other => Err(LoadError::Invalid(format!(
                "arrivals must be `constant` or `poisson`, got `{other}`"
            ))),
        }
    }
}

/// One load level of a run (a sweep is several).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum LoadLevel {
    /// `concurrency` clients, each waiting for its reply before sending again.
    Closed { concurrency: usize },
    /// Sends at `rate` per second, scheduled by the clock.
    Open { rate: f64, arrivals: Arrivals },
}

impl fmt::Display for LoadLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadLevel::Closed { concurrency } => write!(f, "closed c={concurrency}"),
            LoadLevel::Open { rate, arrivals } => {
                let kind = match arrivals {
                    Arrivals::Constant => "constant",
                    Arrivals::Poisson => "poisson",
                };
                write!(f, "open {rate}/s {kind}")
            }
        }
    }
}

/// The scheduled send times of one stream of open-loop arrivals, as offsets from the start.
/// Seeded, so the same seed gives the same schedule.
pub struct ArrivalClock {
    arrivals: Arrivals,
    mean_gap_s: f64,
    next_s: f64,
    rng: ChaCha8Rng,
}

impl ArrivalClock {
    /// A stream at `rate` per second whose first send is at `first`.
    pub fn new(rate: f64, arrivals: Arrivals, first: Duration, seed: u64) -> Self {
        Self {
            arrivals,
            mean_gap_s: 1.0 / rate,
            next_s: first.as_secs_f64(),
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// The next scheduled send, as an offset from the start.
    pub fn next_offset(&mut self) -> Duration {
        let now = self.next_s;
        let gap = match self.arrivals {
            Arrivals::Constant => self.mean_gap_s,
            // Inverse transform: -ln(U) is exponential with mean 1 for U uniform in (0, 1].
            Arrivals::Poisson => -(1.0 - self.rng.random::<f64>()).ln() * self.mean_gap_s,
        };
        self.next_s += gap;
        Duration::from_secs_f64(now)
    }
}

/// What a request that is about to start counts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Sent, but excluded from every figure.
    Warmup,
    /// Sent and measured.
    Measured,
    /// Not sent: the run is over.
    Done,
}

/// Decides whether a request may start. Shared by every worker thread of a step, so a request
/// count is exact across threads.
#[derive(Debug)]
pub struct StopGate {
    start: Instant,
    warmup_end: Instant,
    /// Requests may not start at or after this (duration, or the time limit of a count run).
    deadline: Instant,
    max_requests: Option<u64>,
    tickets: AtomicU64,
}

impl StopGate {
    pub fn new(
        start: Instant,
        warmup: Duration,
        measure_for: Duration,
        max_requests: Option<u64>,
    ) -> Self {
        let warmup_end = start + warmup;
        Self {
            start,
            warmup_end,
            deadline: warmup_end + measure_for,
            max_requests,
            tickets: AtomicU64::new(0),
        }
    }

    pub fn start(&self) -> Instant {
        self.start
    }

    pub fn warmup_end(&self) -> Instant {
        self.warmup_end
    }

    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether a request scheduled at `at` may start, and whether it is measured.
    pub fn admit(&self, at: Instant) -> Admission {
        if at >= self.deadline {
            return Admission::Done;
        }
        if at < self.warmup_end {
            return Admission::Warmup;
        }
        match self.max_requests {
            Some(max) if self.tickets.fetch_add(1, Ordering::Relaxed) >= max => Admission::Done,
            _ => Admission::Measured,
        }
    }
}

/// What the open-loop dispatcher did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DispatchStats {
    /// Measured sends that started more than [`LATE_AFTER`] after their scheduled time.
    pub late: u64,
    /// Measured sends skipped because `max_in_flight` requests were already waiting: the target
    /// (or the judge) is saturated.
    pub skipped: u64,
}

/// Sends one stream of open-loop arrivals on the current (single-threaded) runtime: each send is
/// spawned at its scheduled time and never waits for an earlier reply. `send` gets whether the
/// request is measured and how late it started. Returns when the gate closes and every spawned
/// request has finished (or `drain_limit` has passed).
pub async fn dispatch_open<F, Fut>(
    clock: &mut ArrivalClock,
    gate: &StopGate,
    max_in_flight: usize,
    drain_limit: Duration,
    mut send: F,
) -> DispatchStats
where
    F: FnMut(Admission, Duration) -> Fut,
    Fut: Future<Output = ()> + 'static,
{
    let in_flight = Rc::new(Cell::new(0usize));
    let mut stats = DispatchStats::default();
    loop {
        let due = gate.start() + clock.next_offset();
        let admission = gate.admit(due);
        if admission == Admission::Done {
            break;
        }
        let now = Instant::now();
        if due > now {
            actix_rt::time::sleep_until(due.into()).await;
        }
        let lag = Instant::now().saturating_duration_since(due);
        let measured = admission == Admission::Measured;
        if in_flight.get() >= max_in_flight {
            stats.skipped += u64::from(measured);
            continue;
        }
        if measured && lag > LATE_AFTER {
            stats.late += 1;
        }
        in_flight.set(in_flight.get() + 1);
        let request = send(admission, lag);
        let counter = Rc::clone(&in_flight);
        actix_rt::spawn(async move {
            request.await;
            counter.set(counter.get() - 1);
        });
    }
    let drain_until = Instant::now() + drain_limit;
    while in_flight.get() > 0 && Instant::now() < drain_until {
        actix_rt::time::sleep(Duration::from_millis(1)).await;
    }
    stats
}

/// Runs `clients` closed-loop clients on the current runtime: each sends, waits for the reply,
/// and sends again until the gate closes.
pub async fn run_closed<F, Fut>(clients: usize, gate: Arc<StopGate>, send: F)
where
    F: Fn(Admission) -> Fut + Clone + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let mut handles = Vec::with_capacity(clients);
    for _ in 0..clients {
        let gate = Arc::clone(&gate);
        let send = send.clone();
        handles.push(actix_rt::spawn(async move {
            loop {
                let admission = gate.admit(Instant::now());
                if admission == Admission::Done {
                    break;
                }
                send(admission).await;
            }
        }));
    }
    for handle in handles {
        let _ = handle.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn constant_arrivals_are_evenly_spaced() {
        let mut clock = ArrivalClock::new(4.0, Arrivals::Constant, Duration::from_millis(10), 1);
        let offsets: Vec<u128> = (0..4).map(|_| clock.next_offset().as_millis()).collect();
        assert_eq!(offsets, vec![10, 260, 510, 760]);
    }

    #[test]
    fn poisson_inter_arrival_mean_and_spread_match_the_rate() {
        let rate = 1000.0;
        let mut clock = ArrivalClock::new(rate, Arrivals::Poisson, Duration::ZERO, 42);
        let n = 100_000;
        let mut previous = clock.next_offset().as_secs_f64();
        let mut gaps = Vec::with_capacity(n);
        for _ in 0..n {
            let t = clock.next_offset().as_secs_f64();
            gaps.push(t - previous);
            previous = t;
        }
        let mean = gaps.iter().sum::<f64>() / n as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n as f64;
        // Mean 1 ms within 2 %; an exponential's standard deviation equals its mean (a constant
        // schedule mislabelled as Poisson would have none).
        assert!((mean - 0.001).abs() < 0.00002, "mean gap {mean}");
        assert!((var.sqrt() - 0.001).abs() < 0.00005, "sd {}", var.sqrt());
        // Seeded: the same seed gives the same schedule, another seed another one.
        let again: Vec<Duration> = {
            let mut c = ArrivalClock::new(rate, Arrivals::Poisson, Duration::ZERO, 42);
            (0..5).map(|_| c.next_offset()).collect()
        };
        let mut c = ArrivalClock::new(rate, Arrivals::Poisson, Duration::ZERO, 42);
        assert_eq!(again, (0..5).map(|_| c.next_offset()).collect::<Vec<_>>());
        let mut other = ArrivalClock::new(rate, Arrivals::Poisson, Duration::ZERO, 43);
        assert_ne!(
            again,
            (0..5).map(|_| other.next_offset()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn gate_counts_warmup_apart_and_stops_at_the_request_count() {
        let start = Instant::now();
        let gate = StopGate::new(
            start,
            Duration::from_secs(1),
            Duration::from_secs(60),
            Some(3),
        );
        assert_eq!(gate.admit(start), Admission::Warmup);
        let later = start + Duration::from_secs(2);
        let admitted: Vec<Admission> = (0..5).map(|_| gate.admit(later)).collect();
        assert_eq!(
            admitted,
            vec![
                Admission::Measured,
                Admission::Measured,
                Admission::Measured,
                Admission::Done,
                Admission::Done
            ]
        );
        assert_eq!(
            gate.admit(start + Duration::from_secs(61)),
            Admission::Done,
            "the deadline bounds a count run too"
        );
    }

    /// Replies take 100 ms, ten times the send interval: a closed loop would send once per
    /// reply; the open loop must keep sending every 10 ms.
    #[actix_rt::test]
    async fn open_loop_sends_follow_the_clock_not_the_replies() {
        let start = Instant::now();
        let gate = StopGate::new(start, Duration::ZERO, Duration::from_millis(300), None);
        let mut clock = ArrivalClock::new(100.0, Arrivals::Constant, Duration::ZERO, 1);
        let sends = Rc::new(RefCell::new(Vec::new()));
        let log = Rc::clone(&sends);
        let stats = dispatch_open(&mut clock, &gate, 1000, Duration::from_secs(1), |_, _| {
            log.borrow_mut().push(Instant::now());
            actix_rt::time::sleep(Duration::from_millis(100))
        })
        .await;
        let sends = sends.borrow();
        assert_eq!(sends.len(), 30, "one send per 10 ms over 300 ms");
        for (i, sent) in sends.iter().enumerate() {
            let scheduled = start + Duration::from_millis(10 * i as u64);
            let lag = sent.saturating_duration_since(scheduled);
            assert!(*sent >= scheduled, "send {i} went early");
            // Generous for a shared, noisy machine; a closed loop would send number i
            // 90 * i ms late.
            assert!(lag < Duration::from_millis(50), "send {i} was {lag:?} late");
        }
        assert_eq!(stats.skipped, 0);
        // Every reply was awaited before returning.
        assert!(start.elapsed() >= Duration::from_millis(390));
    }

    #[actix_rt::test]
    async fn open_loop_counts_late_sends_when_the_judge_stalls() {
        let start = Instant::now();
        let gate = StopGate::new(start, Duration::ZERO, Duration::from_millis(50), None);
        let mut clock = ArrivalClock::new(1000.0, Arrivals::Constant, Duration::ZERO, 1);
        // The first send blocks the thread for 20 ms (a saturated judge): the sends due
        // meanwhile start late.
        let mut first = true;
        let stats = dispatch_open(&mut clock, &gate, 1000, Duration::from_secs(1), |_, _| {
            if std::mem::take(&mut first) {
                std::thread::sleep(Duration::from_millis(20));
            }
            actix_rt::time::sleep(Duration::from_millis(1))
        })
        .await;
        assert!(stats.late >= 15, "{stats:?}");
        assert_eq!(stats.skipped, 0);
    }

    #[actix_rt::test]
    async fn open_loop_skips_sends_beyond_max_in_flight_instead_of_queueing_them() {
        let start = Instant::now();
        let gate = StopGate::new(start, Duration::ZERO, Duration::from_millis(100), None);
        let mut clock = ArrivalClock::new(200.0, Arrivals::Constant, Duration::ZERO, 1);
        let made = Rc::new(Cell::new(0u32));
        let counter = Rc::clone(&made);
        // Replies take 22 ms, sends are due every 5 ms, at most 1 outstanding: about one send
        // in five is made, the rest are counted as skipped.
        let stats = dispatch_open(&mut clock, &gate, 1, Duration::from_secs(1), |_, _| {
            counter.set(counter.get() + 1);
            actix_rt::time::sleep(Duration::from_millis(22))
        })
        .await;
        assert_eq!(u64::from(made.get()) + stats.skipped, 20, "{stats:?}");
        assert!((2..=8).contains(&made.get()), "made {}", made.get());
    }

    #[actix_rt::test]
    async fn closed_loop_keeps_exactly_n_requests_outstanding() {
        let gate = Arc::new(StopGate::new(
            Instant::now(),
            Duration::ZERO,
            Duration::from_secs(10),
            Some(40),
        ));
        let active = Rc::new(Cell::new(0usize));
        let peak = Rc::new(Cell::new(0usize));
        let total = Rc::new(Cell::new(0usize));
        let (a, p, t) = (active.clone(), peak.clone(), total.clone());
        run_closed(4, gate, move |_| {
            let (a, p, t) = (a.clone(), p.clone(), t.clone());
            async move {
                a.set(a.get() + 1);
                p.set(p.get().max(a.get()));
                t.set(t.get() + 1);
                actix_rt::time::sleep(Duration::from_millis(2)).await;
                a.set(a.get() - 1);
            }
        })
        .await;
        assert_eq!(total.get(), 40);
        assert_eq!(peak.get(), 4);
    }
}
