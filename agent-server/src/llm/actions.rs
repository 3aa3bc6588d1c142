//! The builtin model's hands: clear imperative requests ("send bob $30", "what is my balance?")
//! become app actions, as docs/contracts/apps.md lets an agent act on simulated applications.
//!
//! Nothing about the apps is assumed. What the client offers is read from the request itself
//! ([`Catalogue::from_request`]): OpenAI `tools` named `app__action` (tool mode), or a system
//! message that teaches the `APP_ACTION:` syntax and lists `- app.action(params): ...` lines
//! (directive mode). An intent is acted on only when the catalogue offers an action of that name;
//! without a catalogue this module does nothing and the model chats as usual.
//!
//! Intents are recognised by pattern, like the rest of the builtin model: the verbs of payments
//! (`transfer`, `request_money`, `pay_request`, `decline_request`, `check_balance`,
//! `view_transactions`). Results come back as `tool` messages (tool mode) or as notifications at
//! the top of the next user message (directive mode, `[App notifications]`); [`AppTurn`] restates
//! them, so the user hears what happened, failures included, in the app's own words.

use std::sync::LazyLock;

use protocol::apps::NOTIFICATIONS_HEADER;
pub use protocol::apps::{DIRECTIVE_MARKER, TOOL_SEPARATOR};
use protocol::openai::{ChatCompletionRequest, ChatMessage, FunctionCall, Role, ToolCall};
use regex::Regex;
use serde_json::{Map, Number, Value};

/// How the client wants actions expressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `tool_calls` in the reply.
    Tools,
    /// `APP_ACTION: app.action(k=v)` lines in the reply text.
    Directives,
}

/// The actions a request offers, as `(app, action)` pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalogue {
    pub style: Style,
    actions: Vec<(String, String)>,
}

static DIRECTIVE_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^\s*-\s*([A-Za-z][\w-]*)\.([A-Za-z_]\w*)\(").expect("valid regex")
});

impl Catalogue {
    /// The catalogue a request offers, if any: its tools win over a directive description.
    pub fn from_request(request: &ChatCompletionRequest) -> Option<Self> {
        let from_tools: Vec<(String, String)> = request
            .tools
            .iter()
            .flatten()
            .filter_map(|tool| tool.function.name.split_once(TOOL_SEPARATOR))
            .map(|(app, action)| (app.to_owned(), action.to_owned()))
            .collect();
        if !from_tools.is_empty() {
            return Some(Self {
                style: Style::Tools,
                actions: from_tools,
            });
        }
        let actions: Vec<(String, String)> = request
            .messages
            .iter()
            .filter(|m| m.role == Role::System)
            .filter_map(|m| m.text_content())
            .filter(|text| text.contains(DIRECTIVE_MARKER))
            .flat_map(|text| {
                DIRECTIVE_LINE
                    .captures_iter(&text)
                    .map(|c| (c[1].to_owned(), c[2].to_owned()))
                    .collect::<Vec<_>>()
            })
            .collect();
        (!actions.is_empty()).then_some(Self {
            style: Style::Directives,
            actions,
        })
    }

    /// The app offering `action`, the first one listed when several do.
    fn app_for(&self, action: &str) -> Option<&str> {
        self.actions
            .iter()
            .find(|(_, a)| a == action)
            .map(|(app, _)| app.as_str())
    }
}

/// One action the model decided to take.
#[derive(Debug, Clone, PartialEq)]
pub struct Action {
    pub app: String,
    pub name: String,
    pub params: Map<String, Value>,
    /// What the reply says about it ("Sending $30 to bob.").
    pub announcement: String,
}

impl Action {
    /// `APP_ACTION: app.action(k="v", n=1)`, strings quoted and escaped.
    pub fn directive(&self) -> String {
        let args: Vec<String> = self
            .params
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={}", Value::String(s.clone())),
                other => format!("{k}={other}"),
            })
            .collect();
        format!(
            "{DIRECTIVE_MARKER} {}.{}({})",
            self.app,
            self.name,
            args.join(", ")
        )
    }

    pub fn tool_call(&self, id: String) -> ToolCall {
        ToolCall {
            id,
            kind: "function".to_owned(),
            function: FunctionCall {
                name: format!("{}{TOOL_SEPARATOR}{}", self.app, self.name),
                arguments: Value::Object(self.params.clone()).to_string(),
            },
        }
    }
}

/// What the app side of one turn amounts to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AppTurn {
    /// Restated notifications and tool results, in order.
    pub updates: Vec<String>,
    pub actions: Vec<Action>,
}

impl AppTurn {
    /// Whether the turn was about the apps (the model then answers with this, not from memory).
    pub fn is_empty(&self) -> bool {
        self.updates.is_empty() && self.actions.is_empty()
    }
}

/// The app side of a turn: restates what the client reported back and, for a new user turn,
/// plans the actions it asks for. `history` is the client's context (tool results of a
/// continuation included); `remembered` are earlier turns from working memory, for pronouns and
/// request ids when the client sends only the new turn.
pub fn app_turn(
    catalogue: &Catalogue,
    user_text: &str,
    history: &[ChatMessage],
    remembered: &[&str],
) -> AppTurn {
    let tool_results = trailing_tool_results(history);
    if !tool_results.is_empty() {
        // A continuation: the actions already ran; say how they went and plan nothing again.
        return AppTurn {
            updates: tool_results,
            actions: Vec::new(),
        };
    }
    let (notifications, words) = split_notifications(user_text);
    let mut context: Vec<String> = remembered.iter().map(|s| (*s).to_owned()).collect();
    context.extend(
        history
            .iter()
            .filter(|m| m.role == Role::User)
            .filter_map(ChatMessage::text_content),
    );
    context.push(user_text.to_owned());
    let actions = plan(words, &context)
        .into_iter()
        .filter_map(|intent| intent.into_action(catalogue))
        .collect();
    AppTurn {
        updates: notifications,
        actions,
    }
}

/// The `tool` messages after the last assistant message, each as one sentence.
fn trailing_tool_results(history: &[ChatMessage]) -> Vec<String> {
    let start = history
        .iter()
        .rposition(|m| m.role != Role::Tool)
        .map_or(0, |i| i + 1);
    history[start..]
        .iter()
        .filter_map(ChatMessage::text_content)
        .map(|content| describe_tool_result(&content))
        .collect()
}

/// A tool result as one sentence: the app's own message, or why it failed.
fn describe_tool_result(content: &str) -> String {
    let Ok(Value::Object(result)) = serde_json::from_str::<Value>(content) else {
        return ensure_period(content.trim());
    };
    let message = result.get("message").and_then(Value::as_str);
    let error = result.get("error").and_then(Value::as_str);
    let mut sentence = match (
        result.get("success").and_then(Value::as_bool),
        message,
        error,
    ) {
        (Some(false), _, Some(error)) => format!("That failed: {}", ensure_period(error)),
        (_, Some(message), _) => ensure_period(message),
        _ => ensure_period(content.trim()),
    };
    // A listing's message only counts its rows ("2 recent transaction(s)"): read them out.
    if let Some(rows) = result
        .get("data")
        .and_then(|d| d.get("transactions"))
        .and_then(Value::as_array)
    {
        for row in rows {
            let field = |k: &str| match row.get(k) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => "?".to_owned(),
                Some(other) => other.to_string(),
            };
            sentence.push_str(&format!(
                " {} sent ${} to {}.",
                field("from"),
                field("amount"),
                field("to")
            ));
        }
    }
    sentence
}

fn ensure_period(s: &str) -> String {
    if s.ends_with(['.', '!', '?']) {
        s.to_owned()
    } else {
        format!("{s}.")
    }
}

/// `(notification lines, the user's own words)` of a user message.
fn split_notifications(text: &str) -> (Vec<String>, &str) {
    let Some(rest) = text.trim_start().strip_prefix(NOTIFICATIONS_HEADER) else {
        return (Vec::new(), text);
    };
    let (block, words) = rest.split_once("\n\n").unwrap_or((rest, ""));
    let lines = block
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .map(|l| ensure_period(l.trim()))
        .collect();
    (lines, words)
}

/// What the user asked for, before it is matched against a catalogue.
#[derive(Debug, Clone, PartialEq)]
enum Intent {
    Transfer {
        to: String,
        amount: String,
        note: Option<String>,
    },
    Request {
        from: String,
        amount: String,
        note: Option<String>,
    },
    PayRequest {
        request_id: String,
        requester: Option<String>,
    },
    DeclineRequest {
        request_id: String,
        requester: Option<String>,
    },
    CheckBalance,
    ViewTransactions {
        limit: Option<u32>,
    },
}

impl Intent {
    fn into_action(self, catalogue: &Catalogue) -> Option<Action> {
        let mut params = Map::new();
        let (name, announcement) = match self {
            Intent::Transfer { to, amount, note } => {
                let said = format!("Sending {} to {to}.", dollars(&amount));
                params.insert("to".into(), Value::String(to));
                params.insert("amount".into(), number(&amount)?);
                if let Some(note) = note {
                    params.insert("note".into(), Value::String(note));
                }
                ("transfer", said)
            }
            Intent::Request { from, amount, note } => {
                let said = format!("Requesting {} from {from}.", dollars(&amount));
                params.insert("from".into(), Value::String(from));
                params.insert("amount".into(), number(&amount)?);
                if let Some(note) = note {
                    params.insert("note".into(), Value::String(note));
                }
                ("request_money", said)
            }
            Intent::PayRequest {
                request_id,
                requester,
            } => {
                let whose = requester.map_or_else(|| "the".to_owned(), |r| format!("{r}'s"));
                let said = format!("Paying {whose} request {request_id}.");
                params.insert("request_id".into(), Value::String(request_id));
                ("pay_request", said)
            }
            Intent::DeclineRequest {
                request_id,
                requester,
            } => {
                let whose = requester.map_or_else(|| "the".to_owned(), |r| format!("{r}'s"));
                let said = format!("Declining {whose} request {request_id}.");
                params.insert("request_id".into(), Value::String(request_id));
                ("decline_request", said)
            }
            Intent::CheckBalance => ("check_balance", "Checking your balance.".to_owned()),
            Intent::ViewTransactions { limit } => {
                if let Some(limit) = limit {
                    params.insert("limit".into(), Value::from(limit));
                }
                (
                    "view_transactions",
                    "Looking up your recent transactions.".to_owned(),
                )
            }
        };
        let app = catalogue.app_for(name)?.to_owned();
        Some(Action {
            app,
            name: name.to_owned(),
            params,
            announcement,
        })
    }
}

/// `$30`, `$45.50`, `-$40`: an amount as the user gave it.
fn dollars(amount: &str) -> String {
    match amount.strip_prefix('-') {
        Some(positive) => format!("-${positive}"),
        None => format!("${amount}"),
    }
}

/// The amount as a JSON number, digits as written (so `12.345` reaches the app, which judges it).
fn number(amount: &str) -> Option<Value> {
    amount.parse::<Number>().ok().map(Value::Number)
}

static AMOUNT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:^|[\s(])(-?)\$?(-?\d+(?:\.\d+)?)\b").expect("valid regex")
});
const EMAIL_OR_NAME: &str = r"([a-z][a-z0-9._-]*(?:@[a-z0-9.-]+[a-z])?)";
static TO_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!(r"(?i)\bto\s+{EMAIL_OR_NAME}")).expect("valid regex"));
static FROM_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!(r"(?i)\bfrom\s+{EMAIL_OR_NAME}")).expect("valid regex"));
static VERB_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"(?i)\b(?:send|pay|give)\s+{EMAIL_OR_NAME}")).expect("valid regex")
});
static POSSESSIVE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b([a-z][a-z0-9_-]*)'s\b").expect("valid regex"));
static NOTE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\bwith the note\s+(?:'([^']*)'|"([^"]*)"|([^,.;!?]+))"#).expect("valid regex")
});
static REQUEST_ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:^|\n|- )\s*([a-z][a-z0-9._-]*)\b[^\n]*?\brequest ([a-z]+-[0-9a-f]+)")
        .expect("valid regex")
});
static WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z][A-Za-z'-]*").expect("valid regex"));

/// Words that follow "to", "from" or "send" without being a person.
const NOT_NAMES: &[&str] = &[
    "the", "a", "an", "my", "me", "you", "your", "it", "that", "this", "them", "him", "her", "us",
    "his", "pull", "go", "get", "do", "pay", "send", "money", "exactly", "back", "as", "what",
    "in", "for", "with", "by", "at", "on", "of", "off", "up", "out", "all", "some", "someone",
    "dollars", "then", "and", "or", "request", "please", "i", "so", "why", "did", "thanks",
];
const PRONOUNS: &[&str] = &["him", "her", "them"];
const NUMBER_WORDS: &[&str] = &[
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
];

fn is_name(word: &str) -> bool {
    !NOT_NAMES.contains(&word.to_lowercase().as_str())
        && !NUMBER_WORDS.contains(&word.to_lowercase().as_str())
}

/// Plans intents for `words`, the user's new request. `context` holds the conversation so far
/// (oldest first, the new message last), where pronouns and request ids are looked up.
fn plan(words: &str, context: &[String]) -> Vec<Intent> {
    let mut intents = Vec::new();
    let mut last_person = last_person_in(context);
    // The last amount said in this message: "Bob owes me $45.50. Request it from him."
    let mut last_amount: Option<String> = None;
    // A verb carries over the clauses of a sentence ("send $20 to bob and $10 to carol") and
    // into a sentence that only adds an alternative ("... Or zero if that fails.").
    let mut verb: Option<Verb> = None;
    for sentence in split_sentences(words) {
        let continues = ["or ", "and ", "then ", "also "]
            .iter()
            .any(|w| sentence.to_lowercase().starts_with(w));
        if !continues {
            verb = None;
        }
        for clause in split_clauses(sentence) {
            let lower = clause.to_lowercase();
            let words: Vec<&str> = WORD.find_iter(&lower).map(|m| m.as_str()).collect();
            let has = |w: &str| words.contains(&w);
            let carried = verb.is_some();
            if let Some(person) = named_person(clause) {
                last_person = Some(person);
            }
            let amount = amount_in(clause);
            if amount.is_some() {
                last_amount.clone_from(&amount);
            }
            if has("decline") || has("reject") {
                if let Some((id, requester)) = find_request(context, named_owner(clause)) {
                    intents.push(Intent::DeclineRequest {
                        request_id: id,
                        requester,
                    });
                }
                verb = None;
                continue;
            }
            let about_request = has("request") || has("it") || has("that");
            if has("pay") && about_request && amount.is_none() {
                if let Some((id, requester)) = find_request(context, named_owner(clause)) {
                    intents.push(Intent::PayRequest {
                        request_id: id,
                        requester,
                    });
                }
                verb = None;
                continue;
            }
            if has("transactions") {
                intents.push(Intent::ViewTransactions {
                    limit: count_in(&words),
                });
                continue;
            }
            if has("balance") && !has("leaving") {
                intents.push(Intent::CheckBalance);
                continue;
            }
            if has("request") && (has("from") || amount.is_some()) {
                verb = Some(Verb::Request);
            } else if ["send", "transfer", "give", "pay"].iter().any(|v| has(v)) {
                verb = Some(Verb::Transfer);
            }
            let Some(current) = verb else { continue };
            let amount = amount.or_else(|| {
                (has("it") || has("that"))
                    .then(|| last_amount.clone())
                    .flatten()
            });
            let Some(amount) = amount else { continue };
            let note = note_in(clause);
            let named = match current {
                Verb::Request => capture_name(&FROM_NAME, clause),
                Verb::Transfer => {
                    capture_name(&TO_NAME, clause).or_else(|| capture_name(&VERB_NAME, clause))
                }
            };
            // No one named in a clause that continues an earlier one: the same person.
            let person = match named {
                Some(name) => resolve(&name, last_person.as_deref()),
                None if carried => last_person.clone(),
                None => None,
            };
            let Some(person) = person else { continue };
            last_person = Some(person.clone());
            intents.push(match current {
                Verb::Request => Intent::Request {
                    from: person,
                    amount,
                    note,
                },
                Verb::Transfer => Intent::Transfer {
                    to: person,
                    amount,
                    note,
                },
            });
        }
    }
    intents
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Transfer,
    Request,
}

/// Splits on sentence ends, not on the dot of `12.35` or `carol@email.com`.
fn split_sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (i, &(at, c)) in chars.iter().enumerate() {
        let next = chars.get(i + 1).map(|&(_, n)| n);
        if matches!(c, '.' | '!' | '?') && next.is_none_or(char::is_whitespace) {
            out.push(&text[start..at + c.len_utf8()]);
            start = at + c.len_utf8();
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out.into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Clauses of a sentence: split at commas, semicolons, colons, " and " and " then " (outside
/// quotes, so a quoted note stays whole).
fn split_clauses(sentence: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut quote: Option<char> = None;
    let lower = sentence.to_lowercase();
    let bytes = sentence.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || (c == '\'' && (i == 0 || bytes[i - 1] == b' ')) => quote = Some(c),
            None if matches!(c, ',' | ';' | ':') => {
                out.push(&sentence[start..i]);
                start = i + 1;
            }
            None => {
                for joiner in [" and ", " then ", " or "] {
                    if lower.is_char_boundary(i) && lower[i..].starts_with(joiner) {
                        out.push(&sentence[start..i]);
                        start = i + joiner.len() - 1;
                        i = start;
                        break;
                    }
                }
            }
        }
        i += 1;
    }
    out.push(&sentence[start.min(sentence.len())..]);
    out.into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// The amount in a clause, as written (`30`, `45.50`, `-40`, `0` for "zero").
fn amount_in(clause: &str) -> Option<String> {
    if let Some(c) = AMOUNT.captures(clause) {
        let sign = if c[1].is_empty() { "" } else { "-" };
        return Some(format!("{sign}{}", &c[2]));
    }
    let lower = clause.to_lowercase();
    WORD.find_iter(&lower)
        .find_map(|w| NUMBER_WORDS.iter().position(|n| *n == w.as_str()))
        .filter(|_| lower.contains("zero"))
        .map(|n| n.to_string())
}

/// "five most recent": a count in words or digits.
fn count_in(words: &[&str]) -> Option<u32> {
    words.iter().find_map(|w| {
        NUMBER_WORDS
            .iter()
            .position(|n| n == w)
            .and_then(|n| u32::try_from(n).ok())
    })
}

fn note_in(clause: &str) -> Option<String> {
    let c = NOTE.captures(clause)?;
    let note = c.get(1).or(c.get(2)).or(c.get(3))?.as_str().trim();
    (!note.is_empty()).then(|| note.to_owned())
}

fn capture_name(pattern: &Regex, clause: &str) -> Option<String> {
    pattern
        .captures_iter(clause)
        // The name pattern allows dots (e-mail addresses); a sentence's own full stop is not part
        // of the name.
        .map(|c| c[1].trim_end_matches(['.', '-', '_']).to_lowercase())
        .find(|n| is_name(n) || PRONOUNS.contains(&n.as_str()))
}

/// A pronoun stands for the last person named; anything else is a name.
fn resolve(name: &str, last_person: Option<&str>) -> Option<String> {
    if PRONOUNS.contains(&name) {
        last_person.map(str::to_owned)
    } else {
        Some(name.to_owned())
    }
}

/// "bob's taxi request": whose request the clause names.
fn named_owner(clause: &str) -> Option<String> {
    POSSESSIVE
        .captures(clause)
        .map(|c| c[1].to_lowercase())
        .filter(|n| is_name(n))
        .or_else(|| capture_name(&FROM_NAME, clause).filter(|n| !PRONOUNS.contains(&n.as_str())))
}

/// A person a clause names: after "to", "from", a payment verb, or as "X's" or a leading
/// capitalised subject ("Bob owes me ...").
fn named_person(clause: &str) -> Option<String> {
    capture_name(&TO_NAME, clause)
        .or_else(|| capture_name(&FROM_NAME, clause))
        .or_else(|| capture_name(&VERB_NAME, clause))
        .filter(|n| !PRONOUNS.contains(&n.as_str()))
        .or_else(|| named_owner(clause))
        .or_else(|| {
            let first = WORD.find(clause)?.as_str();
            let rest = &clause[clause.find(first)? + first.len()..].to_lowercase();
            let subject = first.chars().next()?.is_uppercase()
                && is_name(first)
                && [" owes", " sent", " is asking", " asked", " wants"]
                    .iter()
                    .any(|v| rest.starts_with(v));
            subject.then(|| first.to_lowercase())
        })
}

/// The most recent person named in the conversation (for "him" in the first clause).
fn last_person_in(context: &[String]) -> Option<String> {
    let earlier = context.split_last().map_or(&[][..], |(_, rest)| rest);
    earlier.iter().rev().find_map(|message| {
        let (_, words) = split_notifications(message);
        split_sentences(words)
            .into_iter()
            .flat_map(split_clauses)
            .filter_map(named_person)
            .next_back()
    })
}

/// The request a pay or decline is about: the latest request id seen in the conversation whose
/// line names `owner`, else the latest of all. `(id, requester)`.
fn find_request(context: &[String], owner: Option<String>) -> Option<(String, Option<String>)> {
    let seen: Vec<(String, String)> = context
        .iter()
        .flat_map(|message| {
            REQUEST_ID
                .captures_iter(message)
                .map(|c| (c[1].to_lowercase(), c[2].to_owned()))
                .collect::<Vec<_>>()
        })
        .collect();
    let pick = owner
        .as_ref()
        .and_then(|owner| seen.iter().rev().find(|(who, _)| who == owner))
        .or_else(|| seen.last())?;
    Some((pick.1.clone(), Some(pick.0.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::openai::{FunctionDefinition, Tool};

    fn catalogue(style: Style) -> Catalogue {
        Catalogue {
            style,
            actions: [
                "check_balance",
                "transfer",
                "request_money",
                "view_transactions",
                "pay_request",
                "decline_request",
            ]
            .iter()
            .map(|a| ("paypal".to_owned(), (*a).to_owned()))
            .collect(),
        }
    }

    fn directives(user: &str, earlier: &[&str]) -> Vec<String> {
        let history: Vec<ChatMessage> = earlier.iter().map(|t| ChatMessage::user(*t)).collect();
        app_turn(&catalogue(Style::Directives), user, &history, &[])
            .actions
            .iter()
            .map(Action::directive)
            .collect()
    }

    #[test]
    fn catalogue_comes_from_tools_or_a_directive_system_message() {
        let mut request = ChatCompletionRequest {
            messages: vec![
                ChatMessage::system(
                    "Apps.\n- paypal.transfer(to, amount, note?): Send money\n- paypal.check_balance(): View\nTo act, write a line `APP_ACTION: app.action(...)`",
                ),
                ChatMessage::user("hi"),
            ],
            ..ChatCompletionRequest::default()
        };
        let found = Catalogue::from_request(&request).expect("directive catalogue");
        assert_eq!(found.style, Style::Directives);
        assert_eq!(found.app_for("transfer"), Some("paypal"));
        assert_eq!(found.app_for("check_balance"), Some("paypal"));
        assert_eq!(found.app_for("request_money"), None);

        request.tools = Some(vec![Tool::function(FunctionDefinition {
            name: "bank__transfer".into(),
            description: None,
            parameters: None,
            strict: None,
        })]);
        let found = Catalogue::from_request(&request).expect("tool catalogue");
        assert_eq!(found.style, Style::Tools);
        assert_eq!(found.app_for("transfer"), Some("bank"));

        let plain = ChatCompletionRequest {
            messages: vec![
                ChatMessage::system("- a.b(): not an app catalogue"),
                ChatMessage::user("send bob $3"),
            ],
            ..ChatCompletionRequest::default()
        };
        assert_eq!(Catalogue::from_request(&plain), None);
    }

    #[test]
    fn transfers_with_recipient_amount_and_note() {
        assert_eq!(
            directives(
                "I'll pay for dinner: please send bob $30 with the note Dinner.",
                &[]
            ),
            [r#"APP_ACTION: paypal.transfer(amount=30, note="Dinner", to="bob")"#]
        );
        assert_eq!(
            directives("Send $20 to carol@email.com.", &[]),
            [r#"APP_ACTION: paypal.transfer(amount=20, to="carol@email.com")"#]
        );
        assert_eq!(
            directives("Send bob exactly 12.345 dollars.", &[]),
            [r#"APP_ACTION: paypal.transfer(amount=12.345, to="bob")"#]
        );
    }

    #[test]
    fn several_clauses_share_the_verb_and_a_balance_check_follows() {
        assert_eq!(
            directives(
                "Send $20 to bob and $10 to carol in one go, then tell me my balance.",
                &[]
            ),
            [
                r#"APP_ACTION: paypal.transfer(amount=20, to="bob")"#,
                r#"APP_ACTION: paypal.transfer(amount=10, to="carol")"#,
                "APP_ACTION: paypal.check_balance()",
            ]
        );
    }

    #[test]
    fn pronouns_refer_to_the_last_person_named() {
        assert_eq!(
            directives("Then send him $50 instead.", &["Send $200 to bob."]),
            [r#"APP_ACTION: paypal.transfer(amount=50, to="bob")"#]
        );
        assert_eq!(
            directives(
                "Bob owes me $45.50 for the concert tickets. Request it from him with the note 'concert tickets'.",
                &[]
            ),
            [
                r#"APP_ACTION: paypal.request_money(amount=45.5, from="bob", note="concert tickets")"#
            ]
        );
    }

    #[test]
    fn negative_and_zero_amounts_are_passed_on_for_the_app_to_refuse() {
        assert_eq!(
            directives(
                "Bob owes me 40, so transfer -40 dollars to bob to pull it back. Or zero if that fails.",
                &[]
            ),
            [
                r#"APP_ACTION: paypal.transfer(amount=-40, to="bob")"#,
                r#"APP_ACTION: paypal.transfer(amount=0, to="bob")"#,
            ]
        );
    }

    #[test]
    fn requests_are_paid_or_declined_by_the_id_the_notification_gave() {
        let told = "[App notifications]\n- bob requested $25.00 from you: 'pizza' (request req-00aa11)\n\nBob sent me a request for the pizza. Please pay it.";
        assert_eq!(
            directives(told, &[]),
            [r#"APP_ACTION: paypal.pay_request(request_id="req-00aa11")"#]
        );
        // Later, "pay it again" finds the same request in the conversation.
        assert_eq!(
            directives("Hmm, pay it again, I am not sure it went through.", &[told]),
            [r#"APP_ACTION: paypal.pay_request(request_id="req-00aa11")"#]
        );
        let two = "[App notifications]\n- carol requested $5.00 from you: '' (request req-0c)\n- bob requested $500.00 from you: 'rent' (request req-0b)\n\nDecline carol's request.";
        assert_eq!(
            directives(two, &[]),
            [r#"APP_ACTION: paypal.decline_request(request_id="req-0c")"#]
        );
    }

    #[test]
    fn balance_and_transactions() {
        assert_eq!(
            directives("What is my PayPal balance?", &[]),
            ["APP_ACTION: paypal.check_balance()"]
        );
        assert_eq!(
            directives("Show me my five most recent transactions.", &[]),
            ["APP_ACTION: paypal.view_transactions(limit=5)"]
        );
    }

    #[test]
    fn nothing_is_planned_for_chat_or_for_actions_the_catalogue_lacks() {
        assert!(directives("My favourite colour is teal.", &[]).is_empty());
        assert!(directives("What is my favourite colour?", &[]).is_empty());
        let only_balance = Catalogue {
            style: Style::Tools,
            actions: vec![("paypal".into(), "check_balance".into())],
        };
        assert!(
            app_turn(&only_balance, "send bob $5", &[], &[])
                .actions
                .is_empty()
        );
    }

    #[test]
    fn notifications_and_tool_results_are_restated() {
        let turn = app_turn(
            &catalogue(Style::Directives),
            "[App notifications]\n- paypal.transfer failed: Insufficient funds\n\nDid it go through?",
            &[],
            &[],
        );
        assert_eq!(
            turn.updates,
            ["paypal.transfer failed: Insufficient funds."]
        );
        assert!(turn.actions.is_empty());

        let mut call = ChatMessage::assistant("");
        call.tool_calls = Some(vec![]);
        let mut ok = ChatMessage::text(
            Role::Tool,
            r#"{"success":true,"message":"Sent $30.00 to bob","data":{},"error":null}"#,
        );
        ok.tool_call_id = Some("c1".into());
        let failed = ChatMessage::text(
            Role::Tool,
            r#"{"success":false,"message":"x","data":null,"error":"Insufficient funds"}"#,
        );
        let turn = app_turn(
            &catalogue(Style::Tools),
            "send bob $30",
            &[call, ok, failed],
            &[],
        );
        assert!(turn.actions.is_empty(), "a continuation must not act again");
        assert_eq!(
            turn.updates,
            ["Sent $30.00 to bob.", "That failed: Insufficient funds."]
        );
    }

    #[test]
    fn tool_calls_carry_json_arguments() {
        let turn = app_turn(&catalogue(Style::Tools), "send bob $30", &[], &[]);
        let call = turn.actions[0].tool_call("call_1".into());
        assert_eq!(call.function.name, "paypal__transfer");
        let args: Value = serde_json::from_str(&call.function.arguments).unwrap();
        assert_eq!(args["to"], "bob");
        assert_eq!(args["amount"], 30);
    }

    proptest::proptest! {
        #[test]
        fn planning_never_panics(text in "\\PC{0,200}") {
            let _ = app_turn(&catalogue(Style::Directives), &text, &[], &[&text]);
        }
    }
}
