//! `judge membench`: the field's memory benchmarks, LoCoMo and LongMemEval, through the API wall.
//!
//! - [`dataset`]: the published files read into one shape, with their quirks noted per item;
//! - [`scoring`]: the authors' answer scoring (LoCoMo token F1 per category);
//! - [`judge`]: the optional model judge (LongMemEval accuracy, LoCoMo's "J");
//! - [`bm25`]: the reference retriever and recall@k;
//! - [`ingest`], [`runner`], [`results`], [`report`]: a run from ingestion to its files;
//! - [`compare`]: two runs paired per question (`judge compare`).

pub mod bm25;
pub mod compare;
pub mod dataset;
pub mod ingest;
pub mod judge;
pub mod report;
pub mod results;
pub mod runner;
pub mod scoring;
