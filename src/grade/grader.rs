//! One grader of a task: the keys every grader shares (name, weight, required, negate)
//! around the check its `type` selects.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::{self, Deserializer};
use serde_json::{Map, Value};

use super::{Check, GradeInput, GradeResult, Graded, JudgeCall, OutputRead, RawGraderKind};
use crate::source::{KeyPath, ValidateCx};
use crate::template::Var;
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
    /// How the check reads the agent's output, `{agent.output}` in its templates included.
    pub reads_output: OutputRead,
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
        let (common, rest) = deserializer.deserialize_map(SplitCommon)?;
        let common = serde_json::from_value(Value::Object(common)).map_err(de::Error::custom)?;
        let kind = serde_json::from_value(Value::Object(rest)).map_err(de::Error::custom)?;
        Ok(RawGrader { common, kind })
    }
}

/// A grader's mapping read as `Map<String, Value>` reads it (the same errors), its entries
/// put in two maps as they come, common keys and the rest, each in its written order.
struct SplitCommon;

impl<'de> de::Visitor<'de> for SplitCommon {
    type Value = (Map<String, Value>, Map<String, Value>);

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a map")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok((Map::new(), Map::new()))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut entries: A) -> Result<Self::Value, A::Error> {
        let (mut common, mut rest) = (Map::new(), Map::new());
        while let Some((key, value)) = entries.next_entry::<String, Value>()? {
            let part = if GRADER_COMMON_KEYS.contains(&key.as_str()) { &mut common } else { &mut rest };
            part.insert(key, value);
        }
        Ok((common, rest))
    }
}

impl Grader {
    pub fn from_raw(cx: &mut ValidateCx, raw: RawGrader, path: &KeyPath) -> Option<Grader> {
        let kind_name = raw.kind.name();
        let weight = raw.common.weight.map_or(1.0, NonNegative::get);
        let check = raw.kind.compile(cx, path)?;
        let renders_output = check.uses().templates.iter().any(|t| t.uses(&Var::AgentOutput));
        let reads_output = if renders_output { OutputRead::Whole } else { check.reads_output() };
        Some(Grader {
            name: raw.common.name.unwrap_or_else(|| kind_name.to_owned()),
            kind_name,
            weight,
            required: raw.common.required,
            negate: raw.common.negate,
            min_score: raw.common.min_score.map(Rate::get),
            reads_output,
            check,
        })
    }

    pub fn uses(&self) -> Uses<'_> {
        self.check.uses()
    }

    /// Whether a tool call can only fail it (`tool_not_called`, a negated `tool_called`):
    /// it then judges the calls of every attempt of the trial, those of attempts that
    /// errored and were run again included.
    pub fn judges_every_attempt(&self) -> bool {
        use super::CallEffect::{Fail, Pass};
        matches!((self.check.a_call_can_only(), self.negate), (Some(Fail), false) | (Some(Pass), true))
    }

    /// A judge grader's judge (its own, else `suite`'s), by name.
    pub fn judge<'a>(
        &'a self,
        suite: Option<&'a crate::llm::spec::LlmSpec>,
    ) -> Option<(&'a str, &'a crate::llm::spec::LlmSpec)> {
        match &self.check {
            Check::Rubric(j) | Check::Llm(j) => j.judge_of(suite),
            _ => None,
        }
    }

    /// Why this grader may not gate: its judge is advisory (docs/llm.md "Calibrating a judge").
    pub fn advisory<'a>(
        &'a self,
        suite: Option<&'a crate::llm::spec::LlmSpec>,
    ) -> Option<&'a crate::llm::judge_calibration::Calibrated> {
        let (_, spec) = self.judge(suite)?;
        spec.calibration.as_deref().filter(|c| c.advisory.is_some())
    }

    /// A judge grader's check (for the bias probes).
    pub fn judge_check(&self) -> Option<&super::JudgeCheck> {
        match &self.check {
            Check::Rubric(j) | Check::Llm(j) => Some(j),
            _ => None,
        }
    }

    /// A rubric grader's criteria (none for any other).
    pub fn judge_criteria(&self) -> Vec<String> {
        match &self.check {
            Check::Rubric(j) => j.criteria(),
            _ => Vec::new(),
        }
    }

    /// An error stays an error under `negate`, and so does a fail that saw nothing to judge
    /// (the inverse of "the output is not JSON" is not "the output is not this JSON").
    /// On an output the capture cap cut, only a verdict that holds on its start is given
    /// (a `contains` that found its text); any other is an error, never a pass on what
    /// evalgate did not see. Returned with the verdict: the judge calls it made, an error's too.
    pub async fn grade(&self, input: &GradeInput<'_>) -> (GradeResult, Vec<JudgeCall>) {
        let mut judge_calls = Vec::new();
        let result = self.verdict(input, &mut judge_calls).await;
        (result, judge_calls)
    }

    async fn verdict(&self, input: &GradeInput<'_>, judge_calls: &mut Vec<JudgeCall>) -> GradeResult {
        let cut = || {
            format!(
                "the agent's output was cut at {} MiB (the rest was not read); `{}` cannot judge what it did not see",
                crate::process::OUTPUT_CAP >> 20,
                self.kind_name
            )
        };
        if input.output_cut && self.reads_output == OutputRead::Whole {
            return Err(cut());
        }
        let graded = self.check.grade(input, judge_calls).await?;
        if input.output_cut && !self.reads_output.holds_on_a_start(graded.passed) {
            return Err(cut());
        }
        let mut graded = self.negated(graded)?;
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
