//! What the gate holds a run to: thresholds, adversarial bounds and regression budgets,
//! one type each, read from the suite, recorded in `results.json` and set on the command
//! line. A leaf: it imports nothing of evalgate above the value types and `stats`.

mod adversarial;
mod extend;
mod paired_policy;
mod regression_budget;
mod thresholds;
mod variant;

pub use adversarial::{AdversarialThresholds, Category, CategoryThresholds, SafetyAction, Severity};
pub use paired_policy::{PairedPolicy, RegressionTest};
pub use regression_budget::{RegressionBudget, RegressionPolicy};
pub use thresholds::{Thresholds, UnknownCost};
pub use variant::{ArmGate, Control, DEFAULT_MARGIN};
