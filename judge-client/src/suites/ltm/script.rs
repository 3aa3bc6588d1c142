//! A test as data: its sessions and the steps the runner plays against the target. Generators
//! build scripts through [`Builder`]; the runner never invents content.

use chrono::{DateTime, Duration, TimeZone, Utc};
use protocol::control::InjectFact;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::filler::{FILLER_SLACK, filler_turn, filler_turns};
use super::phrasing::Phrasing;
use super::scoring::Scorer;
use super::types::TestType;
use crate::endpoint::Requirement;

/// How far a session's clock moves with each user turn. The runner plays it and the builder plans
/// with it, so a check that depends on the clock (a reminder's due time, "yesterday") holds however
/// many filler turns stand before it.
pub const TURN_GAP_SECONDS: i64 = 60;

/// A session of a test: its label in the script, its `X-Session-Id`, where its clock starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSpec {
    pub label: String,
    pub session_id: String,
    pub start: DateTime<Utc>,
}

/// A scored reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub label: String,
    pub scorer: Scorer,
}

/// One step of a script. `session` indexes [`TestSpec::sessions`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// A user turn; `ideal` is a reply that passes (what an oracle would say).
    Say {
        session: usize,
        text: String,
        ideal: String,
        check: Option<Check>,
    },
    /// Moves the session's virtual clock forward.
    Advance { session: usize, seconds: i64 },
    /// `POST /control/session/reset`.
    Reset { session: usize },
    /// `POST /control/memory/inject`.
    Inject {
        session: usize,
        facts: Vec<InjectFact>,
    },
}

/// A fully generated test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestSpec {
    /// `<type>-<trial>`, e.g. `needle-01`.
    pub id: String,
    pub test_type: TestType,
    pub trial: u32,
    pub requires: Vec<Requirement>,
    pub sessions: Vec<SessionSpec>,
    pub steps: Vec<Step>,
    /// Filler tokens (cl100k) the script holds.
    pub filler_tokens: u32,
    /// The set of phrasings its user turns are written in.
    #[serde(default)]
    pub phrasing: Phrasing,
}

impl TestSpec {
    /// User turns planned for a session.
    pub fn turns_in(&self, session: usize) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, Step::Say { session: x, .. } if *x == session))
            .count()
    }

    /// Whether a check of the test can be decided only by the LLM grader.
    pub fn needs_grader(&self) -> bool {
        self.checks().any(|c| c.scorer.needs_grader())
    }

    pub fn checks(&self) -> impl Iterator<Item = &Check> {
        self.steps.iter().filter_map(|s| match s {
            Step::Say { check, .. } => check.as_ref(),
            _ => None,
        })
    }
}

/// 32 bytes derived from the run seed and a label: the root of every random choice of a test.
pub fn derive_seed(run_seed: u64, label: &str) -> [u8; 32] {
    Sha256::digest(format!("agentwall-ltm:{run_seed}:{label}").as_bytes()).into()
}

/// A UUID (version 4 layout) derived from the run seed and a label: fresh per session, reproducible.
pub fn derive_uuid(run_seed: u64, label: &str) -> String {
    let bytes = derive_seed(run_seed, &format!("session:{label}"));
    let mut raw = [0u8; 16];
    raw.copy_from_slice(&bytes[..16]);
    uuid::Builder::from_random_bytes(raw)
        .into_uuid()
        .hyphenated()
        .to_string()
}

/// What a generator needs besides randomness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenParams {
    pub run_seed: u64,
    /// Filler between what is told and what is asked, in tokens.
    pub span_tokens: u32,
    /// Largest filler turn, in tokens.
    pub filler_turn_tokens: u32,
    /// The set of phrasings the user turns are written in.
    pub phrasing: Phrasing,
}

/// Collects a script.
pub struct Builder {
    pub rng: ChaCha8Rng,
    pub params: GenParams,
    id: String,
    /// What the randomness and the session ids derive from: the test id, prefixed for the
    /// held-out phrasings so that their sessions never meet a standard run's.
    root: String,
    sessions: Vec<SessionSpec>,
    steps: Vec<Step>,
    filler_tokens: u32,
    start: DateTime<Utc>,
    /// Each session's planned clock: where it will stand when its next step is played.
    clocks: Vec<DateTime<Utc>>,
}

impl Builder {
    pub fn new(params: GenParams, id: String) -> Self {
        let root = match params.phrasing {
            Phrasing::Standard => id.clone(),
            Phrasing::Heldout => format!("heldout/{id}"),
        };
        let mut rng = ChaCha8Rng::from_seed(derive_seed(params.run_seed, &root));
        // Virtual clocks start on a seeded day of 2026 at 09:00 UTC.
        let day = rng.random_range(0..300i64);
        let start = Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap() + Duration::days(day);
        Self {
            rng,
            params,
            id,
            root,
            sessions: Vec::new(),
            steps: Vec::new(),
            filler_tokens: 0,
            start,
            clocks: Vec::new(),
        }
    }

    /// Where every session's clock starts.
    pub fn start(&self) -> DateTime<Utc> {
        self.start
    }

    pub fn session(&mut self, label: &str) -> usize {
        self.sessions.push(SessionSpec {
            label: label.to_owned(),
            session_id: derive_uuid(self.params.run_seed, &format!("{}:{label}", self.root)),
            start: self.start,
        });
        self.clocks.push(self.start);
        self.sessions.len() - 1
    }

    /// The time on `session`'s clock when its next turn will be played: its start, plus
    /// [`TURN_GAP_SECONDS`] per turn planned so far, plus every advance.
    pub fn clock(&self, session: usize) -> DateTime<Utc> {
        self.clocks[session]
    }

    /// A statement the agent should simply acknowledge.
    pub fn tell(&mut self, session: usize, text: impl Into<String>) {
        self.say(Step::Say {
            session,
            text: text.into(),
            ideal: "Noted.".to_owned(),
            check: None,
        });
    }

    /// A turn whose reply is scored.
    pub fn ask(
        &mut self,
        session: usize,
        text: impl Into<String>,
        ideal: impl Into<String>,
        label: impl Into<String>,
        scorer: Scorer,
    ) {
        self.say(Step::Say {
            session,
            text: text.into(),
            ideal: ideal.into(),
            check: Some(Check {
                label: label.into(),
                scorer,
            }),
        });
    }

    /// Filler turns (acknowledged, unscored) totalling about `tokens`.
    pub fn filler(&mut self, session: usize, tokens: u32) {
        for text in self.filler_texts(tokens) {
            self.tell(session, text);
        }
    }

    /// Filler texts without adding them, for generators that score filler replies.
    pub fn filler_texts(&mut self, tokens: u32) -> Vec<String> {
        let (turns, counted) = filler_turns(&mut self.rng, tokens, self.params.filler_turn_tokens);
        self.filler_tokens += counted;
        turns
    }

    /// One filler text of at most `tokens` tokens, or `None` when the budget is below
    /// [`FILLER_SLACK`].
    pub fn filler_one(&mut self, tokens: u32) -> Option<String> {
        if tokens < FILLER_SLACK {
            return None;
        }
        let (text, counted) = filler_turn(&mut self.rng, tokens);
        self.filler_tokens += counted;
        Some(text)
    }

    fn say(&mut self, step: Step) {
        if let Step::Say { session, .. } = step {
            self.clocks[session] += Duration::seconds(TURN_GAP_SECONDS);
        }
        self.steps.push(step);
    }

    pub fn advance(&mut self, session: usize, by: Duration) {
        self.clocks[session] += by;
        self.steps.push(Step::Advance {
            session,
            seconds: by.num_seconds(),
        });
    }

    /// Moves `session`'s clock forward to `at`, or leaves it where it is when it is already
    /// there or later (the filler took longer). Returns the clock after the move.
    pub fn advance_to(&mut self, session: usize, at: DateTime<Utc>) -> DateTime<Utc> {
        let by = at - self.clocks[session];
        if by > Duration::zero() {
            self.advance(session, by);
        }
        self.clocks[session]
    }

    pub fn reset(&mut self, session: usize) {
        self.steps.push(Step::Reset { session });
    }

    pub fn inject(&mut self, session: usize, facts: Vec<InjectFact>) {
        self.steps.push(Step::Inject { session, facts });
    }

    pub fn finish(self, test_type: TestType, trial: u32) -> TestSpec {
        TestSpec {
            id: self.id,
            test_type,
            trial,
            requires: test_type.requires().to_vec(),
            sessions: self.sessions,
            steps: self.steps,
            filler_tokens: self.filler_tokens,
            phrasing: self.params.phrasing,
        }
    }
}
