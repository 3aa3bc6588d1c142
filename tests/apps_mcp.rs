//! `judge apps --action-mode mcp` against what we did not write: the official MCP Python SDK lists
//! and calls a trial's tools on the judge's MCP server and sees the state change, and cannot see
//! another trial's state (tests/python/mcp_trials_check.py); bad input gets MCP errors and changes
//! nothing; an agent built with the OpenAI Agents SDK, its tools from the judge's server and its
//! model agent-server, passes PayPal scenarios graded by final state
//! (tests/python/agents_sdk_app_agent.py). The interpreter is .venv/agents's
//! (scripts/python-env.sh).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{Server, free_port, judge, read_json, run_dir};

use judge_client::suites::apps::mcp::McpServer;
use judge_client::suites::apps::runner::prepare_world;
use judge_client::suites::apps::world::SharedWorld;
use judge_client::suites::apps::{AppRegistry, shipped};
use serde_json::Value;

fn check(args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/mcp_trials_check.py");
    let output = Command::new(common::python(common::Venv::Agents))
        .arg(&script)
        .args(args)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "mcp_trials_check.py {args:?} failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn trial_world(seed: u64) -> SharedWorld {
    let registry = AppRegistry::builtin();
    let scenario = shipped::scenarios()
        .unwrap()
        .into_iter()
        .find(|s| s.id == "transfer-basic")
        .unwrap();
    SharedWorld::new(prepare_world(&registry, &scenario, seed).unwrap())
}

fn balance_cents(world: &SharedWorld, agent: &str) -> i64 {
    world.with(|w| {
        w.state()["paypal"]["accounts"][agent]["balance_cents"]
            .as_i64()
            .unwrap()
    })
}

#[test]
fn the_official_mcp_client_acts_on_its_trial_only_and_bad_input_changes_nothing() {
    let server = McpServer::start("127.0.0.1:0".parse().unwrap(), None).unwrap();
    let (world_a, world_b) = (trial_world(1), trial_world(2));
    let trial_a = server.open("trial-a", "alice", world_a.clone());
    let trial_b = server.open("trial-b", "alice", world_b.clone());

    let seen = check(&["live", trial_a.url(), trial_b.url()]);

    // Every action is a tool, described by the app's own schema.
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "paypal__check_balance",
            "paypal__decline_request",
            "paypal__pay_request",
            "paypal__request_money",
            "paypal__transfer",
            "paypal__view_transactions"
        ]
    );
    assert_eq!(seen["transfer_schema"]["type"], "object");
    assert!(
        seen["transfer_schema"]["required"]
            .as_array()
            .unwrap()
            .contains(&"to".into())
    );

    // The client saw its own world change, and only its own.
    assert_eq!(seen["a_before"], "100.00");
    assert_eq!(seen["transfer_is_error"], false, "{seen}");
    assert_eq!(seen["a_after"], "87.50");
    assert_eq!(seen["b_balance"], "100.00");
    assert_eq!(balance_cents(&world_a, "alice"), 8750);
    assert_eq!(balance_cents(&world_a, "bob"), 11250);
    // The fixed URL with B's session id reached B, and only B.
    assert_eq!(seen["fixed_tools"], 6);
    assert_eq!(seen["fixed_b_after"], "99.00");
    assert_eq!(balance_cents(&world_b, "alice"), 9900);
    assert_eq!(balance_cents(&world_b, "bob"), 10100);

    // Bad input: an MCP error (unknown tool: invalid params, -32602), an error result the model
    // can read (arguments the app refuses), and no state change.
    assert_eq!(seen["unknown_tool"]["code"], -32602, "{seen}");
    assert!(
        seen["unknown_tool"]["message"]
            .as_str()
            .unwrap()
            .contains("paypal__fly")
    );
    assert_eq!(seen["wrong_types_is_error"], true, "{seen}");
    assert_eq!(seen["wrong_types"]["success"], false);
    assert_eq!(seen["a_after_bad_input"], "87.50");
    assert_eq!(seen["garbage"]["status"], 400, "{seen}");
    assert!(
        seen["garbage"]["body"].as_str().unwrap().contains("-32700"),
        "{seen}"
    );
    assert!(
        seen["unknown_method"]["body"]
            .as_str()
            .unwrap()
            .contains("-32601"),
        "{seen}"
    );

    // The audit trail has every call, with its MCP request id, the refused ones included.
    world_a.with(|w| {
        let entries = w.audit().entries();
        let by_mcp: Vec<_> = entries
            .iter()
            .filter(|e| e.mcp_request_id.is_some())
            .collect();
        let actions: Vec<(&str, bool)> = by_mcp
            .iter()
            .map(|e| (e.action.as_str(), e.success))
            .collect();
        assert_eq!(
            actions,
            [
                ("check_balance", true),
                ("transfer", true),
                ("check_balance", true),
                ("fly", false),
                ("transfer", false),
                ("check_balance", true),
            ]
        );
        let ids: std::collections::HashSet<_> = by_mcp
            .iter()
            .map(|e| e.mcp_request_id.clone().unwrap())
            .collect();
        assert_eq!(ids.len(), by_mcp.len(), "one request id per call");
    });
    assert_eq!(
        world_b.with(|w| w
            .audit()
            .entries()
            .iter()
            .filter(|e| e.mcp_request_id.is_some())
            .count()),
        3,
        "B's own check, and the transfer and check through the fixed URL"
    );

    // After its trial ended, a call is refused, changes nothing, and is kept as refused.
    let url_a = trial_a.url().to_owned();
    drop(trial_a);
    let late = check(&["late", &url_a]);
    assert!(
        late["late_call"]["message"]
            .as_str()
            .unwrap()
            .contains("has ended"),
        "{late}"
    );
    assert_eq!(balance_cents(&world_a, "alice"), 8750);
    let refused = server.refused();
    assert!(
        refused
            .iter()
            .any(|c| c.session_id == "trial-a" && c.tool == "paypal__transfer"),
        "{refused:?}"
    );
    // The malformed message named no call: it is kept as refused, not audited.
    assert!(
        refused
            .iter()
            .any(|c| c.session_id == "trial-a" && c.reason.starts_with("malformed MCP message")),
        "{refused:?}"
    );
    drop(trial_b);
}

/// A child process killed when the test ends, however it ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn an_openai_agents_sdk_agent_using_the_judges_mcp_server_passes_paypal_scenarios() {
    let data = tempfile::tempdir().unwrap();
    let model = Server::start(data.path(), &[]);
    let port = free_port();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/agents_sdk_app_agent.py");
    let mut agent = Killed(
        Command::new(common::python(common::Venv::Agents))
            .arg(&script)
            .arg(port.to_string())
            .arg(&model.base_url)
            .arg("agentwall-builtin")
            .stdout(Stdio::null())
            .spawn()
            .expect("the Agents SDK agent starts"),
    );
    testkit::process::wait_listening(port, &mut agent.0, "the Agents SDK agent");

    let out = tempfile::tempdir().unwrap();
    let (code, output) = judge(&[
        "apps",
        "--endpoint",
        &format!("http://127.0.0.1:{port}"),
        "--action-mode",
        "mcp",
        "--only",
        "transfer-basic,check-balance,request-money",
        "--trials",
        "1",
        "--out",
        out.path().to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 0, "{output}\nagent-server:\n{}", model.stderr());
    let dir = run_dir(out.path());
    let results = read_json(&dir.join("results.json"));
    assert_eq!(results["mode"], "mcp");
    for scenario in results["scenarios"].as_array().unwrap() {
        assert_eq!(scenario["all_passed"], true, "{results:#}");
    }
    // The transfer was the agent's own MCP call, audited with its request id.
    let audit =
        std::fs::read_to_string(dir.join("scenarios/transfer-basic/trial-0/audit.jsonl")).unwrap();
    let transfer: Value = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["action"] == "transfer")
        .unwrap_or_else(|| panic!("no transfer in {audit}"));
    assert_eq!(transfer["params"]["to"], "bob");
    assert_eq!(transfer["success"], true);
    assert!(transfer["mcp_request_id"].is_string(), "{transfer}");
}

/// `judge apps --action-mode MODE --api responses --seed 7 --trials 1` against `endpoint`: the
/// run directory.
fn apps_run(endpoint: &str, mode: &str, out: &Path) -> PathBuf {
    let (code, output) = judge(&[
        "apps",
        "--endpoint",
        endpoint,
        "--action-mode",
        mode,
        "--api",
        "responses",
        "--seed",
        "7",
        "--trials",
        "1",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 0, "{mode}: {output}");
    run_dir(out)
}

#[test]
fn agent_server_over_mcp_passes_what_it_passes_in_tools_mode() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &[]);
    let (out_tools, out_mcp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let tools = apps_run(&server.base_url, "tools", out_tools.path());
    let mcp = apps_run(&server.base_url, "mcp", out_mcp.path());

    let passed = |dir: &Path| -> Vec<(String, bool)> {
        read_json(&dir.join("results.json"))["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["id"].as_str().unwrap().to_owned(),
                    s["all_passed"].as_bool().unwrap(),
                )
            })
            .collect()
    };
    let (in_tools, in_mcp) = (passed(&tools), passed(&mcp));
    assert_eq!(in_tools.len(), 14);
    assert_eq!(in_tools, in_mcp, "the same scenarios pass in both modes");
    assert!(
        in_mcp.iter().filter(|(_, p)| *p).count() >= 10,
        "{in_mcp:?}"
    );

    // The calls were agent-server's own, over MCP, and audited so; the reply carried its items.
    let audit =
        std::fs::read_to_string(mcp.join("scenarios/transfer-basic/trial-0/audit.jsonl")).unwrap();
    assert!(audit.contains("\"mcp_request_id\""), "{audit}");
    let audit_tools =
        std::fs::read_to_string(tools.join("scenarios/transfer-basic/trial-0/audit.jsonl"))
            .unwrap();
    assert!(!audit_tools.contains("mcp_request_id"), "{audit_tools}");
    assert!(!mcp.join("mcp-refused-calls.jsonl").exists());

    // judge compare finds no regression of mcp against tools.
    let (code, output) = judge(&["compare", tools.to_str().unwrap(), mcp.to_str().unwrap()]);
    assert_eq!(code, 0, "{output}");
    assert!(!output.contains("regression:"), "{output}");
}
