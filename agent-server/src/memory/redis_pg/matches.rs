//! Lexical recall's ranking, on this side of the wire: Postgres finds the session's items that
//! hold a word of the query (through its full-text index, see `longterm::RECALL_SQL`) and sends
//! each with its `tsvector`; here they are scored with Okapi BM25, the embedded store's formula
//! ([`Bm25`]), and cut to the candidate pool.
//!
//! Why not in SQL: scored there (each match's `tsvector` unnested, joined with the query's words
//! and grouped), a match cost Postgres tens of microseconds, so the episodes of a session a few
//! dozen turns long made recall most of Postgres's work per turn. Read from its binary form and
//! scored here, a match costs less than its transfer: a recall whose 10,000 items all match took
//! 43 ms, against 93 ms scored in SQL (docs/results/added-latency.md).
//!
//! The statistics are Postgres's words: a text's length is its last position (stopwords are
//! left out of a `tsvector` but take their positions, so this counts them, as the embedded index
//! does, up to the last word that is not one), a term's frequency in a text is the number of its
//! positions, a lexeme's document frequency is the number of matches holding it (every item
//! holding a query word is a match), and the document count is the session's own (kept by
//! triggers, migrations 3 and 8). One difference from the embedded index: the average length is
//! that of the matches, not of the whole session, which would mean reading every item of the
//! session or keeping a total through every change of text.

use std::error::Error;

use chrono::{DateTime, Utc};
use tokio_postgres::types::{FromSql, Type};

use crate::memory::lexical::Bm25;

/// A `tsvector` read from Postgres's binary form: each lexeme with its number of positions, and
/// the text's length (its largest position). Borrows the lexemes from the row.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Lexemes<'a> {
    /// Each lexeme, with how many positions it has (at most 256: Postgres keeps no more).
    counts: Vec<(&'a str, u16)>,
    /// The largest position of any lexeme: the number of words of the text, up to its last word
    /// that is not a stopword. 0 for a `tsvector` without positions.
    len: u16,
}

impl Lexemes<'_> {
    /// How many positions `lexeme` has here (0 when it is not one of these lexemes).
    fn count(&self, lexeme: &str) -> u16 {
        self.counts
            .iter()
            .find(|(l, _)| *l == lexeme)
            .map_or(0, |(_, n)| *n)
    }
}

/// Positions are 14 bits; the 2 above them are the weight.
const POSITION_BITS: u16 = 0x3fff;

/// The binary form, as Postgres's `tsvectorsend` writes it: the number of lexemes (int32), then
/// for each its text and a NUL byte, its number of positions (uint16) and the positions (uint16
/// each, weight in the top bits), all big-endian.
impl<'a> FromSql<'a> for Lexemes<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        fn take<'a>(raw: &mut &'a [u8], n: usize) -> Result<&'a [u8], &'static str> {
            if raw.len() < n {
                return Err("tsvector ends early");
            }
            let (head, rest) = raw.split_at(n);
            *raw = rest;
            Ok(head)
        }
        fn number(raw: &mut &[u8]) -> Result<u16, &'static str> {
            let bytes = take(raw, 2)?;
            Ok(u16::from_be_bytes([bytes[0], bytes[1]]))
        }
        let mut raw = raw;
        let size = take(&mut raw, 4)?;
        let size = i32::from_be_bytes([size[0], size[1], size[2], size[3]]);
        let size = usize::try_from(size).map_err(|_| "negative tsvector size")?;
        let mut counts = Vec::with_capacity(size.min(raw.len()));
        let mut len = 0;
        for _ in 0..size {
            let end = raw
                .iter()
                .position(|&b| b == 0)
                .ok_or("tsvector lexeme without its end")?;
            let lexeme = std::str::from_utf8(take(&mut raw, end)?)?;
            take(&mut raw, 1)?;
            let positions = number(&mut raw)?;
            for _ in 0..positions {
                len = len.max(number(&mut raw)? & POSITION_BITS);
            }
            counts.push((lexeme, positions));
        }
        if !raw.is_empty() {
            return Err("bytes after the tsvector's last lexeme".into());
        }
        Ok(Self { counts, len })
    }

    fn accepts(ty: &Type) -> bool {
        ty.name() == "tsvector"
    }
}

/// An item Postgres found for a query (`item`: its row, read into a fact only once it is among
/// the best), with what ranking needs: its lexemes, its time and its row number.
pub(super) struct Match<'a, T> {
    pub item: T,
    pub observed_at: DateTime<Utc>,
    pub seq: i64,
    pub lexemes: Lexemes<'a>,
}

/// `matches` scored with BM25 against `query` (the query's own lexemes: one that occurs twice in
/// it counts twice) over a list of `documents` items, best first, at most `pool` of them. Ties
/// go to the newer item, then to the later written one.
pub(super) fn ranked<T>(
    matches: Vec<Match<'_, T>>,
    query: &Lexemes<'_>,
    documents: u64,
    pool: usize,
) -> Vec<(T, f64)> {
    if matches.is_empty() || pool == 0 {
        return Vec::new();
    }
    let total: f64 = matches.iter().map(|m| f64::from(m.lexemes.len)).sum();
    let bm25 = Bm25::new(documents as f64, total / matches.len() as f64);
    let mut scored: Vec<(Match<'_, T>, f64)> = matches.into_iter().map(|m| (m, 0.0)).collect();
    let mut counts: Vec<u16> = Vec::with_capacity(scored.len());
    for &(word, times) in &query.counts {
        // Each match's count of the word, looked up once for its frequency and its score.
        counts.clear();
        counts.extend(scored.iter().map(|(m, _)| m.lexemes.count(word)));
        let holders = counts.iter().filter(|&&tf| tf > 0).count();
        if holders == 0 {
            continue;
        }
        let idf = bm25.idf(holders as f64);
        for ((m, score), &tf) in scored.iter_mut().zip(&counts) {
            if tf > 0 {
                *score +=
                    f64::from(times) * bm25.term(idf, f64::from(tf), f64::from(m.lexemes.len));
            }
        }
    }
    scored.sort_by(|(a, a_score), (b, b_score)| {
        b_score
            .total_cmp(a_score)
            .then(b.observed_at.cmp(&a.observed_at))
            .then(b.seq.cmp(&a.seq))
    });
    scored.truncate(pool);
    scored
        .into_iter()
        .map(|(m, score)| (m.item, score))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tsvectorsend`'s form of `lexemes` (text, positions).
    fn binary(lexemes: &[(&str, &[u16])]) -> Vec<u8> {
        let mut raw = (lexemes.len() as i32).to_be_bytes().to_vec();
        for (text, positions) in lexemes {
            raw.extend_from_slice(text.as_bytes());
            raw.push(0);
            raw.extend_from_slice(&(positions.len() as u16).to_be_bytes());
            for p in *positions {
                raw.extend_from_slice(&p.to_be_bytes());
            }
        }
        raw
    }

    fn read(raw: &[u8]) -> Result<Lexemes<'_>, String> {
        Lexemes::from_sql(&Type::TEXT, raw).map_err(|e| e.to_string())
    }

    #[test]
    fn reads_lexemes_their_counts_and_the_last_position_without_weights() {
        // 'cake':2,7 'lie':4C (weight C sets the top bits)
        let raw = binary(&[("cake", &[2, 7]), ("lie", &[4 | 0x4000])]);
        let read = read(&raw).unwrap();
        assert_eq!(read.counts, vec![("cake", 2), ("lie", 1)]);
        assert_eq!(read.len, 7);
        assert_eq!(read.count("cake"), 2);
        assert_eq!(read.count("pie"), 0);
        assert_eq!(
            super::Lexemes::from_sql(&Type::TEXT, &binary(&[])).unwrap(),
            Lexemes::default()
        );
    }

    /// A match of `text` at minute `minute`, row `seq`, with `lexemes` (text, positions).
    fn found<'a>(
        text: &'a str,
        minute: i64,
        seq: i64,
        lexemes: &[(&'a str, &[u16])],
    ) -> Match<'a, &'a str> {
        Match {
            item: text,
            observed_at: DateTime::from_timestamp(1_700_000_000 + minute * 60, 0).unwrap(),
            seq,
            lexemes: Lexemes {
                counts: lexemes.iter().map(|(l, p)| (*l, p.len() as u16)).collect(),
                len: lexemes
                    .iter()
                    .flat_map(|(_, p)| p.iter().copied())
                    .max()
                    .unwrap_or(0),
            },
        }
    }

    fn texts<'a>(ranked: &[(&'a str, f64)]) -> Vec<&'a str> {
        ranked.iter().map(|(text, _)| *text).collect()
    }

    #[test]
    fn matches_rank_by_bm25_over_the_matches_then_newest_then_last_written() {
        let query = Lexemes {
            counts: vec![("pie", 1), ("recip", 2)],
            len: 3,
        };
        let matches = vec![
            found("pie", 0, 1, &[("pie", &[1])]),
            found("pie again", 1, 2, &[("pie", &[1]), ("again", &[2])]),
            found("a recipe", 2, 3, &[("recip", &[2])]),
            found("pie, later", 5, 5, &[("pie", &[1]), ("later", &[2])]),
            found("pie, same minute", 5, 4, &[("pie", &[1]), ("same", &[2])]),
        ];
        let ranked = ranked(matches, &query, 10, 10);
        // The rarer lexeme, asked twice, first; among texts of equal score the newer one, and at
        // one time the later written one.
        assert_eq!(
            texts(&ranked),
            [
                "a recipe",
                "pie",
                "pie, later",
                "pie, same minute",
                "pie again"
            ]
        );
        // Its score, by hand: 1 of 5 matches holds "recip", 10 documents, average length 9/5.
        let bm25 = Bm25::new(10.0, 9.0 / 5.0);
        let expected = 2.0 * bm25.term(bm25.idf(1.0), 1.0, 2.0);
        assert!((ranked[0].1 - expected).abs() < 1e-12, "{ranked:?}");
        assert!(ranked[1].1 > ranked[2].1, "a shorter text ranks higher");
    }

    #[test]
    fn the_pool_keeps_the_best_and_an_empty_pool_nothing() {
        let query = Lexemes {
            counts: vec![("pie", 1)],
            len: 1,
        };
        let names = ["pie 0", "pie 1", "pie 2", "pie 3", "pie 4"];
        let matches = || {
            (0..5)
                .map(|i| found(names[i], i as i64, i as i64, &[("pie", &[1]), ("x", &[2])]))
                .collect::<Vec<_>>()
        };
        assert_eq!(texts(&ranked(matches(), &query, 5, 2)), ["pie 4", "pie 3"]);
        assert!(ranked(matches(), &query, 5, 0).is_empty());
        assert!(ranked::<&str>(Vec::new(), &query, 5, 3).is_empty());
    }

    #[test]
    fn a_malformed_tsvector_is_an_error_not_a_panic() {
        let whole = binary(&[("cake", &[2, 7])]);
        for cut in 0..whole.len() {
            assert!(read(&whole[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = whole.clone();
        longer.push(1);
        assert!(read(&longer).is_err());
        assert!(read(&[0xff, 0xff, 0xff, 0xff]).is_err(), "negative size");
        assert!(read(&binary(&[("\u{e9}", &[1])])[..]).is_ok());
        let mut bad_utf8 = binary(&[("ab", &[1])]);
        bad_utf8[4] = 0xff;
        assert!(read(&bad_utf8).is_err());
    }
}
