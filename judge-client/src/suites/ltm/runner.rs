//! Plays one [`TestSpec`] against the target and scores it.
//!
//! Each session has its own virtual clock, starting at the session's `start`: a user turn happens
//! at the clock, its reply is logged one second later, and the clock moves on a minute per turn
//! (plus any `Advance`). The clock is sent as `X-Mock-Time` only when the probe found it honoured.

use std::time::Instant;

use chrono::{DateTime, Duration, Utc};
use opentelemetry::context::FutureExt as _;
use opentelemetry::{Context, KeyValue};
use protocol::control::{InjectFact, InjectRequest};
use protocol::openai::ChatMessage;

use super::grader::{self, Grader};
use super::script::{Check, Step, TURN_GAP_SECONDS, TestSpec};
use crate::endpoint::{
    Capabilities, Failure, FailureKind, RequestContext, TargetClient, TurnMode, TurnSender,
    telemetry,
};
use crate::suites::ltm::results::{
    CheckResult, SessionRecord, TestResult, TestStatus, TestTiming, TranscriptEntry,
};

/// Everything a test run needs from the run around it.
pub struct Runner<'a> {
    pub client: &'a TargetClient,
    pub capabilities: &'a Capabilities,
    /// How each turn is sent (API and history).
    pub turns: TurnMode,
    /// The run's span (a no-op unless spans are exported).
    pub trace: Context,
    /// The LLM grader, when the run has one (`--grader-endpoint`).
    pub grader: Option<&'a Grader>,
}

struct SessionState {
    clock: DateTime<Utc>,
    /// Everything said in the session since its last reset.
    history: Vec<ChatMessage>,
    /// What the target holds of it (a chain's head).
    sender: TurnSender,
    requests: u64,
    said: usize,
}

/// One test being played: its sessions' state and what has been recorded so far.
struct Play<'r, 's> {
    runner: &'r Runner<'r>,
    spec: &'s TestSpec,
    span: Context,
    states: Vec<SessionState>,
    transcript: Vec<TranscriptEntry>,
    checks: Vec<CheckResult>,
    timing: TestTiming,
    /// The first failure, and the session it happened in; the test stops there.
    failure: Option<(usize, Failure)>,
}

impl Runner<'_> {
    /// The result of a test the target cannot take.
    pub fn not_applicable(spec: &TestSpec, reason: String) -> TestResult {
        let mut result = empty_result(spec);
        result.status = TestStatus::NotApplicable;
        result.reason = Some(reason);
        for record in &mut result.sessions {
            record.stop_reason = "not_run".to_owned();
        }
        result
    }

    /// The result of a test only the LLM grader can grade, in a run without one: excluded from
    /// the scores like a test that is not applicable, and said so.
    pub fn not_gradable(spec: &TestSpec) -> TestResult {
        let mut result = Self::not_applicable(
            spec,
            format!(
                "not gradable: the {} phrasing of {} is graded only by the LLM grader (--grader-endpoint)",
                spec.phrasing, spec.test_type
            ),
        );
        result.status = TestStatus::NotGradable;
        result
    }

    /// Plays the test. `log_files` names each session's log (neutral names, chosen by the caller).
    pub async fn run(&self, spec: &TestSpec, log_files: &[String]) -> (TestResult, TestTiming) {
        let started = Instant::now();
        let mut play = Play {
            runner: self,
            spec,
            span: telemetry::start(
                format!("test {}", spec.id),
                &self.trace,
                vec![KeyValue::new("test.type", spec.test_type.name())],
            ),
            states: spec
                .sessions
                .iter()
                .map(|s| SessionState {
                    clock: s.start,
                    history: Vec::new(),
                    sender: TurnSender::new(self.turns),
                    requests: 0,
                    said: 0,
                })
                .collect(),
            transcript: Vec::new(),
            checks: Vec::new(),
            timing: TestTiming {
                id: spec.id.clone(),
                total_ms: 0,
                turn_ms: Vec::new(),
                turn_attempts: Vec::new(),
                turn_sent_unix_ms: Vec::new(),
            },
            failure: None,
        };
        play.prepare().await;
        for step in &spec.steps {
            if play.failure.is_some() {
                break;
            }
            match step {
                Step::Say {
                    session,
                    text,
                    check,
                    ..
                } => play.say(*session, text, check.as_ref()).await,
                Step::Advance { session, seconds } => play.advance(*session, *seconds),
                Step::Reset { session } => play.reset(*session).await,
                Step::Inject { session, facts } => play.inject(*session, facts).await,
            }
        }
        let mut result = play.finish(log_files);
        result.1.total_ms = started.elapsed().as_millis() as u64;
        result
    }
}

impl Play<'_, '_> {
    /// The next request's context, and its span (end it when the request is done).
    fn context(&mut self, index: usize, what: &'static str) -> (RequestContext, Context) {
        let state = &mut self.states[index];
        state.requests += 1;
        let session_id = self.spec.sessions[index].session_id.clone();
        let span = telemetry::start(
            what,
            &self.span,
            vec![
                KeyValue::new("session.id", session_id.clone()),
                KeyValue::new("request.no", state.requests as i64),
            ],
        );
        let ctx = RequestContext {
            mock_time: self.runner.capabilities.mock_time.then_some(state.clock),
            request_no: state.requests,
            session_id,
        };
        (ctx, span)
    }

    fn label(&self, index: usize) -> String {
        self.spec.sessions[index].label.clone()
    }

    /// Session ids are reproducible, so a previous run may have left memory behind: start from a
    /// clean slate when the target can reset (silently: this is preparation, not a step).
    async fn prepare(&mut self) {
        if !self.runner.capabilities.reset {
            return;
        }
        for index in 0..self.states.len() {
            let (ctx, span) = self.context(index, "prepare reset");
            let outcome = self
                .runner
                .client
                .reset(&ctx)
                .with_context(span.clone())
                .await;
            telemetry::end(&span);
            if let Err(e) = outcome {
                self.failure = Some((index, e.into()));
                return;
            }
        }
    }

    async fn say(&mut self, index: usize, text: &str, check: Option<&Check>) {
        let (ctx, span) = self.context(index, "chat turn");
        let user = ChatMessage::user(text);
        let mut transcript = self.states[index].history.clone();
        transcript.push(user.clone());
        let at = self.states[index].clock;
        self.timing
            .turn_sent_unix_ms
            .push(Utc::now().timestamp_millis().max(0) as u64);
        let started = Instant::now();
        let outcome = self.states[index]
            .sender
            .send(self.runner.client, &ctx, &transcript, None)
            .with_context(span.clone())
            .await;
        telemetry::end(&span);
        self.timing
            .turn_ms
            .push(started.elapsed().as_millis() as u64);
        let state = &mut self.states[index];
        state.clock += Duration::seconds(TURN_GAP_SECONDS);
        state.said += 1;
        let label = self.label(index);
        let check_label = check.map(|c| c.label.clone());
        match outcome {
            Ok(reply) => {
                self.timing.turn_attempts.push(reply.attempts);
                let state = &mut self.states[index];
                state.history.push(user);
                state
                    .history
                    .push(ChatMessage::assistant(reply.text.clone()));
                if let Some(check) = check {
                    let verdict = check.scorer.score(&reply.text);
                    let mut result = CheckResult {
                        label: check.label.clone(),
                        session: label.clone(),
                        reached: true,
                        score: verdict.score,
                        passed: verdict.passed,
                        detail: verdict.detail,
                        scorer: check.scorer.clone(),
                        undecided: verdict.undecided,
                        grade: None,
                    };
                    if let Some(grader) = self.runner.grader {
                        let name = format!("{}/{}", self.spec.id, check.label);
                        let grade = grader.grade(&name, text, &reply.text, &check.scorer).await;
                        grader::apply(&mut result, grade);
                    }
                    // A check only the grader decides, left without a grade: the judge's failure.
                    let ungraded = if check.scorer.needs_grader() && self.runner.grader.is_none() {
                        Some(Failure {
                            kind: FailureKind::JudgeError,
                            message: "this check needs the LLM grader (--grader-endpoint)"
                                .to_owned(),
                            status: None,
                            attempts: 0,
                        })
                    } else {
                        grader::ungraded(&result).cloned()
                    };
                    if let Some(failure) = ungraded {
                        self.failure = Some((index, failure));
                    }
                    self.checks.push(result);
                }
                self.transcript.push(TranscriptEntry::Turn {
                    session: label,
                    at,
                    user: text.to_owned(),
                    reply: Some(reply.text),
                    failure: None,
                    check: check_label,
                });
            }
            Err(e) => {
                self.timing.turn_attempts.push(e.attempts);
                let failure: Failure = e.into();
                self.transcript.push(TranscriptEntry::Turn {
                    session: label,
                    at,
                    user: text.to_owned(),
                    reply: None,
                    failure: Some(failure.clone()),
                    check: check_label,
                });
                self.failure = Some((index, failure));
            }
        }
    }

    fn advance(&mut self, index: usize, seconds: i64) {
        let state = &mut self.states[index];
        let from = state.clock;
        state.clock += Duration::seconds(seconds);
        let to = state.clock;
        self.transcript.push(TranscriptEntry::Advance {
            session: self.label(index),
            from,
            to,
        });
    }

    async fn reset(&mut self, index: usize) {
        let (ctx, span) = self.context(index, "reset");
        self.states[index].history.clear();
        // The target forgets the session's responses with its memory: a chain starts over.
        self.states[index].sender.restart();
        let outcome = self
            .runner
            .client
            .reset(&ctx)
            .with_context(span.clone())
            .await;
        telemetry::end(&span);
        let (removed, failure) = match outcome {
            Ok(r) => (Some((r.working_items_removed, r.facts_removed)), None),
            Err(e) => (None, Some(Failure::from(e))),
        };
        self.transcript.push(TranscriptEntry::Reset {
            session: self.label(index),
            at: self.states[index].clock,
            working_items_removed: removed.map(|r| r.0),
            facts_removed: removed.map(|r| r.1),
            failure: failure.clone(),
        });
        if let Some(f) = failure {
            self.failure = Some((index, f));
        }
    }

    async fn inject(&mut self, index: usize, facts: &[InjectFact]) {
        let (ctx, span) = self.context(index, "inject");
        let request = InjectRequest {
            facts: facts.to_vec(),
        };
        let failure = self
            .runner
            .client
            .inject(&ctx, &request)
            .with_context(span.clone())
            .await
            .err()
            .map(Failure::from);
        telemetry::end(&span);
        self.transcript.push(TranscriptEntry::Inject {
            session: self.label(index),
            at: self.states[index].clock,
            facts: facts.iter().map(|f| f.text.clone()).collect(),
            failure: failure.clone(),
        });
        if let Some(f) = failure {
            self.failure = Some((index, f));
        }
    }

    /// Scores the test: checks never reached score 0 and say why; a judge error is excluded.
    fn finish(mut self, log_files: &[String]) -> (TestResult, TestTiming) {
        let scored_sessions: Vec<usize> = self
            .spec
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Say {
                    session,
                    check: Some(_),
                    ..
                } => Some(*session),
                _ => None,
            })
            .collect();
        let reached = self.checks.len();
        for (check, session) in self.spec.checks().zip(&scored_sessions).skip(reached) {
            self.checks.push(CheckResult {
                label: check.label.clone(),
                session: self.label(*session),
                reached: false,
                score: 0.0,
                passed: false,
                detail: "not reached: the test stopped on a failure".to_owned(),
                scorer: check.scorer.clone(),
                undecided: false,
                grade: None,
            });
        }
        let mut result = empty_result(self.spec);
        for (index, (record, file)) in result.sessions.iter_mut().zip(log_files).enumerate() {
            record.log_file = file.clone();
            let complete = self.states[index].said >= record.planned_turns;
            record.stop_reason = match &self.failure {
                Some((at, f)) if *at == index => f.kind.as_str().to_owned(),
                Some(_) if !complete => "aborted".to_owned(),
                _ => "completed".to_owned(),
            };
        }
        let score = if self.checks.is_empty() {
            0.0
        } else {
            self.checks.iter().map(|c| c.score).sum::<f64>() / self.checks.len() as f64
        };
        result.status = match &self.failure {
            Some((_, f)) if f.kind == FailureKind::JudgeError => TestStatus::Error,
            Some(_) => TestStatus::Failed,
            None if self.checks.iter().all(|c| c.passed) => TestStatus::Passed,
            None => TestStatus::Failed,
        };
        result.score = (result.status != TestStatus::Error).then_some(score);
        result.failure = self.failure.map(|(_, f)| f);
        result.checks = self.checks;
        result.transcript = self.transcript;
        telemetry::end(&self.span);
        (result, self.timing)
    }
}

fn empty_result(spec: &TestSpec) -> TestResult {
    TestResult {
        id: spec.id.clone(),
        test_type: spec.test_type,
        trial: spec.trial,
        status: TestStatus::Failed,
        reason: None,
        failure: None,
        score: None,
        checks: Vec::new(),
        sessions: spec
            .sessions
            .iter()
            .enumerate()
            .map(|(i, s)| SessionRecord {
                label: s.label.clone(),
                session_id: s.session_id.clone(),
                log_file: String::new(),
                planned_turns: spec.turns_in(i),
                stop_reason: String::new(),
            })
            .collect(),
        filler_tokens: spec.filler_tokens,
        transcript: Vec::new(),
    }
}
