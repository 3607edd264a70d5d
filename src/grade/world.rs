//! `http` and `file` graders: the world after the agent ran (the portable task format's
//! verify steps), checked with the same code as the steps.

use super::{GradeInput, GradeResult, Graded};
use crate::results::Phase;
use crate::run::steps::{call_tool, check_file, run_sequence, send};
use crate::source::ValidateCx;
use crate::suite::model::{FileExpect, HttpRequest, McpAction, Step};
use crate::suite::raw::RawGraderKind;
use crate::suite::validate_step::{file_expect, http_request, mcp_action, steps};
use crate::template::{Scope, Template};

#[derive(Debug)]
pub enum WorldCheck {
    Http(HttpRequest),
    File { path: Template, expect: FileExpect },
    Steps(Vec<Step>),
    Mcp(McpAction),
}

impl WorldCheck {
    /// The MCP tools this grader calls, as `(server, tool)`.
    pub fn mcp_calls(&self) -> Vec<(&str, &str)> {
        match self {
            WorldCheck::Mcp(m) => vec![(m.server.as_str(), m.tool.as_str())],
            WorldCheck::Steps(steps) => steps.iter().flat_map(Step::mcp_calls).collect(),
            WorldCheck::Http(_) | WorldCheck::File { .. } => Vec::new(),
        }
    }

    pub fn from_raw(cx: &mut ValidateCx, raw: RawGraderKind, path: &str) -> Option<Self> {
        match raw {
            RawGraderKind::Http(http) => http_request(cx, &http, path, Scope::AfterAgent).map(WorldCheck::Http),
            RawGraderKind::File(file) => {
                let file_path = cx.template(&file.path, Scope::AfterAgent, &format!("{path}.path"));
                let expect = file_expect(cx, &file.expect, &format!("{path}.expect"), Scope::AfterAgent);
                Some(WorldCheck::File { path: file_path?, expect: expect? })
            }
            RawGraderKind::Mcp(call) => mcp_action(cx, &call, path, Scope::AfterAgent).map(WorldCheck::Mcp),
            RawGraderKind::Steps { steps: raw } => {
                if raw.is_empty() {
                    cx.error(&format!("{path}.steps"), "list at least one step");
                    return None;
                }
                // Outputs captured by verify steps stay inside the grader.
                let outer = cx.step_outputs.clone();
                let parsed = steps(cx, &raw, &format!("{path}.steps"), Scope::AfterAgent);
                cx.step_outputs = outer;
                parsed.map(WorldCheck::Steps)
            }
            _ => unreachable!("only http, file and steps graders are routed here"),
        }
    }

    /// A request that cannot be made (connection refused, timeout) is a grader error: the
    /// world could not be observed, which is not the same as observing it wrong.
    pub async fn grade(&self, input: &GradeInput<'_>) -> GradeResult {
        match self {
            WorldCheck::Http(req) => {
                let leaf = send(req, None, input.bindings).await;
                match (leaf.failure, leaf.error) {
                    (None, _) => Ok(Graded::pass(format!("{} met expectations", leaf.action))),
                    (Some(f), false) => Ok(Graded::fail(format!("{}: {f}", leaf.action))),
                    (Some(f), true) => Err(format!("{}: {f}", leaf.action)),
                }
            }
            WorldCheck::Mcp(action) => {
                let leaf = call_tool(action, None, input.bindings).await;
                match (leaf.failure, leaf.error) {
                    (None, _) => Ok(Graded::pass(format!("{} met expectations", leaf.action))),
                    (Some(f), false) => Ok(Graded::fail(format!("{}: {f}", leaf.action))),
                    (Some(f), true) => Err(format!("{}: {f}", leaf.action)),
                }
            }
            WorldCheck::Steps(steps) => {
                let mut bindings = input.bindings.clone();
                let mut results = Vec::new();
                let outcome = run_sequence(steps, input.workdir, Phase::Setup, &mut bindings, &mut results).await;
                let evidence = serde_json::to_value(&results).ok();
                let graded = match outcome {
                    Ok(()) => Graded::pass(format!("{} verify step(s) passed", steps.len())),
                    Err(reason) => Graded::fail(reason.replacen("setup step", "verify step", 1)),
                };
                Ok(match evidence {
                    Some(e) => graded.with_evidence(e),
                    None => graded,
                })
            }
            WorldCheck::File { path, expect } => {
                let full = input.workdir.join(input.bindings.render(path));
                Ok(match check_file(&full, expect, input.bindings) {
                    Ok(()) => Graded::pass(format!("{} met expectations", full.display())),
                    Err(f) => Graded::fail(f),
                })
            }
        }
    }
}
