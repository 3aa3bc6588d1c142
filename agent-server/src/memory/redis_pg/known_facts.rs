//! Long-term facts of recently used small sessions, kept in the process, so that a recall whose
//! session has not changed since ranks its facts here (`ts_rank.rs`) instead of having Postgres
//! read, rank and send them (docs/benchmarks.md, "Facts ranked in the process").
//!
//! Kept right the way `recent.rs` keeps working memory: an entry is the session's facts *as of
//! one turn number*, the session row's `(epoch, turn_seq)`, which every write of the session's
//! facts changes in the same transaction (a batch increments `turn_seq`, a reset bumps `epoch`;
//! no other statement writes facts). Recall sends the entry's pair with its read, and Postgres
//! says, from the same snapshot as the rest of the read, whether the session is still there
//! (see `longterm::RECALL_SQL`); if not, the read goes on in SQL. What changes an entry:
//! - a fill: a read of a session with at most `longterm::SEARCH_FROM_FACTS` facts whose entry
//!   was missing or stale returns all its facts with their `tsv`;
//! - a batch of this process that committed: it brings the entry from `first - 1` to its last
//!   turn number with what its statements changed, as Postgres returned the rows (so stored
//!   values, `seq` and `tsv` are Postgres's own); an entry at any other number is dropped, as is
//!   one that grows past `SEARCH_FROM_FACTS`;
//! - a reset or a compensation drops it (its pair would no longer match anyway).
//!
//! Bounded by `--memory-cache-items` facts over all sessions, as `recent.rs` is by items;
//! evicting is always safe: the next recall reads Postgres.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use protocol::control::{FactKind, FactSource};
use uuid::Uuid;

use super::session_lru::{SharedLru, Weighed};
use super::ts_rank::{Document, Terms};
use crate::memory::Fact;

/// A stored fact with what recall's orders and ranking need besides.
#[derive(Debug, Clone)]
pub(super) struct KnownFact {
    pub fact: Fact,
    /// `agentwall_facts.seq`: its write order, the last tie-break of recall's orders.
    pub seq: i64,
    /// Its `tsv`, for a fact of kind `fact` (standing items are not searched).
    pub document: Option<Document>,
}

/// One change a committed batch made to a session's facts, in the order its statements ran.
#[derive(Debug)]
pub(super) enum FactChange {
    /// Deleted (an id the session does not hold changes nothing, as in the `DELETE`).
    Retired(Uuid),
    /// Inserted, or written over the fact with the same key (which it replaces, id and all).
    Written(KnownFact),
    /// Restated in place with its text unchanged: its new time, importance and source (the rest
    /// of the row, `tsv` included, stays).
    Restated {
        id: Uuid,
        observed_at: DateTime<Utc>,
        importance: f32,
        source: FactSource,
    },
}

/// A session's facts at one `(epoch, turn_seq)`. Shared with the recalls that read it; a commit
/// makes a changed copy.
#[derive(Debug, Clone)]
pub(super) struct SessionFacts {
    pub epoch: u64,
    pub turn_seq: u64,
    /// Kind `rule` and `reminder`, in recall's order: by time, then write order.
    standing: Vec<Arc<KnownFact>>,
    /// Kind `fact`, in no particular order, each with its document.
    facts: Vec<Arc<KnownFact>>,
}

impl Weighed for Arc<SessionFacts> {
    fn weight(&self) -> usize {
        1 + self.standing.len() + self.facts.len()
    }

    fn at(&self) -> (u64, u64) {
        (self.epoch, self.turn_seq)
    }
}

impl SessionFacts {
    /// The facts a fill read: `None` if a fact of kind `fact` came without its document.
    pub(super) fn new(
        epoch: u64,
        turn_seq: u64,
        standing: Vec<KnownFact>,
        facts: Vec<KnownFact>,
    ) -> Option<Self> {
        if facts.iter().any(|f| f.document.is_none()) {
            return None;
        }
        let mut session = Self {
            epoch,
            turn_seq,
            standing: standing.into_iter().map(Arc::new).collect(),
            facts: facts.into_iter().map(Arc::new).collect(),
        };
        session.sort_standing();
        Some(session)
    }

    /// What recall's statement would return for this session: the standing items, and the
    /// facts that match `terms` with their `ts_rank`, best first (then newer, then later
    /// written), at most `pool`.
    pub(super) fn recall(&self, terms: &Terms, pool: usize) -> (Vec<Fact>, Vec<(Fact, f64)>) {
        let standing = self.standing.iter().map(|f| f.fact.clone()).collect();
        if terms.is_empty() || pool == 0 {
            return (standing, Vec::new());
        }
        let mut ranked: Vec<(f32, &KnownFact)> = self
            .facts
            .iter()
            .filter_map(|f| Some((f.document.as_ref()?.rank(terms)?, &**f)))
            .collect();
        // ORDER BY rank DESC, observed_at DESC, observed_ns DESC, seq DESC.
        ranked.sort_unstable_by(|(ra, a), (rb, b)| {
            rb.total_cmp(ra)
                .then(b.fact.observed_at.cmp(&a.fact.observed_at))
                .then(b.seq.cmp(&a.seq))
        });
        ranked.truncate(pool);
        let candidates = ranked
            .into_iter()
            .map(|(rank, f)| (f.fact.clone(), f64::from(rank)))
            .collect();
        (standing, candidates)
    }

    /// How many facts of kind `fact` the session holds.
    fn searchable(&self) -> usize {
        self.facts.len()
    }

    /// Applies one change; `false` if the entry cannot follow it (a restated fact it does not
    /// hold, a written fact of kind `fact` without its document): the caller drops it.
    fn apply(&mut self, change: FactChange) -> bool {
        match change {
            FactChange::Retired(id) => {
                self.remove(|f| f.fact.id == id);
            }
            FactChange::Written(written) => {
                if let Some(key) = &written.fact.key {
                    self.remove(|f| f.fact.key.as_ref() == Some(key));
                }
                let id = written.fact.id;
                self.remove(|f| f.fact.id == id);
                if !self.insert(written) {
                    return false;
                }
            }
            FactChange::Restated {
                id,
                observed_at,
                importance,
                source,
            } => {
                let Some(at) = self.facts.iter().position(|f| f.fact.id == id) else {
                    return false;
                };
                // A copy only while a recall still holds the entry this one was made from.
                let fact = &mut Arc::make_mut(&mut self.facts[at]).fact;
                fact.observed_at = observed_at;
                fact.importance = importance;
                fact.source = source;
            }
        }
        true
    }

    fn insert(&mut self, fact: KnownFact) -> bool {
        if fact.fact.kind == FactKind::Fact {
            if fact.document.is_none() {
                return false;
            }
            self.facts.push(Arc::new(fact));
        } else {
            self.standing.push(Arc::new(fact));
            self.sort_standing();
        }
        true
    }

    fn remove(&mut self, gone: impl Fn(&KnownFact) -> bool) {
        self.facts.retain(|f| !gone(f));
        self.standing.retain(|f| !gone(f));
    }

    /// ORDER BY observed_at, observed_ns, seq.
    fn sort_standing(&mut self) {
        self.standing.sort_by_key(|f| (f.fact.observed_at, f.seq));
    }
}

/// Facts of recently used sessions; see the module documentation.
pub(super) struct KnownFacts {
    inner: SharedLru<Arc<SessionFacts>>,
    /// Sessions with more facts of kind `fact` than this are not kept.
    most_facts: usize,
    /// False with a budget of 0: nothing is kept.
    enabled: bool,
}

impl KnownFacts {
    pub(super) fn new(budget: usize, most_facts: usize) -> Self {
        Self {
            inner: SharedLru::new(budget),
            most_facts,
            enabled: budget > 0,
        }
    }

    /// Whether anything is kept (a budget above 0).
    pub(super) fn enabled(&self) -> bool {
        self.enabled
    }

    /// The session's entry, at whatever turn number it is (recall asks Postgres whether that is
    /// still the session's).
    pub(super) fn get(&self, session: &str) -> Option<Arc<SessionFacts>> {
        self.inner.lock().get(session).cloned()
    }

    /// Keeps what a fill read, unless an entry at a later point is kept already.
    pub(super) fn fill(&self, session: &str, facts: Arc<SessionFacts>) {
        if facts.searchable() > self.most_facts {
            return;
        }
        self.inner.lock().put_unless_later(session, facts);
    }

    /// A batch of this process committed turns `first..=last` of the session at `epoch`, with
    /// `changes`. Brings an entry at `first - 1` up to `last`; drops any other.
    pub(super) fn committed(
        &self,
        session: &str,
        epoch: u64,
        (first, last): (u64, u64),
        changes: Vec<FactChange>,
    ) {
        let mut lru = self.inner.lock();
        let Some(entry) = lru.take(session) else {
            return;
        };
        if entry.epoch != epoch || entry.turn_seq.checked_add(1) != Some(first) {
            return;
        }
        let mut entry = Arc::unwrap_or_clone(entry);
        for change in changes {
            if !entry.apply(change) {
                return;
            }
        }
        if entry.searchable() > self.most_facts {
            return;
        }
        entry.turn_seq = last;
        lru.put(session, Arc::new(entry));
    }

    /// Drops the session's entry (a reset, a compensation).
    pub(super) fn forget(&self, session: &str) {
        self.inner.lock().take(session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(1_900_000_000_000 + ms).unwrap()
    }

    fn fact(kind: FactKind, text: &str, key: Option<&str>, ms: i64, seq: i64) -> KnownFact {
        let document = (kind == FactKind::Fact).then(|| {
            let tsv: Vec<String> = text
                .split(' ')
                .enumerate()
                .map(|(i, w)| format!("'{w}':{}", i + 1))
                .collect();
            Document::parse(&tsv.join(" ")).expect("a tsvector")
        });
        KnownFact {
            fact: Fact {
                id: Uuid::now_v7(),
                kind,
                key: key.map(str::to_owned),
                text: text.to_owned(),
                data: None,
                observed_at: at(ms),
                importance: 0.5,
                source: FactSource::Extracted,
            },
            seq,
            document,
        }
    }

    fn terms(words: &[&str]) -> Terms {
        Terms::new(words.iter().map(|w| Arc::from(*w)).collect())
    }

    fn texts(facts: &[Fact]) -> Vec<&str> {
        facts.iter().map(|f| f.text.as_str()).collect()
    }

    fn candidates(known: &KnownFacts, session: &str, words: &[&str]) -> Vec<String> {
        let entry = known.get(session).expect("an entry");
        let (_, found) = entry.recall(&terms(words), 10);
        found.into_iter().map(|(f, _)| f.text).collect()
    }

    #[test]
    fn recall_ranks_matching_facts_then_orders_ties_newest_and_last_written_first() {
        let facts = vec![
            fact(FactKind::Fact, "cat", None, 10, 1),
            fact(FactKind::Fact, "cat dog", None, 10, 2),
            fact(FactKind::Fact, "dog", None, 20, 3),
            fact(FactKind::Fact, "fish", None, 30, 4),
            fact(FactKind::Fact, "dog", None, 20, 5),
        ];
        let standing = vec![
            fact(FactKind::Rule, "later rule", None, 50, 6),
            fact(FactKind::Reminder, "early reminder", None, 40, 7),
        ];
        let session = SessionFacts::new(0, 3, standing, facts).expect("documents");
        let (standing, found) = session.recall(&terms(&["dog", "cat"]), 4);
        assert_eq!(texts(&standing), ["early reminder", "later rule"]);
        let found: Vec<&str> = found.iter().map(|(f, _)| f.text.as_str()).collect();
        // "cat dog" matches both words; the rest tie on rank and go newest, then last written.
        assert_eq!(found, ["cat dog", "dog", "dog", "cat"]);
        let (_, two) = session.recall(&terms(&["dog", "cat"]), 2);
        assert_eq!(two.len(), 2, "at most the pool");
        let (_, none) = session.recall(&terms(&[]), 4);
        assert!(none.is_empty(), "no words, no candidates");
    }

    #[test]
    fn a_commit_of_the_next_turns_applies_its_changes_and_any_other_drops_the_entry() {
        let known = KnownFacts::new(100, 256);
        let old = fact(FactKind::Fact, "cat", Some("pet"), 10, 1);
        let gone = fact(FactKind::Fact, "dog", None, 10, 2);
        let restated = fact(FactKind::Fact, "fish", None, 10, 3);
        let (gone_id, restated_id) = (gone.fact.id, restated.fact.id);
        let session = SessionFacts::new(1, 4, Vec::new(), vec![old, gone, restated.clone()]);
        known.fill("s", Arc::new(session.expect("documents")));

        let moved = FactChange::Restated {
            id: restated.fact.id,
            observed_at: at(99),
            importance: 0.75,
            source: FactSource::Promoted,
        };
        let changes = vec![
            FactChange::Retired(gone_id),
            moved,
            FactChange::Written(fact(FactKind::Fact, "parrot", Some("pet"), 20, 9)),
            FactChange::Written(fact(FactKind::Rule, "be brief", None, 20, 10)),
        ];
        known.committed("s", 1, (5, 6), changes);
        let entry = known.get("s").expect("extended");
        assert_eq!((entry.epoch, entry.turn_seq), (1, 6));
        assert_eq!(
            candidates(&known, "s", &["cat", "dog"]),
            Vec::<String>::new()
        );
        assert_eq!(
            candidates(&known, "s", &["parrot", "fish"]),
            ["fish", "parrot"]
        );
        let (standing, found) = entry.recall(&terms(&["fish"]), 10);
        assert_eq!(texts(&standing), ["be brief"]);
        assert_eq!(found[0].0.id, restated_id);
        assert_eq!(found[0].0.observed_at, at(99), "the restated values");
        assert_eq!(found[0].0.importance, 0.75);
        assert_eq!(found[0].0.source, FactSource::Promoted);
        assert_eq!(found[0].0.text, "fish", "the rest as it was");

        known.committed("s", 1, (8, 8), Vec::new());
        assert!(known.get("s").is_none(), "turn 7 was written elsewhere");
        known.fill(
            "s",
            Arc::new(SessionFacts::new(1, 8, Vec::new(), Vec::new()).unwrap()),
        );
        known.committed("s", 2, (9, 9), Vec::new());
        assert!(known.get("s").is_none(), "another epoch");
    }

    #[test]
    fn an_entry_that_cannot_follow_a_change_or_grows_too_big_is_dropped() {
        let known = KnownFacts::new(100, 2);
        let fill = || {
            SessionFacts::new(
                0,
                1,
                Vec::new(),
                vec![fact(FactKind::Fact, "a", None, 1, 1)],
            )
        };
        known.fill("s", Arc::new(fill().unwrap()));
        let unknown = FactChange::Restated {
            id: Uuid::now_v7(),
            observed_at: at(2),
            importance: 0.5,
            source: FactSource::Promoted,
        };
        known.committed("s", 0, (2, 2), vec![unknown]);
        assert!(known.get("s").is_none(), "restated a fact it does not hold");

        known.fill("s", Arc::new(fill().unwrap()));
        let more: Vec<FactChange> = (0..2)
            .map(|i| FactChange::Written(fact(FactKind::Fact, "c", None, 1, 3 + i)))
            .collect();
        known.committed("s", 0, (2, 2), more);
        assert!(known.get("s").is_none(), "3 facts, 2 at most");

        let big = (0..3)
            .map(|i| fact(FactKind::Fact, "d", None, 1, i))
            .collect();
        known.fill(
            "s",
            Arc::new(SessionFacts::new(0, 1, Vec::new(), big).unwrap()),
        );
        assert!(
            known.get("s").is_none(),
            "a fill past the limit is not kept"
        );
    }

    #[test]
    fn a_fill_keeps_a_later_entry() {
        let known = KnownFacts::new(100, 256);
        known.fill(
            "s",
            Arc::new(SessionFacts::new(0, 5, Vec::new(), Vec::new()).unwrap()),
        );
        known.fill(
            "s",
            Arc::new(SessionFacts::new(0, 4, Vec::new(), Vec::new()).unwrap()),
        );
        assert_eq!(known.get("s").unwrap().turn_seq, 5);
        known.forget("s");
        assert!(known.get("s").is_none());
    }
}
