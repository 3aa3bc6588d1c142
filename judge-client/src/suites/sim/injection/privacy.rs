//! What persona context an external endpoint receives, by privacy tier (docs/contracts/agent-injection.md):
//! `minimal` sends the reference only, `basic` adds name and traits, `full` adds the background
//! and the system prompt the judge's own LLM simulator would use.

use super::super::persona::Persona;
use super::super::simulator::llm::persona_prompt;
use super::config::PrivacyTier;
use super::schema::{PersonaRef, PersonaSnapshot};

pub fn persona_ref(persona: &Persona) -> PersonaRef {
    PersonaRef {
        persona_id: persona.id.clone(),
        persona_version: persona.version.clone(),
        persona_hash: persona.hash(),
    }
}

pub fn persona_snapshot(
    persona: &Persona,
    tier: PrivacyTier,
    stop_token: &str,
) -> Option<PersonaSnapshot> {
    match tier {
        PrivacyTier::Minimal => None,
        PrivacyTier::Basic => Some(PersonaSnapshot {
            name: persona.name.clone(),
            background: None,
            traits: persona.traits,
            system_prompt: None,
        }),
        PrivacyTier::Full => Some(PersonaSnapshot {
            name: persona.name.clone(),
            background: Some(persona.background.clone()),
            traits: persona.traits,
            system_prompt: Some(persona_prompt(persona, stop_token)),
        }),
    }
}

/// The system message of the `openai` protocol at each tier.
pub fn openai_system_prompt(persona: &Persona, tier: PrivacyTier, stop_token: &str) -> String {
    match tier {
        PrivacyTier::Minimal => format!(
            "You play persona `{}` (version {}, {}), talking to an AI assistant. End with {stop_token} when done.",
            persona.id,
            persona.version,
            persona.hash()
        ),
        PrivacyTier::Basic => format!(
            "You are {}, talking to an AI assistant. Your Big Five traits: {}. End with {stop_token} when done.",
            persona.name,
            persona
                .traits
                .named()
                .iter()
                .map(|(n, v)| format!("{n} {v:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        PrivacyTier::Full => persona_prompt(persona, stop_token),
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::persona::shipped;
    use super::*;

    #[test]
    fn each_tier_sends_only_what_it_allows() {
        let persona = shipped().unwrap().remove(0);
        assert!(persona_snapshot(&persona, PrivacyTier::Minimal, "[END]").is_none());
        let basic = persona_snapshot(&persona, PrivacyTier::Basic, "[END]").unwrap();
        assert_eq!(basic.name, persona.name);
        assert!(basic.background.is_none() && basic.system_prompt.is_none());
        let full = persona_snapshot(&persona, PrivacyTier::Full, "[END]").unwrap();
        assert_eq!(
            full.background.as_deref(),
            Some(persona.background.as_str())
        );
        assert!(full.system_prompt.unwrap().contains("JL042"));
        let minimal = openai_system_prompt(&persona, PrivacyTier::Minimal, "[END]");
        assert!(!minimal.contains(&persona.name) && minimal.contains(&persona.hash()));
        let basic = openai_system_prompt(&persona, PrivacyTier::Basic, "[END]");
        assert!(!basic.contains("nurse") && basic.contains("openness 0.85"));
    }
}
