//! Ranking shared by every backend: which words of a query count, and how lexical relevance and
//! recency combine. Backends compute lexical relevance with their own engine (the embedded
//! store's in-memory BM25 in [`lexical`](super::lexical), Postgres `ts_rank`) and all combine it here, so ordering rules are the same everywhere.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::LazyLock;
use std::time::Duration;

use chrono::{DateTime, Utc};
use rustc_hash::FxHashSet;

/// Function words that carry no meaning for recall. Kept short on purpose: a word missing here
/// costs a little precision, a content word wrongly listed here makes a fact unrecallable. Sorted
/// and unique (a test checks it), so it reads as a list.
const STOPWORDS: &[&str] = &[
    "a", "about", "again", "all", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but",
    "by", "can", "could", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her",
    "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "know", "me", "mine",
    "my", "now", "of", "on", "or", "our", "please", "remember", "she", "so", "tell", "that", "the",
    "their", "them", "then", "there", "these", "they", "this", "those", "to", "told", "too", "us",
    "was", "we", "were", "what", "when", "where", "which", "who", "whom", "why", "will", "with",
    "would", "you", "your", "yours",
];

/// Whether `word` (lower case) is in [`STOPWORDS`]. A hash set rather than a search of the list:
/// this runs for every word of every working-memory item on every turn.
fn is_stopword(word: &str) -> bool {
    static SET: LazyLock<FxHashSet<&'static str>> =
        LazyLock::new(|| STOPWORDS.iter().copied().collect());
    SET.contains(word)
}

/// The content words of `text`: lower-cased alphanumeric runs of two or more characters (or any
/// number), minus stopwords, deduplicated in first-seen order. Backends build their full-text
/// query from these terms only, so user text can never inject query syntax.
pub fn query_terms(text: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for_each_term(text, |word| {
        if !terms.iter().any(|t| t == word) {
            terms.push(word.to_owned());
        }
    });
    terms
}

/// Calls `each` with every content word of `text` (see [`query_terms`]) in order, repeats
/// included, borrowed from one buffer: callers that only compare words allocate nothing per word.
pub fn for_each_term(text: &str, mut each: impl FnMut(&str)) {
    let mut word = String::new();
    for raw in text.split(|c: char| !c.is_alphanumeric()) {
        if raw.is_empty() {
            continue;
        }
        word.clear();
        if raw.is_ascii() {
            word.extend(raw.chars().map(|c| c.to_ascii_lowercase()));
        } else {
            // Lower-casing can add combining marks ("İ" → "i̇"); keep only what is alphanumeric.
            word.extend(raw.to_lowercase().chars().filter(|c| c.is_alphanumeric()));
        }
        // Single letters carry no meaning, single digits do ("code word 3", "gate 7").
        let meaningful = word.chars().nth(1).is_some() || word.chars().any(|c| c.is_ascii_digit());
        if meaningful && !is_stopword(&word) {
            each(&word);
        }
    }
}

/// Most texts a thread remembers the content words of, and the longest text it remembers them
/// for: at most a few MiB per thread.
const TERMS_CACHE_TEXTS: usize = 1024;
const TERMS_CACHE_MAX_TEXT: usize = 4096;

thread_local! {
    /// Recently seen texts with their [`query_terms`]. The same texts come back on every turn:
    /// promotion compares each new statement with every user item of working memory, and the
    /// builtin model compares the question with every recalled fact, so tokenizing them again was
    /// the costliest step of a builtin turn. Per thread, so there is no lock; emptied when full
    /// (as the stem cache is), since a refill costs one tokenization per text. The standard (keyed)
    /// hasher, as the texts are user text.
    static TERMS: RefCell<HashMap<Box<str>, Box<[String]>>> = RefCell::new(HashMap::new());
}

/// Calls `f` with the content words of `text`, exactly as [`query_terms`] returns them, remembered
/// per thread for texts that come back (see `TERMS`).
pub fn with_terms<R>(text: &str, f: impl FnOnce(&[String]) -> R) -> R {
    TERMS.with(|cell| {
        // Busy only when `f` of an outer call asks again: that one goes without the cache.
        let Ok(mut cache) = cell.try_borrow_mut() else {
            return f(&query_terms(text));
        };
        if let Some(terms) = cache.get(text) {
            return f(terms);
        }
        let terms = query_terms(text);
        if text.len() > TERMS_CACHE_MAX_TEXT {
            return f(&terms);
        }
        if cache.len() >= TERMS_CACHE_TEXTS {
            cache.clear();
        }
        f(cache.entry(text.into()).or_insert(terms.into_boxed_slice()))
    })
}

/// Multiplier in (0, 1] for a fact observed `age` ago: halves every `half_life`. Facts dated in the
/// future of the session clock (negative age) are not penalised.
pub fn recency_factor(observed_at: DateTime<Utc>, now: DateTime<Utc>, half_life: Duration) -> f64 {
    let age = (now - observed_at).num_milliseconds().max(0) as f64 / 1000.0;
    let half_life = half_life.as_secs_f64().max(1.0);
    0.5f64.powf(age / half_life)
}

/// The recall score: lexical relevance (non-negative, larger is better) times recency.
pub fn combined_score(
    lexical: f64,
    observed_at: DateTime<Utc>,
    now: DateTime<Utc>,
    half_life: Duration,
) -> f64 {
    lexical.max(0.0) * recency_factor(observed_at, now, half_life)
}

/// How many lexical candidates a backend should fetch before re-ranking by recency, for a final
/// `limit`. Over-fetching lets an older but slightly better match lose to a fresher one.
pub fn candidate_pool(limit: usize) -> usize {
    limit.max(1).saturating_mul(4).max(32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn terms_drop_function_words_and_punctuation() {
        assert_eq!(
            query_terms("What is my favourite colour?"),
            ["favourite", "colour"]
        );
        assert_eq!(query_terms("Where do I live?"), ["live"]);
        assert_eq!(
            query_terms("\"NEAR(x*\" OR -drop; table"),
            ["near", "drop", "table"]
        );
        assert!(query_terms("?? a I !").is_empty());
        assert_eq!(
            query_terms("What is my code word 3?"),
            ["code", "word", "3"]
        );
    }

    #[test]
    fn stopwords_are_sorted_and_unique() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn recency_halves_each_half_life() {
        let now = DateTime::parse_from_rfc3339("2026-06-01T00:00:00Z")
            .unwrap()
            .to_utc();
        let day = Duration::from_secs(86_400);
        let f = |days: i64| recency_factor(now - chrono::Duration::days(days), now, day);
        assert!((f(0) - 1.0).abs() < 1e-9);
        assert!((f(1) - 0.5).abs() < 1e-9);
        assert!((f(3) - 0.125).abs() < 1e-9);
        assert!((f(-5) - 1.0).abs() < 1e-9);
    }

    proptest! {
        #[test]
        fn terms_are_lowercase_alphanumeric_and_unique(s in "\\PC{0,200}") {
            let terms = query_terms(&s);
            for t in &terms {
                prop_assert!(t.chars().all(char::is_alphanumeric));
                prop_assert_eq!(t, &t.to_lowercase());
            }
            let mut dedup = terms.clone();
            dedup.sort();
            dedup.dedup();
            prop_assert_eq!(dedup.len(), terms.len());
        }

        #[test]
        fn remembered_terms_are_the_terms_of_each_text(
            texts in proptest::collection::vec("\\PC{0,80}", 1..6)
        ) {
            // Twice over, so that the second pass is answered from the cache.
            for text in texts.iter().chain(&texts) {
                let expected = query_terms(text);
                prop_assert_eq!(with_terms(text, <[String]>::to_vec), expected);
            }
        }
    }

    #[test]
    fn terms_asked_for_inside_terms_are_still_right() {
        let (outer, inner) = with_terms("blue lighthouse keeper", |outer| {
            (
                outer.to_vec(),
                with_terms("red harbour", <[String]>::to_vec),
            )
        });
        assert_eq!(outer, ["blue", "lighthouse", "keeper"]);
        assert_eq!(inner, ["red", "harbour"]);
    }

    #[test]
    fn the_terms_cache_stays_right_past_its_size() {
        let texts: Vec<String> = (0..TERMS_CACHE_TEXTS * 2 + 3)
            .map(|i| format!("word{i} other{}", i % 7))
            .collect();
        for text in texts.iter().chain(&texts) {
            assert_eq!(with_terms(text, <[String]>::to_vec), query_terms(text));
        }
        let long = "lighthouse ".repeat(TERMS_CACHE_MAX_TEXT);
        assert_eq!(with_terms(&long, <[String]>::to_vec), ["lighthouse"]);
    }
}
