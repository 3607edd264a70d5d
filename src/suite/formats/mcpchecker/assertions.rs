//! A task set's `assertions` (tools used and not used, call counts and order) as tool graders.

use serde_json::{Value, json};

use crate::suite::formats::Problems;

/// A task set's assertions as tool graders.
pub(super) fn assertions(a: &Value, at: &str, problems: &mut Problems) -> Vec<Value> {
    let selector = |s: &Value| {
        let mut out = json!({});
        selector_into(s, &mut out);
        out
    };
    fn selector_into(s: &Value, out: &mut Value) {
        for (from, to) in [("server", "server"), ("tool", "tool"), ("toolPattern", "pattern")] {
            if let Some(v) = s.get(from) {
                out[to] = v.clone();
            }
        }
    }
    let list = |key: &str| a.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
    let mut graders = Vec::new();
    for s in list("toolsUsed") {
        let mut g = json!({"type": "tool_called", "name": "toolsUsed"});
        selector_into(&s, &mut g);
        graders.push(g);
    }
    if a.get("requireAny").is_some() {
        let tools: Vec<Value> = list("requireAny").iter().map(selector).collect();
        graders.push(json!({"type": "tool_calls", "name": "requireAny", "tools": tools, "min": 1}));
    }
    for s in list("toolsNotUsed") {
        let mut g = json!({"type": "tool_not_called", "name": "toolsNotUsed"});
        selector_into(&s, &mut g);
        graders.push(g);
    }
    for (key, bound) in [("minToolCalls", "min"), ("maxToolCalls", "max")] {
        if let Some(n) = a.get(key) {
            graders.push(json!({"type": "tool_calls", "name": key, bound: n}));
        }
    }
    if a.get("callOrder").is_some() {
        let mut tools = Vec::new();
        for (i, c) in list("callOrder").iter().enumerate() {
            if c.get("type").and_then(Value::as_str).unwrap_or("tool") != "tool" {
                problems.push((
                    format!("{at}/callOrder/{i}/type"),
                    "only tool calls are recorded; resource and prompt order cannot be checked".into(),
                ));
                continue;
            }
            tools.push(json!({"server": c["server"], "tool": c["name"]}));
        }
        graders.push(json!({"type": "tool_sequence", "name": "callOrder", "tools": tools}));
    }
    if a.get("noDuplicateCalls").and_then(Value::as_bool) == Some(true) {
        graders.push(json!({"type": "tool_calls", "name": "noDuplicateCalls", "unique": true}));
    }
    for key in ["resourcesRead", "resourcesNotRead", "promptsUsed", "promptsNotUsed", "skillsLoaded", "skillsNotLoaded"]
    {
        if a.get(key).is_some() {
            problems
                .push((format!("{at}/{key}"), format!("`{key}` is not supported: evalgate records tool calls only")));
        }
    }
    graders
}
