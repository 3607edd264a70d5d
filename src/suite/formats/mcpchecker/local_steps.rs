//! Steps that run on this machine: scripts (through their shebang), portable `command`
//! and `file` steps, and the environment they get.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::task::{Phase, TaskCx};
use super::templates::scalar;
use crate::suite::formats::native_text::literal;

/// mcpchecker's default time limit of a script step.
const SCRIPT_TIMEOUT: &str = "5m";

impl TaskCx<'_> {
    /// A script: a file through its shebang, in its own directory; inline text through its
    /// shebang's interpreter (`-c`), else bash, in the task's directory.
    pub(super) fn script(&mut self, body: &Value, at: &str, phase: Phase) -> Option<Value> {
        let task_dir = self.file.parent().unwrap_or(Path::new(""));
        let (argv, workdir) =
            match (body.get("file").and_then(Value::as_str), body.get("inline").and_then(Value::as_str)) {
                (Some(file), None) => {
                    let path = task_dir.join(file);
                    let text = match crate::files::read::text(&path, crate::files::read::TEXT) {
                        Ok(t) => t,
                        Err(e) => {
                            self.problem(&format!("{at}/file"), format!("cannot read {}: {e}", path.display()));
                            return None;
                        }
                    };
                    let name = Path::new(file).file_name().unwrap_or_default().to_string_lossy().into_owned();
                    let dir = Path::new(file).parent().unwrap_or(Path::new(""));
                    let mut argv = interpreter(&text).unwrap_or_else(|| vec!["sh".into()]);
                    argv.push(format!("./{name}"));
                    (argv, self.rel(dir))
                }
                (None, Some(inline)) => {
                    let mut argv = interpreter(inline).unwrap_or_else(|| vec!["bash".into()]);
                    argv.extend(["-c".to_owned(), inline.to_owned()]);
                    (argv, self.rel(Path::new("")))
                }
                _ => {
                    self.problem(at, "a script needs exactly one of `file` and `inline`");
                    return None;
                }
            };
        let argv: Vec<String> = argv.iter().map(|a| literal(a)).collect();
        if body.get("protocol").and_then(Value::as_str) == Some("json") {
            if phase != Phase::Verify {
                self.problem(&format!("{at}/protocol"), "a `protocol: json` script can only verify");
                return None;
            }
            // The code-grader protocol, in the script's directory as a step would be.
            let timeout = body.get("timeout").and_then(Value::as_str).unwrap_or(SCRIPT_TIMEOUT);
            let mut grader = json!({"type": "command", "run": argv, "workdir": workdir, "timeout": timeout});
            if let Some(env) = self.step_env(body, at) {
                grader["env"] = env;
            }
            return Some(grader);
        }
        let mut step = json!({"argv": argv, "workdir": workdir, "timeout": body.get("timeout").and_then(Value::as_str).unwrap_or(SCRIPT_TIMEOUT)});
        if let Some(env) = self.step_env(body, at) {
            step["env"] = env;
        }
        if body.get("outputs").is_some() {
            self.problem(&format!("{at}/outputs"), "script outputs are not supported; use a `command` step's outputs");
        }
        Some(step)
    }

    /// A portable `command` step.
    pub(super) fn command(&mut self, body: &Value, at: &str) -> Option<Value> {
        let (run, values) = self.shell_command(&scalar(body.get("run")?), &format!("{at}/run"))?;
        let mut step = match body.get("shell").and_then(Value::as_str) {
            Some(shell) => json!({"argv": [literal(shell), "-c", run]}),
            None => json!({"run": run}),
        };
        let workdir = body.get("workdir").and_then(Value::as_str).unwrap_or("");
        step["workdir"] = json!(self.rel(Path::new(workdir)));
        if let Some(t) = body.get("timeout") {
            step["timeout"] = t.clone();
        }
        if let Some(env) = self.step_env(body, at) {
            step["env"] = env;
        }
        for (name, value) in values {
            step["env"][name] = json!(value);
        }
        if let Some(expect) = body.get("expect") {
            let mut native = json!({});
            if let Some(code) = expect.get("exitCode") {
                native["exit_code"] = code.clone();
            }
            for stream in ["stdout", "stderr"] {
                if let Some(check) = expect.get(stream) {
                    native[stream] = self.text_checks(check, &format!("{at}/expect/{stream}"), &[])?;
                }
            }
            step["expect"] = native;
        }
        self.outputs(body, at, &mut step, &[("{exitCode}", "{exit_code}")]);
        Some(step)
    }

    /// `{equals|contains|matches}`: equals and contains templated, the regex not. A plain
    /// string is `equals` (the proposal's own `stdout: "50"`); other keys are errors.
    fn text_checks(&mut self, check: &Value, at: &str, also: &[&str]) -> Option<Value> {
        let mut out = json!({});
        match check {
            Value::String(_) | Value::Number(_) | Value::Bool(_) => {
                out["equals"] = json!(self.template(&scalar(check), at)?);
                return Some(out);
            }
            Value::Object(map) => {
                for key in map
                    .keys()
                    .filter(|k| !["equals", "contains", "matches"].contains(&k.as_str()) && !also.contains(&k.as_str()))
                {
                    self.problem(&format!("{at}/{key}"), format!("unknown key `{key}` (equals, contains, matches)"));
                }
            }
            _ => {
                self.problem(at, "expected a string or `{equals | contains | matches}`");
                return None;
            }
        }
        for key in ["equals", "contains"] {
            if let Some(v) = check.get(key) {
                out[key] = json!(self.template(&scalar(v), &format!("{at}/{key}"))?);
            }
        }
        if let Some(m) = check.get("matches") {
            out["matches"] = m.clone();
        }
        Some(out)
    }

    pub(super) fn file_step(&mut self, body: &Value, at: &str) -> Option<Value> {
        let path = self.template(&scalar(body.get("path")?), &format!("{at}/path"))?;
        let path =
            if path.starts_with(['/', '{']) { path } else { self.rel(Path::new(&path)).to_string_lossy().into_owned() };
        let mut file = json!({"path": path});
        if let Some(c) = body.get("content") {
            file["content"] = json!(self.template(&scalar(c), &format!("{at}/content"))?);
        }
        for key in ["mode", "absent"] {
            if let Some(v) = body.get(key) {
                file[key] = v.clone();
            }
        }
        if let Some(expect) = body.get("expect") {
            if expect.get("mode").is_some() {
                self.problem(&format!("{at}/expect/mode"), "checking a file's mode is not supported");
                return None;
            }
            let mut native = self.text_checks(expect, &format!("{at}/expect"), &["exists"])?;
            if let Some(e) = expect.get("exists") {
                native["exists"] = e.clone();
            }
            file["expect"] = native;
        }
        Some(json!({"file": file}))
    }

    /// The step's `env` (templated) plus the portable `spec.env`.
    fn step_env(&mut self, body: &Value, at: &str) -> Option<Value> {
        let mut env: Map<String, Value> = self.env.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        for (k, v) in body.get("env").and_then(Value::as_object).into_iter().flatten() {
            if let Some(t) = self.template(&scalar(v), &format!("{at}/env/{k}")) {
                env.insert(k.clone(), json!(t));
            }
        }
        (!env.is_empty()).then_some(Value::Object(env))
    }
}

/// The interpreter a shebang line names, as argv.
fn interpreter(script: &str) -> Option<Vec<String>> {
    let line = script.strip_prefix("#!")?.lines().next()?;
    let argv: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
    (!argv.is_empty()).then_some(argv)
}
