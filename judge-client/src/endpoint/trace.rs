//! W3C `traceparent` values, derived from the session id and a request counter so that they are
//! reproducible (they never enter results, but a replayed run produces the same trace ids).

use sha2::{Digest, Sha256};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `00-<trace id>-<span id>-01`: one trace per session, one span id per request.
pub fn traceparent(session_id: &str, request_no: u64) -> String {
    let trace = Sha256::digest(format!("trace:{session_id}").as_bytes());
    let span = Sha256::digest(format!("span:{session_id}:{request_no}").as_bytes());
    format!("00-{}-{}-01", hex(&trace[..16]), hex(&span[..8]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_has_the_w3c_shape_and_is_stable() {
        let t = traceparent("abc", 1);
        let parts: Vec<&str> = t.split('-').collect();
        assert_eq!(parts.len(), 4);
        assert_eq!(parts[0], "00");
        assert_eq!(parts[1].len(), 32);
        assert_eq!(parts[2].len(), 16);
        assert_eq!(parts[3], "01");
        assert_eq!(t, traceparent("abc", 1));
        assert_ne!(parts[2], traceparent("abc", 2).split('-').nth(2).unwrap());
        assert_eq!(parts[1], traceparent("abc", 2).split('-').nth(1).unwrap());
    }
}
