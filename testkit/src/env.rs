//! The throwaway Redis and Postgres that `scripts/test-services.sh` starts, as its variables name
//! them. A test that needs them and finds them unset fails and says how to start them; none is
//! skipped.

pub const SETUP_HINT: &str = "start throwaway Redis and Postgres first: \
    `eval \"$(scripts/test-services.sh start)\"`, or run the tests through \
    `scripts/test-services.sh run cargo nextest run ...`";

pub fn required_env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set; {SETUP_HINT}"))
}

/// `AGENTWALL_TEST_REDIS_URL`.
pub fn redis_url() -> String {
    required_env("AGENTWALL_TEST_REDIS_URL")
}

/// `AGENTWALL_TEST_DATABASE_URL`: an admin URL, on which tests create databases of their own.
pub fn admin_url() -> String {
    required_env("AGENTWALL_TEST_DATABASE_URL")
}
