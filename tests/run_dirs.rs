//! The run-directory contract across suites: `judge ltm`, `judge apps`, `judge sim` and
//! `judge load` run as processes against a real agent-server, and every run directory they write
//! parses into the judge's one manifest type, complete, naming its suite and run id.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Server, binary};
use judge_client::rundir::{self, AnyManifest, RunState};

/// Runs `judge` with `args` and `--out out`, asserting success; returns the one run directory
/// it created.
fn judge_run(args: &[&str], out: &Path) -> PathBuf {
    let output = Command::new(binary("judge"))
        .args(args)
        .args(["--out", out.to_str().unwrap()])
        .output()
        .expect("judge runs");
    assert!(
        output.status.success(),
        "judge {args:?} failed\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

#[test]
fn every_suite_writes_a_manifest_of_the_one_type() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &[]);
    let url = server.base_url.as_str();
    let runs: [(&str, Vec<&str>); 4] = [
        (
            "ltm",
            vec![
                "ltm",
                "--endpoint",
                url,
                "--trials",
                "1",
                "--span",
                "200",
                "--types",
                "needle",
                "--quiet",
            ],
        ),
        (
            "apps",
            vec![
                "apps",
                "--endpoint",
                url,
                "--trials",
                "1",
                "--only",
                "transfer-basic",
                "--quiet",
            ],
        ),
        (
            "sim",
            vec![
                "sim",
                "--endpoint",
                url,
                "--rounds",
                "2",
                "--persona",
                "maya",
            ],
        ),
        (
            "load",
            vec![
                "load",
                "--endpoint",
                url,
                "--concurrency",
                "1",
                "--requests",
                "3",
                "--quiet",
            ],
        ),
    ];
    for (suite, args) in runs {
        let out = tempfile::tempdir().unwrap();
        let dir = judge_run(&args, out.path());
        let manifest: AnyManifest =
            rundir::read_manifest(&dir).unwrap_or_else(|e| panic!("{suite}: {e}"));
        assert_eq!(manifest.suite, suite);
        assert_eq!(manifest.state, RunState::Complete, "{suite}");
        assert_eq!(manifest.run_id, rundir::run_id(&dir), "{suite}");
        assert_eq!(manifest.judge_version, env!("CARGO_PKG_VERSION"), "{suite}");
        assert!(
            manifest
                .finished_at
                .is_some_and(|f| f >= manifest.created_at),
            "{suite}: {manifest:?}"
        );
        assert!(manifest.why.is_none(), "{suite}");
        assert!(dir.join("results.json").is_file(), "{suite}");
    }
}
