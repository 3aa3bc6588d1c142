//! Service-level objectives given on the command line (`--slo ttft=200ms --slo latency=1s`) and
//! the goodput they define: completed requests per second that met every objective (the
//! definition of vLLM's benchmark, DistServe's "goodput").

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;

use super::metrics::RequestTimes;

/// The metric an objective bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SloMetric {
    Ttft,
    Tpot,
    /// End-to-end request latency (vLLM's `e2el`, accepted as an alias).
    Latency,
}

impl SloMetric {
    pub fn as_str(self) -> &'static str {
        match self {
            SloMetric::Ttft => "ttft",
            SloMetric::Tpot => "tpot",
            SloMetric::Latency => "latency",
        }
    }
}

/// Why an `--slo` argument was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SloError {
    #[error("`{0}` is not METRIC=DURATION (for example ttft=200ms)")]
    MissingEquals(String),
    #[error("unknown SLO metric `{0}`; use ttft, tpot or latency (alias e2el)")]
    UnknownMetric(String),
    #[error("`{0}` is not a duration; write a positive number with a unit: 500us, 200ms, 1.5s")]
    BadDuration(String),
    #[error("the SLO on {0} is given twice")]
    Duplicate(&'static str),
}

/// One objective: `metric <= limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Slo {
    pub metric: SloMetric,
    #[serde(serialize_with = "as_ms")]
    pub limit: Duration,
}

fn as_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} <= {} ms",
            self.metric.as_str(),
            self.limit.as_secs_f64() * 1000.0
        )
    }
}

/// Parses `0s`, `500us`, `200ms`, `1.5s`. A unit is required: a bare number is ambiguous.
pub fn parse_duration(text: &str) -> Result<Duration, SloError> {
    let text = text.trim();
    let bad = || SloError::BadDuration(text.to_owned());
    let (number, scale) = if let Some(n) = text.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else {
        return Err(bad());
    };
    let value: f64 = number.trim().parse().map_err(|_| bad())?;
    if !(value >= 0.0 && value.is_finite()) {
        return Err(bad());
    }
    Duration::try_from_secs_f64(value * scale).map_err(|_| bad())
}

impl FromStr for Slo {
    type Err = SloError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (metric, limit) = s
            .split_once('=')
            .ok_or_else(|| SloError::MissingEquals(s.to_owned()))?;
        let metric = match metric.trim() {
            "ttft" => SloMetric::Ttft,
            "tpot" => SloMetric::Tpot,
            "latency" | "e2el" => SloMetric::Latency,
            other => return Err(SloError::UnknownMetric(other.to_owned())),
        };
        let limit = parse_duration(limit)?;
        if limit.is_zero() {
            // No request can be that fast: an objective of 0 is a typo.
            return Err(SloError::BadDuration(
                s.split_once('=').map_or(s, |p| p.1).to_owned(),
            ));
        }
        Ok(Slo { metric, limit })
    }
}

/// Every objective of a run, at most one per metric.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Slos(Vec<Slo>);

impl Slos {
    pub fn new(slos: Vec<Slo>) -> Result<Self, SloError> {
        for (i, slo) in slos.iter().enumerate() {
            if slos[..i].iter().any(|s| s.metric == slo.metric) {
                return Err(SloError::Duplicate(slo.metric.as_str()));
            }
        }
        Ok(Self(slos))
    }

    pub fn parse_all<S: AsRef<str>>(args: &[S]) -> Result<Self, SloError> {
        Self::new(
            args.iter()
                .map(|a| a.as_ref().parse())
                .collect::<Result<_, _>>()?,
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Slo> {
        self.0.iter()
    }

    /// Whether a completed request met every objective. A metric the request does not have (the
    /// TPOT of a one-token reply) cannot violate its objective.
    pub fn met(&self, times: &RequestTimes) -> bool {
        self.0.iter().all(|slo| {
            let value = match slo.metric {
                SloMetric::Ttft => Some(times.ttft),
                SloMetric::Tpot => times.tpot,
                SloMetric::Latency => Some(times.latency),
            };
            value.is_none_or(|v| v <= slo.limit)
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
    fn parses_slos_with_units() {
        let slos = Slos::parse_all(&["ttft=200ms", "latency=1s", "tpot=500us"]).unwrap();
        let got: Vec<(SloMetric, Duration)> = slos.iter().map(|s| (s.metric, s.limit)).collect();
        assert_eq!(
            got,
            vec![
                (SloMetric::Ttft, ms(200)),
                (SloMetric::Latency, ms(1000)),
                (SloMetric::Tpot, Duration::from_micros(500)),
            ]
        );
        assert_eq!("e2el=1.5s".parse::<Slo>().unwrap().limit, ms(1500));
    }

    #[test]
    fn bad_slos_get_errors_that_say_what_is_wrong() {
        let cases = [
            ("ttft", "not METRIC=DURATION"),
            ("p99=10ms", "unknown SLO metric `p99`"),
            ("ttft=200", "`200` is not a duration"),
            ("ttft=fast", "`fast` is not a duration"),
            ("ttft=-5ms", "`-5ms` is not a duration"),
            ("ttft=0ms", "`0ms` is not a duration"),
        ];
        for (arg, want) in cases {
            let err = arg.parse::<Slo>().unwrap_err().to_string();
            assert!(err.contains(want), "{arg}: {err}");
        }
        let err = Slos::parse_all(&["ttft=1s", "ttft=2s"]).unwrap_err();
        assert_eq!(err, SloError::Duplicate("ttft"));
    }

    #[test]
    fn a_request_is_good_only_when_it_meets_every_objective() {
        let slos = Slos::parse_all(&["ttft=100ms", "tpot=10ms"]).unwrap();
        let times = |ttft, tpot: Option<u64>| RequestTimes {
            latency: ms(900),
            ttft: ms(ttft),
            tpot: tpot.map(ms),
            output_tokens: 10,
        };
        assert!(slos.met(&times(100, Some(10))), "limits are inclusive");
        assert!(!slos.met(&times(101, Some(5))));
        assert!(!slos.met(&times(50, Some(11))));
        assert!(slos.met(&times(50, None)), "no TPOT cannot violate its SLO");
        assert!(Slos::default().met(&times(10_000, Some(10_000))));
    }
}
