//! `judge serve --secrets-file`: a YAML or JSON map of secret name -> API key, which configs
//! reference as `api_key_secret: NAME`. Only names ever leave this module through the API,
//! events, run directories and the index; a value is read when an endpoint is about to be called
//! (a simulation's start, a health check). The file is re-read on SIGHUP (see `cli/serve.rs`):
//! a reload that fails keeps the keys already loaded, so a typo never takes a server's keys away.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use serde_json::Value;

/// Why a secrets file cannot be used. No variant holds a key's value: these are printed.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    #[error("secrets file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "secrets file {path} can be read or written by other users (mode {mode:03o}); run `chmod 600 {path}`"
    )]
    Permissions { path: PathBuf, mode: u32 },
    #[error("secrets file {path}: invalid {format} at line {line}: {message}")]
    Syntax {
        path: PathBuf,
        format: &'static str,
        line: usize,
        message: String,
    },
    #[error("secrets file {path}: {reason}")]
    Shape { path: PathBuf, reason: String },
}

/// A secret name: what configs, responses and logs carry instead of the key.
pub fn check_name(name: &str) -> Result<(), String> {
    let fine = !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if fine {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a secret name (letters, digits, `_`, `-` and `.`)"
        ))
    }
}

/// The keys of a secrets file, reloadable in place.
pub struct Secrets {
    path: PathBuf,
    keys: RwLock<BTreeMap<String, String>>,
}

/// Names only: a `{:?}` of the server state must not print keys.
impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets")
            .field("path", &self.path)
            .field("names", &self.names())
            .finish()
    }
}

impl Secrets {
    /// Reads `path`, refusing a file other users could read or change.
    pub fn load(path: &Path) -> Result<Self, SecretsError> {
        Ok(Self {
            path: path.to_path_buf(),
            keys: RwLock::new(read(path)?),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the file again; on any error the keys loaded before stay. Returns how many keys
    /// the file now holds.
    pub fn reload(&self) -> Result<usize, SecretsError> {
        let keys = read(&self.path)?;
        let count = keys.len();
        *self.keys.write().unwrap_or_else(|p| p.into_inner()) = keys;
        Ok(count)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.keys
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(name)
    }

    /// The key named `name`: only for the request that sends it.
    pub fn get(&self, name: &str) -> Option<String> {
        self.keys
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned()
    }

    pub fn names(&self) -> Vec<String> {
        self.keys
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .cloned()
            .collect()
    }
}

fn read(path: &Path) -> Result<BTreeMap<String, String>, SecretsError> {
    let io = |source| SecretsError::Read {
        path: path.to_path_buf(),
        source,
    };
    // Checked before reading: a file others can read has leaked already, and one they can
    // write lets them choose which key is sent where.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).map_err(io)?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(SecretsError::Permissions {
                path: path.to_path_buf(),
                mode,
            });
        }
    }
    let text = std::fs::read_to_string(path).map_err(io)?;
    parse(path, &text)
}

/// Parses the map: JSON for a `.json` file, YAML otherwise. Syntax errors carry the parser's
/// message and line (parsers name positions, not the text there); shape errors name the
/// secret, never its value.
fn parse(path: &Path, text: &str) -> Result<BTreeMap<String, String>, SecretsError> {
    let json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let value: Value = if json {
        serde_json::from_str(text).map_err(|e| SecretsError::Syntax {
            path: path.to_path_buf(),
            format: "JSON",
            line: e.line(),
            message: e.to_string(),
        })?
    } else {
        serde_norway::from_str(text).map_err(|e| SecretsError::Syntax {
            path: path.to_path_buf(),
            format: "YAML",
            line: e.location().map_or(0, |l| l.line()),
            message: e.to_string(),
        })?
    };
    let shape = |reason: String| SecretsError::Shape {
        path: path.to_path_buf(),
        reason,
    };
    let map = match value {
        Value::Object(map) => map,
        // An empty YAML file: no secrets yet.
        Value::Null => Default::default(),
        _ => return Err(shape("must be a map of secret name to key".to_owned())),
    };
    let mut keys = BTreeMap::new();
    for (name, value) in map {
        check_name(&name).map_err(shape)?;
        match value {
            Value::String(key) if !key.is_empty() => {
                keys.insert(name, key);
            }
            _ => {
                return Err(shape(format!(
                    "secret `{name}` must be a non-empty string (quote it)"
                )));
            }
        }
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(name: &str, text: &str) -> Result<BTreeMap<String, String>, String> {
        parse(Path::new(name), text).map_err(|e| e.to_string())
    }

    #[test]
    fn yaml_and_json_maps_are_read() {
        let yaml = parsed("s.yaml", "maya-key: sk-one\nOTHER_KEY: \"sk two\"\n").unwrap();
        assert_eq!(yaml["maya-key"], "sk-one");
        assert_eq!(yaml["OTHER_KEY"], "sk two");
        let json = parsed("s.json", r#"{"maya-key": "sk-one"}"#).unwrap();
        assert_eq!(json["maya-key"], "sk-one");
        assert!(parsed("s.yaml", "").unwrap().is_empty());
    }

    #[test]
    fn syntax_errors_name_the_file_and_line_and_no_value() {
        let err = parsed("/etc/s.yaml", "a: sk-first\nb: \"sk-unterminated\n").unwrap_err();
        assert!(
            err.contains("/etc/s.yaml") && err.contains("line "),
            "{err}"
        );
        assert!(!err.contains("sk-"), "{err}");
        let err = parsed("s.json", "{\n\"a\": \"sk-first\",\n\"b\" \"sk-x\"}").unwrap_err();
        assert!(err.contains("s.json") && err.contains("line 3"), "{err}");
        assert!(!err.contains("sk-"), "{err}");
    }

    #[test]
    fn bad_shapes_name_the_secret_not_the_value() {
        let err = parsed("s.yaml", "pin: 123456789\n").unwrap_err();
        assert!(err.contains("`pin`") && !err.contains("123456789"), "{err}");
        let err = parsed("s.yaml", "- sk-a\n- sk-b\n").unwrap_err();
        assert!(
            err.contains("map of secret name") && !err.contains("sk-"),
            "{err}"
        );
        let err = parsed("s.yaml", "\"bad name\": sk-a\n").unwrap_err();
        assert!(err.contains("bad name") && !err.contains("sk-a"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn other_users_permissions_are_refused_and_reload_keeps_old_keys() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secrets.yaml");
        std::fs::write(&path, "k: sk-one\n").unwrap();
        for mode in [0o644, 0o640, 0o620, 0o604] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let err = Secrets::load(&path).unwrap_err().to_string();
            assert!(
                err.contains(&format!("chmod 600 {}", path.display())),
                "{err}"
            );
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let secrets = Secrets::load(&path).unwrap();
        assert_eq!(secrets.get("k").as_deref(), Some("sk-one"));
        assert!(!format!("{secrets:?}").contains("sk-one"));
        std::fs::write(&path, "k: [broken\n").unwrap();
        assert!(secrets.reload().is_err());
        assert_eq!(secrets.get("k").as_deref(), Some("sk-one"));
        std::fs::write(&path, "k: sk-two\nj: sk-three\n").unwrap();
        assert_eq!(secrets.reload().unwrap(), 2);
        assert_eq!(secrets.get("k").as_deref(), Some("sk-two"));
    }
}
