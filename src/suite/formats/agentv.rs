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

use serde_json::{Map, Value, json};

use super::native_text::{literal, placeholder_model, task_id};
use super::{ConvertCx, Converted, ForeignFormat, Origin, Problems, Unrunnable};

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

#[derive(Clone, Default)]
struct Hooks {
    before_all: Option<Value>,
    after_all: Option<Value>,
    before_each: Option<Value>,
    after_each: Option<Value>,
}

impl Hooks {
    fn read(raw: Option<&Value>, at: &str, rel_dir: &std::path::Path, problems: &mut Problems) -> Hooks {
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

struct Converter<'a> {
    rel_dir: &'a std::path::Path,
    problems: Problems,
    /// Whether any grader needs the judge.
    judged: bool,
}

impl Converter<'_> {
    /// Native graders for AgentV assertions; plain strings together form one rubric.
    fn assertions(&mut self, list: &[Value], at: &str, criteria: Option<&str>, test: &Value) -> Vec<Value> {
        let mut graders = Vec::new();
        let mut shorthand = Vec::new();
        for (i, a) in list.iter().enumerate() {
            let at = format!("{at}/{i}");
            match a {
                Value::String(text) => shorthand.push(json!({"criterion": literal(text), "weight": 1.0})),
                Value::Object(_) => graders.extend(self.assertion(a, &at, criteria, test)),
                _ => self.problems.push((at, "expected a string or an assertion object".into())),
            }
        }
        if !shorthand.is_empty() {
            // As in AgentV, the strings weigh as one assertion each.
            let mut judge = self.judge(&shorthand, "assertions");
            if shorthand.len() > 1 {
                judge["weight"] = json!(shorthand.len());
            }
            graders.push(judge);
        }
        graders
    }

    fn judge(&mut self, criteria: &[Value], name: &str) -> Value {
        self.judged = true;
        json!({"type": "rubric", "name": name, "criteria": criteria})
    }

    fn assertion(&mut self, a: &Value, at: &str, criteria: Option<&str>, test: &Value) -> Vec<Value> {
        let kind = a.get("type").and_then(Value::as_str).unwrap_or_default().replace('_', "-");
        let value = a.get("value");
        let text = || value.and_then(Value::as_str).map(literal);
        let list = || {
            value
                .and_then(Value::as_array)
                .map(|l| l.iter().map(|v| literal(v.as_str().unwrap_or_default())).collect::<Vec<_>>())
        };
        let ignore_case = kind.starts_with("icontains");
        let (grader, own): (Option<Value>, &[&str]) = match kind.as_str() {
            "contains" | "icontains" => {
                (text().map(|v| json!({"type": "contains", "value": v, "ignore_case": ignore_case})), &["value"])
            }
            "contains-any" | "icontains-any" => {
                (list().map(|v| json!({"type": "contains", "any": v, "ignore_case": ignore_case})), &["value"])
            }
            "contains-all" | "icontains-all" => {
                (list().map(|v| json!({"type": "contains", "all": v, "ignore_case": ignore_case})), &["value"])
            }
            "starts-with" => (text().map(|v| json!({"type": "starts_with", "value": v})), &["value"]),
            "ends-with" => (text().map(|v| json!({"type": "ends_with", "value": v})), &["value"]),
            "equals" => (text().map(|v| json!({"type": "equals", "value": v})), &["value"]),
            "regex" => {
                let flags = a.get("flags").and_then(Value::as_str).unwrap_or_default();
                let pattern = value
                    .and_then(Value::as_str)
                    .map(|p| if flags.contains('i') { format!("(?i){p}") } else { p.to_owned() });
                (pattern.map(|p| json!({"type": "regex", "pattern": p})), &["value", "flags"])
            }
            "is-json" => (Some(json!({"type": "json_schema", "schema": {}})), &[]),
            "code-grader" | "script" => (self.code_grader(a, at, criteria, test), &["command", "script", "cwd"]),
            "llm-grader" => {
                if a.get("prompt").is_some() {
                    self.problems.push((
                        format!("{at}/prompt"),
                        "custom grader prompts are not supported; the judge checks `criteria`".into(),
                    ));
                    return Vec::new();
                }
                match criteria {
                    Some(c) => {
                        (Some(self.judge(&[json!({"criterion": literal(c), "weight": 1.0})], "llm-grader")), &[])
                    }
                    None => {
                        self.problems.push((
                            at.to_owned(),
                            "an `llm-grader` judges the test's `criteria`, and this test has none".into(),
                        ));
                        return Vec::new();
                    }
                }
            }
            "rubrics" => {
                let items = a.get("criteria").and_then(Value::as_array).cloned().unwrap_or_default();
                return self.rubric(&items, &format!("{at}/criteria"), a);
            }
            "latency" => (
                a.get("threshold").or_else(|| a.get("max_ms")).map(|ms| json!({"type": "latency", "max_ms": ms})),
                &["threshold", "max_ms"],
            ),
            "cost" => (
                a.get("budget").or_else(|| a.get("max_usd")).map(|usd| json!({"type": "cost", "max_usd": usd})),
                &["budget", "max_usd"],
            ),
            "token-usage" => {
                let mut g = json!({"type": "tokens"});
                for (from, alias, to) in [
                    ("max_total", "max_total_tokens", "max_total"),
                    ("max_input", "max_input_tokens", "max_input"),
                    ("max_output", "max_output_tokens", "max_output"),
                ] {
                    if let Some(v) = a.get(from).or_else(|| a.get(alias)) {
                        g[to] = v.clone();
                    }
                }
                (
                    Some(g),
                    &[
                        "max_total",
                        "max_input",
                        "max_output",
                        "max_total_tokens",
                        "max_input_tokens",
                        "max_output_tokens",
                    ],
                )
            }
            "tool-trajectory" => (self.trajectory(a, at), &["mode", "minimums", "expected"]),
            "" => {
                self.problems.push((format!("{at}/type"), "an assertion needs `type`".into()));
                return Vec::new();
            }
            other => {
                self.problems.push((format!("{at}/type"), format!("assertion type `{other}` is not supported")));
                return Vec::new();
            }
        };
        let graders = match grader {
            // No native grader is a list: a list is several sharing the assertion.
            Some(Value::Array(many)) => many,
            Some(one) => vec![one],
            None => {
                if !self.problems.iter().any(|(p, _)| p.starts_with(at)) {
                    self.problems.push((at.to_owned(), format!("a `{kind}` assertion is missing its value")));
                }
                return Vec::new();
            }
        };
        for key in a.as_object().into_iter().flatten().map(|(k, _)| k.as_str()) {
            if !COMMON.contains(&key) && !own.contains(&key) {
                self.problems
                    .push((format!("{at}/{key}"), format!("`{key}` is not supported on a `{kind}` assertion")));
            }
        }
        let share = graders.len() as f64;
        graders
            .into_iter()
            .map(|mut g| {
                self.common(a, &mut g, at);
                let weight = a.get("weight").and_then(Value::as_f64).unwrap_or(1.0);
                if share > 1.0 {
                    g["weight"] = json!(weight / share);
                }
                g
            })
            .collect()
    }

    /// `name`, `weight`, `required` (a number is read as `true`) and `negate`.
    fn common(&mut self, a: &Value, grader: &mut Value, at: &str) {
        if let Some(n) = a.get("name").or_else(|| a.get("metric")) {
            grader["name"] = n.clone();
        }
        if let Some(w) = a.get("weight") {
            grader["weight"] = w.clone();
        }
        match a.get("required") {
            Some(Value::Bool(b)) => grader["required"] = json!(b),
            Some(Value::Number(_)) => grader["required"] = json!(true),
            Some(_) => self.problems.push((format!("{at}/required"), "expected a boolean or a score".into())),
            None => {}
        }
        if a.get("negate").and_then(Value::as_bool) == Some(true) {
            grader["negate"] = json!(true);
        }
    }

    /// `rubrics` items `{id, outcome, weight}` as one rubric judge.
    fn rubric(&mut self, items: &[Value], at: &str, assertion: &Value) -> Vec<Value> {
        let mut criteria = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let text =
                item.get("outcome").or_else(|| item.get("criteria")).and_then(Value::as_str).or_else(|| item.as_str());
            match text {
                Some(t) => criteria.push(json!({"criterion": literal(t), "weight": item.get("weight").and_then(Value::as_f64).unwrap_or(1.0)})),
                None => self.problems.push((format!("{at}/{i}"), "a rubric item needs `outcome`".into())),
            }
            if item.get("score_ranges").is_some() {
                self.problems.push((format!("{at}/{i}/score_ranges"), "score-range rubrics are not supported".into()));
            }
        }
        if criteria.is_empty() {
            self.problems.push((at.to_owned(), "a rubric needs at least one item".into()));
            return Vec::new();
        }
        let mut grader = self.judge(&criteria, "rubrics");
        self.common(assertion, &mut grader, at);
        vec![grader]
    }

    /// A code grader: AgentV's stdin fields ride along in the context.
    fn code_grader(&mut self, a: &Value, at: &str, criteria: Option<&str>, test: &Value) -> Option<Value> {
        let run = match a.get("command").or_else(|| a.get("script")) {
            Some(Value::String(s)) => json!(literal(s)),
            Some(Value::Array(argv)) => {
                json!(argv.iter().map(|x| literal(x.as_str().unwrap_or_default())).collect::<Vec<_>>())
            }
            _ => {
                self.problems.push((format!("{at}/command"), "a code grader needs `command`".into()));
                return None;
            }
        };
        let cwd = a.get("cwd").and_then(Value::as_str).unwrap_or("");
        let dir = if cwd.is_empty() { self.rel_dir.to_owned() } else { self.rel_dir.join(cwd) };
        // Problems with the input are reported where the test is converted.
        let input = test.get("input").map(|i| messages(i, "", &mut Problems::new())).unwrap_or_default();
        let expected = test.get("expected_output").map(|e| json!([{"role": "assistant", "content": expected_text(e)}]));
        let context = json!({"criteria": criteria.unwrap_or_default(), "input": input, "expected_output": expected.unwrap_or(json!([]))});
        let mut grader = json!({"type": "command", "run": run, "context": context});
        if !dir.as_os_str().is_empty() {
            grader["workdir"] = json!(dir);
        }
        Some(grader)
    }

    /// `tool-trajectory`: `any_order` with `minimums`, or `expected` in order / exactly.
    fn trajectory(&mut self, a: &Value, at: &str) -> Option<Value> {
        let mode = a.get("mode").and_then(Value::as_str).unwrap_or("any_order");
        let expected = a.get("expected").and_then(Value::as_array);
        if let Some(minimums) = a.get("minimums").and_then(Value::as_object) {
            if mode != "any_order" {
                self.problems.push((format!("{at}/minimums"), "`minimums` go with `mode: any_order`".into()));
                return None;
            }
            // One `tool_called` per tool (a list: they share the assertion's weight, so the
            // score is the share of tools that met their minimum, as in AgentV).
            let graders = minimums.iter().map(|(tool, n)| json!({"type": "tool_called", "tool": tool, "min": n}));
            return Some(Value::Array(graders.collect()));
        }
        let Some(expected) = expected else {
            self.problems.push((at.to_owned(), "a `tool-trajectory` needs `minimums` or `expected`".into()));
            return None;
        };
        let order = match mode {
            "in_order" => "in_order",
            "exact" => "exact",
            "any_order" => "any_order",
            other => {
                self.problems.push((
                    format!("{at}/mode"),
                    format!("mode `{other}` is not supported (any_order, in_order, exact)"),
                ));
                return None;
            }
        };
        let mut tools = Vec::new();
        for (i, e) in expected.iter().enumerate() {
            let item_at = format!("{at}/expected/{i}");
            if e.get("max_duration_ms").or_else(|| e.get("maxDurationMs")).is_some() {
                self.problems.push((format!("{item_at}/max_duration_ms"), "per-tool latency is not supported".into()));
            }
            if e.get("args_match").or_else(|| e.get("argsMatch")).is_some() {
                self.problems.push((
                    format!("{item_at}/args_match"),
                    "`args_match` is not supported (arguments match as a subset)".into(),
                ));
            }
            let tool = e.get("tool").and_then(Value::as_str).unwrap_or_default();
            match e.get("args") {
                Some(args) if args.is_object() => tools.push(json!({"tool": tool, "arguments": args})),
                _ => tools.push(json!(tool)),
            }
        }
        Some(json!({"type": "tool_sequence", "order": order, "tools": tools}))
    }
}
