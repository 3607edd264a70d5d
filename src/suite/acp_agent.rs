//! ACP agents (`agents.NAME.acp`): a coding agent spoken to over the Agent Client Protocol,
//! as written and compiled, with the permission policy that answers what it asks.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use globset::{Glob, GlobMatcher};
use serde::Deserialize;

use crate::source::{KeyPath, ValidateCx};
use crate::template::{Scope, Template};

/// An agent spoken to over the Agent Client Protocol (Claude Code through
/// `claude-agent-acp`, Codex through `codex-acp`, Gemini CLI with `--experimental-acp`): one
/// session a trial, in the agent's working directory, with the agent's `mcp` servers.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAcp {
    /// argv of the agent (it speaks ACP on its stdin and stdout).
    pub command: Vec<String>,
    /// Environment variables of the agent; values may use `{env.NAME}`.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The session's model, set with `session/set_model`: one of the models the agent
    /// lists in its `session/new` answer.
    pub model: Option<String>,
    /// The session's mode (`default`, `plan`, …), set with `session/set_mode`: one of the
    /// modes the agent lists.
    pub mode: Option<String>,
    /// How `session/request_permission` is answered: the first rule that matches decides;
    /// none matching, `read`, `search`, `think` and `fetch` are allowed and the rest denied.
    #[serde(default)]
    pub permissions: Vec<RawPermissionRule>,
}

/// One rule of an ACP agent's permission policy: what it matches (every key given must
/// match) and its decision.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPermissionRule {
    /// `allow` or `deny` what the rule matches.
    pub decision: Decision,
    /// The tool's name, a glob (`Bash`, `mcp__*`).
    pub tool: Option<String>,
    /// The protocol's kind of the tool call.
    pub kind: Option<ToolKind>,
    /// A glob every path the call touches must match, relative to the working directory; a
    /// path outside it never matches.
    pub path: Option<String>,
}

/// A permission rule's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allow,
    Deny,
}

/// The protocol's kinds of tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    SwitchMode,
    Other,
}

impl ToolKind {
    /// The kind as the protocol writes it, `None` for one it does not define.
    pub fn parse(text: &str) -> Option<ToolKind> {
        serde_json::from_value(serde_json::Value::String(text.to_owned())).ok()
    }

    /// Kinds that change nothing: allowed when no rule matches.
    fn harmless(self) -> bool {
        matches!(self, ToolKind::Read | ToolKind::Search | ToolKind::Think | ToolKind::Fetch)
    }
}

/// A compiled ACP agent.
#[derive(Debug)]
pub struct AcpAgent {
    pub name: String,
    pub command: Vec<Template>,
    pub env: Vec<(String, Template)>,
    pub model: Option<String>,
    pub mode: Option<String>,
    pub permissions: PermissionPolicy,
    /// MCP servers handed to the session, reached through evalgate's recording proxy.
    pub mcp: Vec<String>,
    pub workdir: PathBuf,
    pub timeout: Option<std::time::Duration>,
}

/// The rules, in order.
#[derive(Debug, Default)]
pub struct PermissionPolicy {
    rules: Vec<PermissionRule>,
}

#[derive(Debug)]
struct PermissionRule {
    decision: Decision,
    tool: Option<GlobMatcher>,
    kind: Option<ToolKind>,
    path: Option<GlobMatcher>,
}

/// What the policy answered, and which rule did (`permissions[1]`, or `default`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ruling {
    pub allowed: bool,
    pub rule: String,
}

impl PermissionPolicy {
    /// The answer to a request for `tool` of `kind` touching `paths`, in the trial's `cwd`.
    pub fn decide(&self, tool: &str, kind: Option<ToolKind>, paths: &[PathBuf], cwd: &Path) -> Ruling {
        let inside: Option<Vec<PathBuf>> = paths.iter().map(|p| below(p, cwd)).collect();
        for (i, rule) in self.rules.iter().enumerate() {
            let tool_matches = rule.tool.as_ref().is_none_or(|g| g.is_match(tool));
            let kind_matches = rule.kind.is_none_or(|k| Some(k) == kind);
            let path_matches = match (&rule.path, &inside) {
                (None, _) => true,
                (Some(glob), Some(inside)) => !inside.is_empty() && inside.iter().all(|p| glob.is_match(p)),
                (Some(_), None) => false,
            };
            if tool_matches && kind_matches && path_matches {
                return Ruling { allowed: rule.decision == Decision::Allow, rule: format!("permissions[{i}]") };
            }
        }
        Ruling { allowed: kind.is_some_and(ToolKind::harmless), rule: "default".into() }
    }
}

/// `path` relative to `cwd` when it is inside it (made absolute against `cwd`, `..` resolved
/// as text: a link is the file server's to refuse), else `None`.
pub fn below(path: &Path, cwd: &Path) -> Option<PathBuf> {
    let mut resolved = PathBuf::new();
    for part in cwd.join(path).components() {
        match part {
            Component::ParentDir => {
                resolved.pop();
            }
            Component::CurDir => {}
            other => resolved.push(other),
        }
    }
    resolved.strip_prefix(cwd).ok().map(Path::to_path_buf)
}

/// The `acp` key of agent `name` at `path`; `mcp`, `workdir` and `timeout` are the agent's.
pub(super) fn compile_acp(
    cx: &mut ValidateCx,
    name: &str,
    raw: &RawAcp,
    path: &KeyPath,
    (mcp, workdir, timeout): (Vec<String>, PathBuf, Option<std::time::Duration>),
) -> Option<AcpAgent> {
    let command = super::agent::command_argv(cx, &raw.command, Scope::Agent, &path.key("command"));
    let env = cx.env_templates(&raw.env, Scope::Agent, &path.key("env"));
    let mut rules = Vec::new();
    for (i, rule) in raw.permissions.iter().enumerate() {
        let at = path.key("permissions").index(i);
        let mut glob = |key: &str, text: &Option<String>| {
            let text = text.as_ref()?;
            let compiled = Glob::new(text).map(|g| g.compile_matcher());
            compiled.map_err(|e| cx.error(&at.key(key), format!("`{text}` is not a glob: {e}"))).ok()
        };
        let (tool, path_glob) = (glob("tool", &rule.tool), glob("path", &rule.path));
        rules.push(PermissionRule { decision: rule.decision, tool, kind: rule.kind, path: path_glob });
    }
    for (key, value) in [("model", &raw.model), ("mode", &raw.mode)] {
        if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
            cx.error(&path.key(key), format!("`{key}` is empty"));
        }
    }
    Some(AcpAgent {
        name: name.to_owned(),
        command: command?,
        env,
        model: raw.model.clone(),
        mode: raw.mode.clone(),
        permissions: PermissionPolicy { rules },
        mcp,
        workdir,
        timeout,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rule as a test writes it: decision, tool glob, kind, path glob.
    type Rule<'a> = (Decision, Option<&'a str>, Option<ToolKind>, Option<&'a str>);

    fn policy(rules: &[Rule]) -> PermissionPolicy {
        let glob = |g: Option<&str>| g.map(|g| Glob::new(g).unwrap().compile_matcher());
        let rules = rules
            .iter()
            .map(|&(decision, tool, kind, path)| PermissionRule { decision, tool: glob(tool), kind, path: glob(path) })
            .collect();
        PermissionPolicy { rules }
    }

    #[test]
    fn without_rules_only_what_changes_nothing_is_allowed() {
        let cwd = Path::new("/w");
        let none = PermissionPolicy::default();
        assert!(none.decide("Read", Some(ToolKind::Read), &[], cwd).allowed);
        for kind in [Some(ToolKind::Edit), Some(ToolKind::Execute), Some(ToolKind::Delete), Some(ToolKind::Other), None]
        {
            assert_eq!(none.decide("X", kind, &[], cwd), Ruling { allowed: false, rule: "default".into() });
        }
    }

    #[test]
    fn the_first_matching_rule_decides_and_a_path_outside_never_matches() {
        let cwd = Path::new("/w");
        let p = policy(&[
            (Decision::Deny, Some("Bash"), None, None),
            (Decision::Allow, None, Some(ToolKind::Edit), Some("src/**")),
            (Decision::Allow, Some("mcp__*"), None, None),
        ]);
        assert_eq!(p.decide("Bash", Some(ToolKind::Read), &[], cwd).rule, "permissions[0]");
        let edit = |path: &str| p.decide("Write", Some(ToolKind::Edit), &[PathBuf::from(path)], cwd);
        assert!(edit("/w/src/a.rs").allowed && edit("src/lib/b.rs").allowed);
        for outside in ["/etc/passwd", "/w/src/../../etc/passwd", "../w2/src/a", "/w/README"] {
            assert_eq!(edit(outside), Ruling { allowed: false, rule: "default".into() }, "{outside}");
        }
        assert!(!p.decide("Write", Some(ToolKind::Edit), &[], cwd).allowed, "no path: a path rule does not match");
        assert!(p.decide("mcp__fs__write", Some(ToolKind::Edit), &[], cwd).allowed);
    }
}
