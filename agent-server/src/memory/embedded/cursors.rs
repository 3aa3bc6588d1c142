//! What the writer knows of each session's row without asking SQLite: its epoch, the next
//! `seq` of its `working_items` rows (working items and episodes), and that the row exists.
//!
//! Every turn needs all three: the epoch for its check against resets, the `seq` to number its
//! items, and a `sessions` row. Asked of SQLite they were three statements per turn, a third of a
//! turn's writing. The writer thread is the file's only writer (one store owns the file, see the
//! module docs of `embedded`), so what it last wrote is what the file holds: a session's cursor is
//! read from the file once, then kept current from each job's [`SessionChange`] as the job
//! succeeds. Rules that keep it exact:
//! - a job's change is noted only once the job has succeeded (its savepoint released, or in the
//!   fast path its work returned `Ok`), so later jobs of the same batch see it, as they would see
//!   its rows;
//! - when a batch does not commit, or is re-run job by job, everything is forgotten
//!   ([`SessionCursors::forget_all`]): what was noted may have been rolled back;
//! - a cursor is loaded inside the writer's transaction, so it includes the batch's own writes.
//!
//! Bounded by [`CAPACITY`] sessions; beyond that the map is emptied and refilled on demand (one
//! read per session), which keeps memory flat without an LRU's bookkeeping on every turn.

use std::collections::HashMap;

use deadpool_sqlite::rusqlite::{Connection, OptionalExtension};

use super::cache::SessionChange;
use super::{corrupt, sqlite_error};
use crate::memory::MemoryError;

/// Most sessions remembered. About 100 bytes each: a few MiB at most.
const CAPACITY: usize = 50_000;

/// One session's counters, as the file holds them (with the batch's writes so far).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cursor {
    /// The reset counter (0 for a session never reset, or never seen).
    pub epoch: u64,
    /// The `seq` the session's next working item gets: above every `seq` it has used.
    pub next_seq: i64,
    /// The `sessions` row exists, so registering the session is a no-op.
    pub registered: bool,
}

/// The writer's cursors, by session id.
#[derive(Debug, Default)]
pub(super) struct SessionCursors {
    known: HashMap<String, Cursor>,
}

impl SessionCursors {
    /// The session's cursor, read from the file the first time.
    pub(super) fn get(&mut self, conn: &Connection, session: &str) -> Result<Cursor, MemoryError> {
        if let Some(cursor) = self.known.get(session) {
            return Ok(*cursor);
        }
        let cursor = load(conn, session)?;
        if self.known.len() >= CAPACITY {
            self.known.clear();
        }
        self.known.insert(session.to_owned(), cursor);
        Ok(cursor)
    }

    /// Notes what a job that succeeded wrote. Every job that returns a change registered its
    /// session (turns and injects upsert the row, a reset bumps it).
    pub(super) fn note(&mut self, change: &SessionChange) {
        let Some(cursor) = self.known.get_mut(&change.session) else {
            // Not known: the next `get` reads it, this job's writes included.
            return;
        };
        cursor.registered = true;
        if change.reset {
            // A reset deletes every working item, so numbering starts again as the file's
            // `max(seq) + 1` would.
            cursor.epoch += 1;
            cursor.next_seq = 1;
        }
        if let Some(last) = change.last_seq() {
            cursor.next_seq = cursor.next_seq.max(last + 1);
        }
    }

    /// Drops everything: after a batch that did not commit, or before re-running one.
    pub(super) fn forget_all(&mut self) {
        self.known.clear();
    }
}

/// The session's epoch, or `None` when it has no `sessions` row (never written: epoch 0).
pub(super) fn read_epoch(conn: &Connection, session: &str) -> Result<Option<u64>, MemoryError> {
    let epoch: Option<i64> = conn
        .prepare_cached("SELECT epoch FROM sessions WHERE session_id = ?1")
        .and_then(|mut stmt| stmt.query_row([session], |row| row.get(0)).optional())
        .map_err(sqlite_error)?;
    epoch
        .map(|epoch| u64::try_from(epoch).map_err(|_| corrupt(format!("negative epoch {epoch}"))))
        .transpose()
}

fn load(conn: &Connection, session: &str) -> Result<Cursor, MemoryError> {
    let epoch = read_epoch(conn, session)?;
    let next_seq: i64 = conn
        .prepare_cached("SELECT coalesce(max(seq), 0) + 1 FROM working_items WHERE session_id = ?1")
        .and_then(|mut stmt| stmt.query_row([session], |row| row.get(0)))
        .map_err(sqlite_error)?;
    Ok(Cursor {
        epoch: epoch.unwrap_or(0),
        next_seq,
        registered: epoch.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{TurnRole, WorkingItem};

    fn change(session: &str, reset: bool, seqs: &[i64]) -> SessionChange {
        let item = WorkingItem::new(TurnRole::User, "hi", chrono::Utc::now());
        SessionChange {
            session: session.to_owned(),
            reset,
            items: seqs.iter().map(|&seq| (seq, item.clone())).collect(),
            ..SessionChange::default()
        }
    }

    fn known(epoch: u64, next_seq: i64, registered: bool) -> SessionCursors {
        let mut cursors = SessionCursors::default();
        cursors.known.insert(
            "s".to_owned(),
            Cursor {
                epoch,
                next_seq,
                registered,
            },
        );
        cursors
    }

    #[test]
    fn items_move_the_next_seq_past_the_highest_written() {
        let mut cursors = known(0, 5, false);
        cursors.note(&change("s", false, &[5, 6]));
        assert_eq!(
            cursors.known["s"],
            Cursor {
                epoch: 0,
                next_seq: 7,
                registered: true
            }
        );
    }

    #[test]
    fn a_reset_bumps_the_epoch_and_restarts_numbering() {
        let mut cursors = known(2, 40, true);
        cursors.note(&change("s", true, &[]));
        assert_eq!(
            cursors.known["s"],
            Cursor {
                epoch: 3,
                next_seq: 1,
                registered: true
            }
        );
    }

    #[test]
    fn a_session_not_known_stays_unknown_until_read() {
        let mut cursors = known(0, 1, true);
        cursors.note(&change("other", true, &[1]));
        assert!(!cursors.known.contains_key("other"));
        cursors.forget_all();
        assert!(cursors.known.is_empty());
    }
}
