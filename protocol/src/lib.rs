//! The agentwall wire contract.
//!
//! Everything the judge and the agent-server say to each other over HTTP is typed here, and nothing
//! else: OpenAI Chat Completions types ([`openai`]), the Agent2Agent protocol ([`a2a`]: agent
//! card, messages, tasks, JSON-RPC), the benchmark control plane ([`control`],
//! [`recall`]) and the header names and their parsers ([`headers`]), and the conventions of
//! simulated applications ([`apps`]: the directive marker, the tool-name separator, the
//! notifications header). The crate does no I/O, so both programs (and any third
//! party) can depend on it without pulling in a runtime.
//!
//! Leniency rule: types that *arrive* from other implementations accept what real servers send
//! (unknown fields are kept in `extra`, optional fields may be absent or `null`); types we *send* skip
//! absent optional fields.

pub mod a2a;
pub mod apps;
pub mod control;
pub mod headers;
pub mod openai;
pub mod recall;

pub use headers::{MockTimeError, SessionId, SessionIdError, parse_mock_time};
