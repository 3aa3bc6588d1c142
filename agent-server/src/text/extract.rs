//! FactExtractor: turns a user turn into what long-term memory should keep, by pattern, with no
//! model. Deterministic: the same text at the same session time gives the same result.
//!
//! What it recognises, per sentence:
//! - "my X is Y" (and are/was/were): a fact keyed `X`, so a later "my X is Z" supersedes it;
//! - "I live in / moved to ...", "I work at ...", "I'm N years old", "call me ...": keyed facts;
//! - "I like/love/hate/prefer/own/have ...", "I'm allergic to ...": unkeyed facts;
//! - "remember that ...", "don't forget ...": the inner statement, marked important;
//! - "whenever I say X, reply Y": a standing rule (see `standing`);
//! - "remind me to T in N hours / tomorrow", "in N days, remind me to T": a timed reminder;
//! - "in your third reply (from now), say X": a reminder counted in replies;
//! - "add/remove/put X ... my L list": list edits (see `lists`).
//!
//! Relative dates in any kept statement are made absolute on the session clock (see `dates`).
//! Everything else (past events, chit-chat) stays in working memory only, where the
//! PromotionEngine may still pick it up.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use protocol::control::{FactKind, FactSource};
use regex::{Captures, Regex};
use serde_json::json;

use super::dates::{self, parse_count};
use super::language::{is_question, sentences, trim_sentence};
use crate::memory::{NewFact, normalize_key};

/// Something a user turn taught.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Learned {
    /// A fact, rule or reminder, ready to store.
    Item(NewFact),
    /// An edit of a named list; resolved against the list's current state by `lists`.
    ListEdit(ListEdit),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListEdit {
    /// Normalised list name ("shopping").
    pub list: String,
    pub op: ListOp,
    /// Normalised item name ("apples").
    pub item: String,
    /// `None` when the user gave no number ("remove the milk": all of it; "add milk": one).
    pub quantity: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListOp {
    Add,
    Remove,
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("extractor patterns are valid")
}

/// `pattern.captures(s)`, asked only once `s` is known to match. Most sentences match no pattern,
/// and answering "no" is far cheaper without capture groups: `is_match` runs a DFA, while
/// `captures` on these short texts runs a backtracker that first clears a visited set of (pattern
/// states x text length) bits, which was most of a builtin turn's instructions (callgrind).
fn captures<'s>(pattern: &Regex, s: &'s str) -> Option<Captures<'s>> {
    if pattern.is_match(s) {
        pattern.captures(s)
    } else {
        None
    }
}

static REMEMBER: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:please\s+)?(?:remember|note|keep in mind|don'?t forget|do not forget|never forget)(?:\s+that)?[,:]?\s+(?P<x>.+)$",
    )
});
static RULE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(?i)^(?:from now on,?\s+)?(?:whenever|every time|each time|if|when)\s+i\s+(?:say|write|type|mention|send)\s+(?:the\s+word\s+)?["“'‘]?(?P<t>[^,"”'’]+?)["”'’]?\s*,\s*(?:please\s+)?(?:you\s+(?:should|must|will)\s+)?(?:always\s+)?(?:reply|respond|answer|say|write)(?:\s+with)?(?:\s+the\s+word)?\s+["“'‘]?(?P<r>.+?)["”'’]?$"#,
    )
});
static REMIND_AFTER: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:please\s+)?remind\s+me\s+(?:to\s+|about\s+|that\s+)?(?P<task>.+?)\s+in\s+(?P<n>\d{1,4}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+(?P<unit>minutes?|hours?|days?|weeks?)$",
    )
});
static REMIND_BEFORE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^in\s+(?P<n>\d{1,4}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+(?P<unit>minutes?|hours?|days?|weeks?),?\s+(?:please\s+)?remind\s+me\s+(?:to\s+|about\s+|that\s+)?(?P<task>.+)$",
    )
});
static REMIND_TOMORROW: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^(?:please\s+)?remind\s+me\s+(?:to\s+|about\s+|that\s+)?(?P<task>.+?)\s+tomorrow$")
});
static NTH_REPLY: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(?i)^in\s+your\s+(?P<ord>first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|next|\d{1,2}(?:st|nd|rd|th)?)\s+(?:reply|response|answer|message)(?:\s+(?:from now|after this one|after this))?,?\s+(?:please\s+)?(?:say|include|write|mention|add)\s+(?:the\s+word\s+)?["“'‘]?(?P<w>.+?)["”'’]?$"#,
    )
});
/// Longest list name, and longest key of "my X is Y", in characters. Checked after matching: a
/// bounded repetition of a Unicode class (`[\w ]{1,60}`) compiles to one copy of the class per
/// step, and matching that automaton was most of a builtin turn's instructions (callgrind).
const MAX_LIST_CHARS: usize = 40;
const MAX_KEY_CHARS: usize = 60;

static LIST_EDIT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:please\s+)?(?P<op>add|put|remove|delete|take)\s+(?P<items>.+?)\s+(?:to|on|onto|from|off|off of)\s+(?:my|the)\s+(?P<list>[\w -]+?)\s+list$",
    )
});
static MY_X_IS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:(?:and|also|actually|now|oh|well|btw|by the way),?\s+)*my\s+(?P<k>[\w'’ -]+?)\s+(?:is|are|was|were|'s)\s+(?:now\s+|actually\s+|called\s+|named\s+)*(?P<v>.+)$",
    )
});
static LIVE_IN: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^i\s+(?:now\s+|currently\s+)?(?:live|am living|'m living|moved|have moved|'ve moved|relocated)\s+(?:in|to)\s+(?P<v>.+)$",
    )
});
static WORK_AT: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^i\s+(?:now\s+|currently\s+)?work\s+(?:at|for|as)\s+(?P<v>.+)$"));
static AGE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^i(?:'m|\s+am)\s+(?P<v>\d{1,3})\s+(?:years?\s+old|yo)\b"));
static NAME: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^(?:call\s+me|i'm\s+called|i\s+am\s+called|my\s+name's)\s+(?P<v>.+)$")
});
/// "Ana lives in Oslo", "Bruno works at the museum": facts about people the user named.
static THIRD_PERSON: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?P<who>[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?)\s+(?:now\s+|currently\s+)?(?P<what>lives|works|studies|moved)\s+(?:in|at|for|to)\s+(?P<v>.+)$",
    )
});
/// A first-person event with a date on it ("Today I repaired the bike", "Yesterday I sold my
/// car", "On 3 May I ..."): episodic memory, kept long-term because its date is what it is asked by.
static DATED_EPISODE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:(?:today|yesterday|tonight|this (?:morning|afternoon|evening)|last (?:night|week)|on \w+ \d{1,2}|on \d{1,2} \w+),?\s+i\s+\w+|i\s+\w+\s+.+\s+(?:today|yesterday|this (?:morning|afternoon|evening)|last (?:night|week)))\b",
    )
});
static PREFERENCE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^i\s+(?:also\s+|really\s+|absolutely\s+)*(?:like|love|enjoy|adore|hate|dislike|prefer|own|have\s+an?|have\s+\d+|am\s+allergic\s+to|'m\s+allergic\s+to|am\s+vegetarian|am\s+vegan|collect|play|speak)\b",
    )
});

/// Ordinal word or number ("third", "3rd", "3") as a count; "next" is 1.
fn parse_ordinal(word: &str) -> Option<i64> {
    let w = word.to_lowercase();
    let n = match w.as_str() {
        "first" | "next" => 1,
        "second" => 2,
        "third" => 3,
        "fourth" => 4,
        "fifth" => 5,
        "sixth" => 6,
        "seventh" => 7,
        "eighth" => 8,
        "ninth" => 9,
        "tenth" => 10,
        _ => w
            .trim_end_matches(|c: char| c.is_alphabetic())
            .parse()
            .ok()?,
    };
    (n > 0).then_some(n)
}

/// Stateless extractor; see the module documentation for what it recognises.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FactExtractor;

/// What one user turn yields.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Extraction {
    pub learned: Vec<Learned>,
    /// Statements (not questions) nothing was extracted from: candidates for promotion.
    pub leftovers: Vec<String>,
}

impl FactExtractor {
    pub(crate) fn extract(&self, text: &str, now: DateTime<Utc>) -> Vec<Learned> {
        self.extract_turn(text, now).learned
    }

    pub(crate) fn extract_turn(&self, text: &str, now: DateTime<Utc>) -> Extraction {
        let mut out = Extraction::default();
        for sentence in sentences(text).into_iter().filter(|s| !is_question(s)) {
            let learned = self.extract_sentence(trim_sentence(sentence), now);
            if learned.is_empty() {
                out.leftovers.push(sentence.to_owned());
            }
            out.learned.extend(learned);
        }
        out
    }

    fn extract_sentence(&self, s: &str, now: DateTime<Utc>) -> Vec<Learned> {
        if let Some(c) = captures(&RULE, s) {
            let trigger = c["t"].trim().to_owned();
            let reply = trim_sentence(&c["r"]).to_owned();
            return vec![Learned::Item(NewFact {
                embedding: None,
                source_turn_ids: Vec::new(),
                kind: FactKind::Rule,
                key: Some(format!("rule:{}", normalize_key(&trigger))),
                text: format!("Whenever I say \"{trigger}\", reply \"{reply}\"."),
                data: Some(json!({ "trigger": trigger, "reply": reply })),
                observed_at: now,
                importance: 0.9,
                source: FactSource::Extracted,
            })];
        }
        if let Some(item) = reminder(s, now) {
            return vec![Learned::Item(item)];
        }
        if let Some(c) =
            captures(&LIST_EDIT, s).filter(|c| c["list"].chars().count() <= MAX_LIST_CHARS)
        {
            return list_edits(&c["op"], &c["items"], &c["list"]);
        }
        if let Some(c) = captures(&REMEMBER, s) {
            let inner = trim_sentence(&c["x"]);
            let mut learned = self.extract_sentence(inner, now);
            if learned.is_empty() {
                learned.push(Learned::Item(plain_fact(None, inner, now, 0.8)));
            }
            for l in &mut learned {
                if let Learned::Item(f) = l {
                    f.importance = f.importance.max(0.8);
                }
            }
            return learned;
        }
        if let Some(fact) = keyed_fact(s, now) {
            return vec![Learned::Item(fact)];
        }
        if PREFERENCE.is_match(s) || DATED_EPISODE.is_match(s) {
            return vec![Learned::Item(plain_fact(None, s, now, 0.5))];
        }
        Vec::new()
    }
}

/// "my X is Y" and the fixed personal patterns, each with its supersession key.
fn keyed_fact(s: &str, now: DateTime<Utc>) -> Option<NewFact> {
    let key = if let Some(c) =
        captures(&MY_X_IS, s).filter(|c| c["k"].chars().count() <= MAX_KEY_CHARS)
    {
        let key = normalize_key(&c["k"]);
        // "my name's", "my mum's birthday is": keep the possessive inside the key.
        let key = key.trim_start_matches("new ").to_owned();
        if key.is_empty() || c["v"].trim().is_empty() {
            return None;
        }
        key
    } else if LIVE_IN.is_match(s) {
        "home".to_owned()
    } else if WORK_AT.is_match(s) {
        "work".to_owned()
    } else if AGE.is_match(s) {
        "age".to_owned()
    } else if NAME.is_match(s) {
        "name".to_owned()
    } else if let Some(c) = captures(&THIRD_PERSON, s) {
        let what = match &c["what"] {
            "lives" | "moved" => "home",
            _ => "work",
        };
        format!("{} {what}", normalize_key(&c["who"]))
    } else {
        return None;
    };
    Some(plain_fact(Some(key), s, now, 0.6))
}

fn plain_fact(key: Option<String>, text: &str, now: DateTime<Utc>, importance: f32) -> NewFact {
    let text = dates::absolutize(text, now).unwrap_or_else(|| text.to_owned());
    NewFact {
        embedding: None,
        source_turn_ids: Vec::new(),
        kind: FactKind::Fact,
        key,
        text: format!("{}.", trim_sentence(&text)),
        data: None,
        observed_at: now,
        importance,
        source: FactSource::Extracted,
    }
}

fn reminder(s: &str, now: DateTime<Utc>) -> Option<NewFact> {
    let timed = |task: &str, due: DateTime<Utc>| NewFact {
        embedding: None,
        source_turn_ids: Vec::new(),
        kind: FactKind::Reminder,
        key: None,
        text: format!(
            "Remind me to {} at {}.",
            trim_sentence(task),
            dates::describe_datetime(due)
        ),
        data: Some(json!({ "message": trim_sentence(task), "due_at": due })),
        observed_at: now,
        importance: 0.8,
        source: FactSource::Extracted,
    };
    if let Some(c) = captures(&REMIND_AFTER, s).or_else(|| captures(&REMIND_BEFORE, s)) {
        let d = dates::span(parse_count(&c["n"])?, &c["unit"])?;
        return Some(timed(&c["task"], now + d));
    }
    if let Some(c) = captures(&REMIND_TOMORROW, s) {
        return Some(timed(&c["task"], now + chrono::Duration::days(1)));
    }
    if let Some(c) = captures(&NTH_REPLY, s) {
        let n = parse_ordinal(&c["ord"])?;
        let word = trim_sentence(&c["w"]).to_owned();
        return Some(NewFact {
            embedding: None,
            source_turn_ids: Vec::new(),
            kind: FactKind::Reminder,
            key: None,
            text: format!("In reply number {n} from now, say \"{word}\"."),
            data: Some(json!({ "message": word, "replies_left": n })),
            observed_at: now,
            importance: 0.8,
            source: FactSource::Extracted,
        });
    }
    None
}

/// "add 2 apples and a loaf of bread to my shopping list" → one edit per item.
fn list_edits(op: &str, items: &str, list: &str) -> Vec<Learned> {
    let op = match op.to_lowercase().as_str() {
        "add" | "put" => ListOp::Add,
        _ => ListOp::Remove,
    };
    let list = normalize_key(list);
    split_items(items)
        .into_iter()
        .filter_map(|raw| {
            let (quantity, item) = quantity_and_name(raw);
            (!item.is_empty()).then(|| {
                Learned::ListEdit(ListEdit {
                    list: list.clone(),
                    op,
                    item,
                    quantity,
                })
            })
        })
        .collect()
}

fn split_items(items: &str) -> Vec<&str> {
    items
        .split([','])
        .flat_map(|part| part.split(" and "))
        .map(str::trim)
        .map(|p| p.strip_prefix("and ").unwrap_or(p))
        .filter(|p| !p.is_empty())
        .collect()
}

/// "2 apples" → (Some(2), "apples"); "the milk" → (None, "milk"); "a dozen eggs" → (Some(12), "eggs").
pub(crate) fn quantity_and_name(raw: &str) -> (Option<u32>, String) {
    let mut words: Vec<&str> = raw.split_whitespace().collect();
    let mut quantity = None;
    if let Some(first) = words.first() {
        if first.eq_ignore_ascii_case("the")
            || first.eq_ignore_ascii_case("some")
            || first.eq_ignore_ascii_case("all")
        {
            words.remove(0);
            if words.first().is_some_and(|w| w.eq_ignore_ascii_case("the")) {
                words.remove(0);
            }
        } else if words.len() > 1 && words[..2].join(" ").eq_ignore_ascii_case("a dozen") {
            quantity = Some(12);
            words.drain(..2);
        } else if let Some(n) = parse_count(first).filter(|_| words.len() > 1) {
            quantity = Some(u32::try_from(n).unwrap_or(1).max(1));
            words.remove(0);
        }
    }
    // "2 more carrots": "more" only says the quantity is added.
    if words
        .first()
        .is_some_and(|w| w.eq_ignore_ascii_case("more"))
    {
        words.remove(0);
    }
    (quantity, normalize_key(&words.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn never_panics_and_is_deterministic(text in "\\PC{0,300}") {
            let a = FactExtractor.extract_turn(&text, now());
            let b = FactExtractor.extract_turn(&text, now());
            prop_assert_eq!(&a, &b);
            for learned in a.learned {
                if let Learned::Item(f) = learned {
                    prop_assert!(!f.text.trim_matches('.').trim().is_empty());
                    prop_assert!((0.0..=1.0).contains(&f.importance));
                    if let Some(k) = f.key {
                        prop_assert_eq!(k.clone(), normalize_key(&k));
                    }
                }
            }
        }

        #[test]
        fn my_x_is_y_always_keys_by_x(attr in "[a-z]{3,10}( [a-z]{3,10})?", value in "[A-Z][a-z]{2,10}") {
            let f = items(&format!("My {attr} is {value}."));
            prop_assert_eq!(f.len(), 1);
            prop_assert_eq!(f[0].key.as_deref(), Some(attr.as_str()));
            prop_assert!(f[0].text.contains(&value));
        }
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-03-01T09:30:00Z")
            .unwrap()
            .to_utc()
    }

    fn items(text: &str) -> Vec<NewFact> {
        FactExtractor
            .extract(text, now())
            .into_iter()
            .filter_map(|l| match l {
                Learned::Item(f) => Some(f),
                Learned::ListEdit(_) => None,
            })
            .collect()
    }

    #[test]
    fn my_x_is_y_is_keyed_by_x() {
        let f = items("My favourite colour is teal.");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].key.as_deref(), Some("favourite colour"));
        assert_eq!(f[0].text, "My favourite colour is teal.");
        assert_eq!(f[0].kind, FactKind::Fact);
        let f = items("Actually, my favourite colour is now green");
        assert_eq!(f[0].key.as_deref(), Some("favourite colour"));
    }

    #[test]
    fn keys_and_list_names_have_a_length_limit() {
        let key = "very ".repeat(11) + "long key"; // 63 characters
        let f = items(&format!("My {key} is teal."));
        assert!(f.iter().all(|f| f.key.is_none()), "{f:?}");
        let key = "very ".repeat(10) + "long key"; // 58 characters
        assert_eq!(items(&format!("My {key} is teal."))[0].key, Some(key));

        let is_edit = |text: &str| {
            FactExtractor
                .extract(text, now())
                .iter()
                .any(|l| matches!(l, Learned::ListEdit(_)))
        };
        assert!(is_edit(&format!("Add milk to my {} list", "x".repeat(40))));
        assert!(!is_edit(&format!("Add milk to my {} list", "x".repeat(41))));
    }

    #[test]
    fn fixed_personal_patterns_have_stable_keys() {
        assert_eq!(items("I live in Lisbon.")[0].key.as_deref(), Some("home"));
        assert_eq!(items("I moved to Porto")[0].key.as_deref(), Some("home"));
        assert_eq!(
            items("I work at Acme Corp.")[0].key.as_deref(),
            Some("work")
        );
        assert_eq!(items("I'm 34 years old.")[0].key.as_deref(), Some("age"));
        assert_eq!(items("Call me Sam.")[0].key.as_deref(), Some("name"));
        assert_eq!(items("My name is Sam.")[0].key.as_deref(), Some("name"));
    }

    #[test]
    fn preferences_are_kept_but_past_events_and_questions_are_not() {
        assert_eq!(items("I love hiking in the Alps.").len(), 1);
        assert!(items("I had pasta for lunch.").is_empty());
        assert!(items("What is my favourite colour?").is_empty());
        assert!(items("Hello there!").is_empty());
    }

    #[test]
    fn people_the_user_named_and_dated_episodes_are_kept() {
        let f = items("Ana lives in Oslo.");
        assert_eq!(f[0].key.as_deref(), Some("ana home"));
        assert_eq!(
            items("Bruno works at the museum")[0].key.as_deref(),
            Some("bruno work")
        );
        assert!(items("The lighthouse stands in the harbour.").is_empty());
        let f = items("Today I repaired the bicycle.");
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].text,
            "on 2026-03-01 (Sunday, 1 March 2026) I repaired the bicycle."
        );
        assert_eq!(items("I sold the old piano yesterday.").len(), 1);
    }

    #[test]
    fn remember_that_marks_the_inner_statement_important() {
        let f = items("Remember that my locker code is 4512.");
        assert_eq!(f[0].key.as_deref(), Some("locker code"));
        assert!(f[0].importance >= 0.8);
        let f = items("Please remember that the meeting moved to room 5");
        assert_eq!(f[0].key, None);
        assert_eq!(f[0].text, "the meeting moved to room 5.");
    }

    #[test]
    fn relative_dates_are_stored_absolute() {
        let f = items("My flight is in 3 days.");
        assert_eq!(f[0].key.as_deref(), Some("flight"));
        assert_eq!(
            f[0].text,
            "My flight is on 2026-03-04 (Wednesday, 4 March 2026)."
        );
    }

    #[test]
    fn rules_keep_trigger_and_reply() {
        let f = items("Whenever I say banana, reply mango.");
        assert_eq!(f[0].kind, FactKind::Rule);
        assert_eq!(f[0].key.as_deref(), Some("rule:banana"));
        assert_eq!(f[0].data.as_ref().unwrap()["reply"], "mango");
        let f = items("From now on, if I say \"blue moon\", respond with \"cheese\".");
        assert_eq!(f[0].data.as_ref().unwrap()["trigger"], "blue moon");
        assert_eq!(f[0].data.as_ref().unwrap()["reply"], "cheese");
    }

    #[test]
    fn reminders_by_time_and_by_reply_count() {
        let f = items("Remind me to call mum in 2 hours.");
        assert_eq!(f[0].kind, FactKind::Reminder);
        assert_eq!(f[0].data.as_ref().unwrap()["message"], "call mum");
        assert_eq!(
            f[0].data.as_ref().unwrap()["due_at"],
            "2026-03-01T11:30:00Z"
        );
        let f = items("In 3 days, remind me to water the plants.");
        assert_eq!(
            f[0].data.as_ref().unwrap()["due_at"],
            "2026-03-04T09:30:00Z"
        );
        let f = items("In your third reply from now, say pineapple.");
        assert_eq!(f[0].data.as_ref().unwrap()["replies_left"], 3);
        assert_eq!(f[0].data.as_ref().unwrap()["message"], "pineapple");
    }

    #[test]
    fn list_edits_parse_quantities_and_several_items() {
        let edits: Vec<ListEdit> = FactExtractor
            .extract("Add 2 apples and a dozen eggs to my shopping list. Remove the milk from my shopping list. Add 3 more apples to my shopping list.", now())
            .into_iter()
            .filter_map(|l| match l {
                Learned::ListEdit(e) => Some(e),
                Learned::Item(_) => None,
            })
            .collect();
        assert_eq!(
            edits,
            [
                ListEdit {
                    list: "shopping".into(),
                    op: ListOp::Add,
                    item: "apples".into(),
                    quantity: Some(2)
                },
                ListEdit {
                    list: "shopping".into(),
                    op: ListOp::Add,
                    item: "eggs".into(),
                    quantity: Some(12)
                },
                ListEdit {
                    list: "shopping".into(),
                    op: ListOp::Remove,
                    item: "milk".into(),
                    quantity: None
                },
                ListEdit {
                    list: "shopping".into(),
                    op: ListOp::Add,
                    item: "apples".into(),
                    quantity: Some(3)
                },
            ]
        );
    }
}
