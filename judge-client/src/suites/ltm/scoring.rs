//! Deterministic scorers: a reply in, a score in [0, 1] and a readable verdict out. No model is
//! asked; matching is on whole words after normalisation (lower case, punctuation removed,
//! apostrophes dropped so that "don't" and "dont" agree).

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::text::{mentions, mentions_date, normalize};

/// An item of a shopping list, in both grammatical numbers, with its quantity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListItem {
    pub singular: String,
    pub plural: String,
    pub quantity: u32,
}

/// How one reply is scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Scorer {
    /// Every group must be mentioned (any one term of a group counts); a mention of any
    /// `forbidden` term (a stale or wrong value) fails the reply outright.
    Mentions {
        groups: Vec<Vec<String>>,
        forbidden: Vec<String>,
    },
    /// None of `forbidden` may be mentioned (a rule or reminder that must not fire yet).
    Silent { forbidden: Vec<String> },
    /// F1 overlap between `expected` and the members of `universe` that the reply mentions.
    SetOverlap {
        expected: Vec<String>,
        universe: Vec<String>,
    },
    /// The reply must say it does not know and mention none of `forbidden` (invented values).
    Abstains { forbidden: Vec<String> },
    /// Each of `items` mentioned with its quantity; `removed` items not mentioned at all.
    ShoppingList {
        items: Vec<ListItem>,
        removed: Vec<ListItem>,
    },
    /// The reply names this calendar date.
    Date { date: NaiveDate },
    /// Only a model can tell whether the reply does what `expectation` says (a reply in the
    /// user's own words, which no word list covers): the rules leave it undecided, the LLM
    /// grader (`--grader-endpoint`) decides it, and without one the test is not gradable.
    Judged { expectation: String },
}

/// The verdict on one reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub score: f64,
    pub passed: bool,
    /// The rules could not tell (e.g. the old and the new value in one clause with a word of
    /// change): `detail` starts with "undecided:" and says why; an LLM grader can settle it.
    pub undecided: bool,
    pub detail: String,
}

impl Verdict {
    fn new(score: f64, detail: String) -> Self {
        Self {
            score,
            passed: score >= 1.0 - 1e-9,
            undecided: false,
            detail,
        }
    }

    fn undecided(score: f64, why: String) -> Self {
        Self {
            undecided: true,
            detail: format!("undecided: {why}"),
            ..Self::new(score, String::new())
        }
    }
}

/// Words that mark a clause as speaking of a value that no longer holds, or denying one:
/// "you used to like red", "it was red before", "not red", "red is no longer ...".
const SUPERSEDED_MARKERS: &[&str] = &[
    "used to",
    "previously",
    "formerly",
    "before",
    "earlier",
    "no longer",
    "anymore",
    "any more",
    "changed from",
    "switched from",
    "moved from",
    "instead of",
    "rather than",
    "was",
    "were",
    "had been",
    "originally",
    "initially",
    "at first",
    "old",
    "not",
    "isnt",
    "wasnt",
];

/// The clauses of a reply, normalised: split at sentence ends, commas, semicolons, colons,
/// parentheses, dashes, and at "but", "whereas", "although" and "though", where capable models turn from an
/// old value to the new one ("you used to like red, but now it is teal").
fn clauses(reply: &str) -> Vec<String> {
    let mut out = Vec::new();
    for piece in reply.split(['.', ',', ';', ':', '!', '?', '\n', '(', ')', '—', '–']) {
        let normalized = normalize(piece);
        let mut current = Vec::new();
        for word in normalized.split(' ').filter(|w| !w.is_empty()) {
            if matches!(word, "but" | "whereas" | "although" | "though" | "however")
                && !current.is_empty()
            {
                out.push(current.join(" "));
                current.clear();
            }
            current.push(word);
        }
        if !current.is_empty() {
            out.push(current.join(" "));
        }
    }
    out
}

fn clause_mentions(clause: &str, term: &str) -> bool {
    let term = normalize(term);
    !term.is_empty() && format!(" {clause} ").contains(&format!(" {term} "))
}

fn superseded(clause: &str) -> bool {
    SUPERSEDED_MARKERS
        .iter()
        .any(|m| format!(" {clause} ").contains(&format!(" {m} ")))
}

const ABSTENTION_PHRASES: &[&str] = &[
    "dont know",
    "do not know",
    "not sure",
    "no idea",
    "havent told",
    "have not told",
    "never told",
    "didnt tell",
    "did not tell",
    "never mentioned",
    "not mentioned",
    "havent mentioned",
    "have not mentioned",
    "no record",
    "dont have",
    "do not have",
    "no information",
    "cannot recall",
    "cant recall",
    "dont recall",
    "do not recall",
    "dont remember",
    "do not remember",
    "not aware",
    "cannot find",
    "cant find",
    "nothing about",
    "didnt mention",
    "did not mention",
    "havent shared",
    "have not shared",
    "didnt share",
    "did not share",
    "havent said",
    "have not said",
    "unable to recall",
    "no way of knowing",
    "cannot tell",
    "cant tell",
    "no memory of",
    "not something you",
    "no mention",
    "couldnt find",
    "could not find",
    "unable to find",
    "not provided",
    "havent provided",
    "have not provided",
    "didnt provide",
    "did not provide",
    "dont see",
    "do not see",
    "not in my memory",
    "dont have access",
    "not been told",
    "wasnt told",
    "was not told",
    "not been mentioned",
    "hasnt come up",
    "has not come up",
];

/// Whether the reply says, in one of the usual ways, that it does not know.
pub fn abstains(text: &str) -> bool {
    ABSTENTION_PHRASES.iter().any(|p| mentions(text, p))
}

const NUMBER_WORDS: &[&str] = &[
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve",
];

fn quantity_mentioned(text: &str, item: &ListItem) -> bool {
    let mut numbers = vec![item.quantity.to_string()];
    if let Some(word) = NUMBER_WORDS.get(item.quantity as usize) {
        numbers.push((*word).to_owned());
    }
    if item.quantity == 1 {
        // "an onion", "a lemon": how a list in prose gives one of something.
        numbers.extend(["a".to_owned(), "an".to_owned()]);
    }
    [&item.singular, &item.plural].iter().any(|name| {
        numbers.iter().any(|n| {
            [
                format!("{n} {name}"),
                format!("{n} x {name}"),
                format!("{n}x {name}"),
                format!("{name} x{n}"),
                format!("{name} x {n}"),
                format!("{name} {n}"),
            ]
            .iter()
            .any(|form| mentions(text, form))
        })
    })
}

fn item_mentioned(text: &str, item: &ListItem) -> bool {
    mentions(text, &item.singular) || mentions(text, &item.plural)
}

/// [`Scorer::Mentions`]. A wrong or stale value fails the reply only where it is given as the
/// answer: a clause that speaks of it as past or denies it ("you used to like red, but now it
/// is teal") does not count, and an expected term counts only where it is not itself so marked.
/// A clause that holds both the expected and a stale term beside a word of change ("changed
/// from red to teal") is passed as undecided: the rules cannot tell which one it calls current.
fn score_mentions(reply: &str, groups: &[Vec<String>], forbidden: &[String]) -> Verdict {
    let clauses = clauses(reply);
    let stale_in = |c: &String| forbidden.iter().any(|f| clause_mentions(c, f));
    let stale: Vec<&String> = forbidden
        .iter()
        .filter(|f| {
            clauses
                .iter()
                .any(|c| clause_mentions(c, f) && !superseded(c))
        })
        .collect();
    if !stale.is_empty() {
        return Verdict::new(0.0, format!("mentions wrong or stale {stale:?}"));
    }
    // Each group: given as the answer, given only beside a stale term in a clause with a word of
    // change (undecided), or missing.
    let mut missing = Vec::new();
    let mut mixed = Vec::new();
    for group in groups {
        let in_clause = |pred: &dyn Fn(&String) -> bool| {
            clauses
                .iter()
                .any(|c| pred(c) && group.iter().any(|t| clause_mentions(c, t)))
        };
        if in_clause(&|c| !superseded(c)) {
            continue;
        }
        if in_clause(&|c| superseded(c) && stale_in(c)) {
            mixed.push(group.join("/"));
        } else {
            missing.push(group.join("/"));
        }
    }
    let found = groups.len() - missing.len();
    let score = if groups.is_empty() {
        1.0
    } else {
        found as f64 / groups.len() as f64
    };
    let past: Vec<&String> = forbidden.iter().filter(|f| mentions(reply, f)).collect();
    if !missing.is_empty() {
        let denied: Vec<&String> = missing
            .iter()
            .filter(|m| m.split('/').any(|t| mentions(reply, t)))
            .collect();
        if denied.is_empty() {
            return Verdict::new(score, format!("missing {missing:?}"));
        }
        return Verdict::new(
            score,
            format!("missing {missing:?} (mentioned only as past or denied: {denied:?})"),
        );
    }
    if !mixed.is_empty() {
        return Verdict::undecided(
            score,
            format!("{mixed:?} and {past:?} stand in one clause with a word of change"),
        );
    }
    if past.is_empty() {
        Verdict::new(score, "all expected terms mentioned".to_owned())
    } else {
        Verdict::new(
            score,
            format!("all expected terms mentioned; {past:?} only as past or denied"),
        )
    }
}

/// Terms joined as "a, b and c".
fn listed(terms: &[String]) -> String {
    match terms {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

impl Scorer {
    /// Whether only the LLM grader can decide this check ([`Scorer::Judged`]).
    pub fn needs_grader(&self) -> bool {
        matches!(self, Scorer::Judged { .. })
    }

    /// What a correct reply does, in words a model grading it reads (the LLM grader's brief).
    pub fn expectation(&self) -> String {
        match self {
            Scorer::Mentions { groups, forbidden } => {
                let wanted: Vec<String> = groups
                    .iter()
                    .map(|g| match g.as_slice() {
                        [first, rest @ ..] if !rest.is_empty() => {
                            format!("{first} (or {})", rest.join(", "))
                        }
                        _ => g.concat(),
                    })
                    .collect();
                let mut out = format!("it gives {} as the current answer.", listed(&wanted));
                if !forbidden.is_empty() {
                    out.push_str(&format!(
                        " It must not give {} as the current answer (saying it was so before, or is not so, is fine).",
                        listed(forbidden)
                    ));
                }
                out
            }
            Scorer::Silent { forbidden } => format!(
                "it does not mention {} at all (it is not yet time for it).",
                listed(forbidden)
            ),
            Scorer::SetOverlap { expected, .. } => {
                format!(
                    "it names {}, and nothing else of the kind.",
                    listed(expected)
                )
            }
            Scorer::Abstains { forbidden } => {
                let mut out = "it says it does not know (the user never said).".to_owned();
                if !forbidden.is_empty() {
                    out.push_str(&format!(
                        " It must not offer {} as the answer.",
                        listed(forbidden)
                    ));
                }
                out
            }
            Scorer::ShoppingList { items, removed } => {
                let wanted: Vec<String> = items
                    .iter()
                    .map(|i| format!("{} {}", i.quantity, i.plural))
                    .collect();
                let mut out = format!("it lists {}.", listed(&wanted));
                if !removed.is_empty() {
                    let gone: Vec<String> = removed.iter().map(|i| i.plural.clone()).collect();
                    out.push_str(&format!(" It must not list {} (removed).", listed(&gone)));
                }
                out
            }
            Scorer::Date { date } => {
                format!(
                    "it names the date {} ({date}).",
                    date.format("%A, %-d %B %Y")
                )
            }
            Scorer::Judged { expectation } => expectation.clone(),
        }
    }

    pub fn score(&self, reply: &str) -> Verdict {
        match self {
            Scorer::Mentions { groups, forbidden } => score_mentions(reply, groups, forbidden),
            Scorer::Silent { forbidden } => {
                let fired: Vec<&String> = forbidden.iter().filter(|f| mentions(reply, f)).collect();
                if fired.is_empty() {
                    Verdict::new(1.0, "stayed silent as it should".to_owned())
                } else {
                    Verdict::new(0.0, format!("fired too early: mentions {fired:?}"))
                }
            }
            Scorer::SetOverlap { expected, universe } => {
                let predicted: Vec<&String> =
                    universe.iter().filter(|u| mentions(reply, u)).collect();
                let hits = predicted.iter().filter(|p| expected.contains(p)).count();
                let f1 = if predicted.is_empty() || expected.is_empty() {
                    0.0
                } else {
                    let precision = hits as f64 / predicted.len() as f64;
                    let recall = hits as f64 / expected.len() as f64;
                    if hits == 0 {
                        0.0
                    } else {
                        2.0 * precision * recall / (precision + recall)
                    }
                };
                Verdict::new(
                    f1,
                    format!(
                        "{hits} of {} expected, {} mentioned in all (F1 {f1:.2})",
                        expected.len(),
                        predicted.len()
                    ),
                )
            }
            Scorer::Abstains { forbidden } => {
                let invented: Vec<&String> =
                    forbidden.iter().filter(|f| mentions(reply, f)).collect();
                if !invented.is_empty() {
                    Verdict::new(0.0, format!("invented {invented:?}"))
                } else if abstains(reply) {
                    Verdict::new(1.0, "said it does not know".to_owned())
                } else {
                    Verdict::new(0.0, "did not say it does not know".to_owned())
                }
            }
            Scorer::ShoppingList { items, removed } => {
                let total = items.len() + removed.len();
                let mut problems = Vec::new();
                let mut right = 0usize;
                for item in items {
                    if quantity_mentioned(reply, item) {
                        right += 1;
                    } else {
                        problems.push(format!("{} {} missing", item.quantity, item.plural));
                    }
                }
                for item in removed {
                    if item_mentioned(reply, item) {
                        problems.push(format!("removed {} still listed", item.plural));
                    } else {
                        right += 1;
                    }
                }
                let score = if total == 0 {
                    1.0
                } else {
                    right as f64 / total as f64
                };
                let detail = if problems.is_empty() {
                    "list exactly right".to_owned()
                } else {
                    problems.join("; ")
                };
                Verdict::new(score, detail)
            }
            Scorer::Date { date } => {
                if mentions_date(reply, *date) {
                    Verdict::new(1.0, format!("names {date}"))
                } else {
                    Verdict::new(0.0, format!("does not name {date}"))
                }
            }
            // Never a score of the rules' own: 0 until the grader decides.
            Scorer::Judged { .. } => {
                Verdict::undecided(0.0, "only the LLM grader can grade this check".to_owned())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    fn item(singular: &str, plural: &str, quantity: u32) -> ListItem {
        ListItem {
            singular: singular.into(),
            plural: plural.into(),
            quantity,
        }
    }

    #[test]
    fn normalisation_and_whole_word_matching() {
        assert_eq!(normalize("  Don't   KNOW, teal!! "), "dont know teal");
        assert!(mentions("It is Teal.", "teal"));
        assert!(!mentions("It is teala.", "teal"));
        assert!(!mentions("steal", "teal"));
        assert!(mentions("your pet’s name is Biscuit", "pet's name"));
        assert!(!mentions("anything", ""));
    }

    #[test]
    fn mentions_right_wrong_and_borderline() {
        let scorer = Scorer::Mentions {
            groups: vec![s(&["teal"])],
            forbidden: s(&["crimson"]),
        };
        assert!(scorer.score("Your favourite colour is teal.").passed);
        let wrong = scorer.score("Your favourite colour is amber.");
        assert!(!wrong.passed);
        assert_eq!(wrong.score, 0.0);
        // Borderline: the stale value given as current next to the right one is a failure, not
        // half a point. (The old value told as past passes: see
        // `replies_as_capable_models_phrase_them`.)
        let both = scorer.score("It is crimson, or maybe teal.");
        assert!(!both.passed);
        assert_eq!(both.score, 0.0);
        // Borderline: a word that merely contains the value does not count.
        assert!(!scorer.score("Tealish, maybe.").passed);
        let two = Scorer::Mentions {
            groups: vec![s(&["lisbon"]), s(&["ana", "your sister"])],
            forbidden: vec![],
        };
        let half = two.score("Lisbon.");
        assert_eq!(half.score, 0.5);
        assert!(!half.passed);
        assert!(two.score("Your sister lives in Lisbon.").passed);
    }

    /// Replies phrased as large chat models phrase them: hedges, the old value told as past
    /// while the new one is given, denials, dates in words, lists in prose, refusals that
    /// explain themselves.
    #[test]
    fn replies_as_capable_models_phrase_them() {
        let colour = Scorer::Mentions {
            groups: vec![s(&["teal"])],
            forbidden: s(&["crimson"]),
        };
        for reply in [
            "You used to like crimson, but now your favourite colour is teal.",
            "It was crimson, now it is teal.",
            "Your favourite colour is teal (it was crimson before).",
            "It's teal, not crimson.",
            "Teal. You mentioned crimson earlier, but you changed your mind.",
            "I think your favourite colour is probably teal, though I can't be completely sure.",
        ] {
            let verdict = colour.score(reply);
            assert!(
                verdict.passed && !verdict.undecided,
                "{reply:?}: {verdict:?}"
            );
        }
        for reply in [
            "It's crimson, not teal.",
            "Your favourite colour is crimson. It used to be teal.",
            "Crimson, I believe.",
        ] {
            let verdict = colour.score(reply);
            assert!(!verdict.passed, "{reply:?}: {verdict:?}");
        }
        // Both values in one clause with a word of change: the rules cannot tell which one is
        // given as current, and say so.
        let changed = colour.score("Your favourite colour changed from crimson to teal.");
        assert!(changed.undecided, "{changed:?}");
        assert!(changed.detail.starts_with("undecided:"), "{changed:?}");
        // The expected value only denied is missing, and the verdict says why.
        let denied = colour.score("It is definitely not teal.");
        assert!(!denied.passed);
        assert!(
            denied.detail.contains("only as past or denied"),
            "{denied:?}"
        );

        let date = NaiveDate::from_ymd_opt(2026, 3, 21).unwrap();
        for reply in [
            "Your flight was on the twenty-first of March.",
            "It was on March the twenty-first, 2026.",
            "That was March twenty first.",
            "On Saturday, March 21st.",
        ] {
            assert!(mentions_date(reply, date), "{reply:?}");
        }
        let fifth = NaiveDate::from_ymd_opt(2026, 3, 5).unwrap();
        assert!(mentions_date("The fifth of March.", fifth));
        assert!(!mentions_date("The fifth of April.", fifth));
        assert!(!mentions_date("March the twenty-fifth.", fifth));
        assert!(!mentions_date("March the fifth, 2025.", fifth));

        let list = Scorer::ShoppingList {
            items: vec![item("apple", "apples", 2), item("onion", "onions", 1)],
            removed: vec![item("egg", "eggs", 3)],
        };
        let prose =
            list.score("You still need two apples and an onion; you already took the eggs off.");
        // The removed eggs are named while saying they are off the list: a rule cannot tell a
        // list from its explanation, so this stays a (documented) miss of one item in three.
        assert!((prose.score - 2.0 / 3.0).abs() < 1e-9, "{prose:?}");
        assert!(list.score("On your list: two apples and an onion.").passed);

        let abstain = Scorer::Abstains {
            forbidden: s(&["ana"]),
        };
        for reply in [
            "I'm sorry, but I don't have any information about your sister's name. You haven't mentioned it yet.",
            "There's no mention of your sister's name in our conversation so far.",
            "I couldn't find anything about that: it hasn't come up between us.",
        ] {
            assert!(abstain.score(reply).passed, "{reply:?}");
        }
    }

    #[test]
    fn silent_right_wrong_and_borderline() {
        let scorer = Scorer::Silent {
            forbidden: s(&["bingo"]),
        };
        assert!(scorer.score("Noted.").passed);
        assert!(!scorer.score("Bingo!").passed);
        assert!(scorer.score("Bingoes are not a thing.").passed);
    }

    #[test]
    fn set_overlap_right_wrong_and_borderline() {
        let scorer = Scorer::SetOverlap {
            expected: s(&["Lisbon", "Oslo", "Quito"]),
            universe: s(&["Lisbon", "Oslo", "Quito", "Hanoi", "Dublin"]),
        };
        assert!(scorer.score("You visited Lisbon, Oslo and Quito.").passed);
        let wrong = scorer.score("You visited Hanoi.");
        assert_eq!(wrong.score, 0.0);
        let partial = scorer.score("Lisbon and Oslo.");
        assert!((partial.score - 0.8).abs() < 1e-9, "{partial:?}");
        assert!(!partial.passed);
        let extra = scorer.score("Lisbon, Oslo, Quito and Dublin.");
        assert!((extra.score - 6.0 / 7.0).abs() < 1e-9, "{extra:?}");
        assert_eq!(scorer.score("I don't know.").score, 0.0);
    }

    #[test]
    fn abstention_right_wrong_and_borderline() {
        let scorer = Scorer::Abstains {
            forbidden: s(&["tennis", "rowing"]),
        };
        assert!(scorer.score("I don't know; you have not told me.").passed);
        assert!(
            scorer
                .score("You never told me your favourite sport.")
                .passed
        );
        assert!(!scorer.score("Your favourite sport is tennis.").passed);
        // Borderline: hedging and then inventing is still inventing.
        assert!(!scorer.score("I'm not sure, maybe rowing?").passed);
        // Borderline: saying something unrelated is not abstaining.
        assert!(!scorer.score("Noted.").passed);
    }

    #[test]
    fn shopping_list_right_wrong_and_borderline() {
        let scorer = Scorer::ShoppingList {
            items: vec![item("carrot", "carrots", 5), item("egg", "eggs", 1)],
            removed: vec![item("apple", "apples", 2)],
        };
        assert!(scorer.score("Your shopping list: 5 carrots, 1 egg.").passed);
        assert!(scorer.score("five carrots and one egg").passed);
        assert!(scorer.score("carrots: 5, eggs: 1").passed);
        assert!(scorer.score("- 5x carrots\n- 1x egg").passed);
        let stale = scorer.score("5 carrots, 1 egg, 2 apples");
        assert!((stale.score - 2.0 / 3.0).abs() < 1e-9);
        // Borderline: the right items without quantities earn only the removal point.
        let no_qty = scorer.score("Carrots and eggs.");
        assert!((no_qty.score - 1.0 / 3.0).abs() < 1e-9, "{no_qty:?}");
        let wrong_qty = scorer.score("3 carrots, 1 egg");
        assert!(!wrong_qty.passed);
    }

    #[test]
    fn dates_right_wrong_and_borderline() {
        let date = NaiveDate::from_ymd_opt(2026, 3, 5).unwrap();
        let scorer = Scorer::Date { date };
        for right in [
            "It was on 2026-03-05.",
            "March 5.",
            "on the 5th of March",
            "Mar 5th, 2026",
            "5 March 2026",
            "Thursday, March 5, 2026",
        ] {
            assert!(scorer.score(right).passed, "{right}");
        }
        for wrong in [
            "March 15",
            "March 4",
            "April 5",
            "March 5, 2025",
            "2026-03-04",
            "in three days",
        ] {
            assert!(!scorer.score(wrong).passed, "{wrong}");
        }
        assert!(mentions_date(
            "Today is July 19, 2031.",
            NaiveDate::from_ymd_opt(2031, 7, 19).unwrap()
        ));
        assert!(!mentions_date(
            "May I help?",
            NaiveDate::from_ymd_opt(2031, 5, 1).unwrap()
        ));
    }
}
