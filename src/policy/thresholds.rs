//! The suite's `thresholds`: what the run as a whole must reach.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::AdversarialThresholds;
use crate::values::{NonNegative, Rate};

/// Gate thresholds; when absent, every task must pass.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Thresholds {
    /// Minimum aggregate score (the weighted mean of task scores), 0..1; without it every
    /// task must pass.
    pub pass_score: Option<Rate>,
    /// Maximum total cost of the run, in USD.
    pub max_cost_usd: Option<NonNegative>,
    /// Maximum 95th-percentile task latency, in milliseconds.
    pub max_p95_latency_ms: Option<u64>,
    /// Erroring tasks allowed (default 0).
    pub max_errors: Option<u32>,
    /// With `max_cost_usd`: `fail` (default) when some cost is unknown, or `ignore` it.
    #[serde(default)]
    pub unknown_cost: UnknownCost,
    /// Adversarial scorecard gates, overall and per category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adversarial: Option<AdversarialThresholds>,
}

/// What `max_cost_usd` makes of a task whose cost is unknown: `fail` the check, or `ignore` it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UnknownCost {
    #[default]
    Fail,
    Ignore,
}
