//! `judge membench`: the field's memory benchmarks, LoCoMo and LongMemEval, through the API wall.
//!
//! - [`dataset`]: the published files read into one shape, with their quirks noted per item;
//! - [`scoring`]: the authors' answer scoring (LoCoMo token F1 per category);
//! - [`judge`]: the optional model judge (LongMemEval accuracy, LoCoMo's "J");
//! - [`bm25`]: the reference retriever and recall@k.

pub mod bm25;
pub mod dataset;
pub mod ingest;
pub mod judge;
pub mod report;
pub mod results;
pub mod runner;
pub mod scoring;
