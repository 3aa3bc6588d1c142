//! The control plane: reset a session, inject facts, look at memory. Guarded by `--admin-token`.

use std::collections::BTreeMap;

use actix_web::{HttpRequest, HttpResponse, web};
use protocol::control::{
    FactKind, FactSource, FactView, InjectFact, InjectRequest, InjectResponse, InjectedFact,
    MemoryView, ResetResponse, WorkingItemView,
};
use protocol::headers::TURN_ID;
use protocol::recall::{RecallRequest, RecallResponse, RecalledItem};

use super::AppState;
use super::auth::AdminToken;
use super::body::read_json;
use super::context::{SessionContext, turn_ids};
use crate::error::ApiError;
use crate::memory::responses::forget_session;
use crate::memory::{EpisodeData, NewFact, Recalled, TurnRole, normalize_key};
use crate::text::extract::{FactExtractor, Learned};

/// Most facts one inject request may carry.
pub(crate) const MAX_INJECT_FACTS: usize = 1000;

#[utoipa::path(
    post,
    path = "/control/session/reset",
    tag = "control",
    params(("X-Session-Id" = String, Header, description = "Session to wipe")),
    responses(
        (status = 200, description = "What was removed (stored responses, conversations and A2A tasks of the session are removed too)", body = ResetResponse),
        (status = 400, description = "Missing or invalid X-Session-Id", body = protocol::openai::ErrorBody),
        (status = 401, description = "Missing or wrong admin token", body = protocol::openai::ErrorBody),
    )
)]
pub(crate) async fn reset(
    _admin: AdminToken,
    ctx: SessionContext,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let forgotten = forget_session(
        state.agent.store().as_ref(),
        state.responses.as_ref(),
        state.tasks.as_ref(),
        &ctx.session,
    )
    .await?;
    let counts = forgotten.memory;
    tracing::info!(session = %ctx.session, working = counts.working_items, facts = counts.facts, responses = forgotten.responses, conversations = forgotten.conversations, tasks = forgotten.tasks, "session reset");
    Ok(HttpResponse::Ok().json(ResetResponse {
        session_id: ctx.session.to_string(),
        working_items_removed: counts.working_items,
        facts_removed: counts.facts,
    }))
}

#[utoipa::path(
    post,
    path = "/control/memory/inject",
    tag = "control",
    request_body = InjectRequest,
    params(
        ("X-Session-Id" = String, Header, description = "Session to write to"),
        ("X-Mock-Time" = Option<String>, Header, description = "Default observed_at"),
        ("X-Turn-Id" = Option<String>, Header, description = "Comma-separated ids, one per fact in order (or one for all): each fact's source_turn_ids"),
    ),
    responses(
        (status = 200, description = "Ids of the stored facts; current=false when a newer value of the same key exists", body = InjectResponse),
        (status = 400, description = "Invalid body or header", body = protocol::openai::ErrorBody),
    )
)]
pub(crate) async fn inject(
    _admin: AdminToken,
    ctx: SessionContext,
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let ids = turn_ids(&req)?;
    let body: InjectRequest = read_json(&req, payload, state.max_body_bytes).await?;
    if body.facts.is_empty() || body.facts.len() > MAX_INJECT_FACTS {
        return Err(ApiError::invalid(
            format!(
                "facts has {} entries; send 1 to {MAX_INJECT_FACTS}",
                body.facts.len()
            ),
            Some("facts"),
        ));
    }
    if ids.len() > 1 && ids.len() != body.facts.len() {
        return Err(ApiError::InvalidHeader {
            header: TURN_ID,
            reason: format!(
                "names {} ids for {} facts; send one id per fact, or one for all",
                ids.len(),
                body.facts.len()
            ),
        });
    }
    let mut facts = Vec::with_capacity(body.facts.len());
    for (i, f) in body.facts.into_iter().enumerate() {
        let text = f.text.trim().to_owned();
        if text.is_empty() {
            return Err(ApiError::invalid(
                format!("facts[{i}].text is empty"),
                Some(&format!("facts[{i}].text")),
            ));
        }
        let importance = f.importance.unwrap_or(0.5);
        if !(0.0..=1.0).contains(&importance) {
            return Err(ApiError::invalid(
                format!("facts[{i}].importance is {importance}; use a value from 0 to 1"),
                Some(&format!("facts[{i}].importance")),
            ));
        }
        let observed_at = f.observed_at.unwrap_or(ctx.now);
        let source_turn_ids = match ids.as_slice() {
            [] => Vec::new(),
            [one] => vec![one.clone()],
            many => vec![many[i].clone()],
        };
        match f.kind.unwrap_or(FactKind::Fact) {
            FactKind::Fact => {}
            FactKind::Episode => {
                facts.push(injected_episode(i, f, text, observed_at, source_turn_ids)?);
                continue;
            }
            other => {
                return Err(ApiError::invalid(
                    format!(
                        "facts[{i}].kind is {other:?}; inject takes \"fact\" or \"episode\" \
                         (rules and reminders are learned from what the user says)",
                        other = other.as_str()
                    ),
                    Some(&format!("facts[{i}].kind")),
                ));
            }
        }
        if f.role.is_some() || f.speaker.is_some() {
            return Err(ApiError::invalid(
                format!(
                    "facts[{i}] has a role or speaker, which only an episode takes; send \"kind\": \"episode\""
                ),
                Some(&format!("facts[{i}]")),
            ));
        }
        let key = match f.key.as_deref().map(normalize_key) {
            Some(k) if k.is_empty() => {
                return Err(ApiError::invalid(
                    format!("facts[{i}].key is blank; omit it or send a name"),
                    Some(&format!("facts[{i}].key")),
                ));
            }
            Some(k) => Some(k),
            None => evident_key(&text, observed_at),
        };
        facts.push(NewFact {
            embedding: None,
            source_turn_ids,
            kind: FactKind::Fact,
            key,
            text,
            data: None,
            observed_at,
            importance,
            source: FactSource::Injected,
        });
    }
    let stored = state.agent.inject(&ctx.session, facts).await?;
    Ok(HttpResponse::Ok().json(InjectResponse {
        session_id: ctx.session.to_string(),
        injected: stored
            .into_iter()
            .map(|s| InjectedFact {
                id: s.id,
                key: s.key,
                current: s.current,
            })
            .collect(),
    }))
}

/// The `i`-th injected item as an episode: a turn as it was said, unkeyed.
fn injected_episode(
    i: usize,
    f: InjectFact,
    text: String,
    observed_at: chrono::DateTime<chrono::Utc>,
    source_turn_ids: Vec<String>,
) -> Result<NewFact, ApiError> {
    if f.key.is_some() {
        return Err(ApiError::invalid(
            format!(
                "facts[{i}] is an episode with a key; episodes are never superseded, so omit the key"
            ),
            Some(&format!("facts[{i}].key")),
        ));
    }
    let role = match f.role.as_deref() {
        None => TurnRole::User,
        Some(name) => TurnRole::parse(name).ok_or_else(|| {
            ApiError::invalid(
                format!("facts[{i}].role is {name:?}; use \"user\" or \"assistant\""),
                Some(&format!("facts[{i}].role")),
            )
        })?,
    };
    let speaker = f
        .speaker
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty());
    Ok(NewFact::episode(
        EpisodeData { role, speaker },
        text,
        observed_at,
        FactSource::Injected,
        source_turn_ids,
    ))
}

/// Most items one recall may ask for.
pub(crate) const MAX_RECALL_ITEMS: u32 = 1000;

#[utoipa::path(
    post,
    path = "/control/memory/recall",
    tag = "control",
    request_body = RecallRequest,
    params(
        ("X-Session-Id" = String, Header, description = "Session to recall from"),
        ("X-Mock-Time" = Option<String>, Header, description = "The session clock (recency)"),
    ),
    responses(
        (status = 200, description = "What a turn with this text would recall, best first (the same ranking), each with its text, source_turn_ids and score; nothing is stored", body = RecallResponse),
        (status = 400, description = "Invalid body or header: an empty text, or limit outside 1 to 1000", body = protocol::openai::ErrorBody),
        (status = 401, description = "Missing or wrong admin token", body = protocol::openai::ErrorBody),
        (status = 503, description = "A memory backend is unavailable", body = protocol::openai::ErrorBody),
    )
)]
pub(crate) async fn recall(
    _admin: AdminToken,
    ctx: SessionContext,
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let body: RecallRequest = read_json(&req, payload, state.max_body_bytes).await?;
    if body.text.trim().is_empty() {
        return Err(ApiError::invalid("text is empty", Some("text")));
    }
    if !(1..=MAX_RECALL_ITEMS).contains(&body.limit) {
        return Err(ApiError::invalid(
            format!("limit is {}; send 1 to {MAX_RECALL_ITEMS}", body.limit),
            Some("limit"),
        ));
    }
    let recalled = state
        .agent
        .recall(&ctx.session, ctx.now, &body.text, body.limit as usize)
        .await?;
    Ok(HttpResponse::Ok().json(RecallResponse {
        items: recalled
            .into_iter()
            .map(|r| RecalledItem {
                why: why(&r),
                text: r.fact.text,
                source_turn_ids: r.fact.source_turn_ids,
                score: Some(r.score),
            })
            .collect(),
    }))
}

/// Why an item was recalled, as `RecalledItem::why` names the parts: `lexical`, `recency`,
/// `vector` (when it has an embedding), and `episode` = 1 for an episode.
fn why(recalled: &Recalled) -> BTreeMap<String, f64> {
    let mut why = BTreeMap::from([
        ("lexical".to_owned(), recalled.why.lexical),
        ("recency".to_owned(), recalled.why.recency),
    ]);
    if let Some(vector) = recalled.why.vector {
        why.insert("vector".to_owned(), vector);
    }
    if recalled.fact.kind == FactKind::Episode {
        why.insert("episode".to_owned(), 1.0);
    }
    why
}

/// The key the extractor would give the sentence, so injected and told facts supersede each other.
fn evident_key(text: &str, now: chrono::DateTime<chrono::Utc>) -> Option<String> {
    FactExtractor
        .extract(text, now)
        .into_iter()
        .find_map(|l| match l {
            Learned::Item(f) if f.kind == FactKind::Fact => f.key,
            _ => None,
        })
}

#[utoipa::path(
    get,
    path = "/control/memory",
    tag = "control",
    params(
        ("X-Session-Id" = String, Header, description = "Session to show"),
        ("X-Mock-Time" = Option<String>, Header, description = "The now at which working memory is evaluated"),
    ),
    responses((status = 200, description = "The session's memory as the agent sees it now", body = MemoryView))
)]
pub(crate) async fn memory(
    _admin: AdminToken,
    ctx: SessionContext,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let store = state.agent.store();
    let snapshot = store.snapshot(&ctx.session, ctx.now).await?;
    let config = store.config();
    Ok(HttpResponse::Ok().json(MemoryView {
        session_id: ctx.session.to_string(),
        now: ctx.now,
        working_memory: snapshot
            .working
            .into_iter()
            .map(|w| WorkingItemView {
                role: w.role.as_str().to_owned(),
                expires_at: config.expires_at(w.at),
                text: w.text,
                at: w.at,
            })
            .collect(),
        facts: snapshot
            .facts
            .into_iter()
            .map(|f| FactView {
                id: f.id,
                kind: f.kind,
                key: f.key,
                text: f.text,
                observed_at: f.observed_at,
                importance: f.importance,
                source: f.source,
                data: f.data,
                source_turn_ids: f.source_turn_ids,
            })
            .collect(),
    }))
}
