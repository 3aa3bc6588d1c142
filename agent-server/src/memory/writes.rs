//! The rules of writing turns to long-term memory, in one place: what a batch of turn writes
//! (and injects) leaves, worked out without I/O. Every backend reads the stored facts a batch
//! touches ([`StoredKeyed`], [`StoredUnkeyed`]), hands them and the batch to [`FactWrites`], and
//! applies the [`Resolved`] writes it returns in whatever statements suit it; the embedded
//! session cache applies the same [`Resolved`] writes to its mirror.
//!
//! The rules, per turn and in this order (see [`TurnWrite`]):
//! 1. **retire**: the turn's retirements go first, so a fact it retires no longer decides
//!    anything below;
//! 2. **supersede by key**: a keyed fact replaces the current fact of its `(session, key)` unless
//!    that one was observed strictly later (ties go to the later write); the current facts are
//!    the stored ones updated by the batch's own writes in order. A fact the batch writes and
//!    then replaces is never written; it is reported as it stood after its own turn (not
//!    `current` when that same turn replaced it, `current` when a later turn did);
//! 3. **restate in place, or anew**: a restatement changes the stored unkeyed fact it names (of
//!    several restatements of one fact the last is applied, its text only when it differs from
//!    the stored one); when the session holds no such fact (never did, or the batch retired it
//!    before), the statement is stored as a new fact.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use chrono::{DateTime, Utc};
use protocol::control::FactSource;
use uuid::Uuid;

use crate::memory::{Fact, NewFact, Restatement, StoredFact, TurnWrite};

/// A stored keyed fact: the current one of its `(session, key)`.
pub(crate) struct StoredKeyed {
    pub session: String,
    pub key: String,
    pub id: Uuid,
    pub observed_at: DateTime<Utc>,
}

/// A stored unkeyed fact of kind `fact`: one a restatement may change in place.
pub(crate) struct StoredUnkeyed {
    pub session: String,
    pub id: Uuid,
    pub text: String,
    pub source_turn_ids: Vec<String>,
}

/// How a backend stores text and times; the resolver compares, and returns, values in that form,
/// so that what it decides is what a read of the store would show.
#[derive(Clone, Copy)]
pub(crate) struct StoredForm {
    pub text: fn(String) -> String,
    pub time: fn(DateTime<Utc>) -> DateTime<Utc>,
}

impl StoredForm {
    /// Text and times stored as given.
    pub(super) const EXACT: StoredForm = StoredForm {
        text: |text| text,
        time: |at| at,
    };
}

/// A stored fact's new values, as the last restatement of it in the batch sets them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FactUpdate {
    /// `None` when the text stays as stored (a backend then leaves its text index alone).
    pub text: Option<String>,
    pub observed_at: DateTime<Utc>,
    pub importance: f32,
    pub source: FactSource,
    /// The stored ids, then each restatement's new ones (provenance).
    pub source_turn_ids: Vec<String>,
}

/// What a batch writes, once resolved. A backend applies it in this order: `retire` and
/// `replaced` (deletes), `updates`, then `inserts`.
#[derive(Debug, Default)]
pub(crate) struct Resolved<'a> {
    /// `(session, id)` of the items to delete, as the turns named them (ids of no stored item of
    /// that session included: deleting them deletes nothing).
    pub retire: Vec<(&'a str, Uuid)>,
    /// `(session, id)` of stored keyed facts that an insert of the same key replaces.
    pub replaced: Vec<(&'a str, Uuid)>,
    /// Stored unkeyed facts changed in place.
    pub updates: Vec<(&'a str, Uuid, FactUpdate)>,
    /// Rows to insert, in write order.
    pub inserts: Vec<(&'a str, Fact)>,
}

/// The resolver: fed the stored facts the batch touches, then the batch's turns in order.
pub(crate) struct FactWrites<'a> {
    form: StoredForm,
    /// The current fact of each keyed `(session, key)` the batch touches.
    current: HashMap<(String, String), Current>,
    /// Rows to insert, in write order; `None` once replaced by a later row of the batch.
    rows: Vec<Option<(&'a str, Fact)>>,
    retire: Vec<(&'a str, Uuid)>,
    replaced: Vec<(&'a str, Uuid)>,
    /// The stored unkeyed facts that the batch's restatements name, while they exist, in the
    /// order first restated.
    restatable: HashMap<(String, Uuid), Restatable>,
    restated: Vec<(&'a str, Uuid)>,
}

struct Restatable {
    stored_text: String,
    stored_turn_ids: Vec<String>,
    update: Option<FactUpdate>,
}

struct Current {
    id: Uuid,
    observed_at: DateTime<Utc>,
    /// Its index in `rows` when the batch wrote it.
    row: Option<usize>,
}

impl<'a> FactWrites<'a> {
    /// Starts from the stored current facts of the keys the batch writes, and the stored facts
    /// its restatements name (both read under whatever keeps them from changing until the
    /// batch's writes are applied).
    pub(super) fn new(
        stored: Vec<StoredKeyed>,
        restatable: Vec<StoredUnkeyed>,
        form: StoredForm,
    ) -> Self {
        let mut writes = Self {
            form,
            current: HashMap::with_capacity(stored.len()),
            rows: Vec::new(),
            retire: Vec::new(),
            replaced: Vec::new(),
            restatable: HashMap::with_capacity(restatable.len()),
            restated: Vec::new(),
        };
        for fact in restatable {
            let entry = Restatable {
                stored_text: fact.text,
                stored_turn_ids: fact.source_turn_ids,
                update: None,
            };
            writes.restatable.insert((fact.session, fact.id), entry);
        }
        for fact in stored {
            let current = Current {
                id: fact.id,
                observed_at: fact.observed_at,
                row: None,
            };
            writes.current.insert((fact.session, fact.key), current);
        }
        writes
    }

    /// Adds one turn: its retirements, its facts, its restatements. Returns one [`StoredFact`]
    /// per fact, then one per restatement (the restated fact's id, or the new fact's).
    pub(super) fn turn(&mut self, session: &'a str, turn: &TurnWrite) -> Vec<StoredFact> {
        self.retire(session, &turn.retire);
        let mut stored = self.add(session, &turn.facts);
        stored.extend(self.restate(session, &turn.restate));
        stored
    }

    /// Adds facts written outside a turn (an inject), or a turn's facts; one [`StoredFact`] per
    /// input, in order.
    pub(super) fn add(&mut self, session: &'a str, facts: &[NewFact]) -> Vec<StoredFact> {
        let mut stored: Vec<StoredFact> = Vec::with_capacity(facts.len());
        // Rows of this call: one it replaces itself is reported not current, since `current`
        // describes the state after the call's turn.
        let first_row = self.rows.len();
        let mut stored_of_row: Vec<usize> = Vec::with_capacity(facts.len());
        for new in facts {
            let mut fact = Fact::from_new(new.clone());
            fact.text = (self.form.text)(fact.text);
            fact.key = fact.key.map(self.form.text);
            fact.observed_at = (self.form.time)(fact.observed_at);
            let mut current = true;
            if let Some(key) = &fact.key {
                let written = Current {
                    id: fact.id,
                    observed_at: fact.observed_at,
                    row: Some(self.rows.len()),
                };
                match self.current.entry((session.to_owned(), key.clone())) {
                    Entry::Occupied(existing) if existing.get().observed_at > fact.observed_at => {
                        current = false;
                    }
                    Entry::Occupied(mut existing) => {
                        let replaced = existing.insert(written);
                        match replaced.row {
                            Some(row) => {
                                self.rows[row] = None;
                                if let Some(own) = row.checked_sub(first_row) {
                                    stored[stored_of_row[own]].current = false;
                                }
                            }
                            None => self.replaced.push((session, replaced.id)),
                        }
                    }
                    Entry::Vacant(slot) => {
                        slot.insert(written);
                    }
                }
            }
            stored.push(StoredFact {
                id: fact.id,
                key: fact.key.clone(),
                current,
            });
            if current {
                stored_of_row.push(stored.len() - 1);
                self.rows.push(Some((session, fact)));
            }
        }
        stored
    }

    /// Retires long-term items of `session` (an id of another session retires nothing).
    fn retire(&mut self, session: &'a str, ids: &[Uuid]) {
        for id in ids {
            self.current
                .retain(|(s, _), current| !(*s == session && current.id == *id));
            self.restatable.remove(&(session.to_owned(), *id));
            self.retire.push((session, *id));
        }
    }

    /// Adds restatements, in order; one [`StoredFact`] each.
    fn restate(&mut self, session: &'a str, restatements: &[Restatement]) -> Vec<StoredFact> {
        let mut stored = Vec::with_capacity(restatements.len());
        for restated in restatements {
            let text = (self.form.text)(restated.text.clone());
            let observed_at = (self.form.time)(restated.observed_at);
            let Some(fact) = self.restatable.get_mut(&(session.to_owned(), restated.id)) else {
                let mut new = Fact::from_new(restated.as_new_fact());
                new.text = text;
                new.observed_at = observed_at;
                stored.push(StoredFact {
                    id: new.id,
                    key: None,
                    current: true,
                });
                self.rows.push(Some((session, new)));
                continue;
            };
            let mut turn_ids = match fact.update.take() {
                Some(earlier) => earlier.source_turn_ids,
                None => {
                    self.restated.push((session, restated.id));
                    fact.stored_turn_ids.clone()
                }
            };
            for id in &restated.source_turn_ids {
                if !turn_ids.contains(id) {
                    turn_ids.push(id.clone());
                }
            }
            fact.update = Some(FactUpdate {
                text: (text != fact.stored_text).then_some(text),
                observed_at,
                importance: restated.importance,
                source: restated.source,
                source_turn_ids: turn_ids,
            });
            stored.push(StoredFact {
                id: restated.id,
                key: None,
                current: true,
            });
        }
        stored
    }

    /// What the batch writes.
    pub(super) fn finish(mut self) -> Resolved<'a> {
        let updates = self
            .restated
            .iter()
            .filter_map(|&(session, id)| {
                let fact = self.restatable.remove(&(session.to_owned(), id))?;
                Some((session, id, fact.update?))
            })
            .collect();
        Resolved {
            retire: self.retire,
            replaced: self.replaced,
            updates,
            inserts: self.rows.into_iter().flatten().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::control::FactKind;

    fn at(minute: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_900_000_000, 0).unwrap() + chrono::Duration::minutes(minute)
    }

    fn keyed(key: &str, text: &str, minute: i64) -> NewFact {
        NewFact {
            embedding: None,
            source_turn_ids: Vec::new(),
            kind: FactKind::Fact,
            key: Some(key.to_owned()),
            text: text.to_owned(),
            data: None,
            observed_at: at(minute),
            importance: 0.5,
            source: FactSource::Extracted,
        }
    }

    fn stored(session: &str, key: &str, id: Uuid, minute: i64) -> StoredKeyed {
        StoredKeyed {
            session: session.to_owned(),
            key: key.to_owned(),
            id,
            observed_at: at(minute),
        }
    }

    fn writes<'a>(keyed: Vec<StoredKeyed>, unkeyed: Vec<StoredUnkeyed>) -> FactWrites<'a> {
        FactWrites::new(keyed, unkeyed, StoredForm::EXACT)
    }

    fn texts(resolved: &Resolved<'_>) -> Vec<(String, String)> {
        resolved
            .inserts
            .iter()
            .map(|(s, f)| ((*s).to_owned(), f.text.clone()))
            .collect()
    }

    #[test]
    fn a_batch_resolves_keys_as_writing_its_turns_in_order_would() {
        let car = Uuid::new_v4();
        let mut writes = writes(vec![stored("s1", "car", car, 10)], Vec::new());
        // Older than the stored fact: kept out.
        assert!(!writes.add("s1", &[keyed("car", "red", 5)])[0].current);
        // Newer: replaces it; then a tie: the later write replaces that one in turn.
        assert!(writes.add("s1", &[keyed("car", "blue", 12)])[0].current);
        assert!(writes.add("s1", &[keyed("car", "green", 12)])[0].current);
        // Compared with the batch's own current fact (green at 12), not the stored one.
        assert!(!writes.add("s1", &[keyed("car", "black", 11)])[0].current);
        // Retiring the replaced stored fact changes nothing for the key.
        writes.retire("s1", &[car]);
        // Within one call, the state after it: the first of two equal times is not current.
        let twice = writes.add("s1", &[keyed("car", "teal", 13), keyed("car", "navy", 13)]);
        assert_eq!((twice[0].current, twice[1].current), (false, true));
        writes.add("s1", &[keyed("car", "green", 14)]);
        // Another session's key is its own.
        assert!(writes.add("s2", &[keyed("car", "grey", 1)])[0].current);
        let resolved = writes.finish();
        assert_eq!(resolved.retire, [("s1", car)]);
        assert_eq!(
            resolved.replaced,
            [("s1", car)],
            "the stored fact blue replaced"
        );
        assert_eq!(
            texts(&resolved),
            [("s1".into(), "green".into()), ("s2".into(), "grey".into())]
        );
    }

    #[test]
    fn a_retired_fact_no_longer_keeps_an_older_one_out() {
        let pet = Uuid::new_v4();
        let mut writes_ = writes(vec![stored("s1", "pet", pet, 10)], Vec::new());
        writes_.retire("s1", &[pet]);
        assert!(writes_.add("s1", &[keyed("pet", "a cat", 5)])[0].current);
        assert!(
            writes_.finish().replaced.is_empty(),
            "retired, not replaced"
        );
        // Retiring an id of another session does not free this session's key.
        let other = Uuid::new_v4();
        let mut writes_ = writes(vec![stored("s1", "pet", other, 10)], Vec::new());
        writes_.retire("s2", &[other]);
        assert!(!writes_.add("s1", &[keyed("pet", "a dog", 5)])[0].current);
    }

    #[test]
    fn a_turn_retires_before_it_writes_and_restates() {
        let (pet, tea) = (Uuid::new_v4(), Uuid::new_v4());
        let mut writes = writes(
            vec![stored("s1", "pet", pet, 10)],
            vec![unkeyed("s1", tea, "I like tea.")],
        );
        let turn = TurnWrite {
            facts: vec![keyed("pet", "a cat", 5)],
            retire: vec![pet, tea],
            restate: vec![restatement(tea, "I like tea.", 6)],
            ..TurnWrite::default()
        };
        let stored = writes.turn("s1", &turn);
        assert!(
            stored[0].current,
            "the newer fact the turn retires keeps nothing out"
        );
        assert_ne!(
            stored[1].id, tea,
            "a fact the turn retires is restated anew"
        );
        let resolved = writes.finish();
        assert!(resolved.updates.is_empty() && resolved.replaced.is_empty());
        assert_eq!(
            texts(&resolved),
            [
                ("s1".into(), "a cat".into()),
                ("s1".into(), "I like tea.".into())
            ]
        );
    }

    fn restatement(id: Uuid, text: &str, minute: i64) -> Restatement {
        Restatement {
            source_turn_ids: Vec::new(),
            id,
            text: text.to_owned(),
            observed_at: at(minute),
            importance: 0.7,
            source: FactSource::Promoted,
        }
    }

    fn unkeyed(session: &str, id: Uuid, text: &str) -> StoredUnkeyed {
        StoredUnkeyed {
            session: session.to_owned(),
            id,
            text: text.to_owned(),
            source_turn_ids: vec!["D1:1".to_owned()],
        }
    }

    /// What the batch sends as updates: `(id, new text if it changes, minute)`, sorted by text.
    fn updates(resolved: &Resolved<'_>) -> Vec<(Uuid, Option<String>, DateTime<Utc>)> {
        let mut updates: Vec<_> = resolved
            .updates
            .iter()
            .map(|(_, id, update)| (*id, update.text.clone(), update.observed_at))
            .collect();
        updates.sort_by(|a, b| a.1.cmp(&b.1));
        updates
    }

    #[test]
    fn a_batch_resolves_restatements_as_writing_its_turns_in_order_would() {
        let (tea, bike, gone) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let stored_facts = || {
            vec![
                unkeyed("s1", tea, "I like tea."),
                unkeyed("s1", bike, "My bike is red."),
            ]
        };
        let mut writes_ = writes(Vec::new(), stored_facts());
        // Restated twice: the last one is sent. It brings back the stored text, so the text is
        // left alone even though the first restatement changed it.
        let first = writes_.restate("s1", &[restatement(tea, "Tea, I like.", 1)]);
        let second = writes_.restate("s1", &[restatement(tea, "I like tea.", 2)]);
        assert_eq!((first[0].id, second[0].id), (tea, tea));
        // Restated, then retired by a later turn: the DELETE takes it, nothing is stored anew.
        writes_.restate("s1", &[restatement(bike, "My bike is red!", 3)]);
        writes_.retire("s1", &[bike]);
        // Retired, then restated: stored anew under a new id.
        writes_.retire("s1", &[tea]);
        let anew = writes_.restate("s1", &[restatement(tea, "I love tea.", 4)]);
        assert_ne!(anew[0].id, tea);
        // Another session's id, and one that is not stored: stored anew too.
        let theirs = writes_.restate("s2", &[restatement(bike, "Bikes.", 5)]);
        let never = writes_.restate("s1", &[restatement(gone, "Never.", 6)]);
        assert!(theirs[0].id != bike && never[0].id != gone);
        let resolved = writes_.finish();
        assert!(
            updates(&resolved).is_empty(),
            "both restated facts were retired"
        );
        assert_eq!(resolved.retire, [("s1", bike), ("s1", tea)]);
        assert_eq!(
            texts(&resolved),
            [
                ("s1".into(), "I love tea.".into()),
                ("s2".into(), "Bikes.".into()),
                ("s1".into(), "Never.".into())
            ]
        );

        // Without the retirements: one update each, the text only where it changes.
        let mut writes_ = writes(Vec::new(), stored_facts());
        writes_.restate("s1", &[restatement(tea, "Tea, I like.", 1)]);
        writes_.restate("s1", &[restatement(tea, "I like tea.", 2)]);
        writes_.restate("s1", &[restatement(bike, "My bike is red.\n", 3)]);
        let resolved = writes_.finish();
        assert_eq!(
            updates(&resolved),
            [
                (tea, None, at(2)),
                (bike, Some("My bike is red.\n".into()), at(3))
            ]
        );
        assert!(texts(&resolved).is_empty());
    }

    #[test]
    fn a_restatement_adds_its_turn_ids_to_the_facts_once() {
        let tea = Uuid::new_v4();
        let mut writes = writes(Vec::new(), vec![unkeyed("s1", tea, "I like tea.")]);
        let said = |turn: &str| Restatement {
            source_turn_ids: vec![turn.to_owned()],
            ..restatement(tea, "I like tea.", 1)
        };
        writes.restate("s1", &[said("D2:4")]);
        writes.restate("s1", &[said("D1:1"), said("D3:2")]);
        let resolved = writes.finish();
        assert_eq!(
            resolved.updates[0].2.source_turn_ids,
            ["D1:1", "D2:4", "D3:2"]
        );
    }

    #[test]
    fn values_are_compared_and_returned_in_the_stored_form() {
        // Text in capitals, times to the whole hour (minutes 3 and 4 fall in one hour).
        let form = StoredForm {
            text: |text| text.to_uppercase(),
            time: |at| DateTime::from_timestamp(at.timestamp() / 3600 * 3600, 0).unwrap(),
        };
        let tea = Uuid::new_v4();
        let mut writes = FactWrites::new(Vec::new(), vec![unkeyed("s1", tea, "I LIKE TEA.")], form);
        // Stored, minute 3 ties with minute 4, and the later write wins the tie.
        assert!(writes.add("s1", &[keyed("car", "red", 4)])[0].current);
        assert!(writes.add("s1", &[keyed("car", "blue", 3)])[0].current);
        writes.restate("s1", &[restatement(tea, "I like tea.", 1)]);
        let resolved = writes.finish();
        assert_eq!(resolved.updates[0].2.text, None, "same text once stored");
        assert_eq!(texts(&resolved), [("s1".into(), "BLUE".into())]);
        assert_eq!(resolved.inserts[0].1.observed_at, (form.time)(at(3)));
    }
}
