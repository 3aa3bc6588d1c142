//! Load that looks like conversations (`judge load --turns`): each closed-loop client is a user
//! who holds one session for a conversation of several turns, sends a turn only after the reply to
//! the previous one, then starts a new conversation in a new session.
//!
//! A user's messages are drawn from a seeded generator of chat-like sentences (what they did, who
//! they met, plans, preferences, and questions back about them), so that a memory agent extracts,
//! stores and recalls as it would in a real conversation; a message has about the sampled number
//! of words. The history is either left to the target's memory (each request carries the new
//! message only, with the session in `X-Session-Id`) or sent whole (`--history full`: every earlier
//! message and reply, prompts growing turn by turn).

use std::fmt;
use std::str::FromStr;

use awc::http::header::HeaderValue;
use bytes::Bytes;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::LoadError;
use super::workload::{LengthDist, Workload, a2a_body, request_body};
use crate::endpoint::Api;

/// Where a conversation's history lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum History {
    /// Each request holds the new message only: the target remembers the rest.
    Memory,
    /// Each request holds every earlier message and reply (Chat Completions).
    Full,
}

impl FromStr for History {
    type Err = LoadError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "memory" => Ok(History::Memory),
            "full" => Ok(History::Full),
            other => Err(LoadError::Invalid(format!(
                "--history `{other}`: use `memory` (the target remembers) or `full` (every request \
                 carries the whole conversation)"
            ))),
        }
    }
}

impl fmt::Display for History {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            History::Memory => "memory",
            History::Full => "full",
        })
    }
}

/// How conversations are shaped.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Conversations {
    /// Turns per conversation.
    pub turns: LengthDist,
    pub history: History,
}

/// Most turns one conversation may have: keeps the per-turn figures' bands few (see
/// [`turn_band`]) and a typo from holding one session for a day.
pub const MAX_TURNS: u32 = 100_000;

impl Conversations {
    pub fn validate(&self, api: Api) -> Result<(), LoadError> {
        let most = match self.turns {
            LengthDist::Fixed { tokens } => f64::from(tokens),
            LengthDist::Uniform { max, .. } => f64::from(max),
            LengthDist::Normal { mean, sd } => mean + 4.0 * sd,
        };
        if most > f64::from(MAX_TURNS) {
            return Err(LoadError::Invalid(format!(
                "--turns: conversations have at most {MAX_TURNS} turns"
            )));
        }
        if self.history == History::Full && api != Api::Chat {
            return Err(LoadError::Invalid(
                "--history full sends the conversation as Chat Completions messages: use --api \
                 chat (over the Responses API and A2A a target keeps the conversation itself)"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// The band of turn indexes (1-based) a turn's figures are reported in: 1, 2, 3-4, 5-8, 9-16, …
/// (powers of two), so a conversation of hundreds of turns gives ten rows, each with enough
/// requests for percentiles.
pub fn turn_band(turn: u32) -> usize {
    (u32::BITS - turn.max(1).saturating_sub(1).leading_zeros()) as usize
}

/// The first and last turn of band `band`.
pub fn band_turns(band: usize) -> (u32, u32) {
    match band {
        0 => (1, 1),
        b => ((1u32 << (b - 1)) + 1, 1u32 << b),
    }
}

const NAMES: &[&str] = &[
    "Maya", "Tom", "Priya", "Lukas", "Amara", "Jonas", "Sofia", "Kenji", "Lena", "Omar", "Clara",
    "Diego",
];
const RELATIONS: &[&str] = &[
    "sister",
    "brother",
    "neighbour",
    "manager",
    "friend",
    "cousin",
    "colleague",
    "dentist",
];
const PLACES: &[&str] = &[
    "the lake",
    "the market",
    "Lisbon",
    "the office",
    "the climbing gym",
    "my parents' house",
    "the library",
    "a small cafe near the station",
    "the hospital",
    "Berlin",
];
const THINGS: &[&str] = &[
    "a red bicycle",
    "a sourdough starter",
    "a new laptop",
    "concert tickets",
    "a used car",
    "running shoes",
    "a cast iron pan",
    "a pair of headphones",
    "a bookshelf",
    "a tent",
];
const ACTIVITIES: &[&str] = &[
    "learning Spanish",
    "training for a half marathon",
    "painting the kitchen",
    "planning a trip to Japan",
    "fixing the garden fence",
    "reading about astronomy",
    "baking bread every weekend",
    "looking for a new flat",
];
const TIMES: &[&str] = &[
    "yesterday",
    "last weekend",
    "this morning",
    "two weeks ago",
    "on Monday",
    "last night",
    "in March",
    "after work",
];
const FEELINGS: &[&str] = &[
    "tired but happy",
    "a bit nervous",
    "really excited",
    "annoyed",
    "relieved",
    "proud",
];

fn pick<'a>(rng: &mut ChaCha8Rng, words: &[&'a str]) -> &'a str {
    words[rng.random_range(0..words.len())]
}

/// One chat-like sentence.
fn sentence(rng: &mut ChaCha8Rng) -> String {
    match rng.random_range(0..9) {
        0 => format!(
            "{} I went to {} with my {} {}.",
            capitalised(pick(rng, TIMES)),
            pick(rng, PLACES),
            pick(rng, RELATIONS),
            pick(rng, NAMES)
        ),
        1 => format!("I bought {} {}.", pick(rng, THINGS), pick(rng, TIMES)),
        2 => format!(
            "These days I am {}, and I feel {}.",
            pick(rng, ACTIVITIES),
            pick(rng, FEELINGS)
        ),
        3 => format!(
            "My {} {} is moving to {} next month.",
            pick(rng, RELATIONS),
            pick(rng, NAMES),
            pick(rng, PLACES)
        ),
        4 => format!(
            "I prefer {} to {}, to be honest.",
            pick(rng, THINGS),
            pick(rng, THINGS)
        ),
        5 => format!(
            "Do you remember what I told you about {}?",
            pick(rng, ACTIVITIES)
        ),
        6 => format!("Where did I go {}?", pick(rng, TIMES)),
        7 => format!("Can you remind me who {} is?", pick(rng, NAMES)),
        _ => format!(
            "I have an appointment at {} at {} o'clock.",
            pick(rng, PLACES),
            rng.random_range(7..20)
        ),
    }
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// A user message of about `words` words (whole sentences: at least one).
pub fn user_message(rng: &mut ChaCha8Rng, words: u32) -> String {
    let mut message = sentence(rng);
    while (message.split_whitespace().count() as u32) < words {
        message.push(' ');
        message.push_str(&sentence(rng));
    }
    message
}

/// One virtual user's conversations, one after the other.
pub struct Conversation {
    rng: ChaCha8Rng,
    /// `conv-{seed}-w{worker}-c{client}-`: the session of conversation n adds n.
    session_prefix: String,
    started: u64,
    session: HeaderValue,
    /// Turns of the current conversation, and how many were sent.
    turns: u32,
    sent: u32,
    /// With full history: the messages so far, user and assistant alternating.
    messages: Vec<(&'static str, String)>,
}

/// One turn about to be sent.
pub struct Turn {
    pub body: Bytes,
    pub session: HeaderValue,
    /// 1-based.
    pub index: u32,
    /// Words of the whole prompt (the history's included).
    pub prompt_words: u32,
}

impl Conversation {
    /// Client `client` of worker `worker`: seeded by `(seed, worker, client)`.
    pub fn new(seed: u64, worker: usize, client: usize) -> Self {
        let rng = ChaCha8Rng::seed_from_u64(
            seed ^ ((worker as u64 + 1) << 32) ^ ((client as u64 + 1) << 48) ^ 0xc0_4e_5a,
        );
        let session_prefix = format!("conv-{seed}-w{worker}-c{client}-");
        Self {
            rng,
            session: HeaderValue::from_static("none"),
            session_prefix,
            started: 0,
            turns: 0,
            sent: 0,
            messages: Vec::new(),
        }
    }

    /// The next turn: of the current conversation, or the first of a new one (a new session).
    pub fn next_turn(&mut self, workload: &Workload, shape: &Conversations) -> Turn {
        if self.sent >= self.turns {
            self.started += 1;
            self.session =
                HeaderValue::from_str(&format!("{}{}", self.session_prefix, self.started))
                    .expect("session ids are ASCII");
            self.turns = shape.turns.sample(&mut self.rng).clamp(1, MAX_TURNS);
            self.sent = 0;
            self.messages.clear();
        }
        self.sent += 1;
        let words = workload.prompt_tokens.sample(&mut self.rng);
        let max_tokens = workload.output_tokens.sample(&mut self.rng);
        let message = user_message(&mut self.rng, words);
        let message_words = message.split_whitespace().count() as u32;
        let (body, prompt_words) = match shape.history {
            // Over A2A the session is the message's context.
            History::Memory if workload.api == Api::A2a => (
                a2a_body(
                    workload.stream,
                    self.session.to_str().ok(),
                    &serde_json::to_vec(&message).expect("a string serialises"),
                ),
                message_words,
            ),
            History::Memory => (
                request_body(workload, &[("user", message)], max_tokens),
                message_words,
            ),
            History::Full => {
                self.messages.push(("user", message));
                let words = self
                    .messages
                    .iter()
                    .map(|(_, text)| text.split_whitespace().count() as u32)
                    .sum();
                (request_body(workload, &self.messages, max_tokens), words)
            }
        };
        Turn {
            body,
            session: self.session.clone(),
            index: self.sent,
            prompt_words,
        }
    }

    /// Whether the target's reply is needed (to send it back with the next turn).
    pub fn wants_reply(&self, shape: &Conversations) -> bool {
        shape.history == History::Full
    }

    /// The reply to the turn just sent (full history keeps it for the next turns).
    pub fn replied(&mut self, shape: &Conversations, reply: String) {
        if shape.history == History::Full {
            self.messages.push(("assistant", reply));
        }
    }

    /// The turn just sent failed: the conversation ends there (its session is not used again).
    pub fn abandon(&mut self) {
        self.turns = self.sent;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(api: Api) -> Workload {
        Workload {
            model: "m".into(),
            api,
            stream: false,
            prompt_tokens: LengthDist::Fixed { tokens: 12 },
            output_tokens: LengthDist::Fixed { tokens: 8 },
            sessions: 1,
            conversations: None,
        }
    }

    #[test]
    fn bands_are_powers_of_two() {
        let bands: Vec<usize> = [1, 2, 3, 4, 5, 8, 9, 16, 17, 300]
            .iter()
            .map(|t| turn_band(*t))
            .collect();
        assert_eq!(bands, [0, 1, 2, 2, 3, 3, 4, 4, 5, 9]);
        for band in 0..12 {
            let (first, last) = band_turns(band);
            assert_eq!(turn_band(first), band);
            assert_eq!(turn_band(last), band);
            assert!(first == 1 || turn_band(first - 1) == band - 1);
        }
    }

    #[test]
    fn messages_are_sentences_of_about_the_asked_length() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for words in [1, 10, 60] {
            let m = user_message(&mut rng, words);
            let n = m.split_whitespace().count() as u32;
            assert!(n >= words && n < words + 20, "{words}: {m}");
            assert!(m.ends_with('.') || m.ends_with('?'), "{m}");
        }
        let mut again = ChaCha8Rng::seed_from_u64(5);
        assert_eq!(
            user_message(&mut again, 1),
            user_message(&mut ChaCha8Rng::seed_from_u64(5), 1)
        );
    }

    #[test]
    fn a_conversation_keeps_its_session_for_its_turns_then_starts_another() {
        let shape = Conversations {
            turns: LengthDist::Fixed { tokens: 3 },
            history: History::Memory,
        };
        let w = workload(Api::Chat);
        let mut c = Conversation::new(7, 0, 2);
        let turns: Vec<(String, u32)> = (0..7)
            .map(|_| {
                let t = c.next_turn(&w, &shape);
                (t.session.to_str().unwrap().to_owned(), t.index)
            })
            .collect();
        let expected = |n: u32, i: u32| (format!("conv-7-w0-c2-{n}"), i);
        assert_eq!(
            turns,
            [
                expected(1, 1),
                expected(1, 2),
                expected(1, 3),
                expected(2, 1),
                expected(2, 2),
                expected(2, 3),
                expected(3, 1)
            ]
        );
        // A failed turn ends its conversation.
        c.abandon();
        assert_eq!(c.next_turn(&w, &shape).session, "conv-7-w0-c2-4");
    }

    #[test]
    fn full_history_sends_every_earlier_message_and_reply() {
        let shape = Conversations {
            turns: LengthDist::Fixed { tokens: 3 },
            history: History::Full,
        };
        let w = workload(Api::Chat);
        let mut c = Conversation::new(1, 0, 0);
        let mut lengths = Vec::new();
        for i in 0..3 {
            let turn = c.next_turn(&w, &shape);
            let body: serde_json::Value = serde_json::from_slice(&turn.body).unwrap();
            let messages = body["messages"].as_array().unwrap();
            lengths.push(messages.len());
            assert_eq!(messages.last().unwrap()["role"], "user");
            if i > 0 {
                assert_eq!(messages[1]["content"], "reply 0");
            }
            c.replied(&shape, format!("reply {i}"));
        }
        assert_eq!(lengths, [1, 3, 5]);
        assert!(
            shape.validate(Api::Responses).is_err(),
            "full history is for Chat Completions"
        );
    }
}
