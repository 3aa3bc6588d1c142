//! `/runs`: the run directories under `--runs`, and comparisons of two runs of the same kind.

use actix_web::{HttpResponse, get, web};
use serde::Deserialize;

use super::catalog::{self, RunDetail, RunSummary};
use super::error::ApiError;
use super::live::live_records;
use super::state::ServeState;
use crate::suites::compare::{self, Comparison, RunRef};

/// Every run directory, newest first. With `--database-url` the list comes from the index,
/// brought in step with the directories first (so it is the same list); 503 when the index
/// database is down.
#[utoipa::path(responses((status = 200, body = [RunSummary]), (status = 503)))]
#[get("/runs")]
pub async fn list(state: web::Data<ServeState>) -> Result<HttpResponse, ApiError> {
    match &state.index {
        Some(index) => {
            index.sync(&state.runs, &live_records(&state)?).await?;
            Ok(HttpResponse::Ok().json(index.runs().await?))
        }
        None => Ok(HttpResponse::Ok().json(catalog::list(&state.runs)?)),
    }
}

/// One run: summary, manifest, results and metrics as written on disk.
#[utoipa::path(
    params(("id" = String, Path, description = "run directory name")),
    responses((status = 200, body = RunDetail), (status = 400), (status = 404))
)]
#[get("/runs/{id}")]
pub async fn get(
    state: web::Data<ServeState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(catalog::get(&state.runs, &id)?))
}

#[derive(Deserialize)]
pub struct FileQuery {
    path: String,
}

/// A JSON file of a run (a transcript named in its results), for the transcript view.
#[utoipa::path(
    params(("id" = String, Path), ("path" = String, Query, description = "relative path")),
    responses((status = 200), (status = 400), (status = 404))
)]
#[get("/runs/{id}/file")]
pub async fn file(
    state: web::Data<ServeState>,
    id: web::Path<String>,
    query: web::Query<FileQuery>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(catalog::run_file(&state.runs, &id, &query.path)?))
}

#[derive(Deserialize)]
pub struct CompareQuery {
    alpha: Option<f64>,
}

/// `judge compare` over HTTP, the same comparison ([`compare::compare`]): run `other` (B)
/// against run `id` (A), paired unit by unit, with both runs' summary metrics. 422 for runs
/// that do not go together (kinds, membench datasets), 409 for a run without results.
#[utoipa::path(
    params(("id" = String, Path), ("other" = String, Path),
           ("alpha" = Option<f64>, Query, description = "significance level, default 0.05")),
    responses((status = 200, body = Comparison), (status = 400), (status = 404),
              (status = 409), (status = 422))
)]
#[get("/runs/{id}/compare/{other}")]
pub async fn compare_runs(
    state: web::Data<ServeState>,
    ids: web::Path<(String, String)>,
    query: web::Query<CompareQuery>,
) -> Result<HttpResponse, ApiError> {
    let (a, b) = ids.into_inner();
    let alpha = query.alpha.unwrap_or(0.05);
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(ApiError::bad("`alpha` must be between 0 and 1"));
    }
    let run_a = catalog::get(&state.runs, &a)?;
    let run_b = catalog::get(&state.runs, &b)?;
    Ok(HttpResponse::Ok().json(compare::compare(side(&run_a), side(&run_b), alpha)?))
}

/// A run as the comparison reads it.
fn side(run: &RunDetail) -> RunRef<'_> {
    RunRef {
        id: &run.summary.id,
        kind: &run.summary.suite,
        results: &run.results,
    }
}
