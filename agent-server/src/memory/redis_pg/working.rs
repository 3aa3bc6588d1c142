//! Working memory in Redis: one sorted set per session, `{prefix}:s:{session}:wm`.
//!
//! - Score: the item's session-clock time in epoch milliseconds, so the set is ordered by `at`.
//! - Member: `{turn_seq:016x}{index:04x}` then the item as JSON. The fixed-width hex prefix orders
//!   items of equal score (Redis orders equal scores by member bytes) by turn, then by position in the
//!   turn, and makes every member unique; the JSON keeps `at` to the nanosecond.
//! - Expiry is a *view*: readers keep items for which [`MemoryConfig::is_live`] holds at the request's
//!   `now`, because the session clock (`X-Mock-Time`) moves independently of Redis' clock. A real
//!   `EXPIRE`, refreshed by every write, bounds how long an abandoned session occupies Redis.
//! - Capacity: readers take the newest `working_capacity` members. A batch trims each set to that
//!   many *before* adding any of its items, so removing exactly the added members (the
//!   compensation when the Postgres commit fails) restores what readers saw before; the set never
//!   holds more than capacity plus one batch's items for the session.
//!
//! Session ids may contain `:`, so keys are never matched by pattern: each session has exactly one key
//! with a fixed suffix, and two sessions can never produce the same key.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use protocol::SessionId;
use redis::AsyncCommands;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::recent::{Order, Placed};
use crate::memory::{MemoryConfig, MemoryError, WorkingItem};

pub(super) const DEPENDENCY: &str = "redis";

/// Bytes of the ordering prefix of a member: 16 hex digits of turn number, 4 of position.
const ORDER_PREFIX: usize = 20;

pub(super) struct Working {
    /// One multiplexed connection that every operation shares (Redis runs one command at a time
    /// anyway, and pipelining requests over one socket costs less than a pool's checkout, which
    /// deadpool-redis verified with a PING round trip every time). It reconnects by itself.
    conn: ConnectionManager,
    prefix: String,
    capacity: usize,
    /// Seconds of the real `EXPIRE` set on every write.
    key_ttl_secs: i64,
}

/// The exact members one turn added, so that they can be removed again.
pub(super) struct Written {
    key: String,
    /// Score and member, as ZADD takes them.
    members: Vec<(f64, String)>,
}

impl Working {
    /// Nothing connects here: the connection is made on first use, and remade after it breaks
    /// (a request that finds it broken fails as unavailable and starts the reconnection), which is
    /// what makes the store recover by itself when Redis comes back. Operations issued in order on
    /// it reach Redis in that order, so a compensation always lands after the write it undoes.
    pub(super) fn new(
        url: &str,
        timeout: Duration,
        prefix: &str,
        config: &MemoryConfig,
        key_ttl: Duration,
    ) -> Result<Self, MemoryError> {
        let client = redis::Client::open(url).map_err(|e| MemoryError::Backend {
            dependency: DEPENDENCY,
            reason: format!("the Redis URL is invalid: {e}"),
        })?;
        // Few, quick reconnection attempts: each operation has its own deadline anyway, and a
        // failed attempt is retried by the next operation.
        let manager = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(2)
            .set_min_delay(Duration::from_millis(20))
            .set_max_delay(timeout);
        let conn = ConnectionManager::new_lazy_with_config(client, manager).map_err(|e| {
            MemoryError::Backend {
                dependency: DEPENDENCY,
                reason: format!("cannot set up the Redis connection: {e}"),
            }
        })?;
        let key_ttl_secs = i64::try_from(key_ttl.as_secs())
            .unwrap_or(i64::MAX)
            .saturating_add(i64::from(key_ttl.subsec_nanos() > 0))
            .max(1);
        Ok(Self {
            conn,
            prefix: prefix.to_owned(),
            capacity: config.working_capacity,
            key_ttl_secs,
        })
    }

    /// The session's working-memory key.
    pub(super) fn key(&self, session: &SessionId) -> String {
        format!("{}:s:{}:wm", self.prefix, session)
    }

    /// A handle on the shared connection (a cheap clone).
    fn conn(&self) -> ConnectionManager {
        self.conn.clone()
    }

    /// Live items at `now`, oldest first: one round trip.
    pub(super) async fn read(
        &self,
        session: &SessionId,
        now: DateTime<Utc>,
        config: &MemoryConfig,
    ) -> Result<Vec<WorkingItem>, MemoryError> {
        if self.capacity == 0 {
            return Ok(Vec::new());
        }
        let mut conn = self.conn();
        let newest = -isize::try_from(self.capacity).unwrap_or(isize::MAX);
        let members: Vec<String> = conn
            .zrange(self.key(session), newest, -1)
            .await
            .map_err(redis_error)?;
        let mut items = Vec::with_capacity(members.len());
        for member in members {
            let item = decode(&member)?;
            if config.is_live(item.at, now) {
                items.push(item);
            }
        }
        Ok(items)
    }

    /// Every item of the session's set with its place in it, and when Redis drops the key at
    /// the latest (its real TTL): one round trip. Unlike [`Working::read`], this includes items
    /// beyond capacity and of turns in flight; [`RecentWorking::fill`](super::recent) sorts out
    /// which of them are committed.
    pub(super) async fn read_set(
        &self,
        session: &SessionId,
    ) -> Result<(Vec<Placed>, Instant), MemoryError> {
        let started = Instant::now();
        let key = self.key(session);
        let mut conn = self.conn();
        // MULTI/EXEC: the TTL is the one of the set read, not of a key that expired in between.
        let (members, ttl_ms): (Vec<String>, i64) = redis::pipe()
            .atomic()
            .zrange(&key, 0, -1)
            .pttl(&key)
            .query_async(&mut conn)
            .await
            .map_err(redis_error)?;
        // PTTL is -2 without a key (nothing to expire) and -1 without a TTL (never set by this
        // backend); either way nothing held can expire sooner than a write's TTL would.
        let ttl = u64::try_from(ttl_ms)
            .map(Duration::from_millis)
            .unwrap_or(self.key_ttl());
        let placed = members
            .iter()
            .map(|member| {
                let (turn, index) = order_prefix(member)?;
                let item = decode(member)?;
                Ok((order(turn, index, &item), Arc::new(item)))
            })
            .collect::<Result<_, MemoryError>>()?;
        Ok((placed, started + ttl))
    }

    /// How long a write keeps the key: an entry of [`RecentWorking`](super::recent) written at
    /// `at` is not used after `at` plus this.
    pub(super) fn key_ttl(&self) -> Duration {
        Duration::from_secs(self.key_ttl_secs.unsigned_abs())
    }

    /// The members one turn will add, encoded; no I/O.
    pub(super) fn batch(
        &self,
        session: &SessionId,
        turn_seq: u64,
        items: &[WorkingItem],
    ) -> Result<Written, MemoryError> {
        let members = items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                let member = encode(turn_seq, index, item)?;
                Ok((order(turn_seq, index, item).0 as f64, member))
            })
            .collect::<Result<_, MemoryError>>()?;
        Ok(Written {
            key: self.key(session),
            members,
        })
    }

    /// Appends the items of a batch of turns atomically, in one round trip (MULTI/EXEC): trims
    /// each session's set to capacity once, before any of the batch's items (so a session with
    /// two turns in the batch loses no item that readers see to its own second turn, and removing
    /// the batch's items restores what they saw), then adds each turn's items (one ZADD a turn),
    /// and last refreshes each key's real TTL once. Fewer commands for the same result: Redis's
    /// share of a turn is mostly per command.
    pub(super) async fn append(&self, batch: &[Written]) -> Result<(), MemoryError> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        let keep = isize::try_from(self.capacity).unwrap_or(isize::MAX);
        let mut trimmed = std::collections::HashSet::new();
        let mut keys = Vec::new();
        for written in batch {
            let key = written.key.as_str();
            if trimmed.insert(key) {
                pipe.zremrangebyrank(key, 0, -keep - 1).ignore();
                keys.push(key);
            }
            if !written.members.is_empty() {
                pipe.zadd_multiple(key, &written.members).ignore();
            }
        }
        for key in keys {
            pipe.expire(key, self.key_ttl_secs).ignore();
        }
        let mut conn = self.conn();
        pipe.query_async::<()>(&mut conn).await.map_err(redis_error)
    }

    /// Undoes [`Working::append`]: removes exactly the members it added, in one round trip.
    pub(super) async fn remove(&self, batch: &[Written]) -> Result<(), MemoryError> {
        if batch.iter().all(|w| w.members.is_empty()) {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for written in batch.iter().filter(|w| !w.members.is_empty()) {
            let members: Vec<&str> = written.members.iter().map(|(_, m)| m.as_str()).collect();
            pipe.zrem(&written.key, members).ignore();
        }
        let mut conn = self.conn();
        pipe.query_async::<()>(&mut conn).await.map_err(redis_error)
    }

    /// Deletes the session's working memory; returns how many items it held (at most the capacity:
    /// members beyond it are already out of working memory and kept only for compensation).
    pub(super) async fn clear(&self, session: &SessionId) -> Result<u64, MemoryError> {
        let key = self.key(session);
        let mut conn = self.conn();
        let (count,): (u64,) = redis::pipe()
            .atomic()
            .zcard(&key)
            .del(&key)
            .ignore()
            .query_async(&mut conn)
            .await
            .map_err(redis_error)?;
        Ok(count.min(u64::try_from(self.capacity).unwrap_or(u64::MAX)))
    }

    /// A liveness probe for `/readyz`.
    pub(super) async fn ping(&self) -> Result<(), MemoryError> {
        let mut conn = self.conn();
        redis::cmd("PING")
            .query_async::<String>(&mut conn)
            .await
            .map(drop)
            .map_err(redis_error)
    }
}

/// Where the member of item `index` of turn `turn_seq` sits in its set: the score (the item's
/// time in milliseconds), then the member's prefix ([`encode`]). Every place that orders items as
/// Redis does goes through here.
pub(super) fn order(turn_seq: u64, index: usize, item: &WorkingItem) -> Order {
    (item.at.timestamp_millis(), turn_seq, index.min(MAX_INDEX))
}

/// The largest position the member prefix's four hex digits hold.
const MAX_INDEX: usize = 0xffff;

fn encode(turn_seq: u64, index: usize, item: &WorkingItem) -> Result<String, MemoryError> {
    let json = serde_json::to_string(item).map_err(|e| MemoryError::Backend {
        dependency: DEPENDENCY,
        reason: format!("cannot encode a working-memory item: {e}"),
    })?;
    Ok(format!("{turn_seq:016x}{:04x}{json}", index.min(MAX_INDEX)))
}

/// The turn number and position a member's prefix holds (see [`encode`]).
fn order_prefix(member: &str) -> Result<(u64, usize), MemoryError> {
    let hex = |range: std::ops::Range<usize>| {
        member
            .get(range)
            .and_then(|digits| u64::from_str_radix(digits, 16).ok())
    };
    match (hex(0..16), hex(16..ORDER_PREFIX)) {
        (Some(turn), Some(index)) => Ok((turn, index as usize)),
        _ => Err(MemoryError::Corrupt {
            dependency: DEPENDENCY,
            reason: format!(
                "a working-memory member without its ordering prefix: {:?}",
                member
                    .get(..ORDER_PREFIX.min(member.len()))
                    .unwrap_or(member)
            ),
        }),
    }
}

fn decode(member: &str) -> Result<WorkingItem, MemoryError> {
    member
        .get(ORDER_PREFIX..)
        .ok_or_else(|| "member shorter than its ordering prefix".to_owned())
        .and_then(|json| serde_json::from_str(json).map_err(|e| e.to_string()))
        .map_err(|reason| MemoryError::Corrupt {
            dependency: DEPENDENCY,
            reason: format!("unreadable working-memory item: {reason}"),
        })
}

/// Classifies a Redis error: anything about reaching the server is `Unavailable`; a server that is
/// loading its data set or is a read-only replica is too (it will serve again); the rest is `Backend`.
pub(super) fn redis_error(e: redis::RedisError) -> MemoryError {
    let transient_server_state = matches!(e.code(), Some("LOADING" | "READONLY" | "MASTERDOWN"));
    if e.is_io_error()
        || e.is_connection_refusal()
        || e.is_timeout()
        || e.is_connection_dropped()
        || transient_server_state
    {
        MemoryError::Unavailable {
            dependency: DEPENDENCY,
            reason: e.to_string(),
        }
    } else {
        MemoryError::Backend {
            dependency: DEPENDENCY,
            reason: e.to_string(),
        }
    }
}
