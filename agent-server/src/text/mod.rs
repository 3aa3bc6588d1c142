//! What a user's words say, read without a model: sentences and questions, dates and relative
//! times, the facts and list edits a turn teaches, and the standing rules and reminders it sets.
//!
//! Both the [`crate::agent`] (which extracts what to remember) and the builtin model of
//! [`crate::llm`] (which answers from what was said) read text this way, so it sits below both.
//! It knows memory's record types and nothing above them.

pub mod dates;
pub mod extract;
pub mod language;
pub mod lists;
pub mod standing;
