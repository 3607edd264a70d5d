//! Regression budgets: how much worse than the baseline a run may be. The suite's
//! `regression` adds where the baseline is; `--max-*` flags override each budget.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use super::extend::{extend, extend_schema};
use super::paired_policy::PairedPolicy;
use crate::values::{NonNegative, Rate, RawDuration};

/// Budgets against the baseline; an unset budget is unbounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct RegressionBudget {
    /// The aggregate score may drop at most this much (0..1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "X")]
    pub max_score_drop: Option<Rate>,
    /// Tasks that passed in the baseline and fail now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "N")]
    pub max_new_failures: Option<u32>,
    /// Any single task's score may drop at most this much (0..1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "X")]
    pub max_task_score_drop: Option<Rate>,
    /// The total cost may rise at most this many percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "PCT")]
    pub max_cost_increase_pct: Option<NonNegative>,
    /// The p95 latency may rise at most this many percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "PCT")]
    pub max_p95_latency_increase_pct: Option<NonNegative>,
    /// A p95 latency rise of at most this many milliseconds is never a regression,
    /// whatever its percentage (on a 20 ms baseline, 5 ms of jitter is 25%).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "MS")]
    pub min_latency_increase_ms: Option<u64>,
}

impl RegressionBudget {
    pub fn is_empty(&self) -> bool {
        *self == RegressionBudget::default()
    }

    /// With no budget at all, any newly failing task is a regression.
    pub fn or_default_budget(self) -> Self {
        if self.is_empty() { RegressionBudget { max_new_failures: Some(0), ..self } } else { self }
    }

    /// Each budget `other` sets replaces this one's.
    pub fn overridden_by(self, other: RegressionBudget) -> Self {
        RegressionBudget {
            max_score_drop: other.max_score_drop.or(self.max_score_drop),
            max_new_failures: other.max_new_failures.or(self.max_new_failures),
            max_task_score_drop: other.max_task_score_drop.or(self.max_task_score_drop),
            max_cost_increase_pct: other.max_cost_increase_pct.or(self.max_cost_increase_pct),
            max_p95_latency_increase_pct: other.max_p95_latency_increase_pct.or(self.max_p95_latency_increase_pct),
            min_latency_increase_ms: other.min_latency_increase_ms.or(self.min_latency_increase_ms),
        }
    }
}

/// The suite's `regression`: the budgets, and the baseline they are measured against.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RegressionPolicy {
    /// As written: relative to the suite's directory.
    pub baseline: Option<String>,
    pub required: bool,
    /// Warn when a baseline fetched from GitHub is older than this (default 7 days).
    pub max_baseline_age: Option<RawDuration>,
    pub budget: RegressionBudget,
    /// The paired test's settings.
    pub paired: PairedPolicy,
    /// A calibration file (`evalgate calibrate`): its discordance is the expected noise.
    pub noise: Option<String>,
}

impl<'de> Deserialize<'de> for RegressionPolicy {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = RegressionPolicy;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a regression policy")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                const OWN: [&str; 11] = [
                    "baseline",
                    "required",
                    "max_baseline_age",
                    "test",
                    "alpha",
                    "min_effect",
                    "mode",
                    "margin",
                    "min_tasks",
                    "gate_on_suspect",
                    "noise",
                ];
                let (mut baseline, mut required, mut paired) = (None, false, PairedPolicy::default());
                let mut max_baseline_age = None;
                let mut noise = None;
                let budget = extend(map, &OWN, |key, map| {
                    match key {
                        "baseline" => baseline = map.next_value()?,
                        "required" => required = map.next_value()?,
                        "max_baseline_age" => max_baseline_age = Some(map.next_value()?),
                        "noise" => noise = map.next_value()?,
                        _ => paired.take(key, map)?,
                    }
                    Ok(())
                })?;
                Ok(RegressionPolicy { baseline, required, max_baseline_age, budget, paired, noise })
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

impl JsonSchema for RegressionPolicy {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RegressionPolicy".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let paired = PairedPolicy::json_schema(generator);
        let mut own = serde_json::json!({
            "baseline": {
                "description": "A `results.json` of an earlier run, or an OpenWOP EvalSummary (relative to the suite), or `github:base`: fetched from this workflow's run on the pull request's base (see `evalgate baseline fetch`).",
                "type": ["string", "null"],
            },
            "max_baseline_age": {
                "description": "Warn when a baseline fetched from GitHub is older than this (default 7d).",
                "type": ["string", "integer"],
                "examples": ["7d", "36h"],
            },
            "required": {
                "description": "Fail the gate when the baseline file is missing (default: warn and skip).",
                "type": "boolean",
                "default": false,
            },
            "noise": {
                "description": "A calibration file written by `evalgate calibrate` (relative to the suite): its A/A discordance is the expected noise, and the power line never claims more than it allows.",
                "type": ["string", "null"],
            },
        });
        if let (Some(own), Some(keys)) = (own.as_object_mut(), paired.get("properties").and_then(|p| p.as_object())) {
            own.extend(keys.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let mut schema = extend_schema(RegressionBudget::json_schema(generator), &own);
        schema.insert(
            "description".into(),
            "Budgets against a baseline run (applies when a baseline is given here or by --baseline).".into(),
        );
        schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_is_its_own_keys_and_a_budget_read_in_one_pass() {
        let policy: RegressionPolicy =
            serde_json::from_str(r#"{"baseline": "b.json", "max_new_failures": 1, "required": true}"#).unwrap();
        assert_eq!(policy.baseline.as_deref(), Some("b.json"));
        assert!(policy.required);
        assert_eq!(policy.budget.max_new_failures, Some(1));
        let policy: RegressionPolicy =
            serde_json::from_str(r#"{"mode": "release", "alpha": 0.01, "max_score_drop": 0.1, "min_tasks": 20}"#)
                .unwrap();
        assert_eq!((policy.paired.rule().mode, policy.paired.alpha()), (crate::stats::Mode::Release, 0.01));
        assert_eq!((policy.paired.rule().min_tasks, policy.budget.max_score_drop.map(Rate::get)), (20, Some(0.1)));
        let error = serde_json::from_str::<RegressionPolicy>(r#"{"alpha": 0.7}"#).unwrap_err();
        assert!(error.to_string().starts_with("must be between 0.0001 and 0.5, got 0.7"), "{error}");
        let error = serde_json::from_str::<RegressionPolicy>(r#"{"mode": "relase"}"#).unwrap_err();
        assert!(error.to_string().starts_with("unknown variant `relase`, expected `pr` or `release`"), "{error}");
        let error = serde_json::from_str::<RegressionPolicy>(r#"{"max_score_drop": 2}"#).unwrap_err();
        assert!(error.to_string().starts_with("must be between 0 and 1, got 2"), "{error}");
        let error = serde_json::from_str::<RegressionPolicy>(r#"{"baselin": "b.json"}"#).unwrap_err();
        assert!(error.to_string().starts_with("unknown field `baselin`, expected one of `baseline`, `required`, "));
    }
}
