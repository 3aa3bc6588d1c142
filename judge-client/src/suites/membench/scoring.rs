//! Scoring exactly as the datasets' authors define it.
//!
//! LoCoMo (its public evaluation code, `task_eval/evaluation.py` and `evaluate_gpts.py`): answers
//! are normalised (commas dropped, lower case, ASCII punctuation removed, the words a/an/the/and
//! removed, whitespace collapsed), each token Porter-stemmed, and compared by token F1. Category 1
//! splits both answers on commas and averages, over the gold parts, the best F1 of any predicted
//! part; category 3 keeps the gold answer up to its first `;`; categories 2 and 4 are plain token
//! F1; category 5 is a two-option question whose one-letter replies are mapped back to the option,
//! scoring 1 when the reply says "not mentioned" or "no information available".
//!
//! Stemming: NLTK's `PorterStemmer()` runs in its `NLTK_EXTENSIONS` mode, a few rules beyond
//! Porter's 1980 algorithm (irregular forms such as "dying"/"skies", and 1b/1c details); the
//! `porter-stemmer` crate implements the original algorithm, so a rare word may stem differently
//! from the authors' runs. No crate implements NLTK's extension mode.
//!
//! LongMemEval defines accuracy with a model judge (see [`super::judge`]); without one, its
//! accuracy is not applicable and the plain token F1 above is shown as a labelled stand-in.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use super::dataset::locomo::NOT_MENTIONED;

static ARTICLES: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(a|an|the|and)\b").expect("valid regex"));

/// LoCoMo's `normalize_answer`.
pub fn normalize_answer(text: &str) -> String {
    let lowered = text.replace(',', "").to_lowercase();
    let no_punctuation: String = lowered
        .chars()
        .filter(|c| !c.is_ascii_punctuation())
        .collect();
    let no_articles = ARTICLES.replace_all(&no_punctuation, " ");
    no_articles.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Normalised, Porter-stemmed tokens: what LoCoMo's F1 and the reference retriever compare.
pub fn stemmed_tokens(text: &str) -> Vec<String> {
    normalize_answer(text)
        .split_whitespace()
        .map(porter_stemmer::stem)
        .collect()
}

/// LoCoMo's `f1_score`: token F1 of stemmed, normalised tokens (0 when nothing is shared).
pub fn token_f1(prediction: &str, gold: &str) -> f64 {
    let predicted = stemmed_tokens(prediction);
    let expected = stemmed_tokens(gold);
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for token in &expected {
        *counts.entry(token.as_str()).or_default() += 1;
    }
    let mut same = 0usize;
    for token in &predicted {
        if let Some(n) = counts.get_mut(token.as_str())
            && *n > 0
        {
            *n -= 1;
            same += 1;
        }
    }
    if same == 0 {
        return 0.0;
    }
    let precision = same as f64 / predicted.len() as f64;
    let recall = same as f64 / expected.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

/// LoCoMo's `f1` for category 1: both answers split on commas; the mean over gold parts of the
/// best F1 against any predicted part.
pub fn multi_answer_f1(prediction: &str, gold: &str) -> f64 {
    let predicted: Vec<&str> = prediction.split(',').map(str::trim).collect();
    let parts: Vec<&str> = gold.split(',').map(str::trim).collect();
    let total: f64 = parts
        .iter()
        .map(|g| predicted.iter().map(|p| token_f1(p, g)).fold(0.0, f64::max))
        .sum();
    total / parts.len() as f64
}

/// The two options of a category-5 question, in the order they were offered.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TwoOptions {
    pub a: String,
    pub b: String,
}

impl TwoOptions {
    /// "Not mentioned in the conversation" against the adversarial answer; `not_mentioned_first`
    /// comes from the run's seeded generator.
    pub fn new(adversarial: &str, not_mentioned_first: bool) -> Self {
        let (a, b) = if not_mentioned_first {
            (NOT_MENTIONED, adversarial)
        } else {
            (adversarial, NOT_MENTIONED)
        };
        Self {
            a: a.to_owned(),
            b: b.to_owned(),
        }
    }

    /// The words added to the question (`evaluate_gpts.py`).
    pub fn suffix(&self) -> String {
        format!(
            " Select the correct answer: (a) {} (b) {}. ",
            self.a, self.b
        )
    }

    /// LoCoMo's `get_cat_5_answer`: a one-letter or `(x)` reply becomes its option; any other
    /// reply is kept (lower-cased, as the original does).
    pub fn resolve(&self, reply: &str) -> String {
        let reply = reply.trim().to_lowercase();
        match reply.chars().count() {
            1 if reply.contains('a') => self.a.clone(),
            1 => self.b.clone(),
            3 if reply.contains("(a)") => self.a.clone(),
            3 => self.b.clone(),
            _ => reply,
        }
    }
}

/// The words LoCoMo adds to a question of `category` (besides category 5's options).
pub fn locomo_question(category: &str, question: &str, options: Option<&TwoOptions>) -> String {
    match (category, options) {
        ("2", _) => {
            format!("{question} Use DATE of CONVERSATION to answer with an approximate date.")
        }
        ("5", Some(options)) => format!("{question}{}", options.suffix()),
        _ => question.to_owned(),
    }
}

/// LoCoMo's score of one reply: `answer` is the gold answer, `resolved` the reply after
/// [`TwoOptions::resolve`] for category 5.
pub fn locomo_score(category: &str, resolved: &str, answer: &str) -> f64 {
    match category {
        "1" => multi_answer_f1(resolved, answer),
        "3" => token_f1(resolved, answer.split(';').next().unwrap_or("").trim()),
        "5" => {
            let lower = resolved.to_lowercase();
            let abstained =
                lower.contains("no information available") || lower.contains("not mentioned");
            if abstained { 1.0 } else { 0.0 }
        }
        _ => token_f1(resolved, answer),
    }
}

/// LoCoMo's categories by number, named as Mem0's paper maps them.
pub fn locomo_category_name(category: &str) -> &'static str {
    match category {
        "1" => "multi-hop",
        "2" => "temporal",
        "3" => "open-domain",
        "4" => "single-hop",
        "5" => "adversarial",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn normalisation_follows_locomo() {
        assert_eq!(
            normalize_answer("The cat, and a Dog's bowl!"),
            "cat dogs bowl"
        );
        assert_eq!(normalize_answer("  An   apple  "), "apple");
        assert_eq!(normalize_answer("Theatre andante"), "theatre andante");
    }

    #[test]
    fn porter_stems_as_the_original_algorithm() {
        let stems: Vec<String> = ["running", "painted", "ponies", "caresses", "generalization"]
            .iter()
            .map(|w| porter_stemmer::stem(w))
            .collect();
        assert_eq!(stems, ["run", "paint", "poni", "caress", "gener"]);
    }

    #[test]
    fn token_f1_by_hand() {
        // "painted sunrise" -> [paint, sunris]; gold "sunrise" -> [sunris]: P 1/2, R 1, F1 2/3.
        assert!(close(token_f1("painted a sunrise", "Sunrise"), 2.0 / 3.0));
        assert!(close(token_f1("7 May 2023", "7 May 2023"), 1.0));
        assert!(close(token_f1("I don't know", "Lisbon"), 0.0));
        assert!(close(token_f1("", "Lisbon"), 0.0));
        // Repeated tokens count once each: pred [boston, boston], gold [boston]: P 1/2, R 1.
        assert!(close(token_f1("Boston Boston", "Boston"), 2.0 / 3.0));
    }

    #[test]
    fn category_one_averages_best_partial_matches() {
        // Gold parts: [sunris] matched fully by "sunrise"; [forest] missing: mean (1 + 0) / 2.
        assert!(close(
            locomo_score("1", "sunrise, lake", "sunrise, forest"),
            0.5
        ));
        assert!(close(
            locomo_score("1", "forest, sunrise", "sunrise, forest"),
            1.0
        ));
    }

    #[test]
    fn category_three_keeps_the_gold_up_to_the_semicolon() {
        assert!(close(locomo_score("3", "Yes", "Yes; she paints"), 1.0));
        assert!(close(token_f1("Yes", "Yes; she paints"), 0.5));
    }

    #[test]
    fn category_five_reads_the_option_and_abstention_words() {
        let options = TwoOptions::new("a blue canoe", true);
        assert_eq!(options.a, NOT_MENTIONED);
        assert_eq!(options.resolve("a"), NOT_MENTIONED);
        assert_eq!(options.resolve(" (b) "), "a blue canoe");
        assert!(close(
            locomo_score("5", &options.resolve("(a)"), NOT_MENTIONED),
            1.0
        ));
        assert!(close(
            locomo_score("5", &options.resolve("b"), NOT_MENTIONED),
            0.0
        ));
        assert!(close(
            locomo_score(
                "5",
                &options.resolve("No information available."),
                NOT_MENTIONED
            ),
            1.0
        ));
        let question = locomo_question("5", "What colour is the canoe?", Some(&options));
        assert_eq!(
            question,
            "What colour is the canoe? Select the correct answer: (a) Not mentioned in the conversation (b) a blue canoe. "
        );
        assert_eq!(
            locomo_question("2", "When?", None),
            "When? Use DATE of CONVERSATION to answer with an approximate date."
        );
        assert_eq!(locomo_question("4", "Who?", None), "Who?");
    }
}
