//! HTTP to the services agent-server calls (an upstream model, an embeddings endpoint): the
//! client they are called with and how an error body becomes a message worth quoting.
//!
//! [`crate::llm`] and [`crate::embed`] both call out; what they share is here, below both.

use actix_service::ServiceExt as _;

/// Longest message of another service quoted in an error.
const MAX_MESSAGE_CHARS: usize = 500;

/// A client for calls to another service: no timeout of its own (each caller applies its
/// deadlines per phase) and `TCP_NODELAY` on its connections.
pub(crate) fn build_client() -> awc::Client {
    // TCP_NODELAY on upstream connections: requests are written at once and streamed chunks are
    // small, so Nagle's algorithm would only add delay.
    let tcp = actix_tls::connect::Connector::default().service().map(
        |conn: actix_tls::connect::Connection<awc::http::Uri, actix_rt::net::TcpStream>| {
            let _ = conn.io_ref().set_nodelay(true);
            conn
        },
    );
    awc::Client::builder()
        .connector(awc::Connector::new().connector(tcp))
        // Deadlines are the caller's (`--llm-timeout`, the embeddings timeout), per phase.
        .disable_timeout()
        .finish()
}

/// The message of an error body, in OpenAI's shape or the common variants of it.
pub(crate) fn error_message(body: &[u8]) -> String {
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) {
        for pointer in ["/error/message", "/error", "/message", "/detail"] {
            if let Some(message) = value.pointer(pointer).and_then(|v| v.as_str()) {
                return clip(message);
            }
        }
    }
    let text = String::from_utf8_lossy(body);
    if text.trim().is_empty() {
        "(no message)".to_owned()
    } else {
        clip(text.trim())
    }
}

/// `text`, cut to the length an error message quotes.
pub(crate) fn clip(text: &str) -> String {
    if text.chars().count() <= MAX_MESSAGE_CHARS {
        return text.to_owned();
    }
    let mut clipped: String = text.chars().take(MAX_MESSAGE_CHARS).collect();
    clipped.push_str("...");
    clipped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_are_taken_from_common_shapes() {
        assert_eq!(
            error_message(br#"{"error":{"message":"slow down","type":"x"}}"#),
            "slow down"
        );
        assert_eq!(error_message(br#"{"error":"bad key"}"#), "bad key");
        assert_eq!(error_message(br#"{"detail":"nope"}"#), "nope");
        assert_eq!(error_message(b"  plain text "), "plain text");
        assert_eq!(error_message(b""), "(no message)");
        assert!(error_message("x".repeat(2000).as_bytes()).len() < 600);
    }
}
