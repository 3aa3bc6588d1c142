//! Time travel on the session clock: episodic recall, relative dates, the retention curve.

use chrono::Duration;
use rand::RngExt;

use super::{attributes, capitalised, distinct, one, others};

use crate::suites::ltm::scoring::Scorer;
use crate::suites::ltm::script::Builder;
use crate::suites::ltm::vocab::{EPISODE_OBJECTS, EPISODE_VERBS, EVENTS};

/// Type 8: Two things done today; a day later, what was said about one of them.
pub fn episodic(b: &mut Builder) {
    let s = b.session("main");
    let objects = distinct(&mut b.rng, EPISODE_OBJECTS, 2);
    let verbs = distinct(&mut b.rng, EPISODE_VERBS, 2);
    let told_at = b.clock(s);
    let told_on = told_at.date_naive();
    for i in 0..2 {
        b.tell(s, format!("Today I {} the {}.", verbs[i], objects[i]));
    }
    let span = b.params.span_tokens;
    b.filler(s, span);
    // A day after the telling, or later when the filler itself ran past that: the question
    // names the day as it is on the clock it is asked at.
    let asked_on = b.advance_to(s, told_at + Duration::hours(24)).date_naive();
    let when = match (asked_on - told_on).num_days() {
        1 => "yesterday".to_owned(),
        days => format!("{days} days ago"),
    };
    b.ask(
        s,
        format!("What did I tell you {when} about the {}?", objects[0]),
        format!(
            "{} you told me that you {} the {}.",
            capitalised(&when),
            verbs[0],
            objects[0]
        ),
        "yesterday's episode",
        Scorer::Mentions {
            groups: vec![vec![verbs[0].to_owned()]],
            forbidden: vec![verbs[1].to_owned()],
        },
    );
}

/// Type 9: "My flight is in N days"; N + 2 days later: on which date was it?
pub fn relative_date(b: &mut Builder) {
    let s = b.session("main");
    let event = one(&mut b.rng, EVENTS);
    let days = b.rng.random_range(2..=6i64);
    let date = b.start().date_naive() + Duration::days(days);
    b.tell(s, format!("My {event} is in {days} days."));
    let span = b.params.span_tokens;
    b.filler(s, span);
    b.advance(s, Duration::days(days + 2));
    b.ask(
        s,
        format!("On which date was my {event}?"),
        format!(
            "Your {event} was on {} ({}).",
            date.format("%B %-d, %Y"),
            date.format("%Y-%m-%d")
        ),
        "absolute date",
        Scorer::Date { date },
    );
}

/// The retention horizons: (label, jump).
pub fn horizons() -> [(&'static str, Duration); 4] {
    [
        ("1h", Duration::hours(1)),
        ("25h", Duration::hours(25)),
        ("7d", Duration::days(7)),
        ("30d", Duration::days(30)),
    ]
}

/// Type 11: One session per horizon: a fact, a jump of 1 h, 25 h, 7 d or 30 d, the question.
pub fn retention(b: &mut Builder) {
    let chosen = attributes(&mut b.rng, 4);
    let per_session = b.params.span_tokens / 4;
    for ((label, jump), attribute) in horizons().into_iter().zip(chosen) {
        let s = b.session(&format!("after-{label}"));
        let value = one(&mut b.rng, attribute.values);
        let told_at = b.clock(s);
        b.tell(s, format!("My {} is {value}.", attribute.name));
        b.filler(s, per_session);
        // The horizon is measured from the telling; a filler longer than it already spans it.
        b.advance_to(s, told_at + jump);
        b.ask(
            s,
            format!("What is my {}?", attribute.name),
            format!("Your {} is {value}.", attribute.name),
            format!("after {label}"),
            Scorer::Mentions {
                groups: vec![vec![value.to_owned()]],
                forbidden: others(attribute, value),
            },
        );
    }
}
