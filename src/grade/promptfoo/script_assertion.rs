//! promptfoo's `javascript` and `python` assertions (0.123.1, `src/assertions/javascript.ts`,
//! `python.ts`, `scriptResultNormalization.ts`): the code runs in node or python3 through
//! evalgate's process plumbing (`run_process`: its own group, killed with it at the
//! timeout, credentials stripped, output capped), by a small harness that mirrors how
//! promptfoo calls it (`script_harness.js`, `script_harness.py`); what it returns is read
//! here as promptfoo reads it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::process::{ProcessSpec, run_process};

/// The language of a script assertion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Language {
    Javascript,
    Python,
}

/// Where the code is: written in the assertion, or `file://PATH[:FUNCTION]`.
#[derive(Debug)]
pub(super) enum Source {
    Inline(String),
    File { path: PathBuf, function: Option<String> },
}

/// A `javascript` or `python` assertion.
#[derive(Debug)]
pub(super) struct Script {
    pub language: Language,
    pub source: Source,
}

/// The node harness: `javascript` assertions, `options.transform`, and (with an argument)
/// `file://` JavaScript providers, whose converted command agents run it.
pub const JS_HARNESS: &str = include_str!("script_harness.js");

/// The python3 harness: `python` assertions, and (with an argument) `file://x.py` and
/// `python:` providers, whose converted command agents run it.
pub const PY_HARNESS: &str = include_str!("script_harness.py");

/// How long a script may run at most (promptfoo sets no bound; evalgate bounds every
/// process): this, or the task's timeout when shorter.
pub(super) const TIMEOUT: Duration = Duration::from_secs(60);

impl Script {
    /// The assertion's `value`: code, or a `file://` script (`.js`, `.cjs`, `.mjs` for
    /// `javascript`, `.py` for `python`) with an optional function name.
    pub fn read(language: Language, value: &Value) -> Result<Script, String> {
        let Some(text) = value.as_str().filter(|t| !t.trim().is_empty()) else {
            return Err("a script assertion needs its code, or `file://PATH[:FUNCTION]`, as a string `value`".into());
        };
        let Some(reference) = text.strip_prefix("file://") else {
            return Ok(Script { language, source: Source::Inline(text.to_owned()) });
        };
        let (path, function) = match reference.split_once(':') {
            Some((p, f)) => (p, Some(f.to_owned()).filter(|f| !f.is_empty())),
            None => (reference, None),
        };
        let ext = Path::new(path).extension().and_then(|e| e.to_str()).unwrap_or_default();
        let fits = match language {
            Language::Javascript => matches!(ext, "js" | "cjs" | "mjs"),
            Language::Python => ext == "py",
        };
        if !fits {
            let wanted = if language == Language::Python { "a `.py` file" } else { "a `.js`, `.cjs` or `.mjs` file" };
            return Err(format!("`{text}`: this assertion runs {wanted} (TypeScript and other files are not run)"));
        }
        Ok(Script { language, source: Source::File { path: PathBuf::from(path), function } })
    }

    /// A file script's path made absolute against the suite's directory.
    pub fn resolve(&mut self, dir: &Path) {
        if let Source::File { path, .. } = &mut self.source {
            *path = dir.join(&*path);
        }
    }

    /// The file the script names, for preflight and messages.
    pub fn file(&self) -> Option<&Path> {
        match &self.source {
            Source::File { path, .. } => Some(path),
            Source::Inline(_) => None,
        }
    }

    /// promptfoo's verdict `(pass, score, reason)` on `output`; `Err` where promptfoo's
    /// run errors (a JavaScript file that throws, or a harness that could not run).
    pub async fn verdict(
        &self,
        output: &str,
        context: &Map<String, Value>,
        threshold: Option<f64>,
        inverse: bool,
        cwd: &Path,
        timeout: Duration,
    ) -> Result<(bool, f64, String), String> {
        let mut request = json!({"output": output, "context": context});
        match &self.source {
            Source::Inline(code) => {
                request["code"] = json!(match self.language {
                    Language::Javascript => code.clone(),
                    Language::Python => python_module(code),
                })
            }
            Source::File { path, function } => {
                request["file"] = json!(path.to_string_lossy());
                request["function"] = json!(function);
            }
        }
        let (program, harness) = match self.language {
            Language::Javascript => ("node", JS_HARNESS),
            Language::Python => ("python3", PY_HARNESS),
        };
        let flag = if self.language == Language::Javascript { "-e" } else { "-c" };
        let argv = vec![program.to_owned(), flag.to_owned(), harness.to_owned()];
        let mut spec = ProcessSpec::argv(argv, cwd.to_owned(), timeout);
        spec.stdin = Some(request.to_string().into_bytes());
        let out = run_process(spec).await.map_err(|e| e.to_string())?;
        if out.timed_out || out.exit_code.is_none() {
            return Err(format!("the {program} script {}", out.describe_end(timeout)));
        }
        let line = out.stdout.text.lines().last().unwrap_or_default();
        let reply: Map<String, Value> = match serde_json::from_str(line) {
            Ok(Value::Object(o)) if !out.stdout.is_truncated() => o,
            _ => {
                let said = crate::excerpt::excerpt_with_last_line(out.stderr.text.trim(), 200);
                return Err(format!("the {program} script gave no verdict ({}): {said}", out.describe_end(timeout)));
            }
        };
        let labels = match self.language {
            Language::Javascript => ("Custom function", "Javascript"),
            Language::Python => ("Python code", "Python"),
        };
        if let Some(threw) = reply.get("threw") {
            let threw = super::promptfoo_check::js_string(threw);
            return match (self.language, &self.source) {
                // promptfoo loads a file's function outside the assertion's try: an error.
                (Language::Javascript, Source::File { .. }) => Err(format!("the javascript assertion threw: {threw}")),
                (Language::Javascript, Source::Inline(_)) => Ok((false, 0.0, format!("Custom function threw error: {threw}"))),
                (Language::Python, _) => Ok((false, 0.0, format!("Python code execution failed: {threw}"))),
            };
        }
        let value = reply.get("value").cloned().unwrap_or(Value::Null);
        let read = match self.language {
            Language::Javascript => javascript_result(reply.get("kind").and_then(Value::as_str).unwrap_or(""), value),
            Language::Python => python_result(value, threshold),
        };
        match read {
            Ok(result) => Ok(normalize(result, threshold, inverse, labels.0)),
            Err(why) => Ok((false, 0.0, format!("{} assertion: {why}", labels.1))),
        }
    }
}

/// A `file://PATH[:FUNCTION]` transform's file and function, as promptfoo's
/// `parseFilePathAndFunctionName` splits it (at the last `:` past the second character).
pub fn transform_file(code: &str) -> Option<(&str, Option<&str>)> {
    let reference = code.strip_prefix("file://")?;
    Some(match reference.rfind(':').filter(|i| *i > 1) {
        Some(i) => (&reference[..i], Some(&reference[i + 1..])),
        None => (reference, None),
    })
}

/// The program a transform runs in: `python3` for a `file://` `.py`, else `node`.
pub fn transform_program(code: &str) -> &'static str {
    match transform_file(code) {
        Some((path, _)) if path.ends_with(".py") => "python3",
        _ => "node",
    }
}

/// promptfoo's `options.transform` (inline JavaScript, or a `file://` JavaScript or Python
/// function, relative to `cwd`) applied to the output before the assertions see it: its
/// result as text (`JSON.stringify` of a value that is not a string); `Err` where
/// promptfoo's run errors (it throws, or returns nothing).
pub(super) async fn transform(
    code: &str,
    output: &str,
    context: &Map<String, Value>,
    cwd: &Path,
    timeout: Duration,
) -> Result<String, String> {
    let vars = context.get("vars").cloned().unwrap_or(Value::Null);
    let mut request = json!({"output": output, "context": {"vars": vars, "prompt": {"label": ""}}});
    match transform_file(code) {
        Some((path, function)) => {
            request["transform_file"] = json!(cwd.join(path).to_string_lossy());
            request["function"] = json!(function);
        }
        None => request["transform"] = json!(code),
    }
    let (flag, harness) = match transform_program(code) {
        "python3" => ("-c", PY_HARNESS),
        _ => ("-e", JS_HARNESS),
    };
    let argv = vec![transform_program(code).to_owned(), flag.to_owned(), harness.to_owned()];
    let mut spec = ProcessSpec::argv(argv, cwd.to_owned(), timeout);
    spec.stdin = Some(request.to_string().into_bytes());
    let out = run_process(spec).await.map_err(|e| e.to_string())?;
    let line = out.stdout.text.lines().last().unwrap_or_default();
    match serde_json::from_str::<Value>(line) {
        Ok(reply) if !out.timed_out && !out.stdout.is_truncated() => match (reply.get("transformed"), reply.get("threw")) {
            (Some(Value::String(text)), _) => Ok(text.clone()),
            (_, Some(threw)) => Err(format!("the transform threw: {}", super::promptfoo_check::js_string(threw))),
            _ => Err("the transform gave no output".into()),
        },
        _ => Err(format!("the transform {}", out.describe_end(timeout))),
    }
}

/// An `http` agent's JavaScript `transform` (promptfoo's `transformResponse`) applied to
/// an answer, run by node through the script harness: `Ok(None)` when it returns
/// `undefined`, `Err` when it throws (the message, as promptfoo words it) or cannot run.
pub async fn transform_response(
    code: &str,
    answer: (&Value, &str),
    context: &Value,
    cwd: &Path,
    timeout: Duration,
) -> Result<Option<Value>, String> {
    let request = json!({"transformResponse": code, "json": answer.0, "text": answer.1, "context": context});
    let argv = vec!["node".to_owned(), "-e".to_owned(), JS_HARNESS.to_owned()];
    let mut spec = ProcessSpec::argv(argv, cwd.to_owned(), timeout);
    spec.stdin = Some(request.to_string().into_bytes());
    let out = run_process(spec).await.map_err(|e| e.to_string())?;
    let line = out.stdout.text.lines().last().unwrap_or_default();
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(mut reply)) if !out.timed_out && !out.stdout.is_truncated() => match reply.remove("threw") {
            Some(threw) => {
                let threw = super::promptfoo_check::js_string(&threw);
                Err(format!("Failed to transform response: Error: Transform failed: {threw}"))
            }
            None => Ok(reply.remove("returned")),
        },
        _ => {
            let said = crate::excerpt::excerpt_with_last_line(out.stderr.text.trim(), 200);
            Err(format!("the transform gave no answer ({}): {said}", out.describe_end(timeout)))
        }
    }
}

/// promptfoo's `buildPythonScript`: a one-line value is `return VALUE`; several lines are
/// the body, indented as the value's first indented line is (four spaces if none is).
fn python_module(code: &str) -> String {
    let body = if code.contains('\n') {
        let indent = code
            .lines()
            .find(|l| !l.trim().is_empty() && l.starts_with(char::is_whitespace))
            .map(|l| &l[..l.len() - l.trim_start().len()])
            .unwrap_or("    ");
        code.split('\n').map(|l| format!("{indent}{l}")).collect::<Vec<_>>().join("\n")
    } else {
        format!("    return {code}")
    };
    format!("import json\n\ndef main(output, context):\n{body}\n")
}

/// What a script returned, as promptfoo's normalization sees it.
enum Returned {
    Bool(bool),
    Number(f64),
    /// A GradingResult: `pass`, `score`, `reason`.
    Grading(bool, f64, String),
}

/// promptfoo's `isGradingResult` on a JSON object.
fn grading(v: &Value) -> Option<Returned> {
    let o = v.as_object()?;
    let optional = |k: &str, ok: fn(&Value) -> bool| o.get(k).is_none_or(ok);
    let fits = optional("namedScores", Value::is_object)
        && optional("namedScoreWeights", Value::is_object)
        && optional("tokensUsed", Value::is_object)
        && optional("componentResults", Value::is_array)
        && optional("assertion", |a| a.is_null() || a.is_object())
        && optional("comment", Value::is_string);
    match (o.get("pass")?, o.get("score")?.as_f64(), o.get("reason")?) {
        (Value::Bool(p), Some(s), Value::String(r)) if fits => Some(Returned::Grading(*p, s, r.clone())),
        _ => None,
    }
}

/// A JavaScript result (`validateResult`): a boolean, a number or a GradingResult.
fn javascript_result(kind: &str, value: Value) -> Result<Returned, String> {
    match (kind, &value) {
        ("boolean", Value::Bool(b)) => Ok(Returned::Bool(*b)),
        ("number", Value::String(n)) => n.parse::<f64>().map(Returned::Number).map_err(|e| e.to_string()),
        ("object", _) => grading(&value).ok_or_else(|| {
            format!("Custom function must return a boolean, number, or GradingResult object. Got type object: {value}")
        }),
        _ => Err(format!("Custom function must return a boolean, number, or GradingResult object. Got type {kind}")),
    }
}

/// promptfoo's `mapSnakeCaseToCamelCase` on a Python result's keys.
fn camel_case(mut o: Map<String, Value>) -> Value {
    for (snake, camel) in [
        ("pass_", "pass"),
        ("named_scores", "namedScores"),
        ("component_results", "componentResults"),
        ("tokens_used", "tokensUsed"),
    ] {
        if let Some(v) = o.get(snake).cloned().filter(|_| !o.contains_key(camel)) {
            o.insert(camel.into(), v);
        }
    }
    Value::Object(o)
}

/// JavaScript's `parseFloat`: the longest number at the start (after white space).
fn parse_float(text: &str) -> Option<f64> {
    let t = text.trim_start();
    let signed = t.strip_prefix(['+', '-']).unwrap_or(t);
    if signed.starts_with("Infinity") {
        return Some(if t.starts_with('-') { f64::NEG_INFINITY } else { f64::INFINITY });
    }
    let bytes = t.as_bytes();
    let mut end = t.len() - signed.len();
    let digits_from = end;
    while end < bytes.len() && bytes[end].is_ascii_digit() {
        end += 1;
    }
    if end < bytes.len() && bytes[end] == b'.' {
        end += 1;
        while end < bytes.len() && bytes[end].is_ascii_digit() {
            end += 1;
        }
    }
    if !t[digits_from..end].bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    if end < bytes.len() && (bytes[end] == b'e' || bytes[end] == b'E') {
        let mut e = end + 1;
        if e < bytes.len() && (bytes[e] == b'+' || bytes[e] == b'-') {
            e += 1;
        }
        if e < bytes.len() && bytes[e].is_ascii_digit() {
            while e < bytes.len() && bytes[e].is_ascii_digit() {
                e += 1;
            }
            end = e;
        }
    }
    t[..end].parse().ok()
}

/// A Python result (`normalizeScriptResult`): `true`/`false` (or those words), a JSON object
/// or a dict (a GradingResult, whose score below `threshold` fails it), else a number as
/// `parseFloat` reads `String(result)`.
fn python_result(value: Value, threshold: Option<f64>) -> Result<Returned, String> {
    let word = value.as_str().map(str::to_lowercase);
    match (&value, word.as_deref()) {
        (Value::Bool(b), _) => return Ok(Returned::Bool(*b)),
        (_, Some("true")) => return Ok(Returned::Bool(true)),
        (_, Some("false")) => return Ok(Returned::Bool(false)),
        _ => {}
    }
    let object = match &value {
        Value::String(s) if s.starts_with('{') => {
            Some(serde_json::from_str::<Value>(s).map_err(|e| format!("Invalid JSON: {e} when parsing result: {s}"))?)
        }
        Value::Object(_) | Value::Array(_) => Some(value.clone()),
        _ => None,
    };
    if let Some(object) = object {
        let mapped = match object {
            Value::Object(o) => camel_case(o),
            Value::Array(items) => {
                Value::Object(items.into_iter().enumerate().map(|(i, v)| (i.to_string(), v)).collect())
            }
            _ => return Err(format!("must return a boolean, number, or {{pass, score, reason}} object. Got instead: {value}")),
        };
        return match grading(&mapped) {
            Some(Returned::Grading(pass, score, reason)) => {
                let pass = pass && threshold.is_none_or(|t| score >= t);
                Ok(Returned::Grading(pass, score, reason))
            }
            _ => Err(format!("must return a boolean, number, or {{pass, score, reason}} object. Got instead: {mapped}")),
        };
    }
    let text = match &value {
        Value::Null => "null".to_owned(),
        other => super::promptfoo_check::js_string(other),
    };
    parse_float(&text)
        .filter(|f| !f.is_nan())
        .map(Returned::Number)
        .ok_or_else(|| format!("must return a boolean, number, or {{pass, score, reason}} object. Instead got: {text}"))
}

/// promptfoo's `normalizeScriptAssertionResult`: a boolean is the verdict; a number passes
/// above 0, or at `threshold` when one is set, and is the score; a GradingResult's `pass`
/// is the verdict and its score kept. `not-` inverts the verdict (never the score).
fn normalize(result: Returned, threshold: Option<f64>, inverse: bool, code: &str) -> (bool, f64, String) {
    let failed = |raw: bool| format!("{code} returned {raw}");
    match result {
        Returned::Bool(raw) => {
            let pass = raw != inverse;
            (pass, if pass { 1.0 } else { 0.0 }, if pass { "Assertion passed".into() } else { failed(raw) })
        }
        Returned::Number(n) => {
            let raw = threshold.map_or(n > 0.0, |t| n >= t);
            let pass = raw != inverse;
            (pass, n, if pass { "Assertion passed".into() } else { failed(raw) })
        }
        Returned::Grading(raw, score, reason) => {
            let pass = raw != inverse;
            let reason = if pass == raw {
                reason
            } else if pass {
                "Assertion passed".into()
            } else {
                failed(raw)
            };
            (pass, score, reason)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_float_reads_a_number_at_the_start_as_javascript_does() {
        assert_eq!(parse_float(" 0.5abc"), Some(0.5));
        assert_eq!(parse_float("-3e2x"), Some(-300.0));
        assert_eq!(parse_float("1e"), Some(1.0));
        assert_eq!(parse_float(".5"), Some(0.5));
        assert_eq!(parse_float("null"), None);
        assert_eq!(parse_float("-Infinity"), Some(f64::NEG_INFINITY));
    }

    #[test]
    fn python_results_read_as_promptfoo_reads_them() {
        let read = |v: Value, t: Option<f64>| python_result(v, t).map(|r| normalize(r, t, false, "Python code"));
        assert!(read(json!("TRUE"), None).unwrap().0);
        assert!(!read(json!(0), None).unwrap().0);
        assert!(!read(json!(0.4), Some(0.5)).unwrap().0);
        assert!(read(Value::Null, None).is_err(), "None is no verdict");
        let graded = json!({"pass_": true, "score": 0.3, "reason": "r"});
        assert_eq!(read(graded.clone(), None).unwrap(), (true, 0.3, "r".into()));
        assert!(!read(graded, Some(0.5)).unwrap().0, "a dict's score under the threshold fails it");
        assert!(read(json!([1]), None).is_err());
        assert!(read(json!("{not json"), None).is_err());
    }

    #[test]
    fn python_module_wraps_code_as_promptfoo_writes_it() {
        assert_eq!(python_module("len(output) > 3"), "import json\n\ndef main(output, context):\n    return len(output) > 3\n");
        assert_eq!(python_module("x = 1\n  return x"), "import json\n\ndef main(output, context):\n  x = 1\n    return x\n");
    }
}
