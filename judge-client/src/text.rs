//! Reading what a model wrote, the same way wherever the judge reads it (LTM scoring, the
//! probe's mock-time check, the simulated user's fidelity rules): normalisation, whole-word
//! mentions and dates written out in words.

use chrono::{Datelike, NaiveDate};

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

/// The months' names, lower case, January first.
pub(crate) const MONTHS: &[&str] = &[
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

/// Ordinal words of the days of a month, first to thirty-first ("twenty first" is two words once
/// normalised; see [`day_words`]).
const ORDINAL_DAYS: &[&str] = &[
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
    "twentieth",
];

/// A day of the month written in words at `tokens[at..]`: "fifth", "twenty first",
/// "thirtieth", "thirty first". Returns the day and how many words it took.
fn day_words(tokens: &[&str], at: usize) -> Option<(u32, usize)> {
    let word = *tokens.get(at)?;
    if let Some(i) = ORDINAL_DAYS.iter().position(|o| *o == word) {
        return Some((i as u32 + 1, 1));
    }
    if word == "thirtieth" {
        return Some((30, 1));
    }
    let tens = match word {
        "twenty" => 20,
        "thirty" => 30,
        _ => return None,
    };
    let unit = ORDINAL_DAYS[..9]
        .iter()
        .position(|o| Some(o) == tokens.get(at + 1))? as u32
        + 1;
    Some((tens + unit, 2)).filter(|(d, _)| *d <= 31)
}

/// A day of the month at `tokens[at..]`, in digits ("5", "5th") or words, after an optional
/// "the". Returns the day and the index just past it.
fn day_at(tokens: &[&str], at: usize) -> Option<(u32, usize)> {
    let at = if tokens.get(at) == Some(&"the") {
        at + 1
    } else {
        at
    };
    if let Some(day) = tokens.get(at).and_then(|t| day_of(t)) {
        return Some((day, at + 1));
    }
    day_words(tokens, at).map(|(day, len)| (day, at + len))
}

/// A day of the month that ends just before `end` ("5th of", "the fifth of", "twenty first").
fn day_before(tokens: &[&str], end: usize) -> Option<u32> {
    (end.saturating_sub(3)..end)
        .filter_map(|start| day_at(tokens, start).filter(|(_, next)| *next == end))
        .map(|(day, _)| day)
        .next()
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
/// `March the fifth`, `the twenty-first of March`, with an optional year (in digits) that must
/// then be the right one.
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
        // "March 5", "March 5th, 2026", "March the fifth", "March twenty first"
        if let Some((day, next)) = day_at(&tokens, i + 1)
            && day == date.day()
            && year_ok(next)
        {
            return true;
        }
        // "5 March", "5th of March", "the fifth of March"
        let end = if i > 0 && tokens[i - 1] == "of" {
            i - 1
        } else {
            i
        };
        if day_before(&tokens, end) == Some(date.day()) && year_ok(i + 1) {
            return true;
        }
    }
    false
}
