//! A task as the HTML report shows it: its trials, each with the prompt, the trace, the
//! output, the graders and the steps, every long text cut by the report's `Cutter`.

use std::collections::BTreeSet;

use serde::Serialize;

use super::cutter::{Cutter, Text};
use crate::results::baseline_comparison::Comparison;
use crate::results::{Phase, StepResult, TaskResult, TrialResult};
use crate::trace::ToolCall;

#[derive(Serialize)]
pub(super) struct TaskView {
    id: String,
    description: Option<String>,
    tags: Vec<String>,
    tags_key: String,
    category: Option<String>,
    severity: Option<String>,
    file: String,
    line: usize,
    agent: String,
    status: &'static str,
    score: f64,
    cost: Option<f64>,
    latency_ms: Option<u64>,
    reason: Option<String>,
    search: String,
    attempts: u32,
    repeat: u32,
    min_pass: u32,
    flaky: bool,
    pass_at_k: Option<f64>,
    pass_hat_k: Option<f64>,
    trials: Vec<TrialView>,
    /// This task got worse against the baseline: its score and output there.
    baseline: Option<BaselineView>,
    /// Carried forward (`--changed-since`): the run its verdict comes from.
    carried: Option<String>,
}

impl TaskView {
    /// Its judged items a reader may label.
    pub(super) fn labels(&self) -> usize {
        self.trials.iter().map(|t| t.labels.len()).sum()
    }

    /// Marks its items in `sample` (task, grader, criterion, trial) as the ones offered first;
    /// how many it marked.
    pub(super) fn mark_sampled(&mut self, sample: &BTreeSet<(&str, &str, Option<&str>, u32)>) -> usize {
        let mut marked = 0;
        for trial in &mut self.trials {
            for l in &mut trial.labels {
                l.sampled =
                    sample.contains(&(self.id.as_str(), l.grader.as_str(), l.criterion.as_deref(), trial.n as u32));
                marked += usize::from(l.sampled);
            }
        }
        marked
    }
}

#[derive(Serialize)]
pub(super) struct BaselineView {
    score: Option<f64>,
    output: Option<Text>,
    output_now: Option<Text>,
    newly_failing: bool,
}

impl TaskView {
    pub(super) fn new(task: &TaskResult, baseline: Option<&Comparison>, cutter: &Cutter) -> Self {
        let search =
            [task.id.as_str(), task.description.as_deref().unwrap_or(""), task.reason.as_deref().unwrap_or("")]
                .into_iter()
                .chain(task.tags.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join("\n")
                .to_lowercase();
        let baseline = baseline.and_then(|cmp| {
            let drop = cmp.score_drops.iter().find(|(id, ..)| *id == task.id);
            let newly_failing = cmp.new_failures.contains(&task.id);
            (drop.is_some() || newly_failing).then(|| BaselineView {
                score: drop.map(|d| d.1),
                output: cmp.baseline_outputs.get(&task.id).map(|o| cutter.text(o)),
                output_now: cutter.opt(task.last_trial().and_then(|t| t.output.as_deref())),
                newly_failing,
            })
        });
        TaskView {
            id: task.id.clone(),
            description: task.description.clone(),
            tags_key: format!("|{}|", task.tags.join("|")),
            tags: task.tags.clone(),
            category: task.category.map(|c| c.to_string()),
            severity: task.severity.map(|s| s.to_string()),
            file: task.file.clone(),
            line: task.line,
            agent: task.agent.clone(),
            status: task.status.label(),
            score: task.score.get(),
            cost: task.cost_usd(),
            latency_ms: task.latency_ms(),
            reason: task.reason.clone().filter(|r| !r.is_empty()),
            search,
            attempts: task.attempts,
            repeat: task.repeat,
            min_pass: task.min_pass,
            flaky: task.flaky,
            pass_at_k: task.pass_at_k,
            pass_hat_k: task.pass_hat_k,
            trials: task.trials.iter().enumerate().map(|(i, t)| TrialView::new(i + 1, t, cutter)).collect(),
            baseline,
            carried: task.carried.as_ref().map(|from| from.label("")),
        }
    }
}

#[derive(Serialize)]
pub(super) struct TrialView {
    n: usize,
    status: &'static str,
    score: f64,
    reason: Option<String>,
    prompt: Option<Text>,
    messages: Vec<Message>,
    output: Option<Text>,
    output_truncated: bool,
    stderr: Option<Text>,
    exit_code: Option<i32>,
    latency_ms: Option<u64>,
    model: Option<String>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cost: Option<f64>,
    cached: bool,
    notes: Vec<String>,
    /// The whole-conversation graders, for a conversation.
    graders: Vec<GraderView>,
    /// A conversation's turns, as a transcript.
    turns: Vec<TurnView>,
    /// The simulated user's model and how it ended, in its own word.
    simulated_user: Option<(String, &'static str)>,
    /// The judged items a reader may label (labelling mode).
    labels: Vec<LabelView>,
    output_sha256: Option<String>,
    setup: Vec<StepView>,
    cleanup: Vec<StepView>,
    calls: Vec<CallView>,
    /// The trace was reported (tool calls known), even if empty.
    calls_ms: u64,
}

/// A retried attempt, as a note of the trial that replaced it.
fn retried_note((i, attempt): (usize, &TrialResult)) -> String {
    let cost = attempt.usage.as_ref().and_then(|u| u.cost_usd).map(|c| format!(" (cost ${c:.4})")).unwrap_or_default();
    let why = attempt.reason.as_deref().unwrap_or(attempt.status.label());
    format!("attempt {} was run again{cost}: {why}", i + 1)
}

#[derive(Serialize)]
pub(super) struct Message {
    role: String,
    content: Text,
}

impl TrialView {
    pub(super) fn new(n: usize, trial: &TrialResult, cutter: &Cutter) -> Self {
        // A conversation shows as its turns; its prompt (the transcript) is not repeated.
        let conversation = !trial.turns.is_empty();
        let messages =
            trial.prompt.as_deref().filter(|_| !conversation).map(|p| messages(p, cutter)).unwrap_or_default();
        let steps = |phase: Phase| -> Vec<StepView> {
            trial.steps.iter().filter(|s| s.phase == phase).flat_map(|s| StepView::flat(s, 0, cutter)).collect()
        };
        let calls_ms: u64 = trial.tool_calls.iter().filter_map(|c| c.duration_ms).sum();
        let span = calls_ms.max(trial.latency_ms.unwrap_or(0)).max(1);
        let mut offset = 0;
        let calls = trial
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, call)| {
                let view = CallView::new(i + 1, call, offset, span, cutter);
                offset += call.duration_ms.unwrap_or(0);
                view
            })
            .collect();
        TrialView {
            n,
            status: trial.status.label(),
            score: trial.score,
            reason: trial.reason.clone().filter(|r| !r.is_empty()),
            prompt: if messages.is_empty() && !conversation { cutter.opt(trial.prompt.as_deref()) } else { None },
            messages,
            output: cutter.opt(trial.output.as_deref()),
            output_truncated: trial.output_truncated,
            stderr: cutter.opt(Some(&trial.stderr)),
            exit_code: trial.exit_code,
            latency_ms: trial.latency_ms,
            model: trial.model.clone(),
            input_tokens: trial.usage.as_ref().and_then(|u| u.input_tokens),
            output_tokens: trial.usage.as_ref().and_then(|u| u.output_tokens),
            cost: trial.usage.as_ref().and_then(|u| u.cost_usd),
            cached: trial.cached,
            notes: trial.notes.iter().cloned().chain(trial.retried.iter().enumerate().map(retried_note)).collect(),
            graders: grader_views(&trial.graders, cutter),
            turns: trial.turns.iter().map(|t| TurnView::new(t, cutter)).collect(),
            simulated_user: trial.simulated_user.as_ref().map(|u| (u.model.clone(), ended(u.ended))),
            labels: trial.graders.iter().flat_map(LabelView::of).collect(),
            output_sha256: trial.output.as_deref().map(crate::results::judges::output_sha256),
            setup: steps(Phase::Setup),
            cleanup: steps(Phase::Cleanup),
            calls,
            calls_ms,
        }
    }
}

/// One turn of a conversation: the user's message, the answer, its calls and graders.
#[derive(Serialize)]
pub(super) struct TurnView {
    n: u32,
    /// `script` or `simulated user`.
    by: &'static str,
    status: &'static str,
    score: f64,
    reason: Option<String>,
    prompt: Option<Text>,
    output: Option<Text>,
    output_truncated: bool,
    calls: Vec<String>,
    graders: Vec<GraderView>,
}

impl TurnView {
    fn new(turn: &crate::results::TurnResult, cutter: &Cutter) -> Self {
        TurnView {
            n: turn.turn,
            by: match turn.by {
                crate::results::TurnAuthor::Script => "script",
                crate::results::TurnAuthor::SimulatedUser => "simulated user",
            },
            status: turn.status.label(),
            score: turn.score,
            reason: turn.reason.clone(),
            prompt: cutter.opt(turn.prompt.as_deref()),
            output: cutter.opt(turn.output.as_deref()),
            output_truncated: turn.output_truncated,
            calls: turn
                .tool_calls
                .iter()
                .map(|c| c.server.as_ref().map_or(c.name.clone(), |s| format!("{s}.{}", c.name)))
                .collect(),
            graders: grader_views(&turn.graders, cutter),
        }
    }
}

/// How a simulated user ended, as the report says it.
fn ended(end: crate::results::SimulatorEnd) -> &'static str {
    match end {
        crate::results::SimulatorEnd::GoalMet => "said its goal was met",
        crate::results::SimulatorEnd::GaveUp => "gave up",
        crate::results::SimulatorEnd::MaxTurns => "was stopped at max_turns",
        crate::results::SimulatorEnd::Stopped => "was stopped before it ended",
    }
}

fn grader_views(graders: &[crate::results::GraderResult], cutter: &Cutter) -> Vec<GraderView> {
    graders
        .iter()
        .map(|g| GraderView {
            name: g.name.clone(),
            kind: g.kind.clone(),
            status: g.status.label(),
            score: g.score,
            weight: g.weight,
            required: g.required,
            reason: g.reason.clone(),
            evidence: g.evidence.as_ref().map(|e| cutter.json(e)),
            cached: g.cached,
            advisory: g.advisory,
        })
        .collect()
}

/// A conversation prompt (a JSON list of `{role, content}`) as messages; none for a text.
fn messages(prompt: &str, cutter: &Cutter) -> Vec<Message> {
    if !prompt.starts_with('[') {
        return Vec::new();
    }
    let Ok(serde_json::Value::Array(list)) = serde_json::from_str::<serde_json::Value>(prompt) else {
        return Vec::new();
    };
    let read = |m: &serde_json::Value| {
        Some(Message { role: m.get("role")?.as_str()?.to_owned(), content: cutter.json(m.get("content")?) })
    };
    list.iter().map(read).collect::<Option<Vec<_>>>().unwrap_or_default()
}

#[derive(Serialize)]
pub(super) struct CallView {
    n: usize,
    name: String,
    server: Option<String>,
    arguments: Text,
    result: Option<Text>,
    is_error: bool,
    duration_ms: Option<u64>,
    /// Where the call sits on the trial's timeline, in percent.
    left: f64,
    width: f64,
}

impl CallView {
    pub(super) fn new(n: usize, call: &ToolCall, offset: u64, span: u64, cutter: &Cutter) -> Self {
        let pct = |ms: u64| ((ms as f64 / span as f64) * 1000.0).round() / 10.0;
        CallView {
            n,
            name: call.name.clone(),
            server: call.server.clone(),
            arguments: cutter.json(&call.arguments),
            result: call.result.as_ref().map(|r| match mcp_text(r) {
                Some(text) => cutter.text(&text),
                None => cutter.json(r),
            }),
            is_error: call.result.as_ref().and_then(|r| r.get("isError")).and_then(serde_json::Value::as_bool)
                == Some(true),
            duration_ms: call.duration_ms,
            left: pct(offset).min(100.0),
            width: pct(call.duration_ms.unwrap_or(0)).clamp(0.5, 100.0),
        }
    }
}

/// An MCP tool result that is only text (`{content: [{type: text, text}]}`, no structured
/// content) as that text, the way the model read it.
fn mcp_text(result: &serde_json::Value) -> Option<String> {
    let object = result.as_object()?;
    if object.keys().any(|k| k != "content" && k != "isError") {
        return None;
    }
    let texts = object.get("content")?.as_array()?.iter().map(|item| {
        (item.get("type")?.as_str()? == "text").then_some(())?;
        item.get("text")?.as_str()
    });
    texts.collect::<Option<Vec<_>>>().map(|t| t.join("\n"))
}

#[derive(Serialize)]
pub(super) struct GraderView {
    name: String,
    kind: String,
    status: &'static str,
    score: f64,
    weight: f64,
    required: bool,
    reason: String,
    evidence: Option<Text>,
    cached: bool,
    advisory: bool,
}

/// A judged item of a trial, for a human to agree or disagree with: each criterion of a
/// `rubric`, an `llm` grader's verdict.
#[derive(Serialize)]
pub(super) struct LabelView {
    grader: String,
    criterion: Option<String>,
    judge: &'static str,
    /// In the stratified sample `evalgate judge sample` picks: offered first.
    sampled: bool,
}

impl LabelView {
    /// Whether a grader's verdicts are a judge's (what a reader may label).
    pub(super) fn judged(g: &crate::results::GraderResult) -> bool {
        matches!(g.kind.as_str(), "rubric" | "llm")
    }

    fn of(g: &crate::results::GraderResult) -> Vec<LabelView> {
        let word = |b: bool| if b { "pass" } else { "fail" };
        match (g.kind.as_str(), g.status) {
            (_, crate::results::Status::Error) => Vec::new(),
            _ if !Self::judged(g) => Vec::new(),
            ("rubric", _) => {
                let criteria = g.evidence.as_ref().and_then(serde_json::Value::as_array).into_iter().flatten();
                criteria
                    .filter_map(|c| {
                        Some(LabelView {
                            grader: g.name.clone(),
                            criterion: Some(c.get("criterion")?.as_str()?.to_owned()),
                            judge: word(c.get("met")?.as_bool()?),
                            sampled: false,
                        })
                    })
                    .collect()
            }
            ("llm", status) => vec![LabelView {
                grader: g.name.clone(),
                criterion: None,
                judge: word(status == crate::results::Status::Passed),
                sampled: false,
            }],
            _ => Vec::new(),
        }
    }
}

/// A step, with the steps inside it listed after it one level deeper.
#[derive(Serialize)]
pub(super) struct StepView {
    depth: usize,
    label: String,
    kind: String,
    action: String,
    status: &'static str,
    duration_ms: u64,
    exit_code: Option<i32>,
    failure: Option<String>,
    stdout: Option<Text>,
    stderr: Option<Text>,
}

impl StepView {
    pub(super) fn flat(step: &StepResult, depth: usize, cutter: &Cutter) -> Vec<StepView> {
        let mut out = vec![StepView {
            depth,
            label: step.label(),
            kind: step.kind.clone(),
            action: step.action.clone(),
            status: step.status.label(),
            duration_ms: step.duration_ms,
            exit_code: step.exit_code,
            failure: step.failure.clone(),
            stdout: cutter.opt(Some(&step.stdout)),
            stderr: cutter.opt(Some(&step.stderr)),
        }];
        out.extend(step.children.iter().flat_map(|c| StepView::flat(c, depth + 1, cutter)));
        out
    }
}
