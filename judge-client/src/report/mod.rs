//! The report kit every suite writes its files with: the page shell and stylesheet of
//! `report.html` ([`html`]), HTML/XML escaping ([`escape`]), statistics ([`stats`]) and session
//! logs in the format of docs/contracts/run-log.md ([`session_log`]). What a suite reports lives with the
//! suite.

pub mod escape;
pub mod html;
pub mod session_log;
pub mod stats;
