//! Deterministic scorers: a reply in, a score in [0, 1] and a readable verdict out. No model is
//! asked; matching is on whole words after normalisation (lower case, punctuation removed,
//! apostrophes dropped so that "don't" and "dont" agree).

use chrono::{Datelike, NaiveDate};
use serde::{Deserialize, Serialize};

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
}

/// The verdict on one reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub score: f64,
    pub passed: bool,
    pub detail: String,
}

impl Verdict {
    fn new(score: f64, detail: String) -> Self {
        Self {
            score,
            passed: score >= 1.0 - 1e-9,
            detail,
        }
    }
}

/// Lower case, alphanumerics kept, apostrophes dropped, everything else a single space.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            out.push(c);
        } else if c == '\'' || c == '’' {
            continue;
        } else if !out.ends_with(' ') {
            out.push(' ');
        }
    }
    out.trim().to_owned()
}

/// Whether `term` occurs in `text` as whole words.
pub fn mentions(text: &str, term: &str) -> bool {
    let term = normalize(term);
    !term.is_empty() && format!(" {} ", normalize(text)).contains(&format!(" {term} "))
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

const MONTHS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

fn month_of(token: &str) -> Option<u32> {
    MONTHS
        .iter()
        .position(|m| *m == token || (token.len() >= 3 && m.starts_with(token) && token != "ma"))
        .map(|i| i as u32 + 1)
}

fn day_of(token: &str) -> Option<u32> {
    let digits = ["st", "nd", "rd", "th"]
        .iter()
        .find_map(|s| token.strip_suffix(s))
        .unwrap_or(token);
    if digits.is_empty() || digits.len() > 2 || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

/// Whether the reply names `date`: `2026-03-05`, `March 5`, `5 March`, `5th of March`, `Mar 5th`,
/// with an optional year that must then be the right one.
pub fn mentions_date(text: &str, date: NaiveDate) -> bool {
    if text.contains(&date.format("%Y-%m-%d").to_string()) {
        return true;
    }
    let normalized = normalize(text);
    let tokens: Vec<&str> = normalized.split(' ').collect();
    let year_ok = |after: usize| {
        tokens
            .get(after)
            .filter(|t| t.len() == 4 && t.chars().all(|c| c.is_ascii_digit()))
            .is_none_or(|t| *t == date.year().to_string())
    };
    for i in 0..tokens.len() {
        if month_of(tokens[i]) != Some(date.month()) {
            continue;
        }
        // "March 5" / "March 5th, 2026"
        if tokens.get(i + 1).and_then(|t| day_of(t)) == Some(date.day()) && year_ok(i + 2) {
            return true;
        }
        // "5 March" / "5th of March"
        let before = match i.checked_sub(1).map(|j| tokens[j]) {
            Some("of") => i.checked_sub(2).map(|j| tokens[j]),
            other => other,
        };
        if before.and_then(day_of) == Some(date.day()) && year_ok(i + 1) {
            return true;
        }
    }
    false
}

impl Scorer {
    pub fn score(&self, reply: &str) -> Verdict {
        match self {
            Scorer::Mentions { groups, forbidden } => {
                let stale: Vec<&String> = forbidden.iter().filter(|f| mentions(reply, f)).collect();
                let missing: Vec<String> = groups
                    .iter()
                    .filter(|g| !g.iter().any(|t| mentions(reply, t)))
                    .map(|g| g.join("/"))
                    .collect();
                if !stale.is_empty() {
                    return Verdict::new(0.0, format!("mentions wrong or stale {stale:?}"));
                }
                let found = groups.len() - missing.len();
                let score = if groups.is_empty() {
                    1.0
                } else {
                    found as f64 / groups.len() as f64
                };
                let detail = if missing.is_empty() {
                    "all expected terms mentioned".to_owned()
                } else {
                    format!("missing {missing:?}")
                };
                Verdict::new(score, detail)
            }
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
        // Borderline: the stale value next to the right one is a failure, not half a point.
        let both = scorer.score("It was crimson, now it is teal.");
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
