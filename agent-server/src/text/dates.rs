//! Relative dates become absolute ones on the session clock, so that "my flight is in 3 days",
//! told on 1 March, still means 4 March when asked about a week later.

use std::sync::LazyLock;

use chrono::{DateTime, Duration, Utc};
use regex::{Captures, Regex};

static RELATIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:(?P<in>in\s+(?P<n>\d{1,4}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+(?P<unit>minutes?|hours?|days?|weeks?|months?|years?))|(?P<dat>the\s+day\s+after\s+tomorrow)|(?P<tomorrow>tomorrow)|(?P<yesterday>yesterday)|(?P<today>today|tonight)|(?P<nextweek>next\s+week))\b",
    )
    .expect("valid regex")
});

/// A number word or digits as a count.
pub(crate) fn parse_count(word: &str) -> Option<i64> {
    let w = word.to_lowercase();
    Some(match w.as_str() {
        "a" | "an" | "one" => 1,
        "two" => 2,
        "three" => 3,
        "four" => 4,
        "five" => 5,
        "six" => 6,
        "seven" => 7,
        "eight" => 8,
        "nine" => 9,
        "ten" => 10,
        "eleven" => 11,
        "twelve" => 12,
        _ => return w.parse().ok(),
    })
}

/// The span `count` `unit`s long (`unit` as written: "day", "hours", ...).
pub(crate) fn span(count: i64, unit: &str) -> Option<Duration> {
    let unit = unit.to_lowercase();
    let unit = unit.trim_end_matches('s');
    Some(match unit {
        "minute" => Duration::minutes(count),
        "hour" => Duration::hours(count),
        "day" => Duration::days(count),
        "week" => Duration::weeks(count),
        // Calendar months and years vary; 30 and 365 days are close enough for recall.
        "month" => Duration::days(30 * count),
        "year" => Duration::days(365 * count),
        _ => return None,
    })
}

/// How a date is written back to users: ISO first (machine-checkable), then in words.
pub(crate) fn describe_date(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d (%A, %-d %B %Y)").to_string()
}

pub(crate) fn describe_datetime(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC (%A, %-d %B %Y)").to_string()
}

/// Whether `text` holds a relative time expression ("tomorrow", "in 3 days"), which
/// [`absolutize`] would rewrite: without one, what is read from a text does not depend on when.
/// The pattern is unanchored, so a text without one has none in any of its parts either.
pub(crate) fn mentions_relative_time(text: &str) -> bool {
    RELATIVE.is_match(text)
}

/// Rewrites relative time expressions in `text` as absolute dates seen from `now`. Returns `None`
/// when there is nothing relative in the text.
pub(crate) fn absolutize(text: &str, now: DateTime<Utc>) -> Option<String> {
    if !mentions_relative_time(text) {
        return None;
    }
    let out = RELATIVE.replace_all(text, |c: &Captures| {
        let day = |d: i64| format!("on {}", describe_date(now + Duration::days(d)));
        if c.name("in").is_some() {
            let (Some(n), Some(unit)) = (parse_count(&c["n"]), c.name("unit")) else {
                return c[0].to_owned();
            };
            match span(n, unit.as_str()) {
                Some(d) if d < Duration::days(1) => format!("at {}", describe_datetime(now + d)),
                Some(d) => format!("on {}", describe_date(now + d)),
                None => c[0].to_owned(),
            }
        } else if c.name("dat").is_some() {
            day(2)
        } else if c.name("tomorrow").is_some() {
            day(1)
        } else if c.name("yesterday").is_some() {
            day(-1)
        } else if c.name("today").is_some() {
            day(0)
        } else {
            format!("in the week of {}", describe_date(now + Duration::weeks(1)))
        }
    });
    Some(out.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-03-01T09:30:00Z")
            .unwrap()
            .to_utc()
    }

    #[test]
    fn days_weeks_and_words_become_dates() {
        assert_eq!(
            absolutize("My flight is in 3 days.", now()).unwrap(),
            "My flight is on 2026-03-04 (Wednesday, 4 March 2026)."
        );
        assert_eq!(
            absolutize("The exam is in two weeks", now()).unwrap(),
            "The exam is on 2026-03-15 (Sunday, 15 March 2026)"
        );
        assert_eq!(
            absolutize("Dinner is tomorrow, lunch was yesterday", now()).unwrap(),
            "Dinner is on 2026-03-02 (Monday, 2 March 2026), lunch was on 2026-02-28 (Saturday, 28 February 2026)"
        );
        assert_eq!(
            absolutize("The call is in 2 hours", now()).unwrap(),
            "The call is at 2026-03-01 11:30 UTC (Sunday, 1 March 2026)"
        );
    }

    #[test]
    fn text_without_relative_dates_is_untouched() {
        assert_eq!(absolutize("My flight is on 4 March.", now()), None);
        assert_eq!(absolutize("I was in Todayville", now()), None);
    }
}
