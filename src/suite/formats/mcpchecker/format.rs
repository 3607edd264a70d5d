//! mcpchecker as a foreign format: which files are its, and the suite of each kind of file
//! (an eval file with its task sets, or one task file on its own).

use serde_json::{Map, Value, json};

use super::{eval, task};
use crate::suite::formats::native_text::placeholder_model;
use crate::suite::formats::{ConvertCx, Converted, ForeignFormat, Origin, Problems, Unrunnable};

pub struct McpChecker;

impl ForeignFormat for McpChecker {
    fn name(&self) -> &'static str {
        "mcpchecker"
    }

    fn import_name(&self) -> &'static str {
        "mcpchecker"
    }

    fn detect(&self, doc: &Value) -> bool {
        matches!(doc.get("kind").and_then(Value::as_str), Some("Task" | "Eval"))
    }

    fn convert(&self, doc: &Value, cx: &ConvertCx) -> Result<Converted, Problems> {
        if doc["kind"] == "Eval" { eval::convert(doc, cx) } else { task_file(doc, cx) }
    }

    fn unrunnable(&self, doc: &Value) -> Option<Unrunnable> {
        (doc["kind"] == "Task").then_some(Unrunnable {
            why: "an mcpchecker task does not say which agent runs it (its eval.yaml does: run that instead)",
            import_keys: "agent: NAME",
        })
    }
}

/// The suite of one task file, run by the importing suite's agent.
fn task_file(doc: &Value, cx: &ConvertCx) -> Result<Converted, Problems> {
    let agent = cx.agent.unwrap_or("agent");
    let (mut task, needs) = task::task(doc, cx.file, &cx.rel_dir)?;
    task["agent"] = json!(agent);
    if cx.agent.is_none() || cx.model_agent {
        // A model agent works with the MCP tools, as mcpchecker's agents do.
        task["level"] = json!("scenario");
    }
    let mut suite = json!({"evalgate": 1, "suite": "mcpchecker"});
    if cx.agent.is_none() {
        // On its own (`evalgate convert`): placeholders to point at the real servers and model.
        let servers: Map<String, Value> =
            needs.servers.iter().map(|s| (s.clone(), json!({"command": [format!("./{s}-server.sh")]}))).collect();
        suite["mcp_servers"] = Value::Object(servers);
        let mut model = placeholder_model();
        model["mcp"] = json!(needs.servers);
        suite["agents"] = json!({"agent": model});
        if needs.judge {
            suite["judge"] = placeholder_model();
        }
    }
    if !needs.commands.is_empty() {
        suite["env"] = json!({"required_commands": needs.commands});
    }
    // Extensions the task imports by package, and placeholders for those its eval.yaml
    // would declare (`requires`), to point at the real binaries.
    let mut extensions: Map<String, Value> =
        needs.extensions.iter().map(|e| (e.clone(), json!({"package": format!("./{e}-extension")}))).collect();
    extensions.extend(needs.imported.iter().map(|(name, package)| (name.clone(), json!({"package": package}))));
    if !extensions.is_empty() {
        suite["extensions"] = Value::Object(extensions);
    }
    suite["tasks"] = json!([task]);
    Ok(Converted { suite, origins: vec![Origin { file: cx.file.to_owned(), at: "metadata.name".into(), line: None }] })
}
