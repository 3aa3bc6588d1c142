//! The agent: one turn, start to finish, in two halves around the model.
//!
//! [`Agent::prepare`] (before the model):
//! 1. **recall**: working memory, ranked facts and standing items for the session at its clock;
//! 2. **extract**: what the new user turn teaches ([`crate::text::extract`], [`crate::text::lists`]), before the model runs
//!    so the reply can acknowledge exactly what was learned, and what standing items require.
//!
//! Then the model answers the [`PreparedTurn::prompt`] (standing rules and due reminders
//! included): as a whole reply ([`Agent::respond`]), as an upstream model's own completion, or as
//! its stream, relayed as it arrives ([`relay`]).
//!
//! [`Agent::commit`] (after the model):
//! 4. **promote**: important or repeated statements move to long-term memory ([`promote`]);
//! 5. **store**: the turn, its facts and the standing-item changes, atomically, guarded by the
//!    session epoch read in step 1.
//!
//! [`Agent::turn`] runs all of it and returns a [`TurnOutput`] for an API to encode. A reply or
//! completion is returned only after `commit`; a stream completes ([`StreamEvent::Done`]) only
//! after it. So a reply is never completed for a turn that was not stored, whatever API encodes
//! it.
//!
//! A turn that may use remote MCP tools ([`TurnInput::mcp`]) asks the model in rounds, calling
//! the tools between them ([`tools`]), and is committed once, after the last.

pub(crate) mod promote;
pub(crate) mod relay;
pub(crate) mod semantic;
pub(crate) mod tools;

use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use protocol::SessionId;
use protocol::control::{FactKind, FactSource};
use protocol::openai::{ChatCompletion, ChatCompletionRequest, ChatMessage};

use crate::llm::prompt::reply_text;
use crate::llm::{Acknowledgement, ChatModel, LlmError, ModelReply, Prompt, ResponsesTurn};
use crate::mcp::{McpOptions, McpServer, ToolEvent};
use crate::memory::ranking::{self, Terms};
use crate::memory::{
    EpisodeData, MemoryContext, MemoryError, MemoryStore, NewFact, RecallQuery, Recalled,
    StoredFact, TurnRole, TurnWrite, WorkingItem,
};
use crate::telemetry::{Metrics, sampling};
use crate::text::extract::{FactExtractor, Learned};
use crate::text::language::to_second_person;
use crate::text::lists;
use crate::text::standing::{self, Agenda};
use promote::PromotionEngine;
pub(crate) use relay::{StreamEvent, TurnStream};
use semantic::Semantic;
use tracing::Instrument as _;
use tracing::field::Empty;

#[derive(Debug, thiserror::Error)]
pub(crate) enum AgentError {
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error(transparent)]
    Model(#[from] LlmError),
    /// A bug: the relay of a stream panicked (its message is in the log).
    #[error("relaying the upstream stream failed")]
    RelayFailed,
}

/// What a turn produced: the model's answer, and what remote MCP tools did on the way to it.
pub(crate) struct Turned {
    pub output: TurnOutput,
    /// Each MCP server's listing, then each call, in order; empty for a turn without `mcp`
    /// tools.
    pub tools: Vec<ToolEvent>,
}

impl From<TurnOutput> for Turned {
    fn from(output: TurnOutput) -> Self {
        Self {
            output,
            tools: Vec::new(),
        }
    }
}

/// The model's answer, for an API to encode.
pub(crate) enum TurnOutput {
    /// The builtin model's reply; the turn is stored.
    Reply(ModelReply),
    /// An upstream model's own completion, passed through as it is; the turn is stored.
    Completion(ChatCompletion),
    /// An upstream model's stream, relayed as it arrives; the turn is stored before the stream
    /// completes ([`relay`]).
    Stream(TurnStream),
}

/// A step span (recall, chat, store): DEBUG, so that logs at INFO do not build it while the trace
/// exporter, whose filter takes DEBUG here (`telemetry.rs`), does; a server that exports nothing
/// then builds no step span (they were about 6 % of its CPU time per turn under load,
/// docs/benchmarks.md), and a log line inside a step still carries the request span. Nor is one
/// made in a request whose trace is not recorded ([`sampling::traced_here`]): a span that every
/// layer's filter turns off is still made by the registry, and each of its enters and exits
/// still passes through every layer.
macro_rules! step_span {
    ($($span:tt)*) => {
        if sampling::traced_here() {
            tracing::debug_span!($($span)*)
        } else {
            tracing::Span::none()
        }
    };
}

/// One validated turn, as the HTTP layer hands it over.
#[derive(Debug, Clone)]
pub(crate) struct TurnInput {
    /// The session whose memory the turn reads and writes; `None` for a request that belongs to
    /// no session, which is answered without memory and stores nothing.
    pub session: Option<SessionId>,
    /// The session clock: `X-Mock-Time`, or the real clock.
    pub now: DateTime<Utc>,
    /// The new user turn.
    pub user_text: String,
    /// Messages before the new turn: the client's context, used but not stored.
    pub history: Vec<ChatMessage>,
    pub request: ChatCompletionRequest,
    /// A Responses API turn in that API's terms, for an upstream model that serves it; `None` for
    /// a chat turn, and wherever the model would not use it.
    pub responses: Option<ResponsesTurn>,
    /// The request continues a turn already stored: messages (tool results, an assistant message)
    /// follow the last user message. Nothing is learned from the user text again, standing items
    /// are not evaluated again, and only the reply is stored.
    pub continuation: bool,
    /// What the turn may write, and the provenance of what it writes.
    pub memory: TurnMemory,
    /// Remote MCP servers whose tools the model may use (a Responses request's `mcp` tools, each
    /// admitted by [`McpOptions::admit`]); empty for most turns.
    pub mcp: Vec<McpServer>,
}

/// How a turn treats memory besides reading it.
#[derive(Debug, Clone)]
pub(crate) struct TurnMemory {
    /// `false` (`X-Memory-Write: off`): the turn reads memory as usual and writes nothing, no
    /// working memory and no facts.
    pub write: bool,
    /// Ids the client gave the turn's messages (`X-Turn-Id`), in order. What the turn learns
    /// comes from the new user message, the last of them, so its facts and restatements carry
    /// that id.
    pub turn_ids: Vec<String>,
}

impl Default for TurnMemory {
    fn default() -> Self {
        Self {
            write: true,
            turn_ids: Vec::new(),
        }
    }
}

impl TurnMemory {
    /// The provenance of what the turn writes: the id of its new user message, if named.
    fn source_turn_ids(&self) -> Vec<String> {
        self.turn_ids.last().cloned().into_iter().collect()
    }
}

/// A turn between [`Agent::prepare`] and [`Agent::commit`]: what memory recalled and what the
/// turn will write once the reply is known.
#[derive(Debug)]
pub(crate) struct PreparedTurn {
    /// Private, so that the user text cannot change between `prepare` and `commit`: its words,
    /// worked out in `prepare`, are stored with it.
    input: TurnInput,
    /// The user text's content words: worked out once, for recall and the stored working item.
    user_terms: Terms,
    memory: MemoryContext,
    /// The user text's embedding, when semantic recall is on: recall's query, and the vector of
    /// the turn's user episode.
    query_vector: Option<Arc<[f32]>>,
    facts: Vec<NewFact>,
    acknowledgements: Vec<Acknowledgement>,
    agenda: Agenda,
    leftovers: Vec<String>,
}

impl PreparedTurn {
    /// What the model sees.
    pub(crate) fn prompt(&self) -> Prompt<'_> {
        Prompt {
            now: self.input.now,
            user_text: &self.input.user_text,
            history: &self.input.history,
            memory: &self.memory,
            learned: &self.acknowledgements,
            must_say: &self.agenda.must_say,
            request: &self.input.request,
            responses: self.input.responses.as_ref(),
        }
    }
}

pub(crate) struct Agent {
    store: Arc<dyn MemoryStore>,
    model: Arc<dyn ChatModel>,
    memory_enabled: bool,
    recall_limit: usize,
    episodes: bool,
    /// Semantic recall, when an embedder is configured.
    semantic: Option<Semantic>,
    extractor: FactExtractor,
    promotion: PromotionEngine,
    /// Where memory operations are timed.
    metrics: Arc<Metrics>,
    /// How turns use remote MCP tools.
    mcp: McpOptions,
}

/// How an [`Agent`] uses memory, and where it records what memory costs.
#[derive(Debug, Clone)]
pub(crate) struct AgentOptions {
    /// Read and write memory at all (`false`: a stateless model behind the same API).
    pub memory: bool,
    /// How many facts, and how many episodes, a turn recalls.
    pub recall_limit: usize,
    /// Keep every turn as an episode, and recall episodes beside facts.
    pub episodes: bool,
    /// The server's metrics: each recall and commit is timed in
    /// `agentwall_memory_operation_duration_seconds`. The default is a set of its own.
    pub metrics: Arc<Metrics>,
    /// Which MCP servers requests may name, and the bounds of their calls.
    pub mcp: McpOptions,
}

impl Default for AgentOptions {
    fn default() -> Self {
        Self {
            memory: true,
            recall_limit: 8,
            episodes: true,
            metrics: Arc::default(),
            mcp: McpOptions::default(),
        }
    }
}

impl Agent {
    pub(crate) fn new(
        store: Arc<dyn MemoryStore>,
        model: Arc<dyn ChatModel>,
        options: AgentOptions,
    ) -> Self {
        Self {
            store,
            model,
            memory_enabled: options.memory,
            recall_limit: options.recall_limit,
            episodes: options.episodes,
            semantic: None,
            extractor: FactExtractor,
            promotion: PromotionEngine::default(),
            metrics: options.metrics,
            mcp: options.mcp,
        }
    }

    /// How turns use remote MCP tools: what a request may name ([`McpOptions::admit`]).
    pub(crate) fn mcp(&self) -> &McpOptions {
        &self.mcp
    }

    /// The same agent with semantic recall: queries and new items are embedded with `semantic`.
    pub(crate) fn with_semantic(mut self, semantic: Semantic) -> Self {
        self.semantic = Some(semantic);
        self
    }

    /// The query's embedding, when semantic recall is on and the embedder answers.
    async fn query_vector(&self, text: &str) -> Option<Arc<[f32]>> {
        match &self.semantic {
            Some(semantic) => semantic.query(text).await,
            None => None,
        }
    }

    /// Writes facts outside a turn (the control plane's inject), embedded first when semantic
    /// recall is on.
    pub(crate) async fn inject(
        &self,
        session: &SessionId,
        mut facts: Vec<NewFact>,
    ) -> Result<Vec<StoredFact>, AgentError> {
        if let Some(semantic) = &self.semantic {
            semantic.embed_new(&mut facts, None).await;
        }
        Ok(self.store.inject(session, facts).await?)
    }

    pub(crate) fn store(&self) -> &Arc<dyn MemoryStore> {
        &self.store
    }

    pub(crate) fn model_name(&self) -> &str {
        self.model.name()
    }

    pub(crate) fn model(&self) -> &dyn ChatModel {
        self.model.as_ref()
    }

    /// The whole turn: prepare, the model's answer, commit. With an upstream model, its own
    /// completion is passed through, or, when the request streams, its stream is relayed and
    /// committed before it completes; errors up to the upstream's response head (429, 502, 504)
    /// are still returned here. A turn with remote MCP tools is answered whole, streamed or not
    /// ([`tools`]).
    pub(crate) async fn turn(self: &Arc<Self>, mut input: TurnInput) -> Result<Turned, AgentError> {
        if !input.mcp.is_empty() {
            let servers = std::mem::take(&mut input.mcp);
            return self.turn_with_tools(input, &servers).await;
        }
        let stream = input.request.is_stream();
        let include_usage = input.request.wants_stream_usage();
        let turn = self.prepare(input).await?;
        let output = match self.model.pass_through() {
            None => {
                let reply = self.respond(turn.prompt()).await?;
                self.commit(turn, &reply.text).await?;
                TurnOutput::Reply(reply)
            }
            Some(upstream) if !stream => {
                let completion = upstream.completion(turn.prompt()).await?;
                let text = completion
                    .choices
                    .first()
                    .map(|c| reply_text(&c.message))
                    .unwrap_or_default();
                self.commit(turn, &text).await?;
                TurnOutput::Completion(completion)
            }
            Some(upstream) => {
                let chunks = upstream.stream(turn.prompt()).await?;
                TurnOutput::Stream(TurnStream::start(
                    Arc::clone(self),
                    turn,
                    chunks,
                    include_usage,
                ))
            }
        };
        Ok(output.into())
    }

    /// Steps 1 and 2: recall, then extract what the turn teaches and what standing items require.
    async fn prepare(&self, input: TurnInput) -> Result<PreparedTurn, AgentError> {
        let session = self.memory_of(&input);
        let user_terms = if session.is_some() {
            Terms::of(&input.user_text)
        } else {
            Terms::default()
        };
        // 1. recall
        let query_vector = if session.is_some() {
            self.query_vector(&input.user_text).await
        } else {
            None
        };
        let memory = if let Some(session) = session {
            let span = step_span!(
                "recall",
                session.id = %session,
                memory.backend = self.store.backend(),
                memory.working = Empty,
                memory.facts = Empty,
                memory.standing = Empty,
            );
            let query = RecallQuery {
                now: input.now,
                terms: user_terms.clone(),
                limit: self.recall_limit,
                episode_limit: self.turn_episode_limit(),
                leave_out_working: true,
                vector: query_vector.clone(),
            };
            let started = Instant::now();
            let result = self
                .store
                .recall(session, query)
                .instrument(span.clone())
                .await;
            self.observe("recall", started, result.is_ok());
            let memory = result?;
            span.record("memory.working", memory.working.len());
            span.record("memory.facts", memory.facts.len());
            span.record("memory.standing", memory.standing.len());
            memory
        } else {
            MemoryContext::default()
        };

        // 2. extract (a continuation's user text was learned from when it was new)
        if input.continuation {
            return Ok(PreparedTurn {
                input,
                user_terms,
                memory,
                query_vector,
                facts: Vec::new(),
                acknowledgements: Vec::new(),
                agenda: Agenda::default(),
                leftovers: Vec::new(),
            });
        }
        let extraction = self.extractor.extract_turn(&input.user_text, input.now);
        let (facts, acknowledgements) = self.resolve(extraction.learned, &memory, input.now);
        let defined_rules: Vec<String> = facts
            .iter()
            .filter(|f| f.kind == FactKind::Rule)
            .filter_map(|f| f.key.clone())
            .collect();
        let agenda = standing::evaluate(
            &memory.standing,
            &input.user_text,
            input.now,
            &defined_rules,
        );
        Ok(PreparedTurn {
            input,
            user_terms,
            memory,
            query_vector,
            facts,
            acknowledgements,
            agenda,
            leftovers: extraction.leftovers,
        })
    }

    /// Step 3 for a whole reply: the model answers the turn's prompt.
    async fn respond(&self, prompt: Prompt<'_>) -> Result<ModelReply, LlmError> {
        if self.model.pass_through().is_some() {
            // Upstream models open their own model-call span.
            return self.model.complete(prompt).await;
        }
        let name = self.model.name();
        let span = step_span!(
            "chat",
            otel.name = %format!("chat {name}"),
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = "agentwall.builtin",
            gen_ai.request.model = %name,
            gen_ai.usage.input_tokens = Empty,
            gen_ai.usage.output_tokens = Empty,
            openinference.span.kind = "LLM",
        );
        let reply = self.model.complete(prompt).instrument(span.clone()).await?;
        span.record("gen_ai.usage.input_tokens", reply.usage.prompt_tokens);
        span.record("gen_ai.usage.output_tokens", reply.usage.completion_tokens);
        Ok(reply)
    }

    /// Steps 4 and 5: promote, then store the turn with the reply that was produced for it.
    /// Does nothing with memory off.
    async fn commit(&self, turn: PreparedTurn, reply_text: &str) -> Result<(), AgentError> {
        // The one place that decides whether a turn writes memory.
        let Some(session) = self.memory_of(&turn.input).cloned() else {
            return Ok(());
        };
        if !turn.input.memory.write {
            return Ok(());
        }
        let PreparedTurn {
            input,
            user_terms,
            memory,
            query_vector,
            mut facts,
            agenda,
            leftovers,
            ..
        } = turn;

        // 4. promote
        let promotion =
            self.promotion
                .promote(&leftovers, &memory.working, &memory.facts, input.now);
        facts.extend(promotion.facts);
        facts.extend(agenda.renew);
        let mut retire = agenda.retire;
        retire.extend(promotion.replaces);
        let mut restate = promotion.restated;
        let provenance = input.memory.source_turn_ids();
        if !provenance.is_empty() {
            for fact in &mut facts {
                fact.source_turn_ids.clone_from(&provenance);
            }
            for restated in &mut restate {
                restated.source_turn_ids.clone_from(&provenance);
            }
        }
        // Let go of the recalled memory before the commit: a store that shares working memory
        // with the contexts it handed out (the embedded cache) can then add this turn's items in
        // place instead of copying the list.
        let epoch = memory.epoch;
        drop(memory);

        // 5. store
        let span = step_span!(
            "store",
            session.id = %session,
            memory.backend = self.store.backend(),
            memory.facts_written = facts.len(),
            memory.facts_restated = restate.len(),
        );
        let speaker = speaker(&input.request);
        let reply = WorkingItem::new(TurnRole::Assistant, reply_text, input.now);
        let items = if input.continuation {
            vec![reply]
        } else {
            let user =
                WorkingItem::with_terms(TurnRole::User, input.user_text, input.now, user_terms);
            vec![user, reply]
        };
        if self.episodes {
            facts.extend(episodes(&items, speaker, &provenance));
        }
        if let Some(semantic) = &self.semantic {
            let user = items.iter().find(|i| i.role == TurnRole::User);
            let known = user
                .zip(query_vector.as_ref())
                .map(|(u, v)| (u.text.as_str(), v));
            semantic.embed_new(&mut facts, known).await;
        }
        let write = TurnWrite {
            items,
            facts,
            retire,
            restate,
            expected_epoch: Some(epoch),
        };
        let started = Instant::now();
        let result = self
            .store
            .commit_turn(&session, write)
            .instrument(span)
            .await;
        self.observe("commit", started, result.is_ok());
        result?;
        Ok(())
    }

    /// The session whose memory `input` reads and writes: none with memory off, or for a turn
    /// that belongs to no session.
    fn memory_of<'t>(&self, input: &'t TurnInput) -> Option<&'t SessionId> {
        input.session.as_ref().filter(|_| self.memory_enabled)
    }

    /// How many episodes a recall of `limit` facts also asks for.
    fn episode_limit(&self, limit: usize) -> usize {
        if self.episodes { limit } else { 0 }
    }

    /// How many episodes a turn recalls for its prompt: none for a model that does not read them.
    fn turn_episode_limit(&self) -> usize {
        if self.model.reads_episodes() {
            self.episode_limit(self.recall_limit)
        } else {
            0
        }
    }

    /// What a turn of `session` at `now` would recall for `text`: its ranked facts and episodes
    /// together, best first, at most `limit` (the recall of [`Agent::prepare`], without the
    /// turn). Facts and episodes are ranked apart (see [`MemoryContext`]), then as one list by
    /// the same rule ([`ranking::merge_lists`]). Nothing with memory off.
    pub(crate) async fn recall(
        &self,
        session: &SessionId,
        now: DateTime<Utc>,
        text: &str,
        limit: usize,
    ) -> Result<Vec<Recalled>, AgentError> {
        if !self.memory_enabled {
            return Ok(Vec::new());
        }
        let query = RecallQuery {
            now,
            terms: Terms::of(text),
            limit,
            episode_limit: self.episode_limit(limit),
            leave_out_working: false,
            vector: self.query_vector(text).await,
        };
        // With a query vector both backends fuse each list ([`ranking::fuse`]).
        let fused = query.vector.is_some();
        let started = Instant::now();
        let result = self.store.recall(session, query).await;
        self.observe("recall", started, result.is_ok());
        let context = result?;
        Ok(ranking::merge_lists(
            [context.facts, context.episodes],
            fused,
            limit,
        ))
    }

    fn observe(&self, operation: &str, started: Instant, ok: bool) {
        self.metrics
            .memory_duration
            .with_label_values(&[
                operation,
                self.store.backend(),
                if ok { "ok" } else { "error" },
            ])
            .observe(started.elapsed().as_secs_f64());
    }

    /// Turns what the extractor found into facts to store (list edits applied to the lists'
    /// current state) and into acknowledgements for the reply.
    fn resolve(
        &self,
        learned: Vec<Learned>,
        memory: &MemoryContext,
        now: DateTime<Utc>,
    ) -> (Vec<NewFact>, Vec<Acknowledgement>) {
        let mut facts = Vec::new();
        let mut acks = Vec::new();
        let mut edits = Vec::new();
        for l in learned {
            match l {
                Learned::Item(fact) => {
                    acks.push(acknowledgement(&fact));
                    facts.push(fact);
                }
                Learned::ListEdit(edit) => edits.push(edit),
            }
        }
        if !edits.is_empty() {
            let known: Vec<_> = memory.facts.iter().map(|r| &r.fact).collect();
            for list in lists::apply_edits(&edits, &known, now) {
                acks.push(Acknowledgement::List(to_second_person(&list.text)));
                facts.push(list);
            }
        }
        (facts, acks)
    }
}

fn acknowledgement(fact: &NewFact) -> Acknowledgement {
    let field = |name: &str| {
        fact.data
            .as_ref()
            .and_then(|d| d.get(name))
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_owned()
    };
    match fact.kind {
        FactKind::Rule => Acknowledgement::Rule {
            trigger: field("trigger"),
            reply: field("reply"),
        },
        FactKind::Reminder => Acknowledgement::Reminder(to_second_person(&fact.text)),
        // The extractor learns no episodes; were one acknowledged, it would read as a fact.
        FactKind::Fact | FactKind::Episode => Acknowledgement::Fact(to_second_person(&fact.text)),
    }
}

/// The turn's items as episodes: what the user said (with the speaker's name, when the message
/// gave one) and the reply, each with the provenance of the user message. A reply carries the id
/// of the turn it answers: that is where it came from, and a benchmark that names its turns
/// finds it there.
fn episodes<'a>(
    items: &'a [WorkingItem],
    speaker: Option<String>,
    provenance: &'a [String],
) -> impl Iterator<Item = NewFact> + 'a {
    items.iter().map(move |item| {
        let speaker = match item.role {
            TurnRole::User => speaker.clone(),
            TurnRole::Assistant => None,
        };
        NewFact::episode(
            EpisodeData {
                role: item.role,
                speaker,
            },
            item.text.clone(),
            item.at,
            FactSource::Extracted,
            provenance.to_vec(),
        )
    })
}

/// The name the client gave the new user message (OpenAI's `name`), if any.
fn speaker(request: &ChatCompletionRequest) -> Option<String> {
    request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == protocol::openai::Role::User)
        .and_then(|m| m.name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::builtin::BuiltinModel;
    use crate::memory::embedded::EmbeddedStore;

    /// An embedded store in `dir`, configured as in tests.
    async fn open_store(dir: &std::path::Path) -> EmbeddedStore {
        let config = crate::config::Config::for_tests(dir);
        EmbeddedStore::open(&dir.join("memory.sqlite3"), config.memory_config())
            .await
            .unwrap()
    }

    #[test]
    fn dropping_the_agent_outside_a_runtime_does_not_abort() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let agent = runtime.block_on(async {
            let store: Arc<dyn MemoryStore> = Arc::new(open_store(dir.path()).await);
            // A pooled connection now exists; closing it needs the runtime.
            let _ = store.health().await;
            Agent::new(
                store,
                Arc::new(BuiltinModel::new("builtin")),
                AgentOptions::default(),
            )
        });
        drop(runtime);
        drop(agent);
    }

    /// A model that records how many episodes each prompt it answers holds.
    struct EpisodeCounter {
        reads_episodes: bool,
        seen: std::sync::Mutex<Vec<usize>>,
    }

    #[async_trait::async_trait]
    impl ChatModel for EpisodeCounter {
        fn name(&self) -> &str {
            "episode-counter"
        }

        async fn complete(&self, prompt: Prompt<'_>) -> Result<ModelReply, LlmError> {
            self.seen.lock().unwrap().push(prompt.memory.episodes.len());
            Ok(ModelReply {
                text: "ok".to_owned(),
                tool_calls: Vec::new(),
                usage: protocol::openai::Usage::new(1, 1),
                finish_reason: protocol::openai::FinishReason::Stop,
            })
        }

        fn reads_episodes(&self) -> bool {
            self.reads_episodes
        }
    }

    /// Episodes are recalled for a model that reads them, and not for one that does not (the
    /// builtin model), whose turns then skip ranking the session's every episode.
    #[tokio::test]
    async fn a_turn_recalls_episodes_only_for_a_model_that_reads_them() {
        assert!(!BuiltinModel::new("builtin").reads_episodes());
        for reads_episodes in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let store = open_store(dir.path()).await;
            let model = Arc::new(EpisodeCounter {
                reads_episodes,
                seen: Default::default(),
            });
            let agent = Arc::new(Agent::new(
                Arc::new(store),
                Arc::clone(&model) as Arc<dyn ChatModel>,
                AgentOptions::default(),
            ));
            // The question a day later, once working memory (whose episodes a turn's recall
            // leaves out) has expired.
            for (day, text) in [
                "We hiked up Mount Tam on Sunday.",
                "Which mountain did we hike?",
            ]
            .into_iter()
            .enumerate()
            {
                let request: ChatCompletionRequest = serde_json::from_value(serde_json::json!({
                    "model": "m",
                    "messages": [{"role": "user", "content": text}]
                }))
                .unwrap();
                let input = TurnInput {
                    session: Some(SessionId::parse("episodes-read").unwrap()),
                    now: Utc::now() + chrono::Duration::days(day as i64),
                    user_text: text.to_owned(),
                    history: Vec::new(),
                    request,
                    responses: None,
                    continuation: false,
                    memory: TurnMemory::default(),
                    mcp: Vec::new(),
                };
                agent.turn(input).await.unwrap();
            }
            let seen = model.seen.lock().unwrap().clone();
            let expected = if reads_episodes { [0, 1] } else { [0, 0] };
            assert_eq!(seen, expected, "reads_episodes {reads_episodes}");
        }
    }

    /// The step spans are DEBUG: a subscriber at INFO, as logs are by default, never builds them;
    /// one at DEBUG, as the trace exporter's filter is for this module, gets all three, except
    /// in a request whose trace is not recorded.
    #[tokio::test]
    async fn a_turns_step_spans_are_built_only_below_info() {
        use tracing_subscriber::Layer as _;
        use tracing_subscriber::filter::LevelFilter;
        use tracing_subscriber::layer::SubscriberExt as _;

        use crate::telemetry::sampling::RequestTrace;
        use crate::telemetry::testing::Recorded;

        let dir = tempfile::tempdir().unwrap();
        let store = open_store(dir.path()).await;
        let agent = Arc::new(Agent::new(
            Arc::new(store),
            Arc::new(BuiltinModel::new("builtin")),
            AgentOptions::default(),
        ));
        let request: ChatCompletionRequest = serde_json::from_value(serde_json::json!({
            "model": "builtin",
            "messages": [{"role": "user", "content": "My kayak is green."}]
        }))
        .unwrap();
        for (level, recorded_trace, expected) in [
            (LevelFilter::INFO, true, vec![]),
            (LevelFilter::DEBUG, true, vec!["recall", "chat", "store"]),
            (LevelFilter::DEBUG, false, vec![]),
        ] {
            let recorded = Recorded::default();
            let subscriber =
                tracing_subscriber::registry().with(recorded.clone().with_filter(level));
            let _default = tracing::subscriber::set_default(subscriber);
            let input = TurnInput {
                session: Some(SessionId::parse("spans").unwrap()),
                now: Utc::now(),
                user_text: "My kayak is green.".to_owned(),
                history: Vec::new(),
                request: request.clone(),
                responses: None,
                continuation: false,
                memory: TurnMemory::default(),
                mcp: Vec::new(),
            };
            let trace = if recorded_trace {
                // No sampler is installed in unit tests: recorded, as when nothing is exported.
                RequestTrace::decide(opentelemetry::Context::new())
            } else {
                RequestTrace::unrecorded()
            };
            let output = sampling::within(trace, agent.turn(input)).await.unwrap();
            assert!(matches!(output.output, TurnOutput::Reply(_)));
            assert_eq!(
                recorded.take(),
                expected,
                "at {level}, recorded {recorded_trace}"
            );
        }
    }
}
