//! `http`, `file`, `mcp` and `steps` graders: the world after the agent ran (the portable
//! task format's verify steps), checked with the same code as the steps.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{CompileGrader, Grade, GradeInput, GradeResult, Graded, JudgeCall, OutputRead};
use crate::results::{Phase, Status, StepResult};
use crate::source::{KeyPath, ValidateCx};
use crate::step::{
    CompileStep, FileExpect, FileMiss, HttpRequest, McpAction, RawFileExpect, RawStep, RunStep, Step, call_tool, check_file,
    compile_steps, run_sequence, send,
};
pub use crate::step::{RawHttp as RawHttpCheck, RawMcpCall as RawMcpCheck};
use crate::template::{Scope, Template};
use crate::uses::Uses;

/// The `file` grader: a file that must meet `expect`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawFileCheck {
    /// The file, relative to the suite's directory (a template).
    pub path: String,
    /// What it must be.
    pub expect: RawFileExpect,
}

/// Verify steps (polling, control flow): passes when every step passes.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawSteps {
    /// Run in order, as setup steps are; their outputs stay inside the grader.
    pub steps: Vec<RawStep>,
}

#[derive(Debug)]
pub enum WorldCheck {
    Http(HttpRequest),
    File { path: Template, expect: FileExpect },
    Steps(Vec<Step>),
    Mcp(McpAction),
}

impl CompileGrader for RawHttpCheck {
    type Check = WorldCheck;

    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<WorldCheck> {
        CompileStep::compile(&self, cx, path, Scope::AfterAgent).map(WorldCheck::Http)
    }
}

impl CompileGrader for RawFileCheck {
    type Check = WorldCheck;

    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<WorldCheck> {
        let file_path = cx.template(&self.path, Scope::AfterAgent, &path.key("path"));
        let expect = self.expect.compile(cx, &path.key("expect"), Scope::AfterAgent);
        Some(WorldCheck::File { path: file_path?, expect: expect? })
    }
}

impl CompileGrader for RawMcpCheck {
    type Check = WorldCheck;

    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<WorldCheck> {
        CompileStep::compile(&self, cx, path, Scope::AfterAgent).map(WorldCheck::Mcp)
    }
}

impl CompileGrader for RawSteps {
    type Check = WorldCheck;

    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<WorldCheck> {
        if self.steps.is_empty() {
            cx.error(&path.key("steps"), "list at least one step");
            return None;
        }
        // Outputs captured by verify steps stay inside the grader.
        let outer = cx.step_outputs.clone();
        let parsed = compile_steps(cx, &self.steps, &path.key("steps"), Scope::AfterAgent);
        cx.step_outputs = outer;
        parsed.map(WorldCheck::Steps)
    }
}

impl Grade for WorldCheck {
    /// A request that cannot be made (connection refused, timeout) is a grader error: the
    /// world could not be observed, which is not the same as observing it wrong.
    async fn grade(&self, input: &GradeInput<'_>, _: &mut Vec<JudgeCall>) -> GradeResult {
        match self {
            WorldCheck::Http(req) => {
                let leaf = send(req, None, input.bindings).await;
                match (leaf.failure, leaf.error) {
                    (None, _) => Ok(Graded::pass(format!("{} met expectations", leaf.action))),
                    (Some(f), false) if leaf.unobserved => Ok(Graded::unobserved(format!("{}: {f}", leaf.action))),
                    (Some(f), false) => Ok(Graded::fail(format!("{}: {f}", leaf.action))),
                    (Some(f), true) => Err(format!("{}: {f}", leaf.action)),
                }
            }
            WorldCheck::Mcp(action) => {
                let leaf = call_tool(action, None, input.bindings).await;
                match (leaf.failure, leaf.error) {
                    (None, _) => Ok(Graded::pass(format!("{} met expectations", leaf.action))),
                    (Some(f), false) if leaf.unobserved => Ok(Graded::unobserved(format!("{}: {f}", leaf.action))),
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
                    // A step that could not be carried out observed nothing (see `http`).
                    Err(reason) if results.last().is_some_and(errored) => {
                        return Err(reason.replacen("setup step", "verify step", 1));
                    }
                    Err(reason) => Graded::fail(reason.replacen("setup step", "verify step", 1)),
                };
                Ok(match evidence {
                    Some(e) => graded.with_evidence(e),
                    None => graded,
                })
            }
            WorldCheck::File { path, expect } => {
                let full = input.workdir.join(input.bindings.render(path).map_err(|m| format!("uses {m}"))?);
                match check_file(&full, expect, input.bindings).await {
                    Ok(()) => Ok(Graded::pass(format!("{} met expectations", full.display()))),
                    Err(FileMiss::Unmet(f)) => Ok(Graded::fail(f)),
                    Err(FileMiss::Unobserved(f)) => Ok(Graded::unobserved(f)),
                    Err(FileMiss::Unreadable(why)) => Err(why),
                }
            }
        }
    }

    fn uses(&self) -> Uses<'_> {
        match self {
            WorldCheck::Http(request) => request.uses(),
            WorldCheck::File { path, expect } => Uses::templates([path]).and(expect.uses()),
            WorldCheck::Steps(steps) => steps.iter().map(Step::uses).collect(),
            WorldCheck::Mcp(action) => action.uses(),
        }
    }

    /// What it looks at is elsewhere (the output reaches it only through `{agent.output}`).
    fn reads_output(&self) -> OutputRead {
        OutputRead::Not
    }
}

/// Whether the step that stopped a sequence could not be carried out: it errored, or the
/// step inside it that ended it did.
fn errored(result: &StepResult) -> bool {
    result.status == Status::Error || result.children.last().is_some_and(errored)
}
