//! Working memory in Redis: one sorted set per session, `{prefix}:s:{session}:wm`.
//!
//! - Score: the item's session-clock time in epoch milliseconds, so the set is ordered by `at`.
//! - Member: `{turn_seq:016x}{index:04x}` then the item as JSON. The fixed-width hex prefix orders
//!   items of equal score (Redis orders equal scores by member bytes) by turn, then by position in the
//!   turn, and makes every member unique; the JSON keeps `at` to the nanosecond.
//! - Expiry is a *view*: readers keep items for which [`MemoryConfig::is_live`] holds at the request's
//!   `now`, because the session clock (`X-Mock-Time`) moves independently of Redis' clock. A real
//!   `EXPIRE`, refreshed by every write, bounds how long an abandoned session occupies Redis.
//! - Capacity: readers take the newest `working_capacity` members. Writers trim the set to that many
//!   *before* adding the turn's items, so removing exactly the added members (the compensation when
//!   the Postgres commit fails) restores what readers saw before; the set never holds more than
//!   capacity plus one turn's items.
//!
//! Session ids may contain `:`, so keys are never matched by pattern: each session has exactly one key
//! with a fixed suffix, and two sessions can never produce the same key.

use std::time::Duration;

use chrono::{DateTime, Utc};
use deadpool_redis::redis::{self, AsyncCommands};
use deadpool_redis::{Manager, Pool, Runtime};
use protocol::SessionId;

use crate::memory::{MemoryConfig, MemoryError, WorkingItem};

pub(super) const DEPENDENCY: &str = "redis";

/// Bytes of the ordering prefix of a member: 16 hex digits of turn number, 4 of position.
const ORDER_PREFIX: usize = 20;

pub(super) struct Working {
    pool: Pool,
    prefix: String,
    capacity: usize,
    /// Seconds of the real `EXPIRE` set on every write.
    key_ttl_secs: i64,
}

/// The exact members one turn added, so that they can be removed again.
pub(super) struct Written {
    key: String,
    /// Member and score.
    members: Vec<(String, f64)>,
}

impl Working {
    /// Builds the pool. Nothing connects here; deadpool connects on first use and verifies each
    /// pooled connection (PING) before handing it out, dropping dead ones, so the store recovers by
    /// itself when Redis comes back.
    pub(super) fn new(
        url: &str,
        pool_size: usize,
        timeout: Duration,
        prefix: &str,
        config: &MemoryConfig,
        key_ttl: Duration,
    ) -> Result<Self, MemoryError> {
        let connection = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout));
        let manager =
            Manager::new_with_config(url, connection).map_err(|e| MemoryError::Backend {
                dependency: DEPENDENCY,
                reason: format!("the Redis URL is invalid: {e}"),
            })?;
        let pool = Pool::builder(manager)
            .max_size(pool_size.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(timeout))
            .create_timeout(Some(timeout))
            .recycle_timeout(Some(timeout))
            .build()
            .map_err(|e| MemoryError::Backend {
                dependency: DEPENDENCY,
                reason: format!("cannot build the connection pool: {e}"),
            })?;
        let key_ttl_secs = i64::try_from(key_ttl.as_secs())
            .unwrap_or(i64::MAX)
            .saturating_add(i64::from(key_ttl.subsec_nanos() > 0))
            .max(1);
        Ok(Self {
            pool,
            prefix: prefix.to_owned(),
            capacity: config.working_capacity,
            key_ttl_secs,
        })
    }

    /// The session's working-memory key.
    pub(super) fn key(&self, session: &SessionId) -> String {
        format!("{}:s:{}:wm", self.prefix, session)
    }

    async fn conn(&self) -> Result<deadpool_redis::Connection, MemoryError> {
        self.pool.get().await.map_err(|e| match e {
            deadpool_redis::PoolError::Backend(e) => redis_error(e),
            other => MemoryError::Unavailable {
                dependency: DEPENDENCY,
                reason: format!("no connection: {other}"),
            },
        })
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
        let mut conn = self.conn().await?;
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
                Ok((member, item.at.timestamp_millis() as f64))
            })
            .collect::<Result<_, MemoryError>>()?;
        Ok(Written {
            key: self.key(session),
            members,
        })
    }

    /// Appends one turn's items atomically, in one round trip (MULTI/EXEC): trim to capacity, add,
    /// refresh the real TTL.
    pub(super) async fn append(&self, written: &Written) -> Result<(), MemoryError> {
        let key = &written.key;
        let mut pipe = redis::pipe();
        pipe.atomic();
        let keep = isize::try_from(self.capacity).unwrap_or(isize::MAX);
        pipe.zremrangebyrank(key, 0, -keep - 1).ignore();
        for (member, score) in &written.members {
            pipe.zadd(key, member, *score).ignore();
        }
        pipe.expire(key, self.key_ttl_secs).ignore();
        let mut conn = self.conn().await?;
        pipe.query_async::<()>(&mut *conn)
            .await
            .map_err(redis_error)
    }

    /// Undoes [`Working::append`]: removes exactly the members it added.
    pub(super) async fn remove(&self, written: &Written) -> Result<(), MemoryError> {
        if written.members.is_empty() {
            return Ok(());
        }
        let mut conn = self.conn().await?;
        let members: Vec<&str> = written.members.iter().map(|(m, _)| m.as_str()).collect();
        conn.zrem::<_, _, ()>(&written.key, members)
            .await
            .map_err(redis_error)
    }

    /// Deletes the session's working memory; returns how many items it held (at most the capacity:
    /// members beyond it are already out of working memory and kept only for compensation).
    pub(super) async fn clear(&self, session: &SessionId) -> Result<u64, MemoryError> {
        let key = self.key(session);
        let mut conn = self.conn().await?;
        let (count,): (u64,) = redis::pipe()
            .atomic()
            .zcard(&key)
            .del(&key)
            .ignore()
            .query_async(&mut *conn)
            .await
            .map_err(redis_error)?;
        Ok(count.min(u64::try_from(self.capacity).unwrap_or(u64::MAX)))
    }

    /// A liveness probe for `/readyz`.
    pub(super) async fn ping(&self) -> Result<(), MemoryError> {
        let mut conn = self.conn().await?;
        redis::cmd("PING")
            .query_async::<String>(&mut *conn)
            .await
            .map(drop)
            .map_err(redis_error)
    }
}

fn encode(turn_seq: u64, index: usize, item: &WorkingItem) -> Result<String, MemoryError> {
    let json = serde_json::to_string(item).map_err(|e| MemoryError::Backend {
        dependency: DEPENDENCY,
        reason: format!("cannot encode a working-memory item: {e}"),
    })?;
    Ok(format!("{turn_seq:016x}{:04x}{json}", index.min(0xffff)))
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
