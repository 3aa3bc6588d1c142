//! `/runs`: the run directories under `--runs`, and comparisons of two LTM runs.

use actix_web::{HttpResponse, get, web};
use serde::Deserialize;

use super::catalog::{self, RunDetail, RunSummary};
use super::error::ApiError;
use super::state::ServeState;
use crate::report::compare;

/// Every run directory, newest first.
#[utoipa::path(responses((status = 200, body = [RunSummary])))]
#[get("/runs")]
pub async fn list(state: web::Data<ServeState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(catalog::list(&state.runs)?))
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

/// `judge compare` over HTTP: run `other` (B) against run `id` (A), both LTM runs.
#[utoipa::path(
    params(("id" = String, Path), ("other" = String, Path),
           ("alpha" = Option<f64>, Query, description = "significance level, default 0.05")),
    responses((status = 200), (status = 400), (status = 404))
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
    let mut results = Vec::new();
    for id in [&a, &b] {
        let run = catalog::get(&state.runs, id)?;
        if run.summary.suite != "ltm" {
            return Err(ApiError::bad(format!(
                "run `{id}` is a {} run: comparisons are of two ltm runs",
                run.summary.suite
            )));
        }
        let dir = catalog::run_dir(&state.runs, id)?;
        let loaded = compare::load(&dir.join("results.json")).map_err(|e| {
            ApiError::Conflict(format!("run `{id}` has no usable results yet: {e}"))
        })?;
        results.push(loaded);
    }
    let comparison = compare::compare(&results[0], &results[1], alpha);
    Ok(HttpResponse::Ok().json(comparison))
}
