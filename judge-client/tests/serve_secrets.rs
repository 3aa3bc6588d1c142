//! `judge serve --secrets-file`: keys referenced as `api_key_secret: NAME`. In process (the
//! server on 127.0.0.1:0, driven by awc): the target and an injected agent whose keys come from
//! the file are really called with `Authorization: Bearer <key>` (recorded by small
//! OpenAI-compatible servers here), while responses, events and the run directory hold only the
//! names; unknown names and a server without a file get 422 naming the secret. The real `judge`
//! binary: a file other users can read is refused with the chmod hint, bad syntax names the file
//! and line, and SIGHUP re-reads the file.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use judge_client::serve::secrets::Secrets;
use judge_client::serve::{ServeConfig, bind_with_secrets};
use serde_json::{Value, json};

use common::serve::Api;

const MAYA_KEY: &str = "sk-maya-7d1f0c2e9b";
const TARGET_KEY: &str = "sk-target-4a8e61b3d5";

/// An OpenAI-compatible endpoint that answers "Noted." and records every chat request's
/// `Authorization` header (`None` when absent).
struct Recorder {
    url: String,
    seen: Arc<Mutex<Vec<Option<String>>>>,
    handle: ServerHandle,
}

async fn record(req: HttpRequest, seen: web::Data<Mutex<Vec<Option<String>>>>) -> HttpResponse {
    if req.path().ends_with("/models") {
        return HttpResponse::Ok().json(json!({"object": "list", "data": [
            {"id": "rec", "object": "model", "created": 0, "owned_by": "tests"}]}));
    }
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    seen.lock().unwrap().push(auth);
    HttpResponse::Ok().json(json!({
        "id": "chatcmpl-rec", "object": "chat.completion", "created": 0, "model": "rec",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Noted."},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    }))
}

async fn recorder() -> Recorder {
    let seen = web::Data::new(Mutex::new(Vec::new()));
    let shared = seen.clone().into_inner();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(seen.clone())
            .default_service(web::to(record))
    })
    .workers(1)
    .disable_signals()
    .bind("127.0.0.1:0")
    .unwrap();
    let url = format!("http://{}", server.addrs()[0]);
    let server = server.run();
    let handle = server.handle();
    actix_rt::spawn(server);
    Recorder {
        url,
        seen: shared,
        handle,
    }
}

impl Recorder {
    fn seen(&self) -> Vec<Option<String>> {
        self.seen.lock().unwrap().clone()
    }
}

/// Writes a secrets file with `mode`.
fn secrets_file(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    #[cfg(not(unix))]
    let _ = mode;
    path
}

fn no_key_in(what: &str, text: &str) {
    for key in [MAYA_KEY, TARGET_KEY] {
        assert!(!text.contains(key), "{what} holds a key's value: {text}");
    }
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn message(text: &str) -> String {
    json_of(text)["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no error message in {text}"))
        .to_owned()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
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

fn config(target: &str, key: Value) -> Value {
    let mut target = json!({"endpoint": target, "timeout_seconds": 10});
    if let Value::Object(extra) = key {
        target.as_object_mut().unwrap().extend(extra);
    }
    json!({
        "simulation": {"name": "secrets"},
        "target": target,
        "run": {"seed": 5, "rounds": 3, "personas": ["maya", "gus"], "concurrency": 2}
    })
}

fn serve_config(runs: &Path) -> ServeConfig {
    ServeConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        runs: runs.to_path_buf(),
        auth_token: None,
        workers: 1,
    }
}

#[actix_rt::test]
async fn keys_from_the_secrets_file_are_sent_and_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let file = secrets_file(
        dir.path(),
        "secrets.yaml",
        &format!("maya-key: {MAYA_KEY}\ntarget_key: \"{TARGET_KEY}\"\n"),
        0o600,
    );
    let secrets = Arc::new(Secrets::load(&file).unwrap());
    let (server, addr) = bind_with_secrets(serve_config(&runs), Some(secrets)).unwrap();
    let handle = server.handle();
    actix_rt::spawn(server);
    let api = Api::new(format!("http://{addr}"), None);
    let target = recorder().await;
    let maya = recorder().await;

    // Unknown secret names: 422 naming the secret, at create and at inject time.
    let (status, text) = api
        .send_json(
            "POST",
            "/simulations",
            Some(&config(&target.url, json!({"api_key_secret": "no-such"}))),
        )
        .await;
    assert_eq!(status, 422, "{text}");
    assert!(message(&text).contains("no-such"), "{text}");
    no_key_in("the refusal", &text);

    let (status, text) = api
        .send_json(
            "POST",
            "/simulations",
            Some(&config(
                &target.url,
                json!({"api_key_secret": "target_key"}),
            )),
        )
        .await;
    assert_eq!(status, 201, "{text}");
    no_key_in("the created simulation", &text);
    let created = json_of(&text);
    assert_eq!(created["config"]["target"]["api_key_secret"], "target_key");
    let id = created["id"].as_str().unwrap().to_owned();
    let inject = format!("/simulations/{id}/inject-agent");

    let (status, text) = api
        .send_json(
            "POST",
            &inject,
            Some(&json!({"agent_id": "gus", "endpoint_url": maya.url,
                          "api_key_secret": "gus-key"})),
        )
        .await;
    assert_eq!(status, 422, "{text}");
    let refused = message(&text);
    assert!(
        refused.contains("gus-key") && refused.contains("secrets.yaml"),
        "{refused}"
    );
    no_key_in("the refusal", &text);
    let (status, text) = api
        .send_json(
            "POST",
            &inject,
            Some(&json!({"agent_id": "maya", "endpoint_url": maya.url,
                          "api_key_secret": "maya-key", "api_key_env": "PATH"})),
        )
        .await;
    assert_eq!(status, 400, "{text}");
    assert!(message(&text).contains("exactly one"), "{text}");

    let (status, text) = api
        .send_json(
            "POST",
            &inject,
            Some(
                &json!({"agent_id": "maya", "endpoint_url": maya.url, "protocol": "openai",
                          "api_key_secret": "maya-key", "timeout_seconds": 5}),
            ),
        )
        .await;
    assert_eq!(status, 201, "{text}");
    no_key_in("the injected agent", &text);
    let shown = json_of(&text);
    assert_eq!(shown["api_key_secret"], "maya-key");
    assert_eq!(shown["api_key_env"], Value::Null);
    assert_eq!(shown["api_key_set"], true);

    // The health check calls the endpoint: with the key from the file.
    let (status, text) = api
        .send_json(
            "POST",
            &format!("/simulations/{id}/inject-agent/maya/health-check"),
            Some(&json!({})),
        )
        .await;
    assert_eq!(
        (status, json_of(&text)["healthy"].clone()),
        (200, json!(true)),
        "{text}"
    );
    assert_eq!(maya.seen(), vec![Some(format!("Bearer {MAYA_KEY}"))]);

    let (status, text) = api
        .send_json(
            "POST",
            &format!("/simulations/{id}/start"),
            Some(&json!({})),
        )
        .await;
    assert_eq!(status, 202, "{text}");
    no_key_in("the started simulation", &text);
    let run_id = json_of(&text)["run_id"].as_str().unwrap().to_owned();
    // The stream ends with the simulation: its whole text is checked.
    let (status, events) = api
        .send_json("GET", &format!("/simulations/{id}/events"), None)
        .await;
    assert_eq!(status, 200);
    assert!(events.contains("event: end"), "{events}");
    assert!(events.contains("\"state\":\"finished\""), "{events}");
    no_key_in("the events", &events);

    let maya_calls = maya.seen();
    assert!(maya_calls.len() > 1, "maya was never called by the run");
    assert!(
        maya_calls
            .iter()
            .all(|a| a.as_deref() == Some(&format!("Bearer {MAYA_KEY}"))),
        "{maya_calls:?}"
    );
    let target_calls = target.seen();
    assert!(!target_calls.is_empty(), "the target was never called");
    assert!(
        target_calls
            .iter()
            .all(|a| a.as_deref() == Some(&format!("Bearer {TARGET_KEY}"))),
        "{target_calls:?}"
    );

    for path in [
        format!("/simulations/{id}"),
        format!("/simulations/{id}/injected-agents"),
        "/simulations".to_owned(),
        format!("/runs/{run_id}"),
        "/openapi.json".to_owned(),
    ] {
        let (status, text) = api.send_json("GET", &path, None).await;
        assert_eq!(status, 200, "{path}: {text}");
        no_key_in(&path, &text);
    }
    let (_, text) = api
        .send_json("GET", &format!("/simulations/{id}/injected-agents"), None)
        .await;
    assert_eq!(json_of(&text)[0]["api_key_secret"], "maya-key");
    let (_, text) = api.send_json("GET", "/openapi.json", None).await;
    let doc = json_of(&text);
    for schema in ["InjectBody", "TargetSpec", "LlmSpec", "InjectedAgentView"] {
        assert!(
            doc["components"]["schemas"][schema]["properties"]["api_key_secret"].is_object(),
            "{schema} does not document api_key_secret"
        );
    }
    assert!(
        doc["info"]["description"]
            .as_str()
            .unwrap()
            .contains("--secrets-file")
    );
    let files = walk(&runs.join(&run_id));
    assert!(files.len() > 1, "{files:?}");
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        no_key_in(&path.display().to_string(), &text);
    }
    let simulation = std::fs::read_to_string(runs.join(&run_id).join("simulation.json")).unwrap();
    assert!(simulation.contains("\"api_key_secret\""), "{simulation}");

    handle.stop(false).await;
    target.handle.stop(false).await;
    maya.handle.stop(false).await;
}

#[actix_rt::test]
async fn without_a_secrets_file_a_secret_reference_is_refused() {
    let runs = tempfile::tempdir().unwrap();
    let (server, addr) = bind_with_secrets(serve_config(runs.path()), None).unwrap();
    let handle = server.handle();
    actix_rt::spawn(server);
    let api = Api::new(format!("http://{addr}"), None);
    let mut doc = config("http://127.0.0.1:9", json!({}));
    doc["judge"] = json!({"endpoint": "http://127.0.0.1:9", "api_key_secret": "judge-key"});
    let (status, text) = api.send_json("POST", "/simulations", Some(&doc)).await;
    assert_eq!(status, 422, "{text}");
    let refused = message(&text);
    assert!(
        refused.contains("judge") && refused.contains("start judge serve with --secrets-file"),
        "{refused}"
    );

    let (status, text) = api
        .send_json(
            "POST",
            "/simulations",
            Some(&config("http://127.0.0.1:9", json!({}))),
        )
        .await;
    assert_eq!(status, 201, "{text}");
    let id = json_of(&text)["id"].as_str().unwrap().to_owned();
    let (status, text) = api
        .send_json(
            "POST",
            &format!("/simulations/{id}/inject-agent"),
            Some(
                &json!({"agent_id": "maya", "endpoint_url": "http://127.0.0.1:9",
                          "api_key_secret": "maya-key"}),
            ),
        )
        .await;
    assert_eq!(status, 422, "{text}");
    let refused = message(&text);
    assert!(
        refused.contains("maya-key") && refused.contains("--secrets-file"),
        "{refused}"
    );
    let (_, text) = api
        .send_json("GET", &format!("/simulations/{id}/injected-agents"), None)
        .await;
    assert_eq!(json_of(&text), json!([]), "a refused injection was kept");
    handle.stop(false).await;
}

/// `judge serve` on a free port with `args`; its output once it has exited.
fn judge_serve(runs: &Path, args: &[&str], env: &[(&str, &Path)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_judge"));
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--runs"])
        .arg(runs)
        .args(args)
        .env_remove("JUDGE_SECRETS_FILE")
        .env_remove("JUDGE_DATABASE_URL")
        .env_remove("JUDGE_SERVE_TOKEN");
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

/// The output of `command`, which must exit by itself: a server that starts instead would
/// otherwise hang the test rather than fail it.
fn refused(mut command: Command) -> std::process::Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("judge serve started instead of refusing");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    assert!(!output.status.success());
    output
}

#[cfg(unix)]
#[test]
fn a_file_other_users_can_read_or_bad_syntax_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let open = secrets_file(
        dir.path(),
        "open.yaml",
        &format!("maya-key: {MAYA_KEY}\n"),
        0o644,
    );
    // Through the environment variable, as a service manager would pass it.
    let output = refused(judge_serve(&runs, &[], &[("JUDGE_SECRETS_FILE", &open)]));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("chmod 600 {}", open.display())),
        "{stderr}"
    );
    assert!(!stderr.contains(MAYA_KEY), "{stderr}");

    let broken = secrets_file(
        dir.path(),
        "broken.json",
        &format!("{{\n  \"maya-key\": \"{MAYA_KEY}\",\n  \"other\" \"sk-x\"\n}}\n"),
        0o600,
    );
    let output = refused(judge_serve(
        &runs,
        &["--secrets-file", broken.to_str().unwrap()],
        &[],
    ));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&broken.display().to_string()) && stderr.contains("line 3"),
        "{stderr}"
    );
    assert!(!stderr.contains(MAYA_KEY), "{stderr}");
}

/// Kills the server even when an assertion fails first.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[cfg(unix)]
#[actix_rt::test]
async fn sighup_reloads_the_secrets_file() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let file = secrets_file(
        dir.path(),
        "secrets.yaml",
        &format!("maya-key: {MAYA_KEY}\n"),
        0o600,
    );
    let mut child = judge_serve(&runs, &["--secrets-file", file.to_str().unwrap()], &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut errors = BufReader::new(child.stderr.take().unwrap()).lines();
    let server = Running(child);
    let mut lines = BufReader::new(stdout).lines();
    let banner = lines.next().unwrap().unwrap();
    assert!(banner.contains("1 secrets from"), "{banner}");
    let base = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .trim_end_matches('/')
        .to_owned();
    let api = Api::new(base, None);
    let (status, text) = api
        .send_json(
            "POST",
            "/simulations",
            Some(&config("http://127.0.0.1:9", json!({}))),
        )
        .await;
    assert_eq!(status, 201, "{text}");
    let inject = format!(
        "/simulations/{}/inject-agent",
        json_of(&text)["id"].as_str().unwrap()
    );
    let gus = json!({"agent_id": "gus", "endpoint_url": "http://127.0.0.1:9",
                     "api_key_secret": "gus-key"});
    assert_eq!(api.send_json("POST", &inject, Some(&gus)).await.0, 422);

    std::fs::write(&file, format!("maya-key: {MAYA_KEY}\ngus-key: sk-gus-0\n")).unwrap();
    let hup = Command::new("kill")
        .args(["-HUP", &server.0.id().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    let reloaded = lines.next().unwrap().unwrap();
    assert!(reloaded.contains("reloaded 2 secrets"), "{reloaded}");
    let (status, text) = api.send_json("POST", &inject, Some(&gus)).await;
    assert_eq!(status, 201, "{text}");
    assert!(!text.contains("sk-gus-0"), "{text}");

    // A broken file on reload keeps the keys loaded before, and the server running.
    std::fs::write(&file, "gus-key: [broken\n").unwrap();
    Command::new("kill")
        .args(["-HUP", &server.0.id().to_string()])
        .status()
        .unwrap();
    let failed = errors
        .by_ref()
        .map(Result::unwrap)
        .find(|l| l.contains("stay in use"))
        .expect("the failed reload is reported");
    assert!(
        failed.contains("secrets.yaml") && failed.contains("line 1"),
        "{failed}"
    );
    let (status, text) = api.send_json("POST", &inject, Some(&gus)).await;
    assert_eq!(status, 201, "{text}");
    drop(server);
}
