//! The session cache: recently used sessions held in memory, so that recall never touches SQLite.
//!
//! A cached [`SessionMemory`] is an exact mirror of the session's committed rows. It stays exact
//! because of three rules, which `writer.rs` and `mod.rs` keep:
//! 1. Only the writer thread changes a cached session, and only with what a batch it has just
//!    committed wrote ([`SessionChange`]), before it answers that batch's waiters. So a client
//!    that got the reply to a turn finds that turn in its next recall.
//! 2. A session missing from the cache is loaded on a reader connection, in parallel with the
//!    writer, and cached only if no change to it was applied while it loaded. `begin_load`
//!    registers the load before its read transaction starts; every `apply` to a session being
//!    loaded counts a change; the load is cached only if that count did not move. A change applied
//!    before the registration was committed before the load's snapshot, so the snapshot has it;
//!    one applied after makes the result uncacheable (it is still a consistent answer for the
//!    recall that made it).
//! 3. One store owns the database file (`mod.rs` holds an exclusive lock on it): no other process
//!    writes behind the cache's back.
//!
//! Eviction is least-recently-used by weight (facts plus working items), bounded by
//! [`EmbeddedOptions::cache_items`](super::EmbeddedOptions::cache_items). Evicting is always safe:
//! the next recall of that session loads it again.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::{DateTime, Utc};
use protocol::control::FactKind;
use rustc_hash::FxHashMap;
use uuid::Uuid;

use super::nearest::VectorSet;
use crate::memory::lexical::{Analyzed, LexicalIndex};
use crate::memory::lru::{self, WeightedLru};
use crate::memory::writes::FactUpdate;
use crate::memory::{
    Fact, MemoryConfig, MemoryContext, RecallQuery, RecallWhy, Recalled, WorkingItem,
    WorkingMemory, ranking,
};

/// A session's committed memory, in memory.
#[derive(Debug, Default)]
pub(super) struct SessionMemory {
    epoch: u64,
    /// Working items sorted by `(at in µs, seq)`, the order SQLite sorts them in;
    /// `working_keys[i]` is the key of `working[i]`. `working` is shared with the contexts recall
    /// handed out ([`WorkingMemory`]); a commit changes it in place when none of them is still
    /// held (the agent lets go of its context's working memory before it commits), and copies it
    /// otherwise.
    working_keys: Vec<(i64, i64)>,
    working: Arc<Vec<Arc<WorkingItem>>>,
    /// Facts of kind `fact`, by row id; `index` holds their text. Fx hashing, as in the lexical
    /// index: row ids are the store's own (no flooding risk), and recall looks up every match.
    facts: FxHashMap<i64, Fact>,
    index: LexicalIndex,
    /// Episodes, by their row's `seq` in `working_items` (a numbering apart from the facts' row
    /// ids); `episode_index` holds their text. Apart from the facts, so that each list's BM25
    /// statistics are its own and a turn's recalled facts keep their ranking.
    episodes: FxHashMap<i64, Fact>,
    episode_index: LexicalIndex,
    /// Whether `episodes` mirrors the session's episodes. A session is loaded without them
    /// unless the recall that loads it asks for episodes, and then takes none of its new ones:
    /// a session grows by two episodes a turn, and a model that never reads them (the builtin
    /// one) would otherwise pay for indexing, holding and reloading them on every turn. A recall
    /// that wants episodes loads such a session again, whole ([`SessionMemory::mirrors_episodes`]).
    episodes_mirrored: bool,
    /// Embeddings of facts by row id, and of episodes by `seq`; an item without one is found
    /// lexically only.
    vectors: VectorSet,
    episode_vectors: VectorSet,
    /// Rules and reminders by `(observed_at in µs, row id)`, the order recall returns them in.
    standing: BTreeMap<(i64, i64), Fact>,
    /// Where each fact of any kind is, for deletes by id.
    locations: HashMap<Uuid, Location>,
}

#[derive(Debug, Clone, Copy)]
enum Location {
    Fact(i64),
    Episode(i64),
    Standing((i64, i64)),
}

/// A stored row as the cache needs it: the fact with its row id (an episode's: the `seq` of its
/// `working_items` row), timestamps already at the database's microsecond precision (so a
/// cached fact equals the same fact loaded from disk).
#[derive(Debug, Clone)]
pub(super) struct StoredRow {
    pub pk: i64,
    pub fact: Fact,
    /// The fact's text analysed for the lexical index already (by the request that wrote it, so
    /// not by the writer thread that applies the change); `None` to analyse it here.
    pub analyzed: Option<Arc<Analyzed>>,
    /// Its embedding, when it has one.
    pub embedding: Option<Arc<[f32]>>,
}

/// What one committed job changed in one session: the store's [`Resolved`] writes
/// (crate::memory::writes), as committed.
///
/// [`Resolved`]: crate::memory::writes::Resolved
#[derive(Debug, Default)]
pub(super) struct SessionChange {
    pub session: String,
    /// The session was reset: everything dropped and the epoch incremented, before the rest.
    pub reset: bool,
    /// Facts deleted (retired or replaced), by id.
    pub removed: Vec<Uuid>,
    /// Facts changed in place, each one the session holds as an unkeyed fact (times at the
    /// stored precision).
    pub restated: Vec<(Uuid, FactUpdate)>,
    /// Facts inserted.
    pub added: Vec<StoredRow>,
    /// Working items inserted, with their `seq`.
    pub items: Vec<(i64, WorkingItem)>,
    /// Embeddings stored for items the session holds, by id.
    pub embedded: Vec<(Uuid, Arc<[f32]>)>,
}

impl SessionChange {
    /// The highest `seq` of the `working_items` rows this change wrote: its working items', and
    /// its episodes' (whose row id is their `seq`, see `ops::write_rows`).
    pub(super) fn last_seq(&self) -> Option<i64> {
        let items = self.items.iter().map(|(seq, _)| *seq);
        let episodes = self
            .added
            .iter()
            .filter(|row| row.fact.kind == FactKind::Episode);
        items.chain(episodes.map(|row| row.pk)).max()
    }
}

impl SessionMemory {
    /// An empty session at `epoch`: it mirrors its (no) episodes.
    pub(super) fn new(epoch: u64) -> Self {
        Self {
            epoch,
            episodes_mirrored: true,
            ..Self::default()
        }
    }

    /// An empty session at `epoch` that will not mirror its episodes (see `episodes_mirrored`).
    pub(super) fn without_episodes(epoch: u64) -> Self {
        Self {
            episodes_mirrored: false,
            ..Self::new(epoch)
        }
    }

    /// Whether recall may take this session's episodes from here.
    pub(super) fn mirrors_episodes(&self) -> bool {
        self.episodes_mirrored
    }

    pub(super) fn push_item(&mut self, seq: i64, item: WorkingItem) {
        let key = (item.at.timestamp_micros(), seq);
        let items = Arc::make_mut(&mut self.working);
        // Normally the newest, so the search ends at the back.
        match self.working_keys.binary_search(&key) {
            Ok(i) => items[i] = Arc::new(item),
            Err(i) => {
                self.working_keys.insert(i, key);
                items.insert(i, Arc::new(item));
            }
        }
    }

    pub(super) fn add_fact(&mut self, row: StoredRow) {
        let StoredRow {
            pk,
            fact,
            analyzed,
            embedding,
        } = row;
        let (index, items, vectors, location) = match fact.kind {
            FactKind::Fact => (
                &mut self.index,
                &mut self.facts,
                &mut self.vectors,
                Location::Fact(pk),
            ),
            FactKind::Episode if !self.episodes_mirrored => return,
            FactKind::Episode => (
                &mut self.episode_index,
                &mut self.episodes,
                &mut self.episode_vectors,
                Location::Episode(pk),
            ),
            FactKind::Rule | FactKind::Reminder => {
                let key = (fact.observed_at.timestamp_micros(), pk);
                self.locations.insert(fact.id, Location::Standing(key));
                self.standing.insert(key, fact);
                return;
            }
        };
        match analyzed {
            Some(text) => index.insert_analyzed(pk, &text),
            None => index.insert(pk, &fact.text),
        }
        if let Some(vector) = embedding {
            vectors.insert(pk, vector);
        }
        self.locations.insert(fact.id, location);
        items.insert(pk, fact);
    }

    fn remove_fact(&mut self, id: &Uuid) {
        match self.locations.remove(id) {
            Some(Location::Fact(pk)) => {
                self.index.remove(pk);
                self.facts.remove(&pk);
                self.vectors.remove(&pk);
            }
            Some(Location::Episode(pk)) => {
                self.episode_index.remove(pk);
                self.episodes.remove(&pk);
                self.episode_vectors.remove(&pk);
            }
            Some(Location::Standing(key)) => {
                self.standing.remove(&key);
            }
            None => {}
        }
    }

    /// Changes a fact in place, as a restatement does; its words are indexed again only when its
    /// text changed, which a repetition's normally does not.
    fn restate_fact(&mut self, id: Uuid, update: FactUpdate) {
        let cached = match self.locations.get(&id) {
            Some(&Location::Fact(pk)) => self.facts.get_mut(&pk).map(|fact| (pk, fact)),
            _ => None,
        };
        // The commit changed the row, so a cached session holds it as a fact.
        debug_assert!(cached.is_some(), "restated fact {id} is not cached");
        let Some((pk, fact)) = cached else {
            return;
        };
        if let Some(text) = update.text {
            // `insert` replaces what `pk` held; the embedding was of the old text (the commit
            // cleared it, for the backfill to embed the new one).
            self.index.insert(pk, &text);
            self.vectors.remove(&pk);
            fact.text = text;
        }
        fact.observed_at = update.observed_at;
        fact.importance = update.importance;
        fact.source = update.source;
        fact.source_turn_ids = update.source_turn_ids;
    }

    /// Keeps the newest `capacity` working items, as the commit's SQL does.
    fn trim(&mut self, capacity: usize) {
        let excess = self.working_keys.len().saturating_sub(capacity);
        if excess > 0 {
            self.working_keys.drain(..excess);
            Arc::make_mut(&mut self.working).drain(..excess);
        }
    }

    /// Applies a committed change (see [`SessionChange`]).
    pub(super) fn apply(&mut self, change: SessionChange, config: &MemoryConfig) {
        if change.reset {
            *self = SessionMemory::new(self.epoch + 1);
        }
        // In the order the store applied them (see `Resolved`).
        for id in &change.removed {
            self.remove_fact(id);
        }
        for (id, update) in change.restated {
            self.restate_fact(id, update);
        }
        for row in change.added {
            self.add_fact(row);
        }
        for (id, vector) in change.embedded {
            match self.locations.get(&id) {
                Some(Location::Fact(pk)) => self.vectors.insert(*pk, vector),
                Some(Location::Episode(seq)) => self.episode_vectors.insert(*seq, vector),
                Some(Location::Standing(_)) | None => {}
            };
        }
        let had_items = !change.items.is_empty();
        for (seq, item) in change.items {
            self.push_item(seq, item);
        }
        if had_items {
            self.trim(config.working_capacity);
        }
    }

    /// How much of the cache's budget this session uses.
    fn weight(&self) -> usize {
        1 + self.working_keys.len() + self.facts.len() + self.episodes.len() + self.standing.len()
    }

    /// What recall returns for this session: live working memory, the best `limit` facts for
    /// `terms` (the query's content words), all standing items, the epoch.
    ///
    /// A query for episodes needs a session that mirrors them ([`Self::mirrors_episodes`]).
    pub(super) fn context(&self, config: &MemoryConfig, query: &RecallQuery) -> MemoryContext {
        debug_assert!(
            query.episode_limit == 0 || self.episodes_mirrored,
            "episodes recalled from a session loaded without them"
        );
        let (now, terms) = (query.now, &query.terms[..]);
        // The newest `working_capacity` items that are live. Items are sorted by time, so the
        // expired ones are a prefix, found by the keys' times (whole µs, as stored: comparing
        // `at > cutoff` in µs is exact) without reading an item.
        let keys = &self.working_keys;
        let newest = keys.len().saturating_sub(config.working_capacity);
        let cutoff = config.live_after(now).map(|c| c.timestamp_micros());
        let first_live =
            newest + keys[newest..].partition_point(|(at, _)| cutoff.is_some_and(|c| *at <= c));
        let working = WorkingMemory::shared(self.working.clone(), first_live..keys.len());
        // The episodes live working memory holds, when the query leaves them out: by the rule
        // that makes a turn's episode share its item's row (`ops::write_rows`), those whose
        // `seq` is a live item's. Sorted, for lookups.
        let mut held: Vec<i64> = Vec::new();
        if query.leave_out_working && query.episode_limit > 0 {
            held.extend(
                keys[first_live..]
                    .iter()
                    .map(|&(_, seq)| seq)
                    .filter(|seq| self.episodes.contains_key(seq)),
            );
            held.sort_unstable();
        }

        let best = |searched: Searched<'_>, limit: usize| match &query.vector {
            None => lexical_best(&searched, terms, limit, config, now),
            Some(vector) => fused_best(searched, terms, vector, limit, config, now),
        };
        let facts = best(
            Searched {
                index: &self.index,
                items: &self.facts,
                vectors: &self.vectors,
                left_out: &[],
            },
            query.limit,
        );
        // Every episode in working memory (a session's first turns): nothing to search.
        let episodes = if !held.is_empty() && held.len() == self.episodes.len() {
            Vec::new()
        } else {
            best(
                Searched {
                    index: &self.episode_index,
                    items: &self.episodes,
                    vectors: &self.episode_vectors,
                    left_out: &held,
                },
                query.episode_limit,
            )
        };

        MemoryContext {
            working,
            facts,
            episodes,
            standing: self.standing.values().cloned().collect(),
            epoch: self.epoch,
        }
    }
}

/// The best `limit` items of the list for `terms` (the query's content words): the lexical pool
/// first (best match, then newest, then id: deterministic at the cut), then re-ranked with
/// recency ([`ranking::lexical_recall`]).
fn lexical_best(
    searched: &Searched<'_>,
    terms: &[String],
    limit: usize,
    config: &MemoryConfig,
    now: DateTime<Utc>,
) -> Vec<Recalled> {
    if limit == 0 || terms.is_empty() {
        return Vec::new();
    }
    let mut candidates: Vec<(&Fact, f64)> = searched
        .index
        .search(terms)
        .into_iter()
        .filter(|(pk, _)| !searched.leaves_out(*pk))
        .filter_map(|(pk, lexical)| searched.items.get(&pk).map(|fact| (fact, lexical)))
        .collect();
    let pool = ranking::candidate_pool(limit.min(usize::MAX / 8));
    let by_lexical = |a: &(&Fact, f64), b: &(&Fact, f64)| {
        b.1.total_cmp(&a.1)
            .then_with(|| b.0.observed_at.cmp(&a.0.observed_at))
            .then_with(|| a.0.id.cmp(&b.0.id))
    };
    if candidates.len() > pool {
        candidates.select_nth_unstable_by(pool, by_lexical);
        candidates.truncate(pool);
    }
    // Ranked borrowed: only the `limit` kept are copied out of the session.
    let mut ranked: Vec<(&Fact, f64, RecallWhy)> = candidates
        .into_iter()
        .map(|(fact, lexical)| {
            let (score, why) = ranking::lexical_score(fact, lexical, now, config.recency_half_life);
            (fact, score, why)
        })
        .collect();
    ranked.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| b.0.observed_at.cmp(&a.0.observed_at))
            .then_with(|| a.0.id.cmp(&b.0.id))
    });
    ranked
        .into_iter()
        .take(limit)
        .map(|(fact, score, why)| Recalled {
            fact: fact.clone(),
            score,
            why,
        })
        .collect()
}

/// One list of a session's items (its facts, or its episodes) as recall searches it.
struct Searched<'a> {
    index: &'a LexicalIndex,
    items: &'a FxHashMap<i64, Fact>,
    /// The list's embeddings, by the same keys as `items`.
    vectors: &'a VectorSet,
    /// Keys of items recall leaves out (see [`RecallQuery::leave_out_working`]), sorted.
    left_out: &'a [i64],
}

impl Searched<'_> {
    fn leaves_out(&self, pk: i64) -> bool {
        !self.left_out.is_empty() && self.left_out.binary_search(&pk).is_ok()
    }
}

/// The best `limit` items for the query's words and its embedding: the lexical pool and the
/// pool of the most similar embeddings, fused ([`ranking::fuse`]). Similarity is compared with
/// every embedded item of the list ([`VectorSet::nearest`]: through 8-bit codes first), a scan
/// that grows with the session (docs/results/semantic-recall.md says what it costs).
fn fused_best(
    searched: Searched<'_>,
    terms: &[String],
    vector: &[f32],
    limit: usize,
    config: &MemoryConfig,
    now: DateTime<Utc>,
) -> Vec<Recalled> {
    if limit == 0 {
        return Vec::new();
    }
    let pool = ranking::candidate_pool(limit.min(usize::MAX / 8));
    let mut candidates: HashMap<i64, ranking::Candidate> = HashMap::new();
    if !terms.is_empty() {
        let mut lexical: Vec<(i64, f64)> = searched
            .index
            .search(terms)
            .into_iter()
            .filter(|(pk, _)| searched.items.contains_key(pk) && !searched.leaves_out(*pk))
            .collect();
        top(&mut lexical, pool);
        for (pk, score) in lexical {
            candidates.insert(
                pk,
                ranking::Candidate {
                    fact: searched.items[&pk].clone(),
                    lexical: Some(score),
                    vector: None,
                },
            );
        }
    }
    let mut similar: Vec<(i64, f64)> = searched
        .vectors
        .nearest(vector, pool)
        .into_iter()
        .filter(|(pk, _)| searched.items.contains_key(pk) && !searched.leaves_out(*pk))
        .collect();
    top(&mut similar, pool);
    for (pk, similarity) in similar {
        candidates
            .entry(pk)
            .or_insert_with(|| ranking::Candidate {
                fact: searched.items[&pk].clone(),
                lexical: None,
                vector: None,
            })
            .vector = Some(similarity);
    }
    // A lexical candidate outside the similarity pool still has a similarity: give it, so
    // fusion ranks it by both.
    for (pk, candidate) in &mut candidates {
        if candidate.vector.is_none() {
            candidate.vector = searched
                .vectors
                .get(pk)
                .and_then(|v| ranking::cosine(v, vector));
        }
    }
    ranking::fuse(
        candidates.into_values().collect(),
        now,
        config.recency_half_life,
        limit,
    )
}

/// Keeps the `n` best `(row id, score)` pairs, best first (ties by row id, newest first).
fn top(scored: &mut Vec<(i64, f64)>, n: usize) {
    let order = |a: &(i64, f64), b: &(i64, f64)| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0));
    if scored.len() > n {
        scored.select_nth_unstable_by(n, order);
        scored.truncate(n);
    }
    scored.sort_by(order);
}

/// A shared, lockable session.
pub(super) type SharedSession = Arc<Mutex<SessionMemory>>;

/// Locks a session. A panic while holding the lock can only come from a bug in this module; the
/// data is then suspect, but recall must not panic in turn, so it reads through the poison (the
/// entry is replaced when the session is next evicted and loaded).
pub(super) fn lock(session: &SharedSession) -> MutexGuard<'_, SessionMemory> {
    session
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Recently used sessions, bounded by total weight.
pub(super) struct SessionCache {
    inner: Mutex<Sessions>,
}

struct Sessions {
    /// Each session with the weight it was recorded with.
    lru: WeightedLru<SharedSession>,
    /// Sessions being loaded: how many loads are in flight, and how many changes were applied
    /// since the first of them began (see rule 2).
    loading: HashMap<String, Loading>,
}

#[derive(Debug, Default)]
struct Loading {
    loads: usize,
    changes: u64,
}

/// A load registered with [`SessionCache::begin_load`]. Dropped without
/// [`LoadTicket::finish`] (a cancelled request), it ends the load and caches nothing.
pub(super) struct LoadTicket<'a> {
    cache: &'a SessionCache,
    session: String,
    changes_at_start: u64,
    finished: bool,
}

impl LoadTicket<'_> {
    /// Ends the load: caches `memory` if no change to the session was applied since it began
    /// (see rule 2). `memory` is `None` when the load failed.
    pub(super) fn finish(mut self, memory: Option<&SharedSession>) {
        self.finished = true;
        self.cache
            .finish_load(&self.session, self.changes_at_start, memory);
    }
}

impl Drop for LoadTicket<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.cache
                .finish_load(&self.session, self.changes_at_start, None);
        }
    }
}

impl SessionCache {
    /// A cache holding at most about `budget` facts and working items (never less than one
    /// session, however large).
    pub(super) fn new(budget: usize) -> Self {
        Self {
            inner: Mutex::new(Sessions {
                lru: WeightedLru::new(budget),
                loading: HashMap::new(),
            }),
        }
    }

    fn sessions(&self) -> MutexGuard<'_, Sessions> {
        lru::lock(&self.inner)
    }

    /// The cached session, marked as recently used.
    pub(super) fn get(&self, session: &str) -> Option<SharedSession> {
        self.sessions().lru.get(session).cloned()
    }

    /// Whether `session` is cached with its episodes, without marking it used: a turn's writer
    /// then analyses the turn's episodes for the session's index, otherwise nobody needs them.
    pub(super) fn mirrors_episodes(&self, session: &str) -> bool {
        self.sessions()
            .lru
            .peek(session)
            .is_some_and(|memory| lock(memory).mirrors_episodes())
    }

    /// Registers a load of `session`; call before the load's read transaction begins.
    pub(super) fn begin_load(&self, session: &str) -> LoadTicket<'_> {
        let mut sessions = self.sessions();
        let loading = sessions.loading.entry(session.to_owned()).or_default();
        loading.loads += 1;
        LoadTicket {
            cache: self,
            session: session.to_owned(),
            changes_at_start: loading.changes,
            finished: false,
        }
    }

    fn finish_load(&self, session: &str, changes_at_start: u64, memory: Option<&SharedSession>) {
        let mut sessions = self.sessions();
        let unchanged = match sessions.loading.get_mut(session) {
            Some(loading) => {
                let unchanged = loading.changes == changes_at_start;
                loading.loads -= 1;
                if loading.loads == 0 {
                    sessions.loading.remove(session);
                }
                unchanged
            }
            // Not possible for a ticket from `begin_load`; caching nothing is the safe answer.
            None => false,
        };
        if let (true, Some(memory)) = (unchanged, memory) {
            let weight = lock(memory).weight();
            sessions.lru.put(session, memory.clone(), weight);
        }
    }

    /// Applies a committed change to the session if it is cached (writer thread only), and
    /// counts it against loads of the session in flight. An uncached session is left alone: its
    /// next recall loads it, change included.
    pub(super) fn apply(&self, mut change: SessionChange, config: &MemoryConfig) {
        let mut sessions = self.sessions();
        if let Some(loading) = sessions.loading.get_mut(&change.session) {
            loading.changes += 1;
        }
        let session = std::mem::take(&mut change.session);
        sessions.lru.update(&session, |memory| {
            let mut memory = lock(memory);
            memory.apply(change, config);
            memory.weight()
        });
    }

    /// Sessions and total weight held, for metrics and tests.
    pub(super) fn usage(&self) -> (usize, usize) {
        self.sessions().lru.usage()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::TurnRole;
    use protocol::control::FactSource;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap()
    }

    fn row(pk: i64, kind: FactKind, text: &str, seconds: i64) -> StoredRow {
        StoredRow {
            pk,
            analyzed: None,
            embedding: None,
            fact: Fact {
                source_turn_ids: Vec::new(),
                id: Uuid::new_v4(),
                kind,
                key: None,
                text: text.to_owned(),
                data: None,
                observed_at: at(seconds),
                importance: 0.5,
                source: FactSource::Extracted,
            },
        }
    }

    fn item(text: &str, seconds: i64) -> WorkingItem {
        WorkingItem::new(TurnRole::User, text, at(seconds))
    }

    fn terms(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    /// A recall at `now` for `words` (content words already), `limit` facts and as many episodes.
    fn query(now: DateTime<Utc>, words: &[String], limit: usize) -> RecallQuery {
        RecallQuery {
            now,
            terms: ranking::Terms::of(&words.join(" ")),
            limit,
            episode_limit: limit,
            vector: None,
            leave_out_working: false,
        }
    }

    fn texts(ctx: &MemoryContext) -> Vec<&str> {
        ctx.working.iter().map(|i| i.text.as_str()).collect()
    }

    fn said(seq: i64, text: &str, seconds: i64) -> SessionChange {
        SessionChange {
            items: vec![(seq, item(text, seconds))],
            ..SessionChange::default()
        }
    }

    #[test]
    fn a_context_keeps_its_working_memory_and_commits_change_the_list_in_place_once_let_go() {
        let config = MemoryConfig {
            working_capacity: 3,
            ..MemoryConfig::default()
        };
        let mut memory = SessionMemory::new(0);
        memory.apply(said(1, "one", 1), &config);
        memory.apply(said(2, "two", 2), &config);
        let held = memory.context(&config, &query(at(10), &[], 0));
        memory.apply(said(3, "three", 3), &config);
        assert_eq!(
            texts(&held),
            ["one", "two"],
            "what recall handed out stays as it was"
        );
        let ctx = memory.context(&config, &query(at(10), &[], 0));
        assert_eq!(texts(&ctx), ["one", "two", "three"]);

        drop((held, ctx));
        let list = Arc::as_ptr(&memory.working);
        memory.apply(said(4, "four", 4), &config);
        assert!(
            std::ptr::eq(list, Arc::as_ptr(&memory.working)),
            "changed in place"
        );
        assert_eq!(
            texts(&memory.context(&config, &query(at(10), &[], 0))),
            ["two", "three", "four"]
        );
        // An item from earlier on the session clock (the clock moved back) goes to its place.
        memory.apply(said(5, "earlier", 0), &config);
        assert_eq!(
            texts(&memory.context(&config, &query(at(10), &[], 0))),
            ["two", "three", "four"],
            "the oldest by time is the one beyond capacity"
        );
        memory.apply(said(6, "later", 5), &config);
        assert_eq!(
            texts(&memory.context(&config, &query(at(10), &[], 0))),
            ["three", "four", "later"]
        );
    }

    #[test]
    fn changes_add_remove_trim_and_reset() {
        let config = MemoryConfig {
            working_capacity: 2,
            ..MemoryConfig::default()
        };
        let mut memory = SessionMemory::new(3);
        let lisbon = row(1, FactKind::Fact, "My sister lives in Lisbon.", 0);
        let rule = row(2, FactKind::Rule, "Say hi in French.", 1);
        let lisbon_id = lisbon.fact.id;
        memory.apply(
            SessionChange {
                added: vec![lisbon, rule],
                items: vec![
                    (1, item("one", 0)),
                    (2, item("two", 1)),
                    (3, item("three", 2)),
                ],
                ..SessionChange::default()
            },
            &config,
        );
        let ctx = memory.context(&config, &query(at(10), &terms(&["lisbon"]), 5));
        assert_eq!(ctx.epoch, 3);
        assert_eq!(ctx.facts.len(), 1);
        assert_eq!(ctx.standing.len(), 1);
        let texts: Vec<_> = ctx.working.iter().map(|i| i.text.as_str()).collect();
        assert_eq!(texts, ["two", "three"], "capacity keeps the newest");

        memory.apply(
            SessionChange {
                removed: vec![lisbon_id],
                ..SessionChange::default()
            },
            &config,
        );
        assert!(
            memory
                .context(&config, &query(at(10), &terms(&["lisbon"]), 5))
                .facts
                .is_empty()
        );

        memory.apply(
            SessionChange {
                reset: true,
                ..SessionChange::default()
            },
            &config,
        );
        let ctx = memory.context(&config, &query(at(10), &terms(&["lisbon"]), 5));
        assert_eq!(ctx.epoch, 4);
        assert!(ctx.working.is_empty() && ctx.standing.is_empty());
    }

    #[test]
    fn recall_ranks_by_relevance_then_recency_and_cuts_at_limit() {
        let config = MemoryConfig::default();
        let mut memory = SessionMemory::new(0);
        for (pk, text, seconds) in [
            (1, "boat boat boat", 0),
            (2, "boat", 0),
            (3, "boat", 100),
            (4, "car", 0),
        ] {
            memory.add_fact(row(pk, FactKind::Fact, text, seconds));
        }
        let ctx = memory.context(&config, &query(at(200), &terms(&["boat"]), 2));
        let texts: Vec<_> = ctx.facts.iter().map(|r| r.fact.text.as_str()).collect();
        assert_eq!(texts, ["boat boat boat", "boat"]);
        // Of the two equal "boat" facts the newer one wins the second place.
        assert_eq!(ctx.facts[1].fact.observed_at, at(100));
        assert!(
            memory
                .context(&config, &query(at(200), &[], 2))
                .facts
                .is_empty()
        );
    }

    #[test]
    fn eviction_keeps_the_budget_and_the_newest_session() {
        let cache = SessionCache::new(10);
        for name in ["a", "b", "c"] {
            let mut memory = SessionMemory::new(0);
            for pk in 0..4 {
                memory.add_fact(row(pk, FactKind::Fact, "x", 0));
            }
            let ticket = cache.begin_load(name);
            ticket.finish(Some(&Arc::new(Mutex::new(memory))));
        }
        // Each weighs 5: only two fit in 10.
        assert_eq!(cache.usage(), (2, 10));
        assert!(cache.get("a").is_none());
        assert!(cache.get("b").is_some());
        // "b" was just used, so "c" goes when the next change grows the total.
        cache.apply(
            SessionChange {
                session: "b".to_owned(),
                items: vec![(1, item("hello", 0))],
                ..SessionChange::default()
            },
            &MemoryConfig::default(),
        );
        assert_eq!(cache.usage(), (1, 6));
        assert!(cache.get("b").is_some() && cache.get("c").is_none());
        // A change to an uncached session is ignored, not cached half-known.
        cache.apply(
            SessionChange {
                session: "zzz".to_owned(),
                ..SessionChange::default()
            },
            &MemoryConfig::default(),
        );
        assert!(cache.get("zzz").is_none());
    }

    #[test]
    fn a_load_overtaken_by_a_change_is_not_cached() {
        let cache = SessionCache::new(1_000);
        let config = MemoryConfig::default();
        let change = |session: &str| SessionChange {
            session: session.to_owned(),
            items: vec![(1, item("hello", 0))],
            ..SessionChange::default()
        };
        let loaded = || Arc::new(Mutex::new(SessionMemory::new(0)));

        // A change before the load began is in the load's snapshot: cached.
        cache.apply(change("a"), &config);
        let ticket = cache.begin_load("a");
        ticket.finish(Some(&loaded()));
        assert!(cache.get("a").is_some());

        // A change while loading may be missing from it: not cached.
        let ticket = cache.begin_load("b");
        cache.apply(change("b"), &config);
        ticket.finish(Some(&loaded()));
        assert!(cache.get("b").is_none());

        // Two loads in flight, a change between their starts: only the later one is cached.
        let first = cache.begin_load("c");
        cache.apply(change("c"), &config);
        let second = cache.begin_load("c");
        second.finish(Some(&loaded()));
        assert!(cache.get("c").is_some());
        let stale = loaded();
        lock(&stale).epoch = 99;
        first.finish(Some(&stale));
        assert_eq!(
            lock(&cache.get("c").unwrap()).epoch,
            0,
            "the stale load replaced it"
        );

        // A failed or abandoned load caches nothing and leaves no registration behind.
        let ticket = cache.begin_load("d");
        ticket.finish(None);
        drop(cache.begin_load("e"));
        assert!(cache.get("d").is_none() && cache.get("e").is_none());
        assert!(cache.sessions().loading.is_empty());
    }
}
