//! Working memory of recently used sessions, kept in the process, so that a recall whose session
//! has not changed since it was last read or written here takes its items from memory instead of
//! reading and decoding the whole sorted set from Redis again (under load, that was about a third
//! of agent-server's CPU time per turn, and most of Redis's).
//!
//! An entry is the session's *committed* working memory as of one turn number: the session row's
//! `turn_seq` in Postgres, which every batch that writes the session increments under the row lock
//! and which a reset leaves alone while it bumps `epoch`. Recall reads `(epoch, turn_seq)` with the
//! facts, in one snapshot, and uses an entry only when both are equal to the entry's. What keeps
//! that right whoever wrote the session (this server or another):
//! - an entry is filled from Redis (set and TTL read in one MULTI/EXEC) with the items of turns
//!   numbered up to its `turn_seq` only: a batch appends its items to Redis before its COMMIT, so
//!   Redis also holds the items of turns in flight, which may still roll back;
//! - a batch of this server that committed brings the entry from `first - 1` to its last turn
//!   number by adding its own items; if the entry is at any other number, someone else wrote the
//!   session in between, and the entry is dropped;
//! - Redis drops a key whose real TTL ran out: an entry is not used past that time, nor extended
//!   by a write made after it;
//! - Redis changes that no commit numbers (a rolled-back batch's compensation, whose turn numbers
//!   the next batch reuses; a reset whose COMMIT failed after it cleared Redis) are followed by
//!   an increment of the sessions' `turn_seq` on its own (`Inner::invalidate`), which makes every
//!   server's entries stale.
//!
//! What is left, and logged at error level when it happens: if that increment fails too (Postgres
//! unreachable right then), entries may show items Redis no longer holds until the session is next
//! written.
//!
//! Bounded by a budget of items over all sessions (`--memory-cache-items`); least recently used
//! sessions go first. Evicting is always safe: the next recall reads Redis.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use chrono::{DateTime, Utc};

use crate::memory::lru::{self, WeightedLru};
use crate::memory::{MemoryConfig, WorkingItem, WorkingMemory};

/// Where an item sits in its session's sorted set, which orders by score (the item's time in
/// milliseconds) and then by member, whose fixed-width hex prefix is the turn number and the
/// item's position in its turn (see `working.rs`).
pub(super) type Order = (i64, u64, usize);

/// An item with its place in the set.
pub(super) type Placed = (Order, Arc<WorkingItem>);

/// A session's entry as [`RecentWorking::peek`] hands it out: its items, and the turn they are current
/// for.
pub(super) struct Peeked {
    pub epoch: u64,
    pub turn_seq: u64,
    pub items: Arc<Vec<Arc<WorkingItem>>>,
}

/// What one committed batch of this process did to one session.
pub(super) struct CommittedTurns {
    pub epoch: u64,
    /// The turn numbers the batch took, `first..=last` (a turn refused for its epoch took one
    /// and wrote nothing).
    pub first: u64,
    pub last: u64,
    /// The items it wrote.
    pub added: Vec<Placed>,
    /// When it sent them to Redis.
    pub written_at: Instant,
    /// When Redis drops the key at the latest, if the batch wrote items (which refreshes the
    /// key's TTL); `None` if it wrote none (an inject).
    pub expires: Option<Instant>,
}

/// The items of `items` live at `now`, as recall hands them out: a shared range of the list
/// when they are its newest (as they are, since the list is in time order, unless items of one
/// millisecond straddle the cutoff), else a list of their own.
pub(super) fn live(
    items: Arc<Vec<Arc<WorkingItem>>>,
    config: &MemoryConfig,
    now: DateTime<Utc>,
) -> WorkingMemory {
    // One subtraction per recall rather than a checked addition per item (`live_after` decides
    // as `is_live` does): per item, that was about 5 % of the server's CPU time per turn.
    let cutoff = config.live_after(now);
    let is_live = |item: &Arc<WorkingItem>| cutoff.is_none_or(|c| item.at > c);
    let first = items.iter().position(is_live).unwrap_or(items.len());
    if items[first..].iter().all(is_live) {
        let end = items.len();
        WorkingMemory::shared(items, first..end)
    } else {
        items.iter().filter(|item| is_live(item)).cloned().collect()
    }
}

/// Committed working memory of recently used sessions; see the module documentation.
pub(super) struct RecentWorking {
    /// Within a budget of items over all sessions (each session also counts one).
    inner: Mutex<WeightedLru<Entry>>,
    /// The newest items a session's working memory holds (`working_capacity`).
    capacity: usize,
}

struct Entry {
    epoch: u64,
    /// The session's `turn_seq` this entry is current for.
    turn_seq: u64,
    /// The places of `items` in the set.
    orders: Vec<Order>,
    /// The newest `capacity` items of committed turns, in the set's order: handed out shared,
    /// as the embedded cache does (see [`WorkingMemory`]), so a hit costs one reference count
    /// rather than one per item.
    items: Arc<Vec<Arc<WorkingItem>>>,
    /// When Redis drops the key at the latest, if nothing writes it again.
    expires: Instant,
}

impl Entry {
    fn weight(&self) -> usize {
        1 + self.items.len()
    }

    /// The session's `(epoch, turn_seq)` the entry is at.
    fn at(&self) -> (u64, u64) {
        (self.epoch, self.turn_seq)
    }
}

/// Keeps `entry` as the session's, the most recently used, unless it weighs more than the whole
/// budget (then the session keeps none).
fn keep(lru: &mut WeightedLru<Entry>, session: &str, entry: Entry) {
    let weight = entry.weight();
    if lru.fits(weight) {
        lru.put(session, entry, weight);
    } else {
        lru.take(session);
    }
}

impl RecentWorking {
    pub(super) fn new(capacity: usize, budget: usize) -> Self {
        Self {
            inner: Mutex::new(WeightedLru::new(budget)),
            capacity,
        }
    }

    /// The session's working memory at `(epoch, turn_seq)`, oldest first, if this process knows it.
    pub(super) fn get(
        &self,
        session: &str,
        epoch: u64,
        turn_seq: u64,
    ) -> Option<Arc<Vec<Arc<WorkingItem>>>> {
        let mut lru = lru::lock(&self.inner);
        let entry = lru.get(session)?;
        if entry.epoch != epoch || entry.turn_seq != turn_seq || entry.expires <= Instant::now() {
            return None;
        }
        Some(entry.items.clone())
    }

    /// The session's entry whatever turn it is current for: what working memory will be if
    /// Postgres then shows the same `(epoch, turn_seq)` (see `longterm::HeldEpisodes`).
    pub(super) fn peek(&self, session: &str) -> Option<Peeked> {
        let mut lru = lru::lock(&self.inner);
        let entry = lru.get(session)?;
        (entry.expires > Instant::now()).then(|| Peeked {
            epoch: entry.epoch,
            turn_seq: entry.turn_seq,
            items: entry.items.clone(),
        })
    }

    /// Remembers what Redis held for the session when recall read `(epoch, turn_seq)` from
    /// Postgres: the items of turns up to `turn_seq`. Returns them, newest `capacity`, oldest
    /// first. An entry already at a later point is kept.
    pub(super) fn fill(
        &self,
        session: &str,
        epoch: u64,
        turn_seq: u64,
        mut read: Vec<Placed>,
        expires: Instant,
    ) -> Arc<Vec<Arc<WorkingItem>>> {
        read.retain(|((_, turn, _), _)| *turn <= turn_seq);
        let (orders, items) = self.newest(read);

        let entry = Entry {
            epoch,
            turn_seq,
            orders,
            items: items.clone(),
            expires,
        };
        let mut lru = lru::lock(&self.inner);
        if lru.peek(session).is_none_or(|kept| kept.at() <= entry.at()) {
            keep(&mut lru, session, entry);
        }
        items
    }

    /// A batch of this process committed turns of the session (see [`CommittedTurns`]). Brings
    /// an entry at `first - 1` up to `last`; drops any other, and one whose key may have expired
    /// before the write (the write then made a new key, holding only its own items).
    pub(super) fn committed(&self, session: &str, batch: CommittedTurns) {
        let CommittedTurns {
            epoch,
            first,
            last,
            added,
            written_at,
            expires,
        } = batch;
        let mut lru = lru::lock(&self.inner);
        let Some(mut entry) = lru.take(session) else {
            return;
        };
        if entry.epoch != epoch
            || entry.turn_seq.checked_add(1) != Some(first)
            || entry.expires <= written_at
        {
            return;
        }
        let kept = std::mem::take(&mut entry.orders)
            .into_iter()
            .zip(Arc::unwrap_or_clone(std::mem::take(&mut entry.items)));
        (entry.orders, entry.items) = self.newest(kept.chain(added).collect());
        entry.turn_seq = last;
        entry.expires = entry.expires.max(expires.unwrap_or(entry.expires));
        keep(&mut lru, session, entry);
    }

    /// Drops the session's entry (a reset).
    pub(super) fn forget(&self, session: &str) {
        lru::lock(&self.inner).take(session);
    }

    /// How many sessions and items are kept.
    #[cfg(test)]
    fn usage(&self) -> (usize, usize) {
        lru::lock(&self.inner).usage()
    }

    /// The newest `capacity` of `placed`, in the set's order.
    fn newest(&self, mut placed: Vec<Placed>) -> (Vec<Order>, Arc<Vec<Arc<WorkingItem>>>) {
        placed.sort_by_key(|(order, _)| *order);
        let older = placed.len().saturating_sub(self.capacity);
        let (orders, items) = placed.drain(older..).unzip();
        (orders, Arc::new(items))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::memory::TurnRole;

    fn at(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(1_900_000_000_000 + ms).unwrap()
    }

    fn placed(ms: i64, turn: u64, index: usize) -> Placed {
        let item = WorkingItem::new(TurnRole::User, format!("t{turn}.{index}"), at(ms));
        ((at(ms).timestamp_millis(), turn, index), Arc::new(item))
    }

    fn texts(items: &[Arc<WorkingItem>]) -> Vec<&str> {
        items.iter().map(|i| i.text.as_str()).collect()
    }

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    /// Turns `first..=last` committed now, with `added`, refreshing the key when they added any.
    fn turns(epoch: u64, first: u64, last: u64, added: Vec<Placed>) -> CommittedTurns {
        let expires = (!added.is_empty()).then(later);
        CommittedTurns {
            epoch,
            first,
            last,
            added,
            written_at: Instant::now(),
            expires,
        }
    }

    #[test]
    fn a_fill_keeps_committed_turns_only_in_the_sets_order() {
        let recent = RecentWorking::new(3, 100);
        // Turn 4 is in flight: Redis has it, Postgres says 3.
        let read = vec![
            placed(30, 3, 0),
            placed(10, 1, 1),
            placed(10, 1, 0),
            placed(40, 4, 0),
            placed(20, 2, 0),
        ];
        let items = recent.fill("s", 0, 3, read, later());
        assert_eq!(
            texts(&items),
            ["t1.1", "t2.0", "t3.0"],
            "newest 3, by time then turn and index"
        );
        assert_eq!(
            texts(&recent.get("s", 0, 3).unwrap()),
            ["t1.1", "t2.0", "t3.0"]
        );
        assert!(recent.get("s", 0, 4).is_none(), "another turn number");
        assert!(recent.get("s", 1, 3).is_none(), "another epoch");
        assert!(recent.get("other", 0, 3).is_none());
    }

    #[test]
    fn a_commit_of_the_next_turns_extends_an_entry_and_any_other_drops_it() {
        let recent = RecentWorking::new(3, 100);
        recent.fill("s", 2, 5, vec![placed(10, 5, 0)], later());
        let added = vec![placed(20, 6, 0), placed(20, 6, 1), placed(5, 7, 0)];
        recent.committed("s", turns(2, 6, 7, added));
        assert!(recent.get("s", 2, 5).is_none());
        let items = recent.get("s", 2, 7).unwrap();
        assert_eq!(
            texts(&items),
            ["t5.0", "t6.0", "t6.1"],
            "an earlier time sorts first and is trimmed"
        );

        // Turn 8 was written by another server: this one's commit of 9 cannot extend the entry.
        recent.committed("s", turns(2, 9, 9, vec![placed(30, 9, 0)]));
        assert!(recent.get("s", 2, 9).is_none() && recent.get("s", 2, 7).is_none());
        // A commit under another epoch (after a reset) drops it too.
        recent.fill("s", 2, 9, Vec::new(), later());
        recent.committed("s", turns(3, 10, 10, vec![placed(40, 10, 0)]));
        assert!(recent.get("s", 3, 10).is_none());
        assert_eq!(recent.usage(), (0, 0));
    }

    #[test]
    fn an_older_fill_never_replaces_a_newer_entry() {
        let recent = RecentWorking::new(3, 100);
        recent.fill("s", 0, 1, vec![placed(10, 1, 0)], later());
        recent.committed("s", turns(0, 2, 2, vec![placed(20, 2, 0)]));
        // A recall that read turn number 1 before the commit fills after it.
        let items = recent.fill("s", 0, 1, vec![placed(10, 1, 0), placed(20, 2, 0)], later());
        assert_eq!(
            texts(&items),
            ["t1.0"],
            "the recall still gets what it read"
        );
        assert_eq!(texts(&recent.get("s", 0, 2).unwrap()), ["t1.0", "t2.0"]);
    }

    #[test]
    fn an_entry_is_not_used_once_redis_may_have_expired_the_key() {
        let recent = RecentWorking::new(3, 100);
        recent.fill("s", 0, 1, vec![placed(10, 1, 0)], Instant::now());
        assert!(recent.get("s", 0, 1).is_none());

        // A commit that wrote no items (an inject) keeps the entry, and its expiry.
        let in_an_hour = Instant::now() + Duration::from_secs(3600);
        recent.fill("s", 0, 1, vec![placed(10, 1, 0)], in_an_hour);
        recent.committed("s", turns(0, 2, 2, Vec::new()));
        assert_eq!(texts(&recent.get("s", 0, 2).unwrap()), ["t1.0"]);
        // One that wrote items refreshes it.
        recent.committed("s", turns(0, 3, 3, vec![placed(20, 3, 0)]));
        assert_eq!(texts(&recent.get("s", 0, 3).unwrap()), ["t1.0", "t3.0"]);
        // One written after the key may have expired drops the entry: Redis then held only the
        // new items.
        recent.fill(
            "s",
            0,
            3,
            vec![placed(10, 1, 0), placed(20, 3, 0)],
            in_an_hour,
        );
        let late = CommittedTurns {
            written_at: in_an_hour + Duration::from_secs(1),
            ..turns(0, 4, 4, vec![placed(30, 4, 0)])
        };
        recent.committed("s", late);
        assert!(recent.get("s", 0, 4).is_none());
        assert_eq!(recent.usage(), (0, 0));
    }

    #[test]
    fn live_items_are_handed_out_as_a_shared_range_when_they_are_the_newest() {
        let config = MemoryConfig {
            working_ttl: Duration::from_secs(60),
            ..MemoryConfig::default()
        };
        let items: Arc<Vec<Arc<WorkingItem>>> = Arc::new(
            [0, 30_000, 70_000]
                .map(|ms| placed(ms, 1, 0).1)
                .into_iter()
                .collect(),
        );
        // At 80 s the item of 0 s has expired: the other two, sharing the list.
        let working = live(items.clone(), &config, at(80_000));
        assert_eq!(working.len(), 2);
        assert_eq!(working[0].at, at(30_000));
        assert!(Arc::ptr_eq(&working[0], &items[1]), "shared, not copied");
        // Nothing live, everything live.
        assert!(live(items.clone(), &config, at(200_000)).is_empty());
        assert_eq!(live(items.clone(), &config, at(50_000)).len(), 3);

        // Out of time order within a millisecond (the set orders by ms, then turn): an expired
        // item after a live one is still left out.
        let straddling: Arc<Vec<Arc<WorkingItem>>> = Arc::new(vec![
            Arc::new(WorkingItem::new(
                TurnRole::User,
                "later",
                at(0) + Duration::from_micros(900),
            )),
            Arc::new(WorkingItem::new(
                TurnRole::User,
                "earlier",
                at(0) + Duration::from_micros(100),
            )),
        ]);
        let cutoff = at(60_000) + Duration::from_micros(500);
        assert_eq!(texts(&live(straddling, &config, cutoff)), ["later"]);
    }

    #[test]
    fn the_budget_evicts_the_least_recently_used_sessions() {
        // Weights: one per session plus one per item.
        let recent = RecentWorking::new(3, 5);
        recent.fill("a", 0, 1, vec![placed(10, 1, 0)], later());
        recent.fill("b", 0, 1, vec![placed(10, 1, 0)], later());
        assert!(
            recent.get("a", 0, 1).is_some(),
            "a is now the most recently used"
        );
        recent.fill("c", 0, 1, vec![placed(10, 1, 0)], later());
        assert!(recent.get("b", 0, 1).is_none(), "b went first");
        assert!(recent.get("a", 0, 1).is_some() && recent.get("c", 0, 1).is_some());
        assert_eq!(recent.usage(), (2, 4));
        recent.forget("a");
        assert_eq!(recent.usage(), (1, 2));
        // A session heavier than the whole budget is not kept.
        let tiny = RecentWorking::new(3, 2);
        tiny.fill("s", 0, 2, vec![placed(10, 1, 0), placed(20, 2, 0)], later());
        assert_eq!(tiny.usage(), (0, 0));
    }
}
