//! The paired test's settings: whether the statistical verdict gates beside the budgets, at
//! what level, and under which policy (`pr` or `release`). Unset keys take the documented
//! defaults; `--alpha`, `--min-effect`, … override the suite's.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::stats::{Mode, Rule};
use crate::values::{Rate, Significance};

/// `paired`: the statistical verdict gates beside the budgets; `budgets`: the budgets only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum RegressionTest {
    #[default]
    Paired,
    Budgets,
}

/// The paired regression test (docs/statistics.md); an unset key takes its default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct PairedPolicy {
    /// `paired` (default): a paired test per comparable task gives the verdict, beside the
    /// budgets; `budgets`: the budgets alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long = "regression-test", value_name = "TEST")]
    pub test: Option<RegressionTest>,
    /// One-sided significance level (default 0.05).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "X")]
    pub alpha: Option<Significance>,
    /// The smallest drop in pass rate that counts as a regression (default 0.02).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "X")]
    pub min_effect: Option<Rate>,
    /// `pr` (default): fail only on evidence of a regression; `release`: pass only on
    /// evidence that the candidate is at most `margin` worse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long = "regression-mode", value_name = "MODE")]
    pub mode: Option<Mode>,
    /// `release`: the largest acceptable drop in pass rate (default 0.05).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "X")]
    pub margin: Option<Rate>,
    /// Fewer comparable tasks than this give no verdict (`inconclusive`; default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "N")]
    pub min_tasks: Option<u32>,
    /// Suspect tasks (Fisher's exact test per task, Holm-corrected) fail the gate (default
    /// false: they are listed, not gated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "BOOL")]
    pub gate_on_suspect: Option<bool>,
}

impl PairedPolicy {
    pub fn test(&self) -> RegressionTest {
        self.test.unwrap_or_default()
    }

    pub fn alpha(&self) -> f64 {
        self.alpha.map_or(0.05, Significance::get)
    }

    pub fn gate_on_suspect(&self) -> bool {
        self.gate_on_suspect.unwrap_or(false)
    }

    pub fn rule(&self) -> Rule {
        Rule {
            mode: self.mode.unwrap_or_default(),
            alpha: self.alpha(),
            min_effect: self.min_effect.map_or(0.02, Rate::get),
            margin: self.margin.map_or(0.05, Rate::get),
            min_tasks: self.min_tasks.unwrap_or(10) as usize,
        }
    }

    /// Each key `other` sets replaces this one's.
    pub fn overridden_by(self, other: PairedPolicy) -> Self {
        PairedPolicy {
            test: other.test.or(self.test),
            alpha: other.alpha.or(self.alpha),
            min_effect: other.min_effect.or(self.min_effect),
            mode: other.mode.or(self.mode),
            margin: other.margin.or(self.margin),
            min_tasks: other.min_tasks.or(self.min_tasks),
            gate_on_suspect: other.gate_on_suspect.or(self.gate_on_suspect),
        }
    }

    /// Reads one of [`Self::KEYS`] from a map being deserialized.
    pub(super) fn take<'de, A: serde::de::MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "test" => self.test = map.next_value()?,
            "alpha" => self.alpha = map.next_value()?,
            "min_effect" => self.min_effect = map.next_value()?,
            "mode" => self.mode = map.next_value()?,
            "margin" => self.margin = map.next_value()?,
            "gate_on_suspect" => self.gate_on_suspect = map.next_value()?,
            _ => self.min_tasks = map.next_value()?,
        }
        Ok(())
    }
}
