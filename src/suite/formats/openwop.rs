//! OpenWOP AgentEvalSuite (RFC 0081): validated with its schema's exact patterns and bounds
//! plus the checks the schema leaves out, then turned into native tasks.
//!
//! `expected.match` strategies: `exact` → `equals` (a non-string value → `json` equals),
//! `contains` → `contains`, `json-match` → `json` deep equality (key order ignored);
//! `rubric` → a `rubric` judge with the same weights. `input`: a string is the prompt, an
//! object with `messages` the conversation, anything else its JSON text.

use std::collections::HashSet;
use std::sync::LazyLock;

use serde_json::{Value, json};

use super::native_text::{literal, placeholder_model};
use super::{ConvertCx, Converted, ForeignFormat, Origin, Problems, Unrunnable};

pub struct OpenWop;

impl ForeignFormat for OpenWop {
    fn name(&self) -> &'static str {
        "OpenWOP AgentEvalSuite"
    }

    fn import_name(&self) -> &'static str {
        "openwop"
    }

    fn detect(&self, doc: &Value) -> bool {
        doc.get("suiteId").is_some() && doc.pointer("/tasks/0/expected/kind").is_some()
    }

    fn convert(&self, doc: &Value, cx: &ConvertCx) -> Result<Converted, Problems> {
        convert(doc, cx)
    }

    fn unrunnable(&self, doc: &Value) -> Option<Unrunnable> {
        validate(doc).is_empty().then_some(Unrunnable {
            why: "this OpenWOP AgentEvalSuite does not say how to run the agent under test",
            import_keys: "agent: NAME",
        })
    }
}

static SCHEMA: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let schema: Value = serde_json::from_str(include_str!("openwop-agent-eval-suite.schema.json")).expect("valid JSON");
    jsonschema::validator_for(&schema).expect("a valid schema")
});

/// Every problem, as `(JSON pointer, message)`.
fn validate(doc: &Value) -> Problems {
    let mut problems: Problems =
        SCHEMA.iter_errors(doc).map(|e| (e.instance_path().to_string(), e.to_string())).collect();
    let mut seen = HashSet::new();
    for (i, task) in doc.get("tasks").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let at = format!("/tasks/{i}");
        if let Some(id) = task.get("taskId").and_then(Value::as_str)
            && !seen.insert(id.to_owned())
        {
            problems.push((format!("{at}/taskId"), format!("duplicate taskId `{id}`")));
        }
        match task.pointer("/expected/kind").and_then(Value::as_str) {
            Some("golden") if task.pointer("/expected/match").is_none() => {
                problems.push((format!("{at}/expected"), "a golden task needs `match`".into()));
            }
            Some("rubric") if task.pointer("/expected/rubric").and_then(Value::as_array).is_none_or(Vec::is_empty) => {
                problems.push((format!("{at}/expected"), "a rubric task needs a non-empty `rubric`".into()));
            }
            _ => {}
        }
        if task.pointer("/fixtures/memorySeed").and_then(Value::as_array).is_some_and(|m| !m.is_empty()) {
            problems.push((
                format!("{at}/fixtures/memorySeed"),
                "`memorySeed` is not supported: evalgate has no agent memory to seed".into(),
            ));
        }
    }
    problems
}

/// The native tasks of `doc`, each run by `agent`.
fn tasks(doc: &Value, agent: &str) -> Vec<Value> {
    doc.get("tasks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|t| {
            let mut task = json!({"id": t["taskId"], "agent": agent});
            match &t["input"] {
                Value::String(s) => task["prompt"] = json!(literal(s)),
                Value::Object(o) if o.get("messages").is_some_and(Value::is_array) => {
                    task["messages"] = Value::Array(
                        o["messages"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|m| json!({"role": m["role"], "content": literal(m["content"].as_str().unwrap_or_default())}))
                            .collect(),
                    );
                }
                other => task["prompt"] = json!(literal(&other.to_string())),
            }
            let expected = &t["expected"];
            let grader = match expected["kind"].as_str() {
                Some("rubric") => json!({
                    "type": "rubric",
                    "criteria": expected["rubric"].as_array().into_iter().flatten()
                        .map(|c| json!({"criterion": c["criterion"], "weight": c["weight"]})).collect::<Vec<_>>(),
                }),
                _ => {
                    let m = &expected["match"];
                    match (m["strategy"].as_str(), &m["value"]) {
                        (Some("exact"), Value::String(v)) => json!({"type": "equals", "value": literal(v)}),
                        (Some("contains"), Value::String(v)) => json!({"type": "contains", "value": literal(v)}),
                        (Some("contains"), v) => json!({"type": "contains", "value": literal(&v.to_string())}),
                        (_, v) => json!({"type": "json", "equals": v}),
                    }
                }
            };
            task["grade"] = json!([grader]);
            if let Some(responses) = tool_responses(t) {
                // Canned tool results for a model agent's tool-calling loop.
                task["level"] = json!("scenario");
                task["fixtures"] = json!({"tool_responses": responses});
            }
            task
        })
        .collect()
}

/// `fixtures.toolResponses` in native names, when there are any.
fn tool_responses(task: &Value) -> Option<Vec<Value>> {
    let list = task.pointer("/fixtures/toolResponses").and_then(Value::as_array).filter(|r| !r.is_empty())?;
    Some(
        list.iter()
            .map(|r| json!({"tool": r["tool"], "response": r.get("response").cloned().unwrap_or(Value::Null)}))
            .collect(),
    )
}

/// `thresholds` in native names.
fn thresholds(doc: &Value) -> Option<Value> {
    let t = doc.get("thresholds")?;
    let mut out = serde_json::Map::new();
    for (from, to) in
        [("passScore", "pass_score"), ("maxCostUsd", "max_cost_usd"), ("maxP95LatencyMs", "max_p95_latency_ms")]
    {
        if let Some(v) = t.get(from) {
            out.insert(to.into(), v.clone());
        }
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

/// The native suite: the tasks run by the importing suite's agent, or by a placeholder
/// command agent to point at yours when the file is converted on its own.
fn convert(doc: &Value, cx: &ConvertCx) -> Result<Converted, Problems> {
    let problems = validate(doc);
    if !problems.is_empty() {
        return Err(problems);
    }
    let with_fixtures: Vec<usize> = doc["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, t)| tool_responses(t).map(|_| i))
        .collect();
    if let (Some(agent), false, Some(&i)) = (cx.agent, cx.model_agent, with_fixtures.first()) {
        return Err(vec![(
            format!("/tasks/{i}/fixtures/toolResponses"),
            format!(
                "tool-response fixtures stand in for a model agent's tool calls, and `{agent}` is not a model agent (`provider`, `model`)"
            ),
        )]);
    }
    let tasks = tasks(doc, cx.agent.unwrap_or("agent"));
    let mut suite = json!({"evalgate": 1, "suite": doc["suiteId"], "version": doc["version"], "modes": doc["modes"]});
    if cx.agent.is_none() {
        suite["agents"] = if with_fixtures.is_empty() {
            json!({"agent": {"command": ["./agent.sh", "{prompt}"]}})
        } else {
            // Fixtures need a model agent with the MCP servers whose tools they stand in for.
            let mut model = placeholder_model();
            model["mcp"] = json!([]);
            json!({"agent": model})
        };
    }
    if let Some(t) = thresholds(doc) {
        suite["thresholds"] = t;
    }
    if tasks.iter().any(|t| t["grade"][0]["type"] == "rubric") {
        suite["judge"] = placeholder_model();
    }
    let origins =
        (0..tasks.len()).map(|i| Origin { file: cx.file.to_owned(), at: format!("tasks[{i}]"), line: None }).collect();
    suite["tasks"] = Value::Array(tasks);
    Ok(Converted { suite, origins })
}
