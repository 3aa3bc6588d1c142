//! Everything the judge writes: results, JUnit, HTML, session logs, the summary table, statistics
//! and run comparisons.

pub mod compare;
pub mod html;
pub mod junit;
pub mod manifest;
pub mod results;
pub mod session_log;
pub mod stats;
pub mod summary;
