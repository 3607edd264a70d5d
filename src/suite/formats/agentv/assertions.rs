//! AgentV assertions as native graders: plain strings as one rubric, typed assertions,
//! rubrics, code graders and tool trajectories.

use serde_json::{Value, json};

use super::super::Problems;
use super::super::native_text::literal;
use super::COMMON;
use crate::json::snake_case_deep;

pub(super) struct Converter<'a> {
    pub(super) rel_dir: &'a std::path::Path,
    /// The eval file's directory, which `file://` prompts are read from.
    pub(super) dir: &'a std::path::Path,
    pub(super) problems: Problems,
    /// Whether any grader needs the judge.
    pub(super) judged: bool,
    /// The test's pass threshold: a `required` assertion's default `min_score`.
    pub(super) threshold: f64,
    /// What a code grader reads of the test being converted.
    pub(super) test: TestData,
}

/// The template variables of AgentV's grader the converted judge fills in
/// (`template-variables.ts`; `file_changes` is empty without an AgentV workspace).
const FILLED: [&str; 5] = ["criteria", "input", "output", "expected_output", "file_changes"];

/// AgentV's template variables `{{ name }}` that `text` uses (`containsTemplateVariables`).
fn template_variables(text: &str) -> Vec<String> {
    const KNOWN: [&str; 10] = [
        "expected_output",
        "criteria",
        "metadata",
        "metadata_json",
        "rubrics",
        "rubrics_json",
        "input",
        "output",
        "file_changes",
        "tool_calls",
    ];
    static VAR: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\{\{\s*([a-zA-Z0-9_]+)\s*\}\}").expect("valid"));
    let mut found: Vec<String> =
        VAR.captures_iter(text).map(|c| c[1].to_owned()).filter(|v| KNOWN.contains(&v.as_str())).collect();
    found.dedup();
    found
}

/// The test's data in AgentV's code-grader payload (already snake_case).
#[derive(Default)]
pub(super) struct TestData {
    pub criteria: String,
    /// `expected_output` as text: AgentV's reference answer for its LLM grader.
    pub reference: Option<String>,
    pub input: Value,
    pub expected_output: Value,
    pub metadata: Value,
}

impl Converter<'_> {
    /// Native graders for AgentV assertions; plain strings together form one rubric.
    pub(super) fn assertions(&mut self, list: &[Value], at: &str, criteria: Option<&str>) -> Vec<Value> {
        let mut graders = Vec::new();
        let mut shorthand = Vec::new();
        for (i, a) in list.iter().enumerate() {
            let at = format!("{at}/{i}");
            match a {
                Value::String(text) => shorthand.push(json!({"criterion": text, "weight": 1.0})),
                Value::Object(_) => graders.extend(self.assertion(a, &at, criteria)),
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

    pub(super) fn judge(&mut self, criteria: &[Value], name: &str) -> Value {
        self.judged = true;
        json!({"type": "rubric", "name": name, "criteria": criteria})
    }

    /// AgentV's `llm-grader` (`graders/llm-grader.ts`): one score from 0 to 1 on `criteria`,
    /// the test's `expected_output` shown as the reference answer, in AgentV's default
    /// template or `template`. The criteria are not a template: braces reach the judge as written.
    pub(super) fn freeform(&mut self, criteria: &str, template: Option<String>, name: &str) -> Value {
        let mut judge = self.judge(&[json!({"criterion": criteria, "weight": 1.0})], name);
        judge["agentv"] = json!(true);
        if let Some(r) = &self.test.reference {
            judge["reference"] = json!(literal(r));
        }
        if let Some(t) = template {
            judge["prompt"] = json!(t);
        }
        judge
    }

    /// `llm-grader` on the test's criteria, or on its own `prompt` as AgentV 4.42.4 reads it
    /// (`loaders/grader-parser.ts`, `registry/builtin-graders.ts`): `file://PATH` is a whole
    /// template read from the eval's directory; inline text is the whole template when it
    /// uses one of AgentV's template variables, else it is the criteria.
    fn llm_grader(&mut self, a: &Value, at: &str, criteria: Option<&str>) -> Option<Value> {
        let at = format!("{at}/prompt");
        let (criteria, template) = match a.get("prompt") {
            None => (criteria.map(str::to_owned), None),
            Some(Value::String(p)) => match p.strip_prefix("file://") {
                Some(path) => match crate::yaml::read(&self.dir.join(path)) {
                    Ok(text) => (criteria.map(str::to_owned), Some(text)),
                    Err(e) => {
                        self.problems.push((at, format!("cannot read the prompt file `{path}`: {e}")));
                        return None;
                    }
                },
                None if !template_variables(p).is_empty() => (criteria.map(str::to_owned), Some(p.clone())),
                None => (Some(p.clone()), None),
            },
            Some(_) => {
                self.problems.push((at, "an executable prompt template (`prompt: {command}`) is not supported".into()));
                return None;
            }
        };
        if let Some(t) = &template {
            let unfilled: Vec<String> =
                template_variables(t).into_iter().filter(|v| !FILLED.contains(&v.as_str())).collect();
            if !unfilled.is_empty() {
                self.problems.push((
                    at,
                    format!(
                        "the grader template uses {{{{ {} }}}}, which evalgate does not fill in (it fills {})",
                        unfilled.join(" }}, {{ "),
                        FILLED.join(", ")
                    ),
                ));
                return None;
            }
        }
        match (criteria, template) {
            (Some(c), t) => Some(self.freeform(&c, t, "llm-grader")),
            // AgentV fills `{{ criteria }}` with nothing.
            (None, Some(t)) => Some(self.freeform("", Some(t), "llm-grader")),
            (None, None) => {
                self.problems.push((
                    at.trim_end_matches("/prompt").to_owned(),
                    "an `llm-grader` judges the test's `criteria`, and this test has none".into(),
                ));
                None
            }
        }
    }

    pub(super) fn assertion(&mut self, a: &Value, at: &str, criteria: Option<&str>) -> Vec<Value> {
        let kind = a.get("type").and_then(Value::as_str).unwrap_or_default().replace('_', "-");
        let value = a.get("value");
        let text = || value.and_then(Value::as_str).map(literal);
        let trimmed = || value.and_then(Value::as_str).map(|v| literal(v.trim()));
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
            "contains-all" | "icontains-all" => (
                list().map(|v| json!({"type": "contains", "all": v, "ignore_case": ignore_case, "agentv": true})),
                &["value"],
            ),
            // AgentV trims the expected value as well as the output.
            "starts-with" => (trimmed().map(|v| json!({"type": "starts_with", "value": v})), &["value"]),
            "ends-with" => (trimmed().map(|v| json!({"type": "ends_with", "value": v})), &["value"]),
            "equals" => (text().map(|v| json!({"type": "equals", "value": v})), &["value"]),
            "regex" => {
                let mut g =
                    value.and_then(Value::as_str).map(|p| json!({"type": "regex", "pattern": p, "agentv": true}));
                if let (Some(g), Some(flags)) = (g.as_mut(), a.get("flags").and_then(Value::as_str)) {
                    g["flags"] = json!(flags);
                }
                (g, &["value", "flags"])
            }
            "is-json" => (Some(json!({"type": "json_schema", "schema": {}})), &[]),
            // Keys AgentV does not know are the grader's `config`: none is left over.
            "code-grader" | "script" => (self.code_grader(a, at), &[]),
            "llm-grader" => (self.llm_grader(a, at, criteria), &["prompt"]),
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
        let takes_rest = matches!(kind.as_str(), "code-grader" | "script");
        for key in a.as_object().into_iter().flatten().map(|(k, _)| k.as_str()) {
            if !takes_rest && !COMMON.contains(&key) && !own.contains(&key) {
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
    pub(super) fn common(&mut self, a: &Value, grader: &mut Value, at: &str) {
        if let Some(n) = a.get("name").or_else(|| a.get("metric")) {
            grader["name"] = n.clone();
        }
        if let Some(w) = a.get("weight") {
            grader["weight"] = w.clone();
        }
        // AgentV: a required assertion fails the test below its `min_score`, else below a
        // numeric `required` (deprecated), else below the test's threshold.
        let min_score = a.get("min_score").and_then(Value::as_f64).filter(|s| *s > 0.0 && *s <= 1.0);
        if a.get("min_score").is_some() && min_score.is_none() {
            self.problems
                .push((format!("{at}/min_score"), "`min_score` must be a number above 0 and at most 1".into()));
        }
        let required = match a.get("required") {
            Some(Value::Bool(b)) => b.then_some(min_score.unwrap_or(self.threshold)),
            Some(Value::Number(n)) => match n.as_f64().filter(|s| *s > 0.0 && *s <= 1.0) {
                Some(n) => Some(min_score.unwrap_or(n)),
                None => {
                    self.problems
                        .push((format!("{at}/required"), "a numeric `required` must be above 0 and at most 1".into()));
                    None
                }
            },
            Some(_) => {
                self.problems.push((format!("{at}/required"), "expected a boolean or a score".into()));
                None
            }
            None => None,
        };
        if let Some(min) = required {
            grader["required"] = json!(true);
            grader["min_score"] = json!(min);
        }
        if a.get("negate").and_then(Value::as_bool) == Some(true) {
            grader["negate"] = json!(true);
        }
    }

    /// `rubrics` items `{id, outcome, weight}` as one rubric judge.
    pub(super) fn rubric(&mut self, items: &[Value], at: &str, assertion: &Value) -> Vec<Value> {
        let mut criteria = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let text =
                item.get("outcome").or_else(|| item.get("criteria")).and_then(Value::as_str).or_else(|| item.as_str());
            // AgentV's contradiction guard is met unless the answer contradicts the outcome.
            let text = match (text, item.get("operator").and_then(Value::as_str)) {
                (Some(t), None | Some("correctness")) => Some(t.to_owned()),
                (Some(t), Some("contradiction")) => Some(format!(
                    "The answer makes no claim that contradicts the following (it need not mention it): {t}"
                )),
                (_, Some(other)) => {
                    self.problems.push((
                        format!("{at}/{i}/operator"),
                        format!("rubric operator `{other}` is not one of AgentV's (correctness, contradiction)"),
                    ));
                    None
                }
                (None, _) => None,
            };
            match text {
                Some(t) => criteria
                    .push(json!({"criterion": t, "weight": item.get("weight").and_then(Value::as_f64).unwrap_or(1.0)})),
                None if item.get("operator").is_none() => {
                    self.problems.push((format!("{at}/{i}"), "a rubric item needs `outcome`".into()))
                }
                None => {}
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

    /// A code grader: the test's part of AgentV's payload rides along in the context; keys
    /// AgentV does not know, and its `config`, are the payload's `config`.
    pub(super) fn code_grader(&mut self, a: &Value, at: &str) -> Option<Value> {
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
        for key in ["target", "preprocessors"] {
            if a.get(key).is_some() {
                let why = if key == "target" {
                    "evalgate offers code graders no target proxy"
                } else {
                    "preprocessors are not supported"
                };
                self.problems
                    .push((format!("{at}/{key}"), format!("`{key}` on a code grader is not supported: {why}")));
            }
        }
        const KNOWN: [&str; 12] = [
            "name",
            "type",
            "command",
            "script",
            "cwd",
            "weight",
            "target",
            "config",
            "preprocessors",
            "required",
            "min_score",
            "negate",
        ];
        let mut config: serde_json::Map<String, Value> = a
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !KNOWN.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some(Value::Object(own)) = a.get("config") {
            config.extend(own.clone());
        }
        let cwd = a.get("cwd").and_then(Value::as_str).unwrap_or("");
        let dir = if cwd.is_empty() { self.rel_dir.to_owned() } else { self.rel_dir.join(cwd) };
        let t = &self.test;
        let context = json!({
            "criteria": t.criteria,
            "expected_output": t.expected_output,
            "input": t.input,
            "input_files": [],
            "metadata": t.metadata,
            "config": if config.is_empty() { Value::Null } else { snake_case_deep(Value::Object(config)) },
        });
        // Always in the eval file's directory, as AgentV runs it: a command grader's own
        // default is the trial's workspace.
        let dir = if dir.as_os_str().is_empty() { std::path::PathBuf::from(".") } else { dir };
        Some(json!({"type": "command", "run": run, "context": context, "agentv": true, "workdir": dir}))
    }

    /// `tool-trajectory`: `any_order` with `minimums`, or `expected` in order / exactly, as
    /// AgentV 4.42.4 scores it (an `agentv` `tool_sequence`).
    pub(super) fn trajectory(&mut self, a: &Value, at: &str) -> Option<Value> {
        // AgentV skips (drops with a warning) a trajectory without a mode, or in any_order
        // without minimums: refused here rather than graded without it.
        let Some(mode) = a.get("mode").and_then(Value::as_str) else {
            self.problems.push((
                at.to_owned(),
                "a `tool-trajectory` without `mode` is skipped by AgentV 4.42.4 (the test is graded without it); give `mode` or remove it".into(),
            ));
            return None;
        };
        let expected = a.get("expected").and_then(Value::as_array);
        if let Some(minimums) = a.get("minimums").and_then(Value::as_object) {
            if mode != "any_order" {
                self.problems.push((format!("{at}/minimums"), "`minimums` go with `mode: any_order`".into()));
                return None;
            }
            // One grader: its score is the share of tools that met their minimum, as in
            // AgentV, so `required` gates that share, not each tool.
            let tools = minimums.iter().map(|(tool, n)| json!({"tool": tool, "min": n}));
            return Some(
                json!({"type": "tool_sequence", "order": "any_order", "tools": tools.collect::<Vec<_>>(), "agentv": true}),
            );
        }
        if mode == "any_order" {
            self.problems.push((
                format!("{at}/minimums"),
                "a `tool-trajectory` in `any_order` without `minimums` is skipped by AgentV 4.42.4 (the test is graded without it)".into(),
            ));
            return None;
        }
        let Some(expected) = expected else {
            self.problems.push((at.to_owned(), "a `tool-trajectory` needs `minimums` or `expected`".into()));
            return None;
        };
        let order = match mode {
            "in_order" => "in_order",
            "exact" => "exact",
            other => {
                self.problems.push((
                    format!("{at}/mode"),
                    format!("mode `{other}` is not supported (any_order, in_order, exact; AgentV's subset and superset are not)"),
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
                    "`args_match` is not supported (arguments must equal the call's, AgentV's default)".into(),
                ));
            }
            let tool = e.get("tool").and_then(Value::as_str).unwrap_or_default();
            match e.get("args") {
                Some(args) if args.is_object() => tools.push(json!({"tool": tool, "arguments": args})),
                _ => tools.push(json!(tool)),
            }
        }
        Some(json!({"type": "tool_sequence", "order": order, "tools": tools, "agentv": true}))
    }
}
