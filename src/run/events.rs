//! Typed events of a run. The dispatcher sends them; every reporter matches every variant by
//! name (no catch-all arm), so a new event forces a decision everywhere.

use crate::results::{Results, TaskResult, TrialResult};

#[derive(Debug, Clone)]
pub enum RunEvent {
    RunStarted {
        suite_id: String,
        tasks: usize,
    },
    TaskStarted {
        index: usize,
        id: String,
    },
    TrialStarted {
        index: usize,
        trial: u32,
    },
    /// An attempt ended in an infrastructure error and is run again.
    TrialRetry {
        index: usize,
        trial: u32,
        attempt: u32,
        reason: String,
    },
    TrialFinished {
        index: usize,
        trial: u32,
        result: Box<TrialResult>,
    },
    TaskFinished {
        index: usize,
        result: Box<TaskResult>,
    },
    /// A planned task that will not run, with why (`result.not_run`).
    TaskSkipped {
        index: usize,
        result: Box<TaskResult>,
    },
    /// A SIGINT/SIGTERM arrived; `signals` counts them (the second stops everything).
    CancelRequested {
        signals: u32,
    },
    /// The results, gated: the outcome is `results.verdict.outcome`.
    RunFinished {
        results: Box<Results>,
    },
}
