//! Personas: who the simulated user is, what they want, what they know and when they leave.
//! Loaded from YAML (`judge-client/personas/` ships a panel of eight, embedded in the binary).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::canonical::sha256_of;

/// Big Five traits, each from 0 to 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Traits {
    pub openness: f64,
    pub conscientiousness: f64,
    pub extraversion: f64,
    pub agreeableness: f64,
    pub neuroticism: f64,
}

impl Traits {
    pub fn named(&self) -> [(&'static str, f64); 5] {
        [
            ("openness", self.openness),
            ("conscientiousness", self.conscientiousness),
            ("extraversion", self.extraversion),
            ("agreeableness", self.agreeableness),
            ("neuroticism", self.neuroticism),
        ]
    }
}

/// Something the persona knows and says only when the agent asks for it (or shows it lacks it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fact {
    pub id: String,
    /// Words that, in a question of the agent, count as asking for this fact.
    pub about: Vec<String>,
    /// The sentence that reveals it.
    pub text: String,
}

/// What the persona wants from the agent, checked deterministically: the reply to `ask` must
/// contain every `expect` phrase (case-insensitive).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Goal {
    pub id: String,
    pub description: String,
    pub ask: String,
    pub expect: Vec<String>,
    /// The fact the agent needs to reach the goal (revealed when it does not know).
    pub needs: String,
}

/// When the persona ends the conversation (with the stop token).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopConditions {
    /// Leave as soon as every goal is reached.
    #[serde(default)]
    pub on_goals_reached: bool,
    /// Leave after this many unhelpful replies to goal questions in a row.
    pub patience: u32,
    /// Said (followed by the stop token) when leaving satisfied.
    pub farewell: String,
    /// Said (followed by the stop token) when giving up.
    pub give_up: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Persona {
    pub id: String,
    #[serde(default = "default_version")]
    pub version: String,
    pub name: String,
    pub background: String,
    pub traits: Traits,
    pub goals: Vec<Goal>,
    pub facts: Vec<Fact>,
    /// First message of the conversation.
    pub opening: String,
    /// Things the persona says between goal moves (order shuffled by the seed).
    pub chatter: Vec<String>,
    pub stop: StopConditions,
}

fn default_version() -> String {
    "1".to_owned()
}

#[derive(Debug, thiserror::Error)]
pub enum PersonaError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{origin}: {source}")]
    Yaml {
        origin: String,
        source: serde_norway::Error,
    },
    #[error("persona `{id}`: {reason}")]
    Invalid { id: String, reason: String },
    #[error("no persona with id `{0}`")]
    Unknown(String),
}

/// The shipped panel, embedded so an installed `judge` needs no data files.
const SHIPPED: [(&str, &str); 8] = [
    (
        "01_maya.yaml",
        include_str!("../../../personas/01_maya.yaml"),
    ),
    ("02_gus.yaml", include_str!("../../../personas/02_gus.yaml")),
    (
        "03_priya.yaml",
        include_str!("../../../personas/03_priya.yaml"),
    ),
    (
        "04_tomasz.yaml",
        include_str!("../../../personas/04_tomasz.yaml"),
    ),
    (
        "05_amara.yaml",
        include_str!("../../../personas/05_amara.yaml"),
    ),
    (
        "06_lena.yaml",
        include_str!("../../../personas/06_lena.yaml"),
    ),
    (
        "07_kenji.yaml",
        include_str!("../../../personas/07_kenji.yaml"),
    ),
    (
        "08_rosa.yaml",
        include_str!("../../../personas/08_rosa.yaml"),
    ),
];

impl Persona {
    pub fn from_yaml(origin: &str, text: &str) -> Result<Self, PersonaError> {
        let persona: Persona =
            serde_norway::from_str(text).map_err(|source| PersonaError::Yaml {
                origin: origin.to_owned(),
                source,
            })?;
        persona.validate()?;
        Ok(persona)
    }

    /// `sha256:` of the persona's canonical JSON (the `persona_hash` of docs/contracts/agent-injection.md).
    pub fn hash(&self) -> String {
        sha256_of(self)
    }

    pub fn fact(&self, id: &str) -> Option<&Fact> {
        self.facts.iter().find(|f| f.id == id)
    }

    fn validate(&self) -> Result<(), PersonaError> {
        let invalid = |reason: String| PersonaError::Invalid {
            id: self.id.clone(),
            reason,
        };
        let id_ok = !self.id.is_empty()
            && self
                .id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
        if !id_ok {
            return Err(invalid("id must be non-empty [A-Za-z0-9_-]".into()));
        }
        for (name, value) in self.traits.named() {
            if !(0.0..=1.0).contains(&value) {
                return Err(invalid(format!("trait {name} = {value} is outside 0..1")));
            }
        }
        if self.goals.is_empty() {
            return Err(invalid("needs at least one goal".into()));
        }
        let facts: BTreeSet<&str> = self.facts.iter().map(|f| f.id.as_str()).collect();
        if facts.len() != self.facts.len() {
            return Err(invalid("fact ids must be unique".into()));
        }
        for goal in &self.goals {
            if !facts.contains(goal.needs.as_str()) {
                return Err(invalid(format!(
                    "goal `{}` needs unknown fact `{}`",
                    goal.id, goal.needs
                )));
            }
            if goal.expect.is_empty() {
                return Err(invalid(format!("goal `{}` expects nothing", goal.id)));
            }
        }
        if self.stop.patience == 0 {
            return Err(invalid("stop.patience must be at least 1".into()));
        }
        if self.opening.trim().is_empty() || self.chatter.is_empty() {
            return Err(invalid("needs an opening and some chatter".into()));
        }
        Ok(())
    }
}

/// The panel shipped with the judge, in file order.
pub fn shipped() -> Result<Vec<Persona>, PersonaError> {
    SHIPPED
        .iter()
        .map(|(name, text)| Persona::from_yaml(name, text))
        .collect()
}

/// Every `*.yaml` / `*.yml` file of `dir`, in file-name order.
pub fn load_dir(dir: &Path) -> Result<Vec<Persona>, PersonaError> {
    let io = |source| PersonaError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).map_err(|source| PersonaError::Io {
                path: path.clone(),
                source,
            })?;
            Persona::from_yaml(&path.display().to_string(), &text)
        })
        .collect()
}

/// Keeps the personas named in `ids` (all when empty), in panel order; unknown ids are errors.
pub fn select(panel: Vec<Persona>, ids: &[String]) -> Result<Vec<Persona>, PersonaError> {
    if let Some(missing) = ids.iter().find(|id| !panel.iter().any(|p| &p.id == *id)) {
        return Err(PersonaError::Unknown(missing.clone()));
    }
    Ok(panel
        .into_iter()
        .filter(|p| ids.is_empty() || ids.contains(&p.id))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_panel_is_diverse_and_valid() {
        let panel = shipped().unwrap();
        assert!(panel.len() >= 8);
        let ids: BTreeSet<&str> = panel.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids.len(), panel.len(), "ids are unique");
        // Diverse: every trait spans at least half the scale across the panel.
        for t in 0..5 {
            let values: Vec<f64> = panel.iter().map(|p| p.traits.named()[t].1).collect();
            let spread = values.iter().cloned().fold(f64::MIN, f64::max)
                - values.iter().cloned().fold(f64::MAX, f64::min);
            assert!(spread >= 0.5, "trait {t} spread {spread}");
        }
        for p in &panel {
            assert!(p.chatter.len() >= 8, "{} has too little chatter", p.id);
            for f in &p.facts {
                for g in p.goals.iter().filter(|g| g.needs == f.id) {
                    for e in &g.expect {
                        assert!(f.text.contains(e.as_str()), "{}: fact reveals {e}", p.id);
                    }
                }
            }
        }
    }

    #[test]
    fn invalid_personas_are_rejected_with_a_reason() {
        let text = shipped_text(0).replace("openness: 0.85", "openness: 1.5");
        let err = Persona::from_yaml("x", &text).unwrap_err().to_string();
        assert!(err.contains("openness"), "{err}");
        let text = shipped_text(0).replace("needs: flight", "needs: nothing");
        assert!(Persona::from_yaml("x", &text).is_err());
        let text = format!("{}\nunexpected: 1\n", shipped_text(0));
        assert!(Persona::from_yaml("x", &text).is_err());
    }

    #[test]
    fn hash_changes_with_content_only() {
        let panel = shipped().unwrap();
        let mut p = panel[0].clone();
        assert_eq!(p.hash(), panel[0].hash());
        p.background.push('!');
        assert_ne!(p.hash(), panel[0].hash());
        assert!(select(panel.clone(), &["nobody".into()]).is_err());
        assert_eq!(select(panel, &["maya".into()]).unwrap().len(), 1);
    }

    fn shipped_text(i: usize) -> String {
        SHIPPED[i].1.to_owned()
    }
}
