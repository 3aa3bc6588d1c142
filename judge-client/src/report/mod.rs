//! The report kit every suite writes its files with: the page shell and stylesheet of
//! `report.html` ([`html`]), its SVG charts ([`chart`]), HTML/XML escaping ([`escape`]), statistics ([`stats`]) and session
//! logs in the format of docs/contracts/run-log.md ([`session_log`]). What a suite reports lives with the
//! suite.

pub mod chart;
pub mod escape;
pub mod html;
pub mod session_log;
pub mod stats;
