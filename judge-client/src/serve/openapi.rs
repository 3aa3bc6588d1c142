//! `GET /openapi.json`, generated from the handlers' annotations.

use actix_web::{HttpResponse, get};
use utoipa::OpenApi;

use super::{apps, catalog, config, injection, runs, simulations, state, trials};
use crate::suites::compare;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "judge serve",
        description = "agentwall runs, simulations, agent injection and apps. API keys are only ever references: `api_key_env` (an environment variable of the server) or `api_key_secret` (a key of `judge serve --secrets-file`), exactly one per endpoint; responses show the reference, never a key. A secret the server does not have, or `api_key_secret` without a secrets file, is 422."
    ),
    paths(
        runs::list,
        runs::get,
        runs::file,
        runs::compare_runs,
        simulations::create,
        simulations::list,
        simulations::get,
        simulations::start,
        simulations::stop,
        simulations::events,
        injection::inject,
        injection::remove,
        injection::list,
        injection::metrics,
        injection::health_check,
        apps::list,
        apps::get,
        apps::agent_state,
        apps::actions,
    ),
    components(schemas(
        catalog::RunSummary,
        catalog::RunDetail,
        simulations::SimulationView,
        injection::InjectedAgentView,
        config::InjectBody,
        config::TargetSpec,
        config::RunSpec,
        config::LlmSpec,
        compare::Comparison,
        compare::PairView,
        compare::MetricDiff,
        compare::GroupDiff,
        compare::ScoreDiff,
        compare::SettingPair,
        compare::AlsoPair,
        crate::report::stats::Direction,
        crate::suites::Better,
        state::SimState,
        trials::AppsSimulationView,
    ))
)]
pub struct ApiDoc;

#[get("/openapi.json")]
pub async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok().json(ApiDoc::openapi())
}
