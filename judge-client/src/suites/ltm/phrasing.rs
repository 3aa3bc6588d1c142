//! Which set of phrasings an LTM run's user turns are written in (`judge ltm --phrasing`).
//!
//! - `standard`: the templates of `LTM_TEMPLATES.md` ("My {name} is {value}." / "What is my
//!   {name}?"), the set agent-server's builtin model was taught.
//! - `heldout`: everyday phrasings written apart from that set and kept disjoint from it (see
//!   [`super::generators::heldout`]): facts inside longer sentences, indirect mentions, several
//!   facts in one turn, pronouns, typos, questions in other words than the statement. Its
//!   score is the figure for a target that was not written against the standard templates.

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum Phrasing {
    /// The templates of `LTM_TEMPLATES.md`.
    #[default]
    Standard,
    /// Everyday phrasings kept disjoint from the standard templates.
    Heldout,
}

impl Phrasing {
    pub fn name(self) -> &'static str {
        match self {
            Phrasing::Standard => "standard",
            Phrasing::Heldout => "heldout",
        }
    }

    /// In a sentence, for the summary and the report.
    pub fn meaning(self) -> &'static str {
        match self {
            Phrasing::Standard => "the documented templates",
            Phrasing::Heldout => "everyday phrasings held out from the templates",
        }
    }
}

impl fmt::Display for Phrasing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
