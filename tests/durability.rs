//! "Nothing is lost": every acknowledged memory survives SIGTERM and a restart, and also a SIGKILL
//! (the embedded store commits each turn before the reply is sent).

mod common;

use common::{Server, say};
use nix::sys::signal::Signal;

const SESSIONS: usize = 10;
const FACTS_PER_SESSION: usize = 10;

fn session(i: usize) -> String {
    format!("durability-{i}")
}

/// Tells every session its facts, from several threads at once; returns when all are acknowledged.
fn tell_everything(base_url: &str) {
    std::thread::scope(|scope| {
        for i in 0..SESSIONS {
            scope.spawn(move || {
                for j in 0..FACTS_PER_SESSION {
                    let ack = say(
                        base_url,
                        &session(i),
                        &format!("My code word {j} is w{i}x{j}."),
                    );
                    assert!(ack.contains(&format!("w{i}x{j}")), "{ack}");
                }
            });
        }
    });
}

fn assert_everything_recalled(base_url: &str) {
    for i in 0..SESSIONS {
        for j in 0..FACTS_PER_SESSION {
            let answer = say(base_url, &session(i), &format!("What is my code word {j}?"));
            assert!(
                answer.contains(&format!("w{i}x{j}")),
                "session {i} fact {j} lost: {answer}"
            );
        }
    }
}

fn restart_keeps_memory(signal: Signal) {
    let data = tempfile::tempdir().unwrap();
    let mut server = Server::start(data.path(), &[]);
    tell_everything(&server.base_url);
    let status = server.stop_with(signal);
    let log = server.stderr();
    assert!(
        !log.contains("panicked"),
        "agent-server panicked on {signal}:\n{log}"
    );
    if signal == Signal::SIGTERM {
        assert!(
            status.success(),
            "SIGTERM must be a clean exit, got {status}:\n{log}"
        );
    }
    drop(server);

    let server = Server::start(data.path(), &[]);
    assert_everything_recalled(&server.base_url);
}

#[test]
fn acknowledged_memory_survives_sigterm_and_restart() {
    restart_keeps_memory(Signal::SIGTERM);
}

#[test]
fn acknowledged_memory_survives_sigkill_and_restart() {
    restart_keeps_memory(Signal::SIGKILL);
}
