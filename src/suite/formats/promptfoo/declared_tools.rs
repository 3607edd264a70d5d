//! An OpenAI provider's `config.tools` and `config.tool_choice` as the model agent's
//! `declared_tools` and `tool_choice`: function tools offered, whose calls are the answer
//! (promptfoo runs none without `functionToolCallbacks`, which are not carried).

use serde_json::{Value, json};

use super::super::Problems;

/// The keys of a function evalgate carries (what promptfoo's assertion reads: the name and
/// the arguments' schema; the description the model is told).
const FUNCTION_KEYS: [&str; 3] = ["name", "description", "parameters"];

/// `tools` as `declared_tools`: each `{type: function, function: {name, description,
/// parameters}}` (and, for the Responses API, its flat form `{type: function, name, …}`,
/// as promptfoo's Responses provider takes both); anything else is refused at its index.
pub(super) fn tools(tools: &Value, responses: bool, at: &str, problems: &mut Problems) -> Option<Value> {
    let Some(list) = tools.as_array().filter(|l| !l.is_empty()) else {
        let why = match tools {
            Value::String(s) if s.starts_with("file://") => "`tools` from a file are not read yet: write them inline",
            _ => "`tools` is a list of OpenAI function tools",
        };
        problems.push((at.to_owned(), why.into()));
        return None;
    };
    let before = problems.len();
    let mut declared = Vec::new();
    for (i, tool) in list.iter().enumerate() {
        let at = format!("{at}/{i}");
        let function = match tool.get("function") {
            _ if tool.get("type").and_then(Value::as_str) != Some("function") => None,
            Some(Value::Object(f)) => Some((f, format!("{at}/function"), tool.as_object().map(|o| o.len()) == Some(2))),
            None if responses => tool.as_object().map(|o| (o, at.clone(), true)),
            _ => None,
        };
        let Some((function, function_at, alone)) = function else {
            let why = if responses {
                "a tool is `{type: function, function: {name, description, parameters}}` or `{type: function, name, description, parameters}`: built-in tools (web search, file search, MCP, …) are not run"
            } else {
                "a tool is `{type: function, function: {name, description, parameters}}`: other tools are not run"
            };
            problems.push((at, why.into()));
            continue;
        };
        if !alone {
            problems.push((at.clone(), "a tool has `type` and `function` only".into()));
        }
        for key in function.keys().filter(|k| *k != "type" && !FUNCTION_KEYS.contains(&k.as_str())) {
            problems.push((format!("{function_at}/{key}"), format!("the function key `{key}` is not carried")));
        }
        match function.get("name") {
            Some(Value::String(name)) if !name.is_empty() => {}
            _ => problems.push((format!("{function_at}/name"), "a function needs a `name`".into())),
        }
        if function.get("description").is_some_and(|d| !d.is_string()) {
            problems.push((format!("{function_at}/description"), "a function's `description` is text".into()));
        }
        if function.get("parameters").is_some_and(|p| !p.is_object()) {
            problems.push((format!("{function_at}/parameters"), "`parameters` is a JSON Schema object".into()));
        }
        // promptfoo renders the test's vars into `tools`; one agent serves every test.
        if function.values().any(|v| v.to_string().contains("{{") || v.to_string().contains("{%")) {
            problems.push((
                function_at.clone(),
                "a template in `tools` (rendered with each test's vars) is not supported".into(),
            ));
        }
        let mut tool = json!({"name": function.get("name").cloned().unwrap_or(Value::Null)});
        for key in ["description", "parameters"] {
            if let Some(v) = function.get(key) {
                tool[key] = v.clone();
            }
        }
        declared.push(tool);
    }
    (problems.len() == before).then_some(Value::Array(declared))
}

/// `tool_choice`: `auto`, `none`, `required`, or one function (`{type: function, function:
/// {name}}`, or the Responses API's `{type: function, name}`).
pub(super) fn choice(choice: &Value, at: &str, problems: &mut Problems) -> Option<Value> {
    let named = choice
        .pointer("/function/name")
        .or_else(|| choice.get("name"))
        .and_then(Value::as_str)
        .filter(|_| choice.get("type").and_then(Value::as_str) == Some("function"));
    match (choice, named) {
        (Value::String(s), _) if matches!(s.as_str(), "auto" | "none" | "required") => Some(choice.clone()),
        (_, Some(name)) => Some(json!({"name": name})),
        _ => {
            problems.push((
                at.to_owned(),
                "`tool_choice` is `auto`, `none`, `required` or `{type: function, function: {name: NAME}}`".into(),
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_tools_are_declared_and_anything_else_refused_at_its_index() {
        let mut problems = Problems::new();
        let chat = json!([{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}]);
        assert_eq!(
            tools(&chat, false, "/p", &mut problems),
            Some(json!([{"name": "f", "description": "d", "parameters": {"type": "object"}}]))
        );
        let flat = json!([{"type": "function", "name": "g"}]);
        assert_eq!(tools(&flat, true, "/p", &mut problems), Some(json!([{"name": "g"}])));
        assert!(problems.is_empty(), "{problems:?}");
        for (bad, at) in [
            (json!([{"type": "function", "name": "g"}]), "/p/0"),
            (json!([{"type": "web_search_preview"}]), "/p/0"),
            (json!([{"type": "function", "function": {"name": "f", "strict": true}}]), "/p/0/function/strict"),
            (json!([{"type": "function", "function": {"name": "f", "description": "{{x}}"}}]), "/p/0/function"),
            (json!("file://tools.json"), "/p"),
        ] {
            let mut problems = Problems::new();
            assert_eq!(tools(&bad, false, "/p", &mut problems), None, "{bad}");
            assert_eq!(problems[0].0, at, "{bad}: {problems:?}");
        }
        assert_eq!(
            choice(&json!({"type": "function", "function": {"name": "f"}}), "/c", &mut problems),
            Some(json!({"name": "f"}))
        );
        assert_eq!(choice(&json!("required"), "/c", &mut problems), Some(json!("required")));
        assert_eq!(choice(&json!("sometimes"), "/c", &mut problems), None);
    }
}
