//! A `kind: Eval` file: its agent, MCP servers and judge, and the task files its task sets
//! select, each with the set's assertions.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::agents::agent_ref;
use super::assertions::assertions;
use super::mcp_config::mcp_servers;
use super::task::task;
use crate::suite::formats::native_text::{glob_files, task_id};
use crate::suite::formats::{ConvertCx, Converted, Origin, Problems};

/// An eval file: its agent, MCP servers and judge, and the tasks its task sets select, each
/// with the set's assertions as graders.
pub(super) fn convert(doc: &Value, cx: &ConvertCx) -> Result<Converted, Problems> {
    let dir = cx.file.parent().unwrap_or(Path::new("")).to_owned();
    let config = &doc["config"];
    let mut problems = Problems::new();
    let name = doc.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("mcpchecker");
    let mut suite = json!({"evalgate": 1, "suite": task_id(name)});

    let servers = match config.get("mcpConfigFile").and_then(Value::as_str) {
        Some(file) => mcp_servers(&dir.join(file), file, &mut problems),
        None => Map::new(),
    };
    let server_names: Vec<String> = servers.keys().cloned().collect();
    if !servers.is_empty() {
        suite["mcp_servers"] = Value::Object(servers);
    }
    let mut model_agent = cx.model_agent;
    let agent = match cx.agent {
        Some(a) => a.to_owned(),
        None => {
            match config.get("agent") {
                Some(r) => {
                    if let Some(mut a) = agent_ref(r, &dir, "/config/agent", &mut problems) {
                        // Command agents reach the servers through recording proxies too.
                        a["mcp"] = json!(server_names);
                        // mcpchecker bounds the agent by the task's `limits.timeout`, else
                        // `defaultTaskLimits.timeout`, else not at all: nothing is invented.
                        a["timeout"] = config.pointer("/defaultTaskLimits/timeout").cloned().unwrap_or(json!("none"));
                        model_agent = a.get("provider").is_some();
                        suite["agents"] = json!({"agent": a});
                    }
                }
                None if config.get("agentFile").is_some() => problems.push((
                    "/config/agentFile".into(),
                    "`agentFile` is not read by mcpchecker (an eval needs `config.agent`): write `agent: {type: file, path: …}`".into(),
                )),
                None => problems.push(("/config/agent".into(), "an eval needs `config.agent`".into())),
            }
            "agent".to_owned()
        }
    };
    if let Some(judge) = config.get("llmJudge") {
        match judge.get("ref") {
            Some(r) => {
                if let Some(j) = agent_ref(r, &dir, "/config/llmJudge/ref", &mut problems) {
                    if j.get("provider").is_none() {
                        problems.push(("/config/llmJudge/ref".into(), "the judge must be a `builtin.llm-agent`".into()));
                    }
                    suite["judge"] = j;
                }
            }
            None => problems.push((
                "/config/llmJudge".into(),
                "the judge's `env` form is deprecated and not supported; use `ref: {type: builtin.llm-agent, model: provider:model}`".into(),
            )),
        }
    }
    if config.pointer("/defaultTaskLimits/cleanupTimeout").is_some() {
        problems.push((
            "/config/defaultTaskLimits/cleanupTimeout".into(),
            "`cleanupTimeout` (one limit for the whole cleanup phase) is not supported: give the cleanup steps their own `timeout`".into(),
        ));
    }
    if let Some(t) = config.pointer("/defaultTaskLimits/timeout") {
        suite["defaults"] = json!({"timeout": t});
    }

    let mut tasks: Vec<Value> = Vec::new();
    let mut origins = Vec::new();
    let mut index: HashMap<PathBuf, usize> = HashMap::new();
    let mut commands: Vec<String> = Vec::new();
    let declared = config.get("extensions").and_then(Value::as_object);
    let mut extensions = Map::new();
    for (i, set) in config.get("taskSets").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let at = format!("/config/taskSets/{i}");
        if set.get("source").is_some() {
            problems.push((
                format!("{at}/source"),
                "remote task sources are not supported; check the tasks out and use `glob`".into(),
            ));
            continue;
        }
        let Some(pattern) = set.get("glob").or_else(|| set.get("path")).and_then(Value::as_str) else {
            problems.push((at, "a task set needs `glob` or `path`".into()));
            continue;
        };
        let files = match glob_files(&dir, pattern) {
            Ok(files) if !files.is_empty() => files,
            Ok(_) => {
                problems.push((at, format!("no file matches `{pattern}`")));
                continue;
            }
            Err(e) => {
                problems.push((at, e));
                continue;
            }
        };
        let graders = match set.get("assertions") {
            Some(a) => assertions(a, &format!("{at}/assertions"), &mut problems),
            None => Vec::new(),
        };
        for file in files {
            let shown = file.strip_prefix(&dir).unwrap_or(&file).display().to_string();
            let doc = match crate::yaml::read(&file)
                .map_err(|e| e.to_string())
                .and_then(|t| crate::yaml::from_str::<Value>(&t).map_err(|e| e.to_string()))
            {
                Ok(doc) => doc,
                Err(e) => {
                    problems.push((at.clone(), format!("{shown}: {e}")));
                    continue;
                }
            };
            // mcpchecker skips files of another kind quietly.
            if doc["kind"] != "Task" || !selected(&doc, set.get("labelSelector")) {
                continue;
            }
            let key = std::fs::canonicalize(&file).unwrap_or(file.clone());
            let n = match index.get(&key) {
                Some(&n) => n,
                None => {
                    let task_dir = file.parent().and_then(|d| d.strip_prefix(&dir).ok()).unwrap_or(Path::new(""));
                    match task(&doc, &file, &cx.rel_dir.join(task_dir)) {
                        Ok((mut t, needs)) => {
                            t["agent"] = json!(agent);
                            if model_agent {
                                t["level"] = json!("scenario");
                            }
                            commands.extend(needs.commands);
                            let mut need = |name: &str, package: Option<&str>, problems: &mut Problems| {
                                match (declared.and_then(|d| d.get(name)), package) {
                                    (Some(spec), None) => {
                                        extensions.insert(name.to_owned(), extension(spec));
                                    }
                                    (None, Some(package)) => match extensions.get(name) {
                                        Some(had) if had["package"] != package => problems.push((
                                            format!("{shown}#/spec/imports"),
                                            format!("`{name}` imports `{package}`, but another task imports {} as `{name}`", had["package"]),
                                        )),
                                        _ => {
                                            extensions.insert(name.to_owned(), json!({"package": package}));
                                        }
                                    },
                                    (Some(_), Some(_)) => problems.push((
                                        format!("{shown}#/spec/imports"),
                                        format!("`{name}` is both imported by the task and declared in config.extensions: rename one with `as`"),
                                    )),
                                    (None, None) => problems.push((
                                        format!("{shown}#/spec/requires"),
                                        format!("the task requires extension `{name}`, which config.extensions does not declare"),
                                    )),
                                }
                            };
                            for name in &needs.extensions {
                                need(name, None, &mut problems);
                            }
                            for (name, package) in &needs.imported {
                                need(name, Some(package), &mut problems);
                            }
                            index.insert(key, tasks.len());
                            tasks.push(t);
                            origins.push(Origin { file: file.clone(), at: "metadata.name".into(), line: None });
                            tasks.len() - 1
                        }
                        Err(task_problems) => {
                            problems.extend(task_problems.into_iter().map(|(p, m)| (format!("{shown}#{p}"), m)));
                            continue;
                        }
                    }
                }
            };
            if let Some(grade) = tasks[n]["grade"].as_array_mut() {
                grade.extend(graders.iter().cloned());
            }
        }
    }
    if tasks.is_empty() && problems.is_empty() {
        problems.push(("/config/taskSets".into(), "the task sets select no task".into()));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    commands.sort();
    commands.dedup();
    if !commands.is_empty() {
        suite["env"] = json!({"required_commands": commands});
    }
    if !extensions.is_empty() {
        suite["extensions"] = Value::Object(extensions);
    }
    suite["tasks"] = Value::Array(tasks);
    Ok(Converted { suite, origins })
}

/// A `config.extensions` entry as a native one: `package`, `config` and `env` (whose
/// `{env.X}` mcpchecker expands as evalgate does), and `sha256` where the file pins one.
fn extension(spec: &Value) -> Value {
    let mut native = json!({"package": spec.get("package").cloned().unwrap_or(Value::Null)});
    for key in ["config", "env", "sha256"] {
        if let Some(value) = spec.get(key) {
            native[key] = value.clone();
        }
    }
    native
}

/// Whether a task's `metadata.labels` has every `key: value` of the selector.
fn selected(task: &Value, selector: Option<&Value>) -> bool {
    selector
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(k, v)| task.pointer(&format!("/metadata/labels/{k}")) == Some(v))
}
