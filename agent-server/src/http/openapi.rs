//! `GET /openapi.json`, generated from the handlers' annotations and the protocol types.

use actix_web::HttpResponse;
use utoipa::OpenApi;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "agent-server",
        description = "OpenAI-compatible chat (Chat Completions and the Responses API) with long-term memory, the same agent over A2A 1.0 (JSON-RPC), and a benchmark control plane."
    ),
    paths(
        super::chat::chat_completions,
        super::responses::create,
        super::responses::retrieve,
        super::responses::delete,
        super::responses::input_items,
        super::responses::conversations::create,
        super::responses::conversations::retrieve,
        super::responses::conversations::update,
        super::responses::conversations::delete,
        super::responses::conversations::list_items,
        super::responses::conversations::add_items,
        super::responses::conversations::retrieve_item,
        super::responses::conversations::delete_item,
        super::health::models,
        super::health::healthz,
        super::health::readyz,
        super::metrics::metrics_text,
        super::control::reset,
        super::control::inject,
        super::control::recall,
        super::control::memory,
        super::a2a::card::agent_card,
        super::a2a::rpc,
    )
)]
pub(crate) struct ApiDoc;

pub(crate) async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok().json(ApiDoc::openapi())
}
