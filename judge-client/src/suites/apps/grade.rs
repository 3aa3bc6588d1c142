//! Grading by final state: a canonical hash, a field-by-field diff against the expected state,
//! collateral damage (changes the scenario did not ask for) and required communications.
//!
//! Paths are JSON Pointers (RFC 6901) into the world state (`/paypal/accounts/bob/balance_cents`).
//! The expected state is partial: an object names only the fields it checks; an array is checked
//! for its length and element by element (each element again partial).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A field whose final value is not the expected one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mismatch {
    pub path: String,
    pub expected: Value,
    /// `None` when the field does not exist.
    pub actual: Option<Value>,
}

/// A field that changed between the initial and the final state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub path: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// The verdict on one trial's final state and what the agent said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grade {
    pub passed: bool,
    /// SHA-256 of the canonical JSON of the final state, hex.
    pub state_hash: String,
    /// `Some(false)` when the scenario pins a hash and the final state has another.
    pub hash_matches: Option<bool>,
    pub mismatches: Vec<Mismatch>,
    pub collateral: Vec<Change>,
    pub missing_phrases: Vec<String>,
}

/// What a trial is graded against.
pub struct Expectations<'a> {
    pub expected: &'a Value,
    /// Paths that may change beyond those `expected` names.
    pub allowed_changes: &'a [String],
    pub required_phrases: &'a [String],
    pub expected_hash: Option<&'a str>,
}

pub fn grade(
    initial: &Value,
    final_state: &Value,
    expectations: &Expectations<'_>,
    said: &[String],
) -> Grade {
    let state_hash = state_hash(final_state);
    let mismatches = diff(expectations.expected, final_state);
    let mut covered = coverage(expectations.expected);
    covered.extend(expectations.allowed_changes.iter().cloned());
    let collateral: Vec<Change> = changes(initial, final_state)
        .into_iter()
        .filter(|c| !covered.iter().any(|p| is_prefix(p, &c.path)))
        .collect();
    let missing_phrases = missing_phrases(expectations.required_phrases, said);
    let hash_matches = expectations.expected_hash.map(|h| h == state_hash);
    Grade {
        passed: mismatches.is_empty()
            && collateral.is_empty()
            && missing_phrases.is_empty()
            && hash_matches != Some(false),
        state_hash,
        hash_matches,
        mismatches,
        collateral,
        missing_phrases,
    }
}

pub use crate::canonical::canonical_json;

/// SHA-256 (hex) of the canonical JSON of an app state.
pub fn state_hash(state: &Value) -> String {
    let digest = Sha256::digest(canonical_json(state).as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Fields of `expected` that `actual` does not match.
pub fn diff(expected: &Value, actual: &Value) -> Vec<Mismatch> {
    let mut out = Vec::new();
    diff_at(expected, Some(actual), String::new(), &mut out);
    out
}

fn diff_at(expected: &Value, actual: Option<&Value>, path: String, out: &mut Vec<Mismatch>) {
    match (expected, actual) {
        (Value::Object(want), Some(Value::Object(have))) => {
            for (key, value) in want {
                diff_at(value, have.get(key), child(&path, key), out);
            }
        }
        (Value::Array(want), Some(Value::Array(have))) if want.len() == have.len() => {
            for (i, (w, h)) in want.iter().zip(have).enumerate() {
                diff_at(w, Some(h), child(&path, &i.to_string()), out);
            }
        }
        (want, Some(have)) if same(want, have) => {}
        (want, have) => out.push(Mismatch {
            path,
            expected: want.clone(),
            actual: have.cloned(),
        }),
    }
}

/// Equality with numbers compared by value (`7000` and `7000.0` from YAML are the same amount).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        _ => a == b,
    }
}

/// The paths `expected` speaks for: its scalar fields and its arrays as a whole. An empty object
/// only asks that the object exist, so it covers nothing below it.
fn coverage(expected: &Value) -> Vec<String> {
    fn walk(value: &Value, path: String, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, v) in map {
                    walk(v, child(&path, key), out);
                }
            }
            _ => out.push(path),
        }
    }
    let mut out = Vec::new();
    walk(expected, String::new(), &mut out);
    out
}

/// Every leaf that differs between `before` and `after`.
pub fn changes(before: &Value, after: &Value) -> Vec<Change> {
    let mut out = Vec::new();
    changes_at(Some(before), Some(after), String::new(), &mut out);
    out
}

fn changes_at(before: Option<&Value>, after: Option<&Value>, path: String, out: &mut Vec<Change>) {
    match (before, after) {
        (Some(Value::Object(b)), Some(Value::Object(a))) => {
            let mut keys: Vec<&String> = b.keys().chain(a.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                changes_at(b.get(key), a.get(key), child(&path, key), out);
            }
        }
        (Some(Value::Array(b)), Some(Value::Array(a))) => {
            for i in 0..b.len().max(a.len()) {
                changes_at(b.get(i), a.get(i), child(&path, &i.to_string()), out);
            }
        }
        (Some(b), Some(a)) if same(b, a) => {}
        (b, a) => out.push(Change {
            path,
            before: b.cloned(),
            after: a.cloned(),
        }),
    }
}

fn child(path: &str, key: &str) -> String {
    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// Whether pointer `prefix` is `path` or one of its ancestors (`""`, the root, is everyone's).
fn is_prefix(prefix: &str, path: &str) -> bool {
    path == prefix || (path.starts_with(prefix) && path.as_bytes().get(prefix.len()) == Some(&b'/'))
}

/// Required phrases found in none of the agent's replies (case and spacing ignored).
pub fn missing_phrases(required: &[String], said: &[String]) -> Vec<String> {
    let normal = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let said: Vec<String> = said.iter().map(|s| normal(s)).collect();
    required
        .iter()
        .filter(|phrase| {
            let phrase = normal(phrase);
            !said.iter().any(|s| s.contains(&phrase))
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let a = json!({"b": 1, "a": {"d": [1, {"z": 0, "y": 1}], "c": null}});
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"c":null,"d":[1,{"y":1,"z":0}]},"b":1}"#
        );
        assert_eq!(state_hash(&a).len(), 64);
    }

    #[test]
    fn diff_is_partial_on_objects_and_exact_on_array_lengths() {
        let actual = json!({"acc": {"bob": 5, "amy": 3}, "tx": [{"id": "x", "amount": 5}]});
        assert!(
            diff(
                &json!({"acc": {"bob": 5.0}, "tx": [{"amount": 5}]}),
                &actual
            )
            .is_empty()
        );
        let wrong = diff(&json!({"acc": {"bob": 6, "cid": 1}, "tx": []}), &actual);
        let paths: Vec<&str> = wrong.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(paths, ["/acc/bob", "/acc/cid", "/tx"]);
        assert_eq!(wrong[1].actual, None);
    }

    #[test]
    fn collateral_is_what_changed_outside_the_expected_fields() {
        let before = json!({"acc": {"bob": 5, "amy": 3}, "tx": []});
        let after = json!({"acc": {"bob": 7, "amy": 1}, "tx": [{"id": 1}]});
        let expectations = Expectations {
            expected: &json!({"acc": {"bob": 7}, "tx": [{"id": 1}]}),
            allowed_changes: &[],
            required_phrases: &["Sent  $2".to_owned()],
            expected_hash: None,
        };
        let g = grade(
            &before,
            &after,
            &expectations,
            &["I sent $2 to bob".to_owned()],
        );
        assert!(g.mismatches.is_empty());
        assert_eq!(g.collateral.len(), 1);
        assert_eq!(g.collateral[0].path, "/acc/amy");
        assert!(g.missing_phrases.is_empty());
        assert!(!g.passed);
    }

    #[test]
    fn an_empty_expectation_allows_no_change() {
        let before = json!({"acc": {"bob": 5}});
        let after = json!({"acc": {"bob": 6}});
        let expectations = Expectations {
            expected: &json!({"acc": {}}),
            allowed_changes: &[],
            required_phrases: &[],
            expected_hash: None,
        };
        let g = grade(&before, &after, &expectations, &[]);
        assert_eq!(g.collateral.len(), 1);
        let everything = ["".to_owned()];
        let lenient = Expectations {
            allowed_changes: &everything,
            ..expectations
        };
        assert!(grade(&before, &after, &lenient, &[]).passed);
    }
}
