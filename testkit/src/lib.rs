//! Dev-only helpers shared by the workspace's tests (a dev-dependency only, never published).
//!
//! - [`env`]: the throwaway services `scripts/test-services.sh` starts, read from the environment;
//! - [`postgres`]: a database of a test's own ([`postgres::TestDb`]), dropped when the test ends;
//! - [`services`]: a `redis-server` or `postgres` of a test's own, to stop, crash and restart
//!   without disturbing other tests.

pub mod env;
pub mod postgres;
pub mod services;
