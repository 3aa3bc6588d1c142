//! The one bounded map of sessions that the in-process mirrors keep their entries in (the
//! embedded store's session cache, the Redis + Postgres store's recent working memory): least
//! recently used sessions go first, and the bound is a budget of weight over all entries rather
//! than a count of sessions, since one session may hold thousands of items and another none.

use std::sync::{Mutex, MutexGuard};

use lru::LruCache;

/// Entries by session id, each with the weight it was recorded with, within a budget of their
/// sum. At least the most recently used entry is always kept, whatever it weighs; a caller that
/// would rather not keep an entry heavier than the budget asks [`WeightedLru::fits`] first.
pub(crate) struct WeightedLru<E> {
    sessions: LruCache<String, (E, usize)>,
    /// Sum of the entries' weights.
    total: usize,
    budget: usize,
}

impl<E> WeightedLru<E> {
    pub(crate) fn new(budget: usize) -> Self {
        Self {
            sessions: LruCache::unbounded(),
            total: 0,
            budget,
        }
    }

    /// Whether an entry of `weight` fits in the budget on its own.
    pub(crate) fn fits(&self, weight: usize) -> bool {
        weight <= self.budget
    }

    /// The session's entry, now the most recently used.
    pub(crate) fn get(&mut self, session: &str) -> Option<&E> {
        self.sessions.get(session).map(|(entry, _)| entry)
    }

    /// The session's entry, leaving the order alone.
    pub(crate) fn peek(&self, session: &str) -> Option<&E> {
        self.sessions.peek(session).map(|(entry, _)| entry)
    }

    /// Removes the session's entry and returns it.
    pub(crate) fn take(&mut self, session: &str) -> Option<E> {
        let (entry, weight) = self.sessions.pop(session)?;
        self.total -= weight;
        Some(entry)
    }

    /// Drops every entry for which `keep` is false.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&E) -> bool) {
        let gone: Vec<String> = self
            .sessions
            .iter()
            .filter(|(_, (entry, _))| !keep(entry))
            .map(|(key, _)| key.clone())
            .collect();
        for key in gone {
            self.take(&key);
        }
    }

    /// Keeps `entry` of `weight` as the session's, the most recently used, and evicts the least
    /// recently used until the budget holds.
    pub(crate) fn put(&mut self, session: &str, entry: E, weight: usize) {
        if let Some((_, old)) = self.sessions.put(session.to_owned(), (entry, weight)) {
            self.total -= old;
        }
        self.total += weight;
        self.evict();
    }

    /// Changes the session's entry in place, leaving the order alone: `change` returns its new
    /// weight. Then evicts as [`WeightedLru::put`] does. `false` when the session has no entry.
    pub(crate) fn update(&mut self, session: &str, change: impl FnOnce(&mut E) -> usize) -> bool {
        let Some((entry, weight)) = self.sessions.peek_mut(session) else {
            return false;
        };
        let new = change(entry);
        let old = std::mem::replace(weight, new);
        self.total = self.total - old + new;
        self.evict();
        true
    }

    /// Drops least-recently-used entries until the total fits the budget, keeping at least one.
    fn evict(&mut self) {
        while self.total > self.budget && self.sessions.len() > 1 {
            match self.sessions.pop_lru() {
                Some((_, (_, weight))) => self.total -= weight,
                None => break,
            }
        }
    }

    /// How many sessions and how much weight are kept.
    pub(crate) fn usage(&self) -> (usize, usize) {
        (self.sessions.len(), self.total)
    }
}

/// Locks a mirror's map. A panic while the lock is held can only come from a bug in the mirror;
/// the map is still consistent enough to use (at worst an entry is missing or stale by one
/// change, which the mirrors' own checks catch), and recall must not panic in turn.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_evicts_the_least_recently_used_and_keeps_the_newest() {
        let mut lru = WeightedLru::new(10);
        lru.put("a", 'a', 4);
        lru.put("b", 'b', 4);
        assert_eq!(lru.get("a"), Some(&'a'), "a is now the most recently used");
        lru.put("c", 'c', 4);
        assert!(lru.peek("b").is_none(), "b went first");
        assert_eq!(lru.usage(), (2, 8));
        // Growing an entry in place evicts others, never the last one.
        assert!(lru.update("c", |_| 9));
        assert_eq!(lru.usage(), (1, 9));
        assert!(lru.update("c", |_| 20));
        assert_eq!(lru.usage(), (1, 20), "alone, kept whatever it weighs");
        assert!(!lru.update("zzz", |_| 1));
        assert_eq!(lru.take("c"), Some('c'));
        assert_eq!(lru.usage(), (0, 0));
        assert!(lru.fits(10) && !lru.fits(11));
        // Replacing an entry counts its new weight only.
        lru.put("d", 'd', 3);
        lru.put("d", 'e', 5);
        assert_eq!((lru.peek("d"), lru.usage()), (Some(&'e'), (1, 5)));
        lru.put("f", 'f', 2);
        lru.retain(|entry| *entry != 'e');
        assert_eq!(
            (lru.peek("d"), lru.peek("f"), lru.usage()),
            (None, Some(&'f'), (1, 2))
        );
    }
}
