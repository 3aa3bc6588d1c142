//! Dev-only helpers shared by the workspace's tests (a dev-dependency only, never published).
//!
//! - [`embedding`]: the sentence-embedding model, its numpy reference, and an embeddings endpoint
//!   serving it with fault switches;
//! - [`env`]: the throwaway services `scripts/test-services.sh` starts, read from the environment;
//! - [`http`]: fake HTTP servers (upstream models, collectors, proxies) on a free port;
//! - [`modules`]: the import graph of a crate's modules, for tests that hold its layering;
//! - [`postgres`]: a database of a test's own ([`postgres::TestDb`]), dropped when the test ends;
//! - [`services`]: a `redis-server` or `postgres` of a test's own, to stop, crash and restart
//!   without disturbing other tests;
//! - [`process`]: the workspace's binaries, built before a test runs them; free ports.

pub mod embedding;
pub mod env;
pub mod http;
pub mod modules;
pub mod postgres;
pub mod process;
pub mod services;
