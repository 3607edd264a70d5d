//! Results of a run: the model written to `results.json`, aggregates, the OpenWOP summary.

mod finalize;
mod model;
pub mod regression;
pub mod scorecard;
pub mod summary;
mod totals;

pub use finalize::finalize;
pub use model::*;
pub use totals::{percentile, totals};
