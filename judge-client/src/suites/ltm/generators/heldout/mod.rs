//! The held-out phrasing (`judge ltm --phrasing heldout`): the same fourteen tests, with the same
//! vocabulary, scorers, filler and clock jumps as the standard generators, told and asked the
//! way people talk ([`phrases`]): facts inside longer sentences, several facts in one turn,
//! indirect mentions, pronouns, the odd typo, questions in other words than the statement.
//!
//! Every type keeps its rule scorer except `episodic`: what was done to a thing is told without
//! the vocabulary's verb ("scrubbed the fence until it sparkled"), and a correct reply may say it
//! in any words, which no word list covers. Its check is [`Scorer::Judged`]: the LLM grader
//! decides it, and a run without one reports the type as not gradable.

pub(crate) mod phrases;

use chrono::{Duration, NaiveDate};
use protocol::control::InjectFact;
use rand::RngExt;

use self::phrases::{AttributePhrases, fill};
use super::{attributes, capitalised, distinct, join_and, one, others, strings};
use crate::suites::ltm::filler::MAX_MESSAGE_TOKENS;
use crate::suites::ltm::scoring::{ListItem, Scorer};
use crate::suites::ltm::script::{Builder, TURN_GAP_SECONDS};
use crate::suites::ltm::types::TestType;
use crate::suites::ltm::vocab::{
    Attribute, CITIES, EPISODE_OBJECTS, EVENTS, GROCERIES, NAMES, ORDINALS, RELATIONS, REPLY_WORDS,
    TRIGGER_WORDS,
};

/// Generates the held-out version of `test_type` into `b`.
pub(crate) fn generate(test_type: TestType, b: &mut Builder) {
    match test_type {
        TestType::Needle => needle(b),
        TestType::KnowledgeUpdate => knowledge_update(b),
        TestType::AccumulatedList => accumulated_list(b),
        TestType::ShoppingList => shopping_list(b),
        TestType::MultiHop => multi_hop(b),
        TestType::TriggerRule => trigger_rule(b),
        TestType::Prospective => prospective(b),
        TestType::Episodic => episodic(b),
        TestType::RelativeDate => relative_date(b),
        TestType::Reminder => reminder(b),
        TestType::Retention => retention(b),
        TestType::Abstention => abstention(b),
        TestType::ResetIsolation => reset_isolation(b),
        TestType::InjectedRecall => injected_recall(b),
    }
}

/// The held-out phrases of a vocabulary attribute.
fn phrases_of(attribute: &Attribute) -> &'static AttributePhrases {
    phrases::ATTRIBUTES
        .iter()
        .find(|p| p.name == attribute.name)
        .expect("every attribute has held-out phrases")
}

fn tell_value(b: &mut Builder, attribute: &Attribute, value: &str) -> String {
    let template = one(&mut b.rng, phrases_of(attribute).tell);
    fill(template, &[("v", value)])
}

fn question(b: &mut Builder, attribute: &Attribute) -> String {
    one(&mut b.rng, phrases_of(attribute).ask).to_owned()
}

/// A reply that gives the value (the oracle's; the rules only look for the value).
fn answer(value: &str) -> String {
    format!("That would be {value}.")
}

fn recalls(value: &str, attribute: &Attribute) -> Scorer {
    Scorer::Mentions {
        groups: vec![vec![value.to_owned()]],
        forbidden: others(attribute, value),
    }
}

const NUMBER_WORDS: &[&str] = &[
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
];

/// A small number as people write it: a word or digits, drawn.
fn number(b: &mut Builder, n: u32) -> String {
    match NUMBER_WORDS.get(n as usize) {
        Some(word) if b.rng.random_bool(0.5) => (*word).to_owned(),
        _ => n.to_string(),
    }
}

/// "three eggs", "1 lemon", "a lemon", "an onion".
fn amount(b: &mut Builder, quantity: u32, (singular, plural): (&str, &str)) -> String {
    if quantity == 1 {
        if b.rng.random_bool(0.5) {
            let article = if singular.starts_with(['a', 'e', 'i', 'o', 'u']) {
                "an"
            } else {
                "a"
            };
            return format!("{article} {singular}");
        }
        return format!("{} {singular}", number(b, 1));
    }
    format!("{} {plural}", number(b, quantity))
}

/// Type 1: one fact in passing, filler, the question in other words.
fn needle(b: &mut Builder) {
    let s = b.session("main");
    let attribute = attributes(&mut b.rng, 1)[0];
    let value = one(&mut b.rng, attribute.values);
    let said = tell_value(b, attribute, value);
    b.tell(s, said);
    let span = b.params.span_tokens;
    b.filler(s, span);
    let asked = question(b, attribute);
    b.ask(s, asked, answer(value), "recall", recalls(value, attribute));
}

/// Type 2: a value in passing, filler, a change of mind, filler, the question.
fn knowledge_update(b: &mut Builder) {
    let s = b.session("main");
    let attribute = attributes(&mut b.rng, 1)[0];
    let values = distinct(&mut b.rng, attribute.values, 2);
    let (old, new) = (values[0], values[1]);
    let span = b.params.span_tokens;
    let said = tell_value(b, attribute, old);
    b.tell(s, said);
    b.filler(s, span / 2);
    let template = one(&mut b.rng, phrases_of(attribute).change);
    b.tell(s, fill(template, &[("v", new)]));
    b.filler(s, span - span / 2);
    let asked = question(b, attribute);
    b.ask(
        s,
        asked,
        answer(new),
        "latest value",
        recalls(new, attribute),
    );
}

/// Type 3: trips mentioned in passing, two of them in one turn; the places asked back.
fn accumulated_list(b: &mut Builder) {
    let s = b.session("main");
    let k = b.rng.random_range(3..=4usize);
    let cities = strings(&distinct(&mut b.rng, CITIES, k));
    let span = b.params.span_tokens;
    // The first two trips are told together; the rest one at a time.
    let turns = k - 1;
    let template = one(&mut b.rng, phrases::VISITED_TWO);
    b.tell(s, fill(template, &[("a", &cities[0]), ("b", &cities[1])]));
    b.filler(s, span / turns as u32);
    for city in &cities[2..] {
        let template = one(&mut b.rng, phrases::VISITED);
        b.tell(s, fill(template, &[("city", city)]));
        b.filler(s, span / turns as u32);
    }
    let asked = one(&mut b.rng, phrases::ASK_VISITED);
    b.ask(
        s,
        asked,
        format!("You've been to {}.", join_and(&cities)),
        "all cities",
        Scorer::SetOverlap {
            expected: cities.clone(),
            universe: strings(CITIES),
        },
    );
}

/// Type 4: two amounts in one turn, a third, an increase, a removal, a last amount; the
/// remaining list asked for.
fn shopping_list(b: &mut Builder) {
    let s = b.session("main");
    let items = distinct(&mut b.rng, GROCERIES, 4);
    let quantities: Vec<u32> = (0..4).map(|_| b.rng.random_range(1..=4u32)).collect();
    let more = b.rng.random_range(1..=3u32);
    let span = b.params.span_tokens;
    let first = (
        amount(b, quantities[0], items[0]),
        amount(b, quantities[1], items[1]),
    );
    let template = one(&mut b.rng, phrases::GROCERY_FIRST);
    b.tell(s, fill(template, &[("a", &first.0), ("b", &first.1)]));
    let third = amount(b, quantities[2], items[2]);
    let template = one(&mut b.rng, phrases::GROCERY_ALSO);
    b.tell(s, fill(template, &[("a", &third)]));
    b.filler(s, span / 3);
    let extra = number(b, more);
    let template = one(&mut b.rng, phrases::GROCERY_MORE);
    let item = if more == 1 { items[1].0 } else { items[1].1 };
    b.tell(s, fill(template, &[("n", &extra), ("item", item)]));
    let template = one(&mut b.rng, phrases::GROCERY_DROP);
    b.tell(s, fill(template, &[("items", items[0].1)]));
    b.filler(s, span / 3);
    let last = amount(b, quantities[3], items[3]);
    let template = one(&mut b.rng, phrases::GROCERY_LAST);
    b.tell(s, fill(template, &[("a", &last)]));
    b.filler(s, span - 2 * (span / 3));
    let remaining = [
        (items[1], quantities[1] + more),
        (items[2], quantities[2]),
        (items[3], quantities[3]),
    ];
    let listed: Vec<String> = remaining
        .iter()
        .map(|((singular, plural), q)| {
            if *q == 1 {
                format!("1 {singular}")
            } else {
                format!("{q} {plural}")
            }
        })
        .collect();
    let list_item = |(singular, plural): (&str, &str), quantity: u32| ListItem {
        singular: singular.to_owned(),
        plural: plural.to_owned(),
        quantity,
    };
    let asked = one(&mut b.rng, phrases::ASK_GROCERIES);
    b.ask(
        s,
        asked,
        format!("You need {}.", join_and(&listed)),
        "final list",
        Scorer::ShoppingList {
            items: remaining.iter().map(|(i, q)| list_item(*i, *q)).collect(),
            removed: vec![list_item(items[0], quantities[0])],
        },
    );
}

/// Type 5: two people and who they are to the user, then where each lives, said of them by
/// name; the question names only the relation.
fn multi_hop(b: &mut Builder) {
    let s = b.session("main");
    let relations = distinct(&mut b.rng, RELATIONS, 2);
    let names = distinct(&mut b.rng, NAMES, 2);
    let cities = distinct(&mut b.rng, CITIES, 2);
    let span = b.params.span_tokens;
    for i in 0..2 {
        let template = one(&mut b.rng, phrases::PERSON);
        b.tell(
            s,
            fill(template, &[("name", names[i]), ("relation", relations[i])]),
        );
    }
    b.filler(s, span / 2);
    for i in 0..2 {
        let template = one(&mut b.rng, phrases::HOME_TOWN);
        b.tell(
            s,
            fill(template, &[("name", names[i]), ("city", cities[i])]),
        );
    }
    b.filler(s, span - span / 2);
    let template = one(&mut b.rng, phrases::ASK_HOME_TOWN);
    b.ask(
        s,
        fill(template, &[("relation", relations[0])]),
        format!("{} lives in {}.", names[0], cities[0]),
        "two hops",
        Scorer::Mentions {
            groups: vec![vec![cities[0].to_owned()]],
            forbidden: vec![cities[1].to_owned()],
        },
    );
}

/// Type 6: a rule about a word; later the word, and two other words, inside ordinary sentences.
fn trigger_rule(b: &mut Builder) {
    let s = b.session("main");
    let words = distinct(&mut b.rng, TRIGGER_WORDS, 3);
    let (trigger, controls) = (words[0], &words[1..]);
    let reply = one(&mut b.rng, REPLY_WORDS);
    let template = one(&mut b.rng, phrases::RULE);
    b.tell(
        s,
        fill(template, &[("trigger", trigger), ("answer", reply)]),
    );
    let span = b.params.span_tokens;
    b.filler(s, span);
    let sentences = distinct(&mut b.rng, phrases::WORD_IN_PASSING, 3);
    let silent = || Scorer::Silent {
        forbidden: vec![reply.to_owned()],
    };
    b.ask(
        s,
        fill(sentences[0], &[("word", controls[0])]),
        "Ha, fair enough.",
        "silent on another word (1)",
        silent(),
    );
    b.ask(
        s,
        fill(sentences[1], &[("word", trigger)]),
        capitalised(reply),
        "fires on the trigger",
        Scorer::Mentions {
            groups: vec![vec![reply.to_owned()]],
            forbidden: vec![],
        },
    );
    b.ask(
        s,
        fill(sentences[2], &[("word", controls[1])]),
        "Ha, fair enough.",
        "silent on another word (2)",
        silent(),
    );
}

/// Type 7: a word to say in the n-th answer after the instruction; silent before, said then.
fn prospective(b: &mut Builder) {
    let s = b.session("main");
    let (ordinal, n) = one(&mut b.rng, ORDINALS);
    let word = one(&mut b.rng, REPLY_WORDS);
    let count = number(b, n as u32);
    let template = one(&mut b.rng, phrases::LATER_REPLY);
    b.tell(
        s,
        fill(template, &[("nth", ordinal), ("n", &count), ("word", word)]),
    );
    let per_turn = (b.params.span_tokens / n as u32).min(MAX_MESSAGE_TOKENS);
    // Without filler, small talk, a different line each turn.
    let talk = distinct(&mut b.rng, phrases::CHIT_CHAT, n);
    for i in 1..=n {
        let text = b
            .filler_one(per_turn)
            .unwrap_or_else(|| talk[i - 1].to_owned());
        if i < n {
            b.ask(
                s,
                text,
                "Sure.",
                format!("reply {i} stays silent"),
                Scorer::Silent {
                    forbidden: vec![word.to_owned()],
                },
            );
        } else {
            b.ask(
                s,
                text,
                format!("Sure. {}", capitalised(word)),
                format!("reply {n} says it"),
                Scorer::Mentions {
                    groups: vec![vec![word.to_owned()]],
                    forbidden: vec![],
                },
            );
        }
    }
}

/// The day an episode is asked about, as the question names it: "yesterday", "3 days ago", or
/// its weekday ("on Tuesday") within the week.
fn day_named(b: &mut Builder, told_on: NaiveDate, asked_on: NaiveDate) -> String {
    let days = (asked_on - told_on).num_days();
    let by_weekday = days < 7 && b.rng.random_bool(0.5);
    match days {
        _ if by_weekday => format!("on {}", told_on.format("%A")),
        1 => "yesterday".to_owned(),
        days => format!("{days} days ago"),
    }
}

/// Type 8: a day's two chores in one turn, told without the vocabulary's verbs; a day later, what
/// was done to one thing. Graded by the LLM grader only ([`Scorer::Judged`]).
fn episodic(b: &mut Builder) {
    let s = b.session("main");
    let objects = distinct(&mut b.rng, EPISODE_OBJECTS, 2);
    let episodes = distinct(&mut b.rng, phrases::EPISODES, 2);
    let told_at = b.clock(s);
    let told_on = told_at.date_naive();
    let done: Vec<String> = (0..2)
        .map(|i| fill(one(&mut b.rng, episodes[i].1), &[("o", objects[i])]))
        .collect();
    let template = one(&mut b.rng, phrases::DAY_OF_CHORES);
    b.tell(s, fill(template, &[("a", &done[0]), ("b", &done[1])]));
    let span = b.params.span_tokens;
    b.filler(s, span);
    let asked_on = b.advance_to(s, told_at + Duration::hours(24)).date_naive();
    let when = day_named(b, told_on, asked_on);
    let template = one(&mut b.rng, phrases::ASK_EPISODE);
    let expectation = format!(
        "it says what the user did to the {} on {}: {}, in any words that mean that. It must not say that the user {} it (that was done to the {}).",
        objects[0],
        told_on.format("%A, %-d %B %Y"),
        episodes[0].2,
        episodes[1].0,
        objects[1],
    );
    b.ask(
        s,
        fill(template, &[("o", objects[0]), ("when", &when)]),
        format!("You {} the {}.", episodes[0].0, objects[0]),
        "yesterday's episode",
        Scorer::Judged { expectation },
    );
}

/// "in four days", "this Thursday", "the day after tomorrow": `days` (2 to 6) after `from`.
fn days_ahead(b: &mut Builder, from: NaiveDate, days: i64) -> String {
    let date = from + Duration::days(days);
    match b.rng.random_range(0..3u8) {
        0 if days == 2 => "the day after tomorrow".to_owned(),
        0 | 1 => format!("this {}", date.format("%A")),
        _ => format!("in {} days", number(b, days as u32)),
    }
}

/// Type 9: an event "this Thursday" or "in four days"; days after it, its date.
fn relative_date(b: &mut Builder) {
    let s = b.session("main");
    let event = one(&mut b.rng, EVENTS);
    let days = b.rng.random_range(2..=6i64);
    let today = b.start().date_naive();
    let date = today + Duration::days(days);
    let when = days_ahead(b, today, days);
    let template = one(&mut b.rng, phrases::UPCOMING);
    b.tell(s, fill(template, &[("event", event), ("when", &when)]));
    let span = b.params.span_tokens;
    b.filler(s, span);
    b.advance(s, Duration::days(days + 2));
    let template = one(&mut b.rng, phrases::ASK_DATE);
    b.ask(
        s,
        fill(template, &[("event", event)]),
        format!(
            "It was on {} ({}).",
            date.format("%B %-d, %Y"),
            date.format("%Y-%m-%d")
        ),
        "absolute date",
        Scorer::Date { date },
    );
}

/// Type 10: a nudge asked for in so many hours, the task in other words; silent before it is
/// due, named in the first reply after.
fn reminder(b: &mut Builder) {
    let s = b.session("main");
    let (key, task) = one(&mut b.rng, phrases::TASKS);
    let said_at = b.clock(s);
    let filler = b.filler_texts(b.params.span_tokens);
    let filler_minutes = (filler.len() as i64 + 1) * TURN_GAP_SECONDS / 60;
    let hours = (filler_minutes + 59) / 60 + b.rng.random_range(2..=6i64);
    let due = said_at + Duration::hours(hours);
    let talk = distinct(&mut b.rng, phrases::CHIT_CHAT, 2);
    let template = one(&mut b.rng, phrases::REMINDER);
    b.tell(
        s,
        fill(template, &[("task", task), ("h", &hours.to_string())]),
    );
    for text in filler {
        b.tell(s, text);
    }
    b.advance_to(s, due - Duration::hours(1));
    b.ask(
        s,
        talk[0],
        "Nice.",
        "silent before due",
        Scorer::Silent {
            forbidden: vec![key.to_owned()],
        },
    );
    b.advance_to(s, due + Duration::hours(1));
    b.ask(
        s,
        talk[1],
        format!("Don't forget: {task}."),
        "fires when due",
        Scorer::Mentions {
            groups: vec![vec![key.to_owned()]],
            forbidden: vec![],
        },
    );
}

/// Type 11: one session per horizon: a fact in passing, a jump, the question in other words.
fn retention(b: &mut Builder) {
    let chosen = attributes(&mut b.rng, 4);
    let per_session = b.params.span_tokens / 4;
    for ((label, jump), attribute) in super::time::horizons().into_iter().zip(chosen) {
        let s = b.session(&format!("after-{label}"));
        let value = one(&mut b.rng, attribute.values);
        let told_at = b.clock(s);
        let said = tell_value(b, attribute, value);
        b.tell(s, said);
        b.filler(s, per_session);
        b.advance_to(s, told_at + jump);
        let asked = question(b, attribute);
        b.ask(
            s,
            asked,
            answer(value),
            format!("after {label}"),
            recalls(value, attribute),
        );
    }
}

/// Type 12: two facts in one turn, a third never told; asked about the third, in other words.
fn abstention(b: &mut Builder) {
    let s = b.session("main");
    let chosen = attributes(&mut b.rng, 3);
    let span = b.params.span_tokens;
    let clauses: Vec<String> = chosen[..2]
        .iter()
        .map(|attribute| {
            let value = one(&mut b.rng, attribute.values);
            fill(
                one(&mut b.rng, phrases_of(attribute).clause),
                &[("v", value)],
            )
        })
        .collect();
    let template = one(&mut b.rng, phrases::TWO_FACTS);
    b.tell(s, fill(template, &[("a", &clauses[0]), ("b", &clauses[1])]));
    b.filler(s, span);
    let never = chosen[2];
    let asked = question(b, never);
    b.ask(
        s,
        asked,
        "I don't know, you haven't told me that.",
        "no invention",
        Scorer::Abstains {
            forbidden: strings(never.values),
        },
    );
}

/// Type 13: A and B each give a value in passing; A is reset. A forgets, B keeps its own, a fresh
/// C knows none.
fn reset_isolation(b: &mut Builder) {
    let a = b.session("A");
    let bs = b.session("B");
    let c = b.session("C");
    let attribute = attributes(&mut b.rng, 1)[0];
    let values = distinct(&mut b.rng, attribute.values, 2);
    let (va, vb) = (values[0], values[1]);
    let dont_know = "I don't know, you haven't told me that.";
    let said = tell_value(b, attribute, va);
    b.tell(a, said);
    let said = tell_value(b, attribute, vb);
    b.tell(bs, said);
    let span = b.params.span_tokens;
    b.filler(bs, span);
    b.reset(a);
    let both = vec![va.to_owned(), vb.to_owned()];
    let asked = question(b, attribute);
    b.ask(
        a,
        asked.clone(),
        dont_know,
        "A forgets after reset",
        Scorer::Abstains {
            forbidden: both.clone(),
        },
    );
    b.ask(
        bs,
        asked.clone(),
        answer(vb),
        "B untouched",
        Scorer::Mentions {
            groups: vec![vec![vb.to_owned()]],
            forbidden: vec![va.to_owned()],
        },
    );
    b.ask(
        c,
        asked,
        dont_know,
        "fresh C sees nothing",
        Scorer::Abstains { forbidden: both },
    );
}

/// Type 14: injected memories in the user's own words; of two for one key, the newer wins,
/// although it is sent first. Asked in other words.
fn injected_recall(b: &mut Builder) {
    let s = b.session("main");
    let chosen = attributes(&mut b.rng, 2);
    let (conflicted, plain) = (chosen[0], chosen[1]);
    let values = distinct(&mut b.rng, conflicted.values, 2);
    let (old, new) = (values[0], values[1]);
    let other = one(&mut b.rng, plain.values);
    let start = b.start();
    let texts = [
        tell_value(b, conflicted, new),
        tell_value(b, conflicted, old),
        tell_value(b, plain, other),
    ];
    let fact = |text: &str, attribute: &Attribute, days_ago: i64| InjectFact {
        text: text.to_owned(),
        key: Some(attribute.name.to_owned()),
        observed_at: Some(start - Duration::days(days_ago)),
        importance: Some(0.8),
        ..InjectFact::default()
    };
    b.inject(
        s,
        vec![
            fact(&texts[0], conflicted, 1),
            fact(&texts[1], conflicted, 2),
            fact(&texts[2], plain, 1),
        ],
    );
    let span = b.params.span_tokens;
    b.filler(s, span);
    let asked = question(b, conflicted);
    b.ask(
        s,
        asked,
        answer(new),
        "newer injected value wins",
        Scorer::Mentions {
            groups: vec![vec![new.to_owned()]],
            forbidden: vec![old.to_owned()],
        },
    );
    let asked = question(b, plain);
    b.ask(
        s,
        asked,
        answer(other),
        "injected fact recalled",
        Scorer::Mentions {
            groups: vec![vec![other.to_owned()]],
            forbidden: vec![],
        },
    );
}

#[cfg(test)]
mod tests;
