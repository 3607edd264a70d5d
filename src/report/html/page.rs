//! The page: the view model of a run, the template that renders it with every value escaped,
//! and the Content-Security-Policy that lets only its own script run.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use base64::Engine as _;
use minijinja::{AutoEscape, Environment, Value};
use serde::Serialize;
use sha2::Digest as _;

use super::cutter::Cutter;
use super::sections::{self, DriftView, EraView, RegressionView, ScorecardView};
use super::task::{LabelView, StepView, TaskView};
use crate::results::judge_sample::{DEFAULT_SAMPLE, judge_sample};
use crate::results::{GateCheck, Results, RunOutcome};

const TEMPLATE: &str = include_str!("report.html");
const STYLE: &str = include_str!("report.css");
const SCRIPT: &str = include_str!("report.js");

/// `report.html`.
pub struct Html;

impl crate::report::Report for Html {
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

/// The report of `results`.
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
    /// `--changed-since`: what ran, what was carried and from which run.
    changed: Option<String>,
    totals: &'a crate::results::Totals,
    cost: String,
    checks: &'a [GateCheck],
    incomplete: &'a [String],
    /// Each judge that may not gate, why, and how it comes to (as the terminal says it).
    advisory: Vec<String>,
    charts: Vec<super::charts::Chart>,
    regression: Option<RegressionView<'a>>,
    variants: Option<sections::VariantsView>,
    scorecard: Option<ScorecardView>,
    hooks: Vec<StepView>,
    extensions: Vec<ExtensionView<'a>>,
    drift: Vec<DriftView<'a>>,
    eras: Vec<EraView>,
    tags: Vec<&'a str>,
    tasks: Vec<TaskView>,
    /// Judged items a reader may label (labelling mode).
    labelable: usize,
    /// Those of them in the stratified sample, offered first.
    sampled: usize,
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
        let mut tasks: Vec<TaskView> = results.tasks.iter().map(|t| TaskView::new(t, baseline, &cutter)).collect();
        // Labelling offers first the items `evalgate judge sample` would pick.
        let sample = judge_sample(results, DEFAULT_SAMPLE, |_, g| LabelView::judged(g));
        let sample: BTreeSet<_> = sample.iter().map(|s| (s.task, s.grader, s.criterion.as_deref(), s.trial)).collect();
        let sampled = tasks.iter_mut().map(|t| t.mark_sampled(&sample)).sum();
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
            changed: results.changed_since.as_ref().map(|c| c.line(&results.started_at)),
            totals: t,
            cost: crate::report::markdown::cost(t),
            checks: &results.verdict.checks,
            incomplete: &results.incomplete,
            advisory: crate::results::judges::advisory_lines(&results.judges),
            charts: super::charts::all(results),
            regression: results.regression.as_ref().map(|r| RegressionView::new(r, results)),
            variants: results.variants.as_ref().map(|v| sections::VariantsView::new(v, results, &cutter)),
            scorecard: results.scorecard.as_ref().map(ScorecardView::new),
            hooks: results.hooks.iter().flat_map(|s| StepView::flat(s, 0, &cutter)).collect(),
            extensions: results.extensions.iter().map(|(alias, x)| ExtensionView::new(alias, x, &cutter)).collect(),
            drift: results.mcp_drift.iter().map(|(server, drift)| DriftView::new(server, drift)).collect(),
            eras: crate::results::eras::eras(results).into_iter().map(EraView::new).collect(),
            tags: tags.into_iter().collect(),
            labelable: tasks.iter().map(TaskView::labels).sum(),
            sampled,
            tasks,
            text_cap: cutter.cap,
        }
    }
}

/// An extension the run used, its stderr cut as every text is.
#[derive(Serialize)]
struct ExtensionView<'a> {
    alias: &'a str,
    name: &'a str,
    version: &'a str,
    protocol_version: &'a str,
    operations: usize,
    package: &'a str,
    sha256: Option<&'a str>,
    stopped: Option<&'a str>,
    stderr: Option<super::cutter::Text>,
}

impl<'a> ExtensionView<'a> {
    fn new(alias: &'a str, x: &'a crate::extension::ExtensionInfo, cutter: &Cutter) -> Self {
        ExtensionView {
            alias,
            name: &x.name,
            version: &x.version,
            protocol_version: &x.protocol_version,
            operations: x.operations.len(),
            package: &x.package,
            sha256: x.sha256.as_deref(),
            stopped: x.stopped.as_deref(),
            stderr: cutter.opt(Some(&x.stderr)),
        }
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
