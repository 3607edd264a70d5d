//! A promptfoo test's assertions as `promptfoo` graders: script paths made relative to the
//! suite, promptfoo's `context` given to the assertions that read it, and the test's own
//! grading provider for those that ask a judge.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::super::Problems;
use super::promptfoo_convert::rendered;
use crate::grade::PromptfooAssertion;

/// What a test's script assertions are given: promptfoo's `context`, and the directory
/// their `file://` paths are relative to (the config's, relative to the suite's).
pub(super) struct Scripts<'a> {
    pub(super) context: Value,
    pub(super) rel_dir: &'a Path,
    /// The config's directory, where a script's file must be.
    pub(super) config_dir: &'a Path,
    /// The test's `options.rubricPrompt`, which the model-graded assertions use.
    pub(super) rubric_prompt: Option<Value>,
    /// The test's `options.transform`, which every assertion's output goes through.
    pub(super) transform: Option<String>,
    /// The test's own grading provider (`options.provider`), as a judge.
    pub(super) judge: Option<Value>,
}

/// A script assertion's `file://PATH[:FUNCTION]` relative to the suite (promptfoo's is
/// relative to the config), here or in its set; a file that is not there is a problem at
/// its `value` (`at`).
fn rebase_scripts(a: &mut Value, scripts: &Scripts, at: &str, problems: &mut Problems) {
    let script =
        a.get("type").and_then(Value::as_str).is_some_and(|t| t.ends_with("javascript") || t.ends_with("python"));
    if let Some(reference) =
        a.get("value").and_then(Value::as_str).and_then(|v| v.strip_prefix("file://")).filter(|_| script)
    {
        let path = reference.split_once(':').map_or(reference, |(p, _)| p);
        if !scripts.config_dir.join(path).is_file() {
            problems.push((format!("{at}/value"), format!("no script file `{path}` (beside the config)")));
        }
        a["value"] = json!(format!("file://{}", scripts.rel_dir.join(reference).display()));
    }
    for (i, inner) in a.get_mut("assert").and_then(Value::as_array_mut).into_iter().flatten().enumerate() {
        rebase_scripts(inner, scripts, &format!("{at}/assert/{i}"), problems);
    }
}

/// The assertions given the test's `context` (the rendered prompt, the vars): scripts and
/// the model-graded ones.
const GIVEN_CONTEXT: [&str; 7] =
    ["javascript", "python", "model-graded-closedqa", "factuality", "g-eval", "llm-rubric", "answer-relevance"];

/// An assertion's type without `not-` and a `:METRIC`.
fn base_type(a: &Value) -> &str {
    let written = a.get("type").and_then(Value::as_str).unwrap_or_default();
    written.trim_start_matches("not-").split(':').next().unwrap_or_default()
}

/// Whether an assertion (or one of its set) is of one of `types`.
fn any_of(a: &Value, types: &[&str]) -> bool {
    types.contains(&base_type(a))
        || a.get("assert").and_then(Value::as_array).is_some_and(|l| l.iter().any(|i| any_of(i, types)))
}

/// Whether an assertion (or one of its set) asks the judge (or its embedding model).
pub(super) fn asks_judge(a: &Value) -> bool {
    any_of(a, &["llm-rubric", "model-graded-closedqa", "factuality", "g-eval", "answer-relevance", "similar"])
}

/// Whether an assertion (or one of its set) compares embeddings.
pub(super) fn embeds(a: &Value) -> bool {
    any_of(a, &["similar", "answer-relevance"])
}

/// An assertion's type without `not-`, when it is one of `GIVEN_CONTEXT`.
fn given_context(a: &Value) -> bool {
    a.get("type").and_then(Value::as_str).is_some_and(|t| GIVEN_CONTEXT.contains(&t.trim_start_matches("not-")))
}

/// Whether an assertion (or one of its set) is given the test's `context`; each such one
/// also gets the test's `rubricPrompt`.
fn with_context(a: &mut Value, rubric_prompt: Option<&Value>) -> bool {
    let mut given = given_context(a);
    if given && let Some(p) = rubric_prompt {
        a["rubricPrompt"] = p.clone();
    }
    for inner in a.get_mut("assert").and_then(Value::as_array_mut).into_iter().flatten() {
        given |= with_context(inner, rubric_prompt);
    }
    given
}

/// The test's assertions as `promptfoo` graders: `metric` their name, `weight` their weight.
pub(super) fn graders(
    t: &Value,
    at: &str,
    vars: &Map<String, Value>,
    scripts: &Scripts,
    problems: &mut Problems,
) -> Vec<Value> {
    let inherited = t.get("__inherited").and_then(Value::as_u64).unwrap_or(0) as usize;
    let list = t.get("assert").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut out = Vec::new();
    for (i, a) in list.iter().enumerate() {
        let a_at =
            if i < inherited { format!("/defaultTest/assert/{i}") } else { format!("{at}/assert/{}", i - inherited) };
        let mut a = a.clone();
        if a.is_string() {
            problems.push((a_at, "an assertion is an object with `type`".into()));
            continue;
        }
        let render_in = |a: &mut Value, key: &str, problems: &mut Problems| {
            if let Some(v) = a.get(key) {
                match rendered(v, vars) {
                    Ok(r) => a[key] = r,
                    Err(e) => problems.push((format!("{a_at}/{key}"), e)),
                }
            }
        };
        render_in(&mut a, "value", problems);
        if let Some(set) = a.get_mut("assert").and_then(Value::as_array_mut) {
            for (j, inner) in set.iter_mut().enumerate() {
                if let Some(v) = inner.get("value") {
                    match rendered(v, vars) {
                        Ok(r) => inner["value"] = r,
                        Err(e) => problems.push((format!("{a_at}/assert/{j}/value"), e)),
                    }
                }
            }
        }
        // After rendering: what a file holds is not rendered with the vars, as in promptfoo.
        super::file_values::load_values(&mut a, scripts.config_dir, &a_at, problems);
        for key in a.as_object().into_iter().flatten().map(|(k, _)| k.as_str()) {
            if !matches!(key, "type" | "value" | "threshold" | "weight" | "metric" | "assert" | "config") {
                problems.push((format!("{a_at}/{key}"), format!("the assertion key `{key}` is not supported")));
            }
        }
        if let Err((below, message)) = PromptfooAssertion::read(&a) {
            problems.push((format!("{a_at}{below}"), message));
            continue;
        }
        rebase_scripts(&mut a, scripts, &a_at, problems);
        // An assertion's `config` reaches a script as `context.config`.
        let config = a.as_object_mut().and_then(|o| o.remove("config"));
        let given = with_context(&mut a, scripts.rubric_prompt.as_ref());
        let mut grader = json!({"type": "promptfoo", "assertion": a});
        if given || scripts.transform.is_some() {
            grader["context"] = scripts.context.clone();
            if let Some(config) = config {
                grader["context"]["config"] = config;
            }
        }
        if let Some(code) = &scripts.transform {
            grader["transform"] = json!(code);
        }
        if let Some(judge) = scripts.judge.as_ref().filter(|_| asks_judge(&a)) {
            grader["judge"] = judge.clone();
        }
        if let Some(w) = a.get("weight") {
            grader["weight"] = w.clone();
        }
        let name = a.get("metric").and_then(Value::as_str).map(str::to_owned);
        grader["name"] = json!(name.unwrap_or_else(|| a["type"].as_str().unwrap_or("promptfoo").to_owned()));
        out.push(grader);
    }
    out
}
