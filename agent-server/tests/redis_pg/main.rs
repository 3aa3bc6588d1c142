//! The redis+postgres memory backend against real servers: the shared conformance suite, then what is
//! specific to this backend (migrations, outages, restarts, several servers, Redis TTLs, atomicity).
//!
//! Needs `AGENTWALL_TEST_REDIS_URL` and `AGENTWALL_TEST_DATABASE_URL` (an admin URL: every test
//! creates its own database). `scripts/test-services.sh` starts throwaway servers and prints them:
//!
//! ```sh
//! scripts/test-services.sh run cargo nextest run -p agent-server --test redis_pg
//! ```
//!
//! Without them every test fails and says so; none is skipped. Tests that stop servers start their
//! own (a `redis-server` or `postgres` child on a free port) and never stop the shared ones.
//!
//! One module per concern; `harness` holds the store under test and the helpers they share.
// Tests spawn their own tasks (database connections), outside any request.
#![allow(clippy::disallowed_methods)]

mod harness;

mod a2a;
mod faults;
mod metrics;
mod mirrors;
mod plans;
mod search;
mod startup;
mod storage;

use harness::Harness;

agent_server::memory_conformance_tests!(Harness::new().await);

/// The same checks with semantic recall on.
mod with_vectors {
    use super::Harness;
    agent_server::memory_conformance_tests!(with_vectors: Harness::new().await);
}
