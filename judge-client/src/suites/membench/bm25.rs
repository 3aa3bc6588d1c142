//! The reference retriever: BM25 (k1 = 1.2, b = 0.75) over a conversation's raw turns, computed
//! from the dataset alone, so every report shows where an agent's recall stands against plain
//! search. Turns are tokenised as LoCoMo's scorer does ([`stemmed_tokens`]); the `bm25` crate
//! scores; ties are broken by turn order so recall@k is reproducible (the crate orders them by
//! hash).

use bm25::{Embedder, EmbedderBuilder, Scorer, Tokenizer};

use super::dataset::Conversation;
use super::scoring::stemmed_tokens;

/// Recall is reported at these depths.
pub const RECALL_KS: [usize; 3] = [5, 8, 20];

#[derive(Default)]
struct StemmedTokenizer;

impl Tokenizer for StemmedTokenizer {
    fn tokenize(&self, input_text: &str) -> Vec<String> {
        stemmed_tokens(input_text)
    }
}

/// A BM25 index over one conversation's turns.
pub struct TurnIndex {
    embedder: Embedder<u32, StemmedTokenizer>,
    scorer: Scorer<usize>,
    ids: Vec<String>,
}

impl TurnIndex {
    pub fn new(conversation: &Conversation) -> Self {
        let (ids, lines): (Vec<String>, Vec<String>) = conversation
            .turns()
            .map(|(_, t)| (t.id.clone(), t.line()))
            .unzip();
        let corpus: Vec<&str> = lines.iter().map(String::as_str).collect();
        let embedder: Embedder<u32, StemmedTokenizer> =
            EmbedderBuilder::with_tokenizer_and_fit_to_corpus(StemmedTokenizer, &corpus).build();
        let mut scorer = Scorer::new();
        for (i, line) in lines.iter().enumerate() {
            scorer.upsert(&i, embedder.embed(line));
        }
        Self {
            embedder,
            scorer,
            ids,
        }
    }

    /// The ids of the `k` best turns for `query`, best first.
    pub fn top(&self, query: &str, k: usize) -> Vec<String> {
        let mut matches = self.scorer.matches(&self.embedder.embed(query));
        matches.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
        matches
            .into_iter()
            .take(k)
            .map(|m| self.ids[m.id].clone())
            .collect()
    }
}

/// Share of `evidence` found among the first `k` of `ranked` (ids may repeat in `ranked`).
pub fn recall_at(ranked: &[Vec<String>], evidence: &[String], k: usize) -> Option<f64> {
    if evidence.is_empty() {
        return None;
    }
    let found = evidence
        .iter()
        .filter(|e| ranked.iter().take(k).any(|ids| ids.contains(e)))
        .count();
    Some(found as f64 / evidence.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::super::dataset::fixtures::fixture;
    use super::super::dataset::{DatasetKind, load};
    use super::*;

    #[test]
    fn finds_the_evidence_turn_first() {
        let data = load(DatasetKind::Locomo, &fixture("locomo_small.json")).unwrap();
        let index = TurnIndex::new(&data.conversations[0]);
        let top = index.top("Where did Ben's sister move?", 3);
        assert_eq!(top[0], "D2:3");
        let top = index.top("kayak", 5);
        assert_eq!(
            top,
            ["D1:4", "D2:1"],
            "both kayak turns, ties in turn order"
        );
        assert!(index.top("zebra", 5).is_empty());
    }

    #[test]
    fn recall_counts_evidence_within_k() {
        let ranked: Vec<Vec<String>> = [vec!["D1:1"], vec!["D2:2", "D1:3"], vec!["D9:9"]]
            .iter()
            .map(|ids| ids.iter().map(|s| (*s).to_owned()).collect())
            .collect();
        let evidence = vec!["D1:3".to_owned(), "D9:9".to_owned()];
        assert_eq!(recall_at(&ranked, &evidence, 1), Some(0.0));
        assert_eq!(recall_at(&ranked, &evidence, 2), Some(0.5));
        assert_eq!(recall_at(&ranked, &evidence, 3), Some(1.0));
        assert_eq!(recall_at(&ranked, &[], 3), None);
    }
}
