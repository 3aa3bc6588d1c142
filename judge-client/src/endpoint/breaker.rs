//! The circuit breaker toward the target (design: 5 failures open it, after 30 s it is half-open
//! and lets one probe through, 2 successes close it). Hand-written: the state machine is a few
//! lines and must run on the judge's single-threaded runtime, where the common crates' `Send`
//! bounds and background tasks do not fit.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakerPolicy {
    /// Consecutive failures (timeouts, network errors, 5xx) that open the circuit; 0 disables it.
    pub failure_threshold: u32,
    /// How long the circuit stays open before a probe request is let through.
    pub open_ms: u64,
    /// Successful probes that close it again.
    pub close_after: u32,
}

impl Default for BreakerPolicy {
    fn default() -> Self {
        Self {
            failure_threshold: 5,
            open_ms: 30_000,
            close_after: 2,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Closed { failures: u32 },
    Open { until: Instant },
    HalfOpen { successes: u32, probing: bool },
}

/// Why a request was not let through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejected {
    /// Open for this much longer.
    Open(Duration),
    /// Half-open and its one probe is under way.
    Probing,
}

#[derive(Debug, Clone)]
pub struct CircuitBreaker {
    policy: BreakerPolicy,
    state: State,
}

/// What became of an admitted request, as far as the breaker cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The target answered (any status below 500 but 429).
    Success,
    /// Timeout, network failure or a 5xx.
    Failure,
    /// A 429: the target is alive but busy; neither counts.
    Neutral,
}

impl CircuitBreaker {
    pub fn new(policy: BreakerPolicy) -> Self {
        Self {
            policy,
            state: State::Closed { failures: 0 },
        }
    }

    /// Lets a request through, or says why not.
    pub fn admit(&mut self, now: Instant) -> Result<(), Rejected> {
        match self.state {
            State::Closed { .. } => Ok(()),
            State::Open { until } if now >= until => {
                self.state = State::HalfOpen {
                    successes: 0,
                    probing: true,
                };
                Ok(())
            }
            State::Open { until } => Err(Rejected::Open(until - now)),
            State::HalfOpen { probing: true, .. } => Err(Rejected::Probing),
            State::HalfOpen { successes, .. } => {
                self.state = State::HalfOpen {
                    successes,
                    probing: true,
                };
                Ok(())
            }
        }
    }

    /// Records the outcome of an admitted request.
    pub fn record(&mut self, outcome: Outcome, now: Instant) {
        if self.policy.failure_threshold == 0 {
            return;
        }
        let open = State::Open {
            until: now + Duration::from_millis(self.policy.open_ms),
        };
        self.state = match (self.state, outcome) {
            (State::Closed { .. }, Outcome::Success) => State::Closed { failures: 0 },
            (State::Closed { failures }, Outcome::Failure) => {
                if failures + 1 >= self.policy.failure_threshold {
                    open
                } else {
                    State::Closed {
                        failures: failures + 1,
                    }
                }
            }
            (State::HalfOpen { successes, .. }, Outcome::Success) => {
                if successes + 1 >= self.policy.close_after {
                    State::Closed { failures: 0 }
                } else {
                    State::HalfOpen {
                        successes: successes + 1,
                        probing: false,
                    }
                }
            }
            (State::HalfOpen { .. }, Outcome::Failure) => open,
            (State::HalfOpen { successes, .. }, Outcome::Neutral) => State::HalfOpen {
                successes,
                probing: false,
            },
            (state, _) => state,
        };
    }

    pub fn is_closed(&self) -> bool {
        matches!(self.state, State::Closed { .. })
    }

    /// The state as docs/contracts/agent-injection.md names it: `CLOSED`, `OPEN` or `HALF_OPEN`. An open
    /// circuit whose wait is over reads `HALF_OPEN`: the next request is its probe.
    pub fn state_name(&self, now: Instant) -> &'static str {
        match self.state {
            State::Closed { .. } => "CLOSED",
            State::Open { until } if now < until => "OPEN",
            State::Open { .. } | State::HalfOpen { .. } => "HALF_OPEN",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_the_threshold_and_closes_after_successful_probes() {
        let policy = BreakerPolicy {
            failure_threshold: 3,
            open_ms: 1_000,
            close_after: 2,
        };
        let mut b = CircuitBreaker::new(policy);
        let t0 = Instant::now();
        for _ in 0..2 {
            assert!(b.admit(t0).is_ok());
            b.record(Outcome::Failure, t0);
        }
        // A success in between resets the count.
        b.record(Outcome::Success, t0);
        for _ in 0..3 {
            assert!(b.admit(t0).is_ok());
            b.record(Outcome::Failure, t0);
        }
        assert_eq!(
            b.admit(t0 + Duration::from_millis(400)),
            Err(Rejected::Open(Duration::from_millis(600)))
        );
        // Half-open: one probe at a time.
        let t1 = t0 + Duration::from_millis(1_000);
        assert!(b.admit(t1).is_ok());
        assert_eq!(b.admit(t1), Err(Rejected::Probing));
        b.record(Outcome::Success, t1);
        assert!(!b.is_closed());
        assert!(b.admit(t1).is_ok());
        b.record(Outcome::Success, t1);
        assert!(b.is_closed());
    }

    #[test]
    fn a_failed_probe_reopens_and_429_is_neutral() {
        let policy = BreakerPolicy {
            failure_threshold: 1,
            open_ms: 100,
            close_after: 1,
        };
        let mut b = CircuitBreaker::new(policy);
        let t0 = Instant::now();
        b.record(Outcome::Neutral, t0);
        assert!(b.is_closed());
        b.record(Outcome::Failure, t0);
        let t1 = t0 + Duration::from_millis(100);
        assert!(b.admit(t1).is_ok());
        b.record(Outcome::Neutral, t1);
        assert!(b.admit(t1).is_ok(), "a 429 frees the probe slot");
        b.record(Outcome::Failure, t1);
        assert!(matches!(b.admit(t1), Err(Rejected::Open(_))));
    }

    #[test]
    fn threshold_zero_disables_the_breaker() {
        let mut b = CircuitBreaker::new(BreakerPolicy {
            failure_threshold: 0,
            ..BreakerPolicy::default()
        });
        let t0 = Instant::now();
        for _ in 0..100 {
            b.record(Outcome::Failure, t0);
        }
        assert!(b.admit(t0).is_ok());
    }
}
