//! `GET /`: the dashboard, one static page whose script calls this API (no build step, no
//! dependency, no CDN; the page is compiled into the binary). Runs with their scores and a trend
//! per suite, a run's per-test results with a chart, transcripts (app actions inline, fallbacks
//! and errors marked), two runs side by side, live simulations, and the circuit state of every
//! injected endpoint.
//!
//! The page holds no data, so it is the one route served without `--auth-token` (see
//! [`super::auth`]); it asks for the token on the first 401 (or takes it once from the URL
//! fragment, `/#token=...`, which browsers never send) and keeps it in `sessionStorage`.

use actix_web::{HttpResponse, get};

const PAGE: &str = include_str!("dashboard.html");

/// Only the page's own inline script and style; data from this origin only; never framed.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                   connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; \
                   frame-ancestors 'none'";

#[get("/")]
pub async fn index() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        // The page builds everything with textContent; nothing inline but its own script.
        .insert_header(("Content-Security-Policy", CSP))
        .insert_header(("Referrer-Policy", "no-referrer"))
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .insert_header(("Cache-Control", "no-cache"))
        .body(PAGE)
}
