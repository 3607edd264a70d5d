//! LLM judges: `rubric` (weighted criteria, each judged met or not) and `llm` (the answer
//! semantically contains, or is, the expected text). The judge answers through a forced
//! tool call; an answer that does not parse is asked again once, then the grader errors.

use serde_json::{Value, json};

use schemars::JsonSchema;
use serde::Deserialize;

use super::needle::Needle;
use super::{CompileGrader, Grade, GradeInput, GradeResult, Graded, JudgeCall};
use crate::excerpt::excerpt;
use crate::llm::types::{ChatMessage, ChatRequest, ModelToolCall, Role, ToolDef};
use crate::source::{KeyPath, ValidateCx};
use crate::llm::spec::LlmSpec;
use crate::llm::spec::RawJudge;
use crate::uses::{Judge, Uses};

/// An LLM judge scores weighted criteria; score = weighted share met.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRubric {
    /// What the answer must do, each judged met or not.
    pub criteria: Vec<RawCriterion>,
    /// A reference answer the judge is shown to judge the criteria by (a template): AgentV's
    /// `expected_output`.
    pub reference: Option<String>,
    /// This grader's judge (default: the suite's `judge`).
    pub judge: Option<RawJudge>,
    /// AgentV 4.42.4's `llm-grader` (set by the AgentV converter): the judge gives the answer
    /// one score from 0 to 1 on the criteria, shown the reference answer, and the grader
    /// passes at 0.8.
    #[serde(default)]
    pub agentv: bool,
    /// With `agentv`: AgentV's grader template, its `{{ criteria }}`, `{{ input }}`,
    /// `{{ output }}`, `{{ expected_output }}` filled in (default: AgentV's own).
    pub prompt: Option<String>,
}

/// An LLM judge checks the answer semantically `contains` or is `exact`ly the expected text.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawLlm {
    /// The answer contains this, in meaning (a template).
    pub contains: Option<String>,
    /// The answer is this, in meaning (a template).
    pub exact: Option<String>,
    /// This grader's judge (default: the suite's `judge`).
    pub judge: Option<RawJudge>,
}

/// A rubric criterion: text (equal weights) or `{criterion, weight}`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawCriterion {
    Text(String),
    Weighted {
        /// What the answer must do, in words the judge can check.
        criterion: String,
        /// The criterion's share of the score, relative to the others.
        weight: f64,
    },
}

#[derive(Debug, Clone)]
pub struct JudgeCheck {
    pub judge: Option<LlmSpec>,
    /// The key path of the grader's own judge (its name in calibration files).
    name: String,
    question: Question,
}

#[derive(Debug, Clone)]
enum Question {
    Rubric(Vec<(String, f64)>, Option<Needle>),
    /// AgentV's freeform score: the criteria, the reference, the template.
    Score { criteria: String, reference: Option<Needle>, template: Option<String> },
    Contains(Needle),
    Exact(Needle),
}

/// The verdict of an `llm` judge.
static PASSED_SCHEMA: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
    json!({"type": "object", "properties": {"passed": {"type": "boolean"}, "reason": {"type": "string"}},
        "required": ["passed", "reason"], "additionalProperties": false})
});

/// AgentV 4.42.4's default grader template (`graders/llm-grader.ts`), word for word.
const AGENTV_TEMPLATE: &str = "You are an expert grader. Your goal is to grade the answer based on how well it achieves the criteria for the original task.

Use the reference_answer as a gold standard for a high-quality response (if provided). The reference_answer may be a simple text response, or it may contain a sequence of expected agent messages including tool calls. When it contains multiple messages, the last message represents the final expected answer. The answer does not need to match it verbatim, but should capture the key points and follow the same spirit.

Be concise and focused in your evaluation. Provide succinct, specific feedback rather than verbose explanations.

[[ ## criteria ## ]]
{{criteria}}

[[ ## question ## ]]
{{input}}

[[ ## reference_answer ## ]]
{{expected_output}}

[[ ## answer ## ]]
{{output}}";

/// The verdict of AgentV's freeform grader: a score from 0 to 1.
static AGENTV_SCHEMA: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
    json!({"type": "object", "properties": {"score": {"type": "number", "minimum": 0, "maximum": 1}, "reason": {"type": "string"}},
        "required": ["score", "reason"], "additionalProperties": false})
});

/// AgentV's `substituteVariables`: each `{{ name }}` of `vars` replaced in one pass (a value
/// is not searched again, so braces in the criteria reach the judge as written); an unknown
/// name stays as written.
fn agentv_template(template: &str, vars: &[(&str, &str)]) -> String {
    static VAR: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\{\{\s*([a-zA-Z0-9_]+)\s*\}\}").expect("valid"));
    VAR.replace_all(template, |c: &regex::Captures| {
        vars.iter().find(|(name, _)| *name == &c[1]).map_or_else(|| c[0].to_owned(), |(_, v)| (*v).to_owned())
    })
    .into_owned()
}

/// Characters of the agent's output shown to the judge.
const ANSWER_LIMIT: usize = 20_000;

impl CompileGrader for RawRubric {
    type Check = JudgeCheck;

    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<JudgeCheck> {
        if self.criteria.is_empty() {
            cx.error(&path.key("criteria"), "list at least one criterion");
            return None;
        }
        let mut parsed = Vec::new();
        for (i, c) in self.criteria.into_iter().enumerate() {
            let (text, weight) = match c {
                RawCriterion::Text(t) => (t, 1.0),
                RawCriterion::Weighted { criterion, weight } => (criterion, weight),
            };
            // AgentV fills an absent `criteria` with nothing.
            if (text.trim().is_empty() && !self.agentv) || !(weight.is_finite() && weight >= 0.0) {
                cx.error(&path.key("criteria").index(i), "a criterion needs text and a weight of 0 or more");
                return None;
            }
            parsed.push((text, weight));
        }
        if parsed.iter().map(|(_, w)| w).sum::<f64>() <= 0.0 {
            cx.error(&path.key("criteria"), "the weights add up to 0");
            return None;
        }
        let reference = match self.reference {
            Some(r) => Some(Needle::compile(cx, &r, &path.key("reference"))?),
            None => None,
        };
        let question = match (self.agentv, self.prompt) {
            (true, template) => {
                let criteria = parsed.into_iter().map(|(c, _)| c).collect::<Vec<_>>().join("\n");
                Question::Score { criteria, reference, template }
            }
            (false, None) => Question::Rubric(parsed, reference),
            (false, Some(_)) => {
                cx.error(&path.key("prompt"), "`prompt` (an AgentV grader template) goes with `agentv: true`");
                return None;
            }
        };
        JudgeCheck::with_judge(cx, path, Some(question), self.judge)
    }
}

impl CompileGrader for RawLlm {
    type Check = JudgeCheck;

    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<JudgeCheck> {
        let q = match (self.contains, self.exact) {
            (Some(c), None) => Needle::compile(cx, &c, &path.key("contains")).map(Question::Contains),
            (None, Some(e)) => Needle::compile(cx, &e, &path.key("exact")).map(Question::Exact),
            _ => {
                cx.error(path, "an `llm` grader needs exactly one of `contains` or `exact`");
                None
            }
        };
        JudgeCheck::with_judge(cx, path, q, self.judge)
    }
}

impl JudgeCheck {
    /// The judge is the grader's own, else the suite's, which must then exist.
    fn with_judge(
        cx: &mut ValidateCx,
        path: &KeyPath,
        question: Option<Question>,
        judge: Option<RawJudge>,
    ) -> Option<Self> {
        let judge = match judge {
            Some(j) => Some(crate::llm::judge_calibration::judge_spec(cx, &j, &path.key("judge"))?),
            None => {
                if !cx.has_judge {
                    cx.error(path, "this grader needs a judge: set `judge` at the top of the suite or on the grader");
                    return None;
                }
                None
            }
        };
        Some(JudgeCheck { judge, name: path.key("judge").to_string(), question: question? })
    }
}

impl Grade for JudgeCheck {
    async fn grade(&self, input: &GradeInput<'_>, judge_calls: &mut Vec<JudgeCall>) -> GradeResult {
        let spec = self.judge.as_ref().or(input.judge).ok_or("no judge is configured")?;
        let (user, schema) = self.ask(input)?;
        let mut request = ChatRequest {
            model: spec.model.clone(),
            system: Some(crate::llm::judge_calibration::JUDGE_SYSTEM.into()),
            messages: vec![ChatMessage::text(Role::User, user)],
            tools: vec![ToolDef {
                name: "record_verdict".into(),
                description: "Record the verdict.".into(),
                parameters: schema,
            }],
            force_tool: Some("record_verdict".into()),
            tool_choice: None,
            temperature: Some(spec.temperature.unwrap_or(0.0)),
            max_tokens: spec.max_tokens,
            seed: spec.seed,
        };
        let mut last_error = String::new();
        for attempt in 0..2 {
            if attempt == 1 {
                request.messages.push(ChatMessage::text(
                    Role::User,
                    format!("Your previous verdict could not be read ({last_error}). Call record_verdict with the exact schema."),
                ));
            }
            let completion = input.llm.complete(spec, &request, true).await.map_err(|e| format!("judge: {e}"))?;
            judge_calls.push(JudgeCall { cost_usd: completion.cost_usd, cached: completion.cached });
            match self.read_reply(&completion.response.tool_calls, &completion.response.text) {
                Ok(graded) => return Ok(graded),
                Err(e) => last_error = e,
            }
        }
        Err(format!("the judge's verdict could not be read twice: {last_error}"))
    }

    fn uses(&self) -> Uses<'_> {
        let judge = self.judge.as_ref().map_or(Judge::SuiteDefault, Judge::Own);
        let templates = match &self.question {
            Question::Rubric(_, reference) | Question::Score { reference, .. } => {
                reference.iter().map(Needle::template).collect()
            }
            Question::Contains(t) | Question::Exact(t) => vec![t.template()],
        };
        Uses { judges: vec![judge], ..Uses::templates(templates) }
    }
}

impl JudgeCheck {
    /// What the judge is asked about the run, and the schema of its verdict.
    fn ask(&self, input: &GradeInput<'_>) -> Result<(String, Value), String> {
        let answer = excerpt_long(input.output);
        let (task_text, schema) = match &self.question {
            // AgentV's own words, and nothing of evalgate's around them.
            Question::Score { criteria, reference, template } => {
                let reference = reference.as_ref().map(|r| r.render(input.bindings)).transpose()?.unwrap_or_default();
                let vars = [
                    ("criteria", criteria.trim()),
                    ("input", input.bindings.prompt.trim()),
                    ("output", answer.trim()),
                    ("expected_output", reference.trim()),
                ];
                let changes = input.workspace.map_or("", |(_, diff)| diff.trim());
                let vars = [vars.as_slice(), &[("file_changes", changes)]].concat();
                let mut prompt = agentv_template(template.as_deref().unwrap_or(AGENTV_TEMPLATE), &vars);
                // AgentV appends what the agent changed to its own template only.
                if template.is_none() && !changes.is_empty() {
                    prompt.push_str(&format!("\n\n[[ ## file_changes ## ]]\n{changes}"));
                }
                return Ok((prompt, AGENTV_SCHEMA.clone()));
            }
            Question::Rubric(criteria, reference) => {
                let list: Vec<String> = criteria.iter().enumerate().map(|(i, (c, _))| format!("{i}. {c}")).collect();
                let reference = match reference {
                    Some(r) => format!("A reference answer, to judge the criteria by:\n{}\n\n", r.render(input.bindings)?),
                    None => String::new(),
                };
                (
                    format!(
                        "{reference}For each criterion, decide whether the answer meets it.\n\nCriteria:\n{}",
                        list.join("\n")
                    ),
                    json!({"type": "object", "properties": {"criteria": {"type": "array", "items": {"type": "object",
                        "properties": {"index": {"type": "integer"}, "met": {"type": "boolean"}, "note": {"type": "string"}},
                        "required": ["index", "met", "note"], "additionalProperties": false}}},
                        "required": ["criteria"], "additionalProperties": false}),
                )
            }
            Question::Contains(t) => (
                format!(
                    "Does the answer contain, in meaning, the following? Wording may differ.\n\nExpected:\n{}",
                    t.render(input.bindings)?
                ),
                PASSED_SCHEMA.clone(),
            ),
            Question::Exact(t) => (
                format!(
                    "Is the answer exactly the following, in meaning (no more, no less)?\n\nExpected:\n{}",
                    t.render(input.bindings)?
                ),
                PASSED_SCHEMA.clone(),
            ),
        };
        let user = format!(
            "Task given to the system:\n{}\n{}\nThe system's answer:\n{answer}\n\n{task_text}",
            input.bindings.prompt,
            transcript(input)
        );
        Ok((user, schema))
    }
}

/// The bias probes of `evalgate judge calibrate` (docs/llm.md "Calibrating a judge").
impl JudgeCheck {
    /// The same rubric with its criteria in reverse order (position bias); none for an `llm`
    /// grader or a single criterion.
    pub fn reversed(&self) -> Option<JudgeCheck> {
        match &self.question {
            Question::Rubric(criteria, reference) if criteria.len() > 1 => Some(JudgeCheck {
                question: Question::Rubric(criteria.iter().rev().cloned().collect(), reference.clone()),
                ..self.clone()
            }),
            _ => None,
        }
    }

    /// The reference answer or the expected text, rendered (the reference-leak probe).
    pub fn reference(&self, bindings: &crate::template::Bindings) -> Option<String> {
        match &self.question {
            Question::Rubric(_, reference) | Question::Score { reference, .. } => {
                reference.as_ref()?.render(bindings).ok()
            }
            Question::Contains(t) | Question::Exact(t) => t.render(bindings).ok(),
        }
    }
}

impl JudgeCheck {
    /// The judge asked, by name (`judge`: the suite's), given the suite's.
    pub fn judge_of<'a>(&'a self, suite: Option<&'a LlmSpec>) -> Option<(&'a str, &'a LlmSpec)> {
        match &self.judge {
            Some(own) => Some((&self.name, own)),
            None => suite.map(|s| ("judge", s)),
        }
    }

    /// A rubric's criteria (none for an `llm` grader or AgentV's one score).
    pub fn criteria(&self) -> Vec<String> {
        match &self.question {
            Question::Rubric(criteria, _) => criteria.iter().map(|(c, _)| c.clone()).collect(),
            Question::Contains(_) | Question::Exact(_) | Question::Score { .. } => Vec::new(),
        }
    }

    /// The verdict in the judge's reply: its one `record_verdict` call's arguments, else its
    /// text when that is the verdict as JSON. Read strictly: a second call, a key given twice
    /// or a criterion judged twice is a second answer (which one is meant?), and a key the
    /// schema does not have is not an answer to it.
    fn read_reply(&self, calls: &[ModelToolCall], text: &str) -> Result<Graded, String> {
        let calls: Vec<&ModelToolCall> = calls.iter().filter(|c| c.name == "record_verdict").collect();
        let (verdict, unreadable) = match calls.as_slice() {
            [] => {
                let (verdict, twice) =
                    crate::json::parse_noting_duplicates(text.trim()).map_err(|_| "no record_verdict call")?;
                (verdict, twice.first().map(|p| crate::json::given_twice(p)))
            }
            [call] => (call.arguments.clone(), call.arguments_error.clone()),
            more => return Err(format!("judged twice: {} record_verdict calls", more.len())),
        };
        match unreadable {
            Some(why) => Err(format!("the record_verdict arguments: {why}")),
            None => self.read(&verdict),
        }
    }

    /// A rubric judge of `criteria` reading a reply: the fuzz target's way in.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn read_rubric_reply(criteria: &[(&str, f64)], calls: &[ModelToolCall], text: &str) -> GradeResult {
        let question = Question::Rubric(criteria.iter().map(|(c, w)| ((*c).to_owned(), *w)).collect(), None);
        JudgeCheck { judge: None, name: String::new(), question }.read_reply(calls, text)
    }

    fn read(&self, v: &Value) -> Result<Graded, String> {
        match &self.question {
            Question::Rubric(criteria, _) => {
                only_keys(v, "the verdict", &["criteria"])?;
                let items = v.get("criteria").and_then(Value::as_array).ok_or("no `criteria` list")?;
                let mut met = vec![None; criteria.len()];
                let mut notes = vec![String::new(); criteria.len()];
                for item in items {
                    only_keys(item, "a criterion", &["index", "met", "note"])?;
                    let i = item.get("index").and_then(Value::as_u64).ok_or("a criterion without an integer `index`")?
                        as usize;
                    let m = item.get("met").and_then(Value::as_bool).ok_or("a criterion without a boolean `met`")?;
                    if i >= criteria.len() {
                        return Err(format!("criterion index {i} out of range"));
                    }
                    // Two verdicts on one criterion contradict or miscount: neither can be believed.
                    if met[i].replace(m).is_some() {
                        return Err(format!("criterion {i} judged twice"));
                    }
                    notes[i] = item.get("note").and_then(Value::as_str).unwrap_or_default().to_owned();
                }
                if let Some(missing) = met.iter().position(Option::is_none) {
                    return Err(format!("no verdict for criterion {missing}"));
                }
                let total: f64 = criteria.iter().map(|(_, w)| w).sum();
                let score =
                    criteria.iter().zip(&met).filter(|(_, m)| **m == Some(true)).fold(0.0, |sum, ((_, w), _)| sum + w)
                        / total;
                let reason = criteria
                    .iter()
                    .zip(met.iter().zip(&notes))
                    .map(|((c, _), (m, note))| {
                        let mark = if *m == Some(true) { "✓" } else { "✗" };
                        if note.is_empty() {
                            format!("{mark} {c}")
                        } else {
                            format!("{mark} {c}: {}", excerpt(note, 80))
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("; ");
                let evidence = json!(
                    criteria
                        .iter()
                        .zip(met.iter().zip(&notes))
                        .map(|((c, w), (m, note))| json!({"criterion": c, "weight": w, "met": m, "note": note}))
                        .collect::<Vec<_>>()
                );
                Ok(Graded {
                    score,
                    passed: met.iter().all(|m| *m == Some(true)),
                    reason,
                    evidence: Some(evidence),
                    unobserved: false,
                })
            }
            Question::Score { .. } => {
                only_keys(v, "the verdict", &["score", "reason"])?;
                let score = v.get("score").and_then(Value::as_f64).ok_or("no numeric `score`")?;
                if !(0.0..=1.0).contains(&score) {
                    return Err(format!("score {score} is outside 0..1"));
                }
                let reason = v.get("reason").and_then(Value::as_str).unwrap_or_default();
                // AgentV's verdict: a score of 0.8 passes.
                Ok(Graded { score, passed: score >= 0.8, reason: excerpt(reason, 200), evidence: None, unobserved: false })
            }
            Question::Contains(_) | Question::Exact(_) => {
                only_keys(v, "the verdict", &["passed", "reason"])?;
                let passed = v.get("passed").and_then(Value::as_bool).ok_or("no boolean `passed`")?;
                let reason = v.get("reason").and_then(Value::as_str).unwrap_or_default();
                Ok(Graded {
                    score: if passed { 1.0 } else { 0.0 },
                    passed,
                    reason: excerpt(reason, 200),
                    evidence: None,
                    unobserved: false,
                })
            }
        }
    }
}

/// Refuses a key of `v` (an object) other than `keys`, as the tool's schema does
/// (`additionalProperties: false`): `{"passed": true, "score": 7}` answers something else.
fn only_keys(v: &Value, what: &str, keys: &[&str]) -> Result<(), String> {
    let Some(object) = v.as_object() else { return Err(format!("{what} is not a JSON object")) };
    match object.keys().find(|k| !keys.contains(&k.as_str())) {
        Some(unknown) => Err(format!("{what} has a key the schema does not: `{}`", excerpt(unknown, 40))),
        None => Ok(()),
    }
}

/// The tool calls the system made, compactly, so the judge sees how it got its answer.
fn transcript(input: &GradeInput<'_>) -> String {
    let calls = input.trace.calls();
    if calls.is_empty() {
        return String::new();
    }
    let lines: Vec<String> = calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let name = c.server.as_ref().map_or_else(|| c.name.clone(), |s| format!("{s}.{}", c.name));
            let result = c.result.as_ref().map(|r| format!(" → {}", excerpt(&r.to_string(), 200))).unwrap_or_default();
            format!("{}. {name}({}){result}", i + 1, excerpt(&c.arguments.to_string(), 200))
        })
        .collect();
    format!("\nTool calls the system made, in order:\n{}\n", lines.join("\n"))
}

fn excerpt_long(text: &str) -> String {
    if text.chars().count() <= ANSWER_LIMIT {
        text.to_owned()
    } else {
        text.chars().take(ANSWER_LIMIT).collect::<String>() + "…"
    }
}

#[cfg(test)]
mod agentv_tests {
    use super::agentv_template;

    /// One pass, as AgentV's `substituteVariables`: a value's own braces stay as written.
    #[test]
    fn the_template_is_filled_once_and_braces_in_values_reach_the_judge() {
        let vars = [("criteria", "Names `{name}` and {{ output }}"), ("output", "the answer")];
        let filled = agentv_template("C: {{criteria}}\nA: {{ output }}\nM: {{ metadata }}", &vars);
        assert_eq!(filled, "C: Names `{name}` and {{ output }}\nA: the answer\nM: {{ metadata }}");
    }
}
