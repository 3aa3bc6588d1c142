//! `--auth-token`: when set, every data endpoint wants `Authorization: Bearer <token>`.
//!
//! The one exception is the dashboard page itself (`GET /`): a browser cannot add
//! a header to a navigation, and the page is static HTML compiled into the binary, holding no
//! run, simulation or setting. Its script then sends the header on every call, the event stream
//! included (read with `fetch`, not `EventSource`, which cannot send headers). The token is only
//! ever accepted in the header: never in a query string, where it would end up in access logs,
//! browser history and `Referer` headers.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::http::header::AUTHORIZATION;
use actix_web::middleware::Next;
use actix_web::web::Data;

use super::error::ApiError;
use super::state::ServeState;

/// Equal in time whatever the first differing byte: the token is not guessable byte by byte.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Requests served without the token: the static dashboard page, nothing else.
fn is_public(method: &Method, path: &str) -> bool {
    method == Method::GET && path == "/"
}

pub async fn require_token(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let expected = req
        .app_data::<Data<ServeState>>()
        .and_then(|s| s.auth_token.clone());
    if let Some(expected) = expected
        && !is_public(req.method(), req.path())
    {
        let given = req
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !same(given.as_bytes(), expected.as_bytes()) {
            return Err(ApiError::Unauthorized.into());
        }
    }
    Ok(next.call(req).await?.map_into_boxed_body())
}

#[cfg(test)]
mod tests {
    use actix_web::http::StatusCode;
    use actix_web::middleware::from_fn;
    use actix_web::test as http;
    use actix_web::{App, web};

    use super::super::state::ServeState;

    #[test]
    fn same_compares_whole_tokens() {
        assert!(super::same(b"abc", b"abc"));
        assert!(!super::same(b"abc", b"abd"));
        assert!(!super::same(b"abc", b"abcd"));
        assert!(!super::same(b"", b"a"));
    }

    /// The real routes behind the real middleware, over an empty runs folder.
    async fn status(token: Option<&str>, method: &str, uri: &str, bearer: Option<&str>) -> u16 {
        let runs = tempfile::tempdir().unwrap();
        let state = web::Data::new(ServeState::new(
            runs.path().to_path_buf(),
            token.map(str::to_owned),
            None,
            None,
        ));
        let app = http::init_service(
            App::new()
                .app_data(state)
                .wrap(from_fn(super::require_token))
                .configure(super::super::routes),
        )
        .await;
        let mut req = match method {
            "GET" => http::TestRequest::get(),
            "HEAD" => http::TestRequest::default().method(actix_web::http::Method::HEAD),
            "POST" => http::TestRequest::post(),
            other => panic!("method {other}"),
        }
        .uri(uri);
        if let Some(b) = bearer {
            req = req.insert_header(("Authorization", b.to_owned()));
        }
        match http::try_call_service(&app, req.to_request()).await {
            Ok(response) => response.status().as_u16(),
            Err(e) => e.as_response_error().status_code().as_u16(),
        }
    }

    #[actix_rt::test]
    async fn only_the_dashboard_page_is_served_without_the_token() {
        let token = Some("t0ken");
        assert_eq!(status(token, "GET", "/", None).await, 200);
        // A query string does not make another path public.
        assert_eq!(status(token, "GET", "/?x=1", None).await, 200);
        for uri in [
            "/runs",
            "/simulations",
            "/openapi.json",
            "/simulations/sim-x/events",
            "/runs/r/file?path=x",
            "//runs",
        ] {
            assert_eq!(
                status(token, "GET", uri, None).await,
                StatusCode::UNAUTHORIZED.as_u16(),
                "{uri} without the token"
            );
        }
        assert_eq!(status(token, "POST", "/", None).await, 401);
        assert_eq!(status(token, "HEAD", "/", None).await, 401);
        assert_eq!(status(token, "POST", "/simulations", None).await, 401);
    }

    #[actix_rt::test]
    async fn the_token_counts_in_the_header_only() {
        let token = Some("t0ken");
        assert_eq!(
            status(token, "GET", "/runs", Some("Bearer t0ken")).await,
            200
        );
        assert_eq!(
            status(
                token,
                "GET",
                "/simulations/sim-x/events",
                Some("Bearer t0ken")
            )
            .await,
            404,
            "past auth, the simulation is unknown"
        );
        for bad in [
            "Bearer t0ke",
            "Bearer t0ken ",
            "bearer t0ken",
            "Basic t0ken",
            "t0ken",
        ] {
            assert_eq!(status(token, "GET", "/runs", Some(bad)).await, 401, "{bad}");
        }
        for uri in [
            "/runs?token=t0ken",
            "/runs?access_token=t0ken",
            "/simulations/sim-x/events?token=t0ken",
        ] {
            assert_eq!(status(token, "GET", uri, None).await, 401, "{uri}");
        }
    }

    #[actix_rt::test]
    async fn without_a_token_everything_is_open() {
        assert_eq!(status(None, "GET", "/runs", None).await, 200);
        assert_eq!(status(None, "GET", "/", None).await, 200);
    }
}
