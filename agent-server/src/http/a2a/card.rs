//! `GET /.well-known/agent-card.json`: what this agent says about itself (A2A 1.0).
//!
//! One interface, JSON-RPC at `<base>/a2a`, where the base is `--public-url` or else the scheme
//! and host the card was asked for with (so a client reaches the endpoint the way it reached the
//! card). Streaming is served, push notifications and an extended card are not; text in, text
//! out. With `--api-key` the card declares the bearer scheme `/v1` uses, required on every call.
//! The card is public, as discovery needs, and cacheable (`ETag`, a hash of its content).

use std::collections::BTreeMap;

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use protocol::a2a::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, BINDING_JSONRPC,
    HttpAuthSecurityScheme, MEDIA_TYPE_TEXT, PROTOCOL_VERSION, SecurityRequirement, SecurityScheme,
    StringList,
};
use sha2::{Digest as _, Sha256};

use super::PATH;
use crate::http::AppState;

/// The name of the bearer scheme the card declares with `--api-key`.
const BEARER_SCHEME: &str = "bearer";

#[utoipa::path(
    get,
    path = "/.well-known/agent-card.json",
    tag = "a2a",
    responses(
        (status = 200, description = "The A2A 1.0 agent card: one JSONRPC interface at <base>/a2a (--public-url, else the request's scheme and host), streaming, text/plain in and out, the memory chat skill, and with --api-key the bearer scheme. Public; ETag and Cache-Control", body = Object),
        (status = 304, description = "If-None-Match named the current card's ETag"),
    )
)]
pub(crate) async fn agent_card(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let card = card(&state, &base_url(&req, &state));
    let body = serde_json::to_vec(&card).expect("the agent card serialises");
    let digest = Sha256::digest(&body);
    let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    let etag = format!("\"{hex}\"");
    let cached = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut response = if cached {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    response.insert_header((header::ETAG, etag)).insert_header((
        header::CACHE_CONTROL,
        HeaderValue::from_static("max-age=300"),
    ));
    if cached {
        return response.finish();
    }
    response.content_type("application/json").body(body)
}

/// The base URL the card names: `--public-url`, else the request's own scheme and host.
fn base_url(req: &HttpRequest, state: &AppState) -> String {
    if let Some(url) = &state.public_url {
        return url.clone();
    }
    let info = req.connection_info();
    format!("{}://{}", info.scheme(), info.host())
}

/// The card of this server, reached at `base`.
fn card(state: &AppState, base: &str) -> AgentCard {
    let mut card = AgentCard {
        name: "agentwall agent-server".to_owned(),
        description: format!(
            "A chat agent with long-term memory: it remembers what it is told in a conversation \
             (a contextId, which is its session) across messages and restarts, keeps standing \
             rules and reminders on the session's clock, and answers with {}. X-Session-Id names \
             the session when given; X-Mock-Time moves its clock.",
            state.agent.model_name()
        ),
        supported_interfaces: vec![AgentInterface {
            url: format!("{base}{PATH}"),
            protocol_binding: BINDING_JSONRPC.to_owned(),
            protocol_version: PROTOCOL_VERSION.to_owned(),
            ..AgentInterface::default()
        }],
        version: env!("CARGO_PKG_VERSION").to_owned(),
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            ..AgentCapabilities::default()
        },
        default_input_modes: vec![MEDIA_TYPE_TEXT.to_owned()],
        default_output_modes: vec![MEDIA_TYPE_TEXT.to_owned()],
        skills: vec![AgentSkill {
            id: "memory-chat".to_owned(),
            name: "Chat with long-term memory".to_owned(),
            description: "Answers in a conversation, remembering facts, lists, standing rules and \
                          reminders it was told earlier in the same context, days later too."
                .to_owned(),
            tags: vec!["chat".to_owned(), "memory".to_owned()],
            examples: vec![
                "My favourite colour is teal.".to_owned(),
                "What is my favourite colour?".to_owned(),
            ],
            ..AgentSkill::default()
        }],
        ..AgentCard::default()
    };
    if state.api_key.is_some() {
        card.security_schemes.insert(
            BEARER_SCHEME.to_owned(),
            SecurityScheme {
                http_auth_security_scheme: Some(HttpAuthSecurityScheme {
                    description: Some("The server's API key (--api-key), as on /v1.".to_owned()),
                    scheme: "Bearer".to_owned(),
                    ..HttpAuthSecurityScheme::default()
                }),
                ..SecurityScheme::default()
            },
        );
        card.security_requirements = vec![SecurityRequirement {
            schemes: BTreeMap::from([(BEARER_SCHEME.to_owned(), StringList::default())]),
            ..SecurityRequirement::default()
        }];
    }
    card
}
