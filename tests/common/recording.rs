//! A proxy in front of a real server that keeps every exchange (what the client sent, what it
//! got back), for tests that check the requests a client makes through the real server: which
//! endpoint, which fields. Answers are passed back whole, so it suits non-streamed exchanges.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::Value;

/// One request through the proxy and its answer.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub method: String,
    /// Path and query, as the client sent them.
    pub path: String,
    /// The `X-Session-Id` header, when sent.
    pub session: Option<String>,
    /// The request body as JSON (`Null` when there was none, or it was not JSON).
    pub request: Value,
    pub status: u16,
    /// The answer's body as JSON (`Null` when it was not JSON).
    pub response: Value,
}

type Kept = Arc<Mutex<Vec<Exchange>>>;

pub struct RecordingProxy {
    pub url: String,
    kept: Kept,
}

impl RecordingProxy {
    /// A proxy on a free loopback port that forwards everything to `upstream` (a base URL).
    pub fn start(upstream: &str) -> Self {
        let kept: Kept = Arc::default();
        let data = (kept.clone(), upstream.trim_end_matches('/').to_owned());
        let port = testkit::http::serve(move |app| {
            app.app_data(web::Data::new(data.clone()))
                .app_data(web::PayloadConfig::new(16 * 1024 * 1024))
                .default_service(web::to(forward));
        });
        Self {
            url: format!("http://127.0.0.1:{port}"),
            kept,
        }
    }

    /// Every exchange so far, in the order the answers came back.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.kept.lock().unwrap().clone()
    }

    /// Forgets the exchanges so far.
    pub fn clear(&self) {
        self.kept.lock().unwrap().clear();
    }
}

/// Headers the proxy does not pass on: they describe its own connection.
const HOP_BY_HOP: [&str; 4] = ["host", "content-length", "connection", "transfer-encoding"];

async fn forward(
    req: HttpRequest,
    body: web::Bytes,
    data: web::Data<(Kept, String)>,
) -> HttpResponse {
    let (kept, upstream) = data.get_ref();
    let client = awc::Client::builder()
        .timeout(Duration::from_secs(120))
        .finish();
    let mut request = client.request(req.method().clone(), format!("{upstream}{}", req.uri()));
    for (name, value) in req.headers() {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            request = request.insert_header((name.clone(), value.clone()));
        }
    }
    let mut answer = match request.send_body(body.clone()).await {
        Ok(answer) => answer,
        Err(e) => return HttpResponse::BadGateway().body(e.to_string()),
    };
    let bytes = answer.body().limit(16 * 1024 * 1024).await.unwrap();
    let status = answer.status();
    kept.lock().unwrap().push(Exchange {
        method: req.method().to_string(),
        path: req.uri().to_string(),
        session: req
            .headers()
            .get("x-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        request: serde_json::from_slice(&body).unwrap_or(Value::Null),
        status: status.as_u16(),
        response: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    });
    let mut out = HttpResponse::build(status);
    for (name, value) in answer.headers() {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            out.insert_header((name.clone(), value.clone()));
        }
    }
    out.body(bytes)
}
