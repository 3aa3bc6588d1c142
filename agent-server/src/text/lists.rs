//! Named lists ("my shopping list"): edits from the extractor applied to the list's current state,
//! which lives in long-term memory as one fact keyed `list:<name>`, superseded on every change.

use chrono::{DateTime, Utc};
use protocol::control::{FactKind, FactSource};
use serde::{Deserialize, Serialize};

use super::extract::{ListEdit, ListOp};
use crate::memory::{Fact, NewFact};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ListState {
    pub items: Vec<ListItem>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ListItem {
    pub name: String,
    pub quantity: u32,
}

/// The key a list is stored under.
pub(crate) fn list_key(list: &str) -> String {
    format!("list:{list}")
}

/// Singular form for matching: "apples" → "apple", "tomatoes" → "tomato", "eggs" → "egg".
fn singular(word: &str) -> &str {
    word.strip_suffix("oes")
        .map(|_| &word[..word.len() - 2])
        .or_else(|| word.strip_suffix('s'))
        .unwrap_or(word)
}

/// "apples" and "apple", "tomatoes" and "tomato" are the same item.
fn same_item(a: &str, b: &str) -> bool {
    a == b || singular(a) == singular(b)
}

impl ListState {
    /// The state stored in a list fact, if `fact` is one.
    pub(crate) fn from_fact(fact: &Fact) -> Option<Self> {
        fact.data
            .as_ref()
            .and_then(|d| serde_json::from_value(d.clone()).ok())
    }

    pub(crate) fn apply(&mut self, edit: &ListEdit) {
        let existing = self
            .items
            .iter()
            .position(|i| same_item(&i.name, &edit.item));
        match (edit.op, existing) {
            (ListOp::Add, Some(i)) => {
                let item = &mut self.items[i];
                item.quantity += edit.quantity.unwrap_or(1);
                // Say "3 eggs", not "3 egg", once there is more than one.
                if item.quantity > 1 && edit.item.len() > item.name.len() {
                    item.name = edit.item.clone();
                }
            }
            (ListOp::Add, None) => self.items.push(ListItem {
                name: edit.item.clone(),
                quantity: edit.quantity.unwrap_or(1),
            }),
            (ListOp::Remove, Some(i)) => match edit.quantity {
                Some(n) if n < self.items[i].quantity => self.items[i].quantity -= n,
                _ => {
                    self.items.remove(i);
                }
            },
            (ListOp::Remove, None) => {}
        }
    }

    /// "My shopping list: 2 apples, 1 bread." — what recall searches and what is said back.
    pub(crate) fn describe(&self, list: &str) -> String {
        if self.items.is_empty() {
            return format!("My {list} list is empty.");
        }
        let items: Vec<String> = self
            .items
            .iter()
            .map(|i| format!("{} {}", i.quantity, i.name))
            .collect();
        format!("My {list} list: {}.", items.join(", "))
    }
}

/// Applies a turn's edits to the current lists (found among `known` facts) and returns the new
/// list facts to store, one per list touched.
pub(crate) fn apply_edits(edits: &[ListEdit], known: &[&Fact], now: DateTime<Utc>) -> Vec<NewFact> {
    let mut touched: Vec<(String, ListState)> = Vec::new();
    for edit in edits {
        let position = touched.iter().position(|(name, _)| *name == edit.list);
        let index = position.unwrap_or_else(|| {
            let key = list_key(&edit.list);
            let current = known
                .iter()
                .find(|f| f.key.as_deref() == Some(key.as_str()))
                .and_then(|f| ListState::from_fact(f))
                .unwrap_or_default();
            touched.push((edit.list.clone(), current));
            touched.len() - 1
        });
        touched[index].1.apply(edit);
    }
    touched
        .into_iter()
        .map(|(list, state)| NewFact {
            embedding: None,
            source_turn_ids: Vec::new(),
            kind: FactKind::Fact,
            key: Some(list_key(&list)),
            text: state.describe(&list),
            data: Some(serde_json::to_value(&state).expect("list state serialises")),
            observed_at: now,
            importance: 0.7,
            source: FactSource::Extracted,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(op: ListOp, item: &str, quantity: Option<u32>) -> ListEdit {
        ListEdit {
            list: "shopping".into(),
            op,
            item: item.into(),
            quantity,
        }
    }

    #[test]
    fn adds_accumulate_and_removes_decrement_or_drop() {
        let now = Utc::now();
        let facts = apply_edits(
            &[
                edit(ListOp::Add, "apples", Some(2)),
                edit(ListOp::Add, "milk", None),
                edit(ListOp::Add, "apple", Some(3)),
                edit(ListOp::Remove, "apples", Some(1)),
                edit(ListOp::Remove, "bread", None),
                edit(ListOp::Add, "tomato", Some(1)),
                edit(ListOp::Add, "tomatoes", Some(2)),
            ],
            &[],
            now,
        );
        assert_eq!(facts.len(), 1);
        assert_eq!(facts[0].key.as_deref(), Some("list:shopping"));
        assert_eq!(
            facts[0].text,
            "My shopping list: 4 apples, 1 milk, 3 tomatoes."
        );

        let stored = Fact::from_new(facts[0].clone());
        let facts = apply_edits(
            &[
                edit(ListOp::Remove, "milk", None),
                edit(ListOp::Remove, "tomatoes", None),
            ],
            &[&stored],
            now,
        );
        assert_eq!(facts[0].text, "My shopping list: 4 apples.");
        let stored = Fact::from_new(facts[0].clone());
        let facts = apply_edits(&[edit(ListOp::Remove, "apples", None)], &[&stored], now);
        assert_eq!(facts[0].text, "My shopping list is empty.");
    }
}
