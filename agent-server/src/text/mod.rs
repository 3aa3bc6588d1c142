//! What a user's words say, read without a model: sentences and questions, dates and relative
//! times, the facts and list edits a turn teaches, and the standing rules and reminders it sets.
//!
//! Both the [`crate::agent`] (which extracts what to remember) and the builtin model of
//! [`crate::llm`] (which answers from what was said) read text this way, so it sits below both.
//! It knows memory's record types and nothing above them.

pub(crate) mod dates;
pub(crate) mod extract;
pub(crate) mod language;
pub(crate) mod lists;
pub(crate) mod standing;
