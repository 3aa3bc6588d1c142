//! The shipped scenarios (scenarios/apps/*.yaml): they parse, cover every action and failure
//! outcome, are passable (a scripted perfect agent passes every trial, in directive and in tool
//! mode), are not passable by doing nothing, and replay identically under the same seed.

use std::collections::BTreeSet;
use std::path::PathBuf;

use judge_client::endpoint::TargetError;
use judge_client::suites::apps::paypal::PayPal;
use judge_client::suites::apps::runner::{AgentReply, AgentTurn, TrialStatus};
use judge_client::suites::apps::scripted::ReferenceAgent;
use judge_client::suites::apps::{
    ActionMode, AgentEndpoint, App, AppRegistry, Scenario, run_scenario,
};

fn scenarios() -> Vec<Scenario> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios/apps");
    Scenario::load_dir(&dir).expect("the shipped scenarios parse")
}

fn block_on<F: Future>(future: F) -> F::Output {
    actix_rt::System::new().block_on(future)
}

/// Outcome tag → a phrase the failed action's error contains.
const FAILURE_OUTCOMES: [(&str, &str); 6] = [
    ("insufficient_funds", "Insufficient funds"),
    ("daily_limit", "Daily limit"),
    ("unknown_recipient", "not found"),
    ("invalid_amount", "Invalid amount"),
    ("already_resolved", "already resolved"),
    ("transaction_fee", ""),
];

#[test]
fn at_least_ten_valid_scenarios_with_unique_ids() {
    let all = scenarios();
    assert!(all.len() >= 10, "{} scenarios", all.len());
    let registry = AppRegistry::builtin();
    for scenario in &all {
        scenario.validate(&registry).unwrap();
        assert!(
            !scenario.reference.is_empty(),
            "{} has no reference",
            scenario.id
        );
    }
    let ids: BTreeSet<&str> = all.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids.len(), all.len());
}

#[test]
fn scenarios_cover_every_action_and_every_failure_outcome() {
    let covered: BTreeSet<String> = scenarios().into_iter().flat_map(|s| s.covers).collect();
    for action in PayPal::new().actions() {
        assert!(
            covered.contains(&action.name),
            "no scenario covers {}",
            action.name
        );
    }
    for (outcome, _) in FAILURE_OUTCOMES {
        assert!(covered.contains(outcome), "no scenario covers {outcome}");
    }
}

fn check_reference_passes(mode: ActionMode) {
    let registry = AppRegistry::builtin();
    for scenario in scenarios() {
        let mut agent = ReferenceAgent::for_scenario(&scenario);
        if mode == ActionMode::Tools {
            agent = agent.with_tools();
        }
        let outcome = block_on(run_scenario(&mut agent, &registry, &scenario, mode, 7)).unwrap();
        // A reference agent answers one trial; later trials have nothing left to say, so only
        // the first is the proof. Each trial gets a fresh agent below.
        let first = &outcome.trials[0];
        assert_eq!(
            first.status,
            TrialStatus::Passed,
            "{} ({mode:?}) fails: {:#?}",
            scenario.id,
            first.grade
        );
        for action in scenario.covers.iter() {
            let executed = first.audit.entries().iter().any(|e| &e.action == action);
            let is_action = PayPal::new().actions().iter().any(|a| &a.name == action);
            assert!(
                !is_action || executed,
                "{}: {action} never ran",
                scenario.id
            );
        }
        for (outcome_tag, phrase) in FAILURE_OUTCOMES {
            if phrase.is_empty() || !scenario.covers.iter().any(|c| c == outcome_tag) {
                continue;
            }
            let seen =
                first.audit.entries().iter().any(|e| {
                    !e.success && e.error.as_deref().is_some_and(|err| err.contains(phrase))
                });
            assert!(seen, "{}: no failure with `{phrase}`", scenario.id);
        }
    }
}

#[test]
fn a_perfect_agent_passes_every_scenario_with_directives() {
    check_reference_passes(ActionMode::Directives);
}

#[test]
fn a_perfect_agent_passes_every_scenario_with_tool_calls() {
    check_reference_passes(ActionMode::Tools);
}

/// Answers a fresh reference agent per trial, so every trial is a perfect one.
struct FreshReference {
    scenario: Scenario,
    current: Option<ReferenceAgent>,
    turns_seen: usize,
}

impl AgentEndpoint for FreshReference {
    fn supports_tools(&self) -> bool {
        false
    }

    async fn respond(&mut self, turn: AgentTurn<'_>) -> Result<AgentReply, TargetError> {
        // A conversation of two messages (system, first user turn) starts a trial.
        if turn.messages.len() == 2 || self.current.is_none() {
            self.current = Some(ReferenceAgent::for_scenario(&self.scenario));
        }
        self.turns_seen += 1;
        match self.current.as_mut() {
            Some(agent) => agent.respond(turn).await,
            None => Ok(AgentReply::default()),
        }
    }
}

#[test]
fn every_trial_passes_and_pass_hat_k_is_one() {
    let registry = AppRegistry::builtin();
    for scenario in scenarios() {
        let mut agent = FreshReference {
            scenario: scenario.clone(),
            current: None,
            turns_seen: 0,
        };
        let mode = ActionMode::Auto;
        let outcome = block_on(run_scenario(&mut agent, &registry, &scenario, mode, 11)).unwrap();
        assert_eq!(outcome.mode, ActionMode::Directives, "auto without tools");
        assert!(outcome.all_passed(), "{}", scenario.id);
        assert_eq!(outcome.pass_hat_k, Some(1.0));
        assert_eq!(outcome.trials.len() as u32, scenario.trials);
        assert_eq!(
            agent.turns_seen,
            scenario.user.turns.len() * scenario.trials as usize
        );
    }
}

/// Says something polite and never acts.
struct Idle;

impl AgentEndpoint for Idle {
    fn supports_tools(&self) -> bool {
        false
    }

    async fn respond(&mut self, _: AgentTurn<'_>) -> Result<AgentReply, TargetError> {
        Ok(AgentReply {
            text: "Sure, happy to help!".to_owned(),
            tool_calls: Vec::new(),
        })
    }
}

#[test]
fn doing_nothing_passes_no_scenario() {
    let registry = AppRegistry::builtin();
    for scenario in scenarios() {
        let outcome = block_on(run_scenario(
            &mut Idle,
            &registry,
            &scenario,
            ActionMode::Directives,
            1,
        ))
        .unwrap();
        assert_eq!(outcome.passed, 0, "{} passes by doing nothing", scenario.id);
        assert_eq!(outcome.pass_hat_k, Some(0.0));
    }
}

#[test]
fn tool_mode_without_tools_is_not_applicable() {
    let registry = AppRegistry::builtin();
    let scenario = &scenarios()[0];
    let outcome = block_on(run_scenario(
        &mut Idle,
        &registry,
        scenario,
        ActionMode::Tools,
        1,
    ))
    .unwrap();
    assert!(
        outcome
            .trials
            .iter()
            .all(|t| t.status == TrialStatus::NotApplicable)
    );
    assert_eq!(outcome.pass_hat_k, None);
}

#[test]
fn same_seed_same_audit_logs_and_final_states() {
    let registry = AppRegistry::builtin();
    let play = |seed: u64| -> Vec<(String, String)> {
        scenarios()
            .iter()
            .map(|scenario| {
                let mut agent = ReferenceAgent::for_scenario(scenario);
                let outcome = block_on(run_scenario(
                    &mut agent,
                    &registry,
                    scenario,
                    ActionMode::Directives,
                    seed,
                ))
                .unwrap();
                let trial = &outcome.trials[0];
                (
                    trial.audit.to_jsonl(),
                    trial.grade.as_ref().unwrap().state_hash.clone(),
                )
            })
            .collect()
    };
    let first = play(2024);
    assert_eq!(first, play(2024));
    let other = play(2025);
    assert_ne!(first, other, "ids come from the seed");
}
