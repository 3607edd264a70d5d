//! The verdict of a run: the one [`RunOutcome`] every report, the exit code, the GitHub
//! outputs and the PR comment render, and the gate checks behind it.

use serde::{Deserialize, Serialize};

use super::run_results::Shard;
use crate::exit;
use crate::values::Known;

/// One gate check: its budget, what was measured and whether it held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GateCheck {
    pub name: String,
    pub budget: String,
    pub actual: String,
    pub passed: bool,
    /// `false`: the run left out, on purpose, what the check is about (the arm of an arm's
    /// `gate` that `--variant` did not select). It did not hold (`passed` is false), fails
    /// no run, and every report shows it as not checked, with why in `actual`.
    #[serde(default = "checked", skip_serializing_if = "is_checked")]
    pub checked: bool,
}

fn checked() -> bool {
    true
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_checked(checked: &bool) -> bool {
    *checked
}

/// What a report shows of a check: held, failed, or not checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Held,
    Failed,
    NotChecked,
}

impl Mark {
    /// For Markdown and the PR comment.
    pub fn emoji(self) -> &'static str {
        match self {
            Mark::Held => "✅",
            Mark::Failed => "❌",
            Mark::NotChecked => "➖ not checked",
        }
    }

    /// For the terminal: four columns.
    pub fn word(self) -> &'static str {
        match self {
            Mark::Held => "ok  ",
            Mark::Failed => "FAIL",
            Mark::NotChecked => "----",
        }
    }
}

impl GateCheck {
    pub fn new(name: &str, budget: String, actual: String, passed: bool) -> GateCheck {
        GateCheck { name: name.to_owned(), budget, actual, passed, checked: true }
    }

    /// A check the run did not make, on purpose, and why.
    pub fn not_checked(name: &str, budget: String, why: &str) -> GateCheck {
        GateCheck {
            name: name.to_owned(),
            budget,
            actual: format!("not checked: {why}"),
            passed: false,
            checked: false,
        }
    }

    /// Whether the check fails the run: it was made, and did not hold.
    pub fn failed(&self) -> bool {
        self.checked && !self.passed
    }

    pub fn mark(&self) -> Mark {
        match (self.checked, self.passed) {
            (false, _) => Mark::NotChecked,
            (true, true) => Mark::Held,
            (true, false) => Mark::Failed,
        }
    }

    /// A check of a figure over a set ([`Known`]): `holds` decides a known one, shown by
    /// `show`; an unknown one fails, saying how many members were not known and `why`.
    pub fn measured<T>(
        name: &str,
        budget: String,
        value: Known<T>,
        why: &str,
        show: impl FnOnce(&T) -> String,
        holds: impl FnOnce(&T) -> bool,
    ) -> GateCheck {
        match value {
            Known::Known(v) => GateCheck::new(name, budget, show(&v), holds(&v)),
            Known::Unknown { of: 0, .. } => GateCheck::new(name, budget, "unknown: nothing was measured".into(), false),
            Known::Unknown { unknown, of } => {
                GateCheck::new(name, budget, format!("unknown: {unknown} of {of} not known ({why})"), false)
            }
        }
    }
}

/// What `gate::evaluate` decided. `passed` is `outcome == Passed`, written out for readers
/// of `results.json` that want one boolean; nothing recomputes it from the checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GateVerdict {
    pub outcome: RunOutcome,
    pub passed: bool,
    pub checks: Vec<GateCheck>,
}

impl GateVerdict {
    pub fn new(outcome: RunOutcome, checks: Vec<GateCheck>) -> GateVerdict {
        GateVerdict { passed: outcome == RunOutcome::Passed, outcome, checks }
    }
}

/// What a run adds up to. Only `Passed` is green; anything that did not run as planned
/// (an interrupt, a budget stop, a missing shard) is never `Passed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RunOutcome {
    /// Every task planned ran and every gate check held.
    Passed,
    /// Everything planned ran; these gate checks failed.
    Failed { failed_checks: Vec<String> },
    /// Stopped by a signal: unfinished tasks are skipped or errors.
    Interrupted { reason: String },
    /// The environment was not ready (a preflight check or a `preflight: true` hook): no task ran.
    PreflightFailed { reason: String },
    /// The command line or a suite is invalid: nothing ran.
    Invalid { reason: String },
    /// evalgate itself failed (a report or the baseline could not be written): exit 4.
    Aborted { reason: String },
    /// Something planned did not run: a budget stop, a missing shard, a run still in progress
    /// (or killed) when this file was written.
    Incomplete { reason: String },
    /// One shard of a sharded run: its gate waits for `evalgate merge` and `report --gate`.
    Deferred { shard: Shard },
}

impl RunOutcome {
    pub fn passed(&self) -> bool {
        *self == RunOutcome::Passed
    }

    /// The process exit code (the table in `exit`).
    pub fn exit_code(&self) -> i32 {
        match self {
            RunOutcome::Passed | RunOutcome::Deferred { .. } => exit::SUCCESS,
            RunOutcome::Failed { .. } | RunOutcome::Incomplete { .. } => exit::GATE_FAILED,
            RunOutcome::Invalid { .. } => exit::INVALID_INPUT,
            RunOutcome::PreflightFailed { .. } => exit::PREFLIGHT_FAILED,
            RunOutcome::Interrupted { .. } | RunOutcome::Aborted { .. } => exit::ABORTED,
        }
    }

    /// One word for headlines: `passed`, `failed`, `interrupted`, …
    pub fn label(&self) -> &'static str {
        match self {
            RunOutcome::Passed => "passed",
            RunOutcome::Failed { .. } => "failed",
            RunOutcome::Interrupted { .. } => "interrupted",
            RunOutcome::PreflightFailed { .. } => "preflight failed",
            RunOutcome::Invalid { .. } => "invalid",
            RunOutcome::Aborted { .. } => "aborted",
            RunOutcome::Incomplete { .. } => "incomplete",
            RunOutcome::Deferred { .. } => "deferred",
        }
    }

    /// Why the outcome is what it is, in one line (`None` for a pass).
    pub fn detail(&self) -> Option<String> {
        match self {
            RunOutcome::Passed => None,
            RunOutcome::Failed { failed_checks } => Some(format!("failed: {}", failed_checks.join(", "))),
            RunOutcome::Interrupted { reason }
            | RunOutcome::PreflightFailed { reason }
            | RunOutcome::Invalid { reason }
            | RunOutcome::Aborted { reason }
            | RunOutcome::Incomplete { reason } => Some(reason.clone()),
            RunOutcome::Deferred { shard } => Some(format!(
                "shard {} of {}: the gate is decided on the merged results (`evalgate merge`, then `evalgate report --gate`)",
                shard.index, shard.count
            )),
        }
    }
}
