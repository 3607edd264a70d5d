//! mcpchecker (formerly gevals): `kind: Task` files (`v1alpha1`, `v1alpha2` and the portable
//! `mcp-eval/v1` proposal) and `kind: Eval` files with their task sets and assertions, as a
//! native suite. Where mcpchecker and evalgate differ, the choice is in docs/formats.md.
//!
//! - Steps: scripts → `run` steps (a file through its shebang, in its own directory), `http`
//!   → `http`, `<server>.<tool>` → `mcp`, portable `command` / `file` / `foreach` / `anyOf` /
//!   `group` → their native twins; in `verify` each becomes a grader (`steps`, or `llm` for
//!   `llmJudge`, or `command` for a portable `protocol: json` script).
//! - Templates: `{random.*}`, `{env.X}`, `${X}`, `{agent.output}`, `{agent.prompt}` and step
//!   outputs map onto native variables; text mcpchecker does not template is made literal.
//! - Assertions of an eval's task set → tool graders on the task.
//!
//! One file per job: `format` (detection and the two kinds of file), `task` (a task file's
//! header), `steps` (its phases and step types) with `local_steps` (scripts, commands,
//! files) and `remote_steps` (HTTP, MCP tools), `templates`; `eval` (an eval file) with
//! `agents`, `mcp_config` and `assertions`.

mod agents;
mod assertions;
mod eval;
mod format;
mod local_steps;
mod mcp_config;
mod remote_steps;
mod steps;
mod task;
mod templates;

pub use format::McpChecker;
