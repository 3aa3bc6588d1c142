//! The store's operations as plain synchronous functions over one connection. The async shell in
//! `mod.rs` runs reads on a pooled connection (on a blocking thread, through `interact`) and hands
//! writes to the group-commit writer (`writer.rs`), which runs them inside its batch transaction.
//!
//! Statements run on every turn go through `prepare_cached`, so each connection compiles them once.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Timelike, Utc};
use deadpool_sqlite::rusqlite::{Connection, OptionalExtension, Row, params};
use protocol::control::{FactKind, FactSource};
use uuid::Uuid;

use super::cache::{SessionChange, SessionMemory, StoredRow};
use super::cursors::{SessionCursors, read_epoch};
use super::{corrupt, sqlite_error};
use crate::memory::lexical::Analyzed;
use crate::memory::writes::{FactWrites, Resolved, StoredForm, StoredKeyed, StoredUnkeyed};
use crate::memory::{
    EPISODE_IMPORTANCE, EpisodeData, Fact, MemoryConfig, MemoryError, NewFact, ResetCounts,
    Restatement, Snapshot, StoredFact, TurnRole, TurnWrite, Unembedded, WorkingItem,
};
use protocol::SessionId;

/// Columns of `facts` in the order [`RawFact::from_row`] reads them, prefixed by the alias `f.`.
const FACT_COLUMNS: &str =
    "f.id, f.kind, f.key, f.text, f.data, f.observed_at, f.importance, f.source, f.source_turn_ids";

/// Everything of `session` the cache mirrors: epoch, the newest `working_capacity` working items
/// (live or not: liveness depends on the clock of each recall) and every fact, episodes only if
/// `episodes` (see `SessionMemory::mirrors_episodes`).
pub(super) fn load_session(
    conn: &Connection,
    config: &MemoryConfig,
    session: &str,
    episodes: bool,
) -> Result<SessionMemory, MemoryError> {
    let epoch = read_epoch(conn, session)?.unwrap_or(0);
    let mut memory = if episodes {
        SessionMemory::new(epoch)
    } else {
        SessionMemory::without_episodes(epoch)
    };
    for (seq, item) in newest_working(conn, config, session)? {
        memory.push_item(seq, item);
    }

    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {FACT_COLUMNS}, f.pk, f.embedding FROM facts AS f WHERE f.session_id = ?1"
        ))
        .map_err(sqlite_error)?;
    let rows = stmt
        .query_map([session], |row| {
            Ok((
                RawFact::from_row(row)?,
                row.get::<_, i64>(9)?,
                row.get::<_, Option<Vec<u8>>>(10)?,
            ))
        })
        .map_err(sqlite_error)?;
    for row in rows {
        let (raw, pk, embedding) = row.map_err(sqlite_error)?;
        memory.add_fact(StoredRow {
            pk,
            analyzed: None,
            embedding: embedding.as_deref().and_then(embedding_from_column),
            fact: raw.into_fact()?,
        });
    }
    if episodes {
        for row in select_episodes(conn, "", session)? {
            memory.add_fact(row);
        }
    }
    Ok(memory)
}

pub(super) fn snapshot(
    conn: &mut Connection,
    config: &MemoryConfig,
    session: &str,
    now: DateTime<Utc>,
) -> Result<Snapshot, MemoryError> {
    let tx = conn.transaction().map_err(sqlite_error)?;
    let working = live_working(&tx, config, session, now)?;
    // Newest first; among equal times the later write first, and an episode before a fact (a
    // turn writes its facts, then its episodes).
    let facts = select_facts(
        &tx,
        "WHERE f.session_id = ?1 ORDER BY f.observed_at DESC, f.pk DESC",
        session,
    )?;
    let episodes = select_episodes(&tx, "ORDER BY w.at DESC, w.seq DESC", session)?;
    let mut facts = facts.into_iter().peekable();
    let mut episodes = episodes.into_iter().map(|row| row.fact).peekable();
    let mut all = Vec::with_capacity(facts.len() + episodes.len());
    loop {
        let next = match (facts.peek(), episodes.peek()) {
            (Some(fact), Some(episode)) if fact.observed_at > episode.observed_at => facts.next(),
            (_, Some(_)) => episodes.next(),
            (Some(_), None) => facts.next(),
            (None, None) => break,
        };
        all.extend(next);
    }
    Ok(Snapshot {
        working,
        facts: all,
    })
}

/// Writes one turn. Runs inside the writer's batch transaction; an error here (a reset session
/// included) leaves nothing of this turn written (see `writer::Isolation`). Returns, besides the
/// stored facts, the change for the session cache.
pub(super) fn commit_turn(
    conn: &Connection,
    cursors: &mut SessionCursors,
    config: &MemoryConfig,
    session: &str,
    turn: &TurnWrite,
    analyzed: &[Option<Arc<Analyzed>>],
) -> Result<(Vec<StoredFact>, SessionChange), MemoryError> {
    // The writer holds the write lock for the whole batch, and applies jobs in queue order: no
    // reset can run between this check and the writes below. It comes before any write, so a
    // refused turn has written nothing.
    let cursor = cursors.get(conn, session)?;
    if let Some(expected) = turn.expected_epoch
        && cursor.epoch != expected
    {
        return Err(MemoryError::SessionReset);
    }
    if !cursor.registered {
        register_session(conn, session)?;
    }
    let mut change = SessionChange {
        session: session.to_owned(),
        ..SessionChange::default()
    };
    let mut writes = resolver(conn, session, &turn.facts, &turn.restate)?;
    let stored = writes.turn(session, turn);
    let written = Written {
        stored: &stored,
        facts: &turn.facts,
        analyzed,
    };
    let episodes = apply_writes(conn, writes.finish(), written, &mut change)?;
    let rows = write_rows(
        conn,
        session,
        cursor.next_seq,
        &turn.items,
        episodes,
        &mut change,
    )?;

    // Capacity: readers take the newest `working_capacity` working items by (at, seq), so older
    // ones only have to go eventually. Trimming on every turn walked `working_capacity` entries
    // of the table per turn, the costliest statement of a turn; trimming when the items' numbers
    // pass a multiple of the capacity costs the same once per `working_capacity` items, and
    // leaves at most about twice that many rows per session. A turn whose items are episodes
    // trims nothing: its rows stay as the session's episodes (and working memory's readers skip
    // past them just the same).
    let capacity = i64::try_from(config.working_capacity).unwrap_or(i64::MAX);
    if rows.plain_items > 0 && passes_multiple(cursor.next_seq, rows.written, capacity) {
        // The sub-query finds the newest working item beyond capacity by walking the table in
        // key order (NULL, so nothing is deleted, when there is none); every item from it down
        // that is not an episode goes. A row-value range rather than `seq NOT IN (newest ...)`,
        // which materialised the kept set.
        conn.prepare_cached(
            "DELETE FROM working_items WHERE session_id = ?1 AND episode_id IS NULL
             AND (at, seq) <= (
                 SELECT at, seq FROM working_items WHERE session_id = ?1 AND working = 1
                 ORDER BY at DESC, seq DESC LIMIT 1 OFFSET ?2)",
        )
        .and_then(|mut stmt| stmt.execute(params![session, capacity]))
        .map_err(sqlite_error)?;
    }
    Ok((stored, change))
}

/// Whether numbering `count` items from `first` on uses a multiple of `step` (`step` > 0).
fn passes_multiple(first: i64, count: i64, step: i64) -> bool {
    let step = step.max(1);
    count > 0 && (first + count - 1).div_euclid(step) != (first - 1).div_euclid(step)
}

/// An episode to write, with who said it.
type EpisodeRow = (StoredRow, EpisodeData);

/// One `working_items` row of a job: a working item (with its episode, when it is one), or an
/// episode that is no working item.
enum PlannedRow<'a> {
    Item(&'a WorkingItem, Option<EpisodeRow>),
    Episode(EpisodeRow),
}

impl PlannedRow<'_> {
    /// What the row says, by whom, when. An item's row says what the item says (its episode,
    /// if any, says the same).
    fn said(&self) -> (TurnRole, &str, DateTime<Utc>) {
        match self {
            Self::Item(item, _) => (item.role, item.text.as_str(), item.at),
            Self::Episode((row, data)) => (data.role, row.fact.text.as_str(), row.fact.observed_at),
        }
    }

    fn episode(&self) -> Option<&EpisodeRow> {
        match self {
            Self::Item(_, episode) => episode.as_ref(),
            Self::Episode(episode) => Some(episode),
        }
    }
}

/// What [`write_rows`] wrote.
struct RowsWritten {
    /// Rows, numbered from the cursor's `next_seq` on.
    written: i64,
    /// Working items that are not episodes (episodes off), which a trim may delete.
    plain_items: usize,
}

/// Writes a job's working items and episodes as `working_items` rows, numbered from `next_seq`
/// on, and records them in `change`. An episode that is one of the items (the same role, text
/// and time: a turn's own episodes) shares that item's row; any other episode (an injected one)
/// gets a row of its own with `working` 0, outside working memory. An episode's row number is
/// its row id in the cache (`StoredRow::pk`).
fn write_rows(
    conn: &Connection,
    session: &str,
    next_seq: i64,
    items: &[WorkingItem],
    episodes: Vec<StoredRow>,
    change: &mut SessionChange,
) -> Result<RowsWritten, MemoryError> {
    let mut episodes: Vec<Option<EpisodeRow>> = episodes
        .into_iter()
        .map(|row| {
            let data = EpisodeData::of(&row.fact).ok_or_else(|| MemoryError::Backend {
                dependency: super::DEPENDENCY,
                reason: format!("episode {} does not say who said it", row.fact.id),
            })?;
            Ok(Some((row, data)))
        })
        .collect::<Result<_, MemoryError>>()?;
    // Each item with its own episode, if the job has one; then the episodes that are no item.
    let mut planned: Vec<PlannedRow> = items
        .iter()
        .map(|item| {
            let own = episodes.iter_mut().find(|episode| {
                episode.as_ref().is_some_and(|(row, data)| {
                    item.is_recorded_by(&row.fact.text, row.fact.observed_at, || Some(data.role))
                })
            });
            PlannedRow::Item(item, own.and_then(Option::take))
        })
        .collect();
    planned.extend(episodes.into_iter().flatten().map(PlannedRow::Episode));
    let rows = RowsWritten {
        written: i64::try_from(planned.len()).unwrap_or(i64::MAX),
        plain_items: planned
            .iter()
            .filter(|row| matches!(row, PlannedRow::Item(_, None)))
            .count(),
    };
    if planned.is_empty() {
        return Ok(rows);
    }
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO working_items (session_id, seq, role, text, at, working, episode_id,
                 speaker, source, source_turn_ids, embedding)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )
        .map_err(sqlite_error)?;
    for (seq, row) in (next_seq..).zip(planned) {
        let (role, text, at) = row.said();
        let micros = at.timestamp_micros();
        let stored = row
            .episode()
            .map(|(stored, data)| (&stored.fact, data, &stored.embedding));
        insert
            .execute(params![
                session,
                seq,
                role.as_str(),
                text,
                micros,
                matches!(row, PlannedRow::Item(..)),
                stored.map(|(fact, ..)| fact.id.to_string()),
                stored.and_then(|(_, data, _)| data.speaker.as_deref()),
                stored.map(|(fact, ..)| fact.source.as_str()),
                stored.and_then(|(fact, ..)| turn_ids_column(&fact.source_turn_ids)),
                stored.and_then(|(.., vector)| vector.as_deref().map(embedding_column)),
            ])
            .map_err(sqlite_error)?;
        let episode = match row {
            PlannedRow::Item(item, episode) => {
                // At the stored precision, so the cached item equals the one a reload reads.
                change.items.push((seq, item.with_time(timestamp(micros)?)));
                episode
            }
            PlannedRow::Episode(episode) => Some(episode),
        };
        if let Some((stored, _)) = episode {
            change.added.push(StoredRow { pk: seq, ..stored });
        }
    }
    Ok(rows)
}

/// Writes facts outside a turn; like [`commit_turn`], inside the writer's batch.
pub(super) fn inject(
    conn: &Connection,
    cursors: &mut SessionCursors,
    session: &str,
    facts: &[NewFact],
    analyzed: &[Option<Arc<Analyzed>>],
) -> Result<(Vec<StoredFact>, SessionChange), MemoryError> {
    let cursor = cursors.get(conn, session)?;
    if !cursor.registered {
        register_session(conn, session)?;
    }
    let mut change = SessionChange {
        session: session.to_owned(),
        ..SessionChange::default()
    };
    let mut writes = resolver(conn, session, facts, &[])?;
    let stored = writes.add(session, facts);
    let written = Written {
        stored: &stored,
        facts,
        analyzed,
    };
    let episodes = apply_writes(conn, writes.finish(), written, &mut change)?;
    write_rows(conn, session, cursor.next_seq, &[], episodes, &mut change)?;
    Ok((stored, change))
}

/// Clears a session and bumps its epoch; inside the writer's batch, so turns queued after it see
/// the new epoch.
pub(super) fn reset(
    conn: &Connection,
    config: &MemoryConfig,
    session: &str,
) -> Result<(ResetCounts, SessionChange), MemoryError> {
    // What working memory held as readers see it, the newest `working_capacity` working items:
    // the table may also keep older ones that wait for the next trim (see `commit_turn`).
    // Episodes are rows of `working_items` too (all of them counted, as facts), and the working
    // items among its rows are counted up to capacity.
    let (working, episodes): (i64, i64) = conn
        .query_row(
            "SELECT coalesce(sum(working), 0), count(episode_id) FROM working_items
             WHERE session_id = ?1",
            [session],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .map_err(sqlite_error)?;
    conn.execute("DELETE FROM working_items WHERE session_id = ?1", [session])
        .map_err(sqlite_error)?;
    let working_items = usize::try_from(working)
        .unwrap_or_default()
        .min(config.working_capacity);
    let facts = conn
        .execute("DELETE FROM facts WHERE session_id = ?1", [session])
        .map_err(sqlite_error)?
        + usize::try_from(episodes).unwrap_or_default();
    conn.execute(
        "INSERT INTO sessions (session_id, epoch) VALUES (?1, 1)
         ON CONFLICT (session_id) DO UPDATE SET epoch = epoch + 1",
        [session],
    )
    .map_err(sqlite_error)?;
    let counts = ResetCounts {
        working_items: working_items as u64,
        facts: facts as u64,
    };
    let change = SessionChange {
        session: session.to_owned(),
        reset: true,
        ..SessionChange::default()
    };
    Ok((counts, change))
}

/// Inserts one fact; the statement every fact write runs.
pub(super) const INSERT_FACT: &str = "INSERT INTO facts
     (id, session_id, kind, key, text, data, observed_at, importance, source, source_turn_ids,
      embedding)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";

/// An embedding as the `embedding` column holds it: its f32s, little-endian.
fn embedding_column(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The inverse of [`embedding_column`]; `None` for a blob that is not whole f32s.
fn embedding_from_column(blob: &[u8]) -> Option<Arc<[f32]>> {
    (blob.len().is_multiple_of(4) && !blob.is_empty()).then(|| {
        blob.chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    })
}

/// Facts and episodes without an embedding: the first `limit` (facts first, in write order, then
/// episodes by session and time), and the count.
pub(super) fn unembedded(conn: &Connection, limit: usize) -> Result<Unembedded, MemoryError> {
    const FACTS: &str = "FROM facts WHERE embedding IS NULL AND kind = 'fact'";
    const EPISODES: &str = "FROM working_items WHERE episode_id IS NOT NULL AND embedding IS NULL";
    let count = |from: &str| -> Result<i64, MemoryError> {
        conn.prepare_cached(&format!("SELECT count(*) {from}"))
            .and_then(|mut stmt| stmt.query_row([], |row| row.get(0)))
            .map_err(sqlite_error)
    };
    let total = count(FACTS)? + count(EPISODES)?;
    let mut items = Vec::new();
    for select in [
        format!("SELECT session_id, id, text {FACTS} ORDER BY pk LIMIT ?1"),
        format!("SELECT session_id, episode_id, text {EPISODES} LIMIT ?1"),
    ] {
        let left = limit.saturating_sub(items.len());
        if left == 0 {
            break;
        }
        let mut stmt = conn.prepare_cached(&select).map_err(sqlite_error)?;
        let rows = stmt
            .query_map([i64::try_from(left).unwrap_or(i64::MAX)], |row| {
                <(String, String, String)>::try_from(row)
            })
            .map_err(sqlite_error)?;
        for row in rows {
            let (session, id, text) = row.map_err(sqlite_error)?;
            let session = SessionId::parse(&session)
                .map_err(|e| corrupt(format!("session id {session:?}: {e}")))?;
            items.push((session, parse_id(&id)?, text));
        }
    }
    Ok(Unembedded {
        items,
        total: u64::try_from(total).unwrap_or_default(),
    })
}

/// Stores embeddings of `session`'s items; inside the writer's batch.
pub(super) fn set_embeddings(
    conn: &Connection,
    session: &str,
    vectors: &[(Uuid, Arc<[f32]>)],
) -> Result<((), SessionChange), MemoryError> {
    let mut change = SessionChange {
        session: session.to_owned(),
        ..SessionChange::default()
    };
    let mut fact = conn
        .prepare_cached("UPDATE facts SET embedding = ?3 WHERE session_id = ?1 AND id = ?2")
        .map_err(sqlite_error)?;
    let mut episodes = Vec::new();
    for (id, vector) in vectors {
        let changed = fact
            .execute(params![session, id.to_string(), embedding_column(vector)])
            .map_err(sqlite_error)?;
        if changed > 0 {
            change.embedded.push((*id, Arc::clone(vector)));
        } else {
            episodes.push((*id, vector));
        }
    }
    if episodes.is_empty() {
        return Ok(((), change));
    }
    // No index finds an episode by id (it would cost every turn's write an entry): one pass
    // over the session's rows finds each one's key.
    let wanted: HashMap<String, usize> = episodes
        .iter()
        .enumerate()
        .map(|(i, (id, _))| (id.to_string(), i))
        .collect();
    let mut keys = Vec::new();
    {
        let mut stmt = conn
            .prepare_cached(
                "SELECT episode_id, at, seq FROM working_items
                 WHERE session_id = ?1 AND episode_id IS NOT NULL",
            )
            .map_err(sqlite_error)?;
        let rows = stmt
            .query_map([session], |row| <(String, i64, i64)>::try_from(row))
            .map_err(sqlite_error)?;
        for row in rows {
            let (id, at, seq) = row.map_err(sqlite_error)?;
            if let Some(&i) = wanted.get(&id) {
                keys.push((i, at, seq));
            }
        }
    }
    let mut update = conn
        .prepare_cached(
            "UPDATE working_items SET embedding = ?4 WHERE session_id = ?1 AND at = ?2 AND seq = ?3",
        )
        .map_err(sqlite_error)?;
    for (i, at, seq) in keys {
        let (id, vector) = episodes[i];
        update
            .execute(params![session, at, seq, embedding_column(vector)])
            .map_err(sqlite_error)?;
        change.embedded.push((id, Arc::clone(vector)));
    }
    Ok(((), change))
}

/// What the cache's lexical indexes need of each of `facts` (`None` for rules and reminders,
/// which they do not index, and for episodes unless the session's cached copy mirrors them,
/// `episodes`): worked out by the request, before its write is queued, so that the writer
/// thread, which applies every write in turn, does not tokenize and stem their text. An episode
/// left out for a session that starts mirroring them meanwhile is analysed by the writer.
pub(super) fn analyze(facts: &[NewFact], episodes: bool) -> Vec<Option<Arc<Analyzed>>> {
    facts
        .iter()
        .map(|fact| {
            let indexed = match fact.kind {
                FactKind::Fact => true,
                FactKind::Episode => episodes,
                FactKind::Rule | FactKind::Reminder => false,
            };
            indexed.then(|| Arc::new(Analyzed::of(&fact.text)))
        })
        .collect()
}

/// The resolver of a job's writes (see `memory::writes`), fed the stored facts they touch: the
/// current fact of each key `facts` write, and the unkeyed facts `restate` names. Read inside the
/// writer's batch transaction, so they include the batch's earlier jobs.
fn resolver<'a>(
    conn: &Connection,
    session: &str,
    facts: &[NewFact],
    restate: &[Restatement],
) -> Result<FactWrites<'a>, MemoryError> {
    let mut keyed = Vec::new();
    if facts.iter().any(|fact| fact.key.is_some()) {
        let mut current = conn
            .prepare_cached("SELECT id, observed_at FROM facts WHERE session_id = ?1 AND key = ?2")
            .map_err(sqlite_error)?;
        for key in facts.iter().filter_map(|fact| fact.key.as_deref()) {
            let row: Option<(String, i64)> = current
                .query_row(params![session, key], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()
                .map_err(sqlite_error)?;
            if let Some((id, observed_at)) = row {
                keyed.push(StoredKeyed {
                    session: session.to_owned(),
                    key: key.to_owned(),
                    id: parse_id(&id)?,
                    observed_at: timestamp(observed_at)?,
                });
            }
        }
    }
    let mut unkeyed = Vec::new();
    if !restate.is_empty() {
        let mut restatable = conn
            .prepare_cached(
                "SELECT text, source_turn_ids FROM facts
                 WHERE session_id = ?1 AND id = ?2 AND kind = 'fact' AND key IS NULL",
            )
            .map_err(sqlite_error)?;
        for restated in restate {
            let row: Option<(String, Option<String>)> = restatable
                .query_row(params![session, restated.id.to_string()], |row| {
                    Ok((row.get(0)?, row.get(1)?))
                })
                .optional()
                .map_err(sqlite_error)?;
            if let Some((text, turn_ids)) = row {
                unkeyed.push(StoredUnkeyed {
                    session: session.to_owned(),
                    id: restated.id,
                    text,
                    source_turn_ids: turn_ids_from_column(turn_ids, restated.id)?,
                });
            }
        }
    }
    Ok(FactWrites::new(keyed, unkeyed, STORED_FORM))
}

/// Times are stored in whole microseconds; text as it is.
const STORED_FORM: StoredForm = StoredForm {
    time: |at| {
        at.with_nanosecond(at.nanosecond() / 1000 * 1000)
            .unwrap_or(at)
    },
    ..StoredForm::EXACT
};

/// A job's facts as the resolver numbered them: `stored[i]` is `facts[i]`, whose text's analysis
/// is `analyzed[i]` (restatements follow the facts in `stored`, with neither).
struct Written<'a> {
    stored: &'a [StoredFact],
    facts: &'a [NewFact],
    analyzed: &'a [Option<Arc<Analyzed>>],
}

/// Applies a job's resolved writes to `facts` and records them in `change`, except the
/// episodes it inserts: those are returned, for [`write_rows`] to write with the job's working
/// items.
fn apply_writes(
    conn: &Connection,
    resolved: Resolved<'_>,
    written: Written<'_>,
    change: &mut SessionChange,
) -> Result<Vec<StoredRow>, MemoryError> {
    let Written {
        stored,
        facts,
        analyzed,
    } = written;
    let Resolved {
        retire,
        replaced,
        updates,
        inserts,
    } = resolved;
    if !retire.is_empty() || !replaced.is_empty() {
        let mut delete = conn
            .prepare_cached("DELETE FROM facts WHERE session_id = ?1 AND id = ?2")
            .map_err(sqlite_error)?;
        for (session, id) in retire.iter().chain(&replaced) {
            delete
                .execute(params![session, id.to_string()])
                .map_err(sqlite_error)?;
            change.removed.push(*id);
        }
    }
    if !updates.is_empty() {
        let mut update = conn
            .prepare_cached(
                "UPDATE facts SET text = coalesce(?3, text), observed_at = ?4, importance = ?5,
                 source = ?6, source_turn_ids = ?7,
                 embedding = CASE WHEN ?3 IS NULL THEN embedding END
                 WHERE session_id = ?1 AND id = ?2",
            )
            .map_err(sqlite_error)?;
        for (session, id, new) in updates {
            update
                .execute(params![
                    session,
                    id.to_string(),
                    new.text,
                    new.observed_at.timestamp_micros(),
                    f64::from(new.importance),
                    new.source.as_str(),
                    turn_ids_column(&new.source_turn_ids),
                ])
                .map_err(sqlite_error)?;
            change.restated.push((id, new));
        }
    }
    if inserts.is_empty() {
        return Ok(Vec::new());
    }
    let analyses: HashMap<Uuid, &Arc<Analyzed>> = stored
        .iter()
        .zip(analyzed)
        .filter_map(|(stored, analysis)| Some((stored.id, analysis.as_ref()?)))
        .collect();
    let embeddings: HashMap<Uuid, &Arc<[f32]>> = stored
        .iter()
        .zip(facts)
        .filter_map(|(stored, fact)| Some((stored.id, fact.embedding.as_ref()?)))
        .collect();
    let mut episodes = Vec::new();
    let mut insert = conn.prepare_cached(INSERT_FACT).map_err(sqlite_error)?;
    for (session, fact) in inserts {
        let embedding = embeddings.get(&fact.id).copied();
        if fact.kind == FactKind::Episode {
            // Written with the job's working items (`write_rows`), numbered there.
            episodes.push(StoredRow {
                pk: 0,
                analyzed: analyses.get(&fact.id).map(|a| Arc::clone(a)),
                embedding: embedding.map(Arc::clone),
                fact,
            });
            continue;
        }
        let data = fact
            .data
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| MemoryError::Backend {
                dependency: super::DEPENDENCY,
                reason: format!("cannot serialise fact data: {e}"),
            })?;
        insert
            .execute(params![
                fact.id.to_string(),
                session,
                fact.kind.as_str(),
                fact.key,
                fact.text,
                data,
                fact.observed_at.timestamp_micros(),
                f64::from(fact.importance),
                fact.source.as_str(),
                turn_ids_column(&fact.source_turn_ids),
                embedding.map(|v| embedding_column(v)),
            ])
            .map_err(sqlite_error)?;
        change.added.push(StoredRow {
            pk: conn.last_insert_rowid(),
            analyzed: analyses.get(&fact.id).map(|a| Arc::clone(a)),
            embedding: embedding.map(Arc::clone),
            fact,
        });
    }
    Ok(episodes)
}

/// Turn ids as the `source_turn_ids` column holds them: a JSON array, NULL when empty.
fn turn_ids_column(ids: &[String]) -> Option<String> {
    (!ids.is_empty()).then(|| serde_json::Value::from(ids.to_vec()).to_string())
}

/// The inverse of [`turn_ids_column`]; `fact` names the row in an error.
fn turn_ids_from_column(column: Option<String>, fact: Uuid) -> Result<Vec<String>, MemoryError> {
    column
        .map(|json| serde_json::from_str(&json))
        .transpose()
        .map(Option::unwrap_or_default)
        .map_err(|e| corrupt(format!("source_turn_ids of fact {fact}: {e}")))
}

fn parse_id(id: &str) -> Result<Uuid, MemoryError> {
    Uuid::parse_str(id).map_err(|e| corrupt(format!("fact id {id:?}: {e}")))
}

/// Records that the session exists (its epoch starts at 0); a no-op when it already does.
fn register_session(conn: &Connection, session: &str) -> Result<(), MemoryError> {
    conn.prepare_cached(
        "INSERT INTO sessions (session_id) VALUES (?1) ON CONFLICT (session_id) DO NOTHING",
    )
    .and_then(|mut stmt| stmt.execute([session]))
    .map_err(sqlite_error)?;
    Ok(())
}

/// The session's live working memory at `now`, oldest first.
fn live_working(
    conn: &Connection,
    config: &MemoryConfig,
    session: &str,
    now: DateTime<Utc>,
) -> Result<Vec<WorkingItem>, MemoryError> {
    // Liveness is decided by `MemoryConfig::is_live` itself rather than re-derived in SQL, so it
    // is the same rule, saturation included, as elsewhere.
    let mut items: Vec<WorkingItem> = newest_working(conn, config, session)?
        .into_iter()
        .map(|(_, item)| item)
        .filter(|item| config.is_live(item.at, now))
        .collect();
    items.reverse();
    Ok(items)
}

/// The session's newest `working_capacity` items with their `seq`, newest first, live or not.
/// Capacity is enforced on commit; limiting here as well keeps the view right if the store is
/// reopened with a smaller capacity.
fn newest_working(
    conn: &Connection,
    config: &MemoryConfig,
    session: &str,
) -> Result<Vec<(i64, WorkingItem)>, MemoryError> {
    let capacity = i64::try_from(config.working_capacity).unwrap_or(i64::MAX);
    let mut stmt = conn
        .prepare_cached(
            "SELECT seq, role, text, at FROM working_items WHERE session_id = ?1 AND working = 1
             ORDER BY at DESC, seq DESC LIMIT ?2",
        )
        .map_err(sqlite_error)?;
    let rows = stmt
        .query_map(params![session, capacity], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, i64>(3)?,
            ))
        })
        .map_err(sqlite_error)?;
    rows.map(|row| {
        let (seq, role, text, at) = row.map_err(sqlite_error)?;
        let role =
            TurnRole::parse(&role).ok_or_else(|| corrupt(format!("unknown turn role {role:?}")))?;
        Ok((seq, WorkingItem::new(role, text, timestamp(at)?)))
    })
    .collect()
}

/// Facts of `session` selected and ordered by `clause` (which binds the session as `?1`).
fn select_facts(conn: &Connection, clause: &str, session: &str) -> Result<Vec<Fact>, MemoryError> {
    let mut stmt = conn
        .prepare_cached(&format!("SELECT {FACT_COLUMNS} FROM facts AS f {clause}"))
        .map_err(sqlite_error)?;
    let rows = stmt
        .query_map([session], RawFact::from_row)
        .map_err(sqlite_error)?;
    rows.map(|row| row.map_err(sqlite_error)?.into_fact())
        .collect()
}

/// Episodes of `session` (rows of `working_items` with an `episode_id`) as the cache holds them
/// (by `seq`, with their vectors), in the order `order` gives (an `ORDER BY` over alias `w.`).
fn select_episodes(
    conn: &Connection,
    order: &str,
    session: &str,
) -> Result<Vec<StoredRow>, MemoryError> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT w.seq, w.episode_id, w.role, w.speaker, w.text, w.at, w.source,
                    w.source_turn_ids, w.embedding
             FROM working_items AS w WHERE w.session_id = ?1 AND w.episode_id IS NOT NULL {order}"
        ))
        .map_err(sqlite_error)?;
    let rows = stmt
        .query_map([session], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                RawEpisode {
                    id: row.get(1)?,
                    role: row.get(2)?,
                    speaker: row.get(3)?,
                    text: row.get(4)?,
                    at: row.get(5)?,
                    source: row.get(6)?,
                    source_turn_ids: row.get(7)?,
                },
                row.get::<_, Option<Vec<u8>>>(8)?,
            ))
        })
        .map_err(sqlite_error)?;
    rows.map(|row| {
        let (seq, raw, embedding) = row.map_err(sqlite_error)?;
        Ok(StoredRow {
            pk: seq,
            analyzed: None,
            embedding: embedding.as_deref().and_then(embedding_from_column),
            fact: raw.into_fact()?,
        })
    })
    .collect()
}

/// An episode's columns of `working_items` as SQLite types; [`RawEpisode::into_fact`] makes
/// the episode they store (what `NewFact::episode` made of it).
struct RawEpisode {
    id: String,
    role: String,
    speaker: Option<String>,
    text: String,
    at: i64,
    source: Option<String>,
    source_turn_ids: Option<String>,
}

impl RawEpisode {
    fn into_fact(self) -> Result<Fact, MemoryError> {
        let id = parse_id(&self.id)?;
        let role = TurnRole::parse(&self.role)
            .ok_or_else(|| corrupt(format!("episode {id} has role {:?}", self.role)))?;
        let source = self
            .source
            .ok_or_else(|| corrupt(format!("episode {id} has no source")))?
            .parse::<FactSource>()
            .map_err(|e| corrupt(e.to_string()))?;
        let data = EpisodeData {
            role,
            speaker: self.speaker,
        };
        Ok(Fact {
            id,
            kind: FactKind::Episode,
            key: None,
            text: self.text,
            data: Some(
                serde_json::to_value(data).map_err(|e| corrupt(format!("episode {id}: {e}")))?,
            ),
            observed_at: timestamp(self.at)?,
            importance: EPISODE_IMPORTANCE,
            source,
            source_turn_ids: turn_ids_from_column(self.source_turn_ids, id)?,
        })
    }
}

/// A `facts` row as SQLite types; [`RawFact::into_fact`] validates it.
struct RawFact {
    id: String,
    kind: String,
    key: Option<String>,
    text: String,
    data: Option<String>,
    observed_at: i64,
    importance: f64,
    source: String,
    source_turn_ids: Option<String>,
}

impl RawFact {
    fn from_row(row: &Row<'_>) -> deadpool_sqlite::rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            kind: row.get(1)?,
            key: row.get(2)?,
            text: row.get(3)?,
            data: row.get(4)?,
            observed_at: row.get(5)?,
            importance: row.get(6)?,
            source: row.get(7)?,
            source_turn_ids: row.get(8)?,
        })
    }

    fn into_fact(self) -> Result<Fact, MemoryError> {
        let id = Uuid::parse_str(&self.id)
            .map_err(|e| corrupt(format!("fact id {:?}: {e}", self.id)))?;
        let data = self
            .data
            .map(|d| serde_json::from_str(&d))
            .transpose()
            .map_err(|e| corrupt(format!("data of fact {id}: {e}")))?;
        Ok(Fact {
            id,
            kind: self
                .kind
                .parse::<FactKind>()
                .map_err(|e| corrupt(e.to_string()))?,
            key: self.key,
            text: self.text,
            data,
            observed_at: timestamp(self.observed_at)?,
            // Stored from an f32, so this narrowing is exact.
            importance: self.importance as f32,
            source: self
                .source
                .parse::<FactSource>()
                .map_err(|e| corrupt(e.to_string()))?,
            source_turn_ids: turn_ids_from_column(self.source_turn_ids, id)?,
        })
    }
}

fn timestamp(micros: i64) -> Result<DateTime<Utc>, MemoryError> {
    DateTime::from_timestamp_micros(micros)
        .ok_or_else(|| corrupt(format!("timestamp {micros} µs is out of range")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_sources_round_trip() {
        for kind in [
            FactKind::Fact,
            FactKind::Rule,
            FactKind::Reminder,
            FactKind::Episode,
        ] {
            assert_eq!(kind.as_str().parse::<FactKind>().unwrap(), kind);
        }
        for source in [
            FactSource::Extracted,
            FactSource::Promoted,
            FactSource::Injected,
        ] {
            assert_eq!(source.as_str().parse::<FactSource>().unwrap(), source);
        }
    }

    #[test]
    fn a_trim_is_due_when_item_numbers_pass_a_multiple_of_the_capacity() {
        // Items numbered 1, 2, ...: two per turn, capacity 8, so every fourth turn.
        let due: Vec<i64> = (0..8)
            .filter(|turn| passes_multiple(1 + 2 * turn, 2, 8))
            .collect();
        assert_eq!(due, [3, 7]);
        assert!(passes_multiple(8, 1, 8));
        assert!(!passes_multiple(9, 7, 8));
        assert!(passes_multiple(9, 8, 8));
        assert!(
            !passes_multiple(5, 0, 8),
            "nothing written, nothing to trim"
        );
        assert!(passes_multiple(5, 1, 1), "capacity 1 trims every item");
    }
}
