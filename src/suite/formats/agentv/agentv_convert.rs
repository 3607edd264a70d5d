//! AgentV's `EVAL.yaml` turned into a native suite: the suite's keys, each test's input and
//! expected messages, the files they name, and what evalgate cannot run.

use serde_json::{Map, Value, json};

use super::super::native_text::{literal, placeholder_model, task_id};
use super::super::{ConvertCx, Converted, ForeignFormat, Problems, Unrunnable};
use super::agentv_conversation::{is_conversation, kinds, refuse_ungraded};
use super::agentv_input::{Files, agentv_messages, expected_messages, expected_text, messages, question};
use super::agentv_workspace::{self, HookContext, Merged};
use super::assertions::{Converter, TestData};
use crate::json::snake_case_deep;

pub struct AgentV;

impl ForeignFormat for AgentV {
    fn name(&self) -> &'static str {
        "AgentV EVAL.yaml"
    }

    fn import_name(&self) -> &'static str {
        "agentv"
    }

    fn detect(&self, doc: &Value) -> bool {
        TESTS.iter().any(|k| doc.pointer(k).is_some_and(|t| t.is_array() || t.is_string()))
            || (doc.get("scenarios").is_some_and(Value::is_array) && doc.get("providers").is_some())
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

/// Keys every assertion may carry besides its own (`id` is ignored by AgentV, and so here).
pub(super) const COMMON: [&str; 8] = ["type", "name", "weight", "required", "min_score", "negate", "metric", "id"];

/// Top-level keys only AgentV 5.x has (`eval-file.schema.ts` at HEAD).
const V5_KEYS: [&str; 9] = [
    "providers",
    "prompts",
    "scenarios",
    "environment",
    "default_test",
    "evaluate_options",
    "derived_metrics",
    "nunjucks_filters",
    "extensions",
];

/// A file written for AgentV 5.x: one of its top-level keys, a `script-grader`, or
/// `requires.agentv` asking for 5 or later.
fn v5_marker(doc: &Value) -> Option<String> {
    if let Some(key) = V5_KEYS.iter().find(|k| doc.get(**k).is_some()) {
        return Some(format!("its top-level `{key}`"));
    }
    if let Some(req) = doc.pointer("/requires/agentv").and_then(Value::as_str) {
        let major = req.trim_start_matches(|c: char| !c.is_ascii_digit()).split('.').next().unwrap_or_default();
        if major.parse::<u32>().is_ok_and(|m| m >= 5) {
            return Some(format!("`requires.agentv: {req}`"));
        }
    }
    let text = doc.to_string();
    text.contains("\"type\":\"script-grader\"").then(|| "its `script-grader` assertions".into())
}

/// A string anywhere in `v` that uses AgentV's `${{ VAR }}` environment interpolation.
fn env_interpolation(v: &Value, at: &str, problems: &mut Problems) {
    match v {
        Value::String(s) if s.contains("${{") => problems.push((
            at.into(),
            "AgentV's `${{ VAR }}` environment interpolation is not supported: write `{env.VAR}` in the converted suite".into(),
        )),
        Value::Array(list) => list.iter().enumerate().for_each(|(i, x)| env_interpolation(x, &format!("{at}/{i}"), problems)),
        Value::Object(map) => {
            map.iter().for_each(|(k, x)| env_interpolation(x, &format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), problems))
        }
        _ => {}
    }
}

/// AgentV's `interpolateTemplateVars`: `{{ name }}` (or `{{ a.b }}`) in a test's strings
/// is its `vars` value; a string that is only a reference takes the value itself; an
/// unknown name stays as written.
fn interpolate(v: &Value, vars: &Map<String, Value>) -> Value {
    static VAR: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}").expect("valid"));
    let lookup = |name: &str| {
        let mut parts = name.split('.');
        let first = vars.get(parts.next()?)?;
        parts.try_fold(first, |cur, p| cur.as_object()?.get(p))
    };
    match v {
        Value::String(s) => {
            if let Some(c) = VAR.captures(s).filter(|c| c[0].len() == s.trim().len() && s.trim() == s)
                && let Some(value) = lookup(&c[1])
            {
                return value.clone();
            }
            let out = VAR.replace_all(s, |c: &regex::Captures| match lookup(&c[1]) {
                Some(Value::String(t)) => t.clone(),
                Some(other) => other.to_string(),
                None => c[0].to_owned(),
            });
            Value::String(out.into_owned())
        }
        Value::Array(list) => Value::Array(list.iter().map(|x| interpolate(x, vars)).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, x)| (k.clone(), interpolate(x, vars))).collect()),
        other => other.clone(),
    }
}

/// A test with its `vars` applied where AgentV applies them.
fn with_vars(test: &Value) -> Value {
    let Some(vars) = test.get("vars").and_then(Value::as_object) else { return test.clone() };
    let mut t = test.clone();
    for key in ["input", "criteria", "expected_outcome", "expected_output", "input_files", "turns"] {
        if let Some(v) = test.get(key) {
            t[key] = interpolate(v, vars);
        }
    }
    t
}

/// What every test of the file shares: the suite-level keys a task is built from.
struct Shared<'d> {
    doc: &'d Value,
    agent: &'d str,
    /// `execution.trials` as `(repeat, min_pass)`.
    trials: Option<(u64, u64)>,
    /// The suite-level assertions, and the pointer they are at.
    assertions: Option<&'d Vec<Value>>,
    assertions_at: &'static str,
    metadata: Option<&'d Map<String, Value>>,
    files: Files<'d>,
}

fn convert(doc: &Value, cx: &ConvertCx) -> Result<Converted, Problems> {
    if let Some(marker) = v5_marker(doc) {
        return Err(vec![(
            String::new(),
            format!(
                "AgentV 5.x is not supported (4.x is): this file is a 5.x eval, by {marker}; write it in the 4.x format (AgentV v4.42.4) or run it with AgentV"
            ),
        )]);
    }
    let mut problems = Problems::new();
    env_interpolation(doc, "", &mut problems);
    let (tests_at, tests) = spelled(doc, TESTS).unwrap_or(("/tests", &Value::Null));
    let cases = super::cases::cases(tests, tests_at, cx.file, &mut problems);
    let workspace = doc.get("workspace").unwrap_or(&Value::Null);
    unsupported_suite_keys(doc, workspace, &mut problems);
    let trials = trials(doc, &mut problems);
    let (assertions_at, assertions) =
        spelled(doc, &["/assertions", "/assert"]).unwrap_or(("/assertions", &Value::Null));
    let dir = cx.file.parent().unwrap_or(std::path::Path::new(""));
    let shared = Shared {
        doc,
        agent: cx.agent.unwrap_or("agent"),
        trials,
        assertions: assertions.as_array(),
        assertions_at,
        metadata: doc.get("metadata").and_then(Value::as_object),
        files: Files { dir, embed: cx.model_agent },
    };

    let mut cv = Converter {
        rel_dir: &cx.rel_dir,
        dir,
        problems,
        judged: false,
        threshold: THRESHOLD,
        test: TestData::default(),
    };
    let mut tasks = Vec::new();
    let mut origins = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for case in cases {
        let t = &with_vars(&case.test);
        let Some(id) = t.get("id").and_then(Value::as_str) else {
            cv.problems.push((format!("{}/id", case.at), "a test needs `id`".into()));
            continue;
        };
        if !seen.insert(id.to_owned()) {
            cv.problems.push((format!("{}/id", case.at), format!("duplicate id `{id}`")));
        }
        tasks.push(shared.task(&case, t, id, &mut cv));
        origins.push(case.origin);
    }
    if !cv.problems.is_empty() {
        // Suite-level assertions are converted once per test: report each problem once.
        let mut seen = std::collections::HashSet::new();
        cv.problems.retain(|p| seen.insert(p.clone()));
        return Err(cv.problems);
    }
    let mut suite = suite(doc, cx, workspace, cv.judged);
    suite["tasks"] = Value::Array(tasks);
    Ok(Converted { suite, origins })
}

/// The file-level keys evalgate has no counterpart for.
fn unsupported_suite_keys(doc: &Value, workspace: &Value, problems: &mut Problems) {
    unsupported_workspace_keys(workspace, "/workspace", problems);
    for key in ["imports", "preprocessors", "input_files"] {
        if doc.get(key).is_some() {
            problems.push((format!("/{key}"), format!("`{key}` is not supported")));
        }
    }
}

/// The keys of a `workspace` (the file's or a test's, at `at`) evalgate's per-trial
/// workspace has no counterpart for.
fn unsupported_workspace_keys(workspace: &Value, at: &str, problems: &mut Problems) {
    if workspace.is_string() {
        problems.push((at.into(), "an external workspace file is not supported; inline the workspace".into()));
    }
    let why = [
        ("docker", "evalgate's workspaces are directories, not containers"),
        ("path", "every trial gets a fresh workspace, never a static one"),
        ("scope", "not an AgentV 4.42.4 workspace key"),
    ];
    for (key, why) in why {
        if workspace.get(key).is_some() {
            problems.push((format!("{at}/{key}"), format!("`workspace.{key}` is not supported: {why}")));
        }
    }
    if workspace.get("mode").and_then(Value::as_str) == Some("static") {
        problems.push((
            format!("{at}/mode"),
            "a static workspace is not supported: every trial gets a fresh workspace".into(),
        ));
    }
}

/// The test-level keys evalgate has no counterpart for.
fn unsupported_test_keys(t: &Value, at: &str, problems: &mut Problems) {
    if let Some(workspace) = t.get("workspace") {
        unsupported_workspace_keys(workspace, &format!("{at}/workspace"), problems);
    }
    for key in ["input_files", "depends_on"] {
        if t.get(key).is_some() {
            problems.push((format!("{at}/{key}"), format!("`{key}` is not supported")));
        }
    }
}

impl Shared<'_> {
    /// The native task of one test (`t`: the test with its `vars` filled in).
    fn task(&self, case: &super::cases::Case, t: &Value, id: &str, cv: &mut Converter) -> Value {
        let at = &case.at;
        unsupported_test_keys(t, at, &mut cv.problems);
        // The file's `execution.threshold` is AgentV's summary and exit code only
        // (`resolvedThreshold` in its `eval run`): each test passes at its own, else at 0.8.
        let threshold = t.pointer("/execution/threshold").and_then(Value::as_f64).unwrap_or(THRESHOLD);
        cv.threshold = threshold;
        let skip_defaults = t.pointer("/execution/skip_defaults").and_then(Value::as_bool) == Some(true);
        let mut task = json!({"id": task_id(id), "agent": self.agent});
        let vars = case.test.get("vars").and_then(Value::as_object);
        let shared_input = match (skip_defaults, self.doc.get("input")) {
            (false, Some(i)) => Some(vars.map_or_else(|| i.clone(), |v| interpolate(i, v))),
            _ => None,
        };
        self.input(&mut task, shared_input.as_ref(), t, at, cv);
        let criteria = t.get("criteria").or_else(|| t.get("expected_outcome")).and_then(Value::as_str);
        cv.test = self.test_data(shared_input.as_ref(), t, criteria);
        let conversation = is_conversation(t);
        if conversation {
            // The test's input opens AgentV's history (and its transcript), as the task's
            // opening `messages`; its `cli` target never sees it. Its assertions grade the
            // whole transcript.
            let fields = task.as_object_mut().expect("an object");
            if let Some(prompt) = fields.remove("prompt") {
                fields.insert("messages".into(), json!([{"role": "user", "content": prompt}]));
            }
            let turns = super::agentv_conversation::conversation(t, at, criteria, threshold, cv);
            task.as_object_mut().expect("an object").extend(turns.as_object().cloned().unwrap_or_default());
            if let (false, Some(list)) = (skip_defaults, self.assertions) {
                kinds(list, self.assertions_at, false, cv);
            }
        }
        task["grade"] = Value::Array(self.graders(t, at, criteria, skip_defaults, conversation, cv));
        if conversation {
            refuse_ungraded(&task, at, cv);
        }
        task["threshold"] = json!(threshold);
        if let Some((count, min_pass)) = self.trials {
            task["repeat"] = json!(count);
            task["min_pass"] = json!(min_pass);
        }
        let workspace = self.doc.get("workspace").unwrap_or(&Value::Null);
        if let Some(merged) = Merged::of(workspace, t.get("workspace"), at) {
            let cx = HookContext {
                test_id: id,
                case_input: question(&cv.test.input),
                case_metadata: cv.test.metadata.clone(),
                rel_dir: cv.rel_dir,
            };
            task["workspace"] = agentv_workspace::native(&merged, &cx, &mut cv.problems);
            // AgentV runs `after_each` before its graders, given the workspace; here it is
            // a cleanup step, after them, in the eval file's directory.
            if let Some(step) = merged.hook("after_each").and_then(|(hook, _)| super::hooks::step(hook, cv.rel_dir)) {
                task["cleanup"] = json!([step]);
            }
        }
        task
    }

    /// The task's `prompt` (one user message) or `messages`: the shared input, then the test's.
    fn input(&self, task: &mut Value, shared_input: Option<&Value>, t: &Value, at: &str, cv: &mut Converter) {
        let mut input = match shared_input {
            Some(i) => messages(i, "/input", &self.files, &mut cv.problems),
            None => Vec::new(),
        };
        match t.get("input") {
            Some(i) => input.extend(messages(i, &format!("{at}/input"), &self.files, &mut cv.problems)),
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
    }

    /// What AgentV's code graders read of the test (snake_case, as AgentV sends it).
    fn test_data(&self, shared_input: Option<&Value>, t: &Value, criteria: Option<&str>) -> TestData {
        let mut input: Vec<Value> = shared_input.into_iter().flat_map(agentv_messages).collect();
        input.extend(t.get("input").map(agentv_messages).unwrap_or_default());
        let metadata = match (self.metadata, t.get("metadata").and_then(Value::as_object)) {
            (None, None) => Value::Null,
            (a, b) => Value::Object(a.into_iter().chain(b).flatten().map(|(k, v)| (k.clone(), v.clone())).collect()),
        };
        TestData {
            criteria: criteria.unwrap_or_default().to_owned(),
            // AgentV shows the reference to its judge with file blocks embedded.
            reference: t
                .get("expected_output")
                .map(|e| expected_text(e, &Files { dir: self.files.dir, embed: true }))
                .filter(|r| !r.trim().is_empty()),
            input: snake_case_deep(Value::Array(input)),
            expected_output: snake_case_deep(
                t.get("expected_output").map_or(json!([]), |e| json!(expected_messages(e))),
            ),
            metadata: snake_case_deep(metadata),
        }
    }

    /// The test's graders: its assertions and rubrics, else AgentV's implicit judge; then
    /// the suite-level assertions unless it skips them.
    /// A conversation's (`conversation`) are those of the whole transcript, and it has no
    /// implicit judge.
    fn graders(
        &self,
        t: &Value,
        at: &str,
        criteria: Option<&str>,
        skip_defaults: bool,
        conversation: bool,
        cv: &mut Converter,
    ) -> Vec<Value> {
        let own = spelled(t, ASSERTIONS);
        let mut grade = match own {
            Some((key, list)) => match list.as_array() {
                Some(list) => cv.assertions(list, &format!("{at}{key}"), criteria),
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
        let inherits = !skip_defaults && self.assertions.is_some();
        if own.is_none() && t.get("rubrics").is_none() && !inherits && !conversation {
            grade.extend(implicit_judge(criteria, at, cv));
        }
        if let (false, Some(list)) = (skip_defaults, self.assertions) {
            // Per test: an LLM or code grader among them gets this test's `criteria`.
            grade.extend(cv.assertions(list, self.assertions_at, criteria));
        }
        grade
    }
}

/// AgentV's implicit grader for a test without assertions: an LLM judges the answer against
/// `criteria`, else against `expected_output`.
fn implicit_judge(criteria: Option<&str>, at: &str, cv: &mut Converter) -> Option<Value> {
    match (criteria, cv.test.reference.is_some()) {
        (Some(c), _) => Some(cv.freeform(c, None, "criteria")),
        // AgentV's grader on empty criteria, shown `expected_output` as the reference.
        (None, true) => Some(cv.freeform("", None, "expected_output")),
        (None, false) => {
            cv.problems.push((at.to_owned(), "a test needs `criteria`, `expected_output` or `assertions`".into()));
            None
        }
    }
}

/// The native suite around the tasks: its name, description, preflight requirements, hooks
/// and, when the import names no agent, the placeholder agent (and judge).
fn suite(doc: &Value, cx: &ConvertCx, workspace: &Value, judged: bool) -> Value {
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
    // AgentV runs `after_all` once, in its shared workspace (with `isolation: per_test`,
    // never); here once, in the eval file's directory.
    let enabled = workspace.pointer("/hooks/enabled").and_then(Value::as_bool) != Some(false);
    if let Some(step) =
        workspace.pointer("/hooks/after_all").filter(|_| enabled).and_then(|h| super::hooks::step(h, &cx.rel_dir))
    {
        suite["hooks"] = json!({"after_all": [step]});
    }
    if cx.agent.is_none() {
        suite["agents"] = json!({"agent": {"command": ["./agent.sh", "{prompt}"]}});
        if judged {
            suite["judge"] = placeholder_model();
        }
    }
    suite
}

/// `execution.trials` as `(repeat, min_pass)`: AgentV's default strategy `pass_at_k` passes
/// a test when one of `count` trials passes.
fn trials(doc: &Value, problems: &mut Problems) -> Option<(u64, u64)> {
    let trials = doc.pointer("/execution/trials")?;
    let at = "/execution/trials";
    let Some(count) = trials.get("count").and_then(Value::as_u64).filter(|c| *c >= 1) else {
        problems.push((format!("{at}/count"), "`trials.count` must be a whole number of 1 or more".into()));
        return None;
    };
    match trials.get("strategy").and_then(Value::as_str).unwrap_or("pass_at_k") {
        "pass_at_k" => {}
        other => {
            problems.push((
                format!("{at}/strategy"),
                format!("trial strategy `{other}` is not supported (pass_at_k is: `repeat` with `min_pass: 1`)"),
            ));
            return None;
        }
    }
    for key in ["cost_limit_usd", "costLimitUsd"] {
        if trials.get(key).is_some() {
            problems.push((format!("{at}/{key}"), "a trials cost limit is not supported".into()));
        }
    }
    Some((count, 1))
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
