//! Tool-call graders: tool_called, tool_not_called, tool_sequence, tool_calls.

use serde_json::Value;

use super::json::is_subset;
use super::{GradeInput, Graded};
use crate::suite::ValidateCx;
use crate::suite::raw::{RawGraderKind, RawToolRef, SequenceOrder};
use crate::sut::ToolCall;

#[derive(Debug)]
pub struct ToolRef {
    pub tool: String,
    pub arguments: Option<Value>,
}

impl ToolRef {
    fn matches(&self, call: &ToolCall) -> bool {
        call.is(&self.tool) && self.arguments.as_ref().is_none_or(|a| is_subset(a, &call.arguments))
    }

    fn label(&self) -> String {
        match &self.arguments {
            Some(a) => format!("{}({a})", self.tool),
            None => self.tool.clone(),
        }
    }
}

#[derive(Debug)]
pub enum ToolCheck {
    Called { tool: ToolRef, min: u32, max: Option<u32> },
    NotCalled { tool: ToolRef },
    Sequence { tools: Vec<ToolRef>, order: SequenceOrder },
    Count { tool: Option<String>, min: Option<u32>, max: Option<u32> },
}

impl ToolCheck {
    pub fn from_raw(cx: &mut ValidateCx, raw: RawGraderKind, path: &str) -> Option<Self> {
        let bounds = |cx: &mut ValidateCx, min: Option<u32>, max: Option<u32>| {
            if let (Some(lo), Some(hi)) = (min, max)
                && lo > hi
            {
                cx.error(&format!("{path}.min"), format!("min ({lo}) is greater than max ({hi})"));
                return false;
            }
            true
        };
        match raw {
            RawGraderKind::ToolCalled { tool, arguments, min, max } => bounds(cx, min, max)
                .then_some(ToolCheck::Called { tool: ToolRef { tool, arguments }, min: min.unwrap_or(1), max }),
            RawGraderKind::ToolNotCalled { tool, arguments } => {
                Some(ToolCheck::NotCalled { tool: ToolRef { tool, arguments } })
            }
            RawGraderKind::ToolSequence { tools, order } => {
                if tools.is_empty() {
                    cx.error(&format!("{path}.tools"), "the sequence is empty");
                    return None;
                }
                let tools = tools
                    .into_iter()
                    .map(|t| match t {
                        RawToolRef::Name(tool) => ToolRef { tool, arguments: None },
                        RawToolRef::WithArguments { tool, arguments } => ToolRef { tool, arguments },
                    })
                    .collect();
                Some(ToolCheck::Sequence { tools, order })
            }
            RawGraderKind::ToolCalls { tool, min, max } => {
                if min.is_none() && max.is_none() {
                    cx.error(path, "a `tool_calls` grader needs `min`, `max` or both");
                    return None;
                }
                bounds(cx, min, max).then_some(ToolCheck::Count { tool, min, max })
            }
            _ => unreachable!("only tool graders are routed here"),
        }
    }

    pub fn grade(&self, input: &GradeInput<'_>) -> Graded {
        let calls = &input.trace.tool_calls;
        let names = || calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ");
        let called =
            || if calls.is_empty() { "no tools were called".to_owned() } else { format!("calls: {}", names()) };
        match self {
            ToolCheck::Called { tool, min, max } => {
                let n = calls.iter().filter(|c| tool.matches(c)).count() as u32;
                let ok = n >= *min && max.is_none_or(|m| n <= m);
                let bound = match max {
                    Some(m) if m == min => format!("exactly {m}"),
                    Some(m) => format!("{min} to {m}"),
                    None => format!("at least {min}"),
                };
                Graded::of(
                    ok,
                    format!("{} called {n} time(s)", tool.label()),
                    format!("{} called {n} time(s), expected {bound}; {}", tool.label(), called()),
                )
            }
            ToolCheck::NotCalled { tool } => {
                let n = calls.iter().filter(|c| tool.matches(c)).count();
                Graded::of(
                    n == 0,
                    format!("{} was not called", tool.label()),
                    format!("{} was called {n} time(s)", tool.label()),
                )
            }
            ToolCheck::Sequence { tools, order } => {
                let expected = tools.iter().map(ToolRef::label).collect::<Vec<_>>().join(" → ");
                let ok = match order {
                    SequenceOrder::Exact => {
                        calls.len() == tools.len() && tools.iter().zip(calls).all(|(t, c)| t.matches(c))
                    }
                    SequenceOrder::InOrder => {
                        let mut rest = calls.iter();
                        tools.iter().all(|t| rest.any(|c| t.matches(c)))
                    }
                    SequenceOrder::AnyOrder => tools.iter().all(|t| calls.iter().any(|c| t.matches(c))),
                };
                Graded::of(
                    ok,
                    format!("tool sequence {expected} followed"),
                    format!("expected {expected}; {}", called()),
                )
            }
            ToolCheck::Count { tool, min, max } => {
                let n = calls.iter().filter(|c| tool.as_deref().is_none_or(|t| c.is(t))).count() as u32;
                let ok = min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m);
                let what = tool.as_deref().map_or("tool calls".to_owned(), |t| format!("calls of {t}"));
                let bound = match (min, max) {
                    (Some(lo), Some(hi)) => format!("{lo} to {hi}"),
                    (Some(lo), None) => format!("at least {lo}"),
                    (None, Some(hi)) => format!("at most {hi}"),
                    (None, None) => String::new(),
                };
                Graded::of(ok, format!("{n} {what}"), format!("{n} {what}, expected {bound}"))
            }
        }
    }
}
