//! Starting the workspace's binaries and waiting for servers: what the crates' cross-process
//! tests share.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A free loopback port: bound and released, so nothing listens on it until someone binds it
/// (fine for tests on one machine).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The directory of this test build's binaries: the test runs as `<target>/<profile>/deps/<test>`,
/// and the workspace's binaries sit in `<target>/<profile>`, whatever the profile and target dir.
fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("tests run from <target>/<profile>/deps")
        .to_path_buf()
}

/// Path of a workspace binary (`agent-server`, `judge`), built first, once per test process, so
/// that a test never runs a stale one. `cargo` is the cargo that runs the tests (it sets `CARGO`),
/// so the profile and target dir match.
pub fn workspace_binary(name: &str) -> PathBuf {
    static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if !built.iter().any(|b| b == name) {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let status = Command::new(cargo)
            .args(["build", "--quiet", "--workspace", "--bin", name])
            .current_dir(workspace)
            .status()
            .expect("cargo runs");
        assert!(status.success(), "cargo build --bin {name} failed");
        built.push(name.to_owned());
    }
    bin_dir().join(name)
}

/// Waits up to a minute for something to listen on `port`; panics, naming `what`, if `child`
/// exits first or the minute runs out.
pub fn wait_listening(port: u16, child: &mut Child, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited before listening: {status}");
        }
        assert!(Instant::now() < deadline, "{what} never listened on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
