//! Per-task flags beside the paired test (docs/statistics.md): tasks whose trials got worse
//! beyond chance (Fisher's exact test per task, Holm-corrected across the comparable tasks),
//! and `golden: true` tasks that always passed in the baseline and no longer do.

use serde::{Deserialize, Serialize};

use super::baseline_comparison::{Baseline, TrialCount};
use super::paired_rates::{Pairing, SmallSuiteRule, p_value};
use super::run_outcome::GateCheck;
use super::run_results::Results;
use crate::policy::PairedPolicy;
use crate::stats::round;
use crate::stats::{fisher_worse, holm};

/// `regression.flags` in `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskFlags {
    /// The level at which a task is suspect (the paired test's `alpha`).
    pub alpha: f64,
    /// Tasks whose candidate pass rate is lower than the baseline's beyond chance: one-sided
    /// Fisher test, Holm-adjusted p-value at most `alpha`.
    pub suspect: Vec<SuspectTask>,
    /// Comparable tasks with adaptive trials on either side, left out of the per-task test:
    /// where a task stopped depends on its outcomes, so its counts are not Fisher's table.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub untested_adaptive: usize,
    /// Tasks that passed every trial in the baseline and fail every trial now, of those the
    /// small-suite rule judges (`SmallSuiteRule`): with too few tasks for the paired test,
    /// these fail the gate (docs/statistics.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub broken: Vec<String>,
    /// Comparable tasks marked `golden: true`.
    pub golden: usize,
    /// Golden tasks whose every trial passed in the baseline and not every trial now.
    pub golden_dropped: Vec<String>,
}

/// A task that got worse beyond chance, with its trials on each side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SuspectTask {
    pub id: String,
    pub baseline_passed: u32,
    pub baseline_trials: u32,
    pub candidate_passed: u32,
    pub candidate_trials: u32,
    /// Fisher's one-sided p-value.
    pub p_value: f64,
    /// Holm-adjusted across the comparable tasks.
    pub p_holm: f64,
}

impl TaskFlags {
    pub fn new(baseline: &Baseline, head: &Results, policy: &PairedPolicy) -> TaskFlags {
        let alpha = policy.alpha();
        let pairs = Pairing::new(baseline, head).pairs;
        let counts: Vec<(TrialCount, TrialCount)> = pairs.iter().map(|(t, b)| (b.trials, TrialCount::of(t))).collect();
        let fixed = |(b, c): &&(TrialCount, TrialCount)| b.adaptive.is_none() && c.adaptive.is_none();
        let tested: Vec<_> = pairs.iter().zip(&counts).filter(|(_, bc)| fixed(bc)).collect();
        let p: Vec<f64> = tested
            .iter()
            .map(|(_, (b, c))| fisher_worse(b.passed.into(), b.ran.into(), c.passed.into(), c.ran.into()))
            .collect();
        let adjusted = holm(&p);
        let suspect = tested
            .iter()
            .copied()
            .zip(p.iter().zip(&adjusted))
            .filter(|(_, (_, adj))| **adj <= alpha)
            .map(|(((task, _), (b, c)), (p, adj))| SuspectTask {
                id: task.id.clone(),
                baseline_passed: b.passed,
                baseline_trials: b.ran,
                candidate_passed: c.passed,
                candidate_trials: c.ran,
                p_value: round(*p),
                p_holm: round(*adj),
            })
            .collect();
        let golden: Vec<_> = pairs.iter().zip(&counts).filter(|((task, _), _)| task.golden).collect();
        let golden_dropped = golden
            .iter()
            .filter(|(_, (b, c))| b.passed == b.ran && c.passed < c.ran)
            .map(|((task, _), _)| task.id.clone())
            .collect();
        let rule = SmallSuiteRule::new(&counts, alpha);
        let broken = pairs
            .iter()
            .zip(&counts)
            .zip(&rule.judged)
            .filter(|((_, (b, c)), judged)| **judged && b.passed == b.ran && c.passed == 0)
            .map(|(((task, _), _), _)| task.id.clone())
            .collect();
        let untested_adaptive = counts.len() - tested.len();
        TaskFlags { alpha, suspect, untested_adaptive, broken, golden: golden.len(), golden_dropped }
    }

    /// The suspect tasks in one line: "`t3` 8/8 → 2/8 (p = 0.0350)", or `None` with none.
    pub fn suspect_line(&self) -> Option<String> {
        if self.suspect.is_empty() {
            return None;
        }
        let tasks: Vec<String> = self
            .suspect
            .iter()
            .map(|s| {
                format!(
                    "{} {}/{} → {}/{} (Holm {})",
                    s.id,
                    s.baseline_passed,
                    s.baseline_trials,
                    s.candidate_passed,
                    s.candidate_trials,
                    p_value(s.p_holm)
                )
            })
            .collect();
        Some(format!(
            "{} suspect task(s) (Fisher's exact test per task, Holm-corrected, α {}): {}",
            self.suspect.len(),
            self.alpha,
            tasks.join(", ")
        ))
    }

    /// Tasks left out of the per-task test, in one line, or `None` with none.
    pub fn untested_line(&self) -> Option<String> {
        (self.untested_adaptive > 0).then(|| {
            format!(
                "{} task(s) with adaptive trials are not tested per task for suspect drops \
                 (where a task stops depends on its outcomes)",
                self.untested_adaptive
            )
        })
    }

    /// With too few comparable tasks for the paired test (and no budget set): no task may go
    /// from passing every trial to failing every trial. At one trial a side that is "no task
    /// newly fails"; with more, a flaky task rarely does it by chance.
    pub fn broken_check(&self) -> GateCheck {
        GateCheck::new(
            "new failures vs baseline",
            "≤ 0 that now fail every trial".into(),
            list(&self.broken),
            self.broken.is_empty(),
        )
    }

    /// The gate checks: golden tasks (when there are any), and suspect tasks when the policy
    /// makes them gate (`gate_on_suspect: true`).
    pub fn checks(&self, policy: &PairedPolicy) -> Vec<GateCheck> {
        let mut checks = Vec::new();
        if self.golden > 0 {
            checks.push(GateCheck::new(
                "golden tasks vs baseline",
                "no drop from always passing".into(),
                list(&self.golden_dropped),
                self.golden_dropped.is_empty(),
            ));
        }
        if policy.gate_on_suspect() {
            let ids: Vec<String> = self.suspect.iter().map(|s| s.id.clone()).collect();
            checks.push(GateCheck::new(
                "suspect tasks vs baseline",
                format!("0 (Fisher, Holm, α {})", self.alpha),
                list(&ids),
                ids.is_empty(),
            ));
        }
        checks
    }
}

fn list(ids: &[String]) -> String {
    match ids.len() {
        0 => "0".to_owned(),
        n => format!("{n}: {}", ids.join(", ")),
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
