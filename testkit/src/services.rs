//! Servers of a test's own: a `redis-server` or `postgres` child on a free port, which the test
//! can stop, crash and restart without disturbing the shared ones.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::env::SETUP_HINT;

/// A port nothing listens on (just released by the OS).
pub use crate::process::free_port as closed_port;

pub fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{signal} {pid} failed");
}

/// A `redis-server` of this test's own, so that it can be stopped without disturbing other tests.
/// Appends every write to its AOF before answering, so a restart loses nothing acknowledged.
pub struct RedisChild {
    pub child: Child,
    pub port: u16,
}

impl RedisChild {
    pub fn start(dir: &Path, port: u16) -> Self {
        let binary = std::env::var("AGENTWALL_TEST_REDIS_SERVER")
            .unwrap_or_else(|_| "redis-server".to_owned());
        let child = Command::new(&binary)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
            ])
            .arg("--dir")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {binary}: {e}; {SETUP_HINT}"));
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis-server did not listen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { child, port }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RedisChild {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A `postgres` of this test's own with default durability settings, started directly (no pg_ctl)
/// so that this process holds its PID. Runs as the unprivileged user the script names when root.
pub struct PostgresChild {
    child: Option<Child>,
    bindir: String,
    data: std::path::PathBuf,
    port: u16,
    run_as: Option<(u32, u32)>,
    _dir: tempfile::TempDir,
}

impl PostgresChild {
    pub fn init() -> Self {
        let bindir = std::env::var("AGENTWALL_TEST_PG_BINDIR")
            .unwrap_or_else(|_| panic!("AGENTWALL_TEST_PG_BINDIR is not set; {SETUP_HINT}"));
        Self::init_from(&bindir)
    }

    /// A server from the binaries in `bindir` (another Postgres than the test services').
    pub fn init_from(bindir: &str) -> Self {
        let bindir = bindir.to_owned();
        let run_as = match std::env::var("AGENTWALL_TEST_RUN_AS") {
            Ok(user) if !user.is_empty() => Some((id(&user, "-u"), id(&user, "-g"))),
            _ => None,
        };
        let dir = tempfile::tempdir().unwrap();
        if let Some((uid, gid)) = run_as {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
        }
        let data = dir.path().join("data");
        let status = Self::command(&bindir, "initdb", run_as)
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "-A", "trust", "--no-locale", "--no-sync"])
            .stdout(Stdio::null())
            .status()
            .expect("run initdb");
        assert!(status.success(), "initdb failed");
        let mut pg = Self {
            child: None,
            bindir,
            data,
            port: closed_port(),
            run_as,
            _dir: dir,
        };
        pg.start();
        pg
    }

    fn command(bindir: &str, program: &str, run_as: Option<(u32, u32)>) -> Command {
        let mut command = Command::new(Path::new(bindir).join(program));
        if let Some((uid, gid)) = run_as {
            use std::os::unix::process::CommandExt;
            command.uid(uid).gid(gid);
        }
        command
    }

    pub fn start(&mut self) {
        let socket_dir = self.data.parent().unwrap().to_owned();
        let child = Self::command(&self.bindir, "postgres", self.run_as)
            .arg("-D")
            .arg(&self.data)
            .args(["-p", &self.port.to_string(), "-k"])
            .arg(&socket_dir)
            .args(["-c", "listen_addresses=127.0.0.1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run postgres");
        self.child = Some(child);
    }

    pub async fn wait_ready(&self) {
        let url = self.admin_url();
        let started = Instant::now();
        while tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .is_err()
        {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "postgres did not start"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn admin_url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// A crash: SIGKILL, no shutdown checkpoint. Committed data must survive through the WAL.
    pub fn crash(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        // The postmaster's children notice its death and exit; until they do, a new postmaster
        // refuses the data directory.
        std::thread::sleep(Duration::from_millis(500));
    }
}

impl Drop for PostgresChild {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            // Fast shutdown, so that no backend outlives the test.
            signal(child.id(), "INT");
            let _ = child.wait();
        }
    }
}

fn id(user: &str, flag: &str) -> u32 {
    let out = Command::new("id")
        .args([flag, user])
        .output()
        .expect("run id");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("no user {user}; {SETUP_HINT}"))
}

// ---------------------------------------------------------------------------------------------
// Backend-specific tests.
