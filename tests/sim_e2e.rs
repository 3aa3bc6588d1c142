//! `judge sim`, `judge ab` and `judge replay` as processes against real agent-server processes:
//! every shipped persona for 15 rounds with both output formats read back, an A/B of memory on
//! against memory off, and a replay of recorded requests.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Server, binary};
use judge_client::report::session_log::parse_log;
use judge_client::suites::sim::persona::shipped;
use judge_client::suites::sim::transcript::parse_transcript;
use serde_json::Value;

/// Runs `judge` with `args`, asserting success; returns its stdout.
fn judge(args: &[&str]) -> String {
    let output = Command::new(binary("judge"))
        .args(args)
        .output()
        .expect("judge runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "judge {args:?} failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The one directory `judge` created under `out`.
fn only_run(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_shipped_persona_talks_15_rounds_with_agent_server_and_both_formats_parse_back() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &[]);
    let out = tempfile::tempdir().unwrap();
    let stdout = judge(&[
        "sim",
        "--endpoint",
        &server.base_url,
        "--rounds",
        "15",
        "--seed",
        "3",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let run = only_run(out.path());
    let results = json(&run.join("results.json"));
    let panel = shipped().unwrap();
    let conversations = results["conversations"].as_array().unwrap();
    assert_eq!(conversations.len(), panel.len(), "{stdout}");
    assert!(panel.len() >= 8);
    for (persona, c) in panel.iter().zip(conversations) {
        assert_eq!(c["persona_id"], persona.id.as_str());
        let transcript_text =
            std::fs::read_to_string(run.join(c["transcript_file"].as_str().unwrap())).unwrap();
        let transcript =
            parse_transcript(&transcript_text).unwrap_or_else(|e| panic!("{}: {e}", persona.id));
        assert_eq!(transcript.max_turns, 15);
        assert_eq!(transcript.system_agent_id, "agentwall-builtin");
        assert_eq!(transcript.user_agent_id, format!("{}@scripted", persona.id));
        let log_text = std::fs::read_to_string(run.join(c["log_file"].as_str().unwrap())).unwrap();
        let log = parse_log(&log_text).unwrap_or_else(|e| panic!("{}: {e}", persona.id));
        assert_eq!(log.meta("max_turns"), Some("15"));
        assert_eq!(log.meta("scenario"), Some(persona.id.as_str()));
        assert_eq!(log.meta("session_id"), Some(transcript.session.as_str()));
        let stop = c["stop_reason"].as_str().unwrap();
        assert_eq!(log.meta("stop_reason"), Some(stop));
        assert_eq!(transcript.stop_reason.as_deref(), Some(stop));
        // The persona that leaves once served ends with the stop token; every other one talks
        // for the full 15 rounds against an agent that remembers.
        let played = if persona.stop.on_goals_reached {
            assert_eq!(stop, "stop_token", "{}", persona.id);
            let rounds = c["rounds"].as_u64().unwrap() as usize;
            let (last_user, last_system) = &transcript.rounds[rounds - 1];
            assert!(last_user.ends_with("[END]") && last_system.is_empty());
            assert!(
                transcript.rounds[rounds..]
                    .iter()
                    .all(|(u, s)| u.is_empty() && s.is_empty())
            );
            rounds
        } else {
            assert_eq!(stop, "max_turns", "{}", persona.id);
            assert!(
                transcript
                    .rounds
                    .iter()
                    .all(|(u, s)| !u.is_empty() && !s.is_empty())
            );
            15
        };
        assert_eq!(transcript.rounds[0].0, persona.opening);
        // Both formats hold the same conversation.
        let users: Vec<&str> = log
            .turns
            .iter()
            .filter(|t| t.0 == "user")
            .map(|t| t.2.as_str())
            .collect();
        let replies: Vec<&str> = log
            .turns
            .iter()
            .filter(|t| t.0 == "assistant")
            .map(|t| t.2.as_str())
            .collect();
        assert_eq!(users.len(), played);
        for (i, user) in users.iter().enumerate() {
            assert_eq!(*user, transcript.rounds[i].0);
        }
        for (i, reply) in replies.iter().enumerate() {
            assert_eq!(*reply, transcript.rounds[i].1);
        }
        // Against memory on, the scripted persona gets every goal: asked, not known, told, recalled.
        assert_eq!(
            c["checks"]["goal_reached"], true,
            "{}: {}",
            persona.id, log_text
        );
        let resolution = c["checks"]["turns_to_resolution"].as_u64().unwrap();
        assert!((5..=15).contains(&resolution), "{resolution}");
    }
    assert_eq!(results["summary"]["goal_rate"], 1.0);
    let junit = std::fs::read_to_string(run.join("junit.xml")).unwrap();
    assert_eq!(junit.matches("<testcase ").count(), panel.len());
    assert!(!junit.contains("<failure") && !junit.contains("<error"));
    assert!(
        std::fs::read_to_string(run.join("report.html"))
            .unwrap()
            .contains("Persona simulation")
    );

    // Same seed, same deterministic agent: byte-identical results, transcripts and logs (the
    // judge resets each session first, so the second run does not inherit the first's memory).
    let again = tempfile::tempdir().unwrap();
    judge(&[
        "sim",
        "--endpoint",
        &server.base_url,
        "--rounds",
        "15",
        "--seed",
        "3",
        "--out",
        again.path().to_str().unwrap(),
    ]);
    let rerun = only_run(again.path());
    let mut files = vec![PathBuf::from("results.json"), PathBuf::from("junit.xml")];
    for c in conversations {
        files.push(PathBuf::from(c["transcript_file"].as_str().unwrap()));
        files.push(PathBuf::from(c["log_file"].as_str().unwrap()));
    }
    for file in &files {
        let first = std::fs::read(run.join(file)).unwrap();
        let second = std::fs::read(rerun.join(file)).unwrap();
        assert!(
            first == second,
            "{} differs between runs of seed 3",
            file.display()
        );
    }

    // The single-turn mode of docs/contracts/run-log.md: one message, one reply.
    let single = tempfile::tempdir().unwrap();
    judge(&[
        "sim",
        "--endpoint",
        &server.base_url,
        "--single-turn",
        "--persona",
        "maya",
        "--out",
        single.path().to_str().unwrap(),
    ]);
    let run = only_run(single.path());
    let log =
        parse_log(&std::fs::read_to_string(run.join("logs/session-0001.log")).unwrap()).unwrap();
    assert_eq!(log.meta("stop_reason"), Some("single_turn"));
    assert_eq!(log.meta("max_turns"), Some("1"));
    assert_eq!(log.turns.len(), 2);
}

#[test]
fn ab_of_memory_on_against_memory_off_rates_on_higher_with_a_significant_paired_test() {
    let (data_on, data_off) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let on = Server::start(data_on.path(), &["--memory", "on"]);
    let off = Server::start(data_off.path(), &["--memory", "off"]);
    let out = tempfile::tempdir().unwrap();
    let stdout = judge(&[
        "ab",
        "--endpoint",
        &on.base_url,
        "--endpoint-b",
        &off.base_url,
        "--trials",
        "2",
        "--seed",
        "5",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let run = only_run(out.path());
    let ab = json(&run.join("results.json"));
    let pairs = shipped().unwrap().len() * 2;
    assert_eq!(ab["test"]["pairs"], pairs, "{stdout}");
    assert_eq!(ab["goal_rate_a"], 1.0);
    assert_eq!(
        ab["goal_rate_b"], 0.0,
        "memory off cannot recall what it was told"
    );
    assert_eq!(ab["test"]["wins_a"], pairs);
    let p = ab["test"]["sign_test_p"].as_f64().unwrap();
    assert!((p - 2.0 * 0.5f64.powi(pairs as i32)).abs() < 1e-12, "{p}");
    assert!(p < 0.001);
    // The win share's Wilson interval stays informative when every pair goes one way.
    let share_low = ab["test"]["win_share_ci"][0].as_f64().unwrap();
    assert!(share_low > 0.75, "{share_low}");
    let diff = ab["test"]["mean_difference"].as_f64().unwrap();
    assert!(diff > 0.9, "{diff}");
    let rating = |i: usize, k: &str| ab["ratings"][i][k].as_f64().unwrap();
    assert_eq!(ab["ratings"][0]["player"], "A");
    assert!(rating(0, "rating") > rating(1, "rating") + 400.0);
    assert!(
        rating(0, "ci_low") > rating(1, "ci_high"),
        "the intervals do not overlap"
    );
    for sub in ["a", "b"] {
        let results = json(&run.join(sub).join("results.json"));
        assert_eq!(results["conversations"].as_array().unwrap().len(), pairs);
    }
    let report = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(report.contains("sign test p") && report.contains("Bradley-Terry"));
    assert!(stdout.contains("sign test p ="), "{stdout}");
}

#[test]
fn recorded_requests_replay_identically_against_another_agent_and_differ_where_memory_matters() {
    let (data_on, data_off) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let on = Server::start(data_on.path(), &[]);
    let off = Server::start(data_off.path(), &["--memory", "off"]);
    let out = tempfile::tempdir().unwrap();
    judge(&[
        "sim",
        "--endpoint",
        &on.base_url,
        "--persona",
        "maya,gus",
        "--record",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let run = only_run(out.path());
    let fixture = run.join("fixtures/target.json");
    let recorded = json(&fixture);
    assert_eq!(recorded["fixture_version"], "1.0");
    let payloads = recorded["payloads"].as_array().unwrap().len();
    assert_eq!(payloads, 30, "two personas, 15 rounds each");
    let replays = tempfile::tempdir().unwrap();
    let stdout = judge(&[
        "replay",
        fixture.to_str().unwrap(),
        "--endpoint",
        &off.base_url,
        "--out",
        replays.path().to_str().unwrap(),
    ]);
    let report = json(&only_run(replays.path()).join("replay.json"));
    assert_eq!(report["points"], payloads, "{stdout}");
    assert_eq!(report["failed"], 0);
    let identical = report["identical"].as_u64().unwrap();
    let differing = report["differing"].as_u64().unwrap();
    // Acknowledgements match; the recall answers (4 per persona after the reveal... at least
    // the two recalled goals each) differ.
    assert!(identical > 0 && differing >= 4, "{identical} {differing}");
    let points = report["decision_points"].as_array().unwrap();
    let recall = points
        .iter()
        .find(|p| p["baseline"] == "Your flight number is JL042.")
        .expect("the baseline recalled the flight");
    assert_eq!(recall["reply"], "I don't know; you haven't told me that.");
    assert_eq!(recall["identical"], false);
}

#[test]
fn a_config_injected_persona_whose_endpoint_is_down_falls_back_and_opens_the_breaker() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &[]);
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("injection.yaml");
    // The YAML shape of docs/contracts/agent-injection.md; nothing listens on the endpoint's port.
    std::fs::write(
        &config,
        format!(
            r#"
simulation:
  name: down endpoint
  agent_injection:
    endpoints:
      - agent_id: maya
        url: "http://127.0.0.1:{}/respond"
        timeout_seconds: 1
        privacy_tier: full
    circuit_breaker: {{failure_threshold: 3, half_open_probe_interval_seconds: 30, success_threshold: 2}}
    fallback: {{strategy: simulated_agent}}
injection: {{privacy_tier: basic, send_persona_details_externally: true, redact_pii_patterns: true}}
"#,
            common::free_port()
        ),
    )
    .unwrap();
    let out = work.path().join("runs");
    judge(&[
        "sim",
        "--endpoint",
        &server.base_url,
        "--persona",
        "maya,gus",
        "--config",
        config.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let run = only_run(&out);
    let metrics = json(&run.join("metrics.json"));
    let m = &metrics[0];
    assert_eq!(m["agent_id"], "maya");
    assert_eq!(m["calls"], 15);
    assert_eq!(m["infra_errors"], 15);
    assert_eq!(m["circuit_rejections"], 12);
    assert_eq!(m["circuit_state"], "OPEN");
    assert_eq!(m["transitions"][0]["call"], 3);
    let results = json(&run.join("results.json"));
    let maya = &results["conversations"][0];
    let gus = &results["conversations"][1];
    assert_eq!(
        maya["fallback_turns"], 15,
        "every maya turn was the simulator's, marked"
    );
    assert_eq!(maya["injected"]["scored_turns"], 0);
    assert!(
        maya["injected"]["score"].is_null(),
        "no turn of its own: no score"
    );
    assert_eq!(
        maya["checks"]["goal_reached"], true,
        "the target is still judged on its replies"
    );
    assert_eq!(gus["fallback_turns"], 0);
    assert!(gus.get("injected").is_none(), "gus was not injected");
    let transcript =
        std::fs::read_to_string(run.join("transcripts/conversation-0001.json")).unwrap();
    let marks: Value = serde_json::from_str::<Value>(&transcript).unwrap()["turn_marks"].clone();
    assert_eq!(marks.as_object().unwrap().len(), 15);
    assert!(marks["user5"].as_str().unwrap().contains("circuit OPEN"));
    assert_eq!(
        parse_transcript(&transcript).unwrap().user_agent_id,
        "maya@injected"
    );
}
