//! A `kind: Task` file's header (version, `requires`, `imports`, `env`, metadata) and the
//! state its steps are converted with; the steps themselves are in `steps`.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::templates::scalar;
use crate::suite::formats::Problems;
use crate::suite::formats::native_text::task_id;

/// What a converted task needs from its suite.
#[derive(Default)]
pub(super) struct Needs {
    pub(super) servers: Vec<String>,
    pub(super) commands: Vec<String>,
    pub(super) judge: bool,
    /// Extensions its `requires` names (declared by the eval's `config.extensions`).
    pub(super) extensions: Vec<String>,
    /// Extensions its `imports` bring, as `(as, package)`.
    pub(super) imported: Vec<(String, String)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Version {
    V1Alpha1,
    V1Alpha2,
    /// The portable task format proposal, `mcp-eval/v1`.
    Portable,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Setup,
    Verify,
    Cleanup,
}

pub(super) enum Alias {
    Server(String),
    Extension(String),
}

/// One task file being converted.
pub(super) struct TaskCx<'a> {
    pub(super) file: &'a Path,
    /// The task's directory relative to the suite's.
    pub(super) rel_dir: &'a Path,
    pub(super) version: Version,
    pub(super) name: String,
    pub(super) aliases: HashMap<String, Alias>,
    /// v1alpha2 outputs are found by step type: the native id of the last MCP or extension
    /// setup step of each.
    pub(super) outputs_by_type: HashMap<String, String>,
    /// The outputs each extension setup step (by native id) is read for. mcpchecker keeps
    /// whatever map an operation answers; a native step declares what it captures, so each
    /// key a template reads is declared on its step once the task is converted.
    pub(super) extension_outputs: HashMap<String, BTreeSet<String>>,
    /// Portable `spec.env`, as native templates.
    pub(super) env: Vec<(String, String)>,
    /// Foreach variables in reach.
    pub(super) locals: Vec<String>,
    pub(super) judge: bool,
    pub(super) problems: Problems,
}

/// The native task of one mcpchecker task file (without `agent`).
pub(super) fn task(doc: &Value, file: &Path, rel_dir: &Path) -> Result<(Value, Needs), Problems> {
    let version = match doc.get("apiVersion").and_then(Value::as_str) {
        None | Some("" | "mcpchecker/v1alpha1") => Version::V1Alpha1,
        Some("mcpchecker/v1alpha2") => Version::V1Alpha2,
        Some("mcp-eval/v1") => Version::Portable,
        Some(other) => {
            let hint = if other.starts_with("gevals/") { " (gevals was renamed: use mcpchecker/…)" } else { "" };
            return Err(vec![(
                "/apiVersion".into(),
                format!(
                    "unknown apiVersion `{other}`{hint}; expected mcpchecker/v1alpha1, mcpchecker/v1alpha2 or mcp-eval/v1"
                ),
            )]);
        }
    };
    if doc["kind"] != "Task" {
        return Err(vec![("/kind".into(), "expected `Task`".into())]);
    }
    let Some(name) = doc.pointer("/metadata/name").and_then(Value::as_str) else {
        return Err(vec![("/metadata/name".into(), "a task needs `metadata.name`".into())]);
    };
    let mut cx = TaskCx {
        file,
        rel_dir,
        version,
        name: name.to_owned(),
        aliases: HashMap::new(),
        outputs_by_type: HashMap::new(),
        extension_outputs: HashMap::new(),
        env: Vec::new(),
        locals: Vec::new(),
        judge: false,
        problems: Vec::new(),
    };
    // v1alpha1 is v1alpha2 with one script (or judge) per phase, as mcpchecker translates it.
    let spec = match version {
        Version::V1Alpha1 => match doc.get("steps") {
            Some(steps) => v1alpha1_spec(steps),
            None => return Err(vec![("/steps".into(), "a v1alpha1 task needs `steps`".into())]),
        },
        _ => match doc.get("spec") {
            Some(spec) => spec.clone(),
            None => return Err(vec![("/spec".into(), "a task needs `spec`".into())]),
        },
    };
    let base = if version == Version::V1Alpha1 { "/steps" } else { "/spec" };
    let mut needs = Needs::default();
    for (i, r) in spec.get("requires").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let at = format!("{base}/requires/{i}");
        let alias = |name: &str| r.get("as").and_then(Value::as_str).unwrap_or(name).to_owned();
        if let Some(server) = r.get("mcpServer").and_then(Value::as_str) {
            cx.aliases.insert(alias(server), Alias::Server(server.to_owned()));
            needs.servers.push(server.to_owned());
        } else if let Some(ext) = r.get("extension").and_then(Value::as_str) {
            cx.aliases.insert(alias(ext), Alias::Extension(ext.to_owned()));
            needs.extensions.push(ext.to_owned());
        } else if let Some(command) = r.get("command").and_then(Value::as_str) {
            needs.commands.push(command.to_owned());
        } else {
            cx.problems.push((at, "expected `mcpServer`, `extension` or `command`".into()));
        }
    }
    for (i, import) in spec.get("imports").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let package = import.get("package").and_then(Value::as_str).unwrap_or_default();
        match import.get("as").and_then(Value::as_str) {
            Some(alias) => {
                needs.imported.push((alias.to_owned(), package.to_owned()));
                cx.aliases.insert(alias.to_owned(), Alias::Extension(alias.to_owned()))
            }
            None => {
                cx.problems.push((format!("{base}/imports/{i}"), "an import needs `as`".into()));
                None
            }
        };
    }
    for (key, value) in spec.get("env").and_then(Value::as_object).into_iter().flatten() {
        let at = format!("{base}/env/{key}");
        let text = scalar(value);
        if let Some(t) = cx.template(&text, &at) {
            cx.env.push((key.clone(), t));
        }
    }

    let mut task = json!({"id": task_id(name)});
    let meta = &doc["metadata"];
    if let Some(d) = meta.get("description").and_then(Value::as_str) {
        task["description"] = json!(d);
    }
    let mut tags: Vec<String> = meta.get("tags").and_then(Value::as_array).into_iter().flatten().map(scalar).collect();
    if let Some(d) = meta.get("difficulty").and_then(Value::as_str) {
        tags.push(format!("difficulty={d}"));
    }
    for (k, v) in meta.get("labels").and_then(Value::as_object).into_iter().flatten() {
        tags.push(format!("{k}={}", scalar(v)));
    }
    if !tags.is_empty() {
        task["tags"] = json!(tags);
    }
    if let Some(runs) = meta.get("runs").and_then(Value::as_u64).filter(|&r| r > 1) {
        task["repeat"] = json!(runs);
    }
    if spec.pointer("/limits/cleanupTimeout").is_some() {
        cx.problem(
            &format!("{base}/limits/cleanupTimeout"),
            "`limits.cleanupTimeout` (one limit for the whole cleanup phase) is not supported: give the cleanup steps their own `timeout`",
        );
    }
    let timeout = spec.pointer("/limits/timeout").or_else(|| meta.get("timeout"));
    if let Some(t) = timeout.and_then(Value::as_str) {
        task["timeout"] = json!(t);
    }

    // Setup first: its outputs are in reach of the prompt, verify and cleanup.
    let setup = cx.phase(&spec, base, "setup", Phase::Setup);
    if !setup.is_empty() {
        task["setup"] = json!(setup);
    }
    task["prompt"] = json!(cx.prompt(&spec, base));
    let mut grade = cx.phase(&spec, base, "verify", Phase::Verify);
    if grade.is_empty() {
        // Without verify steps mcpchecker passes a task whose agent ran.
        grade.push(json!({"type": "regex", "pattern": "(?s).*", "name": "the agent ran (no verify steps)"}));
    }
    task["grade"] = json!(grade);
    let mut cleanup = cx.phase(&spec, base, "cleanup", Phase::Cleanup);
    if version != Version::Portable {
        // mcpchecker runs cleanup in order; evalgate runs it last-first, so reverse it here.
        cleanup.reverse();
    }
    if !cleanup.is_empty() {
        task["cleanup"] = json!(cleanup);
    }
    if let Some(setup) = task.get_mut("setup") {
        declare_outputs(setup, &cx.extension_outputs);
    }
    needs.judge = cx.judge;
    if cx.problems.is_empty() { Ok((task, needs)) } else { Err(cx.problems) }
}

/// Declares on each extension step below `steps` (nested ones too) the outputs read of it:
/// `NAME: "{response.json.NAME}"`, the operation's `outputs` being the step's response.
fn declare_outputs(steps: &mut Value, read: &HashMap<String, BTreeSet<String>>) {
    match steps {
        Value::Array(items) => items.iter_mut().for_each(|s| declare_outputs(s, read)),
        Value::Object(step) => {
            let keys = step.get("id").and_then(Value::as_str).and_then(|id| read.get(id));
            if let Some(keys) = keys.filter(|k| !k.is_empty() && step.contains_key("extension")) {
                let outputs = keys.iter().map(|k| (k.clone(), json!(format!("{{response.json.{k}}}"))));
                step.insert("outputs".into(), Value::Object(outputs.collect()));
            }
            step.values_mut().for_each(|v| declare_outputs(v, read));
        }
        _ => {}
    }
}

/// A v1alpha1 `steps` block in v1alpha2 shape.
fn v1alpha1_spec(steps: &Value) -> Value {
    let mut spec = json!({});
    for phase in ["setup", "verify", "cleanup"] {
        let Some(step) = steps.get(phase) else { continue };
        let judged = step.get("file").is_none() && step.get("inline").is_none();
        spec[phase] = if judged { json!([{"llmJudge": step}]) } else { json!([{"script": step}]) };
    }
    if let Some(prompt) = steps.get("prompt") {
        spec["prompt"] = prompt.clone();
    }
    spec
}

impl TaskCx<'_> {
    pub(super) fn problem(&mut self, at: &str, message: impl Into<String>) {
        self.problems.push((at.to_owned(), message.into()));
    }

    /// `path` (relative to the task file) relative to the suite.
    pub(super) fn rel(&self, path: &Path) -> PathBuf {
        let joined = if path.as_os_str().is_empty() { self.rel_dir.to_owned() } else { self.rel_dir.join(path) };
        if joined.as_os_str().is_empty() { PathBuf::from(".") } else { joined }
    }
}
