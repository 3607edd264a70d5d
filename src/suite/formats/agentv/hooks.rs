//! AgentV `workspace.hooks`: suite hooks (`*_all`) and task setup / cleanup (`*_each`).

use serde_json::{Value, json};

use super::super::Problems;
use super::super::native_text::literal;

#[derive(Clone, Default)]
pub(super) struct Hooks {
    pub(super) before_all: Option<Value>,
    pub(super) after_all: Option<Value>,
    pub(super) before_each: Option<Value>,
    pub(super) after_each: Option<Value>,
}

impl Hooks {
    pub(super) fn read(raw: Option<&Value>, at: &str, rel_dir: &std::path::Path, problems: &mut Problems) -> Hooks {
        let Some(raw) = raw else { return Hooks::default() };
        if raw.get("enabled").and_then(Value::as_bool) == Some(false) {
            return Hooks::default();
        }
        let step = |key: &str, problems: &mut Problems| -> Option<Value> {
            let hook = raw.get(key)?;
            let at = format!("{at}/{key}");
            if hook.get("reset").is_some_and(|r| r != "none") {
                problems.push((format!("{at}/reset"), "workspace resets are not supported".into()));
            }
            let mut step = match hook.get("command") {
                Some(Value::String(s)) => json!({"run": literal(s)}),
                Some(Value::Array(argv)) => {
                    json!({"argv": argv.iter().map(|a| literal(a.as_str().unwrap_or_default())).collect::<Vec<_>>()})
                }
                _ => return None,
            };
            let cwd = hook.get("cwd").and_then(Value::as_str).unwrap_or("");
            let dir = if cwd.is_empty() { rel_dir.to_owned() } else { rel_dir.join(cwd) };
            if !dir.as_os_str().is_empty() {
                step["workdir"] = json!(dir);
            }
            if let Some(ms) = hook.get("timeout_ms").or_else(|| hook.get("timeoutMs")).and_then(Value::as_u64) {
                step["timeout"] = json!(format!("{ms}ms"));
            }
            Some(step)
        };
        Hooks {
            before_all: step("before_all", problems),
            after_all: step("after_all", problems),
            before_each: step("before_each", problems),
            after_each: step("after_each", problems),
        }
    }
}
