//! Liveness, readiness and the model list.

use actix_web::{HttpResponse, web};
use protocol::control::HealthReport;
use protocol::openai::{Model, ModelList};

use super::AppState;
use super::auth::ApiKey;

#[utoipa::path(get, path = "/healthz", tag = "ops", responses((status = 200, description = "The process is up", body = HealthReport)))]
pub(crate) async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(HealthReport {
        status: "ok".into(),
        dependencies: Vec::new(),
        recall: None,
    })
}

#[utoipa::path(
    get,
    path = "/readyz",
    tag = "ops",
    responses(
        (status = 200, description = "Every memory dependency answers; `degraded` when the embedding model fails (turns are answered, with lexical recall)", body = HealthReport),
        (status = 503, description = "At least one dependency is down; the report names it", body = HealthReport),
    )
)]
pub(crate) async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let dependencies = state.agent.store().health().await;
    let ok = dependencies.iter().all(|d| d.ok);
    let recall = state.recall.report();
    // A failing embedding model weakens recall but fails no turn: degraded, still ready.
    let degraded = recall.embeddings.as_ref().is_some_and(|e| !e.ok);
    let status = match (ok, degraded) {
        (false, _) => "unavailable",
        (true, true) => "degraded",
        (true, false) => "ok",
    };
    let report = HealthReport {
        status: status.into(),
        dependencies,
        recall: Some(recall),
    };
    if ok {
        HttpResponse::Ok().json(report)
    } else {
        HttpResponse::ServiceUnavailable().json(report)
    }
}

#[utoipa::path(get, path = "/v1/models", tag = "chat", responses((status = 200, description = "The served model", body = ModelList)))]
pub(crate) async fn models(_key: ApiKey, state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(ModelList::new(vec![Model {
        id: state.agent.model_name().to_owned(),
        object: "model".into(),
        created: state.started_at,
        owned_by: "agentwall".into(),
    }]))
}
