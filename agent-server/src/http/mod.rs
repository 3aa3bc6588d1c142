//! The HTTP surface: routes, extractors and handlers. Handlers only translate between HTTP and the
//! agent; every error goes through [`crate::error::ApiError`] (on the A2A endpoint, through
//! [`crate::error::A2aError`], which renders the same table in JSON-RPC's shape).

pub(crate) mod a2a;
pub(crate) mod auth;
pub(crate) mod body;
pub(crate) mod chat;
pub(crate) mod context;
pub(crate) mod control;
pub(crate) mod health;
pub(crate) mod metrics;
pub(crate) mod openapi;
pub(crate) mod panics;
pub(crate) mod responses;
pub(crate) mod session;
mod turn;

use std::sync::Arc;

use actix_web::{HttpRequest, web};

use crate::agent::Agent;
use crate::embed::Recall;
use crate::error::ApiError;
use crate::memory::responses::ResponseStore;
use crate::memory::tasks::TaskStore;
use crate::telemetry::Metrics;

/// Shared by all handlers.
pub(crate) struct AppState {
    pub agent: Arc<Agent>,
    /// Stored responses and conversations of the Responses API.
    pub responses: Arc<dyn ResponseStore>,
    /// Stored A2A tasks.
    pub tasks: Arc<dyn TaskStore>,
    /// Which recall is on: lexical, or semantic with an embedding model (`/readyz` reports it).
    pub recall: Recall,
    /// The server's metrics, rendered by `GET /metrics`.
    pub metrics: Arc<Metrics>,
    /// `--require-session`: a request without `X-Session-Id` is a 400.
    pub require_session: bool,
    /// `--session-from-user`: the OpenAI `user` field may name the session.
    pub session_from_user: bool,
    pub api_key: Option<String>,
    pub admin_token: Option<String>,
    pub deny_mock_time: bool,
    pub max_body_bytes: usize,
    /// `--public-url`: the base URL the agent card names (else the request's own scheme and
    /// host).
    pub public_url: Option<String>,
    /// Unix seconds, reported as the model's `created`.
    pub started_at: i64,
}

/// Registers every route. Each resource answers other methods with 405 in OpenAI's error shape.
pub(crate) fn configure(cfg: &mut web::ServiceConfig, state: web::Data<AppState>) {
    cfg.app_data(state)
        .service(
            resource("/v1/chat/completions", "POST").route(web::post().to(chat::chat_completions)),
        )
        .service(resource("/v1/responses", "POST").route(web::post().to(responses::create)))
        .service(
            resource("/v1/responses/{response_id}", "GET, DELETE")
                .route(web::get().to(responses::retrieve))
                .route(web::delete().to(responses::delete)),
        )
        .service(
            resource("/v1/responses/{response_id}/input_items", "GET")
                .route(web::get().to(responses::input_items)),
        )
        .service(
            resource("/v1/conversations", "POST")
                .route(web::post().to(responses::conversations::create)),
        )
        .service(
            resource("/v1/conversations/{conversation_id}", "GET, POST, DELETE")
                .route(web::get().to(responses::conversations::retrieve))
                .route(web::post().to(responses::conversations::update))
                .route(web::delete().to(responses::conversations::delete)),
        )
        .service(
            resource("/v1/conversations/{conversation_id}/items", "GET, POST")
                .route(web::get().to(responses::conversations::list_items))
                .route(web::post().to(responses::conversations::add_items)),
        )
        .service(
            resource(
                "/v1/conversations/{conversation_id}/items/{item_id}",
                "GET, DELETE",
            )
            .route(web::get().to(responses::conversations::retrieve_item))
            .route(web::delete().to(responses::conversations::delete_item)),
        )
        .service(resource("/v1/models", "GET").route(web::get().to(health::models)))
        .service(
            resource(protocol::a2a::AGENT_CARD_PATH, "GET")
                .route(web::get().to(a2a::card::agent_card)),
        )
        .service(resource(a2a::PATH, "POST").route(web::post().to(a2a::rpc)))
        .service(resource("/control/session/reset", "POST").route(web::post().to(control::reset)))
        .service(resource("/control/memory/inject", "POST").route(web::post().to(control::inject)))
        .service(resource("/control/memory/recall", "POST").route(web::post().to(control::recall)))
        .service(resource("/control/memory", "GET").route(web::get().to(control::memory)))
        .service(resource("/healthz", "GET").route(web::get().to(health::healthz)))
        .service(resource("/readyz", "GET").route(web::get().to(health::readyz)))
        .service(resource("/metrics", "GET").route(web::get().to(metrics::metrics_text)))
        .service(resource("/openapi.json", "GET").route(web::get().to(openapi::openapi_json)))
        .default_service(web::to(not_found));
}

fn resource(path: &'static str, allowed: &'static str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(move |req: HttpRequest| async move {
        Err::<actix_web::HttpResponse, _>(ApiError::MethodNotAllowed {
            method: req.method().to_string(),
            path: path.to_owned(),
            allowed,
        })
    }))
}

async fn not_found(req: HttpRequest) -> Result<actix_web::HttpResponse, ApiError> {
    Err(ApiError::NotFound {
        method: req.method().to_string(),
        path: req.path().to_owned(),
    })
}
