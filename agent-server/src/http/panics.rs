//! A request whose handler panics (only a bug can make one) is answered with a 500 in OpenAI's
//! error shape, as any other failure, instead of a connection that closes with no answer.
//!
//! Without this, actix-web lets the panic end the connection's task: the client sees a reset or
//! an empty reply, which a load test counts as a transport error and a person cannot act on, and
//! the request never reaches the metrics. The panic's message goes to the log, where the error
//! body points.
//!
//! Only the handler's future is guarded. A streamed body is sent after the handler returned; the
//! one such body that runs code of its own, the upstream relay, ends with an error event when
//! its task panics (`chat.rs`).

use std::panic::AssertUnwindSafe;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use futures_util::FutureExt as _;

use crate::error::ApiError;
use crate::task::panic_message;

/// Middleware: runs the rest of the chain and turns a panic in it into a 500. Wrap it inside
/// `metrics::observe`, so that the 500 is counted and its span marked as an error.
pub(crate) async fn answer_panics(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    // Not a clone of the request: routing needs the only handle to it.
    let path = req.path().to_owned();
    // `call` itself runs in the guarded future too: routing and a service's setup happen there.
    match AssertUnwindSafe(async move { next.call(req).await })
        .catch_unwind()
        .await
    {
        Ok(result) => result,
        Err(panic) => {
            tracing::error!(
                panic = panic_message(&*panic),
                path,
                "a request handler panicked"
            );
            // An error, not a response: actix-web answers it through `ApiError`'s row of the
            // error table, and `observe` counts it as the 500 it is.
            Err(ApiError::Internal("the request's handler failed").into())
        }
    }
}

#[cfg(test)]
mod tests {
    use actix_web::http::StatusCode;
    use actix_web::{App, HttpResponse, HttpServer, web};

    use super::*;

    async fn panics() -> HttpResponse {
        panic!("a bug in a handler");
    }

    async fn answers() -> HttpResponse {
        HttpResponse::Ok().body("fine")
    }

    /// Over real HTTP: what a client sees is the server's dispatcher at work, not the middleware.
    #[actix_web::test]
    async fn a_handler_that_panics_is_answered_with_a_500_in_openais_shape() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = HttpServer::new(|| {
            App::new()
                .wrap(actix_web::middleware::from_fn(answer_panics))
                .route("/panics", web::get().to(panics))
                .route("/answers", web::get().to(answers))
        })
        .workers(1)
        .listen(listener)
        .unwrap()
        .run();
        let handle = server.handle();
        crate::task::local_in_request(server);
        let client = awc::Client::default();

        let mut response = client
            .get(format!("http://127.0.0.1:{port}/panics"))
            .send()
            .await
            .expect("an answer, not a closed connection");
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["error"]["type"], "server_error");
        assert_eq!(body["error"]["code"], "internal_error");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("the request's handler failed"),
            "{message}"
        );

        // The worker goes on serving.
        let mut response = client
            .get(format!("http://127.0.0.1:{port}/answers"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.body().await.unwrap(), "fine");
        handle.stop(false).await;
    }
}
