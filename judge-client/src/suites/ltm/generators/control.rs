//! Tests of the control plane: reset and isolation, injected memory.

use chrono::Duration;
use protocol::control::InjectFact;

use super::{attributes, distinct, one};
use crate::suites::ltm::scoring::Scorer;
use crate::suites::ltm::script::Builder;

/// Type 13: A and B hold different values; A is reset. A forgets, B keeps its own, a fresh C knows none.
pub fn reset_isolation(b: &mut Builder) {
    let a = b.session("A");
    let bs = b.session("B");
    let c = b.session("C");
    let attribute = attributes(&mut b.rng, 1)[0];
    let values = distinct(&mut b.rng, attribute.values, 2);
    let (va, vb) = (values[0], values[1]);
    let question = format!("What is my {}?", attribute.name);
    let dont_know = format!(
        "I don't know; you have not told me your {}.",
        attribute.name
    );
    b.tell(a, format!("My {} is {va}.", attribute.name));
    b.tell(bs, format!("My {} is {vb}.", attribute.name));
    let span = b.params.span_tokens;
    b.filler(bs, span);
    b.reset(a);
    let both = vec![va.to_owned(), vb.to_owned()];
    b.ask(
        a,
        question.clone(),
        dont_know.clone(),
        "A forgets after reset",
        Scorer::Abstains {
            forbidden: both.clone(),
        },
    );
    b.ask(
        bs,
        question.clone(),
        format!("Your {} is {vb}.", attribute.name),
        "B untouched",
        Scorer::Mentions {
            groups: vec![vec![vb.to_owned()]],
            forbidden: vec![va.to_owned()],
        },
    );
    b.ask(
        c,
        question,
        dont_know,
        "fresh C sees nothing",
        Scorer::Abstains { forbidden: both },
    );
}

/// Type 14: Injected facts are recalled; of two injected values for one key, the newer wins, even
/// though it is sent first.
pub fn injected_recall(b: &mut Builder) {
    let s = b.session("main");
    let chosen = attributes(&mut b.rng, 2);
    let (conflicted, plain) = (chosen[0], chosen[1]);
    let values = distinct(&mut b.rng, conflicted.values, 2);
    let (old, new) = (values[0], values[1]);
    let other = one(&mut b.rng, plain.values);
    let start = b.start();
    let fact = |attribute: &str, value: &str, days_ago: i64| InjectFact {
        text: format!("My {attribute} is {value}."),
        key: Some(attribute.to_owned()),
        observed_at: Some(start - Duration::days(days_ago)),
        importance: Some(0.8),
        ..InjectFact::default()
    };
    b.inject(
        s,
        vec![
            fact(conflicted.name, new, 1),
            fact(conflicted.name, old, 2),
            fact(plain.name, other, 1),
        ],
    );
    let span = b.params.span_tokens;
    b.filler(s, span);
    b.ask(
        s,
        format!("What is my {}?", conflicted.name),
        format!("Your {} is {new}.", conflicted.name),
        "newer injected value wins",
        Scorer::Mentions {
            groups: vec![vec![new.to_owned()]],
            forbidden: vec![old.to_owned()],
        },
    );
    b.ask(
        s,
        format!("What is my {}?", plain.name),
        format!("Your {} is {other}.", plain.name),
        "injected fact recalled",
        Scorer::Mentions {
            groups: vec![vec![other.to_owned()]],
            forbidden: vec![],
        },
    );
}
