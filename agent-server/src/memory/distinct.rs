//! The distinct words of a text in the order first seen, in time linear in the text: what both
//! the query terms ([`ranking`](super::ranking)) and the lexical index's analysis
//! ([`lexical`](super::lexical)) need, and any user can send a long text.

use std::collections::HashMap;

/// The hasher of maps keyed by user text (stems, vocabularies, distinct words): foldhash, randomly
/// seeded per map. SipHash, the standard map's, was about 4 % of a builtin turn's instructions.
/// Seeded, foldhash still spreads words an attacker chose without knowing the seed; and these maps
/// stay small (a text's words, a session's vocabulary, a thread's stem cache), which bounds what
/// any collisions could cost.
pub(crate) type TextHasher = foldhash::fast::RandomState;

/// Distinct words up to which a repeat is found by going through those there are: a chat message
/// or a fact is usually a sentence, for which that is cheaper than hashing.
const LINEAR: usize = 32;

/// Distinct words in the order first seen. A repeat is found by going through the words while
/// there are at most [`LINEAR`] of them, and through a seeded map beyond, so that a long text
/// costs linear time rather than quadratic.
#[derive(Debug, Default)]
pub(crate) struct FirstSeen {
    words: Vec<String>,
    /// Where each word is in `words`: kept only once there are more than [`LINEAR`].
    positions: HashMap<String, usize, TextHasher>,
}

impl FirstSeen {
    /// Where `word` is among the distinct words, added at the end if it is new.
    pub(crate) fn position(&mut self, word: &str) -> usize {
        let found = if self.words.len() <= LINEAR {
            self.words.iter().position(|known| known == word)
        } else {
            self.positions.get(word).copied()
        };
        if let Some(at) = found {
            return at;
        }
        let at = self.words.len();
        self.words.push(word.to_owned());
        if self.words.len() > LINEAR {
            if self.positions.is_empty() {
                self.positions.extend(self.words.iter().cloned().zip(0..));
            } else {
                self.positions.insert(word.to_owned(), at);
            }
        }
        at
    }

    /// The distinct words, in the order first seen.
    pub(crate) fn into_words(self) -> Vec<String> {
        self.words
    }
}
