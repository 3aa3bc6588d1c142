//! `judge conform` against real servers: the bundled agent-server (every applicable check of
//! both APIs passes, with and without X-Session-Id) and a LiteLLM proxy with a `mock_response`
//! model (every check classified, whatever the proxy does; docs/results/conformance.md records
//! the outcome).

mod common;

use std::path::Path;
use std::process::Command;

use common::litellm::{self, LiteLlm};
use common::{Server, binary, read_json, run_dir};
use serde_json::Value;

/// `judge conform`'s exit code when a check fails (cli::EXIT_NONCONFORMANT).
const EXIT_NONCONFORMANT: i32 = 5;

fn conform(endpoint: &str, out: &Path, extra: &[&str]) -> (i32, String) {
    let output = Command::new(binary("judge"))
        .args(["conform", "--endpoint", endpoint, "--out"])
        .arg(out)
        .args(extra)
        .output()
        .expect("judge runs");
    (
        output.status.code().unwrap_or(-1),
        format!(
            "{}\n--- stderr ---\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

fn checks<'a>(results: &'a Value, api: &str) -> Vec<&'a Value> {
    results["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["api"] == api)
        .collect()
}

#[test]
fn agent_server_passes_every_applicable_check_of_both_apis() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &[]);
    let out = tempfile::tempdir().unwrap();
    // --header sends X-Session-Id on every request (the manifest keeps its name, not its value).
    let (code, output) = conform(
        &server.base_url,
        out.path(),
        &["--header", "X-Session-Id:conform-test"],
    );
    assert_eq!(code, 0, "{output}");
    let dir = run_dir(out.path());
    for file in ["manifest.json", "results.json", "junit.xml", "report.html"] {
        assert!(dir.join(file).is_file(), "{file} missing\n{output}");
    }
    let manifest = read_json(&dir.join("manifest.json"));
    assert_eq!(
        manifest["header_names"],
        serde_json::json!(["X-Session-Id"])
    );
    assert!(
        !std::fs::read_to_string(dir.join("manifest.json"))
            .unwrap()
            .contains("conform-test")
    );
    let results = read_json(&dir.join("results.json"));

    let chat = checks(&results, "chat");
    assert_eq!(chat.len(), 12, "{output}");
    for check in &chat {
        if check["name"] == "chat.tool_call" {
            // The builtin model calls only the apps' tools, never a generic forced one: not a
            // failure of the server, so not applicable, with the reason.
            assert_eq!(check["status"], "not_applicable", "{check}");
            assert!(
                check["reason"]
                    .as_str()
                    .unwrap()
                    .contains("instead of calling")
            );
        } else {
            assert_eq!(check["status"], "pass", "{check}\n{output}");
        }
    }

    // The builtin model calls only the apps' tools, so the forced get_weather call, and the chain
    // built on it, are not applicable; everything else passes.
    let responses = checks(&results, "responses");
    assert_eq!(responses.len(), 18);
    for check in &responses {
        let name = check["name"].as_str().unwrap();
        if ["responses.function_call", "responses.chain_function_call"].contains(&name) {
            assert_eq!(check["status"], "not_applicable", "{check}");
        } else {
            assert_eq!(check["status"], "pass", "{check}\n{output}");
        }
    }
    assert_eq!(results["apis"][0]["served"], true);
    assert_eq!(results["apis"][1]["served"], true);
    assert_eq!(results["failed"], 0);
    assert_eq!(results["not_applicable"], 3);

    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert_eq!(junit.matches("<testcase ").count(), 30);
    assert_eq!(junit.matches("<skipped ").count(), 3);
    assert_eq!(junit.matches("<failure ").count(), 0);

    // Without X-Session-Id, as a generic client calls it: the Responses API chains through the
    // sessions agent-server makes, and every applicable check still passes.
    let out = tempfile::tempdir().unwrap();
    let (code, output) = conform(&server.base_url, out.path(), &["--api", "responses"]);
    assert_eq!(code, 0, "{output}");
    let results = read_json(&run_dir(out.path()).join("results.json"));
    assert_eq!(results["checks"].as_array().unwrap().len(), 18);
    assert_eq!(results["failed"], 0);
}

#[test]
fn a_litellm_proxy_gets_every_check_classified() {
    let dir = tempfile::tempdir().unwrap();
    let proxy = LiteLlm::start(dir.path(), "Hello from the LiteLLM mock upstream.");
    let out = tempfile::tempdir().unwrap();
    let (code, output) = conform(&proxy.base_url, out.path(), &["--model", litellm::MODEL]);
    assert!(
        code == 0 || code == EXIT_NONCONFORMANT,
        "judge conform must finish (exit {code})\n{output}\nlitellm:\n{}",
        proxy.log_text()
    );
    let results = read_json(&run_dir(out.path()).join("results.json"));
    let all = results["checks"].as_array().unwrap();
    assert_eq!(all.len(), 30, "{output}");
    for check in all {
        let status = check["status"].as_str().unwrap();
        assert!(
            ["pass", "fail", "not_applicable"].contains(&status),
            "{check}"
        );
        assert!(
            !check["exchanges"].as_array().unwrap().is_empty(),
            "{check}"
        );
        if status != "pass" {
            assert!(
                check["reason"].as_str().is_some_and(|r| !r.is_empty()),
                "{check}"
            );
        }
    }
    let count = |status: &str| all.iter().filter(|c| c["status"] == status).count() as u64;
    assert_eq!(results["passed"], count("pass"));
    assert_eq!(results["failed"], count("fail"));
    assert_eq!(
        code == 0,
        count("fail") == 0,
        "exit code follows the failures"
    );
    // The proxy speaks both APIs' plain request: the suite is not failing everything blindly.
    let status_of = |name: &str| {
        all.iter()
            .find(|c| c["name"] == name)
            .map(|c| c["status"].as_str().unwrap().to_owned())
            .unwrap()
    };
    assert_eq!(status_of("chat.json_shape"), "pass", "{output}");
    assert_eq!(status_of("responses.json_shape"), "pass", "{output}");
    assert_eq!(results["apis"][1]["served"], true);
    println!("{output}");
}
