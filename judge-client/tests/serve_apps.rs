//! The app endpoints (docs/contracts/apps.md) of `judge serve` over a real apps run directory: the shipped
//! transfer scenario played by the reference agent, written with the suite's own artifact
//! writer, then read over HTTP (state, an agent's part, the audit log in order, 404s).

mod common;

use std::time::Duration;

use awc::Client;
use judge_client::serve::{ServeConfig, bind};
use judge_client::suites::apps::artifacts::write_outcome;
use serde_json::{Value, json};

const RUN: &str = "apps-20260105T090000Z-seed1";

async fn apps_run(root: &std::path::Path) {
    let outcome = common::play_transfer_scenario(2).await;
    let dir = root.join(RUN);
    write_outcome(&dir.join("scenarios"), &outcome).unwrap();
    let manifest = json!({"run_id": RUN, "suite": "apps", "created_at": "2026-01-05T09:00:00Z"});
    let results = json!({"suite": "apps", "mean_pass_hat_k": 1.0});
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    std::fs::write(dir.join("results.json"), results.to_string()).unwrap();
}

#[actix_rt::test]
async fn apps_runs_are_simulations_with_state_and_audit() {
    let runs = tempfile::tempdir().unwrap();
    apps_run(runs.path()).await;
    let (server, addr) = bind(ServeConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        runs: runs.path().to_path_buf(),
        auth_token: None,
        workers: 1,
    })
    .unwrap();
    let handle = server.handle();
    actix_rt::spawn(server);
    let client = Client::builder().timeout(Duration::from_secs(30)).finish();
    let get = |path: String| {
        let client = client.clone();
        async move {
            let mut r = client
                .get(format!("http://{addr}{path}"))
                .send()
                .await
                .unwrap();
            let body: Value = r.json().limit(1 << 20).await.unwrap();
            (r.status().as_u16(), body)
        }
    };

    let (status, sims) = get("/simulations".to_owned()).await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = sims
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] == "apps")
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{sims}");
    let id = ids[0].to_owned();
    assert!(id.starts_with(&format!("{RUN}:transfer-basic:")), "{id}");
    let (status, sim) = get(format!("/simulations/{id}")).await;
    assert_eq!(
        (status, &sim["outcome"]["status"]),
        (200, &json!("passed")),
        "{sim}"
    );

    let (status, apps) = get(format!("/simulations/{id}/apps")).await;
    assert_eq!(status, 200);
    assert_eq!(apps[0]["app_id"], "paypal", "{apps}");
    let (_, paypal) = get(format!("/simulations/{id}/apps/paypal")).await;
    assert_eq!(paypal["state"]["accounts"]["alice"]["balance_cents"], 7000);
    let (status, bob) = get(format!("/simulations/{id}/apps/paypal/agents/bob")).await;
    assert_eq!(status, 200);
    assert_eq!(bob["account"]["balance_cents"], 13000);
    assert_eq!(
        bob["records"]["transactions"].as_array().unwrap().len(),
        1,
        "{bob}"
    );

    let (status, actions) = get(format!("/simulations/{id}/apps/paypal/actions")).await;
    assert_eq!(status, 200);
    let actions = actions.as_array().unwrap();
    assert!(!actions.is_empty());
    let seqs: Vec<u64> = actions.iter().map(|a| a["seq"].as_u64().unwrap()).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "not chronological: {seqs:?}"
    );
    assert!(
        actions
            .iter()
            .any(|a| a["action"] == "transfer" && a["agent"] == "alice")
    );
    let (_, of_bob) = get(format!(
        "/simulations/{id}/apps/paypal/actions?agent_id=bob"
    ))
    .await;
    assert!(
        of_bob
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["agent"] == "bob"),
        "{of_bob}"
    );
    let (_, of_alice) = get(format!(
        "/simulations/{id}/apps/paypal/actions?agent_id=alice"
    ))
    .await;
    assert_eq!(
        of_alice.as_array().unwrap().len() + of_bob.as_array().unwrap().len(),
        actions.len()
    );

    for (path, status) in [
        (format!("/simulations/{id}/apps/venmo"), 404),
        (format!("/simulations/{id}/apps/paypal/agents/mallory"), 404),
        (format!("/simulations/{RUN}:transfer-basic:99/apps"), 404),
        (format!("/simulations/{RUN}:nope:1/apps"), 404),
        (format!("/simulations/{RUN}:transfer-basic:x/apps"), 400),
        ("/simulations/..:a:1/apps".to_owned(), 400),
        ("/simulations/sim-nope/apps".to_owned(), 404),
    ] {
        let (got, body) = get(path.clone()).await;
        assert_eq!(got, status, "{path}: {body}");
        assert!(body["error"]["message"].is_string(), "{body}");
    }
    handle.stop(false).await;
}
