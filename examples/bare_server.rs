//! The yardstick of `scripts/bench-load.sh`: the cheapest OpenAI-compatible server actix-web can
//! be, answering every chat completion with the same bytes (JSON, or an SSE stream when the body
//! asks for `"stream":true`). agent-server's figures are read as a share of this one's, measured
//! in the same run with the same load generator.
//!
//! ```text
//! cargo run --release --example bare_server -- --port 8091 --workers 1 --chunks 16
//! ```
//!
//! `--delay-ms N` holds every reply N ms before its head, as a real model's time to first token
//! (for a turn's latency with a model of 50-200 ms, where what agent-server adds is a share of it).

use actix_web::http::header::ContentType;
use actix_web::web::{self, Bytes};
use actix_web::{App, HttpResponse, HttpServer};
use std::time::Duration;

const COMPLETION: &str = r#"{"id":"chatcmpl-bare","object":"chat.completion","created":0,"model":"bare","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"OK, noted."}}],"usage":{"prompt_tokens":8,"completion_tokens":4,"total_tokens":12}}"#;
const MODELS: &str = r#"{"object":"list","data":[{"id":"bare","object":"model","created":0,"owned_by":"agentwall"}]}"#;

struct Options {
    port: u16,
    workers: usize,
    chunks: usize,
    delay: Duration,
}

fn options() -> Options {
    let mut o = Options {
        port: 8091,
        workers: 1,
        chunks: 16,
        delay: Duration::ZERO,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let value = || pair.get(1).and_then(|v| v.parse().ok());
        match pair[0].as_str() {
            "--port" => o.port = value().expect("--port N") as u16,
            "--workers" => o.workers = value().expect("--workers N"),
            "--chunks" => o.chunks = value().expect("--chunks N"),
            "--delay-ms" => o.delay = Duration::from_millis(value().expect("--delay-ms N") as u64),
            other => {
                panic!("unknown argument {other}; use --port, --workers, --chunks, --delay-ms")
            }
        }
    }
    o
}

/// One whole SSE reply: a role chunk, `chunks` one-token chunks, the usage chunk and `[DONE]`,
/// rendered once at start-up.
fn sse_reply(chunks: usize) -> Bytes {
    let mut body = String::from(
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"bare\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
    );
    for _ in 0..chunks {
        body.push_str("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"bare\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok \"}}]}\n\n");
    }
    body.push_str(&format!(
        "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"bare\",\"choices\":[],\"usage\":{{\"prompt_tokens\":8,\"completion_tokens\":{chunks},\"total_tokens\":{}}}}}\n\ndata: [DONE]\n\n",
        chunks + 8
    ));
    Bytes::from(body)
}

/// Streams only when the body says so; a byte search, because parsing JSON is what the
/// yardstick must not do.
fn wants_stream(body: &[u8]) -> bool {
    body.windows(13)
        .any(|w| w == b"\"stream\":true" || w == b"\"stream\": tru")
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let o = options();
    let sse = sse_reply(o.chunks);
    let delay = o.delay;
    eprintln!(
        "bare_server on 127.0.0.1:{} ({} workers)",
        o.port, o.workers
    );
    HttpServer::new(move || {
        let sse = sse.clone();
        App::new()
            .route(
                "/v1/models",
                web::get().to(|| async {
                    HttpResponse::Ok()
                        .content_type(ContentType::json())
                        .body(MODELS)
                }),
            )
            .route(
                "/v1/chat/completions",
                web::post().to(move |body: Bytes| {
                    let sse = sse.clone();
                    async move {
                        if !delay.is_zero() {
                            actix_web::rt::time::sleep(delay).await;
                        }
                        if wants_stream(&body) {
                            HttpResponse::Ok()
                                .content_type("text/event-stream")
                                .body(sse)
                        } else {
                            HttpResponse::Ok()
                                .content_type(ContentType::json())
                                .body(COMPLETION)
                        }
                    }
                }),
            )
    })
    .on_connect(|conn, _| {
        if let Some(tcp) = conn.downcast_ref::<actix_web::rt::net::TcpStream>() {
            let _ = tcp.set_nodelay(true);
        }
    })
    .workers(o.workers)
    .backlog(4096)
    .bind(("127.0.0.1", o.port))?
    .run()
    .await
}
