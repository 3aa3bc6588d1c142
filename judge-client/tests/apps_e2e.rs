//! The end-to-end scenarios of docs/contracts/apps.md, E2E-01 to E2E-03, with both agents scripted, plus
//! checkpoint, restore and branching of a whole run.

use judge_client::suites::apps::world::AppSetup;
use judge_client::suites::apps::{AppRegistry, LogicalClock, World};
use serde_json::{Value, json};

fn world(seed: u64) -> World {
    let apps = [AppSetup {
        id: "paypal".to_owned(),
        config: json!({"initial_balance": 100.00, "transaction_fee": 0.00, "daily_limit": 10000.00}),
    }];
    let agents = ["alice".to_owned(), "bob".to_owned()];
    World::new(
        &AppRegistry::builtin(),
        &apps,
        &agents,
        seed,
        LogicalClock::default(),
    )
    .unwrap()
}

fn cents(world: &World, agent: &str) -> i64 {
    world.state()["paypal"]["accounts"][agent]["balance_cents"]
        .as_i64()
        .unwrap()
}

#[test]
fn e2e_01_bill_splitting() {
    let mut world = world(1);
    let turn = world.act(
        "alice",
        "I'll pay for dinner!\nAPP_ACTION: paypal.transfer(to=\"bob\", amount=30)",
    );
    assert_eq!(turn.parsed.prose, "I'll pay for dinner!");
    world.advance();
    let bob_sees = world.observations("bob");
    assert!(
        bob_sees
            .iter()
            .any(|o| o.message.contains("You received $30"))
    );
    let thanks = world.act("bob", "Thanks!");
    assert!(thanks.results.is_empty());
    assert_eq!(
        (cents(&world, "alice"), cents(&world, "bob")),
        (7_000, 13_000)
    );
    assert_eq!(world.audit().len(), 1);
}

#[test]
fn e2e_02_payment_request_flow() {
    let mut world = world(2);
    world.act(
        "alice",
        r#"Splitting the groceries. APP_ACTION: paypal.request_money(from="bob", amount=50, note="groceries")"#,
    );
    world.advance();
    let bob_sees = world.observations("bob");
    let request = bob_sees
        .iter()
        .find(|o| o.data["type"] == "request")
        .expect("bob is told about the request");
    assert!(
        request
            .message
            .contains("alice requested $50.00 from you: 'groceries'")
    );
    let id = request.data["request_id"].as_str().unwrap().to_owned();
    let paid = world.act(
        "bob",
        &format!("Sure. APP_ACTION: paypal.pay_request(request_id=\"{id}\")"),
    );
    assert!(paid.results[0].success);
    world.advance();
    let alice_sees = world.observations("alice");
    assert!(
        alice_sees
            .iter()
            .any(|o| o.message == "bob paid your $50.00 request")
    );
    let state = world.state();
    assert_eq!(state["paypal"]["requests"][0]["status"], "paid");
    assert_eq!(
        (cents(&world, "alice"), cents(&world, "bob")),
        (15_000, 5_000)
    );
}

#[test]
fn e2e_03_insufficient_funds_recovery() {
    let mut world = world(3);
    let first = world.act(
        "alice",
        r#"APP_ACTION: paypal.transfer(to="bob", amount=200)"#,
    );
    assert!(!first.results[0].success);
    world.advance();
    let told = world.observations("alice");
    assert!(told[0].message.contains("Insufficient funds"));
    let second = world.act(
        "alice",
        r#"APP_ACTION: paypal.transfer(to="bob", amount=50)"#,
    );
    assert!(second.results[0].success);
    let log = world.audit().entries();
    assert_eq!(
        log.iter().map(|e| e.success).collect::<Vec<_>>(),
        [false, true]
    );
    assert_eq!(
        (cents(&world, "alice"), cents(&world, "bob")),
        (5_000, 15_000)
    );
}

/// Plays a fixed script: per amount, a transfer by alice and a request by bob, one step each.
fn continue_script(world: &mut World, amounts: &[u32]) {
    for amount in amounts {
        world.act(
            "alice",
            &format!("APP_ACTION: paypal.transfer(to=\"bob\", amount={amount})"),
        );
        world.act(
            "bob",
            "APP_ACTION: paypal.request_money(from=\"alice\", amount=1)",
        );
        world.advance();
    }
}

#[test]
fn a_run_branches_from_a_checkpoint_and_replays_identically() {
    let registry = AppRegistry::builtin();
    let mut trunk = world(7);
    continue_script(&mut trunk, &[5, 6]);
    let checkpoint = trunk.checkpoint();
    // The checkpoint travels as JSON (in the run directory, say).
    let checkpoint = serde_json::from_str(&serde_json::to_string(&checkpoint).unwrap()).unwrap();

    let mut branch = World::from_checkpoint(&registry, &checkpoint).unwrap();
    assert_eq!(branch.step(), trunk.step());
    assert_eq!(branch.state(), trunk.state());

    // Same continuation: the branch is indistinguishable from the trunk, ids included.
    let mut replay = World::from_checkpoint(&registry, &checkpoint).unwrap();
    continue_script(&mut trunk, &[7]);
    continue_script(&mut replay, &[7]);
    assert_eq!(replay.audit().to_jsonl(), trunk.audit().to_jsonl());
    assert_eq!(replay.state(), trunk.state());

    // Another continuation diverges, and the trunk is untouched by it.
    continue_script(&mut branch, &[50]);
    assert_ne!(branch.state(), trunk.state());
    assert_eq!(cents(&branch, "alice"), 10_000 - 500 - 600 - 5_000);
    assert_eq!(cents(&trunk, "alice"), 10_000 - 500 - 600 - 700);

    // Restoring the trunk itself rewinds it, audit log included.
    trunk.restore(&checkpoint).unwrap();
    assert_eq!(trunk.audit().len(), 4);
    assert_eq!(
        trunk.state(),
        World::from_checkpoint(&registry, &checkpoint)
            .unwrap()
            .state()
    );
}

#[test]
fn restore_refuses_a_checkpoint_of_other_apps() {
    let mut world = world(1);
    let mut checkpoint = world.checkpoint();
    checkpoint
        .app_states
        .insert("amazon".to_owned(), Value::Null);
    assert!(world.restore(&checkpoint).is_err());
    let mut broken = world.checkpoint();
    broken
        .app_states
        .insert("paypal".to_owned(), json!({"not": "a paypal state"}));
    assert!(world.restore(&broken).is_err());
}
