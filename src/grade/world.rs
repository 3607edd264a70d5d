//! `http` and `file` graders: the world after the agent ran (the portable task format's
//! verify steps), checked with the same code as the steps.

use super::{GradeInput, GradeResult, Graded};
use crate::run::steps::{check_file, send};
use crate::suite::ValidateCx;
use crate::suite::model::{FileExpect, HttpRequest};
use crate::suite::raw::RawGraderKind;
use crate::suite::template::{Scope, Template};
use crate::suite::validate_step::{file_expect, http_request};

#[derive(Debug)]
pub enum WorldCheck {
    Http(HttpRequest),
    File { path: Template, expect: FileExpect },
}

impl WorldCheck {
    pub fn from_raw(cx: &mut ValidateCx, raw: RawGraderKind, path: &str) -> Option<Self> {
        match raw {
            RawGraderKind::Http(http) => http_request(cx, &http, path, Scope::AfterAgent).map(WorldCheck::Http),
            RawGraderKind::File(file) => {
                let file_path = cx.template(&file.path, Scope::AfterAgent, &format!("{path}.path"));
                let expect = file_expect(cx, &file.expect, &format!("{path}.expect"), Scope::AfterAgent);
                Some(WorldCheck::File { path: file_path?, expect: expect? })
            }
            _ => unreachable!("only http and file graders are routed here"),
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
