//! Per-task budgets: cost, latency, tokens.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{CompileGrader, Grade, OutputRead, GradeInput, GradeResult, Graded, JudgeCall};
use crate::source::{KeyPath, ValidateCx};
use crate::uses::Uses;

/// The task's cost is at most `max_usd`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCost {
    /// US dollars, from the usage the agent reported.
    pub max_usd: f64,
}

/// The agent's latency is at most `max_ms`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawLatency {
    /// Milliseconds of the agent's run.
    pub max_ms: u64,
}

/// Token budgets.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTokens {
    /// Input plus output tokens.
    pub max_total: Option<u64>,
    /// Input (prompt) tokens.
    pub max_input: Option<u64>,
    /// Output (completion) tokens.
    pub max_output: Option<u64>,
}

#[derive(Debug)]
pub enum BudgetCheck {
    Cost { max_usd: f64 },
    Latency { max_ms: u64 },
    Tokens { max_total: Option<u64>, max_input: Option<u64>, max_output: Option<u64> },
}

impl CompileGrader for RawCost {
    type Check = BudgetCheck;

    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<BudgetCheck> {
        let max_usd = self.max_usd;
        if max_usd.is_finite() && max_usd >= 0.0 {
            Some(BudgetCheck::Cost { max_usd })
        } else {
            cx.error(&path.key("max_usd"), format!("must be 0 or more, got {max_usd}"));
            None
        }
    }
}

impl CompileGrader for RawLatency {
    type Check = BudgetCheck;

    fn compile(self, _: &mut ValidateCx, _: &crate::source::KeyPath) -> Option<BudgetCheck> {
        Some(BudgetCheck::Latency { max_ms: self.max_ms })
    }
}

impl CompileGrader for RawTokens {
    type Check = BudgetCheck;

    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<BudgetCheck> {
        let RawTokens { max_total, max_input, max_output } = self;
        if max_total.is_none() && max_input.is_none() && max_output.is_none() {
            cx.error(path, "a `tokens` grader needs `max_total`, `max_input` or `max_output`");
            return None;
        }
        Some(BudgetCheck::Tokens { max_total, max_input, max_output })
    }
}

impl Grade for BudgetCheck {
    /// A budget over a figure the agent did not report is an error: it cannot be judged.
    async fn grade(&self, input: &GradeInput<'_>, _: &mut Vec<JudgeCall>) -> GradeResult {
        let usage = input.trace.usage.as_ref();
        match self {
            BudgetCheck::Cost { max_usd } => {
                let cost =
                    usage.and_then(|u| u.cost_usd).ok_or("the agent reported no cost (usage.cost_usd in its trace)")?;
                Ok(Graded::of(
                    cost <= *max_usd,
                    format!("cost ${cost:.4} within ${max_usd:.4}"),
                    format!("cost ${cost:.4} over the ${max_usd:.4} budget"),
                ))
            }
            BudgetCheck::Latency { max_ms } => {
                let ms = input.latency.as_millis() as u64;
                Ok(Graded::of(
                    ms <= *max_ms,
                    format!("latency {ms} ms within {max_ms} ms"),
                    format!("latency {ms} ms over the {max_ms} ms budget"),
                ))
            }
            BudgetCheck::Tokens { max_total, max_input, max_output } => {
                let usage = usage.ok_or("the agent reported no token usage (usage in its trace)")?;
                let figures = [
                    ("total", *max_total, usage.total_tokens()),
                    ("input", *max_input, usage.input_tokens),
                    ("output", *max_output, usage.output_tokens),
                ];
                let mut over = Vec::new();
                let mut within = Vec::new();
                for (what, max, actual) in figures {
                    let Some(max) = max else { continue };
                    let actual = actual.ok_or_else(|| format!("the agent reported no {what} token count"))?;
                    if actual > max {
                        over.push(format!("{what} {actual} > {max}"))
                    } else {
                        within.push(format!("{what} {actual} ≤ {max}"))
                    }
                }
                Ok(Graded::of(
                    over.is_empty(),
                    format!("tokens: {}", within.join(", ")),
                    format!("tokens over budget: {}", over.join(", ")),
                ))
            }
        }
    }

    fn uses(&self) -> Uses<'_> {
        Uses::default()
    }

    /// What it looks at is elsewhere (the output reaches it only through `{agent.output}`).
    fn reads_output(&self) -> OutputRead {
        OutputRead::Not
    }
}
