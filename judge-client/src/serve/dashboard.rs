//! `GET /`: the dashboard, one static page whose script calls this API (no build step; the page
//! is compiled into the binary). Runs and their scores and trends, a run's per-test results with
//! a chart, transcripts, side-by-side comparison, live simulations over SSE and the circuit
//! state of every injected endpoint.

use actix_web::{HttpResponse, get};

const PAGE: &str = include_str!("dashboard.html");

#[get("/")]
pub async fn index() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        // The page builds everything with textContent; nothing inline but its own script.
        .insert_header((
            "Content-Security-Policy",
            "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'",
        ))
        .body(PAGE)
}
