//! Recently stored responses, in memory, so that a `previous_response_id` chain is read without
//! SQLite or JSON parsing: a client continuing a chain names the response it just received.
//!
//! Exact for what it holds, by one rule: only the responses writer changes it, after the
//! transaction that made the change committed and before the writer answers (`writer.rs`). It is
//! filled by writes only, never by reads: a read that misses goes to SQLite and leaves the cache
//! alone, so a read racing a delete can never put a deleted response back. A chain with any link
//! missing here is read from SQLite whole.

use std::sync::{Arc, Mutex};

use protocol::SessionId;

use crate::memory::lru::{self, WeightedLru};
use crate::memory::responses::{MAX_CHAIN, StoredResponse};

/// Bytes of stored JSON the cache holds by default: a few thousand typical responses.
pub(super) const DEFAULT_BUDGET: usize = 32 << 20;

/// Recent responses by id, least recently used first out, within a budget of their stored size.
pub(super) struct ResponseCache {
    inner: Mutex<WeightedLru<Arc<StoredResponse>>>,
}

impl ResponseCache {
    pub(super) fn new(budget: usize) -> Self {
        Self {
            inner: Mutex::new(WeightedLru::new(budget)),
        }
    }

    /// Keeps a committed response; `size` is its stored size in bytes.
    pub(super) fn put(&self, response: Arc<StoredResponse>, size: usize) {
        let mut cache = lru::lock(&self.inner);
        let id = response.id.clone();
        cache.put(&id, response, size);
    }

    pub(super) fn get(&self, id: &str) -> Option<Arc<StoredResponse>> {
        lru::lock(&self.inner).get(id).cloned()
    }

    pub(super) fn remove(&self, id: &str) {
        lru::lock(&self.inner).take(id);
    }

    /// Drops every response of `session` (a reset).
    pub(super) fn remove_session(&self, session: &SessionId) {
        lru::lock(&self.inner).retain(|response| response.session != *session);
    }

    /// The chain ending at `id`, oldest first, when every link of it is cached: `None` sends the
    /// caller to SQLite. The chain ends where a response names no predecessor, or at
    /// [`MAX_CHAIN`] links, as the SQL walk does.
    pub(super) fn chain(&self, id: &str) -> Option<Vec<Arc<StoredResponse>>> {
        let mut cache = lru::lock(&self.inner);
        let mut links: Vec<Arc<StoredResponse>> = Vec::new();
        let mut next = Some(id.to_owned());
        while let Some(id) = next.take() {
            if links.len() == MAX_CHAIN {
                break;
            }
            // A missing link may be deleted (the chain starts after it) or just not cached:
            // only SQLite can tell.
            let link = cache.get(&id)?.clone();
            next = link.previous_id.clone();
            links.push(link);
        }
        drop(cache);
        links.reverse();
        Some(links)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::DateTime;
    use serde_json::json;

    fn response(id: &str, session: &str, previous: Option<&str>) -> Arc<StoredResponse> {
        Arc::new(StoredResponse {
            id: id.to_owned(),
            session: SessionId::parse(session).unwrap(),
            previous_id: previous.map(str::to_owned),
            conversation: None,
            created_at: DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
            input: vec![json!({"id": format!("in_{id}")})],
            body: json!({"id": id}),
        })
    }

    fn ids(chain: Option<Vec<Arc<StoredResponse>>>) -> Option<Vec<String>> {
        chain.map(|c| c.iter().map(|r| r.id.clone()).collect())
    }

    #[test]
    fn a_chain_is_answered_only_when_every_link_is_cached() {
        let cache = ResponseCache::new(1_000);
        cache.put(response("r1", "s1", None), 10);
        cache.put(response("r2", "s1", Some("r1")), 10);
        cache.put(response("r3", "s1", Some("r2")), 10);
        assert_eq!(
            ids(cache.chain("r3")),
            Some(vec!["r1".into(), "r2".into(), "r3".into()])
        );
        assert_eq!(ids(cache.chain("r1")), Some(vec!["r1".into()]));
        assert_eq!(ids(cache.chain("nope")), None, "unknown: ask SQLite");
        cache.remove("r2");
        assert_eq!(
            ids(cache.chain("r3")),
            None,
            "a link is missing: ask SQLite"
        );
        assert!(cache.get("r3").is_some());
        cache.put(response("o1", "s2", None), 10);
        cache.remove_session(&SessionId::parse("s1").unwrap());
        assert!(cache.get("r1").is_none() && cache.get("r3").is_none());
        assert!(cache.get("o1").is_some(), "another session's stay");
    }

    #[test]
    fn the_budget_drops_the_least_recently_used() {
        let cache = ResponseCache::new(25);
        cache.put(response("r1", "s1", None), 10);
        cache.put(response("r2", "s1", Some("r1")), 10);
        assert!(
            cache.get("r1").is_some(),
            "r1 is now the most recently used"
        );
        cache.put(response("r3", "s1", None), 10);
        assert!(cache.get("r2").is_none());
        assert!(cache.get("r1").is_some() && cache.get("r3").is_some());
    }
}
