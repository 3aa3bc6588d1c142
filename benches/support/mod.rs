//! What the agent-server benchmarks share: the release binary, and a server of it on a free port.

#![allow(dead_code)] // each bench uses a different subset

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub use testkit::process::free_port;

/// The release agent-server of this checkout, built first (`cargo bench` builds the bench itself
/// in release, not the binary it measures).
pub fn release_agent_server() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let root = env!("CARGO_MANIFEST_DIR");
    let ok = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--quiet",
            "--workspace",
            "--bin",
            "agent-server",
        ])
        .current_dir(root)
        .status()
        .expect("cargo runs")
        .success();
    assert!(ok, "release build of agent-server failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| format!("{root}/target").into());
    target.join("release/agent-server")
}

/// An agent-server process on 127.0.0.1; killed and waited for on drop.
pub struct Server {
    child: Child,
    pub url: String,
}

impl Server {
    /// CPU time (user and system) the server has used so far, from `/proc/<pid>/stat`.
    pub fn cpu_time(&self) -> std::time::Duration {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // The fields after the command name, which is in parentheses and may hold spaces:
        // utime and stime are the 12th and 13th of them.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let ticks: u64 = after
            .split_whitespace()
            .skip(11)
            .take(2)
            .filter_map(|t| t.parse::<u64>().ok())
            .sum();
        // Linux counts in USER_HZ, 100 per second on every architecture it exports.
        std::time::Duration::from_millis(ticks * 10)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `binary` with `args` on a free port, logging warnings only, and waits until it listens.
pub fn start(binary: &Path, args: &[String]) -> Server {
    let port = free_port();
    let child = Command::new(binary)
        .args(["--addr", &format!("127.0.0.1:{port}")])
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("agent-server starts");
    // Owned by `Server` from here, so it is killed and waited for on every path.
    let mut server = Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    testkit::process::wait_listening(port, &mut server.child, "agent-server");
    server
}
