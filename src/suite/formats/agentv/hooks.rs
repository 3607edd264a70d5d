//! AgentV `workspace.hooks` that run outside the trial's workspace: `after_each` as a task's
//! cleanup step and `after_all` as a suite hook (`before_*` hooks are the workspace's setup,
//! `agentv_workspace`).

use serde_json::{Value, json};

use super::super::native_text::literal;

/// A hook's command: an argv list, or a string split on whitespace (AgentV's
/// `parseCommandArray`: no shell).
pub(super) fn argv(hook: &Value) -> Option<Vec<String>> {
    let argv: Vec<String> = match hook.get("command").or_else(|| hook.get("script"))? {
        Value::String(s) => s.split_whitespace().map(str::to_owned).collect(),
        Value::Array(words) => words.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => return None,
    };
    (!argv.is_empty()).then_some(argv)
}

/// A hook's command as a step, run in its `cwd` (relative to the eval file) within its
/// `timeout_ms`.
pub(super) fn step(hook: &Value, rel_dir: &std::path::Path) -> Option<Value> {
    // A `reset` has nothing to do: every trial's workspace is fresh.
    let mut step = json!({"argv": argv(hook)?.iter().map(|a| literal(a)).collect::<Vec<_>>()});
    let cwd = hook.get("cwd").and_then(Value::as_str).unwrap_or("");
    let dir = if cwd.is_empty() { rel_dir.to_owned() } else { rel_dir.join(cwd) };
    if !dir.as_os_str().is_empty() {
        step["workdir"] = json!(dir);
    }
    if let Some(ms) = hook.get("timeout_ms").or_else(|| hook.get("timeoutMs")).and_then(Value::as_u64) {
        step["timeout"] = json!(format!("{ms}ms"));
    }
    Some(step)
}
