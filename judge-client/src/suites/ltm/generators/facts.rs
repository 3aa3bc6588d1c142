//! Facts told in conversation and asked back: needle, update, lists, multi-hop, abstention.

use rand::RngExt;

use super::{attributes, distinct, join_and, one, others, strings};
use crate::suites::ltm::scoring::{ListItem, Scorer};
use crate::suites::ltm::script::Builder;
use crate::suites::ltm::vocab::{CITIES, GROCERIES, NAMES, RELATIONS};

/// Type 1: One fact, filler, the question.
pub fn needle(b: &mut Builder) {
    let s = b.session("main");
    let attribute = attributes(&mut b.rng, 1)[0];
    let value = one(&mut b.rng, attribute.values);
    b.tell(s, format!("My {} is {value}.", attribute.name));
    let span = b.params.span_tokens;
    b.filler(s, span);
    b.ask(
        s,
        format!("What is my {}?", attribute.name),
        format!("Your {} is {value}.", attribute.name),
        "recall",
        Scorer::Mentions {
            groups: vec![vec![value.to_owned()]],
            forbidden: others(attribute, value),
        },
    );
}

/// Type 2: A value, filler, a newer value, filler, the question: only the newer value passes.
pub fn knowledge_update(b: &mut Builder) {
    let s = b.session("main");
    let attribute = attributes(&mut b.rng, 1)[0];
    let values = distinct(&mut b.rng, attribute.values, 2);
    let (old, new) = (values[0], values[1]);
    let span = b.params.span_tokens;
    b.tell(s, format!("My {} is {old}.", attribute.name));
    b.filler(s, span / 2);
    b.tell(s, format!("My {} is now {new}.", attribute.name));
    b.filler(s, span - span / 2);
    b.ask(
        s,
        format!("What is my {}?", attribute.name),
        format!("Your {} is {new}.", attribute.name),
        "latest value",
        Scorer::Mentions {
            groups: vec![vec![new.to_owned()]],
            forbidden: others(attribute, new),
        },
    );
}

/// Type 3: Several list members told apart, asked back together; scored by set overlap.
pub fn accumulated_list(b: &mut Builder) {
    let s = b.session("main");
    let k = b.rng.random_range(3..=4usize);
    let cities = strings(&distinct(&mut b.rng, CITIES, k));
    let span = b.params.span_tokens;
    for city in &cities {
        b.tell(s, format!("Remember that I have visited {city}."));
        b.filler(s, span / k as u32);
    }
    b.ask(
        s,
        "Which cities have I visited?",
        format!("You have visited {}.", join_and(&cities)),
        "all cities",
        Scorer::SetOverlap {
            expected: cities.clone(),
            universe: strings(CITIES),
        },
    );
}

fn quantity_phrase(quantity: u32, (singular, plural): (&str, &str)) -> String {
    if quantity == 1 {
        format!("1 {singular}")
    } else {
        format!("{quantity} {plural}")
    }
}

/// Type 4: Adds with quantities, an increase, a removal; the final list is asked back.
pub fn shopping_list(b: &mut Builder) {
    let s = b.session("main");
    let items = distinct(&mut b.rng, GROCERIES, 4);
    let quantities: Vec<u32> = (0..4).map(|_| b.rng.random_range(1..=4u32)).collect();
    let more = b.rng.random_range(1..=3u32);
    let span = b.params.span_tokens;
    for i in 0..3 {
        b.tell(
            s,
            format!(
                "Add {} to my shopping list.",
                quantity_phrase(quantities[i], items[i])
            ),
        );
    }
    b.filler(s, span / 3);
    b.tell(
        s,
        format!(
            "Add {} more {} to my shopping list.",
            more,
            if more == 1 { items[1].0 } else { items[1].1 }
        ),
    );
    b.tell(
        s,
        format!("Remove the {} from my shopping list.", items[0].1),
    );
    b.filler(s, span / 3);
    b.tell(
        s,
        format!(
            "Add {} to my shopping list.",
            quantity_phrase(quantities[3], items[3])
        ),
    );
    b.filler(s, span - 2 * (span / 3));
    let remaining = [
        (items[1], quantities[1] + more),
        (items[2], quantities[2]),
        (items[3], quantities[3]),
    ];
    let item = |(singular, plural): (&str, &str), quantity: u32| ListItem {
        singular: singular.to_owned(),
        plural: plural.to_owned(),
        quantity,
    };
    let listed: Vec<String> = remaining
        .iter()
        .map(|(i, q)| quantity_phrase(*q, *i))
        .collect();
    b.ask(
        s,
        "What is on my shopping list?",
        format!("Your shopping list: {}.", join_and(&listed)),
        "final list",
        Scorer::ShoppingList {
            items: remaining.iter().map(|(i, q)| item(*i, *q)).collect(),
            removed: vec![item(items[0], quantities[0])],
        },
    );
}

/// Type 5: Two people, where each lives, and a question that needs both facts about one of them.
pub fn multi_hop(b: &mut Builder) {
    let s = b.session("main");
    let relations = distinct(&mut b.rng, RELATIONS, 2);
    let names = distinct(&mut b.rng, NAMES, 2);
    let cities = distinct(&mut b.rng, CITIES, 2);
    let span = b.params.span_tokens;
    for i in 0..2 {
        b.tell(s, format!("My {} is called {}.", relations[i], names[i]));
    }
    b.filler(s, span / 2);
    for i in 0..2 {
        b.tell(s, format!("{} lives in {}.", names[i], cities[i]));
    }
    b.filler(s, span - span / 2);
    b.ask(
        s,
        format!("In which city does my {} live?", relations[0]),
        format!("Your {} {} lives in {}.", relations[0], names[0], cities[0]),
        "two hops",
        Scorer::Mentions {
            groups: vec![vec![cities[0].to_owned()]],
            forbidden: vec![cities[1].to_owned()],
        },
    );
}

/// Type 12: Two facts told, a third never: asked about the third, the agent must not invent.
pub fn abstention(b: &mut Builder) {
    let s = b.session("main");
    let chosen = attributes(&mut b.rng, 3);
    let span = b.params.span_tokens;
    for attribute in &chosen[..2] {
        let value = one(&mut b.rng, attribute.values);
        b.tell(s, format!("My {} is {value}.", attribute.name));
    }
    b.filler(s, span);
    let never = chosen[2];
    b.ask(
        s,
        format!("What is my {}?", never.name),
        format!("I don't know; you have not told me your {}.", never.name),
        "no invention",
        Scorer::Abstains {
            forbidden: strings(never.values),
        },
    );
}
