//! The builtin model: a deterministic, offline responder. It exists so the whole system works with
//! no model and no network, and so benchmarks can tell memory on from memory off. It never invents:
//! an answer either quotes memory back to the user or says it does not know.
//!
//! Reply = what standing items require (rule replies, due reminders), then an answer to each
//! question from memory, or else an acknowledgement of what was learned.

use std::borrow::Cow;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use lru::LruCache;
use protocol::openai::{FinishReason, Role, ToolCall, Usage};

use super::actions::{Catalogue, Style, app_turn};
use super::{Acknowledgement, ChatModel, LlmError, ModelReply, Prompt, approximate_tokens};
use crate::memory::TurnRole;
use crate::memory::ranking::query_terms;
use crate::text::extract::FactExtractor;
use crate::text::language::{is_question, sentences, to_second_person, trim_sentence};
use crate::text::standing::Obligation;

/// Said when memory holds nothing relevant.
pub const DONT_KNOW: &str = "I don't know; you haven't told me that.";

/// The builtin model: answers from what memory and the conversation hold, reading text with
/// [`crate::text`]. It keeps what recent texts say ([`Readings`]), since each turn re-reads the
/// conversation's user texts; that cache is the model's own, so two models share nothing.
#[derive(Debug, Clone)]
pub struct BuiltinModel {
    name: String,
    readings: Arc<Readings>,
}

impl BuiltinModel {
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            readings: Arc::default(),
        }
    }
}

#[async_trait]
impl ChatModel for BuiltinModel {
    fn name(&self) -> &str {
        &self.name
    }

    /// It answers from facts, working memory and the conversation ([`Knowledge`]), never from
    /// episodes.
    fn reads_episodes(&self) -> bool {
        false
    }

    async fn complete(&self, prompt: Prompt<'_>) -> Result<ModelReply, LlmError> {
        let (text, tool_calls) = respond_with_actions(&prompt, &self.readings);
        let prompt_tokens = approximate_tokens(prompt.user_text)
            + prompt
                .history
                .iter()
                .filter_map(|m| m.text_content())
                .map(|t| approximate_tokens(&t))
                .sum::<u32>();
        let (text, mut finish_reason) = truncate(text, prompt.request.token_limit());
        if !tool_calls.is_empty() {
            finish_reason = FinishReason::ToolCalls;
        }
        Ok(ModelReply {
            usage: Usage::new(prompt_tokens, approximate_tokens(&text)),
            text,
            tool_calls,
            finish_reason,
        })
    }
}

/// The reply, with app actions when the request offers apps ([`actions`]): tool calls in tool
/// mode, `APP_ACTION:` lines in directive mode. A turn about the apps (an action asked for, or
/// results reported back) is answered with what was done and what happened; any other turn by
/// [`respond`].
fn respond_with_actions(prompt: &Prompt<'_>, readings: &Readings) -> (String, Vec<ToolCall>) {
    let Some(catalogue) = Catalogue::from_request(prompt.request) else {
        return (respond(prompt, readings), Vec::new());
    };
    let remembered: Vec<&str> = prompt
        .memory
        .working
        .iter()
        .filter(|item| item.role == TurnRole::User)
        .map(|item| item.text.as_str())
        .collect();
    let turn = app_turn(&catalogue, prompt.user_text, prompt.history, &remembered);
    if turn.is_empty() {
        return (respond(prompt, readings), Vec::new());
    }
    let mut parts = obligations(prompt);
    parts.extend(turn.updates.iter().cloned());
    parts.extend(turn.actions.iter().map(|a| a.announcement.clone()));
    let mut text = parts.join(" ");
    let mut calls = Vec::new();
    match catalogue.style {
        Style::Directives => {
            for action in &turn.actions {
                text.push('\n');
                text.push_str(&action.directive());
            }
        }
        Style::Tools => {
            // Ids unique within the conversation and the same for the same input.
            let base = prompt.history.len();
            calls = turn
                .actions
                .iter()
                .enumerate()
                .map(|(i, a)| a.tool_call(format!("call_{base}_{i}")))
                .collect();
        }
    }
    (text, calls)
}

/// What standing rules and due reminders require this reply to say, in order.
fn obligations(prompt: &Prompt<'_>) -> Vec<String> {
    prompt
        .must_say
        .iter()
        .map(|o| match o {
            Obligation::RuleReply(t) | Obligation::Say(t) => t.clone(),
            Obligation::Reminder(t) => format!("Reminder: {t}."),
        })
        .collect()
}

/// Honours `max_tokens` the way real models do: cut the reply and say `length`.
fn truncate(text: String, limit: Option<u32>) -> (String, FinishReason) {
    let Some(limit) = limit else {
        return (text, FinishReason::Stop);
    };
    if approximate_tokens(&text) <= limit {
        return (text, FinishReason::Stop);
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut kept = Vec::new();
    for word in words {
        kept.push(word);
        if approximate_tokens(&kept.join(" ")) >= limit {
            break;
        }
    }
    (kept.join(" "), FinishReason::Length)
}

/// The reply text for a prompt. Pure: same prompt, same reply (`readings` only saves reading a
/// text again).
fn respond(prompt: &Prompt<'_>, readings: &Readings) -> String {
    let mut parts = obligations(prompt);

    let questions: Vec<&str> = sentences(prompt.user_text)
        .into_iter()
        .filter(|s| is_question(s))
        .collect();
    let rule_fired = prompt
        .must_say
        .iter()
        .any(|o| matches!(o, Obligation::RuleReply(_)));
    if !questions.is_empty() {
        let knowledge = Knowledge::gather(prompt, readings);
        parts.extend(
            questions
                .iter()
                .take(3)
                .map(|q| match clock_question(q, prompt.now) {
                    Some(answer) => answer,
                    None => knowledge.answer(q),
                }),
        );
    } else if !prompt.learned.is_empty() {
        parts.extend(prompt.learned.iter().map(acknowledge));
    } else if !rule_fired && parts.is_empty() {
        parts.push(small_talk(prompt.user_text));
    }
    parts.join(" ")
}

/// "What is today's date?", "What day is it?": answered from the session clock, which is how a
/// client can see that `X-Mock-Time` moved it.
fn clock_question(question: &str, now: chrono::DateTime<chrono::Utc>) -> Option<String> {
    let q = question.to_lowercase();
    let asks_date = q.contains("today's date")
        || q.contains("todays date")
        || q.contains("date today")
        || q.contains("what day is it")
        || q.contains("what is the date")
        || q.contains("what's the date");
    asks_date.then(|| format!("Today is {}.", crate::text::dates::describe_date(now)))
}

fn acknowledge(learned: &Acknowledgement) -> String {
    match learned {
        Acknowledgement::Fact(s) => format!("Noted: {}", lowercase_first(&ensure_period(s))),
        Acknowledgement::Rule { trigger, reply } => {
            format!("Understood: whenever you say \"{trigger}\", I will reply \"{reply}\".")
        }
        // The reminder's content is not repeated: it is to be said when due, not before.
        Acknowledgement::Reminder(_) => "OK, I will remind you when it is due.".to_owned(),
        Acknowledgement::List(s) => format!("Updated. {}", ensure_period(s)),
    }
}

/// "You have visited Oslo." → "you have visited Oslo.", for use after "Noted: ".
fn lowercase_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) if !s.starts_with("I ") => first.to_lowercase().chain(chars).collect(),
        _ => s.to_owned(),
    }
}

fn ensure_period(s: &str) -> String {
    format!("{}.", trim_sentence(s))
}

fn small_talk(text: &str) -> String {
    let lower = text.trim().to_lowercase();
    let greeting = [
        "hello",
        "hi",
        "hey",
        "good morning",
        "good evening",
        "good afternoon",
    ]
    .iter()
    .any(|g| {
        // The greeting alone, or followed by a space, a comma or "!".
        lower
            .strip_prefix(g)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', ',', '!']))
    });
    if greeting {
        "Hello! Tell me anything you want me to remember, or ask me about what you told me.".into()
    } else if lower.is_empty() {
        "I'm listening.".into()
    } else {
        "Noted.".into()
    }
}

/// What one user text says, as [`Knowledge`] reads it: the facts extracted from it (key and
/// text) in order, and the statements nothing was extracted from.
#[derive(Debug, PartialEq)]
struct Said {
    facts: Vec<(Option<String>, String)>,
    leftovers: Vec<String>,
}

/// Texts up to this long are remembered with what they say ([`Readings::of`]).
const REMEMBERED_TEXT_BYTES: usize = 2048;

/// How many texts are remembered: at most about 4096 × 2 KiB and what they say.
const REMEMBERED_TEXTS: usize = 4096;

/// What recent texts say, by text, for [`REMEMBERED_TEXTS`] texts. Only texts without a relative
/// time expression are kept: what is read from them is the same at any time.
#[derive(Debug)]
struct Readings(Mutex<LruCache<Box<str>, Arc<Said>>>);

impl Default for Readings {
    fn default() -> Self {
        Self(Mutex::new(LruCache::new(
            NonZeroUsize::new(REMEMBERED_TEXTS).expect("not zero"),
        )))
    }
}

impl Readings {
    /// What `text` says at `now`: extracted ([`Said::read`]), or remembered from an earlier
    /// answer. A question is answered from every user message of the conversation and of working
    /// memory, so without this each turn of a conversation extracts from all of its history again
    /// (most of what a turn continuing a ten-response chain added, docs/results/responses-api.md).
    fn of(&self, text: &str, now: chrono::DateTime<chrono::Utc>) -> Arc<Said> {
        if text.len() > REMEMBERED_TEXT_BYTES {
            return Arc::new(Said::read(text, now));
        }
        let lock = || {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        // Only texts that hold no relative date are ever kept, so a remembered one is good now.
        if let Some(said) = lock().get(text) {
            return Arc::clone(said);
        }
        let said = Arc::new(Said::read(text, now));
        if !crate::text::dates::mentions_relative_time(text) {
            lock().put(text.into(), Arc::clone(&said));
        }
        said
    }
}

impl Said {
    /// Extracts what `text` says at `now`.
    fn read(text: &str, now: chrono::DateTime<chrono::Utc>) -> Self {
        let extraction = FactExtractor.extract_turn(text, now);
        let facts = extraction
            .learned
            .into_iter()
            .filter_map(|learned| match learned {
                crate::text::extract::Learned::Item(f)
                    if f.kind == protocol::control::FactKind::Fact =>
                {
                    Some((f.key, f.text))
                }
                _ => None,
            })
            .collect();
        Self {
            facts,
            leftovers: extraction.leftovers,
        }
    }
}

/// What the model can answer from: recalled facts, plus statements from working memory and the
/// client's history that the extractor kept nothing from (keyed statements are answered from
/// long-term memory, where only their current value lives).
struct Knowledge<'p> {
    facts: Vec<Candidate<'p>>,
    statements: Vec<Candidate<'p>>,
}

struct Candidate<'p> {
    text: Cow<'p, str>,
    key: Option<Cow<'p, str>>,
    score: f64,
}

impl<'p> Knowledge<'p> {
    fn gather(prompt: &'p Prompt<'p>, readings: &Readings) -> Self {
        let facts = prompt
            .memory
            .facts
            .iter()
            .map(|r| Candidate {
                text: r.fact.text.as_str().into(),
                key: r.fact.key.as_deref().map(Cow::Borrowed),
                score: r.score,
            })
            .collect();
        // The client's own history: with memory off and `--history full`, this is all there is.
        // Keyed statements in it supersede in order, like long-term memory would.
        let mut history_facts: Vec<(Option<String>, String)> = Vec::new();
        let user_history = prompt
            .history
            .iter()
            .filter(|m| m.role == Role::User)
            .filter_map(|m| m.text_content());
        let working = prompt
            .memory
            .working
            .iter()
            .filter(|w| w.role == TurnRole::User)
            .map(|w| w.text.clone());
        // The statements of the current message itself, last: "My favourite colour is teal.
        // What is my favourite colour?" in one message is answered from it, as a generic
        // harness sends exactly that.
        let current: String = sentences(prompt.user_text)
            .into_iter()
            .filter(|s| !is_question(s))
            .collect::<Vec<_>>()
            .join(" ");
        let current = Some(current).filter(|c| !c.trim().is_empty());
        for text in working.chain(user_history).chain(current) {
            let said = readings.of(&text, prompt.now);
            for (key, text) in &said.facts {
                history_facts.retain(|(k, _)| key.is_none() || k != key);
                history_facts.push((key.clone(), text.clone()));
            }
            history_facts.extend(said.leftovers.iter().map(|s| (None, s.clone())));
        }
        let statements = history_facts
            .into_iter()
            .map(|(key, text)| Candidate {
                text: text.into(),
                key: key.map(Cow::Owned),
                score: 0.0,
            })
            .collect();
        Self { facts, statements }
    }

    fn answer(&self, question: &str) -> String {
        let q_terms = query_terms(question);
        if q_terms.is_empty() {
            return DONT_KNOW.to_owned();
        }
        let overlap = |text: &str| {
            let t = query_terms(text);
            q_terms
                .iter()
                .filter(|q| t.iter().any(|w| same_word(w, q)))
                .count()
        };
        // Facts whose key is fully named in the question answer it first.
        let key_match = |c: &Candidate<'_>| {
            c.key.as_deref().is_some_and(|k| {
                let k_terms = query_terms(k.trim_start_matches("list:"));
                !k_terms.is_empty()
                    && k_terms
                        .iter()
                        .all(|k| q_terms.iter().any(|q| same_word(q, k)))
            })
        };
        let mut ranked: Vec<(usize, f64, &Candidate<'_>)> = self
            .facts
            .iter()
            .chain(&self.statements)
            .filter_map(|c| {
                let words = overlap(&c.text);
                // A keyed fact answers when the question names its key, or when it covers every
                // content word of the question ("where do I live" → "I live in Lisbon"). An
                // unkeyed statement needs at least half of them. Sharing one word ("favourite")
                // is not enough: answering "favourite band" with the favourite colour is invention.
                let named = key_match(c);
                let qualifies = named
                    || (c.key.is_some() && words == q_terms.len())
                    || (c.key.is_none() && words > 0 && words * 2 >= q_terms.len());
                let bonus = if named { 10 } else { 0 };
                qualifies.then_some((words + bonus, c.score, c))
            })
            .collect();
        // Most words in common first, then the store's ranking; the order of `facts` then
        // `statements` (newest last) breaks the remaining ties deterministically.
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.total_cmp(&a.1)));
        let Some(best) = ranked.first().map(|r| r.0) else {
            return DONT_KNOW.to_owned();
        };
        let chosen: Vec<&Candidate<'_>> = ranked
            .iter()
            .filter(|r| r.0 * 2 >= best)
            .take(MAX_ANSWER_LINES)
            .map(|r| r.2)
            .collect();
        let mut said: Vec<String> = Vec::new();
        let mut say = |text: &str| {
            let line = to_second_person(&ensure_period(text));
            if !said.contains(&line) {
                said.push(line);
            }
        };
        for c in &chosen {
            say(&c.text);
        }
        // One hop: "my sister is called Ana" answers "where does my sister live?" together with
        // "Ana lives in Oslo". Follow names in the key-matched facts to facts about those names
        // that share a remaining word of the question.
        for c in chosen.iter().filter(|c| key_match(c)) {
            for name in proper_names(&c.text) {
                let hop = self.facts.iter().chain(&self.statements).find(|other| {
                    !std::ptr::eq(*c, *other)
                        && crate::text::language::contains_phrase(&other.text, &name)
                        && overlap(&other.text) > 0
                });
                if let Some(hop) = hop {
                    say(&hop.text);
                }
            }
        }
        said.join(" ")
    }
}

/// At most this many memories in one answer (an accumulated list can be long).
const MAX_ANSWER_LINES: usize = 8;

/// Capitalised words that are not the first word of the text: the names a statement mentions.
fn proper_names(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .skip(1)
        .filter(|w| w.chars().next().is_some_and(char::is_uppercase) && *w != "I")
        .map(str::to_owned)
        .collect()
}

/// "lives" matches "live", "colours" matches "colour": a crude stem, enough for recall wording.
fn same_word(a: &str, b: &str) -> bool {
    // Borrowed, not copied: this runs for every word pair of every candidate an answer weighs.
    fn stem(w: &str) -> &str {
        w.trim_end_matches("ing")
            .trim_end_matches("ed")
            .trim_end_matches('s')
    }
    a == b || stem(a) == stem(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use crate::memory::{Fact, MemoryContext, NewFact, Recalled, WorkingItem};
    use chrono::{DateTime, Utc};
    use protocol::control::{FactKind, FactSource};
    use protocol::openai::{ChatCompletionRequest, ChatMessage};

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-03-01T09:00:00Z")
            .unwrap()
            .to_utc()
    }

    fn recalled(key: Option<&str>, text: &str) -> Recalled {
        Recalled {
            fact: Fact::from_new(NewFact {
                embedding: None,
                source_turn_ids: Vec::new(),
                kind: FactKind::Fact,
                key: key.map(str::to_owned),
                text: text.into(),
                data: None,
                observed_at: now(),
                importance: 0.5,
                source: FactSource::Extracted,
            }),
            score: 1.0,
            why: crate::memory::RecallWhy::default(),
        }
    }

    fn reply(
        user: &str,
        memory: &MemoryContext,
        history: &[ChatMessage],
        must_say: &[Obligation],
        learned: &[Acknowledgement],
    ) -> String {
        let request = ChatCompletionRequest::default();
        respond(
            &Prompt {
                now: now(),
                user_text: user,
                history,
                memory,
                learned,
                must_say,
                request: &request,
                responses: None,
            },
            &Readings::default(),
        )
    }

    #[test]
    fn answers_from_recalled_facts_in_second_person() {
        let memory = MemoryContext {
            facts: vec![recalled(
                Some("favourite colour"),
                "My favourite colour is teal.",
            )],
            ..Default::default()
        };
        let r = reply("What is my favourite colour?", &memory, &[], &[], &[]);
        assert_eq!(r, "Your favourite colour is teal.");
    }

    proptest::proptest! {
        #[test]
        fn any_text_gets_a_deterministic_reply(text in "\\PC{0,200}") {
            let memory = MemoryContext { facts: vec![recalled(Some("favourite colour"), "My favourite colour is teal.")], ..Default::default() };
            let a = reply(&text, &memory, &[], &[], &[]);
            proptest::prop_assert_eq!(&a, &reply(&text, &memory, &[], &[], &[]));
        }
    }

    #[test]
    fn multi_hop_follows_a_name_to_the_fact_about_it() {
        let memory = MemoryContext {
            facts: vec![
                recalled(Some("sister"), "My sister is called Ana."),
                recalled(Some("brother"), "My brother is called Bruno."),
                recalled(Some("ana home"), "Ana lives in Oslo."),
                recalled(Some("bruno home"), "Bruno lives in Kyoto."),
            ],
            ..Default::default()
        };
        let r = reply("In which city does my sister live?", &memory, &[], &[], &[]);
        assert!(r.contains("Oslo") && !r.contains("Kyoto"), "{r}");
    }

    #[test]
    fn accumulated_statements_are_all_named() {
        let memory = MemoryContext {
            facts: ["Lisbon", "Oslo", "Quito", "Hanoi"]
                .iter()
                .map(|c| recalled(None, &format!("I have visited {c}.")))
                .collect(),
            ..Default::default()
        };
        let r = reply("Which cities have I visited?", &memory, &[], &[], &[]);
        for c in ["Lisbon", "Oslo", "Quito", "Hanoi"] {
            assert!(r.contains(c), "{c} missing: {r}");
        }
    }

    #[test]
    fn the_date_comes_from_the_session_clock() {
        assert_eq!(
            reply(
                "What is today's date?",
                &MemoryContext::default(),
                &[],
                &[],
                &[]
            ),
            "Today is 2026-03-01 (Sunday, 1 March 2026)."
        );
    }

    #[test]
    fn says_it_does_not_know_instead_of_inventing() {
        let memory = MemoryContext {
            facts: vec![recalled(
                Some("favourite colour"),
                "My favourite colour is teal.",
            )],
            ..Default::default()
        };
        assert_eq!(
            reply("What is my dog's name?", &memory, &[], &[], &[]),
            DONT_KNOW
        );
        assert_eq!(
            reply("What is my favourite band?", &memory, &[], &[], &[]),
            DONT_KNOW
        );
        assert_eq!(
            reply(
                "What is my favourite colour?",
                &MemoryContext::default(),
                &[],
                &[],
                &[]
            ),
            DONT_KNOW
        );
    }

    /// A text is remembered with what it says only when that does not depend on the time: one
    /// with a relative date is read again at each time.
    #[test]
    fn what_a_text_says_is_remembered_only_when_it_does_not_depend_on_the_time() {
        let readings = Readings::default();
        let later = now() + chrono::Duration::days(3);
        let timeless = "My favourite colour is teal. I like long walks.";
        assert_eq!(*readings.of(timeless, now()), Said::read(timeless, later));
        assert!(
            Arc::ptr_eq(&readings.of(timeless, now()), &readings.of(timeless, later)),
            "remembered"
        );
        let dated = "My dentist appointment is tomorrow.";
        assert_ne!(Said::read(dated, now()), Said::read(dated, later));
        assert_eq!(*readings.of(dated, later), Said::read(dated, later));
        assert_eq!(*readings.of(dated, now()), Said::read(dated, now()));
        let long = "My favourite colour is teal. ".repeat(100);
        assert!(!Arc::ptr_eq(
            &readings.of(&long, now()),
            &readings.of(&long, now())
        ));
    }

    #[test]
    fn answers_from_working_memory_and_client_history() {
        let memory = MemoryContext {
            working: vec![Arc::new(WorkingItem::new(
                TurnRole::User,
                "I had pasta for lunch.",
                now(),
            ))]
            .into(),
            ..Default::default()
        };
        assert_eq!(
            reply("What did I have for lunch?", &memory, &[], &[], &[]),
            "You had pasta for lunch."
        );
        let history = [
            ChatMessage::user("My car is a red Volvo."),
            ChatMessage::assistant("Noted."),
            ChatMessage::user("My car is a blue Fiat."),
        ];
        assert_eq!(
            reply(
                "What car do I have?",
                &MemoryContext::default(),
                &history,
                &[],
                &[]
            ),
            "Your car is a blue Fiat."
        );
    }

    #[test]
    fn answers_from_what_the_message_itself_says() {
        let memory = MemoryContext::default();
        let request = ChatCompletionRequest::default();
        let prompt = Prompt {
            now: now(),
            user_text: "My favourite colour is teal. What is my favourite colour?",
            history: &[],
            memory: &memory,
            learned: &[],
            must_say: &[],
            request: &request,
            responses: None,
        };
        let reply = respond(&prompt, &Readings::default());
        assert!(reply.contains("teal"), "{reply}");
    }

    #[test]
    fn small_talk_greets_a_greeting_only() {
        const HELLO: &str =
            "Hello! Tell me anything you want me to remember, or ask me about what you told me.";
        for greeting in [
            "hello",
            "Hi",
            "hey!",
            "Good morning, agent",
            "hi there",
            " hey ",
        ] {
            assert_eq!(small_talk(greeting), HELLO, "{greeting:?}");
        }
        for other in ["history is fun", "heyday", "hi-fi", "good", "hello-world"] {
            assert_eq!(small_talk(other), "Noted.", "{other:?}");
        }
        assert_eq!(small_talk("  "), "I'm listening.");
    }

    #[test]
    fn obligations_lead_and_acknowledgements_follow_statements() {
        let r = reply(
            "banana",
            &MemoryContext::default(),
            &[],
            &[Obligation::RuleReply("mango".into())],
            &[],
        );
        assert_eq!(r, "mango");
        let r = reply(
            "My cat is Tom.",
            &MemoryContext::default(),
            &[],
            &[Obligation::Reminder("call mum".into())],
            &[Acknowledgement::Fact("your cat is Tom".into())],
        );
        assert_eq!(r, "Reminder: call mum. Noted: your cat is Tom.");
        let r = reply(
            "I have visited Oslo.",
            &MemoryContext::default(),
            &[],
            &[],
            &[Acknowledgement::Fact("You have visited Oslo.".into())],
        );
        assert_eq!(r, "Noted: you have visited Oslo.");
    }

    #[tokio::test]
    async fn honours_max_tokens_with_length_finish() {
        let memory = MemoryContext::default();
        let request = ChatCompletionRequest {
            max_tokens: Some(3),
            ..Default::default()
        };
        let model = BuiltinModel::new("m");
        let out = model
            .complete(Prompt {
                now: now(),
                user_text: "hello",
                history: &[],
                memory: &memory,
                learned: &[],
                must_say: &[],
                request: &request,
                responses: None,
            })
            .await
            .unwrap();
        assert_eq!(out.finish_reason, FinishReason::Length);
        assert!(approximate_tokens(&out.text) <= 4, "{}", out.text);
    }
}
