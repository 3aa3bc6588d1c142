//! HTTP-level tests: the real server on port 0 with a fresh data directory per test, driven over
//! real HTTP by awc.

mod control;
mod errors;
mod helpers;
mod memory;
mod surface;
