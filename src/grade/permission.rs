//! The `permission` grader: what an ACP agent asked permission for (`session/request_permission`)
//! and how the suite's policy answered, as the trial's session recorded it.

use globset::{Glob, GlobMatcher};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{CompileGrader, Grade, GradeInput, GradeResult, Graded, JudgeCall, OutputRead};
use crate::source::{KeyPath, ValidateCx};
use crate::trace::PermissionAsked;
use crate::uses::Uses;

/// Which answer a matching request must have had.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    #[default]
    Any,
    Allowed,
    Denied,
}

/// The agent asked permission for a matching request (`asked: true`, the default), or never
/// did (`asked: false`): "asked to run `rm -rf`", "was denied a write", "never asked".
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPermission {
    /// The tool's name, a glob (`Bash`, `mcp__*`).
    pub tool: Option<String>,
    /// The protocol's tool kind (`read`, `edit`, `delete`, `execute`, …).
    pub kind: Option<String>,
    /// Text the request's title or input holds (`rm -rf`).
    pub contains: Option<String>,
    /// How the policy answered it (default: either).
    #[serde(default)]
    pub decision: Decision,
    /// Whether a matching request must exist (default) or must not.
    #[serde(default = "yes")]
    pub asked: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug)]
pub struct PermissionCheck {
    tool: Option<GlobMatcher>,
    kind: Option<String>,
    contains: Option<String>,
    decision: Decision,
    asked: bool,
    /// What it looks for, as the reason says it.
    wanted: String,
}

impl CompileGrader for RawPermission {
    type Check = PermissionCheck;

    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<PermissionCheck> {
        let tool = match self.tool.as_deref().map(Glob::new) {
            Some(Err(e)) => {
                cx.error(&path.key("tool"), format!("not a glob: {e}"));
                return None;
            }
            Some(Ok(glob)) => Some(glob.compile_matcher()),
            None => None,
        };
        if self.contains.as_deref() == Some("") {
            cx.error(&path.key("contains"), "`contains` is empty: it would match every request");
            return None;
        }
        let mut wanted = vec!["a permission request".to_owned()];
        wanted.extend(self.tool.as_ref().map(|t| format!("for `{t}`")));
        wanted.extend(self.kind.as_ref().map(|k| format!("of kind `{k}`")));
        wanted.extend(self.contains.as_ref().map(|c| format!("holding `{c}`")));
        match self.decision {
            Decision::Any => {}
            Decision::Allowed => wanted.push("that was allowed".into()),
            Decision::Denied => wanted.push("that was denied".into()),
        }
        let check = PermissionCheck {
            tool,
            kind: self.kind,
            contains: self.contains,
            decision: self.decision,
            asked: self.asked,
            wanted: wanted.join(" "),
        };
        Some(check)
    }
}

impl PermissionCheck {
    fn matches(&self, asked: &PermissionAsked) -> bool {
        let text = || format!("{} {}", asked.title, asked.input);
        self.tool.as_ref().is_none_or(|g| g.is_match(&asked.tool))
            && self.kind.as_ref().is_none_or(|k| asked.kind.as_ref() == Some(k))
            && self.contains.as_ref().is_none_or(|c| text().contains(c.as_str()))
            && match self.decision {
                Decision::Any => true,
                Decision::Allowed => asked.allowed,
                Decision::Denied => !asked.allowed,
            }
    }
}

impl Grade for PermissionCheck {
    async fn grade(&self, input: &GradeInput<'_>, _: &mut Vec<JudgeCall>) -> GradeResult {
        // Only an ACP session reports permission requests: elsewhere "never asked" is unknown.
        let Some(session) = input.trace.session.as_ref() else {
            return Err("the agent reports no permission requests (only an ACP agent's session does)".into());
        };
        let found: Vec<&PermissionAsked> = session.permissions.iter().filter(|p| self.matches(p)).collect();
        let describe = |p: &PermissionAsked| {
            let answer = if p.allowed { "allowed" } else { "denied" };
            let name = if p.title.is_empty() { &p.tool } else { &p.title };
            format!("`{}` ({answer} by {})", name.trim_matches('`'), p.rule)
        };
        let of = session.permissions.len();
        Ok(match (self.asked, found.first()) {
            (true, Some(p)) => Graded::pass(format!("{}: {}", self.wanted, describe(p))),
            (true, None) => Graded::fail(format!("no {} among the {of} request(s)", self.wanted)),
            (false, None) => Graded::pass(format!("no {} among the {of} request(s)", self.wanted)),
            (false, Some(p)) => Graded::fail(format!("{}: {}", self.wanted, describe(p))),
        })
    }

    fn uses(&self) -> Uses<'_> {
        Uses::default()
    }

    fn reads_output(&self) -> OutputRead {
        OutputRead::Not
    }
}
