//! HTTP-level tests: the real server on port 0 with a fresh data directory per test, driven over
//! real HTTP by awc.
// Tests spawn their own tasks (servers, concurrent clients), outside any request.
#![allow(clippy::disallowed_methods)]

mod a2a;
mod control;
mod errors;
mod helpers;
mod mcp;
mod memory;
mod recall;
mod responses;
mod semantic;
mod sessions;
mod surface;
