//! The calibration ladder, small: `scripts/calibrate.sh` with three rungs (no memory, facts only,
//! facts and episodes), a few LTM tests per type and one LoCoMo conversation cut short, against
//! the debug binaries. The full ladder is the documented command (docs/results/calibration.md).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::binary;
use serde_json::Value;

/// LoCoMo beside the checkout when present, else the small fixture in LoCoMo's format.
fn locomo() -> PathBuf {
    let real = std::env::var_os("AGENTWALL_DATASETS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/datasets"))
        .join("locomo10.json");
    if real.exists() {
        real
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("judge-client/tests/fixtures/membench/locomo_small.json")
    }
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_small_ladder_is_tabled_and_memory_off_scores_below_memory_on() {
    let judge = binary("judge");
    binary("agent-server");
    let bin = judge.parent().unwrap();
    let out = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/calibrate.sh");
    let output = Command::new("bash")
        .arg(&script)
        .arg("--bin")
        .arg(bin)
        .arg("--out")
        .arg(out.path())
        .args(["--rungs", "none,facts,episodes", "--suites", "ltm,membench"])
        .args([
            "--types",
            "needle,knowledge_update,multi_hop",
            "--trials",
            "2",
        ])
        .args([
            "--conversations",
            "1",
            "--sessions",
            "2",
            "--questions",
            "8",
        ])
        .arg("--locomo")
        .arg(locomo())
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "calibrate.sh failed:\n{stdout}\n--- stderr ---\n{stderr}"
    );

    // The tables: printed, and written as markdown and JSON per suite.
    assert!(
        stdout.contains("Calibration ladder: ltm (score, phrasing standard)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Calibration ladder: membench (score)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Calibration ladder: membench (recall@8)"),
        "{stdout}"
    );
    let table = std::fs::read_to_string(out.path().join("ltm/calibration.md")).unwrap();
    for row in [
        "| no memory | 6 |",
        "| facts only | 6 |",
        "| facts + episodes | 6 |",
    ] {
        assert!(table.contains(row), "{row} in\n{table}");
    }
    assert!(table.contains("Ordered: "), "{table}");

    let ltm = read_json(&out.path().join("ltm/calibration.json"));
    assert_eq!(ltm["suite"], "ltm");
    let rungs = ltm["rungs"].as_array().unwrap();
    let labels: Vec<&str> = rungs.iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["no memory", "facts only", "facts + episodes"]);
    let mean = |i: usize| rungs[i]["mean"].as_f64().unwrap();
    // Memory off cannot answer what was said a thousand tokens and hours earlier; memory on
    // can, with the templates' phrasing.
    assert!(mean(0) < mean(1) && mean(0) < mean(2), "{ltm:#}");
    let first = &ltm["steps"][0];
    assert_eq!(first["verdict"], "told_apart", "{ltm:#}");
    assert!(first["separation"].as_f64().unwrap() >= 1.0, "{ltm:#}");
    for rung in rungs {
        let (low, high) = (
            rung["ci_low"].as_f64().unwrap(),
            rung["ci_high"].as_f64().unwrap(),
        );
        assert!(low < high, "no zero-width interval: {rung:#}");
        assert!(rung["standard_error"].as_f64().unwrap() > 0.0, "{rung:#}");
    }

    let membench = read_json(&out.path().join("membench/calibration.json"));
    assert_eq!(membench["suite"], "membench");
    assert_eq!(membench["rungs"].as_array().unwrap().len(), 3);
    assert_eq!(membench["steps"].as_array().unwrap().len(), 2);
    let recall = read_json(&out.path().join("membench-recall/calibration.json"));
    assert_eq!(recall["measure"], "recall@8");
    // A target with memory off recalls nothing.
    assert_eq!(recall["rungs"][0]["mean"], 0.0, "{recall:#}");

    let timings = std::fs::read_to_string(out.path().join("timings.tsv")).unwrap();
    assert_eq!(timings.lines().count(), 1 + 3 * 2, "{timings}");
}
