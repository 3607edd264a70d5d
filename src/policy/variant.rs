//! An arm's gate against the control arm of `variants` (docs/variants.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::values::{NonNegative, Rate};

/// What an arm must show against the control arm: on the paired test of its score (pass
/// rate), `not_worse_than: control` (its interval's lower end above −`margin`) or
/// `better_than: control` (above 0); on cost and p95 latency, at most so many percent more.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArmGate {
    /// `control`: non-inferiority, at most `margin` worse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_worse_than: Option<Control>,
    /// `control`: superiority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub better_than: Option<Control>,
    /// `not_worse_than`: the largest acceptable drop in pass rate (default 0.02).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin: Option<Rate>,
    /// The arm's cost per trial may be at most this many percent above the control's (the
    /// upper end of the interval of the difference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_increase_pct: Option<NonNegative>,
    /// The arm's p95 agent latency may be at most this many percent above the control's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_p95_latency_increase_pct: Option<NonNegative>,
}

/// The control arm, as a gate names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Control {
    Control,
}

/// `not_worse_than`'s margin when none is written.
pub const DEFAULT_MARGIN: f64 = 0.02;

impl ArmGate {
    pub fn margin(&self) -> f64 {
        self.margin.map_or(DEFAULT_MARGIN, Rate::get)
    }
}
