//! A membench run: select the questions, probe the target, then per conversation (several at
//! once with `--concurrency`) ingest, ask every question in a seeded order, and score.
//!
//! Questions are asked after ingestion, in the conversation's session, with nothing of the history
//! sent (`context` mode excepted, whose point is the history in the prompt) and with
//! `X-Memory-Write: off`; where the target has not shown it honours that header, an asked
//! question may write memory that a later one sees, and the summary says `--only`/`--limit`
//! runs are not comparable with a full run.

use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use protocol::headers::{MEMORY_WRITE, MEMORY_WRITE_OFF};
use protocol::openai::ChatMessage;
use protocol::recall::RecallRequest;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::bm25::{RECALL_KS, TurnIndex, recall_at};
use super::dataset::{Conversation, Dataset, DatasetKind, Question};
use super::ingest::{Ingestion, Protocol, context_prompt, ingest};
use super::judge::{Verdict, locomo_j_prompt, longmemeval_prompt, parse_label, parse_yes_no};
use super::results::{MembenchResults, QuestionResult, Summary, summarise_all};
use super::scoring::{TwoOptions, locomo_question, locomo_score, token_f1};
use crate::endpoint::{
    Api, ApiScope, Capabilities, Failure, FailureKind, HistoryMode, RequestContext, TargetClient,
    TargetError, TurnMode, TurnSender, probe_in,
};
use crate::suites::model_judge::ModelJudge;

/// What was asked of the run; recorded in the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MembenchConfig {
    pub dataset: DatasetKind,
    pub protocol: Protocol,
    /// The API the turns and questions go through (runs made before it was recorded: `chat`).
    #[serde(default)]
    pub api: Api,
    pub seed: u64,
    pub concurrency: usize,
    /// Conversation or question ids to keep (empty: all).
    pub only: Vec<String>,
    /// Question ids left out (known label errors).
    pub exclude: Vec<String>,
    pub limit_conversations: Option<usize>,
    /// Sessions kept per conversation; questions whose evidence lies beyond them are dropped.
    pub limit_sessions: Option<usize>,
    pub limit_questions: Option<usize>,
    /// `context` mode's history budget, in cl100k tokens.
    pub context_tokens: usize,
    /// Distinguishes this run's agent sessions from earlier runs against the same target.
    pub session_prefix: String,
}

impl MembenchConfig {
    /// Whether the run asks every question of the dataset.
    pub fn is_full(&self) -> bool {
        self.only.is_empty()
            && self.limit_conversations.is_none()
            && self.limit_sessions.is_none()
            && self.limit_questions.is_none()
    }
}

/// The capabilities a membench run depends on, found by asking the target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MembenchCapabilities {
    pub base: Capabilities,
    /// `POST /control/memory/recall` answers.
    pub recall: bool,
    /// `X-Memory-Write: off` is echoed back on a chat answer.
    pub read_only_questions: bool,
    pub notes: Vec<String>,
}

/// One request of `messages` through `api`, with `headers` beside the wall's own.
async fn one_request(
    client: &TargetClient,
    api: Api,
    ctx: &RequestContext,
    messages: &[ChatMessage],
    headers: &[(&'static str, String)],
) -> Result<crate::endpoint::ChatReply, TargetError> {
    TurnSender::new(TurnMode {
        api,
        history: HistoryMode::Full,
    })
    .send_with_headers(client, ctx, messages, headers)
    .await
}

/// Probes the wall's capabilities (a turn through `api`) plus recall and read-only questions.
pub async fn probe_capabilities(
    client: &TargetClient,
    session: &str,
    api: Api,
) -> Result<MembenchCapabilities, TargetError> {
    let base = probe_in(client, session, ApiScope::Only(api)).await?;
    let ctx = RequestContext {
        session_id: session.to_owned(),
        mock_time: None,
        request_no: 100,
    };
    let mut notes = Vec::new();
    let recall = match client
        .recall(
            &ctx,
            &RecallRequest {
                text: "probe".to_owned(),
                limit: 1,
            },
        )
        .await
    {
        Ok(_) => {
            notes.push("POST /control/memory/recall works".to_owned());
            true
        }
        Err(e) => {
            notes.push(format!("POST /control/memory/recall unavailable ({e})"));
            false
        }
    };
    let headers = [(MEMORY_WRITE, MEMORY_WRITE_OFF.to_owned())];
    let hello = [ChatMessage::user("Hello again.")];
    let read_only_questions = match one_request(client, api, &ctx, &hello, &headers).await {
        Ok(reply) => {
            let echoed = reply
                .headers
                .iter()
                .any(|(n, v)| n == MEMORY_WRITE && v.eq_ignore_ascii_case(MEMORY_WRITE_OFF));
            notes.push(if echoed {
                "X-Memory-Write: off honoured (echoed on the answer)".to_owned()
            } else {
                "X-Memory-Write: off not echoed: questions may write memory".to_owned()
            });
            echoed
        }
        Err(e) => {
            notes.push(format!("X-Memory-Write probe failed ({e})"));
            false
        }
    };
    if base.reset && client.reset(&ctx).await.is_err() {
        notes.push("cleanup reset of the probe session failed".to_owned());
    }
    Ok(MembenchCapabilities {
        base,
        recall,
        read_only_questions,
        notes,
    })
}

/// Applies `--only`, `--exclude` and the limits; returns the conversations to run.
pub fn select(dataset: &Dataset, config: &MembenchConfig) -> Vec<Conversation> {
    let only: HashSet<&str> = config.only.iter().map(String::as_str).collect();
    let exclude: HashSet<&str> = config.exclude.iter().map(String::as_str).collect();
    let mut out = Vec::new();
    for c in &dataset.conversations {
        if config.limit_conversations.is_some_and(|n| out.len() >= n) {
            break;
        }
        let whole = only.is_empty() || only.contains(c.id.as_str());
        let mut conversation = c.clone();
        if let Some(n) = config.limit_sessions {
            conversation.sessions.truncate(n);
        }
        let kept: HashSet<String> = conversation.turns().map(|(_, t)| t.id.clone()).collect();
        conversation.questions.retain(|q| {
            (whole || only.contains(q.id.as_str()))
                && !exclude.contains(q.id.as_str())
                && (config.limit_sessions.is_none()
                    || (!q.evidence.is_empty() && q.evidence.iter().all(|e| kept.contains(e))))
        });
        if let Some(n) = config.limit_questions {
            conversation.questions.truncate(n);
        }
        if !conversation.questions.is_empty() {
            out.push(conversation);
        }
    }
    out
}

/// A session id the wall accepts: `[A-Za-z0-9._:-]`, at most 128 characters.
fn session_id(prefix: &str, conversation: &str) -> String {
    format!("{prefix}-{conversation}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(128)
        .collect()
}

/// Seeded question order of one conversation: the run's seed mixed with the conversation's id.
fn question_order(seed: u64, conversation: &Conversation) -> Vec<usize> {
    let mix = conversation
        .id
        .bytes()
        .fold(seed ^ 0x9e37_79b9_7f4a_7c15, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    let mut rng = ChaCha8Rng::seed_from_u64(mix);
    let mut order: Vec<usize> = (0..conversation.questions.len()).collect();
    order.shuffle(&mut rng);
    order
}

/// Everything a conversation's run needs besides the conversation.
pub struct RunContext<'a> {
    pub client: &'a TargetClient,
    pub judge: Option<&'a ModelJudge>,
    pub config: &'a MembenchConfig,
    pub capabilities: &'a MembenchCapabilities,
}

/// Session-level ids of turn ids (`<session>:<n>` -> `<session>`).
fn sessions_of(ids: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for id in ids {
        let session = id
            .rsplit_once(':')
            .map_or(id.as_str(), |(s, _)| s)
            .to_owned();
        if !out.contains(&session) {
            out.push(session);
        }
    }
    out
}

fn recall_map(ranked: &[Vec<String>], evidence: &[String]) -> Option<BTreeMap<usize, f64>> {
    RECALL_KS
        .iter()
        .map(|k| recall_at(ranked, evidence, *k).map(|r| (*k, r)))
        .collect()
}

/// Runs one conversation: ingest, then its questions in seeded order.
pub async fn run_conversation(
    run: &RunContext<'_>,
    conversation: &Conversation,
) -> (Ingestion, Vec<QuestionResult>) {
    let config = run.config;
    let session = session_id(&config.session_prefix, &conversation.id);
    let mut request_no = 0u64;
    let mut reset_failure = None;
    if run.capabilities.base.reset && config.protocol != Protocol::Context {
        request_no += 1;
        let ctx = RequestContext {
            session_id: session.clone(),
            mock_time: None,
            request_no,
        };
        // Kept with the ingestion's failures: memory left from before may answer a question.
        reset_failure = run.client.reset(&ctx).await.err();
    }
    let mut ingestion = ingest(
        run.client,
        config.protocol,
        config.api,
        &session,
        conversation,
        &mut request_no,
    )
    .await;
    if let Some(e) = reset_failure {
        ingestion.errors.insert(0, format!("reset: {e}"));
    }
    let index = TurnIndex::new(conversation);
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed ^ 0x5eed);
    let mut results = Vec::new();
    for (order, i) in question_order(config.seed, conversation)
        .into_iter()
        .enumerate()
    {
        let question = &conversation.questions[i];
        // Category 5's option order comes from one generator per run, drawn in asking order.
        let options = question.adversarial_answer.as_ref().map(|adversarial| {
            TwoOptions::new(adversarial, rand::RngExt::random_bool(&mut rng, 0.5))
        });
        request_no += 1;
        let asked_at = conversation.question_time(question);
        let result = ask(
            run,
            conversation,
            question,
            options,
            order,
            &session,
            asked_at,
            request_no,
            &index,
        )
        .await;
        results.push(result);
    }
    (ingestion, results)
}

#[allow(clippy::too_many_arguments)]
async fn ask(
    run: &RunContext<'_>,
    conversation: &Conversation,
    question: &Question,
    options: Option<TwoOptions>,
    order: usize,
    session: &str,
    asked_at: Option<DateTime<Utc>>,
    request_no: u64,
    index: &TurnIndex,
) -> QuestionResult {
    let config = run.config;
    let kind = config.dataset;
    let asked = match kind {
        DatasetKind::Locomo => {
            locomo_question(&question.category, &question.question, options.as_ref())
        }
        DatasetKind::Longmemeval => question.question.clone(),
    };
    // Context mode: a fresh session per question, so the target keeps nothing between them.
    let (session, text, context_truncated) = match config.protocol {
        Protocol::Context => {
            let (prompt, cut) = context_prompt(
                kind,
                conversation,
                &asked,
                &question.category,
                config.context_tokens,
            );
            (format!("{session}-{}", question.id), prompt, cut)
        }
        _ => (session.to_owned(), asked.clone(), false),
    };
    let session = session
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(128)
        .collect::<String>();
    let ctx = RequestContext {
        session_id: session.clone(),
        mock_time: asked_at,
        request_no,
    };
    let bm25_top = index.top(&question.question, RECALL_KS[RECALL_KS.len() - 1]);
    let bm25_ranked: Vec<Vec<String>> = bm25_top.iter().map(|id| vec![id.clone()]).collect();
    let counted = question.recall_excluded.is_none();
    let bm25_recall = counted
        .then(|| recall_map(&bm25_ranked, &question.evidence))
        .flatten();
    let session_level = kind == DatasetKind::Longmemeval && counted;
    let bm25_session_recall = session_level
        .then(|| {
            let ranked: Vec<Vec<String>> = bm25_ranked.iter().map(|ids| sessions_of(ids)).collect();
            recall_map(&ranked, &question.evidence_sessions)
        })
        .flatten();

    let (recalled, recall_failure) =
        if run.capabilities.recall && config.protocol != Protocol::Context {
            let request = RecallRequest {
                text: question.question.clone(),
                limit: RECALL_KS[RECALL_KS.len() - 1] as u32,
            };
            match run.client.recall(&ctx, &request).await {
                Ok(response) => (Some(response.items), None),
                Err(e) => (None, Some(Failure::from(e))),
            }
        } else {
            (None, None)
        };
    // A recall the target failed recalled nothing: 0 at every k, counted against it. One the
    // judge could not send is left out of recall@k.
    let recalled_ids = match (&recalled, &recall_failure) {
        (Some(items), _) => Some(items.iter().map(|i| i.source_turn_ids.clone()).collect()),
        (None, Some(f)) if f.kind != FailureKind::JudgeError => Some(Vec::new()),
        _ => None,
    };
    let agent_ranked: Option<Vec<Vec<String>>> = recalled_ids;
    let agent_recall = agent_ranked
        .as_ref()
        .filter(|_| counted)
        .and_then(|ranked| recall_map(ranked, &question.evidence));
    let agent_session_recall = agent_ranked
        .as_ref()
        .filter(|_| session_level)
        .and_then(|ranked| {
            let ranked: Vec<Vec<String>> = ranked.iter().map(|ids| sessions_of(ids)).collect();
            recall_map(&ranked, &question.evidence_sessions)
        });

    let headers = [(MEMORY_WRITE, MEMORY_WRITE_OFF.to_owned())];
    let started = Instant::now();
    let reply = one_request(
        run.client,
        config.api,
        &ctx,
        &[ChatMessage::user(text)],
        &headers,
    )
    .await;
    let latency_ms = started.elapsed().as_millis() as u64;
    let (reply, latency_ms, prompt_tokens, failure) = match reply {
        Ok(reply) => (
            Some(reply.text),
            Some(latency_ms),
            reply.usage.map(|u| u.prompt_tokens),
            None,
        ),
        Err(e) => (None, None, None, Some(Failure::from(e))),
    };
    let scored_reply = reply.as_deref().map(|r| match &options {
        Some(options) => options.resolve(r),
        None => r.to_owned(),
    });
    // Whether the judge model gives this question a verdict (LoCoMo's category 5 has none).
    let judgeable = run.judge.is_some()
        && !(kind == DatasetKind::Locomo && question.category == ADVERSARIAL_CATEGORY);
    let (judge, judge_failure) = match (run.judge, scored_reply.as_deref()) {
        (Some(judge), Some(answer)) if judgeable => {
            match judge_verdict(judge, kind, question, answer, &session).await {
                Ok(verdict) => (Some(verdict), None),
                Err(e) => (None, Some(Failure::from(e))),
            }
        }
        _ => (None, None),
    };
    let verdict_score = judge.as_ref().map(|v| if v.correct { 1.0 } else { 0.0 });
    // What the target failed counts against it (0); what the judge's side spoiled is left out.
    let target_failed = failure
        .as_ref()
        .is_some_and(|f| f.kind != FailureKind::JudgeError);
    let judge_score = match kind {
        DatasetKind::Locomo if judgeable && target_failed => Some(0.0),
        DatasetKind::Locomo => verdict_score,
        DatasetKind::Longmemeval => None,
    };
    let (score, f1_stand_in) = match (kind, scored_reply.as_deref()) {
        (DatasetKind::Locomo, Some(r)) => (
            Some(locomo_score(&question.category, r, &question.answer)),
            None,
        ),
        (DatasetKind::Locomo, None) => (target_failed.then_some(0.0), None),
        (DatasetKind::Longmemeval, Some(r)) => (verdict_score, Some(token_f1(r, &question.answer))),
        (DatasetKind::Longmemeval, None) => (
            (judgeable && target_failed).then_some(0.0),
            target_failed.then_some(0.0),
        ),
    };
    QuestionResult {
        id: question.id.clone(),
        conversation: conversation.id.clone(),
        category: question.category.clone(),
        order,
        asked,
        gold: question.answer.clone(),
        options,
        reply,
        scored_reply,
        score,
        f1_stand_in,
        judge,
        judge_failure,
        judge_score,
        evidence: question.evidence.clone(),
        evidence_sessions: question.evidence_sessions.clone(),
        recall_excluded: question.recall_excluded.clone(),
        recalled,
        agent_recall,
        recall_failure,
        bm25_top,
        bm25_recall,
        agent_session_recall,
        bm25_session_recall,
        latency_ms,
        prompt_tokens,
        context_truncated,
        failure,
    }
}

/// LoCoMo's adversarial category: answered by choosing an option, not judged by the model.
const ADVERSARIAL_CATEGORY: &str = "5";

/// How a judge model's answer is read: correct or not, or why it cannot be read.
type ReadVerdict = fn(&str) -> Result<bool, String>;

/// The judge model's verdict on `answer`; a `judge_error` when its call failed or its answer
/// stayed unreadable ([`ModelJudge::ask`]).
async fn judge_verdict(
    judge: &ModelJudge,
    kind: DatasetKind,
    question: &Question,
    answer: &str,
    session: &str,
) -> Result<Verdict, TargetError> {
    let label = format!("{session}/{}", question.id);
    let (prompt, parse): (String, ReadVerdict) = match kind {
        DatasetKind::Longmemeval => (
            longmemeval_prompt(
                &question.category,
                question.abstention,
                &question.question,
                &question.answer,
                answer,
            ),
            parse_yes_no,
        ),
        DatasetKind::Locomo => (
            locomo_j_prompt(&question.question, &question.answer, answer),
            parse_label,
        ),
    };
    // The reply is kept as the judge wrote it, beside the verdict read from it.
    let (correct, reply) = judge
        .ask(&label, prompt, |text| {
            parse(text).map(|correct| (correct, text.to_owned()))
        })
        .await?;
    Ok(Verdict { correct, reply })
}

/// One conversation, run: what its ingestion did and its questions' results (in asking
/// order). A run directory keeps one per conversation as the checkpoint `--resume` keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationResult {
    pub conversation: String,
    pub ingestion: Ingestion,
    pub questions: Vec<QuestionResult>,
}

/// Runs `conversations` (`config.concurrency` at once); `on_done` sees each as it finishes.
/// Returned in the order given.
pub async fn run_conversations(
    run: &RunContext<'_>,
    conversations: &[Conversation],
    on_question: &dyn Fn(&QuestionResult),
    on_done: &dyn Fn(&ConversationResult),
) -> Vec<ConversationResult> {
    let mut outcomes: Vec<ConversationResult> =
        futures_util::stream::iter(conversations.iter().map(|c| async move {
            let (ingestion, mut questions) = run_conversation(run, c).await;
            for r in &questions {
                on_question(r);
            }
            questions.sort_by_key(|r| r.order);
            let done = ConversationResult {
                conversation: c.id.clone(),
                ingestion,
                questions,
            };
            on_done(&done);
            done
        }))
        .buffer_unordered(run.config.concurrency.max(1))
        .collect()
        .await;
    let position: BTreeMap<&str, usize> = conversations
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id.as_str(), i))
        .collect();
    outcomes.sort_by_key(|o| position.get(o.conversation.as_str()).copied());
    outcomes
}

/// Runs every selected conversation (`config.concurrency` at once) and summarises: what
/// `run.rs` does around its progress and run directory, for the tests of this module's rules.
#[cfg(test)]
pub(crate) async fn run(
    run: &RunContext<'_>,
    conversations: &[Conversation],
    on_question: &dyn Fn(&QuestionResult),
) -> MembenchResults {
    let started = Instant::now();
    let outcomes = run_conversations(run, conversations, on_question, &|_| {}).await;
    summarise_run(
        run.config,
        run.capabilities,
        run.judge.is_some(),
        outcomes,
        started.elapsed().as_secs_f64(),
    )
}

/// The results of a run from its conversations' (in plan order) and its wall time.
pub fn summarise_run(
    config: &MembenchConfig,
    capabilities: &MembenchCapabilities,
    judged: bool,
    outcomes: Vec<ConversationResult>,
    wall_seconds: f64,
) -> MembenchResults {
    let mut ingestion = BTreeMap::new();
    let mut questions = Vec::new();
    for mut outcome in outcomes {
        ingestion.insert(outcome.conversation, outcome.ingestion);
        questions.append(&mut outcome.questions);
    }
    let kind = config.dataset;
    let (overall, categories, speed) = summarise_all(kind, &questions, &ingestion, wall_seconds);
    let agent_recall_note = if config.protocol == Protocol::Context {
        Some("context mode ingests nothing: the agent's recall@k is not applicable".to_owned())
    } else if !capabilities.recall {
        Some(
            "the target does not offer POST /control/memory/recall (capability probe): the agent's recall@k is not applicable"
                .to_owned(),
        )
    } else {
        None
    };
    let comparability_note = (!capabilities.read_only_questions
        && config.protocol != Protocol::Context
        && !config.is_full())
    .then(|| {
        "the target did not show it answers questions without storing them (X-Memory-Write: off): an earlier question can leave memory a later one sees, so --only/--limit runs are not comparable with a full run"
            .to_owned()
    });
    let score_definition = match (kind, judged) {
        (DatasetKind::Locomo, _) => "LoCoMo token F1 as its evaluation code defines it (per category); J is Mem0's LLM-judge accuracy (categories 1-4)".to_owned(),
        (DatasetKind::Longmemeval, true) => "LongMemEval accuracy: the model judge's verdict with the authors' per-type prompts".to_owned(),
        (DatasetKind::Longmemeval, false) => "LongMemEval accuracy needs a model judge (--judge-endpoint): not applicable; the F1 column is a token-F1 stand-in, not the benchmark's metric".to_owned(),
    };
    MembenchResults {
        summary: Summary {
            dataset: kind,
            overall,
            categories,
            speed,
            agent_recall_note,
            comparability_note,
            score_definition,
        },
        ingestion,
        questions,
    }
}

#[cfg(test)]
mod tests {
    use super::super::dataset::fixtures::fixture;
    use super::super::dataset::load;
    use super::*;

    fn config() -> MembenchConfig {
        MembenchConfig {
            dataset: DatasetKind::Locomo,
            protocol: Protocol::Chat,
            api: Api::Chat,
            seed: 7,
            concurrency: 1,
            only: Vec::new(),
            exclude: Vec::new(),
            limit_conversations: None,
            limit_sessions: None,
            limit_questions: None,
            context_tokens: 1000,
            session_prefix: "t".to_owned(),
        }
    }

    #[test]
    fn selection_applies_only_exclude_and_limits() {
        let data = load(DatasetKind::Locomo, &fixture("locomo_small.json")).unwrap();
        let all = select(&data, &config());
        assert_eq!(all.iter().map(|c| c.questions.len()).sum::<usize>(), 7);
        let picked = select(
            &data,
            &MembenchConfig {
                only: vec!["conv-b".to_owned(), "conv-a-q2".to_owned()],
                exclude: vec!["conv-b-q2".to_owned()],
                ..config()
            },
        );
        let ids: Vec<&str> = picked
            .iter()
            .flat_map(|c| c.questions.iter().map(|q| q.id.as_str()))
            .collect();
        assert_eq!(ids, ["conv-a-q2", "conv-b-q1"]);
        let first_session = select(
            &data,
            &MembenchConfig {
                limit_sessions: Some(1),
                limit_conversations: Some(1),
                ..config()
            },
        );
        assert_eq!(first_session[0].sessions.len(), 1);
        let ids: Vec<&str> = first_session[0]
            .questions
            .iter()
            .map(|q| q.id.as_str())
            .collect();
        assert_eq!(
            ids,
            ["conv-a-q1"],
            "only questions whose evidence was ingested"
        );
    }

    #[test]
    fn question_order_is_seeded() {
        let data = load(DatasetKind::Locomo, &fixture("locomo_small.json")).unwrap();
        let c = &data.conversations[0];
        assert_eq!(question_order(7, c), question_order(7, c));
        let mut sorted = question_order(7, c);
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 1, 2, 3, 4]);
        assert!((0..20).any(|s| question_order(s, c) != question_order(7, c)));
    }

    #[test]
    fn session_ids_fit_the_wall() {
        assert_eq!(session_id("mb-1a", "conv 26/x"), "mb-1a-conv_26_x");
        assert_eq!(
            sessions_of(&["s1:1".to_owned(), "s1:2".to_owned(), "s2:1".to_owned()]),
            ["s1", "s2"]
        );
    }
}
