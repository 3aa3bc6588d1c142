//! Memory: what the agent remembers of each session, behind one trait.
//!
//! Two tiers, as design.md describes:
//! - **working memory**: the session's recent turns, visible while `at > now - working_ttl` on the
//!   *session clock* (the request's `X-Mock-Time`, or the real clock), capped at the newest
//!   `working_capacity` items;
//! - **long-term memory**: [`Fact`]s (facts, standing rules, reminders), each optionally keyed so that
//!   a newer observation of the same key supersedes an older one, and episodes (every turn as it
//!   was said, never rewritten); recalled by lexical relevance times a recency decay
//!   ([`ranking`]).
//!
//! Stores are deliberately dumb: they persist and retrieve. Deciding *what* to remember (extraction,
//! promotion) lives in `crate::agent`, so every backend behaves the same. The conformance suite
//! (`conformance.rs`, built for tests only) is the executable form of this contract; every backend
//! runs it unchanged.
//!
//! Invariants every backend keeps:
//! 1. Every row and key is namespaced by [`SessionId`]; nothing crosses sessions, reset included.
//! 2. [`MemoryStore::commit_turn`] is atomic: all of a turn is stored, or none of it.
//! 3. A write that returned `Ok` survives a restart of the process (and of the backend's server).
//! 4. At most one current fact per `(session, key)`: the one with the latest `observed_at`
//!    (ties go to the later write).

#[cfg(any(test, feature = "test-hooks"))]
pub mod conformance;
mod distinct;
pub mod embedded;
pub mod lexical;
mod lru;
pub mod ranking;
pub mod redis_pg;
pub mod responses;
pub mod tasks;
mod writes;

pub(crate) use distinct::TextHasher;

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use protocol::SessionId;
use protocol::control::{DependencyHealth, FactKind, FactSource};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Tuning shared by every backend.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryConfig {
    /// How long a turn stays in working memory, on the session clock.
    pub working_ttl: Duration,
    /// How many of the newest turns working memory keeps per session.
    pub working_capacity: usize,
    /// Age at which a fact's recency factor has halved.
    pub recency_half_life: Duration,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            working_ttl: Duration::from_secs(6 * 3600),
            working_capacity: 64,
            recency_half_life: Duration::from_secs(30 * 24 * 3600),
        }
    }
}

impl MemoryConfig {
    /// The working-memory TTL as a chrono duration (saturating for absurd values).
    pub fn ttl(&self) -> chrono::Duration {
        chrono::Duration::from_std(self.working_ttl).unwrap_or(chrono::Duration::MAX)
    }

    /// When an item written at `at` leaves working memory.
    pub fn expires_at(&self, at: DateTime<Utc>) -> DateTime<Utc> {
        at.checked_add_signed(self.ttl())
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    }

    /// Whether an item written at `at` is still in working memory at `now`.
    pub fn is_live(&self, at: DateTime<Utc>, now: DateTime<Utc>) -> bool {
        self.expires_at(at) > now
    }

    /// The time an item must be newer than to be live at `now` ([`MemoryConfig::is_live`] holds
    /// exactly when `at > cutoff`), or `None` when every item is: one subtraction per read
    /// instead of an addition per item.
    pub fn live_after(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        now.checked_sub_signed(self.ttl())
    }
}

/// Who said a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TurnRole {
    User,
    Assistant,
}

impl TurnRole {
    pub fn as_str(self) -> &'static str {
        match self {
            TurnRole::User => "user",
            TurnRole::Assistant => "assistant",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "user" => Some(TurnRole::User),
            "assistant" => Some(TurnRole::Assistant),
            _ => None,
        }
    }
}

/// One turn in working memory. Build it with [`WorkingItem::new`] (or, inside the crate, with
/// its words already known); treat it as immutable once built (stores share items between
/// turns), since its content words are remembered.
#[derive(Clone, Serialize, Deserialize)]
pub struct WorkingItem {
    pub role: TurnRole,
    pub text: String,
    /// Session-clock time of the turn.
    pub at: DateTime<Utc>,
    /// `text`'s content words: handed over at creation (the agent has them already), kept by
    /// [`WorkingItem::with_time`], or else worked out the first time [`WorkingItem::terms`] is
    /// called. The embedded store keeps its items across turns, and promotion compares every new
    /// statement with every user item of working memory, so each item is tokenized once in its
    /// life instead of once per turn it stays in working memory.
    #[serde(skip)]
    terms: OnceLock<ranking::Terms>,
}

impl WorkingItem {
    pub fn new(role: TurnRole, text: impl Into<String>, at: DateTime<Utc>) -> Self {
        Self {
            role,
            text: text.into(),
            at,
            terms: OnceLock::new(),
        }
    }

    /// An item whose content words are known already: `terms` must be `Terms::of(&text)`.
    /// Crate-only, since nothing but a debug assertion checks that.
    pub(crate) fn with_terms(
        role: TurnRole,
        text: impl Into<String>,
        at: DateTime<Utc>,
        terms: ranking::Terms,
    ) -> Self {
        let item = Self::new(role, text, at);
        debug_assert_eq!(terms, ranking::Terms::of(&item.text));
        let _ = item.terms.set(terms);
        item
    }

    /// The same item at another time (a store keeps times at its own precision), with the words
    /// already worked out.
    pub fn with_time(&self, at: DateTime<Utc>) -> Self {
        Self { at, ..self.clone() }
    }

    /// The content words of `text`, as [`ranking::query_terms`] returns them.
    pub fn terms(&self) -> &[String] {
        self.terms.get_or_init(|| ranking::Terms::of(&self.text))
    }

    /// Whether an episode of `text` at `at` records this item: the same text at the same time (to
    /// the microsecond, the stores' precision), said by the same role (`role`: the episode's,
    /// asked only when text and time match). The one rule for "this episode is that working
    /// item": the embedded store keeps the two in one row, and a turn's recall leaves such
    /// episodes out ([`RecallQuery::leave_out_working`]).
    pub(crate) fn is_recorded_by(
        &self,
        text: &str,
        at: DateTime<Utc>,
        role: impl FnOnce() -> Option<TurnRole>,
    ) -> bool {
        self.at.timestamp_micros() == at.timestamp_micros()
            && self.text == text
            && role() == Some(self.role)
    }
}

/// Equal when role, text and time are: whether the words were worked out yet does not count.
impl PartialEq for WorkingItem {
    fn eq(&self, other: &Self) -> bool {
        self.role == other.role && self.text == other.text && self.at == other.at
    }
}

impl fmt::Debug for WorkingItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkingItem")
            .field("role", &self.role)
            .field("text", &self.text)
            .field("at", &self.at)
            .finish_non_exhaustive()
    }
}

/// A long-term item as it is written.
#[derive(Debug, Clone, PartialEq)]
pub struct NewFact {
    pub kind: FactKind,
    /// Supersession key, already normalised with [`normalize_key`].
    pub key: Option<String>,
    /// The fact as a sentence; this is what lexical recall searches.
    pub text: String,
    /// Structured data the agent layer attaches (a rule's trigger and reply, a reminder's due time).
    /// Stores persist it verbatim and never interpret it.
    pub data: Option<serde_json::Value>,
    pub observed_at: DateTime<Utc>,
    /// 0 to 1.
    pub importance: f32,
    pub source: FactSource,
    /// Provenance: ids of the turns it came from (`X-Turn-Id`), oldest first; empty when the
    /// client named none.
    pub source_turn_ids: Vec<String>,
    /// Its text's embedding (L2-normalised), when semantic recall is on and the embedder
    /// answered; `None` leaves it to the backfill ([`MemoryStore::unembedded`]).
    pub embedding: Option<Arc<[f32]>>,
}

/// A stored long-term item.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    pub id: Uuid,
    pub kind: FactKind,
    pub key: Option<String>,
    pub text: String,
    pub data: Option<serde_json::Value>,
    pub observed_at: DateTime<Utc>,
    pub importance: f32,
    pub source: FactSource,
    /// Ids of the turns it came from, oldest first: those of the turn that wrote it, then those
    /// of each turn that restated it (see [`Restatement`]), each once.
    pub source_turn_ids: Vec<String>,
}

impl Fact {
    /// The stored form of `new` under a fresh id.
    pub fn from_new(new: NewFact) -> Self {
        Self {
            // Time-ordered (UUIDv7): a new fact's id lands at the end of the stores' id indexes,
            // the same few pages for every fact of a commit, rather than on a random page each.
            id: Uuid::now_v7(),
            kind: new.kind,
            key: new.key,
            text: new.text,
            data: new.data,
            observed_at: new.observed_at,
            importance: new.importance,
            source: new.source,
            source_turn_ids: new.source_turn_ids,
        }
    }
}

/// A long-term item returned by recall, with its score and why it has it.
#[derive(Debug, Clone, PartialEq)]
pub struct Recalled {
    pub fact: Fact,
    /// What recall ranked by, larger is better ([`ranking`]).
    pub score: f64,
    pub why: RecallWhy,
}

/// The parts of a recalled item's score, as `/control/memory/recall` shows them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RecallWhy {
    /// Lexical relevance (BM25, [`lexical`]); 0 when only the vector found it.
    pub lexical: f64,
    /// Cosine similarity of the item's embedding with the query's, when both have one.
    pub vector: Option<f64>,
    /// What recency multiplied the relevance by, in (0, 1] ([`ranking::recency_weight`]; its
    /// fourth root when ranks were fused, [`ranking::fuse`]).
    pub recency: f64,
}

/// An episode's `data`: who said it. Episodes are [`FactKind::Episode`] items, kept whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpisodeData {
    pub role: TurnRole,
    /// The speaker's name, when the client gave one (OpenAI's message `name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker: Option<String>,
}

impl EpisodeData {
    /// Who said `fact`, when it is an episode whose data says so.
    pub fn of(fact: &Fact) -> Option<Self> {
        if fact.kind != FactKind::Episode {
            return None;
        }
        // Read from the borrowed value: no copy of the map.
        Self::deserialize(fact.data.as_ref()?).ok()
    }
}

/// The importance of every episode: what ranks an episode is its words and its age, not an
/// importance guess (so a store may keep it implicit).
pub const EPISODE_IMPORTANCE: f32 = 0.5;

impl NewFact {
    /// One turn as it was said, as an episode: never keyed, so never superseded.
    pub fn episode(
        data: EpisodeData,
        text: impl Into<String>,
        at: DateTime<Utc>,
        source: FactSource,
        source_turn_ids: Vec<String>,
    ) -> Self {
        Self {
            kind: FactKind::Episode,
            key: None,
            text: text.into(),
            data: serde_json::to_value(data).ok(),
            observed_at: at,
            importance: EPISODE_IMPORTANCE,
            source,
            source_turn_ids,
            embedding: None,
        }
    }
}

/// What to recall for one turn.
#[derive(Debug, Clone)]
pub struct RecallQuery {
    /// The session clock.
    pub now: DateTime<Utc>,
    /// The content words to match lexically (normally the new user turn's).
    pub terms: ranking::Terms,
    /// At most this many ranked facts.
    pub limit: usize,
    /// At most this many ranked episodes (ranked apart from the facts: a turn's recalled facts do
    /// not make room for its episodes).
    pub episode_limit: usize,
    /// The query's embedding (L2-normalised), when semantic recall is on and the query could be
    /// embedded: items with an embedding are then also ranked by similarity and the two rankings
    /// fused ([`ranking::fuse`]). `None`: lexical recall only.
    pub vector: Option<Arc<[f32]>>,
    /// Leave out the episodes that live working memory holds ([`WorkingMemory::holds`]): a
    /// turn's prompt shows working memory already, and those episodes would take the places of
    /// older ones. They are left out before the lexical candidate pool is cut (so the pool is
    /// filled with others) and after the similarity pool is. Off for the control plane's recall,
    /// which ranks the whole of long-term memory.
    pub leave_out_working: bool,
}

/// Working memory as recall hands it out: a range of a list of items that the store may share with
/// other recalls of the session (the embedded cache does). Handing it out costs one reference
/// count instead of one per item, which mattered: the per-item counts live on as many cache lines
/// as there are items, and a turn wrote each of them twice (copy and drop). It reads as a slice.
#[derive(Clone, Default)]
pub struct WorkingMemory {
    items: Arc<Vec<Arc<WorkingItem>>>,
    range: std::ops::Range<usize>,
}

impl WorkingMemory {
    /// `items[range]`, sharing `items`; a range past the end is cut to it.
    pub fn shared(items: Arc<Vec<Arc<WorkingItem>>>, range: std::ops::Range<usize>) -> Self {
        let end = range.end.min(items.len());
        let start = range.start.min(end);
        Self {
            items,
            range: start..end,
        }
    }
}

impl WorkingMemory {
    /// Whether one of the items is what `episode` records: the same text at the same time (to
    /// the microsecond), said by the same role.
    pub fn holds(&self, episode: &Fact) -> bool {
        let role = || EpisodeData::of(episode).map(|data| data.role);
        episode.kind == FactKind::Episode
            && self.holds_said(&episode.text, episode.observed_at, role)
    }

    /// Whether one of the items is what an episode of `text` at `at` records
    /// ([`WorkingItem::is_recorded_by`]; `role` is asked only when text and time match), for a
    /// store that has the episode's parts rather than a [`Fact`].
    pub(crate) fn holds_said(
        &self,
        text: &str,
        at: DateTime<Utc>,
        role: impl Fn() -> Option<TurnRole>,
    ) -> bool {
        self.iter().any(|item| item.is_recorded_by(text, at, &role))
    }
}

impl std::ops::Deref for WorkingMemory {
    type Target = [Arc<WorkingItem>];

    fn deref(&self) -> &Self::Target {
        &self.items[self.range.clone()]
    }
}

impl From<Vec<Arc<WorkingItem>>> for WorkingMemory {
    fn from(items: Vec<Arc<WorkingItem>>) -> Self {
        let len = items.len();
        Self::shared(Arc::new(items), 0..len)
    }
}

impl FromIterator<Arc<WorkingItem>> for WorkingMemory {
    fn from_iter<I: IntoIterator<Item = Arc<WorkingItem>>>(items: I) -> Self {
        Self::from(items.into_iter().collect::<Vec<_>>())
    }
}

impl<'a> IntoIterator for &'a WorkingMemory {
    type Item = &'a Arc<WorkingItem>;
    type IntoIter = std::slice::Iter<'a, Arc<WorkingItem>>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Equal when the items are, wherever they are kept.
impl PartialEq for WorkingMemory {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl fmt::Debug for WorkingMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Everything the agent needs from memory to answer one turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryContext {
    /// Live working memory, oldest first. Shared, not copied: a store that keeps working memory
    /// in memory (the embedded session cache) hands out its own items, and recall runs every turn.
    pub working: WorkingMemory,
    /// Facts of kind [`FactKind::Fact`] matching the query, best first.
    pub facts: Vec<Recalled>,
    /// Episodes ([`FactKind::Episode`]) matching the query, best first.
    pub episodes: Vec<Recalled>,
    /// Every rule and reminder of the session, whatever the query (they must be checked every turn),
    /// oldest first.
    pub standing: Vec<Fact>,
    /// The session's reset counter when this context was read. A turn passes it back in
    /// [`TurnWrite::expected_epoch`] so that a reset that ran meanwhile is detected, not undone.
    pub epoch: u64,
}

/// Everything one turn writes, committed atomically.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnWrite {
    /// New working-memory items (normally the user turn and the reply), in order.
    pub items: Vec<WorkingItem>,
    /// New long-term items.
    pub facts: Vec<NewFact>,
    /// Long-term items to delete (a reminder that fired, a rule revoked).
    pub retire: Vec<Uuid>,
    /// Facts said again, changed in place (see [`Restatement`]). Applied after `retire`: a fact
    /// this turn retires and restates is stored anew.
    pub restate: Vec<Restatement>,
    /// When set, the commit fails with [`MemoryError::SessionReset`] and writes nothing if the
    /// session's epoch is no longer this value (it was reset after the turn read its context).
    pub expected_epoch: Option<u64>,
}

/// An unkeyed fact of kind [`FactKind::Fact`] said again: the stored fact `id` of the session
/// takes this statement's text, time, importance and source, and keeps its id, its data and its
/// place in write order. Promotion restates a statement that repeats a fact it recalled.
///
/// Why in place rather than a retirement and a new fact: a statement repeated on every turn
/// would otherwise delete one row and insert one per turn, with every index entry of both.
/// Updated in place, the row keeps its id and (when the text is the same) its words, so the
/// stores leave their id and text indexes alone (Postgres can make it a HOT update).
///
/// When the session holds no such fact any more (another turn retired it meanwhile, or `id` is
/// a keyed fact, a rule or a reminder, which a restatement never changes), the statement is
/// stored as a new fact instead: a repetition is never lost.
#[derive(Debug, Clone, PartialEq)]
pub struct Restatement {
    /// The fact said again.
    pub id: Uuid,
    /// The statement as said this time.
    pub text: String,
    pub observed_at: DateTime<Utc>,
    /// 0 to 1.
    pub importance: f32,
    pub source: FactSource,
    /// Ids of the turn that said it again: added to the fact's own (see [`Fact::source_turn_ids`]).
    pub source_turn_ids: Vec<String>,
}

impl Restatement {
    /// The statement as a new fact: what is stored when the fact it restates is gone.
    pub fn as_new_fact(&self) -> NewFact {
        NewFact {
            embedding: None,
            kind: FactKind::Fact,
            key: None,
            text: self.text.clone(),
            data: None,
            observed_at: self.observed_at,
            importance: self.importance,
            source: self.source,
            source_turn_ids: self.source_turn_ids.clone(),
        }
    }
}

/// Result of writing one fact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFact {
    pub id: Uuid,
    pub key: Option<String>,
    /// False when a fact with the same key and a later `observed_at` exists, so this one was not kept.
    pub current: bool,
}

/// What a reset removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResetCounts {
    pub working_items: u64,
    pub facts: u64,
}

/// The whole memory of a session, for `GET /control/memory`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Live working memory at the given `now`, oldest first.
    pub working: Vec<WorkingItem>,
    /// All long-term items, newest `observed_at` first.
    pub facts: Vec<Fact>,
}

/// `Clone` so that one failure (a group commit's) can be reported to every waiter it affects.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MemoryError {
    /// A backing service could not be reached or did not answer in time. Maps to 503.
    #[error("{dependency} is unavailable: {reason}")]
    Unavailable {
        dependency: &'static str,
        reason: String,
    },
    /// Stored data could not be read back (corruption, a schema newer than this binary). Maps to 500.
    #[error("{dependency} holds data this server cannot read: {reason}")]
    Corrupt {
        dependency: &'static str,
        reason: String,
    },
    /// The session was reset while this turn ran; nothing was written. Maps to 409: the client may
    /// send the turn again.
    #[error("the session was reset while this turn was being processed")]
    SessionReset,
    /// Any other backend failure. Maps to 500.
    #[error("{dependency} failed: {reason}")]
    Backend {
        dependency: &'static str,
        reason: String,
    },
}

impl MemoryError {
    /// The dependency named in the error.
    pub fn dependency(&self) -> &'static str {
        match self {
            MemoryError::SessionReset => "session",
            MemoryError::Unavailable { dependency, .. }
            | MemoryError::Corrupt { dependency, .. }
            | MemoryError::Backend { dependency, .. } => dependency,
        }
    }
}

/// A session's memory store. See the module documentation for the invariants.
#[async_trait]
pub trait MemoryStore: Send + Sync + 'static {
    /// Short backend name for logs and `/readyz` (`embedded`, `redis+postgres`).
    fn backend(&self) -> &'static str;

    /// The configuration the store was opened with.
    fn config(&self) -> &MemoryConfig;

    /// Live working memory, the best-matching facts and all standing items.
    async fn recall(
        &self,
        session: &SessionId,
        query: RecallQuery,
    ) -> Result<MemoryContext, MemoryError>;

    /// Stores one turn atomically; returns one [`StoredFact`] per [`TurnWrite::facts`] entry,
    /// then one per [`TurnWrite::restate`] entry (the restated fact's id, or the new fact's when
    /// it was stored anew).
    async fn commit_turn(
        &self,
        session: &SessionId,
        turn: TurnWrite,
    ) -> Result<Vec<StoredFact>, MemoryError>;

    /// Writes facts outside a turn (the control plane's inject), atomically.
    async fn inject(
        &self,
        session: &SessionId,
        facts: Vec<NewFact>,
    ) -> Result<Vec<StoredFact>, MemoryError>;

    /// Removes all of a session's working and long-term memory, and nothing of any other session,
    /// and increments the session's epoch (which itself survives the reset).
    async fn reset(&self, session: &SessionId) -> Result<ResetCounts, MemoryError>;

    /// The session's memory as the agent would see it at `now`.
    async fn snapshot(
        &self,
        session: &SessionId,
        now: DateTime<Utc>,
    ) -> Result<Snapshot, MemoryError>;

    /// One entry per backing dependency, for `/readyz`.
    async fn health(&self) -> Vec<DependencyHealth>;

    /// Facts and episodes of any session that have no embedding yet, at most `limit`, oldest
    /// written first, with how many there are in all: what the backfill still owes
    /// (crate::agent::backfill).
    async fn unembedded(&self, limit: usize) -> Result<Unembedded, MemoryError>;

    /// Stores the embeddings of items of `session`, by id; an id the session no longer holds is
    /// skipped (the item was retired meanwhile).
    async fn set_embeddings(
        &self,
        session: &SessionId,
        vectors: Vec<(Uuid, Arc<[f32]>)>,
    ) -> Result<(), MemoryError>;
}

/// Items waiting for an embedding ([`MemoryStore::unembedded`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Unembedded {
    /// `(session, id, text)` of the first ones.
    pub items: Vec<(SessionId, Uuid, String)>,
    /// How many there are in all.
    pub total: u64,
}

/// Canonical form of a supersession key: lower case, inner whitespace collapsed, trimmed of
/// whitespace and punctuation at both ends. "Favourite  Colour " and "favourite colour" are one key.
pub fn normalize_key(key: &str) -> String {
    key.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_matches(|c: char| c.is_ascii_punctuation() || c.is_whitespace())
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    #[test]
    fn a_working_item_knows_its_words_and_equality_ignores_whether_it_worked_them_out() {
        let at = Utc::now();
        let item = WorkingItem::new(TurnRole::User, "I parked the blue car on level 3.", at);
        let fresh = item.clone();
        assert_eq!(item.terms(), ranking::query_terms(&item.text).as_slice());
        assert_eq!(item, fresh);
        let serialized = serde_json::to_string(&item).unwrap();
        assert!(!serialized.contains("terms"), "{serialized}");
        let back: WorkingItem = serde_json::from_str(&serialized).unwrap();
        assert_eq!(back, item);
        assert_eq!(back.terms(), item.terms());
    }

    #[test]
    fn new_fact_ids_are_time_ordered() {
        let new = || NewFact {
            embedding: None,
            source_turn_ids: Vec::new(),
            kind: FactKind::Fact,
            key: None,
            text: "x".to_owned(),
            data: None,
            observed_at: Utc::now(),
            importance: 0.5,
            source: FactSource::Extracted,
        };
        let ids: Vec<Uuid> = (0..100).map(|_| Fact::from_new(new()).id).collect();
        assert!(ids.iter().all(|id| id.get_version_num() == 7));
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "later facts sort later"
        );
    }

    #[test]
    fn keys_normalise_case_space_and_edge_punctuation() {
        assert_eq!(normalize_key("  Favourite   Colour. "), "favourite colour");
        assert_eq!(normalize_key("rule:banana"), "rule:banana");
        assert_eq!(normalize_key(""), "");
    }

    #[test]
    fn liveness_follows_the_session_clock() {
        let config = MemoryConfig {
            working_ttl: Duration::from_secs(3600),
            ..MemoryConfig::default()
        };
        let at = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .unwrap()
            .to_utc();
        assert!(config.is_live(at, at + chrono::Duration::minutes(59)));
        assert!(!config.is_live(at, at + chrono::Duration::minutes(60)));
        // An item "from the future" (the clock moved back) stays visible rather than vanishing.
        assert!(config.is_live(at, at - chrono::Duration::days(1)));
    }

    proptest::proptest! {
        /// The session cache compares whole-µs item times with `live_after` in µs; that must
        /// decide exactly as `is_live` does, TTLs out of chrono's range included.
        #[test]
        fn live_after_in_whole_microseconds_decides_as_is_live(
            at_us in -62_000_000_000_000_000_i64..250_000_000_000_000_000,
            now_ns in proptest::num::i64::ANY,
            ttl_secs in proptest::prop_oneof![0_u64..10_000_000, proptest::num::u64::ANY],
        ) {
            let config = MemoryConfig {
                working_ttl: Duration::from_secs(ttl_secs),
                ..MemoryConfig::default()
            };
            let at = DateTime::from_timestamp_micros(at_us).unwrap();
            let now = DateTime::from_timestamp_nanos(now_ns);
            let cutoff = config.live_after(now).map(|c| c.timestamp_micros());
            proptest::prop_assert_eq!(
                config.is_live(at, now),
                cutoff.is_none_or(|c| at_us > c)
            );
        }

        /// And at full precision: `at > live_after(now)` on the times themselves, as the
        /// redis+postgres backend compares its items' nanosecond times.
        #[test]
        fn live_after_decides_as_is_live_to_the_nanosecond(
            at_secs in -8_000_000_000_000_i64..8_000_000_000_000,
            at_ns in 0_u32..1_000_000_000,
            now_ns in proptest::num::i64::ANY,
            ttl in proptest::prop_oneof![
                (0_u64..10_000_000, 0_u32..1_000_000_000)
                    .prop_map(|(secs, nanos)| Duration::new(secs, nanos)),
                proptest::num::u64::ANY.prop_map(Duration::from_secs),
            ],
        ) {
            let config = MemoryConfig {
                working_ttl: ttl,
                ..MemoryConfig::default()
            };
            let at = DateTime::from_timestamp(at_secs, at_ns).unwrap();
            let now = DateTime::from_timestamp_nanos(now_ns);
            let cutoff = config.live_after(now);
            proptest::prop_assert_eq!(config.is_live(at, now), cutoff.is_none_or(|c| at > c));
        }

        /// The same at the edge: items written within a few nanoseconds, or whole µs, of
        /// expiring at `now`, compared both ways.
        #[test]
        fn live_after_decides_as_is_live_at_the_edge(
            now_ns in -4_000_000_000_000_000_000_i64..4_000_000_000_000_000_000,
            ttl_ns in 0_i64..100_000_000_000_000_000,
            delta in -3_i64..3,
        ) {
            let config = MemoryConfig {
                working_ttl: Duration::from_nanos(ttl_ns.unsigned_abs()),
                ..MemoryConfig::default()
            };
            let now = DateTime::from_timestamp_nanos(now_ns);
            let cutoff = config.live_after(now);

            let at = DateTime::from_timestamp_nanos(now_ns - ttl_ns + delta);
            proptest::prop_assert_eq!(config.is_live(at, now), delta > 0);
            proptest::prop_assert_eq!(config.is_live(at, now), cutoff.is_none_or(|c| at > c));

            let at_us = (now_ns - ttl_ns).div_euclid(1000) + delta;
            let at = DateTime::from_timestamp_micros(at_us).unwrap();
            let cutoff_us = cutoff.map(|c| c.timestamp_micros());
            proptest::prop_assert_eq!(config.is_live(at, now), cutoff_us.is_none_or(|c| at_us > c));
        }
    }
}
