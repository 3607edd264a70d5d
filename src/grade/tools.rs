//! Tool-call graders: tool_called, tool_not_called, tool_sequence, tool_calls.

use regex::Regex;
use serde_json::Value;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{CallEffect, CompileGrader, Grade, GradeInput, GradeResult, Graded, JudgeCall, OutputRead};
use crate::json::{is_subset, json_eq};
use crate::source::{KeyPath, ValidateCx};
use crate::trace::ToolCall;
use crate::uses::Uses;

/// The tool was called (at least `min` times, default 1; at most `max`), with `arguments` as a subset.
/// The tool is `tool`, or any tool whose name `pattern` matches, or any tool of `server`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawToolCalled {
    /// `name` or `server.name`.
    pub tool: Option<String>,
    /// Any tool of this MCP server.
    pub server: Option<String>,
    /// A regular expression the tool's name matches (unanchored).
    pub pattern: Option<String>,
    /// Must be a subset of the call's arguments.
    pub arguments: Option<Value>,
    /// Fewest calls (default 1).
    pub min: Option<u32>,
    /// Most calls.
    pub max: Option<u32>,
}

/// The tool was not called (with `arguments` as a subset, when given).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawToolNotCalled {
    /// `name` or `server.name`.
    pub tool: Option<String>,
    /// Any tool of this MCP server.
    pub server: Option<String>,
    /// A regular expression the tool's name matches (unanchored).
    pub pattern: Option<String>,
    /// Only calls whose arguments contain these count.
    pub arguments: Option<Value>,
}

/// The tools were called in this order.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawToolSequence {
    /// The expected calls, in order.
    pub tools: Vec<RawToolRef>,
    /// in_order (default) | exact | any_order
    #[serde(default)]
    pub order: SequenceOrder,
    /// AgentV 4.42.4's `tool-trajectory` (set by the AgentV converter): the score is the
    /// share of expected calls matched (in_order: found in order; exact: at their position,
    /// so extra calls at the end still score 1; any_order: tools called at least `min`
    /// times), arguments must equal the call's exactly, and it passes at 0.8.
    #[serde(default)]
    pub agentv: bool,
}

/// The number of tool calls (of `tool`, of any of `tools`, or of all tools) is within
/// bounds; with `unique`, no two of them have the same tool and arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawToolCalls {
    /// Count the calls of this tool only.
    pub tool: Option<String>,
    /// Count the calls of any of these.
    pub tools: Option<Vec<RawToolRef>>,
    /// Fewest calls.
    pub min: Option<u32>,
    /// Most calls.
    pub max: Option<u32>,
    /// No two counted calls have the same tool and arguments.
    #[serde(default)]
    pub unique: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SequenceOrder {
    /// The tools appear in this order, other calls may come between.
    #[default]
    InOrder,
    /// The calls are exactly these, in this order.
    Exact,
    /// Each tool is called, in any order.
    AnyOrder,
}

/// A tool in a list: a name, or `{tool | pattern | server, arguments}` (see `tool_called`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawToolRef {
    Name(String),
    Spec {
        /// `name` or `server.name`.
        tool: Option<String>,
        /// Any tool of this MCP server.
        server: Option<String>,
        /// A regular expression the tool's name matches (unanchored).
        pattern: Option<String>,
        /// A subset of the call's arguments.
        arguments: Option<serde_json::Value>,
        /// In an `any_order` sequence: the fewest calls (default 1).
        min: Option<u32>,
    },
}

/// Which calls a tool grader is about: of `tool` (`name` or `server.name`), of a tool whose
/// name `pattern` matches (unanchored), and/or of any tool of `server`; with `arguments` as a
/// subset of the call's.
#[derive(Debug, Default)]
pub struct ToolRef {
    pub tool: Option<String>,
    pub server: Option<String>,
    pub pattern: Option<Regex>,
    pub arguments: Option<Value>,
    /// The fewest calls, in an `any_order` sequence.
    pub min: Option<u32>,
}

impl ToolRef {
    fn named(tool: String) -> Self {
        ToolRef { tool: Some(tool), ..ToolRef::default() }
    }

    /// Validates a selector at `path`: at least one of `tool`, `pattern`, `server`.
    fn from_parts(
        cx: &mut ValidateCx,
        path: &KeyPath,
        tool: Option<String>,
        server: Option<String>,
        pattern: Option<String>,
        arguments: Option<Value>,
    ) -> Option<Self> {
        if tool.is_none() && server.is_none() && pattern.is_none() {
            cx.error(path, "name the tool with `tool`, `pattern` or `server`");
            return None;
        }
        let pattern = match pattern {
            Some(p) => Some(cx.regex(&path.key("pattern"), &p, false)?),
            None => None,
        };
        Some(ToolRef { tool, server, pattern, arguments, min: None })
    }

    fn from_raw(cx: &mut ValidateCx, path: &KeyPath, raw: RawToolRef) -> Option<Self> {
        match raw {
            RawToolRef::Name(tool) => Some(ToolRef::named(tool)),
            RawToolRef::Spec { tool, server, pattern, arguments, min } => {
                ToolRef::from_parts(cx, path, tool, server, pattern, arguments).map(|t| ToolRef { min, ..t })
            }
        }
    }

    fn matches(&self, call: &ToolCall) -> bool {
        self.names(call) && self.arguments.as_ref().is_none_or(|a| is_subset(a, &call.arguments))
    }

    /// Whether it names the call's tool, whatever the arguments.
    fn names(&self, call: &ToolCall) -> bool {
        // A call recorded as `server.name` without a server still belongs to that server.
        let (server, name) = match (&call.server, call.name.split_once('.')) {
            (Some(s), _) => (Some(s.as_str()), call.name.as_str()),
            (None, Some((s, n))) => (Some(s), n),
            (None, None) => (None, call.name.as_str()),
        };
        self.tool.as_deref().is_none_or(|t| call.is(t))
            && self.server.as_deref().is_none_or(|s| server == Some(s))
            && self.pattern.as_ref().is_none_or(|p| p.is_match(name))
    }

    /// AgentV's match: the tool, and arguments equal to the call's (`deepEqual`).
    fn matches_exactly(&self, call: &ToolCall) -> bool {
        self.names(call) && self.arguments.as_ref().is_none_or(|a| json_eq(a, &call.arguments))
    }

    /// The tool it names, as `(server, tool)` (see [`Uses::tool_names`]); none for a
    /// `pattern` or a whole `server`.
    fn tool_name(&self) -> Option<(Option<&str>, &str)> {
        let tool = self.tool.as_deref()?;
        Some(match self.server.as_deref() {
            Some(s) => (Some(s), tool.strip_prefix(s).and_then(|t| t.strip_prefix('.')).unwrap_or(tool)),
            None => (None, tool),
        })
    }

    fn label(&self) -> String {
        let mut label = match (&self.tool, &self.pattern) {
            (Some(t), _) => t.clone(),
            (None, Some(p)) => format!("/{p}/"),
            (None, None) => "any tool".to_owned(),
        };
        if let Some(s) = &self.server {
            label = format!("{label} of {s}");
        }
        match &self.arguments {
            Some(a) => format!("{label}({a})"),
            None => label,
        }
    }
}

#[derive(Debug)]
pub enum ToolCheck {
    Called {
        tool: ToolRef,
        min: u32,
        max: Option<u32>,
    },
    NotCalled {
        tool: ToolRef,
    },
    Sequence {
        tools: Vec<ToolRef>,
        order: SequenceOrder,
        agentv: bool,
    },
    /// Calls of any of `tools` (all calls when empty).
    Count {
        tools: Vec<ToolRef>,
        min: Option<u32>,
        max: Option<u32>,
        unique: bool,
    },
}

fn bounds(cx: &mut ValidateCx, path: &KeyPath, min: Option<u32>, max: Option<u32>) -> bool {
    if let (Some(lo), Some(hi)) = (min, max)
        && lo > hi
    {
        cx.error(&path.key("min"), format!("min ({lo}) is greater than max ({hi})"));
        return false;
    }
    true
}

fn list(cx: &mut ValidateCx, path: &KeyPath, key: &str, tools: Vec<RawToolRef>) -> Option<Vec<ToolRef>> {
    let refs: Vec<_> =
        tools.into_iter().enumerate().map(|(i, t)| ToolRef::from_raw(cx, &path.key(key).index(i), t)).collect();
    refs.into_iter().collect()
}

impl CompileGrader for RawToolCalled {
    type Check = ToolCheck;

    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<ToolCheck> {
        let RawToolCalled { tool, server, pattern, arguments, min, max } = self;
        if min == Some(0) && max.is_none() {
            cx.error(&path.key("min"), "`min: 0` without `max` passes whatever the agent called")
                .help = Some("to check that the tool was not called, use `tool_not_called`".into());
            return None;
        }
        let tool = ToolRef::from_parts(cx, path, tool, server, pattern, arguments);
        (bounds(cx, path, min, max) && tool.is_some()).then(|| ToolCheck::Called {
            tool: tool.expect("checked"),
            min: min.unwrap_or(1),
            max,
        })
    }
}

impl CompileGrader for RawToolNotCalled {
    type Check = ToolCheck;

    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<ToolCheck> {
        let RawToolNotCalled { tool, server, pattern, arguments } = self;
        ToolRef::from_parts(cx, path, tool, server, pattern, arguments).map(|tool| ToolCheck::NotCalled { tool })
    }
}

impl CompileGrader for RawToolSequence {
    type Check = ToolCheck;

    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<ToolCheck> {
        if self.tools.is_empty() {
            cx.error(&path.key("tools"), "the sequence is empty");
            return None;
        }
        let tools = list(cx, path, "tools", self.tools)?;
        if self.order != SequenceOrder::AnyOrder
            && let Some(i) = tools.iter().position(|t| t.min.is_some())
        {
            cx.error(&path.key("tools").index(i).key("min"), "`min` goes with `order: any_order`");
            return None;
        }
        Some(ToolCheck::Sequence { tools, order: self.order, agentv: self.agentv })
    }
}

impl CompileGrader for RawToolCalls {
    type Check = ToolCheck;

    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<ToolCheck> {
        let RawToolCalls { tool, tools, min, max, unique } = self;
        // `min: 0` alone would pass whatever the agent called.
        if min.is_none_or(|m| m == 0) && max.is_none() && !unique {
            cx.error(path, "a `tool_calls` grader needs `min` (above 0), `max` or `unique`");
            return None;
        }
        let tools = match (tool, tools) {
            (Some(_), Some(_)) => {
                cx.error(path, "give `tool` or `tools`, not both");
                return None;
            }
            (Some(t), None) => vec![ToolRef::named(t)],
            (None, Some(ts)) => list(cx, path, "tools", ts)?,
            (None, None) => Vec::new(),
        };
        if let Some(i) = tools.iter().position(|t| t.min.is_some()) {
            cx.error(&path.key("tools").index(i).key("min"), "`min` goes with a `tool_sequence` in `any_order`");
            return None;
        }
        bounds(cx, path, min, max).then_some(ToolCheck::Count { tools, min, max, unique })
    }
}

/// Why a tool grader cannot judge an agent that reported nothing about its tool calls.
const NO_TOOL_CALLS: &str = "the agent reports no tool calls; have it write them to its trace file \
(`tool_calls` in $EVALGATE_TRACE, `[]` for none), give it the suite's MCP servers with `mcp: [...]` so \
evalgate's proxy records them, or use a model agent";

impl Grade for ToolCheck {
    /// Over unknown calls every tool grader is an error, the positive ones too: `tool_called`
    /// would fail, and `negate` would turn that failure into a pass.
    async fn grade(&self, input: &GradeInput<'_>, _: &mut Vec<JudgeCall>) -> GradeResult {
        let calls = input.trace.tool_calls.as_deref().ok_or(NO_TOOL_CALLS)?;
        Ok(self.verdict(calls))
    }

    /// The tools it names, for preflight to find in the servers' lists: a misspelt name
    /// would pass `tool_not_called` on every run.
    fn uses(&self) -> Uses<'_> {
        let refs: Vec<&ToolRef> = match self {
            ToolCheck::Called { tool, .. } | ToolCheck::NotCalled { tool } => vec![tool],
            ToolCheck::Sequence { tools, .. } | ToolCheck::Count { tools, .. } => tools.iter().collect(),
        };
        Uses { tool_names: refs.into_iter().filter_map(ToolRef::tool_name).collect(), ..Uses::default() }
    }

    /// What it looks at is elsewhere (the output reaches it only through `{agent.output}`).
    fn reads_output(&self) -> OutputRead {
        OutputRead::Not
    }

    fn a_call_can_only(&self) -> Option<CallEffect> {
        match self {
            ToolCheck::NotCalled { .. } => Some(CallEffect::Fail),
            ToolCheck::Called { max: None, .. } => Some(CallEffect::Pass),
            _ => None,
        }
    }
}

/// The share of `tools` AgentV 4.42.4's `tool-trajectory` finds matched
/// (`graders/tool-trajectory.ts`): in order, a call of the expected tool with other
/// arguments is used up and misses; exactly, position by position over the expected ones.
fn agentv_share(tools: &[ToolRef], order: SequenceOrder, calls: &[ToolCall]) -> f64 {
    let hits = match order {
        SequenceOrder::AnyOrder => tools
            .iter()
            .filter(|t| calls.iter().filter(|c| t.names(c)).count() as u32 >= t.min.unwrap_or(1))
            .count(),
        SequenceOrder::Exact => tools.iter().zip(calls).filter(|(t, c)| t.matches_exactly(c)).count(),
        SequenceOrder::InOrder => {
            let mut rest = calls.iter();
            tools
                .iter()
                .filter(|t| rest.find(|c| t.names(c)).is_some_and(|c| t.matches_exactly(c)))
                .count()
        }
    };
    hits as f64 / tools.len().max(1) as f64
}

impl ToolCheck {
    fn verdict(&self, calls: &[ToolCall]) -> Graded {
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
            ToolCheck::Sequence { tools, order, agentv: true } => {
                let expected = tools.iter().map(ToolRef::label).collect::<Vec<_>>().join(" → ");
                let score = agentv_share(tools, *order, calls);
                Graded {
                    score,
                    passed: score >= 0.8,
                    reason: format!("{:.0}% of {expected} matched ({order:?}); {}", score * 100.0, called()),
                    evidence: None,
                    unobserved: false,
                }
            }
            ToolCheck::Sequence { tools, order, agentv: false } => {
                let expected = tools.iter().map(ToolRef::label).collect::<Vec<_>>().join(" → ");
                let ok = match order {
                    SequenceOrder::Exact => {
                        calls.len() == tools.len() && tools.iter().zip(calls).all(|(t, c)| t.matches(c))
                    }
                    SequenceOrder::InOrder => {
                        let mut rest = calls.iter();
                        tools.iter().all(|t| rest.any(|c| t.matches(c)))
                    }
                    SequenceOrder::AnyOrder => tools
                        .iter()
                        .all(|t| calls.iter().filter(|c| t.matches(c)).count() as u32 >= t.min.unwrap_or(1)),
                };
                Graded::of(
                    ok,
                    format!("tool sequence {expected} followed"),
                    format!("expected {expected}; {}", called()),
                )
            }
            ToolCheck::Count { tools, min, max, unique } => {
                let counted: Vec<&ToolCall> =
                    calls.iter().filter(|c| tools.is_empty() || tools.iter().any(|t| t.matches(c))).collect();
                let n = counted.len() as u32;
                let what = match tools.as_slice() {
                    [] => "tool calls".to_owned(),
                    refs => format!("calls of {}", refs.iter().map(ToolRef::label).collect::<Vec<_>>().join(" or ")),
                };
                let repeated = counted.iter().enumerate().find_map(|(i, c)| {
                    counted[..i]
                        .iter()
                        .any(|d| d.name == c.name && d.server == c.server && d.arguments == c.arguments)
                        .then_some(*c)
                });
                if *unique && let Some(c) = repeated {
                    return Graded::of(false, String::new(), format!("{}({}) was called twice", c.name, c.arguments));
                }
                let ok = min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m);
                let bound = match (min, max) {
                    (Some(lo), Some(hi)) => format!("{lo} to {hi}"),
                    (Some(lo), None) => format!("at least {lo}"),
                    (None, Some(hi)) => format!("at most {hi}"),
                    (None, None) => "no repeats".to_owned(),
                };
                Graded::of(ok, format!("{n} {what}"), format!("{n} {what}, expected {bound}; {}", called()))
            }
        }
    }
}
