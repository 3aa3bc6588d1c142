//! How much of a conversation each chat request carries (the LTM and apps suites).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What each chat request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryMode {
    /// Only the new user turn: memory must come from the agent (the default).
    #[default]
    New,
    /// The whole conversation of the session so far, to benchmark stateless models fairly.
    Full,
}

impl fmt::Display for HistoryMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HistoryMode::New => "new",
            HistoryMode::Full => "full",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown history mode {0:?}; use `new` or `full`")]
pub struct UnknownHistoryMode(pub String);

impl FromStr for HistoryMode {
    type Err = UnknownHistoryMode;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "new" => Ok(HistoryMode::New),
            "full" => Ok(HistoryMode::Full),
            other => Err(UnknownHistoryMode(other.to_owned())),
        }
    }
}
