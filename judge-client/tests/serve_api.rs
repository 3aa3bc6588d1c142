//! `judge serve` over real HTTP: the server on 127.0.0.1:0 with a temporary runs folder, driven
//! by awc; the agents under test and the injected endpoints are the fake OpenAI-compatible
//! servers of `common` (actix-web on port 0). Checks the runs API against real LTM run
//! directories, validation (4xx with the message), unknown ids, auth, that key values are never
//! echoed, and a simulation started through the API running to its end with its events on SSE.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use futures_util::StreamExt;
use judge_client::endpoint::{Credentials, RetryPolicy, TargetSettings};
use judge_client::serve::{ServeConfig, ServeError, bind};
use judge_client::suites::ltm::TestType;
use judge_client::suites::ltm::run::{self, Silent};
use judge_client::{HistoryMode, LtmConfig};
use serde_json::{Value, json};

use common::serve::Serve;

async fn serve(runs: &Path, token: Option<&str>) -> Serve {
    let (server, addr) = bind(ServeConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        runs: runs.to_path_buf(),
        auth_token: token.map(str::to_owned),
        workers: 1,
    })
    .expect("binds on loopback");
    Serve::spawn(server, addr, token)
}

fn message(body: &Value) -> String {
    body.pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no error message in {body}"))
        .to_owned()
}

fn sim_config(target: &str, rounds: usize) -> Value {
    json!({
        "simulation": {"name": "api test"},
        "target": {"endpoint": target, "timeout_seconds": 10},
        "run": {"seed": 3, "rounds": rounds, "personas": ["maya", "gus"], "concurrency": 2}
    })
}

async fn ltm_run(url: &str, seed: u64, out: &Path) -> String {
    let config = LtmConfig {
        seed,
        trials: 1,
        span_tokens: 200,
        filler_turn_tokens: 100,
        history: HistoryMode::New,
        api: Default::default(),
        phrasing: Default::default(),
        concurrency: 3,
        types: TestType::ALL[..3].to_vec(),
    };
    let settings = TargetSettings {
        timeout_ms: 10_000,
        retry: RetryPolicy {
            max_retries: 1,
            base_ms: 10,
            max_wait_ms: 50,
        },
        ..TargetSettings::new(url)
    };
    let outcome = run::start(settings, Credentials::default(), config, out, &Silent)
        .await
        .expect("ltm run completes");
    outcome.manifest.run_id
}

#[actix_rt::test]
async fn runs_are_listed_read_and_compared_from_disk() {
    let runs = tempfile::tempdir().unwrap();
    let config_specs = LtmConfig {
        seed: 9,
        trials: 1,
        span_tokens: 200,
        filler_turn_tokens: 100,
        history: HistoryMode::New,
        api: Default::default(),
        phrasing: Default::default(),
        concurrency: 3,
        types: TestType::ALL[..3].to_vec(),
    }
    .specs();
    let good = common::oracle(&config_specs).await;
    let bad = common::amnesiac().await;
    let a = ltm_run(&good.url, 9, runs.path()).await;
    let b = ltm_run(&bad.url, 9, runs.path()).await;
    // A folder that is not a run is not listed.
    std::fs::create_dir_all(runs.path().join("scratch")).unwrap();
    let s = serve(runs.path(), None).await;

    let (status, list) = s.get("/runs").await;
    assert_eq!(status, 200, "{list}");
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2, "{list:?}");
    let by_id = |id: &str| list.iter().find(|r| r["id"] == id).unwrap().clone();
    assert_eq!(by_id(&a)["suite"], "ltm");
    assert_eq!(by_id(&a)["state"], "complete");
    let (score_a, score_b) = (
        by_id(&a)["score"].as_f64().unwrap(),
        by_id(&b)["score"].as_f64().unwrap(),
    );
    assert!(score_a > score_b, "oracle {score_a} vs amnesiac {score_b}");

    let (status, run) = s.get(&format!("/runs/{a}")).await;
    assert_eq!(status, 200);
    assert_eq!(run["manifest"]["run_id"], a.as_str());
    assert_eq!(run["results"]["overall"].as_f64(), Some(score_a));

    let (status, cmp) = s.get(&format!("/runs/{a}/compare/{b}")).await;
    assert_eq!(status, 200, "{cmp}");
    assert!(cmp["regressions"].as_u64().unwrap() > 0, "{cmp}");
    assert_eq!(cmp["pairs"].as_array().unwrap().len(), config_specs.len());

    let (status, body) = s.get("/runs/ltm-nope").await;
    assert_eq!(status, 404);
    assert!(message(&body).contains("ltm-nope"));
    let (status, body) = s.get(&format!("/runs/{a}/compare/nope")).await;
    assert_eq!((status, message(&body).contains("nope")), (404, true));
    for bad_id in [".ssh", "..%2F..%2Fetc", "a%2Fb", "..%5Cx"] {
        let (status, body) = s.get(&format!("/runs/{bad_id}")).await;
        assert_eq!(status, 400, "{bad_id}: {body}");
        assert!(message(&body).contains("not a run id"), "{body}");
    }
    let (status, body) = s
        .get(&format!("/runs/{a}/file?path=..%2F..%2Fetc%2Fpasswd"))
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = s.get(&format!("/runs/{a}/compare/{b}?alpha=7")).await;
    assert_eq!((status, message(&body).contains("alpha")), (400, true));
    let (status, page) = s.send("GET", "/", None).await;
    assert_eq!(status, 200);
    assert!(
        page.contains("<script>") && page.contains("EventSource"),
        "{page}"
    );
    let (status, _) = s.get("/no/such/route").await;
    assert_eq!(status, 404);
    let (status, doc) = s.get("/openapi.json").await;
    assert_eq!(status, 200);
    for path in [
        "/runs/{id}/compare/{other}",
        "/simulations/{id}/events",
        "/simulations/{id}/inject-agent/{agent_id}/health-check",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} undocumented");
    }
    s.handle.stop(false).await;
    good.stop().await;
    bad.stop().await;
}

#[actix_rt::test]
async fn auth_token_is_required_and_open_addresses_need_one() {
    let runs = tempfile::tempdir().unwrap();
    let refused = bind(ServeConfig {
        addr: "0.0.0.0:0".parse::<SocketAddr>().unwrap(),
        runs: runs.path().to_path_buf(),
        auth_token: None,
        workers: 1,
    });
    match refused {
        Err(e @ ServeError::OpenWithoutToken(_)) => assert!(e.to_string().contains("--auth-token")),
        Err(other) => panic!("wrong error: {other}"),
        Ok(_) => panic!("listened on 0.0.0.0 without a token"),
    }
    let mut s = serve(runs.path(), Some("s3cret-token")).await;
    // The dashboard page is static HTML without data: served without the token (its script
    // sends the token on every call); every data endpoint needs it.
    s.token = None;
    assert_eq!(s.send("GET", "/", None).await.0, 200);
    for path in ["/runs", "/simulations", "/openapi.json"] {
        s.token = None;
        let (status, body) = s.get(path).await;
        assert_eq!(status, 401, "{path}: {body}");
        assert!(message(&body).contains("Bearer"), "{body}");
        s.token = Some("s3cret-tokeX".to_owned());
        assert_eq!(s.get(path).await.0, 401, "{path} with a wrong token");
        s.token = Some("s3cret-token".to_owned());
        assert_eq!(s.get(path).await.0, 200, "{path} with the token");
    }
    s.handle.stop(false).await;
}

#[actix_rt::test]
async fn bad_simulation_configs_get_400_with_the_reason() {
    let runs = tempfile::tempdir().unwrap();
    let s = serve(runs.path(), None).await;
    let cases: Vec<(Option<(&str, String)>, &str)> = vec![
        (
            Some(("application/json", "{not json".to_owned())),
            "invalid JSON",
        ),
        (
            Some(("application/yaml", "simulation: [".to_owned())),
            "invalid YAML",
        ),
        (Some(("application/json", String::new())), "body is empty"),
        (
            Some(("application/json", json!({"simulation": {}}).to_string())),
            "missing field `target`",
        ),
        (
            Some(("application/json", {
                let mut c = sim_config("http://127.0.0.1:9", 2);
                c["run"]["personas"] = json!(["nobody"]);
                c.to_string()
            })),
            "known: maya",
        ),
        (
            Some(("application/json", {
                let mut c = sim_config("ftp://x", 2);
                c["run"]["rounds"] = json!(2);
                c.to_string()
            })),
            "target.endpoint",
        ),
        (
            Some(("application/json", {
                let mut c = sim_config("http://127.0.0.1:9", 0);
                c["run"]["rounds"] = json!(0);
                c.to_string()
            })),
            "run.rounds",
        ),
        (
            Some(("application/json", {
                let mut c = sim_config("http://127.0.0.1:9", 2);
                c["target"]["api_key"] = json!("sk-live-do-not-echo");
                c.to_string()
            })),
            "api_key_env",
        ),
        (
            Some(("application/json", {
                let mut c = sim_config("http://127.0.0.1:9", 2);
                c["simulation"]["agent_injection"] = json!({"endpoints": [
                    {"agent_id": "maya", "url": "http://127.0.0.1:9", "timeout_seconds": -1}]});
                c.to_string()
            })),
            "timeout_seconds",
        ),
    ];
    for (body, expected) in cases {
        let (status, text) = s.send("POST", "/simulations", body).await;
        assert_eq!(status, 400, "{expected}: {text}");
        let body: Value = serde_json::from_str(&text).unwrap();
        assert!(message(&body).contains(expected), "{expected}: {text}");
        assert!(
            !text.contains("sk-live-do-not-echo"),
            "a key was echoed: {text}"
        );
    }
    assert_eq!(s.get("/simulations").await.1, json!([]));
    let (status, body) = s.get("/simulations/sim-nope").await;
    assert_eq!((status, message(&body).contains("sim-nope")), (404, true));
    for path in [
        "/simulations/sim-nope/start",
        "/simulations/sim-nope/stop",
        "/simulations/sim-nope/inject-agent/maya/health-check",
    ] {
        assert_eq!(s.post_json(path, &json!({})).await.0, 404, "{path}");
    }
    s.handle.stop(false).await;
}

/// Reads an SSE stream to its `end` event: (event name, data) pairs.
async fn read_events(s: &Serve, id: &str) -> Vec<(String, Value)> {
    let mut response = s
        .client
        .get(format!("{}/simulations/{id}/events", s.base))
        .send()
        .await
        .expect("events");
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(
        response.headers().get("content-type").unwrap(),
        "text/event-stream"
    );
    let mut text = String::new();
    let read = async {
        while let Some(chunk) = response.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk.expect("chunk")));
        }
    };
    actix_rt::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("the event stream ends");
    text.split("\n\n")
        .filter(|frame| !frame.trim().is_empty())
        .map(|frame| {
            let name = frame
                .lines()
                .find_map(|l| l.strip_prefix("event: "))
                .expect("event name");
            let data = frame
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .expect("data");
            (
                name.to_owned(),
                serde_json::from_str(data).expect("JSON data"),
            )
        })
        .collect()
}

#[actix_rt::test]
async fn a_simulation_with_an_injected_agent_runs_to_its_end_over_the_api() {
    let runs = tempfile::tempdir().unwrap();
    let target = common::amnesiac().await;
    // The injected endpoint speaks OpenAI too: the stub plays maya.
    let maya = common::stub().await;
    let s = serve(runs.path(), None).await;
    let yaml = format!(
        "simulation:\n  name: yaml sim\ntarget:\n  endpoint: {}\n  timeout_seconds: 10\nrun:\n  seed: 3\n  rounds: 3\n  personas: [maya, gus]\n",
        target.url
    );
    let (status, text) = s
        .send("POST", "/simulations", Some(("application/yaml", yaml)))
        .await;
    assert_eq!(status, 201, "{text}");
    let created: Value = serde_json::from_str(&text).unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["state"], "created");
    assert_eq!(created["personas"], json!(["maya", "gus"]));

    // A key only as the name of a variable; PATH is set in any test environment, so its value
    // would be sent as the key: it must never come back in a response.
    let path_value = std::env::var("PATH").unwrap();
    let inject = json!({"agent_id": "maya", "endpoint_url": maya.url, "protocol": "openai",
                        "api_key_env": "PATH", "timeout_seconds": 5});
    let (status, body) = s
        .post_json(&format!("/simulations/{id}/inject-agent"), &inject)
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["api_key_env"], "PATH");
    assert_eq!(body["api_key_set"], true);
    let (status, body) = s
        .post_json(
            &format!("/simulations/{id}/inject-agent"),
            &json!({"agent_id": "maya", "endpoint_url": maya.url, "api_key": "sk-inline"}),
        )
        .await;
    assert_eq!(status, 400);
    assert!(message(&body).contains("api_key_env") && !body.to_string().contains("sk-inline"));
    let (status, body) = s
        .post_json(
            &format!("/simulations/{id}/inject-agent"),
            &json!({"agent_id": "rosa", "endpoint_url": maya.url}),
        )
        .await;
    assert_eq!((status, message(&body).contains("rosa")), (400, true));
    let (status, body) = s
        .post_json(
            &format!("/simulations/{id}/inject-agent/maya/health-check"),
            &json!({}),
        )
        .await;
    assert_eq!((status, &body["healthy"]), (200, &json!(true)), "{body}");
    let (_, metrics) = s
        .get(&format!("/simulations/{id}/inject-agent/maya/metrics"))
        .await;
    assert_eq!(
        (metrics["calls"].as_u64(), &metrics["circuit_state"]),
        (Some(0), &json!("CLOSED"))
    );
    assert_eq!(
        s.get(&format!("/simulations/{id}/inject-agent/gus/metrics"))
            .await
            .0,
        404
    );

    let (status, started) = s
        .post_json(&format!("/simulations/{id}/start"), &json!({}))
        .await;
    assert_eq!(status, 202, "{started}");
    let run_id = started["run_id"].as_str().unwrap().to_owned();
    let events = read_events(&s, &id).await;
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds.first(), Some(&"state"));
    assert_eq!(kinds.last(), Some(&"end"), "{kinds:?}");
    assert_eq!(events.last().unwrap().1["state"], "finished", "{events:?}");
    let rounds: Vec<&Value> = events
        .iter()
        .filter(|(k, _)| k == "round")
        .map(|(_, d)| d)
        .collect();
    assert!(
        rounds
            .iter()
            .any(|r| r["persona_id"] == "maya" && r["round"]["user_source"] == "injected"),
        "no injected round: {rounds:?}"
    );
    assert_eq!(kinds.iter().filter(|k| **k == "conversation").count(), 2);

    // What streamed is what the run directory holds.
    let (status, sim) = s.get(&format!("/simulations/{id}")).await;
    assert_eq!((status, &sim["state"]), (200, &json!("finished")));
    let (_, run) = s.get(&format!("/runs/{run_id}")).await;
    assert_eq!(run["suite"], "sim");
    let conversations = run["results"]["conversations"].as_array().unwrap();
    let recorded: u64 = conversations
        .iter()
        .map(|c| c["rounds"].as_u64().unwrap())
        .sum();
    assert_eq!(recorded as usize, rounds.len());
    assert!(run["score"].is_number(), "{run}");
    let transcript = conversations[0]["transcript_file"].as_str().unwrap();
    let (status, _) = s
        .get(&format!("/runs/{run_id}/file?path={transcript}"))
        .await;
    assert_eq!(status, 200);
    let (_, metrics) = s
        .get(&format!("/simulations/{id}/inject-agent/maya/metrics"))
        .await;
    assert!(metrics["calls"].as_u64().unwrap() > 0, "{metrics}");
    assert!(metrics["latency_p50_ms"].is_number(), "{metrics}");
    assert_eq!(metrics["error_rate"], 0.0);
    assert!(maya.chats() > 0, "the injected endpoint was never called");

    // A finished simulation neither starts again nor takes injections; its stream replays.
    assert_eq!(
        s.post_json(&format!("/simulations/{id}/start"), &json!({}))
            .await
            .0,
        409
    );
    assert_eq!(
        s.post_json(&format!("/simulations/{id}/inject-agent"), &inject)
            .await
            .0,
        409
    );
    let replay = read_events(&s, &id).await;
    assert_eq!(replay.len(), events.len());

    // Nothing the server said or wrote holds the key's value.
    for path in [
        format!("/simulations/{id}"),
        format!("/simulations/{id}/injected-agents"),
        "/simulations".to_owned(),
        format!("/runs/{run_id}"),
    ] {
        let (_, text) = s.send("GET", &path, None).await;
        assert!(!text.contains(&path_value), "{path} echoes the key");
    }
    for entry in walk(&runs.path().join(&run_id)) {
        let text = std::fs::read_to_string(&entry).unwrap_or_default();
        assert!(
            !text.contains(&path_value),
            "{} holds the key",
            entry.display()
        );
    }
    s.handle.stop(false).await;
    target.stop().await;
    maya.stop().await;
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[actix_rt::test]
async fn a_running_simulation_stops_on_request() {
    let runs = tempfile::tempdir().unwrap();
    let slow =
        common::spawn_with_delay(common::Brain::Stub, false, Duration::from_millis(300)).await;
    let s = serve(runs.path(), None).await;
    let (status, created) = s
        .post_json("/simulations", &sim_config(&slow.url, 50))
        .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(
        s.post_json(&format!("/simulations/{id}/stop"), &json!({}))
            .await
            .0,
        409
    );
    assert_eq!(
        s.post_json(&format!("/simulations/{id}/start"), &json!({}))
            .await
            .0,
        202
    );
    assert_eq!(
        s.post_json(&format!("/simulations/{id}/start"), &json!({}))
            .await
            .0,
        409
    );
    actix_rt::time::sleep(Duration::from_millis(800)).await;
    let (status, stopped) = s
        .post_json(&format!("/simulations/{id}/stop"), &json!({}))
        .await;
    assert_eq!(
        (status, &stopped["state"]),
        (200, &json!("stopped")),
        "{stopped}"
    );
    let events = read_events(&s, &id).await;
    assert_eq!(events.last().unwrap().1["state"], "stopped");
    let chats = slow.chats();
    actix_rt::time::sleep(Duration::from_millis(800)).await;
    assert!(slow.chats() <= chats + 2, "the run went on after stop");
    let (_, sim) = s.get(&format!("/simulations/{id}")).await;
    assert!(sim["rounds_done"].as_u64().unwrap() < 100, "{sim}");
    s.handle.stop(false).await;
    slow.stop().await;
}

#[actix_rt::test]
async fn health_checks_send_one_agentworld_request_and_report_failures() {
    use actix_web::{App, HttpResponse, HttpServer, web};
    let bodies = web::Data::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let seen = bodies.clone();
    let server = HttpServer::new(move || {
        App::new().app_data(seen.clone()).route(
            "/respond",
            web::post().to(
                |body: web::Json<Value>, seen: web::Data<std::sync::Mutex<Vec<Value>>>| async move {
                    seen.lock().unwrap().push(body.into_inner());
                    HttpResponse::Ok().json(json!({"response_text": "OK"}))
                },
            ),
        )
    })
    .workers(1)
    .disable_signals()
    .bind(("127.0.0.1", 0))
    .unwrap();
    let addr = server.addrs()[0];
    let server = server.run();
    let agent = server.handle();
    actix_rt::spawn(server);

    let runs = tempfile::tempdir().unwrap();
    let s = serve(runs.path(), None).await;
    let (_, created) = s
        .post_json("/simulations", &sim_config("http://127.0.0.1:9", 2))
        .await;
    let id = created["id"].as_str().unwrap().to_owned();
    for (persona, url) in [
        ("maya", format!("http://{addr}/respond")),
        // Nothing listens on the discard port.
        ("gus", "http://127.0.0.1:9/respond".to_owned()),
    ] {
        let (status, body) = s
            .post_json(
                &format!("/simulations/{id}/inject-agent"),
                &json!({"agent_id": persona, "endpoint_url": url, "timeout_seconds": 2}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
    let (_, listed) = s.get(&format!("/simulations/{id}/injected-agents")).await;
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");

    let (status, healthy) = s
        .post_json(
            &format!("/simulations/{id}/inject-agent/maya/health-check"),
            &json!({}),
        )
        .await;
    assert_eq!(
        (status, &healthy["healthy"]),
        (200, &json!(true)),
        "{healthy}"
    );
    let sent = bodies.lock().unwrap().clone();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["schema_version"], "1.0");
    assert_eq!(sent[0]["agent_id"], "maya");
    let (status, down) = s
        .post_json(
            &format!("/simulations/{id}/inject-agent/gus/health-check"),
            &json!({}),
        )
        .await;
    assert_eq!((status, &down["healthy"]), (200, &json!(false)), "{down}");
    assert!(down["failure"].is_string(), "{down}");

    let (status, _) = s
        .send(
            "DELETE",
            &format!("/simulations/{id}/inject-agent/gus"),
            None,
        )
        .await;
    assert_eq!(status, 204);
    let (status, body) = s
        .send(
            "DELETE",
            &format!("/simulations/{id}/inject-agent/gus"),
            None,
        )
        .await;
    assert_eq!(status, 404, "{body}");
    let (_, listed) = s.get(&format!("/simulations/{id}/injected-agents")).await;
    assert_eq!(listed[0]["agent_id"], "maya");
    assert_eq!(listed.as_array().unwrap().len(), 1);
    s.handle.stop(false).await;
    agent.stop(false).await;
}
