//! A task's definition hash: two runs of a task can be compared only when it asked the same
//! thing of the same agent settings and graded it the same way. The hash covers the task as
//! written (prompt or messages, setup, graders, fixtures, threshold, timeout, cleanup), the
//! agent that ran it (its keys: command, model, …), the suite's judge, MCP servers, variables
//! and default timeout. What does not change the measurement is left out: description, tags,
//! weight, `golden`, and the trial counts (the paired test compares pass rates, whatever the count).

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::yaml::Document;

/// Task keys that do not change what a trial measures.
const IGNORED_TASK_KEYS: [&str; 8] =
    ["description", "tags", "weight", "repeat", "min_pass", "agent", "golden", "inputs"];

/// The suite's part of every definition (what of the suite as written a task's outcome
/// depends on) as canonical JSON, written once: every task's hash reuses it.
#[derive(Debug, Clone, Default)]
pub struct DefinitionContext {
    /// Each agent's keys.
    agents: std::collections::BTreeMap<String, String>,
    /// `,"judge":…,"mcp_servers":…,"task":`, between the agent and the task.
    before_task: String,
    /// `,"timeout":…,"vars":…}`, after the task.
    after_task: String,
    /// What a task's fingerprint takes of the suite as written, part by part
    /// (`fingerprint::task_inputs`): each MCP server's keys, the judge's, each variable's
    /// value and the default timeout, as canonical JSON.
    pub parts: SuiteParts,
}

/// The suite's keys as written, one part at a time, for a task's fingerprint: a task
/// takes only the parts it uses, so a change to a server it does not use leaves it alone.
#[derive(Debug, Clone, Default)]
pub struct SuiteParts {
    pub agents: std::collections::BTreeMap<String, String>,
    pub mcp_servers: std::collections::BTreeMap<String, String>,
    pub judge: String,
    pub vars: std::collections::BTreeMap<String, String>,
    pub timeout: String,
    /// `variants` as written: an arm's task takes it whole (an arm's agents, models and
    /// variables are written there).
    pub variants: String,
}

pub(super) fn suite_context(source: &Value, vars: &std::collections::BTreeMap<String, String>) -> DefinitionContext {
    let text = |value: Option<&Value>| {
        let mut out = String::new();
        canonical(value.unwrap_or(&Value::Null), &mut out);
        out
    };
    let agents = source.get("agents").and_then(Value::as_object);
    let timeout = source.get("defaults").and_then(|d| d.get("timeout"));
    let servers = source.get("mcp_servers").and_then(Value::as_object);
    let agents: std::collections::BTreeMap<String, String> =
        agents.into_iter().flatten().map(|(name, agent)| (name.clone(), text(Some(agent)))).collect();
    let parts = SuiteParts {
        agents: agents.clone(),
        mcp_servers: servers.into_iter().flatten().map(|(name, server)| (name.clone(), text(Some(server)))).collect(),
        judge: text(source.get("judge")),
        vars: vars.clone(),
        timeout: text(timeout),
        variants: text(source.get("variants")),
    };
    DefinitionContext {
        parts,
        agents,
        before_task: format!(
            r#","judge":{},"mcp_servers":{},"task":"#,
            text(source.get("judge")),
            text(source.get("mcp_servers"))
        ),
        after_task: format!(r#","timeout":{},"vars":{}}}"#, text(timeout), text(Some(&serde_json::json!(vars)))),
    }
}

/// A task as written, read as JSON when its definition hash is asked for: a task of a
/// native suite is item `index` of the `tasks` of the suite's parsed file (shared by every
/// task), so loading a suite (`check`, a run that stops early) does not build a JSON copy of
/// each task; a converted or imported task is its converted JSON.
#[derive(Clone, Default)]
pub enum TaskSource {
    Json(Value),
    Written {
        doc: Arc<Document>,
        index: usize,
    },
    #[default]
    None,
}

impl TaskSource {
    /// The task as written, as canonical JSON, without the keys that do not change what a
    /// trial measures (those of [`IGNORED_TASK_KEYS`]).
    pub fn measured_json(&self) -> String {
        let mut own = self.json();
        if let Value::Object(map) = &mut own {
            map.retain(|k, _| !IGNORED_TASK_KEYS.contains(&k.as_str()));
        }
        let mut text = String::new();
        canonical(&own, &mut text);
        text
    }

    /// The task as JSON (null when there is none).
    pub fn json(&self) -> Value {
        match self {
            TaskSource::Json(json) => json.clone(),
            TaskSource::Written { doc, index } => doc
                .root()
                .get("tasks")
                .and_then(|tasks| tasks.items()?.get(*index))
                .and_then(|task| Value::deserialize(doc.de(task)).ok())
                .unwrap_or_default(),
            TaskSource::None => Value::Null,
        }
    }
}

impl std::fmt::Debug for TaskSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskSource::Json(json) => f.debug_tuple("Json").field(json).finish(),
            TaskSource::Written { index, .. } => write!(f, "Written(tasks[{index}])"),
            TaskSource::None => f.write_str("None"),
        }
    }
}

impl DefinitionContext {
    /// The definition hash of the task written as `source` run by the agent named `agent`
    /// (16 hex digits): of the canonical JSON
    /// `{"agent":…,"judge":…,"mcp_servers":…,"task":…,"timeout":…,"vars":…}`.
    pub fn task_definition(&self, source: &TaskSource, agent: &str) -> String {
        let context = self;
        let mut text = String::from(r#"{"agent":"#);
        text.push_str(context.agents.get(agent).map_or("null", String::as_str));
        text.push_str(&context.before_task);
        text.push_str(&source.measured_json());
        text.push_str(&context.after_task);
        let digest = Sha256::digest(text.as_bytes());
        digest[..8].iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// JSON with every object's keys sorted, so the order keys are written in does not matter.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k).expect("a string is JSON"));
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use crate::suite::{LoadOptions, load_suite};

    fn definitions(yaml: &str) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evalgate.yaml");
        std::fs::write(&path, yaml).unwrap();
        let suite = load_suite(&path, &LoadOptions::default()).unwrap();
        suite.tasks.iter().map(|t| suite.task_definition(t, t.agent.name())).collect()
    }

    fn suite(agent: &str, task: &str) -> String {
        format!(
            "evalgate: 1\nsuite: s\nagents:\n  bot: {agent}\n  other: {{command: [./other.sh]}}\ntasks:\n  - {task}\n  - {{id: b, agent: bot, prompt: y, grade: [{{type: contains, value: y}}]}}\n"
        )
    }

    const AGENT: &str = "{command: [./agent.sh]}";
    const TASK: &str = "{id: a, agent: bot, prompt: x, grade: [{type: contains, value: x}]}";

    /// Baselines keep definitions: the same suite must hash the same in every version.
    #[test]
    fn a_definition_is_the_same_from_version_to_version() {
        let yaml = "evalgate: 1\nsuite: s\nvars: {who: \"w\\u00e9\\\"q\", n: \"1\"}\ndefaults: {timeout: 30s}\nmcp_servers:\n  fs: {command: [node, fs.js], env: {B: b, A: a}}\nagents:\n  bot: {command: [./agent.sh, \"{prompt}\"], env: {Z: z, A: \"1\"}}\n  other: {command: [./other.sh]}\ntasks:\n  - {id: a, agent: bot, prompt: x, tags: [t], threshold: 0.5, grade: [{type: contains, value: x}, {type: regex, pattern: \"^x$\"}]}\n  - {id: b, agent: other, prompt: y, grade: [{type: contains, value: y}]}\n";
        assert_eq!(definitions(yaml), ["38457f273d0a5f2f", "ab82b7a4675117c1"]);
    }

    #[test]
    fn what_changes_the_measurement_changes_the_hash_and_nothing_else_does() {
        let base = definitions(&suite(AGENT, TASK));
        assert_eq!(base[0].len(), 16);
        assert_ne!(base[0], base[1]);
        // Key order, description, tags, weight and trial counts: the same definition.
        let same = "{grade: [{value: x, type: contains}], prompt: x, agent: bot, id: a, description: d, tags: [t], weight: 2, repeat: 3}";
        assert_eq!(definitions(&suite(AGENT, same)), base);
        // Another prompt, grader or agent setting: another definition; the other task keeps its own.
        for changed in [
            suite(AGENT, "{id: a, agent: bot, prompt: z, grade: [{type: contains, value: x}]}"),
            suite(AGENT, "{id: a, agent: bot, prompt: x, grade: [{type: contains, value: w}]}"),
            suite("{command: [./agent.sh, --fast]}", TASK),
        ] {
            let other = definitions(&changed);
            assert_ne!(other[0], base[0], "{changed}");
            assert_eq!(other[1] == base[1], !changed.contains("--fast"), "{changed}");
        }
    }
}
