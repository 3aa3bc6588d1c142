//! The scripted user: deterministic turns with simple branching on the agent's reply.
//!
//! Each round it picks, in order of priority:
//! 1. leave (stop token) when the persona's stop conditions hold;
//! 2. reveal a fact the agent asked for (a question naming one of the fact's `about` words), or
//!    the fact behind a goal question the agent could not answer;
//! 3. on even rounds, ask the next unreached goal's question (at most [`MAX_ASKS`] times);
//! 4. otherwise chatter, in an order shuffled by the seed.
//!
//! Facts are never volunteered: they are said only in step 2, as the persona defines.

use std::collections::BTreeSet;

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use super::super::canonical::derived_seed;
use super::super::persona::Persona;
use super::{UserTurn, admits_not_knowing};

/// Questions per goal before the persona stops asking it.
pub const MAX_ASKS: u32 = 3;

pub struct ScriptedUser {
    persona: Persona,
    stop_token: String,
    chatter: Vec<String>,
    next_chatter: usize,
    round: usize,
    revealed: BTreeSet<String>,
    reached: BTreeSet<String>,
    asks: Vec<u32>,
    /// The goal asked in the previous round, whose reply is judged now.
    asked: Option<usize>,
    /// Fact to reveal next (the agent showed it lacks it).
    pending_reveal: Option<String>,
    /// Unhelpful replies to goal questions in a row.
    unhelpful: u32,
}

impl ScriptedUser {
    /// `label` distinguishes conversations of the same persona (trials), for the shuffle.
    pub fn new(persona: Persona, seed: u64, label: &str, stop_token: &str) -> Self {
        let mut chatter = persona.chatter.clone();
        let mut rng = ChaCha8Rng::from_seed(derived_seed(seed, &format!("chatter/{label}")));
        chatter.shuffle(&mut rng);
        let goals = persona.goals.len();
        Self {
            persona,
            stop_token: stop_token.to_owned(),
            chatter,
            next_chatter: 0,
            round: 0,
            revealed: BTreeSet::new(),
            reached: BTreeSet::new(),
            asks: vec![0; goals],
            asked: None,
            pending_reveal: None,
            unhelpful: 0,
        }
    }

    pub fn persona(&self) -> &Persona {
        &self.persona
    }

    /// Goals the simulator saw reached (its own view; the evaluator decides independently).
    pub fn reached(&self) -> &BTreeSet<String> {
        &self.reached
    }

    /// The next message, reacting to `reply` (the agent's answer to the previous message).
    pub fn next(&mut self, reply: Option<&str>) -> UserTurn {
        let round = self.round;
        self.round += 1;
        if let Some(reply) = reply {
            self.observe(reply);
        }
        if round == 0 {
            return UserTurn::say(self.persona.opening.clone());
        }
        let stop = self.persona.stop.clone();
        if stop.on_goals_reached && self.reached.len() == self.persona.goals.len() {
            return UserTurn::leave(&stop.farewell, &self.stop_token);
        }
        if self.unhelpful >= stop.patience {
            return UserTurn::leave(&stop.give_up, &self.stop_token);
        }
        if let Some(fact) = reply.and_then(|r| self.fact_asked_for(r)) {
            return self.reveal(&fact);
        }
        if let Some(fact) = self.pending_reveal.take() {
            return self.reveal(&fact);
        }
        if round.is_multiple_of(2)
            && let Some(turn) = self.ask_next_goal()
        {
            return turn;
        }
        if let Some(line) = self.chatter.get(self.next_chatter).cloned() {
            self.next_chatter += 1;
            return UserTurn::say(line);
        }
        if let Some(turn) = self.ask_next_goal() {
            return turn;
        }
        if self.reached.len() == self.persona.goals.len() {
            UserTurn::leave(&stop.farewell, &self.stop_token)
        } else {
            UserTurn::leave(&stop.give_up, &self.stop_token)
        }
    }

    fn observe(&mut self, reply: &str) {
        let Some(goal_index) = self.asked.take() else {
            return;
        };
        let goal = &self.persona.goals[goal_index];
        let lower = reply.to_lowercase();
        if goal
            .expect
            .iter()
            .all(|e| lower.contains(&e.to_lowercase()))
        {
            self.reached.insert(goal.id.clone());
            self.unhelpful = 0;
            return;
        }
        self.unhelpful += 1;
        if !self.revealed.contains(&goal.needs)
            && (admits_not_knowing(reply) || reply.contains('?'))
        {
            self.pending_reveal = Some(goal.needs.clone());
        }
    }

    /// An unrevealed fact the reply asks for: a question naming one of its `about` words.
    fn fact_asked_for(&self, reply: &str) -> Option<String> {
        if !reply.contains('?') {
            return None;
        }
        let words: BTreeSet<String> = reply
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        self.persona
            .facts
            .iter()
            .filter(|f| !self.revealed.contains(&f.id))
            .find(|f| f.about.iter().any(|a| words.contains(&a.to_lowercase())))
            .map(|f| f.id.clone())
    }

    fn reveal(&mut self, fact_id: &str) -> UserTurn {
        self.revealed.insert(fact_id.to_owned());
        if self.pending_reveal.as_deref() == Some(fact_id) {
            self.pending_reveal = None;
        }
        let text = self
            .persona
            .fact(fact_id)
            .map(|f| f.text.clone())
            .unwrap_or_default();
        UserTurn::say(text)
    }

    fn ask_next_goal(&mut self) -> Option<UserTurn> {
        let index = self
            .persona
            .goals
            .iter()
            .enumerate()
            .position(|(i, g)| !self.reached.contains(&g.id) && self.asks[i] < MAX_ASKS)?;
        self.asks[index] += 1;
        self.asked = Some(index);
        Some(UserTurn::say(self.persona.goals[index].ask.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::persona::shipped;
    use super::*;

    fn maya() -> Persona {
        shipped()
            .unwrap()
            .into_iter()
            .find(|p| p.id == "maya")
            .unwrap()
    }

    /// Plays the simulator against a responder function; returns the user turns.
    fn play(
        user: &mut ScriptedUser,
        rounds: usize,
        agent: impl Fn(&str) -> String,
    ) -> Vec<UserTurn> {
        let mut reply: Option<String> = None;
        let mut turns = Vec::new();
        for _ in 0..rounds {
            let turn = user.next(reply.as_deref());
            reply = Some(agent(&turn.text));
            let stop = turn.stop;
            turns.push(turn);
            if stop {
                break;
            }
        }
        turns
    }

    #[test]
    fn reveals_a_fact_only_after_the_agent_shows_it_lacks_it_then_asks_again() {
        let persona = maya();
        let mut user = ScriptedUser::new(persona.clone(), 7, "t1", "[END]");
        let remembered = std::cell::RefCell::new(Vec::<String>::new());
        let turns = play(&mut user, 15, |text| {
            if text.starts_with("My ") {
                remembered.borrow_mut().push(text.to_owned());
                return "Noted.".to_owned();
            }
            if text.ends_with('?') {
                let known = remembered.borrow();
                return known
                    .iter()
                    .find(|f| f.contains("flight") && text.contains("flight"))
                    .or_else(|| {
                        known
                            .iter()
                            .find(|f| f.contains("hotel") && text.contains("hotel"))
                    })
                    .cloned()
                    .unwrap_or_else(|| "I don't know.".to_owned());
            }
            "Noted.".to_owned()
        });
        let texts: Vec<&str> = turns.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(texts.len(), 15, "{texts:#?}");
        assert_eq!(texts[0], persona.opening);
        let ask = texts
            .iter()
            .position(|t| *t == "What is my flight number?")
            .unwrap();
        let reveal = texts
            .iter()
            .position(|t| *t == "My flight number is JL042.")
            .unwrap();
        assert!(ask < reveal, "revealed only after the agent did not know");
        assert_eq!(reveal, ask + 1);
        assert_eq!(
            texts
                .iter()
                .filter(|t| **t == "What is my flight number?")
                .count(),
            2
        );
        assert!(user.reached().contains("flight") && user.reached().contains("hotel"));
    }

    #[test]
    fn an_unhelpful_agent_exhausts_patience_and_the_user_leaves_with_the_stop_token() {
        let mut persona = maya();
        persona.stop.patience = 2;
        let mut user = ScriptedUser::new(persona.clone(), 7, "t1", "[END]");
        let turns = play(&mut user, 15, |_| "I don't know.".to_owned());
        let last = turns.last().unwrap();
        assert!(last.stop);
        assert_eq!(last.text, format!("{} [END]", persona.stop.give_up));
        assert!(turns.len() < 15);
    }

    #[test]
    fn a_question_naming_a_fact_gets_the_fact_and_chatter_order_is_seeded() {
        let mut user = ScriptedUser::new(maya(), 1, "a", "[END]");
        user.next(None);
        let turn = user.next(Some("Which hotel are you staying at?"));
        assert_eq!(turn.text, "My hotel name is Sakura Inn.");
        let lines = |seed| {
            let mut u = ScriptedUser::new(maya(), seed, "a", "[END]");
            play(&mut u, 15, |_| "Noted.".to_owned())
        };
        assert_eq!(lines(3), lines(3));
        assert_ne!(lines(3), lines(4));
    }
}
