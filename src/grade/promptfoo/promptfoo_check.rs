//! One promptfoo assertion as promptfoo 0.123.1 runs it (`src/assertions/*.ts`): `not-`
//! inverts it inside the check (each type says how, e.g. a metric's score becomes 1 − score),
//! an assertion with `weight: 0` always passes (it counts for nothing), and an `assert-set`
//! passes when all its assertions do, or its weighted score reaches its `threshold`.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::json_in_text::json_objects;
use super::llm_rubric::llm_rubric;
use super::overlap::{bleu, levenshtein, rouge_n};
use super::model_graded::ModelGraded;
use super::script_assertion::{Language, Script};
use super::similarity::{Similar, answer_relevance};
use crate::grade::{CompileGrader, Grade, GradeInput, GradeResult, Graded, JudgeCall, OutputRead};
use crate::source::{KeyPath, ValidateCx};
use crate::uses::Uses;

mod assertion_read;
pub use assertion_read::js_string;

/// A promptfoo assertion, graded as promptfoo grades it (written by the promptfoo converter).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPromptfoo {
    /// The assertion as promptfoo writes it (`type`, `value`, `threshold`, `weight`,
    /// `assert` of an `assert-set`), its values already rendered with the test's variables.
    pub assertion: Value,
    /// What promptfoo gives a `javascript` or `python` assertion as `context` (`prompt`,
    /// `vars`, `test`), written by the converter.
    #[serde(default)]
    pub context: serde_json::Map<String, Value>,
    /// The test's `options.transform` (inline JavaScript, or `file://PATH[:FUNCTION]`, a
    /// `.js`/`.cjs`/`.mjs` or `.py` file relative to the suite): the output the assertion sees.
    pub transform: Option<String>,
    /// The test's own grading provider (`options.provider`), in place of the suite's judge.
    pub judge: Option<crate::llm::spec::RawJudge>,
}

/// The assertion types this grader runs, as written (each also with `not-`).
pub const SUPPORTED: [&str; 28] = [
    "equals",
    "contains",
    "icontains",
    "contains-any",
    "icontains-any",
    "contains-all",
    "icontains-all",
    "starts-with",
    "regex",
    "is-json",
    "contains-json",
    "levenshtein",
    "rouge-n",
    "bleu",
    "cost",
    "latency",
    "assert-set",
    "llm-rubric",
    "javascript",
    "python",
    "model-graded-closedqa",
    "factuality",
    "g-eval",
    "is-valid-openai-tools-call",
    "is-valid-openai-function-call",
    "is-valid-function-call",
    "similar",
    "answer-relevance",
];

/// A checked assertion.
#[derive(Debug)]
pub struct Assertion {
    kind: Kind,
    /// Written `not-TYPE`.
    inverse: bool,
    /// `weight: 0`: it always passes (promptfoo's `runAssertion`).
    uncounted: bool,
    /// Its weight inside an `assert-set` (the task's grader weight at the top).
    weight: f64,
    /// The assertion's `threshold` (a metric's pass mark, a set's score to reach).
    threshold: Option<f64>,
}

#[derive(Debug)]
enum Kind {
    Equals(Value),
    Contains { value: String, ignore_case: bool },
    ContainsAny { values: Vec<String>, ignore_case: bool },
    ContainsAll { values: Vec<String>, ignore_case: bool },
    StartsWith(String),
    /// `None`: a pattern JavaScript refuses too, which fails.
    Regex(Option<regex::Regex>),
    IsJson(Option<Box<jsonschema::Validator>>),
    ContainsJson(Option<Box<jsonschema::Validator>>),
    Levenshtein(String),
    Rouge(String),
    Bleu(Vec<String>),
    Cost,
    Latency,
    Set(Vec<Assertion>),
    /// The suite's judge asked promptfoo's default rubric prompt about the output.
    LlmRubric(String, Option<Value>),
    /// A `javascript` or `python` assertion, run by node or python3.
    Script(Script),
    /// `model-graded-closedqa`, `factuality` or `g-eval`, asked of the suite's judge.
    ModelGraded(ModelGraded),
    /// `is-valid-openai-tools-call`: a model agent's calls against its declared tools.
    ToolsCall,
    /// `is-valid-openai-function-call` / `is-valid-function-call`: promptfoo checks a
    /// legacy `functions` call through the provider, which fails on every provider and
    /// answer evalgate converts (`functions` is not carried).
    FunctionCall,
    /// `similar[:METRIC]`, by the judge's embedding model.
    Similar(Similar),
    /// `answer-relevance` (its `rubricPrompt`), by the judge and its embedding model.
    AnswerRelevance(Option<Value>),
}

/// A problem with an assertion: the JSON pointer below it (`/value`, `/assert/1/type`) and
/// the message.
pub type Problem = (String, String);

impl Assertion {
    /// Its scripts (here or in its set), to resolve their files and name their programs.
    fn scripts(&mut self) -> Vec<&mut Script> {
        match &mut self.kind {
            Kind::Script(s) => vec![s],
            Kind::Set(items) => items.iter_mut().flat_map(Assertion::scripts).collect(),
            _ => Vec::new(),
        }
    }

    /// The programs its scripts run (`node`, `python3`), for preflight.
    fn programs(&self) -> Vec<&'static str> {
        match &self.kind {
            Kind::Script(s) if s.language == Language::Javascript => vec!["node"],
            Kind::Script(_) => vec!["python3"],
            Kind::Set(items) => items.iter().flat_map(Assertion::programs).collect(),
            _ => Vec::new(),
        }
    }

    /// Whether it reads the calls a model agent answered with (here or in its set): a
    /// transform's text would hide them.
    fn reads_calls(&self) -> bool {
        match &self.kind {
            Kind::ToolsCall => true,
            Kind::Set(items) => items.iter().any(Assertion::reads_calls),
            _ => false,
        }
    }

    /// Whether it asks the suite's judge (an `llm-rubric`, here or in its set).
    /// Whether it asks the suite's judge (a model-graded or embedding assertion, here or in
    /// its set).
    fn judged(&self) -> bool {
        match &self.kind {
            Kind::LlmRubric(..) | Kind::ModelGraded(_) | Kind::Similar(_) | Kind::AnswerRelevance(_) => true,
            Kind::Set(items) => items.iter().any(Assertion::judged),
            _ => false,
        }
    }

    /// promptfoo's verdict: `(pass, score, reason)`; `Err` where promptfoo throws (an error).
    async fn run(&self, input: &GradeInput<'_>, scope: &Scope, judge_calls: &mut Vec<JudgeCall>) -> Result<(bool, f64, String), String> {
        let output = input.output;
        let inv = self.inverse;
        let not = if inv { "not " } else { "" };
        let binary = |pass: bool, why: String| (pass, if pass { 1.0 } else { 0.0 }, if pass { "Assertion passed".into() } else { why });
        let lower = |s: &str| s.to_lowercase();
        let (pass, score, reason) = match &self.kind {
            Kind::Equals(expected) => {
                let equal = match expected {
                    Value::Object(_) | Value::Array(_) => {
                        serde_json::from_str::<Value>(output).is_ok_and(|got| js_deep_equal(expected, &got))
                    }
                    other => js_string(other) == output,
                };
                binary(equal != inv, format!("Expected output to {not}equal \"{}\"", js_string(expected)))
            }
            Kind::Contains { value, ignore_case } => {
                let found = if *ignore_case { lower(output).contains(&lower(value)) } else { output.contains(value.as_str()) };
                binary(found != inv, format!("Expected output to {not}contain \"{value}\""))
            }
            Kind::ContainsAny { values, ignore_case } => {
                let found = values.iter().any(|v| if *ignore_case { lower(output).contains(&lower(v)) } else { output.contains(v.as_str()) });
                binary(found != inv, format!("Expected output to {not}contain one of \"{}\"", values.join(", ")))
            }
            Kind::ContainsAll { values, ignore_case } => {
                let missing: Vec<&String> = values
                    .iter()
                    .filter(|v| !if *ignore_case { lower(output).contains(&lower(v)) } else { output.contains(v.as_str()) })
                    .collect();
                let why = format!("Expected output to {not}contain all of [{}]", values.join(", "));
                binary(missing.is_empty() != inv, why)
            }
            Kind::StartsWith(v) => binary(output.starts_with(v.as_str()) != inv, format!("Expected output to {not}start with \"{v}\"")),
            Kind::Regex(None) => (false, 0.0, "Invalid regex pattern".into()),
            Kind::Regex(Some(re)) => binary(re.is_match(output) != inv, format!("Expected output to {not}match regex \"{}\"", re.as_str())),
            Kind::IsJson(validator) => match serde_json::from_str::<Value>(output) {
                Err(_) => binary(inv, format!("Expected output to {not}be valid JSON")),
                Ok(parsed) => match validator {
                    None => binary(!inv, format!("Expected output to {not}be valid JSON")),
                    Some(v) => {
                        let pass = v.is_valid(&parsed) != inv;
                        (pass, if pass { 1.0 } else { 0.0 }, if pass { "Assertion passed".into() } else { "JSON does not conform to the provided schema".into() })
                    }
                },
            },
            Kind::ContainsJson(validator) => {
                let objects = json_objects(output);
                let mut pass = if inv { objects.is_empty() } else { !objects.is_empty() };
                if let Some(v) = validator {
                    for o in &objects {
                        let valid = v.is_valid(o);
                        pass = valid != inv;
                        if valid {
                            break;
                        }
                    }
                }
                binary(pass, format!("Expected output to {not}contain valid JSON"))
            }
            Kind::Levenshtein(v) => {
                let d = levenshtein(output, v);
                let t = self.threshold.unwrap_or(5.0);
                binary((d as f64 <= t) != inv, format!("Levenshtein distance {d} against threshold {t}"))
            }
            Kind::Rouge(v) => {
                let s = rouge_n(&lower(output), &lower(v));
                let t = self.threshold.unwrap_or(0.75);
                ((s >= t) != inv, if inv { 1.0 - s } else { s }, format!("ROUGE-N score {s:.2} against threshold {t}"))
            }
            Kind::Bleu(refs) => {
                let s = bleu(output, refs);
                let t = self.threshold.unwrap_or(0.5);
                let pass = (s >= t) != inv;
                (pass, if inv { 1.0 - s } else { s }, if pass { "Assertion passed".into() } else { format!("BLEU score {s:.4} against threshold {t}") })
            }
            Kind::Cost => {
                let cost = input.trace.usage.as_ref().and_then(|u| u.cost_usd).ok_or("the provider reported no cost (promptfoo's `cost` assertion needs one)")?;
                let t = self.threshold.unwrap_or_default();
                binary((cost <= t) != inv, format!("Cost {cost:.2e} against threshold {t}"))
            }
            Kind::Latency => {
                let ms = input.latency.as_millis() as f64;
                let t = self.threshold.unwrap_or_default();
                binary((ms <= t) != inv, format!("Latency {ms}ms against threshold {t}ms"))
            }
            Kind::Set(items) => {
                let (mut total, mut weight, mut failed) = (0.0, 0.0, None);
                for item in items {
                    let (pass, score, reason) = item.verdict(input, scope, judge_calls).await?;
                    total += score * item.weight;
                    weight += item.weight;
                    if !pass {
                        failed = Some(reason);
                    }
                }
                let score = if weight > 0.0 { total / weight } else { 0.0 };
                match self.threshold {
                    Some(t) => (score >= t, score, format!("Aggregate score {score:.2} against the set's threshold {t}")),
                    None => (failed.is_none(), score, failed.unwrap_or_else(|| "All assertions passed".into())),
                }
            }
            Kind::LlmRubric(rubric, prompt) => match llm_rubric(rubric, prompt.as_ref(), self.threshold, input, scope, judge_calls).await? {
                // A reply that could not be read fails, `not-` or not (promptfoo's grader failure).
                Err(failure) => (false, 0.0, failure),
                Ok((pass, score, reason)) => (pass != inv, if inv { (1.0 - score).clamp(0.0, 1.0) } else { score }, reason),
            },
            Kind::Script(script) => {
                let timeout = input.timeout.min(super::script_assertion::TIMEOUT);
                script.verdict(output, &scope.context, self.threshold, inv, &scope.dir, timeout).await?
            }
            Kind::ModelGraded(graded) => graded.verdict(input, &scope.context, self.threshold, inv, judge_calls).await?,
            // promptfoo's handler ignores `not-`.
            Kind::ToolsCall => {
                let (pass, why) = super::tools_call::tools_call(output, input.trace.declared.as_ref());
                binary(pass, why)
            }
            Kind::FunctionCall => binary(false, "OpenAI did not return a valid-looking function call".into()),
            Kind::Similar(similar) => similar.verdict(input, self.threshold, inv, judge_calls).await?,
            Kind::AnswerRelevance(prompt) => {
                answer_relevance(prompt.as_ref(), &scope.context, self.threshold, inv, input, judge_calls).await?
            }
        };
        Ok((pass, score, reason))
    }

    /// The verdict with `weight: 0` applied (promptfoo passes such an assertion whatever it
    /// found). Boxed: a set's verdict awaits its members'.
    fn verdict<'a>(
        &'a self,
        input: &'a GradeInput<'_>,
        scope: &'a Scope,
        judge_calls: &'a mut Vec<JudgeCall>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Verdict> + Send + 'a>> {
        Box::pin(async move {
            let (pass, score, reason) = self.run(input, scope, judge_calls).await?;
            Ok((pass || (self.uncounted && !matches!(self.kind, Kind::Set(_))), score, reason))
        })
    }
}

/// An assertion's verdict: `(pass, score, reason)`, `Err` where promptfoo errors.
pub(super) type Verdict = Result<(bool, f64, String), String>;

/// Node's `isDeepStrictEqual` on JSON values: numbers by value, keys in any order.
fn js_deep_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| js_deep_equal(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| js_deep_equal(v, w)))
        }
        _ => a == b,
    }
}

/// What a script assertion runs in: promptfoo's `context` and the suite's directory (its
/// working directory, as promptfoo's is the config's).
#[derive(Debug)]
pub(super) struct Scope {
    pub(super) context: serde_json::Map<String, Value>,
    dir: std::path::PathBuf,
}

/// A compiled `promptfoo` grader.
#[derive(Debug)]
pub struct PromptfooCheck {
    assertion: Assertion,
    scope: Scope,
    transform: Option<String>,
    judge: Option<crate::llm::spec::LlmSpec>,
}

impl CompileGrader for RawPromptfoo {
    type Check = PromptfooCheck;

    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<PromptfooCheck> {
        match Assertion::read(&self.assertion) {
            Ok(mut assertion) => {
                let dir = cx.resolve_path("");
                for script in assertion.scripts() {
                    script.resolve(&dir);
                    if let Some(file) = script.file().filter(|f| !f.is_file()) {
                        cx.error(&path.key("assertion").key("value"), format!("no script file `{}`", file.display()));
                    }
                }
                if let Some((file, _)) = self.transform.as_deref().and_then(super::script_assertion::transform_file)
                    && !dir.join(file).is_file()
                {
                    cx.error(&path.key("transform"), format!("no transform file `{file}`"));
                }
                let judge = match &self.judge {
                    Some(j) => Some(crate::llm::judge_calibration::judge_spec(cx, j, &path.key("judge"))?),
                    None => None,
                };
                if self.transform.is_some() && assertion.reads_calls() {
                    cx.error(
                        &path.key("transform"),
                        "`is-valid-openai-tools-call` reads the calls the provider returned, which a transform's text would replace: not supported with `options.transform`",
                    );
                }
                let scope = Scope { context: self.context, dir };
                Some(PromptfooCheck { assertion, scope, transform: self.transform, judge })
            }
            Err((at, message)) => {
                cx.error(&path.key("assertion"), format!("{}: {message}", if at.is_empty() { "/" } else { &at }));
                None
            }
        }
    }
}

impl Grade for PromptfooCheck {
    async fn grade(&self, input: &GradeInput<'_>, judge_calls: &mut Vec<JudgeCall>) -> GradeResult {
        let transformed = match &self.transform {
            Some(code) => {
                let timeout = input.timeout.min(super::script_assertion::TIMEOUT);
                Some(super::script_assertion::transform(code, input.output, &self.scope.context, &self.scope.dir, timeout).await?)
            }
            None => None,
        };
        let input = GradeInput {
            output: transformed.as_deref().unwrap_or(input.output),
            judge: self.judge.as_ref().or(input.judge),
            ..*input
        };
        let (passed, score, reason) = self.assertion.verdict(&input, &self.scope, judge_calls).await?;
        Ok(Graded { score: score.clamp(0.0, 1.0), passed, reason, evidence: None, unobserved: false })
    }

    fn uses(&self) -> Uses<'_> {
        let judges = match (&self.judge, self.assertion.judged()) {
            (_, false) => Vec::new(),
            (Some(own), true) => vec![crate::uses::Judge::Own(own)],
            (None, true) => vec![crate::uses::Judge::SuiteDefault],
        };
        let transform = self.transform.as_deref().map(super::script_assertion::transform_program);
        let programs = self.assertion.programs().into_iter().chain(transform);
        let programs = programs
            .map(|p| crate::uses::Program { what: "promptfoo script assertion", command: crate::uses::ProgramCommand::Literal(p), workdir: None })
            .collect();
        Uses { judges, programs, ..Uses::default() }
    }

    fn reads_output(&self) -> OutputRead {
        OutputRead::Whole
    }
}
