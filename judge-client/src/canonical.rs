//! Canonical JSON and the `sha256:` hashes of docs/contracts/agent-injection.md (config, persona and request
//! hashes), also used for app state hashes (`apps::grade`). Canonical here means: object keys
//! sorted at every depth, no insignificant whitespace, serde_json's number formatting. Written out
//! explicitly rather than relying on serde_json's map order, which changes when any crate in the
//! build turns on its `preserve_order` feature.

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The canonical JSON text of `value`.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// `sha256:<hex>` of the canonical JSON of anything serialisable.
pub fn sha256_of<T: Serialize>(value: &T) -> String {
    let json = serde_json::to_value(value).unwrap_or(Value::Null);
    sha256_text(&canonical_json(&json))
}

/// `sha256:<hex>` of a text.
pub fn sha256_text(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// A UUID (version 4 layout) derived from the run seed and a label, so that ids in requests are
/// the same on every run with the same seed and recorded fixtures match on replay.
pub fn derived_uuid(seed: u64, label: &str) -> String {
    let digest = Sha256::digest(format!("agentwall-sim:{seed}:{label}").as_bytes());
    let mut raw = [0u8; 16];
    raw.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(raw)
        .into_uuid()
        .hyphenated()
        .to_string()
}

/// 32 seed bytes for a ChaCha generator, derived from the run seed and a label.
pub fn derived_seed(seed: u64, label: &str) -> [u8; 32] {
    Sha256::digest(format!("agentwall-sim-rng:{seed}:{label}").as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_hash() {
        let a = json!({"b": 1, "a": {"y": [1, {"d": 2, "c": 3}], "x": "é"}});
        let b: Value =
            serde_json::from_str(r#"{"a":{"x":"é","y":[1,{"c":3,"d":2}]},"b":1}"#).unwrap();
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"x":"é","y":[1,{"c":3,"d":2}]},"b":1}"#
        );
        assert_eq!(sha256_of(&a), sha256_of(&b));
        assert!(sha256_of(&a).starts_with("sha256:"));
        assert_eq!(sha256_of(&a).len(), 7 + 64);
        assert_ne!(sha256_of(&a), sha256_of(&json!({"b": 2})));
    }

    #[test]
    fn derived_ids_are_stable_and_distinct() {
        assert_eq!(derived_uuid(1, "x"), derived_uuid(1, "x"));
        assert_ne!(derived_uuid(1, "x"), derived_uuid(2, "x"));
        assert_ne!(derived_uuid(1, "x"), derived_uuid(1, "y"));
        assert_eq!(derived_uuid(1, "x").len(), 36);
    }
}
