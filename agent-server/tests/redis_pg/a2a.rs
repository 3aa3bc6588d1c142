//! A2A tasks on the redis+postgres backend, through the real server: a task is stored in Postgres
//! (migration 10) before it is answered, so it is got, listed and recalled from after the server
//! restarts; a session reset forgets it.

use agent_server::config::Config;
use agent_server::startup::Application;
use serde_json::{Value, json};

use crate::harness::*;

/// A server on the redis+postgres backend of `db` (and the shared Redis).
async fn start(db: &TestDb, data: &std::path::Path) -> (String, actix_web::dev::ServerHandle) {
    let mut config = Config::for_tests(data);
    config.workers = Some(1);
    config.redis_url = Some(redis_url());
    config.database_url = Some(db.url.clone());
    config.backend_timeout = Duration::from_secs(5);
    let app = Application::build(config)
        .await
        .unwrap_or_else(|e| panic!("the server starts: {e:#}; {SETUP_HINT}"));
    let handle = app.handle();
    let address = format!("http://127.0.0.1:{}", app.port());
    actix_web::rt::spawn(app.run_until_stopped());
    (address, handle)
}

/// A JSON-RPC call to `/a2a`; its answer.
async fn rpc(address: &str, method: &str, params: Value, session: Option<&str>) -> Value {
    let mut req = awc::Client::default()
        .post(format!("{address}/a2a"))
        .insert_header(("content-type", "application/json"))
        .insert_header(("a2a-version", "1.0"));
    if let Some(s) = session {
        req = req.insert_header(("x-session-id", s));
    }
    let mut r = req
        .send_body(
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string(),
        )
        .await
        .expect("the call is answered");
    r.json().limit(1 << 24).await.expect("a JSON-RPC answer")
}

fn say(text: &str, context: &str) -> Value {
    json!({"message": {"messageId": Uuid::new_v4().to_string(), "role": "ROLE_USER",
                       "contextId": context, "parts": [{"text": text}]}})
}

#[actix_web::test]
async fn a2a_tasks_survive_a_restart_and_a_reset_forgets_them() {
    let db = TestDb::create().await;
    let data = tempfile::tempdir().unwrap();
    let context = format!("a2a-{}", Uuid::new_v4());
    let (address, handle) = start(&db, data.path()).await;
    let answer = rpc(
        &address,
        "SendMessage",
        say("My locker code is 4512.", &context),
        None,
    )
    .await;
    let task = answer["result"]["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    let id = task["id"].as_str().unwrap().to_owned();
    handle.stop(true).await;

    // The row is in Postgres, in the task's session.
    let row = db
        .client()
        .await
        .query_one(
            "SELECT session_id, state FROM agentwall_a2a_tasks WHERE id = $1",
            &[&id],
        )
        .await
        .expect("the task's row");
    assert_eq!(row.get::<_, String>(0), context);
    assert_eq!(row.get::<_, String>(1), "TASK_STATE_COMPLETED");

    let (address, _handle) = start(&db, data.path()).await;
    let got = rpc(&address, "GetTask", json!({"id": id}), None).await;
    assert_eq!(got["result"], task, "as it was answered: {got}");
    let theirs = rpc(&address, "GetTask", json!({"id": id}), Some("someone-else")).await;
    assert_eq!(theirs["error"]["code"], -32001, "{theirs}");
    let listed = rpc(&address, "ListTasks", json!({"contextId": context}), None).await;
    assert_eq!(listed["result"]["totalSize"], 1, "{listed}");
    let recalled = rpc(
        &address,
        "SendMessage",
        say("What is my locker code?", &context),
        None,
    )
    .await;
    let reply = &recalled["result"]["task"]["artifacts"][0]["parts"][0]["text"];
    assert!(reply.as_str().unwrap().contains("4512"), "{recalled}");

    let reset = awc::Client::default()
        .post(format!("{address}/control/session/reset"))
        .insert_header(("x-session-id", context.as_str()))
        .send()
        .await
        .unwrap();
    assert!(reset.status().is_success());
    let gone = rpc(&address, "GetTask", json!({"id": id}), None).await;
    assert_eq!(gone["error"]["code"], -32001, "{gone}");
    let listed = rpc(&address, "ListTasks", json!({"contextId": context}), None).await;
    assert_eq!(listed["result"]["totalSize"], 0, "{listed}");
}
