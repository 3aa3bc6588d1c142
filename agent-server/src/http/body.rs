//! JSON bodies, read by hand rather than with `web::Json` so that every failure (too large, wrong
//! content type, malformed, wrong field type) becomes an [`ApiError`] in OpenAI's shape, naming the
//! field at fault.

use actix_web::{HttpRequest, http::header::CONTENT_TYPE, web};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// Reads and parses a JSON body of at most `limit` bytes. Oversized bodies are refused from their
/// Content-Length when declared, and otherwise as soon as the stream passes the limit, so a huge
/// body is never buffered.
pub(crate) async fn read_json<T: DeserializeOwned>(
    req: &HttpRequest,
    payload: web::Payload,
    limit: usize,
) -> Result<T, ApiError> {
    parse_json(&read_body(req, payload, limit).await?)
}

/// Reads a body declared as JSON (or declared as nothing) of at most `limit` bytes, unparsed.
pub(crate) async fn read_body(
    req: &HttpRequest,
    mut payload: web::Payload,
    limit: usize,
) -> Result<web::BytesMut, ApiError> {
    if let Some(ct) = req.headers().get(CONTENT_TYPE) {
        let ct = ct.to_str().unwrap_or("").to_ascii_lowercase();
        let essence = ct.split(';').next().unwrap_or("").trim();
        if !(essence == "application/json" || essence.ends_with("+json")) {
            return Err(ApiError::UnsupportedMediaType(ct));
        }
    }
    let declared = req
        .headers()
        .get(actix_web::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if let Some(size) = declared.filter(|s| *s > limit) {
        return Err(ApiError::PayloadTooLarge { size, limit });
    }
    let mut body = web::BytesMut::with_capacity(declared.unwrap_or(1024).min(limit));
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError::invalid(format!("could not read the request body: {e}"), None)
        })?;
        if body.len() + chunk.len() > limit {
            return Err(ApiError::PayloadTooLarge {
                size: body.len() + chunk.len(),
                limit,
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Parses JSON, reporting the path of the offending field ("messages[0].role: unknown variant").
/// Anything but whitespace after the value is refused, as `serde_json::from_slice` does.
pub(crate) fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::invalid(
            "the request body is empty; send a JSON object",
            None,
        ));
    }
    // Tracking the path costs on every field; a valid body, the usual case, is parsed without it.
    serde_json::from_slice(body).map_err(|plain| explain::<T>(body, plain))
}

/// The error for a body `serde_json` refused (`plain`): parsed again, tracking the path, to say
/// which field is at fault.
fn explain<T: DeserializeOwned>(body: &[u8], plain: serde_json::Error) -> ApiError {
    let not_json = |inner: &serde_json::Error| {
        ApiError::invalid(
            format!("the request body is not valid JSON for this endpoint: {inner}"),
            None,
        )
    };
    let de = &mut serde_json::Deserializer::from_slice(body);
    match serde_path_to_error::deserialize::<_, T>(de) {
        // The value was fine: what follows it was not.
        Ok(_) => not_json(&plain),
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let syntax = !matches!(inner.classify(), serde_json::error::Category::Data);
            if syntax || path == "." {
                not_json(&inner)
            } else {
                ApiError::invalid(format!("{path}: {inner}"), Some(&path))
            }
        }
    }
}
