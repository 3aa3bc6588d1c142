//! The fourteen LTM test types: names, what each needs from the target, and which generator
//! builds it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::generators;
use super::phrasing::Phrasing;
use super::script::{Builder, GenParams, TestSpec};
use crate::endpoint::Requirement;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestType {
    Needle,
    KnowledgeUpdate,
    AccumulatedList,
    ShoppingList,
    MultiHop,
    TriggerRule,
    Prospective,
    Episodic,
    RelativeDate,
    Reminder,
    Retention,
    Abstention,
    ResetIsolation,
    InjectedRecall,
}

impl TestType {
    pub const ALL: [TestType; 14] = [
        TestType::Needle,
        TestType::KnowledgeUpdate,
        TestType::AccumulatedList,
        TestType::ShoppingList,
        TestType::MultiHop,
        TestType::TriggerRule,
        TestType::Prospective,
        TestType::Episodic,
        TestType::RelativeDate,
        TestType::Reminder,
        TestType::Retention,
        TestType::Abstention,
        TestType::ResetIsolation,
        TestType::InjectedRecall,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TestType::Needle => "needle",
            TestType::KnowledgeUpdate => "knowledge_update",
            TestType::AccumulatedList => "accumulated_list",
            TestType::ShoppingList => "shopping_list",
            TestType::MultiHop => "multi_hop",
            TestType::TriggerRule => "trigger_rule",
            TestType::Prospective => "prospective",
            TestType::Episodic => "episodic",
            TestType::RelativeDate => "relative_date",
            TestType::Reminder => "reminder",
            TestType::Retention => "retention",
            TestType::Abstention => "abstention",
            TestType::ResetIsolation => "reset_isolation",
            TestType::InjectedRecall => "injected_recall",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            TestType::Needle => "Needle recall across filler",
            TestType::KnowledgeUpdate => "Knowledge update (latest value wins)",
            TestType::AccumulatedList => "Accumulated list (set overlap)",
            TestType::ShoppingList => "Shopping-list state",
            TestType::MultiHop => "Multi-hop integration",
            TestType::TriggerRule => "Standing trigger rule",
            TestType::Prospective => "Prospective memory (n-th reply)",
            TestType::Episodic => "Episodic recall after a day",
            TestType::RelativeDate => "Relative dates",
            TestType::Reminder => "Reminder fires when due",
            TestType::Retention => "Retention curve (1 h to 30 d)",
            TestType::Abstention => "Abstention trap",
            TestType::ResetIsolation => "Reset and isolation",
            TestType::InjectedRecall => "Injected memory recall",
        }
    }

    /// What the target must offer for the test to be applicable.
    pub fn requires(self) -> &'static [Requirement] {
        match self {
            TestType::Episodic
            | TestType::RelativeDate
            | TestType::Reminder
            | TestType::Retention => &[Requirement::MockTime],
            TestType::ResetIsolation => &[Requirement::Reset],
            TestType::InjectedRecall => &[Requirement::Inject],
            _ => &[],
        }
    }

    /// Whether passing needs memory at all (an amnesiac target should pass only the others).
    pub fn needs_memory(self) -> bool {
        self != TestType::Abstention
    }

    /// Generates trial `trial` (1-based) of this type.
    pub fn generate(self, params: GenParams, trial: u32) -> TestSpec {
        let mut b = Builder::new(params, format!("{}-{trial:02}", self.name()));
        if params.phrasing == Phrasing::Heldout {
            generators::heldout::generate(self, &mut b);
            return b.finish(self, trial);
        }
        match self {
            TestType::Needle => generators::facts::needle(&mut b),
            TestType::KnowledgeUpdate => generators::facts::knowledge_update(&mut b),
            TestType::AccumulatedList => generators::facts::accumulated_list(&mut b),
            TestType::ShoppingList => generators::facts::shopping_list(&mut b),
            TestType::MultiHop => generators::facts::multi_hop(&mut b),
            TestType::Abstention => generators::facts::abstention(&mut b),
            TestType::TriggerRule => generators::rules::trigger_rule(&mut b),
            TestType::Prospective => generators::rules::prospective(&mut b),
            TestType::Reminder => generators::rules::reminder(&mut b),
            TestType::Episodic => generators::time::episodic(&mut b),
            TestType::RelativeDate => generators::time::relative_date(&mut b),
            TestType::Retention => generators::time::retention(&mut b),
            TestType::ResetIsolation => generators::control::reset_isolation(&mut b),
            TestType::InjectedRecall => generators::control::injected_recall(&mut b),
        }
        b.finish(self, trial)
    }
}

impl fmt::Display for TestType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown test type {0:?}; known: {known}", known = TestType::ALL.map(TestType::name).join(", "))]
pub struct UnknownTestType(pub String);

impl FromStr for TestType {
    type Err = UnknownTestType;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().replace('-', "_");
        TestType::ALL
            .into_iter()
            .find(|t| t.name() == wanted)
            .ok_or_else(|| UnknownTestType(s.to_owned()))
    }
}

/// Every test of a run, in order: types in the given order, trials 1..=trials each.
pub fn generate_all(types: &[TestType], trials: u32, params: GenParams) -> Vec<TestSpec> {
    types
        .iter()
        .flat_map(|t| (1..=trials).map(move |trial| t.generate(params, trial)))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::suites::ltm::filler::FILLER_SLACK;
    use crate::suites::ltm::script::{Step, TURN_GAP_SECONDS};

    fn params(seed: u64, span: u32) -> GenParams {
        GenParams {
            run_seed: seed,
            span_tokens: span,
            filler_turn_tokens: 200,
            phrasing: Phrasing::Standard,
        }
    }

    #[test]
    fn every_type_generates_a_scored_reproducible_script() {
        for t in TestType::ALL {
            let spec = t.generate(params(5, 600), 1);
            assert_eq!(
                spec,
                t.generate(params(5, 600), 1),
                "{t} is not reproducible"
            );
            assert_ne!(
                spec.steps,
                t.generate(params(6, 600), 1).steps,
                "{t} ignores the seed"
            );
            assert_ne!(
                spec.steps,
                t.generate(params(5, 600), 2).steps,
                "{t} trials are identical"
            );
            assert_eq!(spec.id, format!("{}-01", t.name()));
            assert_eq!(spec.requires, t.requires());
            assert!(spec.checks().count() >= 1, "{t} scores nothing");
            assert!(!spec.sessions.is_empty());
            // Filler is counted and near the span (split spans lose a little per piece).
            assert!(spec.filler_tokens <= 600, "{t}: {}", spec.filler_tokens);
            assert!(
                spec.filler_tokens + 4 * FILLER_SLACK >= 600,
                "{t}: only {} filler tokens",
                spec.filler_tokens
            );
            // Each scored turn's ideal reply passes its own scorer.
            for step in &spec.steps {
                if let Step::Say {
                    ideal,
                    check: Some(check),
                    ..
                } = step
                {
                    let verdict = check.scorer.score(ideal);
                    assert!(verdict.passed, "{t}: ideal {ideal:?} fails: {verdict:?}");
                }
            }
        }
    }

    /// Each scored turn of `spec` with the time its session's clock shows when it is played
    /// (as the runner plays it: [`TURN_GAP_SECONDS`] per turn, plus every advance), and the
    /// time of its session's first turn.
    fn checks_on_the_clock(spec: &TestSpec) -> Vec<(String, chrono::DateTime<chrono::Utc>)> {
        let mut clocks: Vec<_> = spec.sessions.iter().map(|s| s.start).collect();
        let mut out = Vec::new();
        for step in &spec.steps {
            match step {
                Step::Say { session, check, .. } => {
                    if let Some(check) = check {
                        out.push((check.label.clone(), clocks[*session]));
                    }
                    clocks[*session] += chrono::Duration::seconds(TURN_GAP_SECONDS);
                }
                Step::Advance { session, seconds } => {
                    clocks[*session] += chrono::Duration::seconds(*seconds);
                }
                _ => {}
            }
        }
        out
    }

    fn first_text(spec: &TestSpec) -> &str {
        spec.steps
            .iter()
            .find_map(|s| match s {
                Step::Say { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .unwrap()
    }

    /// At the longest span, no message outgrows what a server accepts in one request.
    #[test]
    fn no_message_outgrows_a_request_at_any_span() {
        use crate::suites::ltm::filler::{MAX_MESSAGE_TOKENS, count_tokens};
        let params = GenParams {
            run_seed: 4,
            span_tokens: 500_000,
            filler_turn_tokens: 250,
            phrasing: Phrasing::Standard,
        };
        for t in TestType::ALL {
            let spec = t.generate(params, 1);
            let longest = spec
                .steps
                .iter()
                .filter_map(|s| match s {
                    Step::Say { text, .. } => Some(count_tokens(text)),
                    _ => None,
                })
                .max()
                .unwrap_or(0);
            assert!(
                longest <= MAX_MESSAGE_TOKENS + FILLER_SLACK,
                "{t}: a message of {longest} tokens"
            );
        }
    }

    /// The clock-dependent checks stay true at every span the suite allows (1k to 500k tokens),
    /// although the filler itself moves the session clock a minute per turn.
    #[test]
    fn clock_checks_hold_at_every_span() {
        for span in [1_000, 32_000, 120_000, 500_000] {
            let params = GenParams {
                run_seed: 3,
                span_tokens: span,
                filler_turn_tokens: 250,
                phrasing: Phrasing::Standard,
            };
            // A reminder is silent an hour before it is due and fires an hour after.
            let spec = TestType::Reminder.generate(params, 1);
            let said = first_text(&spec);
            let hours: i64 = said
                .split_whitespace()
                .rev()
                .nth(1)
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no hours in {said:?}"));
            let due = spec.sessions[0].start + chrono::Duration::hours(hours);
            let checks = checks_on_the_clock(&spec);
            assert_eq!(checks[0].0, "silent before due");
            assert!(
                checks[0].1 < due,
                "span {span}: silent check at {} is past due {due}",
                checks[0].1
            );
            assert!(
                checks[1].1 >= due,
                "span {span}: firing check at {} is before due {due}",
                checks[1].1
            );

            // "Yesterday" names the day before the one the question is asked on.
            let spec = TestType::Episodic.generate(params, 1);
            let told_on = spec.sessions[0].start.date_naive();
            let Some(Step::Say { text, .. }) = spec
                .steps
                .iter()
                .rev()
                .find(|s| matches!(s, Step::Say { check: Some(_), .. }))
            else {
                panic!("episodic asks nothing");
            };
            let asked_on = checks_on_the_clock(&spec)[0].1.date_naive();
            let days = (asked_on - told_on).num_days();
            let expected = if days == 1 {
                "yesterday".to_owned()
            } else {
                format!("{days} days ago")
            };
            assert!(
                text.contains(&expected),
                "span {span}: {text:?} asked {days} days later"
            );

            // Each retention horizon has passed since the fact was told.
            let spec = TestType::Retention.generate(params, 1);
            for ((label, at), (_, jump)) in checks_on_the_clock(&spec)
                .into_iter()
                .zip(crate::suites::ltm::generators::time::horizons())
            {
                assert!(
                    at - spec.sessions[0].start >= jump,
                    "span {span}: {label} asked after {}",
                    at - spec.sessions[0].start
                );
            }
        }
    }

    #[test]
    fn session_ids_are_distinct_uuids() {
        let specs = generate_all(&TestType::ALL, 2, params(9, 100));
        let ids: Vec<&str> = specs
            .iter()
            .flat_map(|s| s.sessions.iter().map(|x| x.session_id.as_str()))
            .collect();
        let unique: HashSet<&str> = ids.iter().copied().collect();
        assert_eq!(unique.len(), ids.len());
        for id in ids {
            let parsed = uuid::Uuid::parse_str(id).unwrap();
            assert_eq!(parsed.get_version_num(), 4);
        }
    }

    #[test]
    fn type_names_round_trip() {
        for t in TestType::ALL {
            assert_eq!(t.name().parse::<TestType>(), Ok(t));
            assert_eq!(
                serde_json::to_string(&t).unwrap(),
                format!("\"{}\"", t.name())
            );
        }
        assert_eq!(
            "relative-date".parse::<TestType>(),
            Ok(TestType::RelativeDate)
        );
        assert!("telepathy".parse::<TestType>().is_err());
    }
}
