//! A task's score: one value with its trial design, the one every reader takes.

use serde::{Deserialize, Serialize};

use super::run_results::{Status, TrialResult};

/// A task's score, one value with its trial design, the one every reader takes (the
/// aggregate score, `pass_score`, the score budgets, the reports): the mean of its trials'
/// scores for fixed trials (an error counting 0), and for adaptive trials the estimate their
/// stopping rule leaves unbiased (`Design::unbiased_mean`). The raw mean of a task stopped at
/// its first failure is biased — a task passing 80% of the time reads 0.61 — and no reader
/// can take it for the score: it is made only from the trials and their design
/// ([`TaskScore::of`]), and read from a file, an adaptive task's score is made again from its
/// trials (`validate::parse`).
#[derive(Debug, Clone, Copy, Default, PartialEq, PartialOrd, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct TaskScore(#[schemars(range(min = 0.0, max = 1.0))] f64);

impl TaskScore {
    /// A task that did not run, or was decided without a trial.
    pub const NONE: TaskScore = TaskScore(0.0);

    /// The score of `trials` run under `design` (`None`: fixed trials).
    pub fn of(trials: &[TrialResult], design: Option<crate::stats::Design>) -> TaskScore {
        let counted = |t: &TrialResult| if matches!(t.status, Status::Passed | Status::Failed) { t.score } else { 0.0 };
        let Some(design) = design else {
            return TaskScore(trials.iter().map(counted).sum::<f64>() / trials.len().max(1) as f64);
        };
        let ran = trials.iter().filter(|t| t.status != Status::Skipped);
        let (passing, failing): (Vec<&TrialResult>, Vec<&TrialResult>) = ran.partition(|t| t.status == Status::Passed);
        let mean = |v: &[&TrialResult]| v.iter().map(|t| counted(t)).sum::<f64>() / v.len().max(1) as f64;
        let estimate = design.unbiased_mean(passing.len() as u32, failing.len() as u32, mean(&passing), mean(&failing));
        TaskScore(estimate.clamp(0.0, 1.0))
    }

    /// A score set by hand, for tests of what reads it.
    #[cfg(test)]
    pub fn given(score: f64) -> TaskScore {
        TaskScore(score)
    }

    pub fn get(self) -> f64 {
        self.0
    }
}

impl std::fmt::Display for TaskScore {
    /// As the reports print a score: "0.75".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.2}", self.0)
    }
}
