//! The run-directory contract across suites: every suite (`judge ltm`, `judge apps`, `judge
//! sim`, `judge ab`, `judge load`, `judge membench` and `judge conform`) runs as a process
//! against a real agent-server, and every run directory it writes parses into the judge's one
//! manifest type, complete, naming its suite and run id, with results its suite reads back.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Server, binary};
use judge_client::rundir::{self, AnyManifest, RunState};
use judge_client::suites::registry::KINDS;
use judge_client::suites::{Suite, SuiteVisitor, visit};

/// Whether `results.json` in a run directory parses as its suite's typed results.
struct ResultsParse<'a>(&'a Path);

impl SuiteVisitor for ResultsParse<'_> {
    type Output = Result<(), String>;
    fn visit<S: Suite>(self) -> Self::Output {
        rundir::read_json::<S::Results>(&self.0.join("results.json"))
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

fn membench_fixture() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("judge-client/tests/fixtures/membench/locomo_small.json")
        .display()
        .to_string()
}

/// Runs `judge` and returns its exit code and everything it printed.
fn judge(args: &[&str]) -> (i32, String) {
    let output = Command::new(binary("judge"))
        .args(args)
        .output()
        .expect("judge runs");
    (
        output.status.code().unwrap_or(-1),
        format!(
            "{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

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
    let membench_data = membench_fixture();
    let runs: [(&str, Vec<&str>); 7] = [
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
            "ab",
            vec![
                "ab",
                "--endpoint",
                url,
                "--endpoint-b",
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
        (
            "membench",
            vec![
                "membench",
                "--endpoint",
                url,
                "--dataset",
                "locomo",
                "--data",
                &membench_data,
                "--protocol",
                "inject",
                "--quiet",
            ],
        ),
        (
            "conform",
            // Both APIs, with no header: a run with a failing check would exit 5.
            vec!["conform", "--endpoint", url, "--api", "both"],
        ),
    ];
    let kinds: Vec<&str> = runs.iter().map(|(suite, _)| *suite).collect();
    assert_eq!(kinds, KINDS, "every suite the registry knows runs here");
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
        visit(&manifest.suite, ResultsParse(&dir))
            .unwrap_or_else(|| panic!("{suite}: no suite of that kind"))
            .unwrap_or_else(|e| panic!("{suite}: results.json: {e}"));

        // `judge compare` reads every suite's runs: a run against itself pairs every unit and
        // regresses nothing. An A/B run is already a comparison and says so.
        let (code, output) = judge(&["compare", dir.to_str().unwrap(), dir.to_str().unwrap()]);
        if suite == "ab" {
            assert_ne!(code, 0, "{output}");
            assert!(output.contains("already a comparison"), "{output}");
        } else {
            assert_eq!(code, 0, "{suite}: {output}");
            // Every suite prints "N units paired (M unpaired)". A conformance check that does
            // not apply has no score and is not paired.
            assert!(
                output.contains("(0 unpaired)")
                    || (suite == "conform" && output.contains("checks paired")),
                "{suite}: {output}"
            );
        }
    }
}
