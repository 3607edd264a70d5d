//! One grader of a task: the keys every grader shares (name, weight, required, negate)
//! around the check its `type` selects.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::{self, Deserializer};
use serde_json::{Map, Value};

use super::{Check, GradeInput, GradeResult, Graded, RawGraderKind};
use crate::source::ValidateCx;
use crate::uses::Uses;
use crate::values::{NonNegative, Rate};

#[derive(Debug)]
pub struct Grader {
    pub name: String,
    /// The `type` as written in the suite.
    pub kind_name: &'static str,
    pub weight: f64,
    pub required: bool,
    pub negate: bool,
    /// The score at which the grader passes, instead of its own rule.
    pub min_score: Option<f64>,
    pub check: Check,
}

/// A grader. The keys common to every grader are here; `type` selects the rest.
/// (Deserialized in two parts by the loader, see `load.rs`; this type gives the schema.)
#[derive(Debug, Clone, JsonSchema)]
#[schemars(extend("unevaluatedProperties" = false))]
#[schemars(extend("examples" = [
    {"type": "contains", "value": "30 days", "ignore_case": true},
    {"type": "json", "path": "status", "equals": "ok"},
    {"type": "regex", "pattern": "^Order #[0-9]+", "required": true},
    {"type": "tool_called", "tool": "search_orders"},
    {"type": "command", "run": ["python3", "graders/polite.py"], "weight": 2},
    {"type": "rubric", "criteria": ["The answer is polite.", {"criterion": "It names the refund window.", "weight": 2}]},
    {"type": "latency", "max_ms": 8000},
]))]
pub struct RawGrader {
    #[serde(flatten)]
    pub common: RawGraderCommon,
    #[serde(flatten)]
    pub kind: RawGraderKind,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawGraderCommon {
    /// Shown in reports (default: the type).
    pub name: Option<String>,
    /// The grader's weight in the task's score (default 1).
    pub weight: Option<NonNegative>,
    /// A required grader must pass for the task to pass, whatever its score.
    #[serde(default)]
    pub required: bool,
    /// Inverts the verdict: passes when the check fails (score 1 − score). A grader that
    /// cannot judge is still an error, and so is one that failed because what it checks is
    /// not there (output that is not JSON, a tool that returned an error).
    #[serde(default)]
    pub negate: bool,
    /// The grader passes when its score (after `negate`) reaches this, from 0 to 1, instead
    /// of by its own rule (AgentV's `min_score`): a `rubric` with `min_score: 0.6` passes
    /// with 60 % of its weight met.
    pub min_score: Option<Rate>,
}

pub const GRADER_COMMON_KEYS: [&str; 5] = ["name", "weight", "required", "negate", "min_score"];

/// serde cannot reject unknown keys through a flatten, so the common keys are split off
/// first and each half is read strictly.
impl<'de> Deserialize<'de> for RawGrader {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(deserializer)?;
        let (common, rest): (Map<String, Value>, Map<String, Value>) =
            map.into_iter().partition(|(k, _)| GRADER_COMMON_KEYS.contains(&k.as_str()));
        let common = serde_json::from_value(Value::Object(common)).map_err(de::Error::custom)?;
        let kind = serde_json::from_value(Value::Object(rest)).map_err(de::Error::custom)?;
        Ok(RawGrader { common, kind })
    }
}

impl Grader {
    pub fn from_raw(cx: &mut ValidateCx, raw: RawGrader, path: &str) -> Option<Grader> {
        let kind_name = raw.kind.name();
        let weight = raw.common.weight.map_or(1.0, NonNegative::get);
        let check = raw.kind.compile(cx, path)?;
        Some(Grader {
            name: raw.common.name.unwrap_or_else(|| kind_name.to_owned()),
            kind_name,
            weight,
            required: raw.common.required,
            negate: raw.common.negate,
            min_score: raw.common.min_score.map(Rate::get),
            check,
        })
    }

    pub fn uses(&self) -> Uses<'_> {
        self.check.uses()
    }

    /// An error stays an error under `negate`, and so does a fail that saw nothing to judge
    /// (the inverse of "the output is not JSON" is not "the output is not this JSON").
    pub async fn grade(&self, input: &GradeInput<'_>) -> GradeResult {
        let mut graded = self.negated(self.check.grade(input).await?)?;
        if let Some(min) = self.min_score {
            graded.passed = graded.score >= min - 1e-9;
        }
        Ok(graded)
    }

    fn negated(&self, graded: Graded) -> GradeResult {
        if !self.negate {
            return Ok(graded);
        }
        if graded.unobserved {
            return Err(format!("{}; `negate` cannot invert a check that had nothing to look at", graded.reason));
        }
        Ok(Graded {
            score: 1.0 - graded.score,
            passed: !graded.passed,
            reason: format!("negated: {}", graded.reason),
            evidence: graded.evidence,
            unobserved: false,
        })
    }
}
