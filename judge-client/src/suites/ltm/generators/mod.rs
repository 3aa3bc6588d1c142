//! One generator per test type, grouped by theme. Each writes plain English user turns following
//! the templates in `LTM_TEMPLATES.md`, and for each scored turn an ideal reply and a scorer.
//! [`heldout`] writes the same tests in other words (`--phrasing heldout`).

pub mod control;
pub mod facts;
pub(crate) mod heldout;
pub mod rules;
pub mod time;

use rand::seq::{IndexedRandom, SliceRandom};
use rand_chacha::ChaCha8Rng;

use super::vocab::{ATTRIBUTES, Attribute};

/// `k` distinct elements of `list`, in a seeded order.
pub(crate) fn distinct<T: Copy>(rng: &mut ChaCha8Rng, list: &[T], k: usize) -> Vec<T> {
    let mut all: Vec<T> = list.to_vec();
    all.shuffle(rng);
    all.truncate(k);
    all
}

pub(crate) fn one<T: Copy>(rng: &mut ChaCha8Rng, list: &[T]) -> T {
    *list.choose(rng).expect("word lists are not empty")
}

/// `k` distinct attributes.
pub(crate) fn attributes(rng: &mut ChaCha8Rng, k: usize) -> Vec<&'static Attribute> {
    let indices = distinct(rng, &(0..ATTRIBUTES.len()).collect::<Vec<_>>(), k);
    indices.into_iter().map(|i| &ATTRIBUTES[i]).collect()
}

/// The values of `attribute` other than `keep`.
pub(crate) fn others(attribute: &Attribute, keep: &str) -> Vec<String> {
    attribute
        .values
        .iter()
        .filter(|v| **v != keep)
        .map(|v| (*v).to_owned())
        .collect()
}

pub(crate) fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// "A", "A and B", "A, B and C".
pub(crate) fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// `text` with its first letter upper-case.
pub(crate) fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}
