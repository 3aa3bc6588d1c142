//! PromotionEngine: moves working-memory statements into long-term memory when they are marked
//! important or said again. Everything else expires with working memory: that difference is what
//! the benchmark's retention tests measure.

use std::borrow::Cow;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use protocol::control::{FactKind, FactSource};
use uuid::Uuid;

use crate::memory::ranking::query_terms;
use crate::memory::{Fact, NewFact, Recalled, Restatement, TurnRole, WorkingItem};
use crate::text::dates;
use crate::text::language::trim_sentence;

const IMPORTANCE_MARKERS: &[&str] = &[
    "important",
    "importantly",
    "crucial",
    "critical",
    "essential",
    "urgent",
    "vital",
    "must",
    "never",
    "always",
    "key point",
    "keep this",
    "note this",
];

#[derive(Debug, Clone, Copy)]
pub(crate) struct PromotionEngine {
    /// Share of content words two statements must have in common to count as a repetition.
    pub repeat_similarity: f64,
}

impl Default for PromotionEngine {
    fn default() -> Self {
        Self {
            repeat_similarity: 0.6,
        }
    }
}

/// Jaccard similarity of two statements' content words.
fn similarity(a: &[String], b: &[String]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let shared = a.iter().filter(|t| b.contains(t)).count() as f64;
    shared / ((a.len() + b.len()) as f64 - shared)
}

impl PromotionEngine {
    /// Importance of a statement in 0..=1: markers raise it.
    pub(crate) fn importance(&self, sentence: &str) -> f32 {
        let lower = sentence.to_lowercase();
        if IMPORTANCE_MARKERS.iter().any(|m| lower.contains(m)) || sentence.contains("!!") {
            0.8
        } else {
            0.3
        }
    }

    /// Promotes `leftovers` (statements the extractor kept nothing from) that are important or
    /// repeat an earlier user statement still in working memory.
    ///
    /// A promoted statement that restates facts promoted earlier and recalled this turn (same
    /// content words, see [`statement_words`]) is not stored again: the best recalled of them
    /// is restated ([`Promotion::restated`]: it takes the statement's text and time, in place),
    /// and any further copy is retired ([`Promotion::replaces`]). So the store keeps one fact per
    /// statement, at the latest time it was said, and a statement said on every turn changes one
    /// row instead of adding one.
    pub(crate) fn promote(
        &self,
        leftovers: &[String],
        working: &[Arc<WorkingItem>],
        recalled: &[Recalled],
        now: DateTime<Utc>,
    ) -> Promotion {
        let promoted = self.promote_statements(leftovers, working, now);
        let mut promotion = Promotion::default();
        let mut earlier: Vec<&Fact> = if promoted.is_empty() {
            Vec::new()
        } else {
            recalled
                .iter()
                .map(|r| &r.fact)
                .filter(|old| old.source == FactSource::Promoted && old.kind == FactKind::Fact)
                .collect()
        };
        for (fact, words) in promoted {
            let mut copies = Vec::new();
            if !words.is_empty() {
                earlier.retain(|old| {
                    // The same text has the same words: the usual repetition costs no tokenizing.
                    let same = old.text == fact.text || statement_words(&old.text) == words;
                    if same {
                        copies.push(old.id);
                    }
                    !same
                });
            }
            let Some((&best, others)) = copies.split_first() else {
                promotion.facts.push(fact);
                continue;
            };
            promotion.restated.push(Restatement {
                source_turn_ids: Vec::new(),
                id: best,
                text: fact.text,
                observed_at: fact.observed_at,
                importance: fact.importance,
                source: fact.source,
            });
            promotion.replaces.extend_from_slice(others);
        }
        promotion
    }

    /// The statements to promote, each with its [`statement_words`].
    fn promote_statements(
        &self,
        leftovers: &[String],
        working: &[Arc<WorkingItem>],
        now: DateTime<Utc>,
    ) -> Vec<(NewFact, Vec<String>)> {
        // Working memory is walked once per leftover (normally one or two), newest first as a
        // repeat is most often recent; an item's words are worked out once in its life
        // (`WorkingItem::terms`): tokenizing all of working memory was the costliest step of a
        // turn.
        leftovers
            .iter()
            .filter_map(|sentence| {
                let terms = query_terms(sentence);
                let repeated = terms.len() >= 2
                    && working
                        .iter()
                        .rev()
                        .filter(|w| w.role == TurnRole::User)
                        .any(|w| similarity(&terms, w.terms()) >= self.repeat_similarity);
                let importance = self.importance(sentence);
                if !repeated && importance < 0.7 {
                    return None;
                }
                // Trimming and the final full stop change no word, so the stored text's words
                // are the sentence's unless a date in it was made absolute.
                let (text, words) = match dates::absolutize(sentence, now) {
                    Some(absolute) => {
                        let words = statement_words(&absolute);
                        (Cow::Owned(absolute), words)
                    }
                    None => {
                        let mut words = terms;
                        words.sort_unstable();
                        (Cow::Borrowed(sentence.as_str()), words)
                    }
                };
                let fact = NewFact {
                    embedding: None,
                    source_turn_ids: Vec::new(),
                    kind: FactKind::Fact,
                    key: None,
                    text: format!("{}.", trim_sentence(&text)),
                    data: None,
                    observed_at: now,
                    importance: importance.max(if repeated { 0.7 } else { 0.0 }),
                    source: FactSource::Promoted,
                };
                debug_assert_eq!(words, statement_words(&fact.text));
                Some((fact, words))
            })
            .collect()
    }
}

/// What [`PromotionEngine::promote`] decided for one turn.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Promotion {
    /// Statements to store in long-term memory as new facts.
    pub facts: Vec<NewFact>,
    /// Statements that repeat a promoted fact recalled this turn: that fact takes them in place.
    pub restated: Vec<Restatement>,
    /// Further copies of a restated fact: to delete in the same write.
    pub replaces: Vec<Uuid>,
}

/// What identifies a statement: its content words, sorted. Two statements say the same thing
/// when these are equal (and not empty): the same words in any order, with any function words.
/// Taken from the text as stored (relative dates made absolute), so "I fly tomorrow" said on two
/// days is two statements.
fn statement_words(text: &str) -> Vec<String> {
    let mut terms = query_terms(text);
    terms.sort_unstable();
    terms
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-03-01T09:00:00Z")
            .unwrap()
            .to_utc()
    }

    fn said(text: &str) -> Arc<WorkingItem> {
        Arc::new(WorkingItem::new(TurnRole::User, text, now()))
    }

    #[test]
    fn important_statements_are_promoted() {
        let p = PromotionEngine::default()
            .promote(&["Important: I parked on level 3.".into()], &[], &[], now())
            .facts;
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].source, FactSource::Promoted);
        assert_eq!(p[0].text, "Important: I parked on level 3.");
    }

    #[test]
    fn repeated_statements_are_promoted_and_one_offs_are_not() {
        let engine = PromotionEngine::default();
        let working = [
            said("I had pasta for lunch at Luigi's."),
            said("The weather is nice."),
        ];
        assert_eq!(
            engine
                .promote(
                    &["I had pasta for lunch at Luigi's.".into()],
                    &working,
                    &[],
                    now()
                )
                .facts
                .len(),
            1
        );
        assert!(
            engine
                .promote(&["I had soup for dinner.".into()], &working, &[], now())
                .facts
                .is_empty()
        );
        // Assistant turns never count as the user repeating themselves.
        let assistant = [Arc::new(WorkingItem::new(
            TurnRole::Assistant,
            "I had pasta for lunch at Luigi's.",
            now(),
        ))];
        assert!(
            engine
                .promote(
                    &["I had pasta for lunch at Luigi's.".into()],
                    &assistant,
                    &[],
                    now()
                )
                .facts
                .is_empty()
        );
    }

    fn recalled(text: &str, source: FactSource) -> Recalled {
        Recalled {
            fact: crate::memory::Fact::from_new(NewFact {
                embedding: None,
                source_turn_ids: Vec::new(),
                kind: FactKind::Fact,
                key: None,
                text: text.into(),
                data: None,
                observed_at: now(),
                importance: 0.8,
                source,
            }),
            score: 1.0,
            why: crate::memory::RecallWhy::default(),
        }
    }

    #[test]
    fn a_restated_promoted_fact_is_restated_in_place_and_other_facts_are_not() {
        let engine = PromotionEngine::default();
        let same = recalled("Important: I parked on level 3.", FactSource::Promoted);
        let reordered = recalled("Important, level 3: I parked.", FactSource::Promoted);
        let other = recalled("Important: I parked on level 4.", FactSource::Promoted);
        let injected = recalled("Important: I parked on level 3.", FactSource::Injected);
        let later = now() + chrono::Days::new(1);
        let p = engine.promote(
            &["Important: I parked on level 3.".into()],
            &[],
            &[reordered.clone(), same.clone(), other, injected],
            later,
        );
        assert!(p.facts.is_empty(), "{p:?}");
        assert_eq!(
            p.restated,
            [Restatement {
                source_turn_ids: Vec::new(),
                id: reordered.fact.id,
                text: "Important: I parked on level 3.".into(),
                observed_at: later,
                importance: 0.8,
                source: FactSource::Promoted,
            }],
            "the best recalled copy takes the statement"
        );
        assert_eq!(p.replaces, [same.fact.id], "the other copy goes");

        // Two statements with the same words: the first restates, the second is new.
        let twice = engine.promote(
            &[
                "Important: I parked on level 3.".into(),
                "Important: level 3, I parked.".into(),
            ],
            &[],
            std::slice::from_ref(&same),
            later,
        );
        assert_eq!(twice.restated.len(), 1);
        assert_eq!(twice.restated[0].id, same.fact.id);
        assert_eq!(twice.facts.len(), 1);
        assert_eq!(twice.facts[0].text, "Important: level 3, I parked.");
        assert!(twice.replaces.is_empty());

        // Nothing promoted, nothing restated.
        let quiet = engine.promote(&["I had soup.".into()], &[], &[same], later);
        assert_eq!(quiet, Promotion::default());

        // A relative date is made absolute first: the same words on another day are news.
        let said = "Important: I fly tomorrow.";
        let stored = engine.promote(&[said.into()], &[], &[], now()).facts;
        let flight = recalled(&stored[0].text, FactSource::Promoted);
        let same_day = engine.promote(&[said.into()], &[], std::slice::from_ref(&flight), now());
        assert_eq!(same_day.restated.len(), 1);
        assert_eq!(same_day.restated[0].id, flight.fact.id);
        let again = engine.promote(&[said.into()], &[], &[flight], later);
        assert_eq!(again.facts.len(), 1);
        assert!(
            again.restated.is_empty() && again.replaces.is_empty(),
            "{again:?}"
        );
    }
}
