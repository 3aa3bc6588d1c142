//! The `judge` command line: one module per command (its flags and what it runs), plus the flags
//! and the progress bar they share. `main.rs` only parses and dispatches.

pub mod apps;
pub mod calibrate;
pub mod conform;
pub mod load;
pub mod ltm;
pub mod membench;
pub mod progress;
pub mod runs;
pub mod serve;
pub mod sim;
pub mod summary;
pub mod target;

/// Exit code when a score is below `--fail-under`.
pub const EXIT_BELOW_THRESHOLD: u8 = 2;
/// Exit code when `judge compare` finds a regression.
pub const EXIT_REGRESSION: u8 = 3;
/// Exit code when the run could not measure the agent: nothing was left to score (every
/// conversation stopped by the judge's own failure or spoiled by its simulated user).
pub const EXIT_NOT_MEASURED: u8 = 4;
/// Exit code when `judge conform` finds a check that fails (not applicable checks do not count).
pub const EXIT_NONCONFORMANT: u8 = 5;
