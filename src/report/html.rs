//! `report.html`: one self-contained file to understand a run in a browser. The verdict and
//! gate first, charts (inline SVG from `charts`), the regression and the adversarial
//! scorecard, then every task with a drill-down (prompt, trace, output, graders, steps).
//!
//! Everything comes from `Results` (already redacted by the writer) through a view model
//! into a minijinja template that escapes every value; the only script is a constant
//! allowed by its hash in the Content-Security-Policy, which also forbids every request, so
//! hostile output can neither run nor call home. Long texts are cut to a budget that keeps
//! a 1,000-task report small (docs/reports.md).

mod charts;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use base64::Engine as _;
use minijinja::{AutoEscape, Environment, Value};
use serde::Serialize;
use sha2::Digest as _;

use crate::results::regression::Comparison;
use crate::results::{GateCheck, Phase, RegressionSection, Results, RunOutcome, StepResult, TaskResult};
use crate::results::{TrialResult, scorecard::Scorecard};
use crate::trace::ToolCall;

const TEMPLATE: &str = include_str!("html/report.html");
const STYLE: &str = include_str!("html/report.css");
const SCRIPT: &str = include_str!("html/report.js");

/// Characters of one long text (an output, a tool result) kept at most, and at least when
/// the report is large: the budget below is shared between all texts.
const TEXT_MAX: usize = 8_000;
const TEXT_MIN: usize = 300;
/// Characters of text the whole report aims to hold (it stays under 5 MB with its markup).
const TEXT_BUDGET: usize = 3_000_000;
/// Texts longer than this are shown collapsed.
const COLLAPSE_AT: usize = 600;

/// `report.html`.
pub struct Html;

impl super::Report for Html {
    fn streamed(&self) -> bool {
        false
    }
    fn renders_aside(&self) -> bool {
        true
    }

    fn file_name(&self) -> &'static str {
        "report.html"
    }
    fn render(&self, results: &Results) -> String {
        render(results)
    }
}

static ENV: LazyLock<Environment<'static>> = LazyLock::new(|| {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    env.add_filter("code", |text: &str| Value::from_safe_string(code_spans(text)));
    env.add_template("report.html", TEMPLATE).expect("the HTML report's template is valid");
    env
});

/// The Content-Security-Policy: no request of any kind; inline styles; only our script.
static CSP: LazyLock<String> = LazyLock::new(|| {
    let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(SCRIPT.as_bytes()));
    format!(
        "default-src 'none'; script-src 'sha256-{hash}'; style-src 'unsafe-inline'; img-src data:; \
         base-uri 'none'; form-action 'none'"
    )
});

pub fn render(results: &Results) -> String {
    let view = View::new(results);
    let template = ENV.get_template("report.html").expect("the template is registered");
    let html = template.render(Value::from_serialize(&view)).unwrap_or_else(|e| {
        // The template is fixed and the view typed: this is a bug, shown rather than hidden.
        format!(
            "<!doctype html><title>evalgate report</title><pre>cannot render the report: {}</pre>",
            escape(&e.to_string())
        )
    });
    crate::excerpt::visible_controls(html)
}

/// Text for HTML made outside the template (the charts).
pub(crate) fn escape(text: &str) -> String {
    minijinja::HtmlEscape(text).to_string()
}

/// The template's `code` filter: escaped text whose `` `name` `` spans (how evalgate's messages
/// mark a name) show as code rather than as literal backticks; an unpaired one stays as is.
fn code_spans(text: &str) -> String {
    let parts: Vec<&str> = text.split('`').collect();
    let paired = parts.len() - (parts.len() + 1) % 2;
    let mut html = String::with_capacity(text.len() + 16);
    for (i, part) in parts.iter().enumerate() {
        match (i % 2 == 1, i < paired) {
            (true, true) => html.push_str(&format!("<code>{}</code>", escape(part))),
            (true, false) => html.push_str(&format!("`{}", escape(part))),
            (false, _) => html.push_str(&escape(part)),
        }
    }
    html
}

#[derive(Serialize)]
struct View<'a> {
    csp: &'static str,
    style: &'static str,
    script: &'static str,
    suite: &'a crate::results::SuiteInfo,
    run_id: &'a str,
    evalgate_version: &'a str,
    started_at: &'a str,
    duration_s: String,
    outcome: &'static str,
    outcome_class: &'static str,
    detail: Option<String>,
    totals: &'a crate::results::Totals,
    cost: String,
    checks: &'a [GateCheck],
    incomplete: &'a [String],
    charts: Vec<charts::Chart>,
    regression: Option<RegressionView<'a>>,
    scorecard: Option<ScorecardView>,
    hooks: Vec<StepView>,
    drift: Vec<DriftView<'a>>,
    eras: Vec<EraView>,
    tags: Vec<&'a str>,
    tasks: Vec<TaskView>,
    text_cap: usize,
}

impl<'a> View<'a> {
    fn new(results: &'a Results) -> Self {
        let t = &results.totals;
        let outcome = &results.verdict.outcome;
        let outcome_class = match outcome {
            RunOutcome::Passed => "pass",
            RunOutcome::Failed { .. } => "fail",
            RunOutcome::Deferred { .. } => "info",
            _ => "warn",
        };
        let cutter = Cutter::for_results(results);
        let baseline = results.regression.as_ref().and_then(|r| r.comparison.as_ref());
        let tags: BTreeSet<&str> = results.tasks.iter().flat_map(|t| t.tags.iter().map(String::as_str)).collect();
        View {
            csp: &CSP,
            style: STYLE,
            script: SCRIPT,
            suite: &results.suite,
            run_id: &results.run_id,
            evalgate_version: &results.evalgate_version,
            started_at: &results.started_at,
            duration_s: format!("{:.1}", results.duration_ms as f64 / 1000.0),
            outcome: outcome.label(),
            outcome_class,
            detail: outcome.detail(),
            totals: t,
            cost: super::markdown::cost(t),
            checks: &results.verdict.checks,
            incomplete: &results.incomplete,
            charts: charts::all(results),
            regression: results.regression.as_ref().map(|r| RegressionView::new(r, results)),
            scorecard: results.scorecard.as_ref().map(ScorecardView::new),
            hooks: results.hooks.iter().flat_map(|s| StepView::flat(s, 0, &cutter)).collect(),
            drift: results.mcp_drift.iter().map(|(server, drift)| DriftView::new(server, drift)).collect(),
            eras: crate::results::eras::eras(results).into_iter().map(EraView::new).collect(),
            tags: tags.into_iter().collect(),
            tasks: results.tasks.iter().map(|t| TaskView::new(t, baseline, &cutter)).collect(),
            text_cap: cutter.cap,
        }
    }
}

/// Cuts long texts to a length that shares `TEXT_BUDGET` between all of them.
struct Cutter {
    cap: usize,
}

impl Cutter {
    fn for_results(results: &Results) -> Cutter {
        let texts: usize = results
            .tasks
            .iter()
            .flat_map(|t| &t.trials)
            .map(|trial| 3 + 2 * trial.tool_calls.len() + trial.graders.len() + 2 * trial.steps.len())
            .sum();
        Cutter { cap: (TEXT_BUDGET / texts.max(1)).clamp(TEXT_MIN, TEXT_MAX) }
    }

    fn text(&self, text: &str) -> Text {
        let chars = text.chars().count();
        if chars <= self.cap {
            return Text { text: text.to_owned(), cut: 0, collapsed: chars > COLLAPSE_AT };
        }
        Text { text: text.chars().take(self.cap).collect(), cut: chars - self.cap, collapsed: true }
    }

    fn opt(&self, text: Option<&str>) -> Option<Text> {
        text.filter(|t| !t.is_empty()).map(|t| self.text(t))
    }

    fn json(&self, value: &serde_json::Value) -> Text {
        match value {
            serde_json::Value::String(s) => self.text(s),
            other => self.text(&serde_json::to_string_pretty(other).unwrap_or_default()),
        }
    }
}

/// A text as shown: `cut` characters were left out (the full text is in `results.json`).
#[derive(Serialize)]
struct Text {
    text: String,
    cut: usize,
    collapsed: bool,
}

#[derive(Serialize)]
struct TaskView {
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
}

#[derive(Serialize)]
struct BaselineView {
    score: Option<f64>,
    output: Option<Text>,
    output_now: Option<Text>,
    newly_failing: bool,
}

impl TaskView {
    fn new(task: &TaskResult, baseline: Option<&Comparison>, cutter: &Cutter) -> Self {
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
            score: task.score,
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
        }
    }
}

#[derive(Serialize)]
struct TrialView {
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
    graders: Vec<GraderView>,
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
struct Message {
    role: String,
    content: Text,
}

impl TrialView {
    fn new(n: usize, trial: &TrialResult, cutter: &Cutter) -> Self {
        let messages = trial.prompt.as_deref().map(|p| messages(p, cutter)).unwrap_or_default();
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
            prompt: if messages.is_empty() { cutter.opt(trial.prompt.as_deref()) } else { None },
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
            graders: trial
                .graders
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
                })
                .collect(),
            setup: steps(Phase::Setup),
            cleanup: steps(Phase::Cleanup),
            calls,
            calls_ms,
        }
    }
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
struct CallView {
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
    fn new(n: usize, call: &ToolCall, offset: u64, span: u64, cutter: &Cutter) -> Self {
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
struct GraderView {
    name: String,
    kind: String,
    status: &'static str,
    score: f64,
    weight: f64,
    required: bool,
    reason: String,
    evidence: Option<Text>,
    cached: bool,
}

/// A step, with the steps inside it listed after it one level deeper.
#[derive(Serialize)]
struct StepView {
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
    fn flat(step: &StepResult, depth: usize, cutter: &Cutter) -> Vec<StepView> {
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

#[derive(Serialize)]
struct RegressionView<'a> {
    baseline: Option<&'a str>,
    warning: Option<&'a str>,
    headline: Option<String>,
    power_line: Option<String>,
    comparison: Option<&'a Comparison>,
    cost_change: Option<String>,
    p95_change: Option<String>,
    /// Tasks that got worse: id, baseline score, score now, newly failing.
    worse: Vec<(String, Option<f64>, f64, bool)>,
    missing: Vec<String>,
    not_comparable: Vec<String>,
}

impl<'a> RegressionView<'a> {
    fn new(section: &'a RegressionSection, results: &Results) -> Self {
        let cmp = section.comparison.as_ref();
        let mut worse: Vec<(String, Option<f64>, f64, bool)> = Vec::new();
        if let Some(cmp) = cmp {
            let score_now = |id: &str| results.tasks.iter().find(|t| t.id == id).map_or(0.0, |t| t.score);
            for id in &cmp.new_failures {
                let base = cmp.score_drops.iter().find(|d| d.0 == *id).map(|d| d.1);
                worse.push((id.clone(), base, score_now(id), true));
            }
            for (id, base, now) in &cmp.score_drops {
                if !cmp.new_failures.contains(id) {
                    worse.push((id.clone(), Some(*base), *now, false));
                }
            }
        }
        RegressionView {
            baseline: section.baseline.as_deref(),
            warning: section.warning.as_deref(),
            headline: section.test.as_ref().map(|t| t.headline(&section.statistics)),
            power_line: section.test.as_ref().map(|t| t.power_line(&section.statistics)),
            comparison: cmp,
            cost_change: cmp.and_then(|c| {
                let (b, n) = (c.baseline_cost_usd?, c.cost_usd?);
                let pct = c.cost_change_pct().map_or(String::new(), |p| format!(" ({p:+.1}%)"));
                Some(format!("${b:.4} → ${n:.4}{pct}"))
            }),
            p95_change: cmp.and_then(|c| {
                let (b, n) = (c.baseline_p95_latency_ms?, c.p95_latency_ms?);
                let pct = c.p95_change_pct().map_or(String::new(), |p| format!(" ({p:+.1}%)"));
                Some(format!("{b} ms → {n} ms{pct}"))
            }),
            worse,
            missing: section.test.as_ref().map(|t| t.missing.clone()).unwrap_or_default(),
            not_comparable: section.test.as_ref().map(|t| t.not_comparable.clone()).unwrap_or_default(),
        }
    }
}

/// A server's tool surface against its snapshot: each change (the worst first, as `diff`
/// orders them) with the class of badge its gate gives it.
#[derive(Serialize)]
struct DriftView<'a> {
    server: &'a str,
    snapshot: &'a str,
    error: Option<&'a str>,
    updated: bool,
    /// (badge class, the change's class, what changed)
    changes: Vec<(&'static str, String, String)>,
}

impl<'a> DriftView<'a> {
    fn new(server: &'a str, drift: &'a crate::mcp::surface::Drift) -> Self {
        use crate::mcp::surface::Class;
        let badge = |class| match (drift.fail_on.fails(class), class) {
            (true, _) => "fail",
            (false, Class::Info) => "info",
            (false, _) => "warn",
        };
        DriftView {
            server,
            snapshot: &drift.snapshot,
            error: drift.error.as_deref(),
            updated: drift.updated,
            changes: drift
                .changes
                .iter()
                .map(|c| {
                    let (class, line) = (c.class.to_string(), c.line());
                    let what = line.strip_prefix(&format!("{class}: ")).unwrap_or(&line).to_owned();
                    (badge(c.class), class, what)
                })
                .collect(),
        }
    }
}

/// One server at one protocol version of its list (`results::eras`).
#[derive(Serialize)]
struct EraView {
    server: String,
    version: String,
    passed: usize,
    tasks: usize,
    /// `pass`, `warn` (did not finish) or `fail`, and why it fails.
    class: &'static str,
    failure: Option<String>,
}

impl EraView {
    fn new(era: crate::results::eras::Era) -> Self {
        let class = match &era.first_failure {
            None if era.passes() => "pass",
            None => "warn",
            Some(_) => "fail",
        };
        EraView {
            class,
            server: era.server,
            version: era.version,
            passed: era.passed,
            tasks: era.tasks,
            failure: era.first_failure,
        }
    }
}

#[derive(Serialize)]
struct ScorecardView {
    rows: Vec<(String, String, u32, u32, String, String, String)>,
    actions: Vec<&'static str>,
    confusion: Vec<(String, Vec<u32>)>,
}

impl ScorecardView {
    fn new(card: &Scorecard) -> Self {
        let pct = |x: Option<f64>| x.map_or("–".to_owned(), |v| format!("{:.0}%", v * 100.0));
        let rows = card
            .categories
            .iter()
            .map(|(k, v)| (k.clone(), "", v))
            .chain([("overall".to_owned(), "overall", &card.overall)])
            .map(|(name, class, s)| {
                let fp = if s.false_positive_rate.is_some() {
                    format!("{} ({})", s.false_positives, pct(s.false_positive_rate))
                } else {
                    "–".to_owned()
                };
                (name, class.to_owned(), s.tasks, s.passed, pct(s.detection_rate), pct(s.policy_accuracy), fp)
            })
            .collect();
        let actions = crate::grade::SafetyAction::ALL.to_vec();
        let confusion = card
            .confusion
            .iter()
            .map(|(expected, row)| {
                (expected.clone(), actions.iter().map(|a| row.get(*a).copied().unwrap_or(0)).collect())
            })
            .collect::<BTreeMap<_, _>>()
            .into_iter()
            .collect();
        ScorecardView { rows, actions, confusion }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Status, testing};

    #[test]
    fn backtick_spans_show_as_code_and_everything_else_is_escaped() {
        assert_eq!(code_spans("`contains` failed: <b>"), "<code>contains</code> failed: &lt;b&gt;");
        assert_eq!(code_spans("`a<`, `b` and `c"), "<code>a&lt;</code>, <code>b</code> and `c");
        assert_eq!(code_spans("no code"), "no code");
    }

    #[test]
    fn long_texts_are_cut_with_a_note_and_short_ones_kept() {
        let cutter = Cutter { cap: 10 };
        let t = cutter.text("0123456789abc");
        assert_eq!((t.text.as_str(), t.cut, t.collapsed), ("0123456789", 3, true));
        let t = cutter.text("short");
        assert_eq!((t.text.as_str(), t.cut, t.collapsed), ("short", 0, false));
    }

    #[test]
    fn the_script_is_allowed_by_its_hash_and_nothing_may_be_fetched() {
        let html = render(&testing::results(vec![testing::task("a", Status::Passed)]));
        // The policy is an attribute: escaped like every value, read back by the browser.
        let html = html.replace("&#x27;", "'").replace("&#x2f;", "/");
        assert!(html.contains("content=\"default-src 'none'; script-src 'sha256-"), "{html}");
        let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(SCRIPT.as_bytes()));
        assert!(html.contains(&format!("'sha256-{hash}'")));
        assert!(html.contains(&format!("<script>{SCRIPT}</script>")), "the script is inlined byte for byte");
    }

    #[test]
    fn every_value_is_escaped() {
        let mut task = testing::task("x", Status::Failed);
        task.reason = Some("</script><img src=x onerror=alert(1)>".into());
        let html = render(&testing::results(vec![task]));
        assert!(!html.contains("<img src=x"), "{html}");
        assert!(html.contains("&lt;&#x2f;script&gt;&lt;img src=x onerror=alert(1)&gt;"), "{html}");
    }
}
