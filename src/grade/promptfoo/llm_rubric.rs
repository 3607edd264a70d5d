//! promptfoo's `llm-rubric`: its default grading prompt (or the test's `rubricPrompt`) sent
//! to the judge, and the reply read as promptfoo 0.123.1 reads it.

use serde_json::Value;

use super::json_in_text::json_objects;
use super::promptfoo_check::{Scope, Verdict, js_string};
use crate::grade::{GradeInput, JudgeCall};

/// promptfoo's `DEFAULT_GRADING_PROMPT` (0.123.1): the system message, then the user's,
/// whose `{{ output }}` and `{{ rubric }}` are filled in.
const RUBRIC_SYSTEM: &str = "You are grading output according to a user-specified rubric. If the statement in the rubric is true, then the output passes the test. You respond with a JSON object with this structure: {reason: string, pass: boolean, score: number}

Examples:

<Output>Hello world</Output>
<Rubric>Content contains a greeting</Rubric>
{\"reason\": \"the content contains the word 'Hello'\", \"pass\": true, \"score\": 1.0}

<Output>Avast ye swabs, repel the invaders!</Output>
<Rubric>Does not speak like a pirate</Rubric>
{\"reason\": \"'avast ye' is a common pirate term\", \"pass\": false, \"score\": 0.0}";

/// The output as promptfoo puts it in the grading prompt: JSON it parses is shown as
/// `JSON.stringify` writes it (a string as itself, null as nothing), other text as it is.
fn output_for_grading(output: &str) -> String {
    match serde_json::from_str::<Value>(output) {
        Ok(Value::String(s)) => s,
        Ok(Value::Null) => String::new(),
        Ok(v @ (Value::Object(_) | Value::Array(_))) => serde_json::to_string(&v).unwrap_or_default(),
        Ok(v) => js_string(&v),
        Err(_) => output.to_owned(),
    }
}

/// promptfoo's `llm-rubric` (`matchesLlmRubric`, `runJsonGradingPrompt`): the judge's first
/// JSON object in its reply is the verdict; `pass` defaults to true (a non-boolean is read
/// as `true`/`yes`/`pass`/`y`), `score` to the pass as 0 or 1, and with a `threshold` the
/// score must reach it too. `Ok(Err(why))`: a reply without JSON, which fails the assertion
/// whatever its `not-` (promptfoo's grader failure); `Err`: the judge could not be asked.
pub(super) async fn llm_rubric(
    rubric: &str,
    rubric_prompt: Option<&Value>,
    threshold: Option<f64>,
    input: &GradeInput<'_>,
    scope: &Scope,
    judge_calls: &mut Vec<JudgeCall>,
) -> Result<Verdict, String> {
    let reply = match rubric_prompt {
        // The test's `rubricPrompt`, rendered with its vars, the output and the rubric.
        Some(prompt) => {
            let mut vars = scope.context.get("vars").and_then(Value::as_object).cloned().unwrap_or_default();
            vars.insert("output".into(), super::model_graded::template_value(input.output));
            vars.insert("rubric".into(), Value::String(rubric.to_owned()));
            super::model_graded::ask_with(prompt, &vars, input, judge_calls).await?
        }
        None => default_llm_rubric(rubric, input, judge_calls).await?,
    };
    Ok(read_llm_rubric(&reply, threshold))
}

/// `llm-rubric` with promptfoo's default prompt: the judge's reply.
async fn default_llm_rubric(rubric: &str, input: &GradeInput<'_>, judge_calls: &mut Vec<JudgeCall>) -> Result<String, String> {
    use crate::llm::types::{ChatMessage, Role};
    let spec = input.judge.ok_or("no judge is configured (promptfoo's grading provider: `defaultTest.options.provider`)")?;
    let user = format!("<Output>\n{}\n</Output>\n<Rubric>\n{rubric}\n</Rubric>", output_for_grading(input.output));
    let request = super::model_graded::judge_request(spec, Some(RUBRIC_SYSTEM.into()), vec![ChatMessage::text(Role::User, user)]);
    super::model_graded::send(&request, input, judge_calls).await
}

/// The judge's `llm-rubric` reply read as promptfoo reads it.
fn read_llm_rubric(reply: &str, threshold: Option<f64>) -> Verdict {
    let Some(parsed) = json_objects(reply).into_iter().next().filter(Value::is_object) else {
        return Err("Could not extract JSON from llm-rubric response".into());
    };
    let mut pass = match parsed.get("pass") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => matches!(js_string(other).to_lowercase().as_str(), "true" | "yes" | "pass" | "y"),
    };
    let score = match parsed.get("score") {
        Some(Value::Number(n)) => n.as_f64().unwrap_or_default(),
        Some(Value::String(s)) if s.trim().parse::<f64>().is_ok_and(f64::is_finite) => s.trim().parse().unwrap_or_default(),
        Some(Value::String(s)) if s.trim().is_empty() => 0.0,
        Some(Value::Bool(b)) => f64::from(u8::from(*b)),
        Some(Value::Null) => 0.0,
        _ => f64::from(u8::from(pass)),
    };
    if let Some(t) = threshold {
        pass = pass && score >= t;
    }
    let reason = parsed.get("reason").map(js_string).filter(|r| !r.is_empty());
    Ok((pass, score, reason.unwrap_or_else(|| if pass { "Grading passed".into() } else { format!("Score {score} below threshold") })))
}
