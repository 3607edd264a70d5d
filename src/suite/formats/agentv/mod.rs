//! AgentV `EVAL.yaml` (`tests:` with `criteria` / `assertions`), as a native suite run by the
//! importing suite's agent. Where AgentV and evalgate differ, the choice is in
//! docs/formats.md.
//!
//! - A test without `assertions` is judged on its `criteria` (AgentV's implicit LLM grader),
//!   else on `expected_output`; suite-level `assertions` and `input` apply to every test
//!   unless its `execution.skip_defaults` is set.
//! - A test passes when its score reaches the threshold (`execution.threshold` / `threshold`,
//!   default 0.8, as in AgentV) and every `required` assertion passes.
//! - `workspace.env` → preflight; `workspace.hooks` → suite hooks (`*_all`) and task
//!   setup / cleanup (`*_each`).
//!
//! One file per job: this one reads the file and its tests; `hooks` the workspace hooks;
//! `assertions` turns assertions, rubrics, code graders and trajectories into graders.

use serde_json::{Map, Value, json};

mod assertions;
mod hooks;

use super::native_text::{literal, placeholder_model, task_id};
use super::{ConvertCx, Converted, ForeignFormat, Origin, Problems, Unrunnable};
use assertions::Converter;
use hooks::Hooks;

pub struct AgentV;

impl ForeignFormat for AgentV {
    fn name(&self) -> &'static str {
        "AgentV EVAL.yaml"
    }

    fn import_name(&self) -> &'static str {
        "agentv"
    }

    fn detect(&self, doc: &Value) -> bool {
        TESTS.iter().any(|k| doc.pointer(k).is_some_and(Value::is_array))
    }

    fn convert(&self, doc: &Value, cx: &ConvertCx) -> Result<Converted, Problems> {
        convert(doc, cx)
    }

    fn unrunnable(&self, _doc: &Value) -> Option<Unrunnable> {
        Some(Unrunnable {
            why: "an AgentV file names its target in .agentv/targets.yaml, which evalgate does not read",
            import_keys: "agent: NAME",
        })
    }
}

/// AgentV's default pass threshold.
const THRESHOLD: f64 = 0.8;

/// Keys every assertion may carry besides its own.
const COMMON: [&str; 6] = ["type", "name", "weight", "required", "negate", "metric"];

fn convert(doc: &Value, cx: &ConvertCx) -> Result<Converted, Problems> {
    let mut problems = Problems::new();
    let (tests_at, tests) = spelled(doc, TESTS).unwrap_or(("/tests", &Value::Null));
    let Some(tests) = tests.as_array() else {
        return Err(vec![(
            tests_at.into(),
            "`tests` must be a list of tests here (raw case files by path are not supported: inline them)".into(),
        )]);
    };
    let workspace = doc.get("workspace").unwrap_or(&Value::Null);
    if workspace.is_string() {
        problems
            .push(("/workspace".into(), "an external workspace file is not supported; inline the workspace".into()));
    }
    for key in ["template", "repos", "docker", "isolation", "scope", "path"] {
        if workspace.get(key).is_some() {
            problems.push((
                format!("/workspace/{key}"),
                format!("`workspace.{key}` is not supported: evalgate runs in the suite's directory"),
            ));
        }
    }
    for key in ["imports", "preprocessors", "input_files"] {
        if doc.get(key).is_some() {
            problems.push((format!("/{key}"), format!("`{key}` is not supported")));
        }
    }
    let hooks = Hooks::read(workspace.get("hooks"), "/workspace/hooks", &cx.rel_dir, &mut problems);
    let threshold = doc
        .pointer("/execution/threshold")
        .or_else(|| doc.get("threshold"))
        .and_then(Value::as_f64)
        .unwrap_or(THRESHOLD);
    let shared_input = match doc.get("input") {
        Some(input) => messages(input, "/input", &mut problems),
        None => Vec::new(),
    };
    let agent = cx.agent.unwrap_or("agent");

    let mut cv = Converter { rel_dir: &cx.rel_dir, problems, judged: false };
    let (shared_at, shared) = spelled(doc, &["/assertions", "/assert"]).unwrap_or(("/assertions", &Value::Null));
    let shared = shared.as_array();
    let mut tasks = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, t) in tests.iter().enumerate() {
        let at = format!("{tests_at}/{i}");
        let Some(id) = t.get("id").and_then(Value::as_str) else {
            cv.problems.push((format!("{at}/id"), "a test needs `id`".into()));
            continue;
        };
        if !seen.insert(id.to_owned()) {
            cv.problems.push((format!("{at}/id"), format!("duplicate id `{id}`")));
        }
        let skip_defaults = t.pointer("/execution/skip_defaults").and_then(Value::as_bool) == Some(true);
        let mut task = json!({"id": task_id(id), "agent": agent});
        let mut input = if skip_defaults { Vec::new() } else { shared_input.clone() };
        match t.get("input") {
            Some(i) => input.extend(messages(i, &format!("{at}/input"), &mut cv.problems)),
            None => cv.problems.push((format!("{at}/input"), "a test needs `input`".into())),
        }
        let text = |m: &Value| literal(m["content"].as_str().unwrap_or_default());
        match input.as_slice() {
            [only] if only["role"] == "user" => task["prompt"] = json!(text(only)),
            _ => {
                let list = input.iter().map(|m| json!({"role": m["role"], "content": text(m)}));
                task["messages"] = Value::Array(list.collect());
            }
        }
        let criteria = t.get("criteria").or_else(|| t.get("expected_outcome")).and_then(Value::as_str);
        let expected = t.get("expected_output").map(expected_text);
        let own = spelled(t, ASSERTIONS);
        let mut grade = match own {
            Some((key, list)) => match list.as_array() {
                Some(list) => cv.assertions(list, &format!("{at}{key}"), criteria, t),
                None => {
                    cv.problems.push((format!("{at}{key}"), "expected a list of assertions".into()));
                    Vec::new()
                }
            },
            None => Vec::new(),
        };
        if let Some(rubrics) = t.get("rubrics").and_then(Value::as_array) {
            grade.extend(cv.rubric(rubrics, &format!("{at}/rubrics"), &json!({"type": "rubrics"})));
        }
        let inherits = !skip_defaults && shared.is_some();
        if own.is_none() && t.get("rubrics").is_none() && !inherits {
            // AgentV's implicit grader: an LLM judges the answer against `criteria`.
            match (criteria, &expected) {
                (Some(c), _) => grade.push(cv.judge(&[json!({"criterion": literal(c), "weight": 1.0})], "criteria")),
                (None, Some(e)) => {
                    cv.judged = true;
                    grade.push(json!({"type": "llm", "name": "expected_output", "contains": literal(e)}));
                }
                (None, None) => {
                    cv.problems.push((at.clone(), "a test needs `criteria`, `expected_output` or `assertions`".into()))
                }
            }
        }
        if let (false, Some(list)) = (skip_defaults, shared) {
            // Per test: an LLM or code grader among them gets this test's `criteria`.
            grade.extend(cv.assertions(list, shared_at, criteria, t));
        }
        task["grade"] = Value::Array(grade);
        let test_threshold = t.pointer("/execution/threshold").and_then(Value::as_f64).unwrap_or(threshold);
        task["threshold"] = json!(test_threshold);
        let test_hooks = match t.pointer("/workspace/hooks") {
            Some(h) => Hooks::read(Some(h), &format!("{at}/workspace/hooks"), &cx.rel_dir, &mut cv.problems),
            None => hooks.clone(),
        };
        if let Some(step) = test_hooks.before_each {
            task["setup"] = json!([step]);
        }
        if let Some(step) = test_hooks.after_each {
            task["cleanup"] = json!([step]);
        }
        tasks.push(task);
    }
    if !cv.problems.is_empty() {
        // Suite-level assertions are converted once per test: report each problem once.
        let mut seen = std::collections::HashSet::new();
        cv.problems.retain(|p| seen.insert(p.clone()));
        return Err(cv.problems);
    }

    let name = doc.get("name").or_else(|| doc.get("suite")).and_then(Value::as_str);
    let stem = cx.file.file_name().and_then(|n| n.to_str()).unwrap_or("agentv").split('.').next().unwrap_or("agentv");
    let mut suite = json!({"evalgate": 1, "suite": task_id(name.unwrap_or(stem)).replace('_', "-")});
    if let Some(d) = doc.get("description").and_then(Value::as_str) {
        suite["description"] = json!(d);
    }
    let env = workspace.get("env").unwrap_or(&Value::Null);
    let mut requirements = Map::new();
    for key in ["required_commands", "required_python_modules"] {
        if let Some(list) = env.get(key).filter(|l| l.as_array().is_some_and(|l| !l.is_empty())) {
            requirements.insert(key.into(), list.clone());
        }
    }
    if !requirements.is_empty() {
        suite["env"] = Value::Object(requirements);
    }
    let mut suite_hooks = Map::new();
    if let Some(step) = hooks.before_all {
        suite_hooks.insert("before_all".into(), json!([step]));
    }
    if let Some(step) = hooks.after_all {
        suite_hooks.insert("after_all".into(), json!([step]));
    }
    if !suite_hooks.is_empty() {
        suite["hooks"] = Value::Object(suite_hooks);
    }
    if cx.agent.is_none() {
        suite["agents"] = json!({"agent": {"command": ["./agent.sh", "{prompt}"]}});
        if cv.judged {
            suite["judge"] = placeholder_model();
        }
    }
    let origins =
        (0..tasks.len()).map(|i| Origin { file: cx.file.to_owned(), at: format!("{}[{i}]", &tests_at[1..]) }).collect();
    suite["tasks"] = Value::Array(tasks);
    Ok(Converted { suite, origins })
}

/// Where the tests may be, AgentV's current key first; 4.x still reads the deprecated rest.
const TESTS: &[&str] = &["/tests", "/eval_cases", "/evalcases"];

/// Where assertions may be, AgentV's current key first; 4.x still reads the deprecated rest.
const ASSERTIONS: &[&str] = &["/assertions", "/assert", "/execution/evaluators", "/evaluators"];

/// The first of `pointers` that `v` has, and its value: AgentV 4.x reads deprecated
/// spellings of some keys, in this order of precedence.
fn spelled<'v>(v: &'v Value, pointers: &[&'static str]) -> Option<(&'static str, &'v Value)> {
    pointers.iter().find_map(|p| v.pointer(p).map(|found| (*p, found)))
}

/// `input` as messages `{role, content}`, the content as plain text (not yet a template).
fn messages(input: &Value, at: &str, problems: &mut Problems) -> Vec<Value> {
    let one = |role: &str, content: &str| json!({"role": role, "content": content});
    match input {
        Value::String(s) => vec![one("user", s)],
        Value::Array(list) => list
            .iter()
            .enumerate()
            .filter_map(|(i, m)| {
                let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
                match content_text(m.get("content").unwrap_or(&Value::Null)) {
                    Ok(text) => Some(one(role, &text)),
                    Err(e) => {
                        problems.push((format!("{at}/{i}/content"), e));
                        None
                    }
                }
            })
            .collect(),
        Value::Object(o) if o.contains_key("role") => messages(&Value::Array(vec![input.clone()]), at, problems),
        // An object without `role` is structured user content.
        other => vec![one("user", &other.to_string())],
    }
}

/// A message's content: a string, or text blocks (file blocks are not read).
fn content_text(content: &Value) -> Result<String, String> {
    match content {
        Value::String(s) => Ok(s.clone()),
        Value::Array(blocks) => {
            let mut parts = Vec::new();
            for b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => parts.push(
                        b.get("value").or_else(|| b.get("text")).and_then(Value::as_str).unwrap_or_default().to_owned(),
                    ),
                    other => return Err(format!("`{}` content blocks are not supported", other.unwrap_or("untyped"))),
                }
            }
            Ok(parts.join("\n"))
        }
        other => Ok(other.to_string()),
    }
}

/// `expected_output` as text: a string, the last message's content, or JSON.
fn expected_text(expected: &Value) -> String {
    match expected {
        Value::String(s) => s.clone(),
        Value::Array(list) => list.last().and_then(|m| content_text(&m["content"]).ok()).unwrap_or_default(),
        other => other.to_string(),
    }
}
