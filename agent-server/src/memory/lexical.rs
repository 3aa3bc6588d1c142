//! In-memory lexical search: an inverted index with Okapi BM25 scoring, for a store that keeps a
//! session's facts in memory (the embedded store's session cache).
//!
//! It reproduces what SQLite FTS5 with `tokenize = 'porter unicode61'` and `bm25()` computed before
//! recall moved into memory: words are lower-cased alphanumeric runs, reduced to their English stem
//! (Snowball's Porter2, the maintained successor of FTS5's Porter stemmer, so a few rare words stem
//! differently), and BM25 uses FTS5's constants (k1 = 1.2, b = 0.75) and its IDF floor. One
//! difference on purpose: statistics (document count, average length, document frequency) are the
//! index's own, i.e. one session's, so no session's ranking depends on another's facts.
//!
//! Hand-written rather than a search-engine crate: what is needed is one small index per session,
//! cheap to update on every turn and to drop on eviction; engines such as tantivy are built around
//! segments on disk and batch commits, which is the opposite trade-off.

use std::collections::HashMap;
use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};
use rustc_hash::FxHashMap;

use super::distinct::{FirstSeen, TextHasher};

/// BM25 term-frequency saturation, as FTS5's `bm25()` uses by default.
const K1: f64 = 1.2;
/// BM25 length normalisation, as FTS5's `bm25()` uses by default.
const B: f64 = 0.75;
/// FTS5 floors a non-positive IDF (a term in more than half the documents) at this value, so a
/// very common term still counts a little instead of subtracting.
const MIN_IDF: f64 = 1e-6;

/// Okapi BM25 over one collection of documents (a session's items of one list): the formula both
/// backends score lexical matches with, this index and the Postgres backend's ranking of the
/// matches Postgres finds (`redis_pg::matches`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bm25 {
    documents: f64,
    average_len: f64,
}

impl Bm25 {
    /// A collection of `documents` documents whose average length is `average_len` words
    /// (floored at 1).
    pub(crate) fn new(documents: f64, average_len: f64) -> Self {
        Self {
            documents,
            average_len: average_len.max(1.0),
        }
    }

    /// The inverse document frequency of a term `holders` documents hold, floored at
    /// [`MIN_IDF`] (also when a document count behind its holders would make it undefined).
    pub(crate) fn idf(&self, holders: f64) -> f64 {
        // `max` returns the floor for a NaN (the logarithm of a negative ratio) too.
        ((self.documents - holders + 0.5) / (holders + 0.5))
            .ln()
            .max(MIN_IDF)
    }

    /// What a term with inverse document frequency `idf` adds to the score of a document of `len`
    /// words that holds it `tf` times.
    pub(crate) fn term(&self, idf: f64, tf: f64, len: f64) -> f64 {
        let norm = K1 * (1.0 - B + B * len / self.average_len);
        idf * tf * (K1 + 1.0) / (tf + norm)
    }
}

static ENGLISH: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// The words of `text` that get indexed, before stemming (see [`stem`]): its alphanumeric runs.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
}

/// Most words a thread remembers the stem of (a few hundred KiB per thread at most).
const STEM_CACHE_WORDS: usize = 4096;

thread_local! {
    /// Recently stemmed words, as given, with their stems. Snowball's suffix tables cost far more
    /// than a hash lookup, and the same words come back on every turn: a query's, its facts', and
    /// those of working memory. Per thread, so there is no lock; emptied when full rather than
    /// kept in LRU order, since a refill costs only one stemming per word. Hashed with
    /// [`TextHasher`], as the words are user text.
    static STEMS: std::cell::RefCell<HashMap<Box<str>, Box<str>, TextHasher>> =
        std::cell::RefCell::new(HashMap::with_capacity_and_hasher(STEM_CACHE_WORDS, TextHasher::default()));
}

/// The stem of one word, lower-cased first (query terms go through the same function, so a query
/// for "Running" finds "runs").
pub fn stem(word: &str) -> String {
    with_stem(word, str::to_owned)
}

/// Calls `f` with the stem of `word` (see [`stem`]) borrowed from the cache: indexing and search
/// only look the stem up, so they need no copy of it.
fn with_stem<R>(word: &str, f: impl FnOnce(&str) -> R) -> R {
    STEMS.with(|cell| {
        // Busy only if `f` of an outer call stems again: that one goes without the cache.
        let Ok(mut stems) = cell.try_borrow_mut() else {
            return f(&ENGLISH.stem(&word.to_lowercase()));
        };
        if let Some(stem) = stems.get(word) {
            return f(stem);
        }
        let stem: Box<str> = ENGLISH.stem(&word.to_lowercase()).into();
        if stems.len() >= STEM_CACHE_WORDS {
            stems.clear();
        }
        f(stems.entry(word.into()).or_insert(stem))
    })
}

/// A text as an index takes it: each distinct stem with how often it occurs, and the number of
/// words. Worked out apart from any index, so that it can be done on another thread than the
/// one that owns the index: the embedded store analyses a turn's facts on the request's thread
/// rather than on its single writer thread, which applies every turn in turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analyzed {
    /// Distinct stems, in the order they first occur.
    stems: Vec<String>,
    /// How often each of `stems` occurs.
    counts: Vec<u32>,
    len: u32,
}

impl Analyzed {
    pub fn of(text: &str) -> Self {
        let mut stems = FirstSeen::default();
        let mut counts: Vec<u32> = Vec::new();
        let mut len = 0u32;
        for word in words(text) {
            len = len.saturating_add(1);
            with_stem(word, |stem| match counts.get_mut(stems.position(stem)) {
                Some(count) => *count += 1,
                None => counts.push(1),
            });
        }
        Self {
            stems: stems.into_words(),
            counts,
            len,
        }
    }
}

/// Document id: the caller's key for a document (the embedded store uses the fact's row id).
pub type DocId = i64;

/// One document as indexed: its distinct terms, and its length in tokens.
#[derive(Debug, Clone)]
struct Doc {
    terms: Box<[u32]>,
    len: u32,
}

/// An inverted index over short documents, scored with BM25.
#[derive(Debug, Clone, Default)]
pub struct LexicalIndex {
    /// Term text to term number. Numbers are never reused, so a term that no document holds any
    /// more keeps its (empty) entry until the index is dropped; a session's vocabulary is small.
    /// Hashed with [`TextHasher`], since terms are user text.
    vocabulary: HashMap<Box<str>, u32, TextHasher>,
    /// Per term number, the documents holding it, each with the term's frequency in it and its
    /// length (kept here too so that scoring looks up nothing else). Fx hashing for ids, which
    /// the store assigns (no flooding risk) and which are hashed on every recall.
    postings: Vec<FxHashMap<DocId, (u32, u32)>>,
    docs: FxHashMap<DocId, Doc>,
    /// Sum of the lengths of all documents, for the average length BM25 normalises by.
    total_len: u64,
}

impl LexicalIndex {
    /// Number of documents.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Indexes `text` under `id`, replacing whatever `id` held.
    pub fn insert(&mut self, id: DocId, text: &str) {
        self.insert_analyzed(id, &Analyzed::of(text));
    }

    /// Indexes an analysed text under `id`, replacing whatever `id` held: the index's part of
    /// [`LexicalIndex::insert`], without the tokenizing and stemming.
    pub fn insert_analyzed(&mut self, id: DocId, text: &Analyzed) {
        self.remove(id);
        let mut terms = Vec::with_capacity(text.stems.len());
        for (stem, count) in text.stems.iter().zip(&text.counts) {
            let term = match self.vocabulary.get(stem.as_str()) {
                Some(&term) => term,
                None => {
                    let next = u32::try_from(self.postings.len()).unwrap_or(u32::MAX);
                    self.postings.push(FxHashMap::default());
                    self.vocabulary.insert(stem.as_str().into(), next);
                    next
                }
            };
            self.postings[term as usize].insert(id, (*count, text.len));
            terms.push(term);
        }
        self.total_len += u64::from(text.len);
        self.docs.insert(
            id,
            Doc {
                terms: terms.into(),
                len: text.len,
            },
        );
    }

    /// Removes `id`; a no-op when it is not indexed.
    pub fn remove(&mut self, id: DocId) {
        if let Some(doc) = self.docs.remove(&id) {
            for &term in doc.terms.iter() {
                self.postings[term as usize].remove(&id);
            }
            self.total_len -= u64::from(doc.len);
        }
    }

    /// Every document holding at least one of `query_terms` (raw words; stemmed here), with its
    /// BM25 score (positive, larger is better). Unordered.
    pub fn search(&self, query_terms: &[String]) -> Vec<(DocId, f64)> {
        if self.docs.is_empty() {
            return Vec::new();
        }
        let documents = self.docs.len() as f64;
        let bm25 = Bm25::new(documents, self.total_len as f64 / documents);
        // Two query words with one stem ("running", "runs") each add their score, as two
        // phrases of an FTS5 OR query do.
        let holders: Vec<&FxHashMap<DocId, (u32, u32)>> = query_terms
            .iter()
            .filter_map(|word| with_stem(word, |stem| self.vocabulary.get(stem).copied()))
            .map(|term| &self.postings[term as usize])
            .filter(|holders| !holders.is_empty())
            .collect();
        // Sized once for the documents that can match, rather than grown on the way.
        let most = holders
            .iter()
            .map(|h| h.len())
            .sum::<usize>()
            .min(self.docs.len());
        let mut scores: FxHashMap<DocId, f64> =
            FxHashMap::with_capacity_and_hasher(most, Default::default());
        for holders in holders {
            let idf = bm25.idf(holders.len() as f64);
            for (id, &(count, len)) in holders {
                *scores.entry(*id).or_default() += bm25.term(idf, f64::from(count), f64::from(len));
            }
        }
        scores.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn ranked(index: &LexicalIndex, query: &[&str]) -> Vec<DocId> {
        let mut hits = index.search(&words(query));
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.into_iter().map(|(id, _)| id).collect()
    }

    /// The tokens the index holds for `text`.
    fn tokens(text: &str) -> Vec<String> {
        super::words(text).map(stem).collect()
    }

    #[test]
    fn stems_and_case_fold_like_the_porter_tokenizer() {
        assert_eq!(
            tokens("Running, RUNS; ran-away café"),
            ["run", "run", "ran", "away", "café"]
        );
        assert_eq!(stem("Lighthouses"), stem("lighthouse"));
    }

    #[test]
    fn remembered_stems_equal_fresh_ones_past_the_cache_size() {
        let words: Vec<String> = (0..STEM_CACHE_WORDS + 100)
            .map(|i| format!("Running{i}s"))
            .chain(["Running", "running", "RUNS"].map(str::to_owned))
            .collect();
        let fresh = |word: &str| ENGLISH.stem(&word.to_lowercase()).into_owned();
        for _ in 0..2 {
            for word in &words {
                assert_eq!(stem(word), fresh(word), "{word}");
            }
        }
        assert_eq!(stem("RUNS"), "run");
    }

    #[test]
    fn finds_only_documents_holding_a_query_term() {
        let mut index = LexicalIndex::default();
        index.insert(1, "My sister lives in Lisbon.");
        index.insert(2, "The lighthouse keeper paints boats.");
        index.insert(3, "Favourite colour is teal.");
        assert_eq!(ranked(&index, &["lisbon"]), [1]);
        assert_eq!(ranked(&index, &["lighthouses"]), [2], "stems match");
        assert!(ranked(&index, &["tokyo"]).is_empty());
        assert_eq!(index.search(&[]).len(), 0);
    }

    #[test]
    fn an_analysed_text_counts_each_stem_and_every_word() {
        let text = Analyzed::of("Boats, boat and BOATING: the boat!");
        let stems: Vec<(&str, u32)> = text
            .stems
            .iter()
            .map(String::as_str)
            .zip(text.counts.iter().copied())
            .collect();
        assert_eq!(stems, [("boat", 4), ("and", 1), ("the", 1)]);
        assert_eq!(text.len, 6);
    }

    /// What [`Analyzed::of`] computes, the plain way: every word stemmed and counted in a map.
    fn reference_analysis(text: &str) -> (Vec<(String, u32)>, u32) {
        let mut counts: HashMap<String, u32> = HashMap::new();
        for word in super::words(text) {
            *counts.entry(super::stem(word)).or_default() += 1;
        }
        let mut stems: Vec<(String, u32)> = counts.into_iter().collect();
        stems.sort();
        (stems, super::words(text).count() as u32)
    }

    proptest::proptest! {
        /// Under and over the distinct stems where `FirstSeen` switches to a map.
        #[test]
        fn an_analysis_counts_as_stemming_every_word_would(
            words in proptest::collection::vec("[a-z]{1,3}s?|[A-Z][a-z]{0,2}|[0-9]{1,2}", 0..150),
            separator in "[ ,.!?]{1,2}",
        ) {
            let text = words.join(&separator);
            let analysis = Analyzed::of(&text);
            let mut stems: Vec<(String, u32)> =
                analysis.stems.iter().cloned().zip(analysis.counts.iter().copied()).collect();
            stems.sort();
            proptest::prop_assert_eq!((stems, analysis.len), reference_analysis(&text));
        }
    }

    #[test]
    fn rarer_terms_and_shorter_documents_score_higher() {
        let mut index = LexicalIndex::default();
        index.insert(1, "cat dog");
        index.insert(2, "cat bird");
        index.insert(3, "cat fish");
        index.insert(
            4,
            "dog of the very long and winding sentence about many things",
        );
        // "fish" is in one document, "cat" in three: fish's document ranks first for both words.
        assert_eq!(ranked(&index, &["cat", "fish"])[0], 3);
        // Same term frequency, shorter document first.
        assert_eq!(ranked(&index, &["dog"]), [1, 4]);
        // More query terms matched, higher score.
        assert_eq!(ranked(&index, &["cat", "dog"])[0], 1);
    }

    #[test]
    fn scores_match_fts5_bm25() {
        // Hand-computed with FTS5's formula: N = 3, avgdl = 8/3, "apple" in one document (n = 1),
        // doc 1 length 4 with tf 2.
        let mut index = LexicalIndex::default();
        index.insert(1, "apple apple pie crust");
        index.insert(2, "banana split");
        index.insert(3, "cherry tart");
        let hits = index.search(&words(&["apple"]));
        let idf = ((3.0 - 1.0 + 0.5) / (1.0 + 0.5f64)).ln();
        let norm = K1 * (1.0 - B + B * 4.0 / (8.0 / 3.0));
        let expected = idf * 2.0 * (K1 + 1.0) / (2.0 + norm);
        assert_eq!(hits.len(), 1);
        assert!(
            (hits[0].1 - expected).abs() < 1e-12,
            "{hits:?} vs {expected}"
        );
        // A term in half the documents or more counts a little (the IDF floor), never negatively.
        index.insert(4, "apple");
        let hits = index.search(&words(&["apple"]));
        assert!(
            hits.iter().all(|&(_, score)| score > 0.0 && score < 1e-5),
            "{hits:?}"
        );
    }

    #[test]
    fn removing_and_replacing_keep_statistics_right() {
        let mut index = LexicalIndex::default();
        index.insert(1, "red apple");
        index.insert(2, "green apple");
        index.insert(1, "yellow banana");
        assert_eq!(index.len(), 2);
        assert_eq!(ranked(&index, &["apple"]), [2]);
        assert_eq!(ranked(&index, &["banana"]), [1]);
        index.remove(2);
        index.remove(2);
        assert!(ranked(&index, &["apple"]).is_empty());
        assert_eq!(index.total_len, 2);
        index.remove(1);
        assert!(index.is_empty());
        assert_eq!(index.total_len, 0);
    }
}
