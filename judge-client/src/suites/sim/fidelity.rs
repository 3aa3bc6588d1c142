//! Did the simulated user stay the user? Deterministic checks of every simulated user turn,
//! so that a conversation the judge's own simulator spoiled (a language model that repeats
//! itself, answers like an assistant, or calls the agent by the persona's name) is flagged and
//! kept out of the agent's scores instead of counted as the agent's failure.
//!
//! The rules, each with its threshold, in the order they are checked:
//!
//! | rule | a simulated user turn breaks it when |
//! |---|---|
//! | `empty` | it has no words (a turn that only carries the stop token is a farewell, not empty) |
//! | `repeats_earlier_turn` | it equals an earlier user turn of the conversation once normalised, or shares at least [`NEAR_REPEAT`] of its distinct words with one (both of at least [`NEAR_REPEAT_MIN_WORDS`] words); asking a goal's question again is what users do and is allowed |
//! | `talks_like_assistant` | it uses a phrase of an assistant serving a user ([`ASSISTANT_PHRASES`]) |
//! | `claims_agent_role` | it says it is the assistant or the agent ([`ROLE_CLAIMS`]) |
//! | `addresses_agent_as_persona` | it calls the agent by the persona's own first name ("Thanks, Maya"), which the persona would only use of itself ("I'm Maya") |
//! | `discloses_unasked` | it says a persona fact word for word before the agent asked about it (a question naming one of the fact's words) or showed it lacks it |
//! | `ignores_stop_rule` | the persona leaves once its goals are reached, and the conversation went on for more than one round after the last goal without the stop token |
//!
//! Only turns the simulator wrote are checked: fallback turns and the judge's own error markers
//! are the judge's, already counted apart.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::persona::Persona;
use super::runner::{Conversation, UserSource};
use super::simulator::admits_not_knowing;
use crate::text::normalize;

/// Share of distinct words two turns must share to count as a near repeat.
pub const NEAR_REPEAT: f64 = 0.8;
/// Turns shorter than this (in distinct words) are compared only for exact repeats.
pub const NEAR_REPEAT_MIN_WORDS: usize = 4;

/// What an assistant says to a user, and a user to an assistant almost never (normalised).
pub const ASSISTANT_PHRASES: &[&str] = &[
    "how can i help",
    "how may i help",
    "how can i assist",
    "how may i assist",
    "as an ai",
    "i am an ai",
    "im an ai",
    "language model",
    "is there anything else i can",
    "let me know if you need anything else",
    "feel free to ask",
    "i would be happy to help you",
    "id be happy to help you",
    "happy to assist",
];

/// A user saying it is the other side of the conversation (normalised).
pub const ROLE_CLAIMS: &[&str] = &[
    "i am your assistant",
    "im your assistant",
    "i am the assistant",
    "im the assistant",
    "as your assistant",
    "i am the agent",
    "im the agent",
    "i am here to help you",
    "im here to help you",
];

/// A rule the simulated user broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    Empty,
    RepeatsEarlierTurn,
    TalksLikeAssistant,
    ClaimsAgentRole,
    AddressesAgentAsPersona,
    DisclosesUnasked,
    IgnoresStopRule,
}

/// One broken rule in one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breach {
    /// 0-based round.
    pub round: usize,
    pub rule: Rule,
    pub detail: String,
}

/// The verdict on a conversation's simulated user.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Fidelity {
    /// Whether the simulator held its role in every turn.
    pub held: bool,
    /// Every rule broken, in round order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breaches: Vec<Breach>,
}

impl Fidelity {
    /// The distinct rules broken, for summaries.
    pub fn rules(&self) -> BTreeSet<Rule> {
        self.breaches.iter().map(|b| b.rule).collect()
    }
}

fn contains_phrase(normalized: &str, phrase: &str) -> bool {
    format!(" {normalized} ").contains(&format!(" {phrase} "))
}

fn words(normalized: &str) -> BTreeSet<&str> {
    normalized.split(' ').filter(|w| !w.is_empty()).collect()
}

/// Whether `a` and `b` share at least [`NEAR_REPEAT`] of their distinct words (Jaccard).
fn near_repeat(a: &str, b: &str) -> bool {
    let (a, b) = (words(a), words(b));
    if a.len() < NEAR_REPEAT_MIN_WORDS || b.len() < NEAR_REPEAT_MIN_WORDS {
        return false;
    }
    let shared = a.intersection(&b).count() as f64;
    shared / a.union(&b).count() as f64 >= NEAR_REPEAT
}

/// What matches a turn that calls someone by `name`: the name in the vocative, after a
/// greeting or thanks ("Thanks, Maya", "hi maya"), opening the turn before a comma ("Maya, can
/// you ..."), or closing it after one ("..., Maya."). Elsewhere ("I'm Maya", "my shop is Amara
/// Threads") the persona speaks of itself.
fn vocative(name: &str) -> regex::Regex {
    let name = regex::escape(name);
    regex::Regex::new(&format!(
        r"(?i)(?:^|[.!?]\s+)(?:(?:hi|hello|hey|thanks|thank you|dear|ok|okay|well|yes|no|sorry|great|cheers|bye)[\s,]+{name}\b|{name}\s*,)|,\s*{name}\s*[.!?]*\s*$"
    ))
    .expect("the vocative pattern is valid")
}

/// Checks every simulated user turn of `conversation` against the rules above.
/// `turns_to_resolution` is the 1-based round in which the last goal was reached, if it was.
pub fn check(
    persona: &Persona,
    conversation: &Conversation,
    stop_token: &str,
    turns_to_resolution: Option<usize>,
) -> Fidelity {
    let mut breaches = Vec::new();
    let first_name = persona
        .name
        .split_whitespace()
        .next()
        .map(normalize)
        .unwrap_or_default();
    let addressed = (!first_name.is_empty()).then(|| vocative(&first_name));
    let goal_asks: BTreeSet<String> = persona.goals.iter().map(|g| normalize(&g.ask)).collect();
    let mut earlier: Vec<String> = Vec::new();
    let mut previous_reply: Option<&str> = None;
    for round in &conversation.rounds {
        let text = normalize(&round.user.replace(stop_token, " "));
        let mut breach = |rule: Rule, detail: String| {
            breaches.push(Breach {
                round: round.index,
                rule,
                detail,
            })
        };
        if round.user_source == UserSource::Simulator && !round.user.starts_with("[judge_error]") {
            let farewell = round.user.contains(stop_token);
            if text.is_empty() && !farewell {
                breach(Rule::Empty, "the turn has no words".to_owned());
            }
            if !text.is_empty() && !goal_asks.contains(&text) {
                if let Some(same) = earlier.iter().position(|e| *e == text) {
                    breach(
                        Rule::RepeatsEarlierTurn,
                        format!("the same as the user turn of round {same}"),
                    );
                } else if let Some(near) = earlier.iter().position(|e| near_repeat(e, &text)) {
                    breach(
                        Rule::RepeatsEarlierTurn,
                        format!("nearly the same as the user turn of round {near}"),
                    );
                }
            }
            if let Some(p) = ASSISTANT_PHRASES.iter().find(|p| contains_phrase(&text, p)) {
                breach(Rule::TalksLikeAssistant, format!("says {p:?}"));
            }
            if let Some(p) = ROLE_CLAIMS.iter().find(|p| contains_phrase(&text, p)) {
                breach(Rule::ClaimsAgentRole, format!("says {p:?}"));
            }
            if addressed.as_ref().is_some_and(|v| v.is_match(&round.user)) {
                breach(
                    Rule::AddressesAgentAsPersona,
                    format!("calls the agent {:?}, the persona's own name", persona.name),
                );
            }
            for fact in &persona.facts {
                let said = normalize(&fact.text);
                if said.is_empty() || !contains_phrase(&text, &said) {
                    continue;
                }
                let asked = previous_reply.is_some_and(|reply| {
                    let reply_normalized = normalize(reply);
                    admits_not_knowing(reply)
                        || fact
                            .about
                            .iter()
                            .any(|w| contains_phrase(&reply_normalized, &normalize(w)))
                });
                if !asked {
                    breach(
                        Rule::DisclosesUnasked,
                        format!("says fact {:?} before the agent asked for it", fact.id),
                    );
                }
            }
        }
        earlier.push(text);
        previous_reply = round.agent.as_deref();
    }
    if persona.stop.on_goals_reached
        && let Some(resolved) = turns_to_resolution
    {
        let after = conversation.rounds.len().saturating_sub(resolved);
        let left = conversation
            .rounds
            .iter()
            .skip(resolved)
            .any(|r| r.user.contains(stop_token));
        if after > 1 && !left {
            breaches.push(Breach {
                round: conversation.rounds.len() - 1,
                rule: Rule::IgnoresStopRule,
                detail: format!(
                    "every goal was reached in round {resolved}, the conversation went on {after} rounds"
                ),
            });
        }
    }
    Fidelity {
        held: breaches.is_empty(),
        breaches,
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;
    use crate::suites::sim::persona::shipped;
    use crate::suites::sim::runner::Round;

    const STOP: &str = "[END]";

    fn maya() -> Persona {
        shipped()
            .unwrap()
            .into_iter()
            .find(|p| p.id == "maya")
            .expect("the shipped panel has maya")
    }

    /// A conversation of simulated user turns, each answered by `reply`.
    fn conversation(turns: &[&str], reply: &str) -> Conversation {
        Conversation {
            number: 1,
            persona_id: "maya".into(),
            trial: 1,
            session_id: "s".into(),
            simulator: "llm".into(),
            injected: None,
            max_turns: 15,
            stop_reason: "max_turns".into(),
            rounds: turns
                .iter()
                .enumerate()
                .map(|(index, user)| Round {
                    index,
                    at: Utc::now(),
                    user: (*user).to_owned(),
                    user_source: UserSource::Simulator,
                    fallback: None,
                    sent: true,
                    agent: Some(reply.to_owned()),
                    agent_failure: None,
                    timing: None,
                })
                .collect(),
        }
    }

    fn rules(turns: &[&str], reply: &str) -> BTreeSet<Rule> {
        check(&maya(), &conversation(turns, reply), STOP, None).rules()
    }

    #[test]
    fn a_user_who_stays_a_user_holds() {
        let persona = maya();
        let ask = persona.goals[0].ask.clone();
        // Re-asking a goal question is allowed; chatter that differs is fine.
        let fidelity = check(
            &persona,
            &conversation(
                &[
                    "Hi! I am Maya and I am planning a trip.",
                    &ask,
                    "I love wandering around food markets when I travel.",
                    &ask,
                ],
                "Sure.",
            ),
            STOP,
            None,
        );
        assert!(fidelity.held, "{fidelity:?}");
    }

    #[test]
    fn each_rule_is_caught_by_a_scripted_bad_simulator() {
        let cases: [(&[&str], Rule); 6] = [
            (&["Hello there.", "   "], Rule::Empty),
            (
                &[
                    "I would like to plan a quiet trip to Kyoto.",
                    "I would like to plan a quiet trip to Kyoto.",
                ],
                Rule::RepeatsEarlierTurn,
            ),
            (
                &[
                    "I would really like to plan a quiet trip to Kyoto soon.",
                    "I would really like to plan a quiet trip to Kyoto.",
                ],
                Rule::RepeatsEarlierTurn,
            ),
            (
                &["Great question! How can I help you with your trip today?"],
                Rule::TalksLikeAssistant,
            ),
            (
                &["Don't worry, I am your assistant."],
                Rule::ClaimsAgentRole,
            ),
            (
                &["Thanks, Maya, that helps."],
                Rule::AddressesAgentAsPersona,
            ),
        ];
        for (turns, rule) in cases {
            let found = rules(turns, "Sure.");
            assert!(found.contains(&rule), "{turns:?}: {found:?}");
            assert_eq!(
                found.len(),
                1,
                "{turns:?}: only {rule:?} expected, got {found:?}"
            );
        }
    }

    #[test]
    fn a_fact_said_before_it_was_asked_for_breaks_the_disclosure_rule() {
        let persona = maya();
        let fact = persona.facts[0].clone();
        let unasked = rules(&["Hello.", &fact.text], "Nice to meet you.");
        assert_eq!(unasked, BTreeSet::from([Rule::DisclosesUnasked]));
        // Asked for (a question naming one of its words), or the agent showed it lacks it: fine.
        let question = format!("What is your {}?", fact.about[0]);
        assert!(rules(&["Hello.", &fact.text], &question).is_empty());
        assert!(rules(&["Hello.", &fact.text], "I don't know that, sorry.").is_empty());
    }

    #[test]
    fn going_on_after_every_goal_is_reached_breaks_the_stop_rule() {
        let mut persona = maya();
        persona.stop.on_goals_reached = true;
        let c = conversation(
            &[
                "One.",
                "Two things.",
                "Three more words.",
                "Four of them here.",
            ],
            "Ok.",
        );
        let fidelity = check(&persona, &c, STOP, Some(1));
        assert_eq!(fidelity.rules(), BTreeSet::from([Rule::IgnoresStopRule]));
        // Leaving in the round after the last goal keeps the rule.
        let c = conversation(&["One.", "Bye! [END]"], "Ok.");
        assert!(check(&persona, &c, STOP, Some(1)).held);
    }

    #[test]
    fn the_agent_named_by_the_persona_is_only_a_breach_when_addressed() {
        let addresses = |text: &str, name: &str| vocative(name).is_match(text);
        assert!(addresses("Thanks, Maya, that helps.", "maya"));
        assert!(addresses("hi maya", "maya"));
        assert!(addresses("Maya, can you book it?", "maya"));
        assert!(addresses("That sounds good, Maya!", "maya"));
        assert!(!addresses("Hi, I'm Maya and I need help.", "maya"));
        assert!(!addresses("My name is Maya.", "maya"));
        assert!(!addresses("My shop name is Amara Threads.", "amara"));
        assert!(!addresses("Mayan ruins, maybe.", "maya"));
    }
}
