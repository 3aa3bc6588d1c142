//! Whether the judge itself made the latency: the rule that tells, from the judge's own
//! per-request timings, when latency grows with the requests in flight as if the target served
//! one request at a time. Every suite that times its requests calls [`one_at_a_time`].
//!
//! The rule, on the requests of one run (each a start and a latency):
//!
//! 1. Each request's **in-flight level** is the time-averaged number of the run's requests in
//!    flight while it was (itself included), rounded, at least 1.
//! 2. Levels with fewer than [`MIN_PER_LEVEL`] requests are dropped. The rule decides only when
//!    at least two levels are left and the highest is at least [`MIN_LEVEL_RATIO`] times the
//!    lowest: a run whose concurrency never varied cannot tell a slow target from a queue.
//! 3. The slope of ln(median latency of a level) against ln(level), least squares weighted by
//!    the level's requests, is 1 for a target that serves one request at a time (n in flight
//!    wait for each other: n times the latency) and 0 for one that serves them all at once.
//! 4. At a slope of at least [`SERIAL_SLOPE`] the target is said to serve one request at a time.
//!    A server with two slots gives about 0.5 over levels 1 to 4 and is not flagged.
//! 5. Unless no level's median reaches [`MIN_LATENCY_MS`]: below that, millisecond rounding and
//!    a busy machine's CPU queue look the same as a one-slot server, and the wait costs a
//!    benchmark little. The case the rule is for is a local model server with one slot, whose
//!    answers take seconds.

use serde::{Deserialize, Serialize};

/// Requests a level needs to count.
pub const MIN_PER_LEVEL: usize = 5;
/// How far apart the highest and lowest counted levels must be.
pub const MIN_LEVEL_RATIO: f64 = 2.0;
/// The slope from which latency is said to grow as if requests were served one at a time.
pub const SERIAL_SLOPE: f64 = 0.7;
/// The median latency, in milliseconds, some level must reach for the rule to decide.
pub const MIN_LATENCY_MS: f64 = 250.0;

/// What to change, for a suite with a `--concurrency` flag.
pub const LOWER_CONCURRENCY: &str = "run again with --concurrency 1 (latency is then the agent's \
     own), or give the server more slots (llama.cpp's --parallel, Ollama's OLLAMA_NUM_PARALLEL)";

/// One request the judge timed: when it was sent (from any origin shared by the run) and how
/// long its answer took, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestSpan {
    pub start_ms: f64,
    pub latency_ms: f64,
}

/// The median latency of the requests at one in-flight level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Level {
    pub in_flight: usize,
    pub requests: usize,
    pub p50_ms: f64,
}

/// What the rule found on a run whose concurrency varied enough to decide.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The counted levels, lowest first.
    pub levels: Vec<Level>,
    /// Log-log slope of median latency against the level (1: one at a time; 0: all at once).
    pub slope: f64,
    /// `slope >= SERIAL_SLOPE`.
    pub one_at_a_time: bool,
}

impl Finding {
    /// The warning for the summary and the report, ending with `advice` (what to change), when
    /// the target seems to serve one request at a time.
    pub fn warning(&self, advice: &str) -> Option<String> {
        if !self.one_at_a_time {
            return None;
        }
        let (low, high) = (self.levels.first()?, self.levels.last()?);
        Some(format!(
            "latency grows with the requests in flight as if the target served one at a time \
             (median {:.0} ms with {} in flight, {:.0} ms with {}; log-log slope {:.2}, where 1 \
             is one at a time and 0 all at once), so the judge's own concurrency inflates every \
             latency: {advice}",
            low.p50_ms, low.in_flight, high.p50_ms, high.in_flight, self.slope
        ))
    }
}

/// The rule of the module documentation; `None` when the run cannot decide it.
pub fn latency_by_concurrency(spans: &[RequestSpan]) -> Option<Finding> {
    decide(levels(spans))
}

/// Steps 2 to 4 of the rule, on counted levels (lowest first).
fn decide(levels: Vec<Level>) -> Option<Finding> {
    let (low, high) = (levels.first()?, levels.last()?);
    if levels.len() < 2
        || (high.in_flight as f64) < MIN_LEVEL_RATIO * low.in_flight as f64
        || levels.iter().all(|l| l.p50_ms < MIN_LATENCY_MS)
    {
        return None;
    }
    let slope = weighted_slope(&levels)?;
    Some(Finding {
        one_at_a_time: slope >= SERIAL_SLOPE,
        levels,
        slope,
    })
}

/// [`latency_by_concurrency`]'s warning, if it gives one (see [`Finding::warning`]).
pub fn one_at_a_time(spans: &[RequestSpan], advice: &str) -> Option<String> {
    latency_by_concurrency(spans)?.warning(advice)
}

/// Each request's time-averaged in-flight count, grouped into levels with enough requests.
fn levels(spans: &[RequestSpan]) -> Vec<Level> {
    let in_flight = time_averaged_in_flight(spans);
    let mut by_level: std::collections::BTreeMap<usize, Vec<f64>> = Default::default();
    for (span, n) in spans.iter().zip(in_flight) {
        let level = (n.round() as usize).max(1);
        by_level.entry(level).or_default().push(span.latency_ms);
    }
    by_level
        .into_iter()
        .filter(|(_, latencies)| latencies.len() >= MIN_PER_LEVEL)
        .map(|(in_flight, mut latencies)| {
            latencies.sort_by(f64::total_cmp);
            let mid = latencies.len() / 2;
            let p50_ms = if latencies.len() % 2 == 1 {
                latencies[mid]
            } else {
                (latencies[mid - 1] + latencies[mid]) / 2.0
            };
            Level {
                in_flight,
                requests: latencies.len(),
                p50_ms,
            }
        })
        .collect()
}

/// For each span, the mean over its lifetime of the number of spans in flight (itself
/// included); for a span of no length, the number in flight when it started. A sweep over the
/// sorted start and end times builds the step function of the count and its running integral.
fn time_averaged_in_flight(spans: &[RequestSpan]) -> Vec<f64> {
    // An end and a start at the same instant: the end first (a closed-loop client sends its next
    // request as its reply arrives, and the two do not overlap).
    let mut events: Vec<(f64, i32)> = spans
        .iter()
        .flat_map(|s| [(s.start_ms, 1), (s.start_ms + s.latency_ms.max(0.0), -1)])
        .collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    // times[k]: a breakpoint; count[k]: requests in flight from times[k] to times[k + 1];
    // integral[k]: the integral of the count from the first breakpoint to times[k].
    let (mut times, mut count, mut integral) = (Vec::new(), Vec::new(), Vec::new());
    let mut current = 0i32;
    for (t, delta) in events {
        if let (Some(&last_t), Some(&last_n), Some(&last_i)) =
            (times.last(), count.last(), integral.last())
        {
            if t > last_t {
                times.push(t);
                integral.push(last_i + f64::from(last_n) * (t - last_t));
                count.push(current);
            }
        } else {
            times.push(t);
            integral.push(0.0);
            count.push(current);
        }
        current += delta;
        *count.last_mut().expect("pushed above") = current;
    }
    let at = |t: f64| {
        let k = times.partition_point(|x| *x <= t).saturating_sub(1);
        (integral[k] + f64::from(count[k]) * (t - times[k]), count[k])
    };
    spans
        .iter()
        .map(|s| {
            let (start, n) = at(s.start_ms);
            if s.latency_ms > 0.0 {
                (at(s.start_ms + s.latency_ms).0 - start) / s.latency_ms
            } else {
                f64::from(n.max(1))
            }
        })
        .collect()
}

/// Least-squares slope of ln(p50) on ln(level), each level weighted by its requests.
fn weighted_slope(levels: &[Level]) -> Option<f64> {
    let points: Vec<(f64, f64, f64)> = levels
        .iter()
        // A median under a millisecond is read as one (timings are whole milliseconds).
        .map(|l| {
            let p50 = l.p50_ms.max(1.0);
            ((l.in_flight as f64).ln(), p50.ln(), l.requests as f64)
        })
        .collect();
    let w: f64 = points.iter().map(|p| p.2).sum();
    let mx = points.iter().map(|p| p.0 * p.2).sum::<f64>() / w;
    let my = points.iter().map(|p| p.1 * p.2).sum::<f64>() / w;
    let sxx: f64 = points.iter().map(|p| p.2 * (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| p.2 * (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The judge's view of a target with `slots` request slots (first come, first served) and a
    /// fixed service time, driven by closed-loop clients: `phases` of (clients, requests each),
    /// one after the other; each client sends its next request when its reply arrives.
    fn simulate(slots: usize, service_ms: f64, phases: &[(usize, usize)]) -> Vec<RequestSpan> {
        let mut spans = Vec::new();
        let mut now = 0.0f64;
        for &(clients, each) in phases {
            // Per client: when its next request is sent, and how many it has left.
            let mut next: Vec<(f64, usize)> = vec![(now, each); clients];
            let mut free_at = vec![now; slots];
            // The earliest waiting request is served by the slot free first.
            while let Some(c) = (0..clients)
                .filter(|c| next[*c].1 > 0)
                .min_by(|a, b| next[*a].0.total_cmp(&next[*b].0))
            {
                let slot = (0..slots)
                    .min_by(|a, b| free_at[*a].total_cmp(&free_at[*b]))
                    .unwrap();
                let sent = next[c].0;
                let done = sent.max(free_at[slot]) + service_ms;
                free_at[slot] = done;
                spans.push(RequestSpan {
                    start_ms: sent,
                    latency_ms: done - sent,
                });
                next[c] = (done, next[c].1 - 1);
                now = now.max(done);
            }
        }
        spans
    }

    const PHASES: [(usize, usize); 3] = [(1, 10), (2, 10), (4, 10)];

    #[test]
    fn a_target_serving_one_request_at_a_time_is_found_and_told_what_to_change() {
        let finding = latency_by_concurrency(&simulate(1, 100.0, &PHASES)).unwrap();
        let levels: Vec<usize> = finding.levels.iter().map(|l| l.in_flight).collect();
        assert_eq!(levels, [1, 2, 4]);
        assert!((finding.slope - 1.0).abs() < 0.05, "{finding:?}");
        assert!(finding.one_at_a_time);
        let note = finding.warning("run with --concurrency 1").unwrap();
        assert!(
            note.contains("median 100 ms with 1 in flight, 400 ms with 4"),
            "{note}"
        );
        assert!(note.ends_with("run with --concurrency 1"), "{note}");
    }

    #[test]
    fn a_target_serving_requests_in_parallel_is_not_flagged() {
        let finding = latency_by_concurrency(&simulate(8, 300.0, &PHASES)).unwrap();
        assert!(finding.slope.abs() < 0.05, "{finding:?}");
        assert_eq!(finding.warning("x"), None);
        // Two slots: latency doubles from 2 to 4 in flight only; below the threshold.
        let two = latency_by_concurrency(&simulate(2, 300.0, &PHASES)).unwrap();
        assert!(two.slope > 0.3 && two.slope < SERIAL_SLOPE, "{two:?}");
        assert!(!two.one_at_a_time);
    }

    #[test]
    fn a_run_whose_concurrency_did_not_vary_enough_cannot_decide() {
        // Always 4 in flight (and a short tail): one level only.
        assert_eq!(
            latency_by_concurrency(&simulate(1, 300.0, &[(4, 10)])),
            None
        );
        // Levels 1 and 2 are MIN_LEVEL_RATIO apart: enough.
        assert!(latency_by_concurrency(&simulate(1, 300.0, &[(1, 10), (2, 10)])).is_some());
        // Too few requests per level.
        assert_eq!(
            latency_by_concurrency(&simulate(1, 300.0, &[(1, 4), (4, 1)])),
            None
        );
        assert_eq!(latency_by_concurrency(&[]), None);
        // One at a time, but too fast to matter or to be told from a busy CPU.
        assert_eq!(latency_by_concurrency(&simulate(1, 4.0, &PHASES)), None);
        assert_eq!(latency_by_concurrency(&simulate(1, 60.0, &PHASES)), None);
    }

    #[test]
    fn the_thresholds_are_a_slope_of_0_7_over_levels_twice_apart() {
        let level = |in_flight: usize, p50_ms: f64| Level {
            in_flight,
            requests: MIN_PER_LEVEL,
            p50_ms,
        };
        let at_slope = |slope: f64, high: usize| {
            decide(vec![
                level(1, 300.0),
                level(high, 300.0 * (high as f64).powf(slope)),
            ])
        };
        assert!(at_slope(0.71, 4).unwrap().one_at_a_time);
        assert!(!at_slope(0.69, 4).unwrap().one_at_a_time);
        assert!(at_slope(1.0, 2).is_some());
        assert_eq!(
            decide(vec![level(2, 100.0), level(3, 150.0)]),
            None,
            "3 is less than twice 2"
        );
        assert_eq!(decide(vec![level(1, 100.0)]), None);
    }

    #[test]
    fn in_flight_is_averaged_over_each_request_and_touching_requests_do_not_overlap() {
        let span = |start_ms, latency_ms| RequestSpan {
            start_ms,
            latency_ms,
        };
        // One long request; a second overlaps its second half; a third starts as the first ends.
        let averages =
            time_averaged_in_flight(&[span(0.0, 100.0), span(50.0, 100.0), span(100.0, 10.0)]);
        assert_eq!(averages, [1.5, 1.6, 2.0]);
        assert_eq!(time_averaged_in_flight(&[span(5.0, 0.0)]), [1.0]);
    }
}
