//! Results of a run: the model written to `results.json`, aggregates, the OpenWOP summary.

pub mod arm_comparison;
pub mod baseline_comparison;
pub mod carry;
pub mod conformance_tasks;
pub mod eras;
mod flags;
pub mod judge_sample;
pub mod judges;
pub mod paired_rates;
mod run_outcome;
mod run_results;
mod score;
pub mod scorecard;
pub mod summary;
#[cfg(any(test, feature = "fuzzing"))]
pub mod testing;
mod totals;
mod turn_result;
pub mod validate;

pub use flags::{SuspectTask, TaskFlags};
pub use run_outcome::{GateCheck, GateVerdict, Mark, RunOutcome};
pub use run_results::*;
pub use score::TaskScore;
pub use totals::{TagScore, Totals, by_tag, percentile, totals};
pub use turn_result::{SimulatedUserRecord, SimulatorEnd, TurnAuthor, TurnResult};
