//! Per-task budgets: cost, latency, tokens.

use super::{GradeInput, GradeResult, Graded};
use crate::source::ValidateCx;
use crate::suite::raw::RawGraderKind;

#[derive(Debug)]
pub enum BudgetCheck {
    Cost { max_usd: f64 },
    Latency { max_ms: u64 },
    Tokens { max_total: Option<u64>, max_input: Option<u64>, max_output: Option<u64> },
}

impl BudgetCheck {
    pub fn from_raw(cx: &mut ValidateCx, raw: RawGraderKind, path: &str) -> Option<Self> {
        match raw {
            RawGraderKind::Cost { max_usd } if max_usd.is_finite() && max_usd >= 0.0 => {
                Some(BudgetCheck::Cost { max_usd })
            }
            RawGraderKind::Cost { max_usd } => {
                cx.error(&format!("{path}.max_usd"), format!("must be 0 or more, got {max_usd}"));
                None
            }
            RawGraderKind::Latency { max_ms } => Some(BudgetCheck::Latency { max_ms }),
            RawGraderKind::Tokens { max_total, max_input, max_output } => {
                if max_total.is_none() && max_input.is_none() && max_output.is_none() {
                    cx.error(path, "a `tokens` grader needs `max_total`, `max_input` or `max_output`");
                    return None;
                }
                Some(BudgetCheck::Tokens { max_total, max_input, max_output })
            }
            _ => unreachable!("only budget graders are routed here"),
        }
    }

    /// A budget over a figure the agent did not report is an error: it cannot be judged.
    pub fn grade(&self, input: &GradeInput<'_>) -> GradeResult {
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
}
