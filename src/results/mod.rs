//! Results of a run: the model written to `results.json`, aggregates, the OpenWOP summary.

mod model;
pub mod summary;
mod totals;

pub use model::*;
pub use totals::{percentile, totals};
