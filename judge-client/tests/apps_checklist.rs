//! The validation checklist of docs/contracts/apps.md (V01 to V07), against the library: scripted agents acting
//! through a `World`, no network.

use judge_client::suites::apps::audit::INVALID_DIRECTIVE;
use judge_client::suites::apps::paypal::PayPal;
use judge_client::suites::apps::world::AppSetup;
use judge_client::suites::apps::{
    ActionSpec, App, AppError, AppRegistry, AppResult, LogicalClock, Params, World,
};
use serde_json::{Value, json};

fn agents() -> Vec<String> {
    vec!["alice".to_owned(), "bob".to_owned()]
}

fn paypal_world(config: Value, seed: u64) -> World {
    let apps = [AppSetup {
        id: "paypal".to_owned(),
        config,
    }];
    World::new(
        &AppRegistry::builtin(),
        &apps,
        &agents(),
        seed,
        LogicalClock::default(),
    )
    .expect("world")
}

fn balance(world: &World, agent: &str) -> i64 {
    world.agent_state("paypal", agent).expect("account")["balance_cents"]
        .as_i64()
        .expect("cents")
}

fn params(value: Value) -> Params {
    value.as_object().cloned().expect("object")
}

// ---- REQ-01: agent action calls ----

#[test]
fn v01_01_check_balance_directive_is_parsed_executed_and_logged() {
    let mut world = paypal_world(Value::Null, 1);
    let turn = world.act("alice", "Let me look. APP_ACTION: paypal.check_balance()");
    assert!(turn.results[0].success);
    let entry = &world.audit().entries()[0];
    assert_eq!(entry.action, "check_balance");
    assert_eq!(entry.result.as_ref().unwrap()["balance"], json!("1000.00"));
}

#[test]
fn v01_02_transfer_directive_moves_money() {
    let mut world = paypal_world(Value::Null, 1);
    world.act(
        "alice",
        r#"APP_ACTION: paypal.transfer(to="bob", amount=50)"#,
    );
    assert_eq!(balance(&world, "alice"), 95_000);
    assert_eq!(balance(&world, "bob"), 105_000);
}

#[test]
fn v01_03_several_directives_run_in_order_in_one_step() {
    let mut world = paypal_world(json!({"initial_balance": 100}), 1);
    let text = "APP_ACTION: paypal.transfer(to=\"bob\", amount=60)\nAPP_ACTION: paypal.transfer(to=\"bob\", amount=60)\nAPP_ACTION: paypal.check_balance()";
    let turn = world.act("alice", text);
    let outcomes: Vec<bool> = turn.results.iter().map(|r| r.success).collect();
    // In order: the second transfer sees the balance the first one left.
    assert_eq!(outcomes, [true, false, true]);
    let step = world.step();
    let logged: Vec<&str> = world
        .audit()
        .for_step(step)
        .map(|e| e.action.as_str())
        .collect();
    assert_eq!(logged, ["transfer", "transfer", "check_balance"]);
}

#[test]
fn v01_04_invalid_syntax_is_logged_and_the_run_goes_on() {
    let mut world = paypal_world(Value::Null, 1);
    let turn = world.act(
        "alice",
        "Oops APP_ACTION: paypal.transfer(to=\"bob, amount=5\nAPP_ACTION: paypal.check_balance()",
    );
    assert!(!turn.results[0].success);
    assert!(turn.results[1].success, "the next directive still runs");
    let entry = &world.audit().entries()[0];
    assert_eq!(entry.action, INVALID_DIRECTIVE);
    assert!(
        entry
            .error
            .as_ref()
            .unwrap()
            .contains("unterminated string")
    );
    let seen = world.observations("alice");
    assert!(
        seen.iter()
            .any(|o| o.message.contains("was not executed") && o.data["type"] == "error")
    );
    world.advance();
    assert!(
        world
            .act("alice", "APP_ACTION: paypal.check_balance()")
            .results[0]
            .success
    );
}

#[test]
fn v01_05_unknown_action_fails_and_is_logged() {
    let mut world = paypal_world(Value::Null, 1);
    let result = world.execute("alice", "paypal", "launder_money", &Params::new());
    assert!(!result.success);
    assert!(result.error.unwrap().contains("Unknown action"));
    assert!(!world.audit().entries()[0].success);
    let unknown_app = world.execute("alice", "venmo", "transfer", &Params::new());
    assert!(unknown_app.error.unwrap().contains("Unknown app"));
}

// ---- REQ-02: persistent app state ----

#[test]
fn v02_01_and_02_state_persists_and_accumulates_across_steps() {
    let mut world = paypal_world(json!({"initial_balance": 100}), 1);
    for amount in [10, 20, 5] {
        world.act(
            "alice",
            &format!("APP_ACTION: paypal.transfer(to=\"bob\", amount={amount})"),
        );
        world.advance();
    }
    world.advance();
    let turn = world.act("alice", "APP_ACTION: paypal.check_balance()");
    assert_eq!(
        turn.results[0].data.as_ref().unwrap()["balance_cents"],
        6_500
    );
    assert_eq!(balance(&world, "bob"), 13_500);
}

#[test]
fn v02_03_state_survives_a_round_trip_through_its_serialised_form() {
    let mut world = paypal_world(Value::Null, 9);
    world.act(
        "alice",
        r#"APP_ACTION: paypal.transfer(to="bob", amount=12.34)"#,
    );
    let text = serde_json::to_string(&world.checkpoint()).unwrap();
    let restored = World::from_checkpoint(
        &AppRegistry::builtin(),
        &serde_json::from_str(&text).unwrap(),
    )
    .unwrap();
    assert_eq!(restored.state(), world.state());
    assert_eq!(restored.audit(), world.audit());
}

#[test]
fn v02_04_a_money_request_stays_pending_in_later_steps() {
    let mut world = paypal_world(Value::Null, 1);
    let turn = world.act(
        "alice",
        r#"APP_ACTION: paypal.request_money(from="bob", amount=50, note="tickets")"#,
    );
    let id = turn.results[0].data.as_ref().unwrap()["request_id"].clone();
    world.advance();
    world.advance();
    let bob = world.agent_state("paypal", "bob").unwrap();
    assert_eq!(bob["pending_requests"][0]["request_id"], id);
    assert_eq!(bob["pending_requests"][0]["amount"], "50.00");
}

// ---- REQ-03: realistic outcomes ----

fn transfer(world: &mut World, to: &str, amount: Value) -> AppResult {
    world.execute(
        "alice",
        "paypal",
        "transfer",
        &params(json!({"to": to, "amount": amount})),
    )
}

#[test]
fn v03_01_transfer_over_balance_is_insufficient_funds() {
    let mut world = paypal_world(Value::Null, 1);
    let result = transfer(&mut world, "bob", json!(99_999));
    assert!(!result.success);
    assert!(result.error.unwrap().contains("Insufficient"));
    assert_eq!(balance(&world, "alice"), 100_000);
}

#[test]
fn v03_02_transfer_to_a_stranger_is_not_found() {
    let mut world = paypal_world(Value::Null, 1);
    let result = transfer(&mut world, "mallory", json!(5));
    assert!(result.error.unwrap().contains("not found"));
}

#[test]
fn v03_03_negative_zero_and_over_precise_amounts_fail_validation() {
    let mut world = paypal_world(Value::Null, 1);
    for amount in [json!(-5), json!(0), json!("0.00")] {
        let result = transfer(&mut world, "bob", amount);
        assert!(result.error.unwrap().contains("positive"));
    }
    let result = transfer(&mut world, "bob", json!(1.005));
    assert!(result.error.unwrap().contains("two decimals"));
    assert_eq!(balance(&world, "bob"), 100_000);
}

#[test]
fn v03_04_paying_a_resolved_request_fails() {
    let mut world = paypal_world(Value::Null, 1);
    let asked = world.execute(
        "alice",
        "paypal",
        "request_money",
        &params(json!({"from": "bob", "amount": 10})),
    );
    let id = asked.data.unwrap()["request_id"].clone();
    let pay = params(json!({"request_id": id}));
    assert!(world.execute("bob", "paypal", "pay_request", &pay).success);
    let again = world.execute("bob", "paypal", "pay_request", &pay);
    assert!(again.error.unwrap().contains("already resolved"));
    let decline = world.execute("bob", "paypal", "decline_request", &pay);
    assert!(decline.error.unwrap().contains("already resolved"));
}

#[test]
fn v03_05_valid_transfer_returns_a_transaction_id() {
    let mut world = paypal_world(Value::Null, 1);
    let result = transfer(&mut world, "bob", json!("25.50"));
    assert!(result.success);
    let data = result.data.unwrap();
    assert!(data["transaction_id"].as_str().unwrap().starts_with("tx-"));
    assert_eq!(data["new_balance"], "974.50");
}

#[test]
fn paypal_enforces_fee_daily_limit_and_the_other_validations() {
    let mut world = paypal_world(
        json!({"initial_balance": 100, "transaction_fee": 1, "daily_limit": 50}),
        1,
    );
    assert!(transfer(&mut world, "bob", json!(30)).success);
    assert_eq!(balance(&world, "alice"), 6_900, "the fee is charged on top");
    let over = transfer(&mut world, "bob", json!(25));
    assert!(over.error.unwrap().contains("Daily limit"));
    // The limit is per logical day: a day later the same transfer goes through.
    for _ in 0..(24 * 60) {
        world.advance();
    }
    assert!(transfer(&mut world, "bob", json!(25)).success);
    let exact = transfer(&mut world, "bob", json!(43));
    assert!(
        exact.error.unwrap().contains("Insufficient"),
        "43 + 1 fee > 43"
    );
    assert!(
        transfer(&mut world, "alice", json!(1))
            .error
            .unwrap()
            .contains("yourself")
    );
    let no_to = world.execute("alice", "paypal", "transfer", &params(json!({"amount": 1})));
    assert!(no_to.error.unwrap().contains("Missing parameter: to"));
    let limit = world.execute(
        "alice",
        "paypal",
        "view_transactions",
        &params(json!({"limit": 101})),
    );
    assert!(limit.error.unwrap().contains("limit"));
    let ghost = world.execute("mallory", "paypal", "check_balance", &Params::new());
    assert!(ghost.error.unwrap().contains("Account not found"));
    let foreign = world.execute(
        "alice",
        "paypal",
        "pay_request",
        &params(json!({"request_id": "req-nope"})),
    );
    assert!(foreign.error.unwrap().contains("not found"));
    let state = world.state();
    assert_eq!(state["paypal"]["fees_collected_cents"], 200);
}

#[test]
fn counterparties_get_the_documents_messages() {
    let mut world = paypal_world(Value::Null, 1);
    world.act(
        "alice",
        r#"APP_ACTION: paypal.transfer(to="bob", amount=30)"#,
    );
    let bob = world.observations("bob");
    assert_eq!(bob.len(), 1);
    assert_eq!(bob[0].message, "You received $30.00 from alice");
    assert_eq!(bob[0].data["type"], "received");
    let alice = world.observations("alice");
    assert!(alice[0].message.contains("paypal.transfer ok"));
    assert!(world.observations("alice").is_empty(), "drained");

    world.act(
        "alice",
        r#"APP_ACTION: paypal.request_money(from="bob", amount=5, note="cab")"#,
    );
    let bob = world.observations("bob");
    assert!(
        bob[0]
            .message
            .starts_with("alice requested $5.00 from you: 'cab'")
    );
    let id = bob[0].data["request_id"].as_str().unwrap().to_owned();
    world.act(
        "bob",
        &format!("APP_ACTION: paypal.decline_request(request_id=\"{id}\")"),
    );
    let alice = world.observations("alice");
    assert!(
        alice
            .iter()
            .any(|o| o.message == "bob declined your $5.00 request")
    );
}

// ---- REQ-04: pluggable apps ----

/// A minimal second app: a counter, with none of the optional methods.
struct Counter {
    count: i64,
}

impl App for Counter {
    fn id(&self) -> &str {
        "counter"
    }
    fn name(&self) -> &str {
        "Counter"
    }
    fn actions(&self) -> Vec<ActionSpec> {
        vec![ActionSpec {
            name: "bump".to_owned(),
            description: "Adds one".to_owned(),
            parameters: json!({"type": "object", "properties": {}}),
            returns: json!({"count": "integer"}),
        }]
    }
    fn initialize(&mut self, _: &[String], config: &Value, _: u64) -> Result<(), AppError> {
        self.count = config["start"].as_i64().unwrap_or(0);
        Ok(())
    }
    fn execute(&mut self, _: &str, action: &str, _: &Params, _: &LogicalClock) -> AppResult {
        match action {
            "bump" => {
                self.count += 1;
                AppResult::ok("bumped", json!({"count": self.count}))
            }
            _ => AppResult::fail("Unknown action"),
        }
    }
    fn snapshot(&self) -> Value {
        json!({"count": self.count})
    }
    fn restore(&mut self, snapshot: &Value) -> Result<(), AppError> {
        self.count = snapshot["count"].as_i64().unwrap_or(0);
        Ok(())
    }
}

fn registry_with_counter() -> AppRegistry {
    let mut registry = AppRegistry::builtin();
    registry.register("counter", || Box::new(Counter { count: 0 }));
    registry
}

fn two_app_world() -> World {
    let apps = [
        AppSetup {
            id: "paypal".to_owned(),
            config: Value::Null,
        },
        AppSetup {
            id: "counter".to_owned(),
            config: json!({"start": 10}),
        },
    ];
    World::new(
        &registry_with_counter(),
        &apps,
        &agents(),
        3,
        LogicalClock::default(),
    )
    .unwrap()
}

#[test]
fn v04_01_and_02_a_registered_app_is_available_and_initialised() {
    let registry = registry_with_counter();
    assert!(registry.contains("counter"));
    assert_eq!(registry.create("counter").unwrap().id(), "counter");
    assert!(registry.create("nope").is_err());
    assert_eq!(two_app_world().state()["counter"]["count"], 10);
}

#[test]
fn v04_03_an_app_without_optional_methods_uses_the_defaults() {
    let mut world = two_app_world();
    assert!(world.act("alice", "APP_ACTION: counter.bump()").results[0].success);
    assert_eq!(world.agent_state("counter", "alice"), None);
    assert_eq!(world.app("counter").unwrap().description(), "");
    // Only the world's own result observation: the app has no notifications of its own.
    assert_eq!(world.observations("alice").len(), 1);
}

#[test]
fn v04_04_two_apps_keep_separate_state() {
    let mut world = two_app_world();
    world.act(
        "alice",
        "APP_ACTION: counter.bump()\nAPP_ACTION: paypal.transfer(to=\"bob\", amount=1)",
    );
    let state = world.state();
    assert_eq!(state["counter"]["count"], 11);
    assert_eq!(
        state["paypal"]["accounts"]["alice"]["balance_cents"],
        99_900
    );
}

// ---- REQ-05: audit trail ----

#[test]
fn v05_audit_entries_are_complete_ordered_filterable_and_written_as_json_lines() {
    let mut world = paypal_world(Value::Null, 1);
    world.act(
        "alice",
        r#"APP_ACTION: paypal.transfer(to="bob", amount=5, note="x")"#,
    );
    world.advance();
    world.act(
        "bob",
        r#"APP_ACTION: paypal.transfer(to="alice", amount=1e9)"#,
    );
    world.advance();
    world.act("alice", "APP_ACTION: paypal.check_balance()");
    let log = world.audit();
    let first = &log.entries()[0];
    assert_eq!(
        (
            first.seq,
            first.step,
            first.agent.as_str(),
            first.app.as_str()
        ),
        (0, 0, "alice", "paypal")
    );
    assert_eq!(first.params["note"], "x");
    assert!(first.success && first.result.is_some() && first.error.is_none());
    assert_eq!(first.time, "2025-01-01T09:00:00Z");
    let failed = &log.entries()[1];
    assert!(!failed.success && failed.error.as_ref().unwrap().contains("Insufficient"));
    assert_eq!(
        (failed.step, failed.time.as_str()),
        (1, "2025-01-01T09:01:00Z")
    );
    let seqs: Vec<u64> = log.entries().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [0, 1, 2]);
    assert_eq!(log.for_agent("alice").count(), 2);
    assert!(log.for_agent("bob").all(|e| e.agent == "bob"));
    let lines = log.to_jsonl();
    assert_eq!(lines.lines().count(), 3);
    assert_eq!(
        judge_client::suites::apps::AuditLog::from_jsonl(&lines).unwrap(),
        *log
    );
}

// ---- REQ-06: checkpoints ----

#[test]
fn v06_checkpoint_holds_every_app_and_restores_it() {
    let mut world = two_app_world();
    world.act(
        "alice",
        "APP_ACTION: paypal.transfer(to=\"bob\", amount=100)\nAPP_ACTION: counter.bump()",
    );
    let checkpoint = world.checkpoint();
    let as_json = serde_json::to_value(&checkpoint).unwrap();
    assert!(as_json["app_states"]["paypal"].is_object());
    assert!(as_json["app_states"]["counter"].is_object());
    let saved = world.state();

    world.act(
        "alice",
        "APP_ACTION: paypal.transfer(to=\"bob\", amount=800)\nAPP_ACTION: counter.bump()",
    );
    assert_ne!(world.state(), saved);
    world.restore(&checkpoint).unwrap();
    assert_eq!(world.state(), saved);
    assert_eq!(balance(&world, "alice"), 90_000);
    // V06-03: new actions run on the restored balances.
    let again = world.act(
        "alice",
        r#"APP_ACTION: paypal.transfer(to="bob", amount=900)"#,
    );
    assert!(again.results[0].success);
    assert_eq!(balance(&world, "alice"), 0);
}

// ---- REQ-07: determinism ----

fn scripted_run(seed: u64) -> (String, Value) {
    let mut world = paypal_world(json!({"initial_balance": 300}), seed);
    world.act(
        "alice",
        r#"APP_ACTION: paypal.transfer(to="bob", amount=30)"#,
    );
    world.advance();
    world.act(
        "bob",
        r#"APP_ACTION: paypal.request_money(from="alice", amount=12)"#,
    );
    world.advance();
    let id = world
        .observations("alice")
        .iter()
        .find_map(|o| o.data.get("request_id").cloned())
        .unwrap();
    world.act(
        "alice",
        &format!("APP_ACTION: paypal.pay_request(request_id={id})"),
    );
    (world.audit().to_jsonl(), world.state())
}

#[test]
fn v07_same_seed_same_everything_other_seed_other_ids() {
    let first = paypal_world(Value::Null, 42).state();
    assert_eq!(first, paypal_world(Value::Null, 42).state(), "V07-01");
    assert_eq!(scripted_run(42), scripted_run(42), "V07-02");
    let (log_a, state_a) = scripted_run(42);
    let (log_b, state_b) = scripted_run(43);
    assert_ne!(log_a, log_b, "V07-03: ids differ");
    assert_ne!(state_a, state_b);
    assert_eq!(
        state_a["paypal"]["accounts"], state_b["paypal"]["accounts"],
        "only ids differ, never the outcome"
    );
}

#[test]
fn paypal_describes_its_six_actions() {
    let names: Vec<String> = PayPal::new()
        .actions()
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert_eq!(
        names,
        [
            "check_balance",
            "transfer",
            "request_money",
            "view_transactions",
            "pay_request",
            "decline_request"
        ]
    );
}

#[test]
fn view_transactions_lists_the_agents_own_newest_first_within_the_limit() {
    let mut world = paypal_world(Value::Null, 1);
    for amount in [1, 2, 3] {
        transfer(&mut world, "bob", json!(amount));
    }
    world.execute(
        "bob",
        "paypal",
        "transfer",
        &params(json!({"to": "alice", "amount": 4})),
    );
    let listed = world.execute(
        "alice",
        "paypal",
        "view_transactions",
        &params(json!({"limit": 3})),
    );
    let amounts: Vec<&str> = listed.data.as_ref().unwrap()["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["amount"].as_str().unwrap())
        .collect();
    assert_eq!(amounts, ["4.00", "3.00", "2.00"]);
}

#[test]
fn paying_a_request_counts_toward_the_daily_limit() {
    let mut world = paypal_world(json!({"daily_limit": 40}), 1);
    let asked = world.execute(
        "bob",
        "paypal",
        "request_money",
        &params(json!({"from": "alice", "amount": 25})),
    );
    let id = asked.data.unwrap()["request_id"].clone();
    assert!(transfer(&mut world, "bob", json!(20)).success);
    let pay = world.execute(
        "alice",
        "paypal",
        "pay_request",
        &params(json!({"request_id": id})),
    );
    assert!(pay.error.unwrap().contains("Daily limit"));
    let state = world.state();
    assert_eq!(state["paypal"]["requests"][0]["status"], "pending");
}
