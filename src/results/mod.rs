//! Results of a run: the model written to `results.json`, aggregates, the OpenWOP summary.

pub mod conformance;
pub mod eras;
mod flags;
pub mod judges;
mod model;
pub mod paired;
pub mod regression;
mod score;
pub mod scorecard;
pub mod summary;
#[cfg(any(test, feature = "fuzzing"))]
pub mod testing;
mod totals;
pub mod validate;
pub mod variants;
mod verdict;

pub use flags::{SuspectTask, TaskFlags};
pub use model::*;
pub use score::TaskScore;
pub use totals::{TagScore, Totals, by_tag, percentile, totals};
pub use verdict::{GateCheck, GateVerdict, Mark, RunOutcome};
