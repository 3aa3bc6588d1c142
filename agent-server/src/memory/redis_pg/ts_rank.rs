//! Postgres's `ts_rank(tsv, query)`, computed in the process, bit for bit, for the queries recall
//! sends: plain lexemes OR-ed (`'cat' | 'dog'`, see `lexemes.rs`). It lets recall rank a session's
//! facts from `known_facts.rs` instead of asking Postgres to, with the same scores and so the same
//! order as the SQL path.
//!
//! Hand-written because no crate computes it; it is a port of `calc_rank_or` (Postgres's
//! `tsrank.c`, unchanged in substance since 8.3), with default weights and normalisation 0, the
//! only form recall uses. What makes it exact:
//! - the arithmetic is the C code's: `float` sums and quotients, one division by `double`
//!   (π²/6) whose result is rounded back to `float` when added, in the same order. Rust's `f32`
//!   and `f64` are IEEE single and double, as `float` and `double` are on every platform
//!   Postgres builds for, and neither side contracts to fused multiply-adds;
//! - the query's lexemes are summed in Postgres's order: sorted by bytes, duplicates dropped
//!   (`SortAndUniqItems`), the count of distinct lexemes dividing the sum;
//! - a lexeme's share of the sum depends only on how many positions it has in the document and
//!   their weights, which `tsv::text` gives (a lexeme stored without positions counts as one
//!   position of weight D, as Postgres's `posnull` does).
//!
//! `a_document_is_ranked_as_postgres_ranks_it` (tests/redis_pg/search.rs) checks this against
//! Postgres's own `ts_rank` over documents with repeated words, weights and quoted lexemes.

use std::sync::Arc;

/// `ts_rank`'s default weights, indexed as Postgres stores a weight: D, C, B, A.
const WEIGHTS: [f32; 4] = [0.1, 0.2, 0.4, 1.0];

/// π²/6 as `tsrank.c` writes it: the limit of the sum of 1/i², which bounds one lexeme's share.
#[allow(clippy::excessive_precision, clippy::approx_constant)]
const ZETA_2: f64 = 1.644_934_066_85;

/// A query's lexemes, in the order `ts_rank` sums them: sorted by bytes, without duplicates.
/// Shared with `lexemes.rs`, which keeps each word's lexeme.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Terms(Box<[Arc<str>]>);

impl Terms {
    pub(super) fn new(mut lexemes: Vec<Arc<str>>) -> Self {
        lexemes.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        lexemes.dedup();
        Self(lexemes.into_boxed_slice())
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The lexemes as a ready tsquery (`'cat' | 'it''s'`), `None` when there are none.
    pub(super) fn as_tsquery(&self) -> Option<String> {
        let operands: Vec<String> = self
            .0
            .iter()
            .map(|lexeme| format!("'{}'", lexeme.replace('\\', "\\\\").replace('\'', "''")))
            .collect();
        (!operands.is_empty()).then(|| operands.join(" | "))
    }
}

/// A `tsvector` as ranking reads it: each lexeme, sorted by bytes as Postgres keeps them, with
/// what it adds to a rank when a query names it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Document {
    lexemes: Box<[(Box<str>, f64)]>,
}

impl Document {
    /// Reads `tsvector` output (`'cat':2,5A 'it''s':3`); `None` if it is not in that form.
    pub(super) fn parse(text: &str) -> Option<Self> {
        let mut lexemes = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let (lexeme, after) = quoted(rest)?;
            let (weights, after) = positions(after)?;
            lexemes.push((lexeme.into_boxed_str(), share(&weights)));
            rest = match after.strip_prefix(' ') {
                Some(next) if !next.is_empty() => next,
                Some(_) => return None,
                None if after.is_empty() => after,
                None => return None,
            };
        }
        lexemes.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        Some(Self {
            lexemes: lexemes.into_boxed_slice(),
        })
    }

    /// `ts_rank(self, query)` when `self @@ query` (some lexeme of the query is in the document),
    /// `None` when it does not match.
    pub(super) fn rank(&self, query: &Terms) -> Option<f32> {
        let mut rank: f32 = 0.0;
        let mut matched = false;
        for term in &query.0 {
            let found = self
                .lexemes
                .binary_search_by(|(lexeme, _)| lexeme.as_bytes().cmp(term.as_bytes()));
            if let Ok(at) = found {
                // `res = res + (...) / 1.64493406685`: a double sum, stored back as float.
                rank = (f64::from(rank) + self.lexemes[at].1) as f32;
                matched = true;
            }
        }
        if !matched {
            return None;
        }
        // `res / size`: the int converted to float. A query has far fewer than 2^24 lexemes, so
        // the conversion is exact.
        #[allow(clippy::cast_precision_loss)]
        let size = query.0.len() as f32;
        Some(rank / size)
    }
}

/// What one lexeme with positions of these weights adds to a rank, before the division by the
/// query's size: `(wjm + resj - wjm / (jm + 1)²) / (π²/6)` in `calc_rank_or`.
fn share(weights: &[f32]) -> f64 {
    let mut resj: f32 = 0.0;
    let mut wjm: f32 = -1.0;
    let mut jm: usize = 0;
    for (j, &w) in weights.iter().enumerate() {
        resj += w / squared(j + 1);
        if w > wjm {
            wjm = w;
            jm = j;
        }
    }
    f64::from(wjm + resj - wjm / squared(jm + 1)) / ZETA_2
}

/// `(i) * (i)` as the C int, converted to float: exact, as a lexeme has at most 256 positions.
#[allow(clippy::cast_precision_loss)]
fn squared(i: usize) -> f32 {
    (i * i) as f32
}

/// A quoted lexeme at the start of `text` (`''` for a quote, `\\` for a backslash), and the rest.
pub(super) fn quoted(text: &str) -> Option<(String, &str)> {
    let mut chars = text.strip_prefix('\'')?.char_indices();
    let body = &text[1..];
    let mut lexeme = String::new();
    while let Some((at, c)) = chars.next() {
        match c {
            '\'' if body[at + 1..].starts_with('\'') => {
                chars.next();
                lexeme.push('\'');
            }
            '\'' => return Some((lexeme, &body[at + 1..])),
            '\\' => lexeme.push(chars.next()?.1),
            c => lexeme.push(c),
        }
    }
    None
}

/// The weights of the positions after a lexeme (`:2,5A`), or one weight D when it has none, and
/// the rest of the text.
fn positions(text: &str) -> Option<(Vec<f32>, &str)> {
    let Some(list) = text.strip_prefix(':') else {
        return Some((vec![WEIGHTS[0]], text));
    };
    let end = list.find(' ').unwrap_or(list.len());
    let weights = list[..end]
        .split(',')
        .map(|position| {
            let digits = position.trim_end_matches(['A', 'B', 'C', 'D']);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            match &position[digits.len()..] {
                "" | "D" => Some(WEIGHTS[0]),
                "C" => Some(WEIGHTS[1]),
                "B" => Some(WEIGHTS[2]),
                "A" => Some(WEIGHTS[3]),
                _ => None,
            }
        })
        .collect::<Option<Vec<f32>>>()?;
    Some((weights, &list[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(words: &[&str]) -> Terms {
        Terms::new(words.iter().map(|w| Arc::from(*w)).collect())
    }

    #[test]
    fn tsvector_output_is_read_with_its_quotes_positions_and_weights() {
        let doc = Document::parse(r"'a\\b':1,3A 'it''s':2 'plain'").expect("parses");
        let lexemes: Vec<&str> = doc.lexemes.iter().map(|(l, _)| &**l).collect();
        assert_eq!(lexemes, [r"a\b", "it's", "plain"]);
        assert_eq!(doc.lexemes[1].1, share(&[0.1]));
        assert_eq!(
            doc.lexemes[2].1,
            share(&[0.1]),
            "no positions: one of weight D"
        );
        assert_eq!(doc.lexemes[0].1, share(&[0.1, 1.0]));
        assert_eq!(Document::parse("").expect("empty").lexemes.len(), 0);
        for bad in [
            "cat",
            "'cat",
            "'cat':",
            "'cat':1X",
            "'cat':1  'dog'",
            "'cat':1 ",
        ] {
            assert_eq!(Document::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_rank_averages_the_shares_of_the_distinct_query_lexemes() {
        let doc = Document::parse("'cat':1,4 'dog':2").expect("parses");
        assert_eq!(doc.rank(&terms(&["fish"])), None, "no lexeme in common");
        // One position of weight D: (0.1 + 0.1 - 0.1) / (π²/6).
        let dog = (f64::from(0.1f32) / ZETA_2) as f32;
        assert_eq!(doc.rank(&terms(&["dog"])), Some(dog));
        assert_eq!(
            doc.rank(&terms(&["dog", "dog"])),
            Some(dog),
            "duplicates count once"
        );
        assert_eq!(doc.rank(&terms(&["dog", "fish"])), Some(dog / 2.0));
        let both = doc.rank(&terms(&["cat", "dog"])).expect("matches");
        assert!(both > dog / 2.0, "two positions weigh more than one");
    }
}
