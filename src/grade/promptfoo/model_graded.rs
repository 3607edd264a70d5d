//! promptfoo's model-graded assertions besides `llm-rubric` (0.123.1, `src/matchers/
//! llmGrading.ts`): `model-graded-closedqa`, `factuality` and `g-eval`, each with promptfoo's
//! own grading prompts (`grader_prompts.json`, taken verbatim from promptfoo's build), a
//! test's `rubricPrompt` in their place, rendered as promptfoo renders them (each string of
//! a JSON chat prompt, else the whole text, with Nunjucks' `{{ }}`), sent to the suite's
//! judge and read as promptfoo reads the reply.

use std::sync::LazyLock;

use serde_json::{Map, Value, json};

use super::json_in_text::json_objects;
use super::promptfoo_check::js_string;
use crate::grade::{GradeInput, JudgeCall};
use crate::llm::spec::LlmSpec;
use crate::llm::types::{ChatMessage, ChatRequest, Role};

/// promptfoo's grading prompts, by its constant's name.
static PROMPTS: LazyLock<Map<String, Value>> =
    LazyLock::new(|| serde_json::from_str(include_str!("grader_prompts.json")).expect("promptfoo's prompts are JSON"));

pub(super) fn default_prompt(name: &str) -> &'static str {
    PROMPTS.get(name).and_then(Value::as_str).expect("a prompt of grader_prompts.json")
}

/// Which model-graded assertion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Graded {
    ClosedQa,
    Factuality,
    GEval,
}

/// A model-graded assertion: its kind, its `value` (the criterion, the expert answer; for
/// `g-eval` one criterion or several) and the test's `rubricPrompt` when one is set.
#[derive(Debug)]
pub(super) struct ModelGraded {
    pub kind: Graded,
    pub value: Vec<String>,
    pub rubric_prompt: Option<Value>,
}

/// A value as promptfoo puts it in a grading prompt (`tryParse`, then objects as JSON).
pub(super) fn template_value(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => json!(serde_json::to_string(&v).unwrap_or_default()),
        Ok(v) => v,
        Err(_) => json!(text),
    }
}

/// promptfoo's `renderLlmRubricPrompt`: a JSON prompt has each of its strings rendered and
/// is written back as JSON; any other text is rendered whole.
pub(super) fn render(prompt: &str, vars: &Map<String, Value>) -> Result<String, String> {
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Lenient);
    let one = |text: &str| env.render_str(text, vars).map_err(|e| format!("the grading prompt does not render: {e}"));
    fn each(v: &Value, one: &dyn Fn(&str) -> Result<String, String>) -> Result<Value, String> {
        Ok(match v {
            Value::String(s) => Value::String(one(s)?),
            Value::Array(l) => Value::Array(l.iter().map(|x| each(x, one)).collect::<Result<_, _>>()?),
            Value::Object(o) => {
                Value::Object(o.iter().map(|(k, x)| Ok((k.clone(), each(x, one)?))).collect::<Result<_, String>>()?)
            }
            other => other.clone(),
        })
    }
    match serde_json::from_str::<Value>(prompt) {
        Ok(parsed) => Ok(each(&parsed, &one)?.to_string()),
        Err(_) => one(prompt),
    }
}

/// The request promptfoo's OpenAI provider makes of a rendered prompt: a JSON list of
/// `{role, content}` messages as they are (system messages first), any other text one user
/// message.
fn request(prompt: &str, input: &GradeInput<'_>) -> Result<ChatRequest, String> {
    let spec = input.judge.ok_or("no judge is configured (promptfoo's grading provider: `defaultTest.options.provider`)")?;
    let mut system = Vec::new();
    let mut messages = Vec::new();
    match serde_json::from_str::<Value>(prompt) {
        Ok(Value::Array(list)) => {
            for m in &list {
                let content = m.get("content").map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_owned));
                match (m.get("role").and_then(Value::as_str), content) {
                    (Some("system"), Some(c)) => system.push(c),
                    (Some("user"), Some(c)) => messages.push(ChatMessage::text(Role::User, c)),
                    (Some("assistant"), Some(c)) => messages.push(ChatMessage::text(Role::Assistant, c)),
                    _ => return Err(format!("a grading prompt message evalgate cannot send: {m}")),
                }
            }
        }
        _ => messages.push(ChatMessage::text(Role::User, prompt)),
    }
    Ok(judge_request(spec, (!system.is_empty()).then(|| system.join("\n\n")), messages))
}

/// A request to the judge `spec` with its model and sampling settings, no tools.
pub(super) fn judge_request(spec: &LlmSpec, system: Option<String>, messages: Vec<ChatMessage>) -> ChatRequest {
    ChatRequest {
        model: spec.model.clone(),
        system,
        messages,
        tools: Vec::new(),
        force_tool: None,
        tool_choice: None,
        temperature: spec.temperature,
        max_tokens: spec.max_tokens,
        seed: spec.seed,
    }
}

/// Sends `request` to the suite's judge, its call counted in `judge_calls`; its reply's text.
pub(super) async fn send(request: &ChatRequest, input: &GradeInput<'_>, judge_calls: &mut Vec<JudgeCall>) -> Result<String, String> {
    let spec = input.judge.ok_or("no judge is configured")?;
    let completion = input.llm.complete(spec, request, true).await.map_err(|e| format!("judge: {e}"))?;
    judge_calls.push(JudgeCall { cost_usd: completion.cost_usd, cached: completion.cached });
    Ok(completion.response.text)
}

/// Asks the suite's judge a rendered promptfoo prompt; its reply's text.
pub(super) async fn ask(prompt: &str, input: &GradeInput<'_>, judge_calls: &mut Vec<JudgeCall>) -> Result<String, String> {
    send(&request(prompt, input)?, input, judge_calls).await
}

/// Asks the suite's judge the test's `rubricPrompt` (text, or a chat as JSON) rendered with
/// `vars`; its reply's text.
pub(super) async fn ask_with(
    rubric_prompt: &Value,
    vars: &Map<String, Value>,
    input: &GradeInput<'_>,
    judge_calls: &mut Vec<JudgeCall>,
) -> Result<String, String> {
    let text = prompt_of(Some(rubric_prompt), None, "");
    ask(&render(&text, vars)?, input, judge_calls).await
}

/// The prompt to use: the test's `rubricPrompt` (text, or a chat as JSON; for `g-eval` its
/// `steps` / `evaluate` part), else promptfoo's.
pub(super) fn prompt_of(rubric: Option<&Value>, part: Option<&str>, default: &str) -> String {
    let chosen = match (rubric, part) {
        (Some(Value::Object(o)), Some(part)) => o.get(part),
        (Some(Value::Object(o)), None) if o.is_empty() => None,
        (Some(v), None) => Some(v),
        _ => None,
    };
    match chosen {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(v @ (Value::Array(_) | Value::Object(_))) => v.to_string(),
        _ => default.to_owned(),
    }
}

impl ModelGraded {
    /// promptfoo's verdict `(pass, score, reason)`. The closed-QA and factuality handlers
    /// read no `not-`, so neither does this; `g-eval` inverts its verdict and score, but not
    /// a malformed reply. `context` holds the rendered prompt the output answers and the vars.
    pub async fn verdict(
        &self,
        input: &GradeInput<'_>,
        context: &Map<String, Value>,
        threshold: Option<f64>,
        inverse: bool,
        judge_calls: &mut Vec<JudgeCall>,
    ) -> Result<(bool, f64, String), String> {
        let prompt = context.get("prompt").and_then(Value::as_str).unwrap_or_default();
        let mut vars = context.get("vars").and_then(Value::as_object).cloned().unwrap_or_default();
        // `processContextForTemplating`: objects are shown as JSON.
        for v in vars.values_mut() {
            if v.is_object() {
                *v = json!(v.to_string());
            } else if let Value::Array(items) = v {
                for item in items.iter_mut().filter(|i| i.is_object() || i.is_array()) {
                    *item = json!(item.to_string());
                }
            }
        }
        if prompt.is_empty() && self.kind != Graded::GEval {
            // promptfoo's handlers need the prompt (`invariant(prompt, …)`): an error.
            return Err("a model-graded assertion needs the prompt, and it rendered empty".into());
        }
        let completion = template_value(input.output);
        let value = self.value.first().cloned().unwrap_or_default();
        match self.kind {
            Graded::ClosedQa => {
                vars.extend([("input".into(), json!(prompt)), ("criteria".into(), json!(value)), ("completion".into(), completion)]);
                let text = prompt_of(self.rubric_prompt.as_ref(), None, default_prompt("OPENAI_CLOSED_QA_PROMPT"));
                let reply = ask(&render(&text, &vars)?, input, judge_calls).await?;
                if reply.is_empty() {
                    return Ok((false, 0.0, "No output".into()));
                }
                let end = reply.trim_end();
                let pass = end.ends_with('Y');
                let reason = if pass {
                    format!("The submission meets the criterion:\n{reply}")
                } else if end.ends_with('N') {
                    format!("The submission does not meet the criterion:\n{reply}")
                } else {
                    format!("Model grader produced a malformed response:\n{reply}")
                };
                Ok((pass, if pass { 1.0 } else { 0.0 }, reason))
            }
            Graded::Factuality => {
                vars.extend([("input".into(), json!(prompt)), ("ideal".into(), json!(value)), ("completion".into(), completion)]);
                let text = prompt_of(self.rubric_prompt.as_ref(), None, default_prompt("PROMPTFOO_FACTUALITY_PROMPT"));
                let reply = ask(&render(&text, &vars)?, input, judge_calls).await?;
                if reply.is_empty() {
                    return Ok((false, 0.0, "No output".into()));
                }
                Ok(match factuality(&reply) {
                    Ok((option, reason)) => {
                        // The default scores: D (a disagreement) 0, every other category 1.
                        let pass = option != 'D';
                        (pass, if pass { 1.0 } else { 0.0 }, reason)
                    }
                    Err(why) => (false, 0.0, why),
                })
            }
            Graded::GEval => {
                let threshold = threshold.unwrap_or(0.7);
                let mut scores = Vec::new();
                for (i, criterion) in self.value.iter().enumerate() {
                    match self.g_eval(criterion, input, prompt, judge_calls).await? {
                        Ok(scored) => scores.push(scored),
                        Err(why) if self.value.len() > 1 => {
                            let n = self.value.len();
                            return Ok((false, 0.0, format!("G-Eval criterion {}/{n} failed: {why}", i + 1)));
                        }
                        Err(why) => return Ok((false, 0.0, why)),
                    }
                }
                if scores.is_empty() {
                    return Ok((false, 0.0, "G-Eval assertion requires at least one criterion string in the value array.".into()));
                }
                let score = scores.iter().map(|(s, _)| s).sum::<f64>() / scores.len() as f64;
                let reason = scores.into_iter().map(|(_, r)| r).collect::<Vec<_>>().join("\n\n");
                Ok(((score >= threshold) != inverse, if inverse { 1.0 - score } else { score }, reason))
            }
        }
    }

    /// promptfoo's `matchesGEval`: the judge writes evaluation steps for the criterion, then
    /// scores the reply 0..10 by them; `Ok(Ok((score / 10, reason)))`, `Ok(Err(why))` for a
    /// malformed reply (promptfoo's grader failure, which fails whatever the `not-`).
    async fn g_eval(
        &self,
        criterion: &str,
        input: &GradeInput<'_>,
        prompt: &str,
        judge_calls: &mut Vec<JudgeCall>,
    ) -> Result<Result<(f64, String), String>, String> {
        let fail = |why: String| Ok(Err(why));
        if prompt.is_empty() {
            return Err("No source text to estimate reply".into());
        }
        let criteria = Map::from_iter([("criteria".to_owned(), json!(criterion))]);
        let text = prompt_of(self.rubric_prompt.as_ref(), Some("steps"), default_prompt("GEVAL_PROMPT_STEPS"));
        let reply = ask(&render(&text, &criteria)?, input, judge_calls).await?;
        if reply.is_empty() {
            return fail("G-Eval step-generation call returned no output".into());
        }
        static STEPS: LazyLock<regex::Regex> = LazyLock::new(|| regex::Regex::new(r#"\{"steps".+\}"#).expect("valid"));
        let Some(found) = STEPS.find(&reply) else {
            return fail(format!("LLM-proposed evaluation steps are not in JSON format: {reply}"));
        };
        let steps = match serde_json::from_str::<Value>(found.as_str()) {
            Ok(v) => v.get("steps").cloned().unwrap_or(Value::Null),
            Err(e) => return fail(format!("LLM-proposed evaluation steps are not in JSON format: {e}")),
        };
        let Some(steps) = steps.as_array() else {
            return fail(format!("G-Eval steps response has invalid or missing steps: {steps}"));
        };
        if steps.is_empty() {
            return fail("LLM does not propose any evaluation step".into());
        }
        let steps: Option<Vec<&str>> =
            steps.iter().map(|s| s.as_str().filter(|s| !s.trim().is_empty())).collect();
        let Some(steps) = steps else { return fail("G-Eval steps response contains invalid steps".into()) };
        let vars = Map::from_iter([
            ("criteria".to_owned(), json!(criterion)),
            ("steps".to_owned(), json!(steps.join("\n- "))),
            ("maxScore".to_owned(), json!("10")),
            ("input".to_owned(), template_value(prompt)),
            ("output".to_owned(), template_value(input.output)),
        ]);
        let text = prompt_of(self.rubric_prompt.as_ref(), Some("evaluate"), default_prompt("GEVAL_PROMPT_EVALUATE"));
        let reply = ask(&render(&text, &vars)?, input, judge_calls).await?;
        if reply.is_empty() {
            return fail("G-Eval evaluation call returned no output".into());
        }
        static RESULT: LazyLock<regex::Regex> = LazyLock::new(|| regex::Regex::new(r"\{.+\}").expect("valid"));
        let Some(found) = RESULT.find(&reply) else {
            return fail(format!("LLM-proposed evaluation result is not in JSON format: {reply}"));
        };
        let result = match serde_json::from_str::<Value>(found.as_str()) {
            Ok(v) => v,
            Err(e) => return fail(format!("LLM-proposed evaluation result is not in JSON format: {e}")),
        };
        let score = match result.get("score") {
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::String(s)) if !s.trim().is_empty() => js_number(s),
            _ => None,
        };
        let Some(score) = score.filter(|s| s.is_finite()) else {
            return fail(format!("G-Eval result has invalid or missing score: {}", result.get("score").unwrap_or(&Value::Null)));
        };
        if !(0.0..=10.0).contains(&score) {
            return fail(format!("G-Eval result score {score} is outside the expected 0-10 range"));
        }
        let Some(reason) = result.get("reason").and_then(Value::as_str).filter(|r| !r.trim().is_empty()) else {
            return fail("G-Eval result has invalid or missing reason".into());
        };
        Ok(Ok((score / 10.0, reason.to_owned())))
    }
}

/// JavaScript's `Number(text)` for the texts a judge writes: trimmed decimal, or nothing.
fn js_number(text: &str) -> Option<f64> {
    let t = text.trim();
    if t.is_empty() {
        return Some(0.0);
    }
    t.parse::<f64>().ok().filter(|_| !t.contains(|c: char| c.is_ascii_alphabetic() && !matches!(c, 'e' | 'E')))
}

/// promptfoo's reading of a factuality reply: the first JSON object's `category` (A–E,
/// another letter an error), else the legacy `(X)` pattern; the option and the reason.
fn factuality(reply: &str) -> Result<(char, String), String> {
    if let Some(first) = json_objects(reply).into_iter().next()
        && let Some(category) = first.get("category").and_then(Value::as_str).filter(|c| !c.is_empty())
    {
        let option = category.trim().to_uppercase();
        let letter = option.chars().next().filter(|c| option.len() == 1 && ('A'..='E').contains(c));
        let Some(letter) = letter else { return Err(format!("Invalid category value: {option}")) };
        let reason = first.get("reason").map(js_string).map(|r| r.trim().to_owned()).filter(|r| !r.is_empty());
        return Ok((letter, reason.unwrap_or_else(|| format!("Category {letter}"))));
    }
    static LEGACY: LazyLock<regex::Regex> = LazyLock::new(|| regex::Regex::new(r"\s*\(?([a-eA-E])\)").expect("valid"));
    let Some(found) = LEGACY.captures(reply) else {
        return Err(format!("Factuality checker output did not match expected format: {reply}"));
    };
    let letter = found[1].to_uppercase().chars().next().unwrap_or('D');
    static REASON: LazyLock<regex::Regex> = LazyLock::new(|| regex::Regex::new(r"(?s)\)\s*(.*)").expect("valid"));
    let reason = REASON.captures(reply).map(|c| c[1].trim().to_owned()).filter(|r| !r.is_empty());
    Ok((letter, reason.unwrap_or_else(|| reply.to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factuality_reads_json_then_the_legacy_letter() {
        assert_eq!(factuality(r#"x {"category": "b", "reason": "more"} y"#).unwrap(), ('B', "more".into()));
        assert!(factuality(r#"{"category": "F"}"#).is_err(), "a letter outside A-E is an error");
        assert_eq!(factuality("(D) they disagree").unwrap().0, 'D');
        assert!(factuality("no idea").is_err());
    }

    #[test]
    fn prompts_render_each_string_of_a_json_chat() {
        let vars = Map::from_iter([("input".to_owned(), json!("Q \"x\""))]);
        let out: Value = serde_json::from_str(&render(r#"[{"role": "system", "content": "T: {{input}}"}]"#, &vars).unwrap()).unwrap();
        assert_eq!(out, json!([{"role": "system", "content": "T: Q \"x\""}]));
        assert!(default_prompt("OPENAI_CLOSED_QA_PROMPT").contains("[Criterion]: {{criteria}}"));
    }
}
