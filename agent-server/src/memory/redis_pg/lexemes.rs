//! The full-text lexeme of each query word, as Postgres's `english` configuration makes it, kept
//! in the process: recall can then hand Postgres a ready tsquery (`'lexeme' | 'lexeme'`), which
//! it only parses, instead of words that `to_tsquery('english', ...)` runs through its parser and
//! the Snowball stemmer once per recall. That was about 10 µs of Postgres's CPU per turn, of about
//! 110 (docs/benchmarks.md, "Ready tsqueries").
//!
//! Exact by construction: the lexemes come from Postgres itself (`to_tsquery('english', word)`
//! for each word, asked alongside a recall that still used the words), and a query is built from
//! them only when every word gave one plain lexeme or none (a stopword). For query words, which
//! are single alphanumeric runs (`ranking::query_terms`), `to_tsquery` works word by word and
//! drops stopwords, so the OR of their lexemes is the query it would have built; a word that
//! gives anything else (two lexemes, say) keeps its query on the `to_tsquery` path for good.
//!
//! Read on every recall by every HTTP worker, so reads share the lock and change nothing (an LRU
//! relinked its list on every word, under a mutex the workers queued on: 2.6 % of agent-server's
//! samples). Bounded: when it is full and new words come, it starts over; a word missing costs
//! only its lookup, pipelined with a recall batch, and a deployment's everyday words fill it
//! again within a few batches.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use super::ts_rank::{self, Terms};
use crate::memory::TextHasher;

/// Words kept; with their lexemes, a few MiB at most.
const WORDS: usize = 65_536;

/// What `to_tsquery('english', word)` made of one word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Lexeme {
    /// A stopword: nothing.
    Stop,
    /// One plain lexeme: as a tsquery operand (quoted, escaped), and unquoted, to rank with
    /// (read once, when the word is learnt, not on every recall).
    Plain { operand: String, lexeme: Arc<str> },
    /// Anything else; a query with this word goes through `to_tsquery`.
    Other,
}

impl Lexeme {
    /// Reads `to_tsquery('english', word)::text`: empty for a stopword, `'lexeme'` for one plain
    /// lexeme (quotes inside doubled), anything else for the rest.
    pub(super) fn parse(tsquery: &str) -> Self {
        if tsquery.is_empty() {
            return Lexeme::Stop;
        }
        // One quoted operand and nothing after it; Postgres writes a lexeme's quotes and
        // backslashes doubled, as a tsvector's text does (`ts_rank.rs` reads both).
        match ts_rank::quoted(tsquery) {
            Some((lexeme, "")) if !lexeme.is_empty() => Lexeme::Plain {
                operand: tsquery.to_owned(),
                lexeme: lexeme.into(),
            },
            _ => Lexeme::Other,
        }
    }
}

/// How recall should ask for a query's candidates.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Query {
    /// A ready tsquery, or `None` when every word is a stopword (nothing matches), and its
    /// lexemes, to rank facts with in the process (`ts_rank.rs`).
    Ready {
        tsquery: Option<String>,
        terms: Terms,
    },
    /// Through `to_tsquery`; `unknown` are the words whose lexemes are not known yet.
    Words { unknown: Vec<String> },
}

/// Lexemes of recently used query words; see the module documentation.
pub(super) struct Lexemes {
    /// Keyed by user text, hence [`TextHasher`]. Only a bug can poison the lock; the map stays
    /// usable (at worst a word is missing), so a poisoned lock is taken as it is.
    words: RwLock<HashMap<Box<str>, Lexeme, TextHasher>>,
}

impl Lexemes {
    pub(super) fn new() -> Self {
        Self {
            words: RwLock::new(HashMap::default()),
        }
    }

    /// How to query for `terms` (non-empty, as `ranking::query_terms` makes them).
    pub(super) fn query(&self, terms: &[String]) -> Query {
        let words = self.words.read().unwrap_or_else(PoisonError::into_inner);
        let mut ready = String::new();
        let mut lexemes = Vec::new();
        let mut unknown = Vec::new();
        let mut other = false;
        for term in terms {
            match words.get(term.as_str()) {
                Some(Lexeme::Stop) => {}
                Some(Lexeme::Plain { operand, lexeme }) => {
                    if !ready.is_empty() {
                        ready.push_str(" | ");
                    }
                    ready.push_str(operand);
                    lexemes.push(lexeme.clone());
                }
                Some(Lexeme::Other) => other = true,
                None => unknown.push(term.clone()),
            }
        }
        if other || !unknown.is_empty() {
            return Query::Words { unknown };
        }
        Query::Ready {
            tsquery: (!ready.is_empty()).then_some(ready),
            terms: Terms::new(lexemes),
        }
    }

    /// How many words' lexemes are known.
    #[cfg(feature = "test-hooks")]
    pub(super) fn len(&self) -> usize {
        self.words
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Keeps what Postgres made of each word (`to_tsquery('english', word)::text`), starting over
    /// when there is no room (see the module documentation).
    pub(super) fn learn(&self, stemmed: impl IntoIterator<Item = (String, String)>) {
        self.learn_up_to(WORDS, stemmed);
    }

    fn learn_up_to(&self, most: usize, stemmed: impl IntoIterator<Item = (String, String)>) {
        let mut words = self.words.write().unwrap_or_else(PoisonError::into_inner);
        for (word, tsquery) in stemmed {
            if words.len() >= most && !words.contains_key(word.as_str()) {
                words.clear();
            }
            words.insert(word.into_boxed_str(), Lexeme::parse(&tsquery));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    fn ranked(lexemes: &[&str]) -> Terms {
        Terms::new(lexemes.iter().map(|l| Arc::from(*l)).collect())
    }

    #[test]
    fn an_operand_is_unquoted_as_postgres_quoted_it() {
        let unquoted = |operand: &str| match Lexeme::parse(operand) {
            Lexeme::Plain { lexeme, .. } => lexeme,
            other => panic!("{operand}: {other:?}"),
        };
        assert_eq!(&*unquoted("'run'"), "run");
        assert_eq!(&*unquoted("'o''neil'"), "o'neil");
        assert_eq!(&*unquoted(r"'a\\b'"), r"a\b");
    }

    #[test]
    fn to_tsquerys_text_is_read_as_a_stopword_one_plain_lexeme_or_other() {
        assert_eq!(Lexeme::parse(""), Lexeme::Stop);
        let plain = |operand: &str, lexeme: &str| Lexeme::Plain {
            operand: operand.into(),
            lexeme: lexeme.into(),
        };
        assert_eq!(Lexeme::parse("'run'"), plain("'run'", "run"));
        assert_eq!(Lexeme::parse("'o''neil'"), plain("'o''neil'", "o'neil"));
        assert_eq!(Lexeme::parse("'a' & 'b'"), Lexeme::Other);
        assert_eq!(Lexeme::parse("'a' <-> 'b'"), Lexeme::Other);
        assert_eq!(Lexeme::parse("'a' | 'b'"), Lexeme::Other);
        assert_eq!(Lexeme::parse("'a':*"), Lexeme::Other);
        assert_eq!(Lexeme::parse("''"), Lexeme::Other);
        assert_eq!(Lexeme::parse("'"), Lexeme::Other);
    }

    #[test]
    fn a_query_is_ready_only_when_every_word_is_known_and_plain() {
        let lexemes = Lexemes::new();
        let query = terms(&["running", "the", "dogs"]);
        assert_eq!(
            lexemes.query(&query),
            Query::Words {
                unknown: terms(&["running", "the", "dogs"])
            }
        );
        lexemes.learn([
            ("running".to_owned(), "'run'".to_owned()),
            ("the".to_owned(), String::new()),
        ]);
        assert_eq!(
            lexemes.query(&query),
            Query::Words {
                unknown: terms(&["dogs"])
            }
        );
        lexemes.learn([("dogs".to_owned(), "'dog'".to_owned())]);
        assert_eq!(
            lexemes.query(&query),
            Query::Ready {
                tsquery: Some("'run' | 'dog'".into()),
                terms: ranked(&["run", "dog"])
            }
        );
        assert_eq!(
            lexemes.query(&terms(&["the"])),
            Query::Ready {
                tsquery: None,
                terms: ranked(&[])
            }
        );
        lexemes.learn([("odd".to_owned(), "'od' & 'd'".to_owned())]);
        assert_eq!(
            lexemes.query(&terms(&["running", "odd"])),
            Query::Words { unknown: vec![] }
        );
    }

    #[test]
    fn a_full_cache_starts_over_and_keeps_the_new_word() {
        let lexemes = Lexemes::new();
        let learn = |word: &str| lexemes.learn_up_to(2, [(word.to_owned(), format!("'{word}'"))]);
        learn("cat");
        learn("dog");
        learn("dog");
        assert_eq!(lexemes.len(), 2, "a word learnt again takes no room");
        learn("owl");
        assert_eq!(lexemes.len(), 1);
        assert_eq!(
            lexemes.query(&terms(&["owl"])),
            Query::Ready {
                tsquery: Some("'owl'".into()),
                terms: ranked(&["owl"])
            }
        );
        assert_eq!(
            lexemes.query(&terms(&["cat"])),
            Query::Words {
                unknown: terms(&["cat"])
            }
        );
    }
}
