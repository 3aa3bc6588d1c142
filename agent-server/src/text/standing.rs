//! Standing items: rules that fire when their trigger is said, and reminders that fall due at a
//! session time or after a number of replies. Evaluated on every turn, whatever the query.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::language::contains_phrase;
use crate::memory::{Fact, NewFact};
use protocol::control::FactKind;

/// What the standing items ask of this turn's reply, and how they change.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Agenda {
    /// Things the reply must say, in order: rule replies first, then due reminders.
    pub must_say: Vec<Obligation>,
    /// Standing items that are used up (reminders that fired, counters replaced).
    pub retire: Vec<Uuid>,
    /// Replacements for counted reminders that have not fired yet.
    pub renew: Vec<NewFact>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Obligation {
    /// A rule fired: reply with exactly this.
    RuleReply(String),
    /// A timed reminder fell due.
    Reminder(String),
    /// A counted "say X" reached its reply.
    Say(String),
}

impl Obligation {
    pub fn text(&self) -> &str {
        match self {
            Obligation::RuleReply(t) | Obligation::Reminder(t) | Obligation::Say(t) => t,
        }
    }
}

fn data_str<'a>(fact: &'a Fact, field: &str) -> Option<&'a str> {
    fact.data.as_ref()?.get(field)?.as_str()
}

/// Evaluates `standing` for a turn saying `user_text` at `now`. Rules whose keys are in
/// `defined_now` were (re)stated by this very turn and do not fire on it.
pub(crate) fn evaluate(
    standing: &[Fact],
    user_text: &str,
    now: DateTime<Utc>,
    defined_now: &[String],
) -> Agenda {
    let mut agenda = Agenda::default();
    for fact in standing {
        match fact.kind {
            FactKind::Rule => {
                let restated = fact.key.as_ref().is_some_and(|k| defined_now.contains(k));
                if let (Some(trigger), Some(reply), false) =
                    (data_str(fact, "trigger"), data_str(fact, "reply"), restated)
                    && contains_phrase(user_text, trigger)
                {
                    agenda
                        .must_say
                        .push(Obligation::RuleReply(reply.to_owned()));
                }
            }
            FactKind::Reminder => reminder(fact, now, &mut agenda),
            FactKind::Fact | FactKind::Episode => {}
        }
    }
    // Rule replies lead; the sort is stable, so each group keeps the standing order.
    agenda
        .must_say
        .sort_by_key(|o| !matches!(o, Obligation::RuleReply(_)));
    agenda
}

fn reminder(fact: &Fact, now: DateTime<Utc>, agenda: &mut Agenda) {
    let Some(message) = data_str(fact, "message") else {
        return;
    };
    let data = fact.data.as_ref().expect("checked by data_str");
    if let Some(due) = data_str(fact, "due_at").and_then(|d| DateTime::parse_from_rfc3339(d).ok()) {
        if now >= due {
            agenda
                .must_say
                .push(Obligation::Reminder(message.to_owned()));
            agenda.retire.push(fact.id);
        }
    } else if let Some(left) = data.get("replies_left").and_then(|v| v.as_u64()) {
        agenda.retire.push(fact.id);
        if left <= 1 {
            agenda.must_say.push(Obligation::Say(message.to_owned()));
        } else {
            let mut data = data.clone();
            data["replies_left"] = (left - 1).into();
            agenda.renew.push(NewFact {
                embedding: None,
                source_turn_ids: Vec::new(),
                kind: fact.kind,
                key: fact.key.clone(),
                text: fact.text.clone(),
                data: Some(data),
                observed_at: fact.observed_at,
                importance: fact.importance,
                source: fact.source,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::control::FactSource;
    use serde_json::json;

    fn standing(kind: FactKind, key: Option<&str>, data: serde_json::Value) -> Fact {
        Fact::from_new(NewFact {
            embedding: None,
            source_turn_ids: Vec::new(),
            kind,
            key: key.map(str::to_owned),
            text: String::new(),
            data: Some(data),
            observed_at: now(),
            importance: 0.9,
            source: FactSource::Extracted,
        })
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-03-01T09:00:00Z")
            .unwrap()
            .to_utc()
    }

    #[test]
    fn rules_fire_on_their_trigger_only() {
        let rule = standing(
            FactKind::Rule,
            Some("rule:banana"),
            json!({"trigger": "banana", "reply": "mango"}),
        );
        let fired = evaluate(
            std::slice::from_ref(&rule),
            "I ate a banana today",
            now(),
            &[],
        );
        assert_eq!(fired.must_say, [Obligation::RuleReply("mango".into())]);
        assert!(fired.retire.is_empty(), "rules are standing, not used up");
        assert!(
            evaluate(std::slice::from_ref(&rule), "I like apples", now(), &[])
                .must_say
                .is_empty()
        );
        assert!(
            evaluate(std::slice::from_ref(&rule), "bananas!", now(), &[])
                .must_say
                .is_empty()
        );
        let restated = evaluate(
            &[rule],
            "Whenever I say banana, reply mango",
            now(),
            &["rule:banana".into()],
        );
        assert!(restated.must_say.is_empty());
    }

    #[test]
    fn timed_reminders_fire_once_due() {
        let r = standing(
            FactKind::Reminder,
            None,
            json!({"message": "call mum", "due_at": "2026-03-01T11:00:00Z"}),
        );
        assert!(
            evaluate(std::slice::from_ref(&r), "hi", now(), &[])
                .must_say
                .is_empty()
        );
        let later = now() + chrono::Duration::hours(3);
        let fired = evaluate(std::slice::from_ref(&r), "hi", later, &[]);
        assert_eq!(fired.must_say, [Obligation::Reminder("call mum".into())]);
        assert_eq!(fired.retire, [r.id]);
    }

    #[test]
    fn counted_reminders_count_down_then_fire() {
        let r = standing(
            FactKind::Reminder,
            None,
            json!({"message": "pineapple", "replies_left": 2}),
        );
        let first = evaluate(std::slice::from_ref(&r), "hi", now(), &[]);
        assert!(first.must_say.is_empty());
        assert_eq!(first.retire, [r.id]);
        assert_eq!(first.renew[0].data.as_ref().unwrap()["replies_left"], 1);
        let next = Fact::from_new(first.renew[0].clone());
        let second = evaluate(&[next], "hello", now(), &[]);
        assert_eq!(second.must_say, [Obligation::Say("pineapple".into())]);
        assert!(second.renew.is_empty());
    }
}
