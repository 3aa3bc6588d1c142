//! The held-out set against the standard one, and the validity of every held-out test.
//!
//! Disjointness, as checked here. A turn's *skeleton* is its text normalised
//! ([`normalize`]: lower case, punctuation dropped, apostrophes removed) with every slot word
//! replaced by `_` and runs of `_` merged into one. Slot words are what varies between trials:
//! every word of a vocabulary value (attribute values, cities, names, relations, groceries,
//! trigger and reply words, ordinals, reminder key words, episode verbs and objects, events),
//! numbers in digits or words, weekdays and months. The standard side is every user turn and
//! injected fact the standard generators write for seeds `0..SEEDS` without filler; the held-out
//! side is every whole-turn template of [`phrases`] (its `{slots}` as `_`) and every turn and
//! injected fact the held-out generators write for the same seeds. Then:
//!
//! 1. no held-out skeleton equals a standard one;
//! 2. of two skeletons of three words or more, the word trigrams (`_` counting as a word) a
//!    held-out one shares with a standard one are at most [`MAX_SHARED`] of the standard one's
//!    trigrams, and at most [`MAX_SHARED`] of its own: no standard template sits inside a
//!    held-out turn, wrapped in other words, nor the reverse.

use std::collections::{BTreeSet, HashSet};

use chrono::Duration;

use super::phrases;
use crate::suites::ltm::filler::FILLER_PREFIX;
use crate::suites::ltm::phrasing::Phrasing;
use crate::suites::ltm::scoring::Scorer;
use crate::suites::ltm::script::{GenParams, Step, TURN_GAP_SECONDS, TestSpec};
use crate::suites::ltm::types::TestType;
use crate::suites::ltm::vocab;
use crate::text::{mentions, mentions_date, normalize};

/// Seeds each type is generated with, on both sides.
const SEEDS: u64 = 60;

/// The largest share of trigrams a held-out skeleton may have in common with a standard one.
const MAX_SHARED: f64 = 1.0 / 3.0;

fn params(seed: u64, span: u32, phrasing: Phrasing) -> GenParams {
    GenParams {
        run_seed: seed,
        span_tokens: span,
        filler_turn_tokens: 120,
        phrasing,
    }
}

/// Every word that fills a slot somewhere, normalised.
fn slot_words() -> HashSet<String> {
    let mut terms: Vec<&str> = Vec::new();
    for attribute in vocab::ATTRIBUTES {
        terms.extend(attribute.values);
    }
    for list in [
        vocab::CITIES,
        vocab::RELATIONS,
        vocab::NAMES,
        vocab::TRIGGER_WORDS,
        vocab::REPLY_WORDS,
        vocab::EPISODE_VERBS,
        vocab::EPISODE_OBJECTS,
        vocab::EVENTS,
    ] {
        terms.extend(list);
    }
    terms.extend(vocab::GROCERIES.iter().flat_map(|(s, p)| [*s, *p]));
    terms.extend(vocab::ORDINALS.iter().map(|(o, _)| *o));
    terms.extend(vocab::TASKS.iter().map(|(_, key)| *key));
    terms.extend([
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve",
    ]);
    terms.extend([
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ]);
    terms.extend(crate::text::MONTHS);
    terms
        .iter()
        .flat_map(|t| {
            normalize(t)
                .split(' ')
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Stands for a `{slot}` of a template until normalisation is done.
const SLOT_MARK: &str = "qqslotqq";

fn skeleton(text: &str, slots: &HashSet<String>) -> Vec<String> {
    // A template's `{slot}`s first.
    let mut marked = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}').map_or(rest.len(), |c| open + c + 1);
        marked.push_str(&rest[..open]);
        marked.push_str(&format!(" {SLOT_MARK} "));
        rest = &rest[close..];
    }
    marked.push_str(rest);
    let mut out: Vec<String> = Vec::new();
    for word in normalize(&marked).split(' ').filter(|w| !w.is_empty()) {
        let slot =
            word == SLOT_MARK || slots.contains(word) || word.chars().all(|c| c.is_ascii_digit());
        let word = if slot { "_" } else { word };
        if !(word == "_" && out.last().is_some_and(|w| w == "_")) {
            out.push(word.to_owned());
        }
    }
    out
}

fn trigrams(words: &[String]) -> BTreeSet<String> {
    words.windows(3).map(|w| w.join(" ")).collect()
}

/// Every user turn and injected fact of a spec (filler excluded).
fn said(spec: &TestSpec) -> Vec<String> {
    spec.steps
        .iter()
        .flat_map(|step| match step {
            Step::Say { text, .. } => vec![text.clone()],
            Step::Inject { facts, .. } => facts.iter().map(|f| f.text.clone()).collect(),
            _ => Vec::new(),
        })
        .filter(|t| !t.starts_with(FILLER_PREFIX))
        .collect()
}

fn all_said(phrasing: Phrasing) -> BTreeSet<String> {
    TestType::ALL
        .into_iter()
        .flat_map(|t| (0..SEEDS).map(move |seed| t.generate(params(seed, 0, phrasing), 1)))
        .flat_map(|spec| said(&spec))
        .collect()
}

#[test]
fn heldout_and_standard_phrasings_share_no_skeleton_and_few_trigrams() {
    let slots = slot_words();
    let standard: BTreeSet<Vec<String>> = all_said(Phrasing::Standard)
        .iter()
        .map(|t| skeleton(t, &slots))
        .collect();
    let heldout: BTreeSet<Vec<String>> = all_said(Phrasing::Heldout)
        .iter()
        .map(String::as_str)
        .chain(phrases::turn_templates())
        .map(|t| skeleton(t, &slots))
        .collect();
    // The standard side is what the templates say, whatever the seed: a handful of skeletons.
    assert!(
        (15..80).contains(&standard.len()),
        "{} standard skeletons",
        standard.len()
    );
    let mut worst = (0.0f64, String::new());
    for h in &heldout {
        assert!(
            !standard.contains(h),
            "held-out skeleton {:?} is a standard one",
            h.join(" ")
        );
        let th = trigrams(h);
        for s in &standard {
            let ts = trigrams(s);
            if th.is_empty() || ts.is_empty() {
                continue;
            }
            let shared = th.intersection(&ts).count() as f64;
            let share = (shared / ts.len() as f64).max(shared / th.len() as f64);
            if share > worst.0 {
                worst = (share, format!("{:?} and {:?}", h.join(" "), s.join(" ")));
            }
        }
    }
    assert!(
        worst.0 <= MAX_SHARED,
        "held-out and standard share {:.2} of their trigrams: {}",
        worst.0,
        worst.1
    );
}

#[test]
fn the_skeleton_masks_slots_and_nothing_else() {
    let slots = slot_words();
    assert_eq!(
        skeleton("My favourite colour is teal.", &slots).join(" "),
        "my favourite colour is _"
    );
    assert_eq!(
        skeleton("Dinner with {name}, my {relation}.", &slots).join(" "),
        "dinner with _ my _"
    );
    assert_eq!(
        skeleton("My dentist appointment is in 4 days.", &slots).join(" "),
        "my _ is in _ days"
    );
}

/// What has been said in each session since its last reset, as the steps go by.
struct Told {
    sessions: Vec<Vec<String>>,
}

impl Told {
    fn mentioned(&self, session: usize, term: &str) -> bool {
        self.sessions[session].iter().any(|t| mentions(t, term))
    }
}

/// The check and the text of each scored turn, with what its session was told before it.
fn walk(spec: &TestSpec, mut on_check: impl FnMut(&Told, usize, &str, &str, &Scorer)) {
    let mut told = Told {
        sessions: vec![Vec::new(); spec.sessions.len()],
    };
    for step in &spec.steps {
        match step {
            Step::Say {
                session,
                text,
                ideal,
                check,
            } => {
                if let Some(check) = check {
                    on_check(&told, *session, text, ideal, &check.scorer);
                }
                told.sessions[*session].push(text.clone());
            }
            Step::Inject { session, facts } => {
                told.sessions[*session].extend(facts.iter().map(|f| f.text.clone()));
            }
            Step::Reset { session } => told.sessions[*session].clear(),
            Step::Advance { .. } => {}
        }
    }
}

/// The question never gives the answer away, and the answer was told before it was asked.
fn check_is_fair(spec: &TestSpec, told: &Told, session: usize, text: &str, scorer: &Scorer) {
    let id = &spec.id;
    match scorer {
        Scorer::Mentions { groups, forbidden } => {
            for group in groups {
                assert!(
                    group.iter().any(|t| told.mentioned(session, t)),
                    "{id}: {group:?} never told before {text:?}"
                );
                assert!(
                    !group.iter().any(|t| mentions(text, t)),
                    "{id}: {text:?} gives away {group:?}"
                );
            }
            for f in forbidden {
                assert!(!mentions(text, f), "{id}: {text:?} names {f:?}");
            }
        }
        Scorer::Silent { forbidden } => {
            for f in forbidden {
                assert!(!mentions(text, f), "{id}: {text:?} names {f:?}");
            }
        }
        Scorer::SetOverlap { expected, universe } => {
            for e in expected {
                assert!(told.mentioned(session, e), "{id}: {e} never told");
            }
            for u in universe {
                assert!(!mentions(text, u), "{id}: {text:?} names {u}");
            }
        }
        Scorer::Abstains { forbidden } => {
            for f in forbidden {
                assert!(!mentions(text, f), "{id}: {text:?} names {f}");
                assert!(!told.mentioned(session, f), "{id}: {f} was told after all");
            }
        }
        Scorer::ShoppingList { items, removed } => {
            for item in items.iter().chain(removed) {
                assert!(
                    told.mentioned(session, &item.singular)
                        || told.mentioned(session, &item.plural),
                    "{id}: {} never told",
                    item.plural
                );
                assert!(
                    !mentions(text, &item.singular) && !mentions(text, &item.plural),
                    "{id}: {text:?} names {}",
                    item.plural
                );
            }
        }
        Scorer::Date { date } => {
            assert!(!mentions_date(text, *date), "{id}: {text:?} gives the date");
        }
        Scorer::Judged { expectation } => {
            assert!(expectation.len() > 40, "{id}: a thin brief {expectation:?}");
        }
    }
}

/// The session clock when each scored turn is played, by check label (as the runner plays it).
fn check_clocks(spec: &TestSpec) -> Vec<(String, chrono::DateTime<chrono::Utc>)> {
    let mut clocks: Vec<_> = spec.sessions.iter().map(|s| s.start).collect();
    let mut out = Vec::new();
    for step in &spec.steps {
        match step {
            Step::Say { session, check, .. } => {
                if let Some(check) = check {
                    out.push((check.label.clone(), clocks[*session]));
                }
                clocks[*session] += Duration::seconds(TURN_GAP_SECONDS);
            }
            Step::Advance { session, seconds } => clocks[*session] += Duration::seconds(*seconds),
            _ => {}
        }
    }
    out
}

fn first_said(spec: &TestSpec) -> &str {
    spec.steps
        .iter()
        .find_map(|s| match s {
            Step::Say { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .expect("a test says something")
}

/// The clock-dependent types say what they claim: the event's date follows from the words of
/// the statement, the reminder's hours from its, and the episode's day from the clock.
fn clock_is_consistent(spec: &TestSpec) {
    let start = spec.sessions[0].start;
    let id = &spec.id;
    match spec.test_type {
        TestType::RelativeDate => {
            let Some(Scorer::Date { date }) = spec.checks().next().map(|c| &c.scorer) else {
                panic!("{id}: no date check");
            };
            let days = (*date - start.date_naive()).num_days();
            let said = normalize(first_said(spec));
            let words = ["", "", "two", "three", "four", "five", "six"];
            let ways = [
                format!("this {}", date.format("%A").to_string().to_lowercase()),
                format!("in {days} days"),
                format!("in {} days", words[days as usize]),
            ];
            assert!(
                ways.iter().any(|w| said.contains(w.as_str()))
                    || (days == 2 && said.contains("the day after tomorrow")),
                "{id}: {said:?} does not say {date}, {days} days ahead"
            );
        }
        TestType::Reminder => {
            let said = normalize(first_said(spec));
            let words: Vec<&str> = said.split(' ').collect();
            let hours: i64 = words
                .windows(2)
                .find(|w| matches!(w[1], "hours" | "hrs"))
                .and_then(|w| w[0].parse().ok())
                .unwrap_or_else(|| panic!("{id}: no hours in {said:?}"));
            let due = start + Duration::hours(hours);
            let clocks = check_clocks(spec);
            assert!(clocks[0].1 < due && clocks[1].1 >= due, "{id}: {clocks:?}");
        }
        TestType::Episodic => {
            let (_, asked_at) = check_clocks(spec)[0].clone();
            let days = (asked_at.date_naive() - start.date_naive()).num_days();
            let Some(Step::Say { text, .. }) = spec
                .steps
                .iter()
                .rev()
                .find(|s| matches!(s, Step::Say { check: Some(_), .. }))
            else {
                panic!("{id}: asks nothing");
            };
            let weekday = format!("on {}", start.format("%A"));
            let named = match days {
                1 => text.contains("yesterday") || text.contains(&weekday),
                d if d < 7 => text.contains(&format!("{d} days ago")) || text.contains(&weekday),
                d => text.contains(&format!("{d} days ago")),
            };
            assert!(named, "{id}: {text:?} asked {days} days later");
            // Told without the vocabulary's verbs: only a model can grade it.
            for verb in vocab::EPISODE_VERBS {
                assert!(
                    !mentions(first_said(spec), verb),
                    "{id}: the episode names {verb}"
                );
            }
        }
        _ => {}
    }
}

#[test]
fn every_heldout_type_generates_valid_reproducible_tests_for_many_seeds() {
    for t in TestType::ALL {
        let mut variants = HashSet::new();
        for seed in 0..SEEDS {
            for span in [0, 400] {
                let p = params(seed, span, Phrasing::Heldout);
                let spec = t.generate(p, 1);
                assert_eq!(spec, t.generate(p, 1), "{t} is not reproducible");
                assert_eq!(spec.phrasing, Phrasing::Heldout);
                assert_eq!(spec.requires, t.requires());
                assert!(spec.checks().count() >= 1, "{t} scores nothing");
                assert_eq!(spec.needs_grader(), t == TestType::Episodic, "{t}");
                // Its sessions are never a standard run's.
                let standard = t.generate(params(seed, span, Phrasing::Standard), 1);
                for (h, s) in spec.sessions.iter().zip(&standard.sessions) {
                    assert_ne!(h.session_id, s.session_id, "{t}");
                }
                walk(&spec, |told, session, text, ideal, scorer| {
                    check_is_fair(&spec, told, session, text, scorer);
                    if !scorer.needs_grader() {
                        let verdict = scorer.score(ideal);
                        assert!(verdict.passed, "{t}: ideal {ideal:?} fails: {verdict:?}");
                    }
                });
                clock_is_consistent(&spec);
                if span == 0 {
                    variants.insert(said(&spec).join("\n"));
                }
            }
        }
        // The seed draws among the variants.
        assert!(
            variants.len() > SEEDS as usize / 2,
            "{t}: {}",
            variants.len()
        );
    }
}

/// The grader's brief of a held-out episode names what was done and what was not.
#[test]
fn the_episode_brief_says_what_happened_and_what_did_not() {
    let spec = TestType::Episodic.generate(params(3, 0, Phrasing::Heldout), 1);
    let Some(Scorer::Judged { expectation }) = spec.checks().next().map(|c| c.scorer.clone())
    else {
        panic!("not judged");
    };
    let verbs: Vec<&&str> = vocab::EPISODE_VERBS
        .iter()
        .filter(|v| expectation.contains(**v))
        .collect();
    assert!(verbs.len() >= 2, "{expectation}");
    assert!(expectation.contains("must not"), "{expectation}");
    let verdict = Scorer::Judged { expectation }.score("You painted it.");
    assert!(verdict.undecided && !verdict.passed && verdict.score == 0.0);
}
