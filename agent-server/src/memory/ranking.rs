//! Ranking shared by every backend: which words of a query count, and how lexical relevance and
//! recency combine. Backends compute lexical relevance, Okapi BM25 over the session's items, with
//! their own engine (the embedded store's in-memory index in [`lexical`](super::lexical),
//! Postgres's full-text match scored in SQL) and all combine it here, so ordering rules are the
//! same everywhere.

use std::ops::Deref;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use rustc_hash::FxHashSet;

use super::distinct::FirstSeen;
use protocol::control::FactKind;

use super::{Fact, RecallWhy, Recalled};

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
    let mut terms = FirstSeen::default();
    for_each_term(text, |word| {
        terms.position(word);
    });
    terms.into_words()
}

/// The content words of one text ([`query_terms`]), shared. A turn works out its user text's words
/// once and hands them to recall and to the turn's working item, rather than each of them (and
/// promotion) tokenizing the same text again. Only [`Terms::of`] (and `Default`, empty) make one,
/// so each word is a lower-case alphanumeric run: a backend may build query syntax from them
/// without escaping.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Terms(Arc<[String]>);

impl Terms {
    /// The content words of `text` ([`query_terms`]).
    pub fn of(text: &str) -> Self {
        Self(query_terms(text).into())
    }
}

impl Deref for Terms {
    type Target = [String];

    fn deref(&self) -> &[String] {
        &self.0
    }
}

/// Calls `each` with every content word of `text` (see [`query_terms`]) in order, repeats
/// included, each borrowed from `text` or from one buffer.
fn for_each_term(text: &str, mut each: impl FnMut(&str)) {
    let mut buffer = String::new();
    for raw in text.split(|c: char| !c.is_alphanumeric()) {
        if raw.is_empty() {
            continue;
        }
        // This runs for every word of every text a turn looks at: a word that is already
        // lower-case ASCII, the usual case, is used where it stands rather than copied.
        let word: &str = if !raw.is_ascii() {
            buffer.clear();
            // Lower-casing can add combining marks ("İ" → "i̇"); keep only what is alphanumeric.
            buffer.extend(raw.to_lowercase().chars().filter(|c| c.is_alphanumeric()));
            &buffer
        } else if raw.bytes().any(|b| b.is_ascii_uppercase()) {
            buffer.clear();
            buffer.push_str(raw);
            buffer.make_ascii_lowercase();
            &buffer
        } else {
            raw
        };
        // Single letters carry no meaning, single digits do ("code word 3", "gate 7").
        let meaningful = word.chars().nth(1).is_some() || word.chars().any(|c| c.is_ascii_digit());
        if meaningful && !is_stopword(word) {
            each(word);
        }
    }
}

/// Multiplier in (0, 1] for a fact observed `age` ago: halves every `half_life`. Facts dated in the
/// future of the session clock (negative age) are not penalised.
pub fn recency_factor(observed_at: DateTime<Utc>, now: DateTime<Utc>, half_life: Duration) -> f64 {
    let age = (now - observed_at).num_milliseconds().max(0) as f64 / 1000.0;
    let half_life = half_life.as_secs_f64().max(1.0);
    0.5f64.powf(age / half_life)
}

/// The share of an episode's weight that does not decay: see [`recency_weight`].
pub const EPISODE_RECENCY_FLOOR: f64 = 0.5;

/// What recency multiplies an item's relevance by: [`recency_factor`] for facts, rules and
/// reminders; for an episode, a decay that stops at [`EPISODE_RECENCY_FLOOR`].
///
/// Why episodes decay less: a fact's age says whether it may have gone stale (a newer fact
/// should beat it), while an episode is a record of what was said when, and a question often
/// asks about long ago ("when did I first ...?"). On LoCoMo, whose conversations span months,
/// the full decay cut the agent's evidence recall@8 by half (docs/results/memory-benchmarks.md);
/// with the floor, of two equally relevant turns the newer still ranks first.
pub fn recency_weight(fact: &Fact, now: DateTime<Utc>, half_life: Duration) -> f64 {
    let factor = recency_factor(fact.observed_at, now, half_life);
    match fact.kind {
        FactKind::Episode => EPISODE_RECENCY_FLOOR + (1.0 - EPISODE_RECENCY_FLOOR) * factor,
        FactKind::Fact | FactKind::Rule | FactKind::Reminder => factor,
    }
}

/// A recalled item ranked by lexical relevance times recency, as recall ranks when there are no
/// embeddings: every backend builds its [`Recalled`] here, so the score and its parts agree.
pub fn lexical_recall(
    fact: Fact,
    lexical: f64,
    now: DateTime<Utc>,
    half_life: Duration,
) -> Recalled {
    let (score, why) = lexical_score(&fact, lexical, now, half_life);
    Recalled { score, why, fact }
}

/// The score and its parts that [`lexical_recall`] gives `fact`, without taking the fact: a
/// backend ranking borrowed facts copies only those it keeps.
pub fn lexical_score(
    fact: &Fact,
    lexical: f64,
    now: DateTime<Utc>,
    half_life: Duration,
) -> (f64, RecallWhy) {
    // The recall score: lexical relevance (non-negative, larger is better) times recency.
    let recency = recency_weight(fact, now, half_life);
    let why = RecallWhy {
        lexical,
        vector: None,
        recency,
    };
    (lexical.max(0.0) * recency, why)
}

/// Reciprocal rank fusion's constant: an item ranked `r`-th (from 1) by one signal gets
/// `1 / (RRF_K + r)` from it. 60 is the value of Cormack, Clarke and Büttcher's paper, where it
/// was stable across collections; it keeps the first few ranks close, so an item found by both
/// signals beats one found by either alone.
pub const RRF_K: f64 = 60.0;

/// The least cosine similarity at which an item counts as found by meaning. Below it, an
/// embedding says the item is unrelated (all-MiniLM-L6-v2 gives unrelated sentences about 0 to
/// 0.15, paraphrases 0.35 and up), and ranking it would only fill recall with noise in a
/// session that holds nothing relevant.
pub const MIN_SIMILARITY: f64 = 0.2;

/// A long-term item found by lexical search, by vector similarity, or by both, before fusion.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub fact: Fact,
    /// Lexical relevance, when lexical search found it.
    pub lexical: Option<f64>,
    /// Cosine similarity with the query, when the item has an embedding.
    pub vector: Option<f64>,
}

/// The candidates of one list: those lexical search found (with their relevance) and those
/// similarity found (with their similarity), each item once with every score it has. An item
/// found lexically only is given no similarity here: the backend that knows it passes it in
/// `similar`.
pub fn candidates(lexical: Vec<(Fact, f64)>, similar: Vec<(Fact, f64)>) -> Vec<Candidate> {
    let mut found: Vec<Candidate> = lexical
        .into_iter()
        .map(|(fact, score)| Candidate {
            fact,
            lexical: Some(score),
            vector: None,
        })
        .collect();
    for (fact, similarity) in similar {
        match found.iter_mut().find(|c| c.fact.id == fact.id) {
            Some(candidate) => candidate.vector = Some(similarity),
            None => found.push(Candidate {
                fact,
                lexical: None,
                vector: Some(similarity),
            }),
        }
    }
    found
}

/// The weight of the vector ranking in [`fuse`], the lexical one's being 1. Measured on LoCoMo
/// (docs/results/memory-benchmarks.md): at equal weight, similarity (which finds every chatty
/// turn somewhat like a question) crowded out exact matches on names and things, and evidence
/// recall@8 fell below lexical recall alone; at half weight it adds what words miss.
pub const VECTOR_WEIGHT: f64 = 0.5;

/// Ranks candidates found by two signals together: reciprocal rank fusion of the lexical and the
/// vector ranking (the latter at [`VECTOR_WEIGHT`]), times the fourth root of recency; best
/// `limit` first.
///
/// Why rank fusion rather than a weighted sum of scores: BM25 and cosine live on
/// scales that differ per session and per query (BM25 grows with the query's length and the
/// session's statistics), so no fixed weight suits them all, while ranks are comparable as they
/// are. Why the fourth root: fused scores span a narrow range (first and thirtieth rank differ
/// by 1.5 times), so the full recency weight, which spans 1 to 0, would decide the order by
/// itself; damped, it still puts the newer of two equally relevant items first. Ties go to the
/// newer item, then the smaller id, so the order is deterministic.
pub fn fuse(
    mut candidates: Vec<Candidate>,
    now: DateTime<Utc>,
    half_life: Duration,
    limit: usize,
) -> Vec<Recalled> {
    // Found by meaning only when similar enough (MIN_SIMILARITY); found by neither: dropped.
    candidates.retain(|c| c.lexical.is_some() || similar_enough(c.vector).is_some());
    let recalled = candidates
        .into_iter()
        .map(|c| Recalled {
            score: 0.0,
            why: RecallWhy {
                lexical: c.lexical.unwrap_or(0.0),
                vector: c.vector,
                recency: recency_weight(&c.fact, now, half_life).powf(0.25),
            },
            fact: c.fact,
        })
        .collect();
    fused_ranking(recalled, limit)
}

/// Ranks recalled items from several lists (a session's facts and its episodes, each recalled
/// on its own) as one list, best `limit` first, by the rule that ranked each list: fused again
/// over all of them when the lists were `fused` ([`fuse`]; a query with a vector, even where no
/// item has one), else by score.
///
/// Why fuse again: a fused score depends only on an item's ranks within its own list, so each
/// list's first item scores the same whatever its relevance, and merging the lists by score
/// would interleave them. On LoCoMo that put a keyed fact, which rarely holds the evidence, in
/// every other place of the top 8 (docs/results/memory-benchmarks.md). Ranked over the union, an
/// item places by how its lexical relevance and similarity compare with every other item's.
/// Lexical scores of two lists are compared as they are, as the unfused merge compares them.
pub fn merge_lists(
    lists: impl IntoIterator<Item = Vec<Recalled>>,
    fused: bool,
    limit: usize,
) -> Vec<Recalled> {
    let mut recalled: Vec<Recalled> = lists.into_iter().flatten().collect();
    if fused {
        return fused_ranking(recalled, limit);
    }
    // Stable: of two items with the same score, the one of the earlier list first.
    recalled.sort_by(|a, b| b.score.total_cmp(&a.score));
    recalled.truncate(limit);
    recalled
}

/// A similarity that counts as found by meaning ([`MIN_SIMILARITY`]).
fn similar_enough(vector: Option<f64>) -> Option<f64> {
    vector.filter(|v| *v >= MIN_SIMILARITY)
}

/// Scores `recalled` by reciprocal rank fusion of its lexical and its vector ranking (the latter
/// at [`VECTOR_WEIGHT`]) times each item's `why.recency`, and keeps the best `limit`. An item
/// whose `why.lexical` is 0 was not found lexically.
fn fused_ranking(recalled: Vec<Recalled>, limit: usize) -> Vec<Recalled> {
    let newer_first = |a: &Fact, b: &Fact| b.observed_at.cmp(&a.observed_at).then(a.id.cmp(&b.id));
    let ranks = |signal: &dyn Fn(&Recalled) -> Option<f64>| -> Vec<Option<usize>> {
        let mut order: Vec<(usize, f64)> = recalled
            .iter()
            .enumerate()
            .filter_map(|(i, r)| signal(r).map(|s| (i, s)))
            .collect();
        order.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then_with(|| newer_first(&recalled[a.0].fact, &recalled[b.0].fact))
        });
        let mut ranks = vec![None; recalled.len()];
        for (rank, (i, _)) in order.into_iter().enumerate() {
            ranks[i] = Some(rank + 1);
        }
        ranks
    };
    let lexical_ranks = ranks(&|r| Some(r.why.lexical).filter(|l| *l > 0.0));
    let vector_ranks = ranks(&|r| similar_enough(r.why.vector));
    let rrf = |rank: Option<usize>| rank.map_or(0.0, |r| 1.0 / (RRF_K + r as f64));
    let mut recalled: Vec<Recalled> = recalled
        .into_iter()
        .enumerate()
        .map(|(i, mut r)| {
            r.score =
                (rrf(lexical_ranks[i]) + VECTOR_WEIGHT * rrf(vector_ranks[i])) * r.why.recency;
            r
        })
        .collect();
    recalled.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| newer_first(&a.fact, &b.fact))
    });
    recalled.truncate(limit);
    recalled
}

/// The dot product of two L2-normalised vectors (their cosine similarity); `None` when their
/// dimensions differ (an item embedded by another model than the query).
pub fn cosine(a: &[f32], b: &[f32]) -> Option<f64> {
    (a.len() == b.len()).then(|| {
        a.iter()
            .zip(b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum()
    })
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

    /// The tests' clock: items are observed at it, and recalled at it unless a test says.
    fn june_first() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-06-01T00:00:00Z")
            .unwrap()
            .to_utc()
    }

    #[test]
    fn recency_halves_each_half_life() {
        let now = june_first();
        let day = Duration::from_secs(86_400);
        let f = |days: i64| recency_factor(now - chrono::Duration::days(days), now, day);
        assert!((f(0) - 1.0).abs() < 1e-9);
        assert!((f(1) - 0.5).abs() < 1e-9);
        assert!((f(3) - 0.125).abs() < 1e-9);
        assert!((f(-5) - 1.0).abs() < 1e-9);
    }

    fn item(kind: FactKind, text: &str, lexical: Option<f64>, vector: Option<f64>) -> Candidate {
        Candidate {
            fact: Fact {
                id: uuid::Uuid::now_v7(),
                kind,
                key: None,
                text: text.to_owned(),
                data: None,
                observed_at: june_first(),
                importance: 0.5,
                source: protocol::control::FactSource::Extracted,
                source_turn_ids: Vec::new(),
            },
            lexical,
            vector,
        }
    }

    fn texts(recalled: &[Recalled]) -> Vec<&str> {
        recalled.iter().map(|r| r.fact.text.as_str()).collect()
    }

    /// Each list fused alone gives its first item the same score, however weak; merged, the
    /// lists are ranked as one, so a fact that matches less and is less similar than three
    /// episodes comes after them.
    #[test]
    fn fused_lists_are_merged_by_their_ranks_over_both() {
        let now = june_first();
        let day = Duration::from_secs(86_400);
        let facts = fuse(
            vec![item(FactKind::Fact, "weak fact", Some(0.5), Some(0.25))],
            now,
            day,
            3,
        );
        let episodes = fuse(
            vec![
                item(FactKind::Episode, "e1", Some(5.0), Some(0.6)),
                item(FactKind::Episode, "e2", Some(4.0), Some(0.5)),
                item(FactKind::Episode, "e3", Some(3.0), Some(0.4)),
            ],
            now,
            day,
            3,
        );
        assert_eq!(
            facts[0].score, episodes[0].score,
            "alone, each list's first scores alike"
        );
        assert_eq!(
            texts(&merge_lists([facts.clone(), episodes.clone()], true, 3)),
            ["e1", "e2", "e3"]
        );
        // Fused lists of items without embeddings (the embedder was down when they were
        // stored) are merged by their lexical ranks over both, too.
        let without_vectors = |list: &[Recalled]| -> Vec<Recalled> {
            list.iter()
                .cloned()
                .map(|mut r| {
                    r.why.vector = None;
                    r
                })
                .collect()
        };
        assert_eq!(
            texts(&merge_lists(
                [without_vectors(&facts), without_vectors(&episodes)],
                true,
                3
            )),
            ["e1", "e2", "e3"]
        );
    }

    /// Unfused lists (no similarity anywhere) merge by score; of equal scores, the first list's.
    #[test]
    fn unfused_lists_are_merged_by_score() {
        let score = |r: Recalled, s: f64| Recalled { score: s, ..r };
        let now = june_first();
        let day = Duration::from_secs(86_400);
        let as_recalled = |c: Candidate| lexical_recall(c.fact, c.lexical.unwrap_or(0.0), now, day);
        let facts = vec![score(
            as_recalled(item(FactKind::Fact, "f", Some(2.0), None)),
            2.0,
        )];
        let episodes = vec![
            score(
                as_recalled(item(FactKind::Episode, "e1", Some(3.0), None)),
                3.0,
            ),
            score(
                as_recalled(item(FactKind::Episode, "e2", Some(2.0), None)),
                2.0,
            ),
        ];
        assert_eq!(
            texts(&merge_lists([facts, episodes], false, 2)),
            ["e1", "f"]
        );
    }

    /// What [`for_each_term`] computes, written the plain way, to check its shortcuts against.
    fn reference_terms(text: &str) -> Vec<String> {
        let mut terms = Vec::new();
        for raw in text.split(|c: char| !c.is_alphanumeric()) {
            let word: String = raw
                .to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric())
                .collect();
            let meaningful = word.chars().count() >= 2 || word.chars().any(|c| c.is_ascii_digit());
            if !word.is_empty() && meaningful && !STOPWORDS.contains(&word.as_str()) {
                terms.push(word);
            }
        }
        terms
    }

    proptest! {
        #[test]
        fn terms_are_the_lowercased_content_words(
            s in "([A-Za-z0-9]{1,8}|[ .,!?'-]|\\PC)*"
        ) {
            let mut terms = Vec::new();
            for_each_term(&s, |t| terms.push(t.to_owned()));
            prop_assert_eq!(terms, reference_terms(&s));
        }

        /// Under and over the distinct words where it switches from a search to a set.
        #[test]
        fn terms_are_the_distinct_content_words_in_first_seen_order(
            words in proptest::collection::vec("[a-z]{2,3}|[A-Z][a-z]|the|my", 0..120)
        ) {
            let text = words.join(" ");
            let mut expected: Vec<String> = Vec::new();
            for word in reference_terms(&text) {
                if !expected.contains(&word) {
                    expected.push(word);
                }
            }
            prop_assert_eq!(query_terms(&text), expected);
        }

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
    }
}
