//! The bounded map of sessions that the in-process caches of this backend (`recent.rs`,
//! `known_facts.rs`) keep their entries in: least recently used sessions go first, and the
//! bound is a budget of items over all entries rather than a count of sessions, since one
//! session may hold thousands of items and another none.

use lru::LruCache;

/// What an entry costs against the budget.
pub(super) trait Weighed {
    fn weight(&self) -> usize;
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

    /// How many sessions and items are kept.
    #[cfg(test)]
    pub(super) fn usage(&self) -> (usize, usize) {
        (self.sessions.len(), self.total)
    }
}
