//! The bounded map of sessions that this backend's in-process cache (`recent.rs`) keeps its
//! entries in: least recently used sessions go first, and the
//! bound is a budget of items over all entries rather than a count of sessions, since one
//! session may hold thousands of items and another none.

use std::sync::{Mutex, MutexGuard};

use lru::LruCache;

/// An entry: what it costs against the budget, and the point of its session it stands for.
pub(super) trait Weighed {
    fn weight(&self) -> usize;

    /// The session's `(epoch, turn_seq)` the entry is at.
    fn at(&self) -> (u64, u64);
}

/// A [`SessionLru`] shared by a server's requests.
pub(super) struct SharedLru<E>(Mutex<SessionLru<E>>);

impl<E: Weighed> SharedLru<E> {
    pub(super) fn new(budget: usize) -> Self {
        Self(Mutex::new(SessionLru::new(budget)))
    }

    /// A panic while the lock is held can only come from a bug here; the map is still
    /// consistent enough to use (at worst an entry is missing), and recall must not panic in
    /// turn.
    pub(super) fn lock(&self) -> MutexGuard<'_, SessionLru<E>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Entries by session id, within a budget of [`Weighed::weight`]s.
pub(super) struct SessionLru<E> {
    sessions: LruCache<String, E>,
    /// Sum of the entries' weights.
    total: usize,
    budget: usize,
}

impl<E: Weighed> SessionLru<E> {
    pub(super) fn new(budget: usize) -> Self {
        Self {
            sessions: LruCache::unbounded(),
            total: 0,
            budget,
        }
    }

    /// The session's entry, now the most recently used.
    pub(super) fn get(&mut self, session: &str) -> Option<&E> {
        self.sessions.get(session)
    }

    /// The session's entry, leaving the order alone.
    pub(super) fn peek(&self, session: &str) -> Option<&E> {
        self.sessions.peek(session)
    }

    /// Removes the session's entry and returns it.
    pub(super) fn take(&mut self, session: &str) -> Option<E> {
        let entry = self.sessions.pop(session)?;
        self.total -= entry.weight();
        Some(entry)
    }

    /// Keeps `entry` as the session's, the most recently used, and evicts the least recently
    /// used until the budget holds. An entry heavier than the whole budget is not kept.
    pub(super) fn put(&mut self, session: &str, entry: E) {
        self.take(session);
        let weight = entry.weight();
        if weight > self.budget {
            return;
        }
        self.total += weight;
        self.sessions.put(session.to_owned(), entry);
        while self.total > self.budget {
            let Some((_, evicted)) = self.sessions.pop_lru() else {
                break;
            };
            self.total -= evicted.weight();
        }
    }

    /// Keeps `entry` as [`SessionLru::put`] does, unless the session's entry is at a later point.
    pub(super) fn put_unless_later(&mut self, session: &str, entry: E) {
        if self
            .peek(session)
            .is_none_or(|kept| kept.at() <= entry.at())
        {
            self.put(session, entry);
        }
    }

    /// How many sessions and items are kept.
    #[cfg(test)]
    pub(super) fn usage(&self) -> (usize, usize) {
        (self.sessions.len(), self.total)
    }
}
