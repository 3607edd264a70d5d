//! `summary.md`: the run's Markdown summary, its sections in order, cut to fit GitHub's limits.

use std::fmt::Write;

use crate::excerpt::cut;
use crate::grade::SafetyAction;
use crate::results::scorecard::Scorecard;
use crate::results::{GateCheck, RunOutcome};
use crate::results::{Phase, RegressionSection, Results, Status, TaskResult};

/// GitHub's limit for a comment body.
pub const MAX_CHARS: usize = 65_536;
/// Characters of output shown per failing task.
const OUTPUT_EXCERPT: usize = 500;

use super::baseline_sections::{comparison_section, gate_table};
use super::escape::{code, details, escape, fenced};
use super::mcp_sections::{drift_section, eras_section, lint_section};
use super::variant_sections;

/// `summary.md`.
pub struct Markdown;

impl crate::report::Report for Markdown {
    fn file_name(&self) -> &'static str {
        "summary.md"
    }
    fn render(&self, results: &Results) -> String {
        render(results)
    }
}

pub fn render(results: &Results) -> String {
    render_within(results, MAX_CHARS)
}

/// Drops detail (output excerpts first, then failing-task rows) until the text fits `max`.
pub fn render_within(results: &Results, max: usize) -> String {
    let failing = results.tasks.iter().filter(|t| matches!(t.status, Status::Failed | Status::Error)).count();
    let mut rows = failing;
    let mut excerpts = true;
    loop {
        let text = crate::excerpt::visible_controls(render_with(results, rows, excerpts));
        if text.chars().count() <= max {
            return text;
        }
        if excerpts {
            excerpts = false;
        } else if rows > 0 {
            rows /= 2;
        } else {
            // Even the skeleton is too long (an enormous tag list): keep the verdict.
            return text.chars().take(max.saturating_sub(1)).collect::<String>() + "…";
        }
    }
}

/// The summary with at most `max_rows` failing-task rows, and their output excerpts or not.
fn render_with(results: &Results, max_rows: usize, excerpts: bool) -> String {
    let mut md = verdict_section(results);
    md.push_str(&gate_section(&results.verdict.checks));
    md.push_str(&super::changed_sections::changed_section(results, max_rows));
    for (name, why) in results.judges.iter().filter_map(|(name, j)| Some((name, j.advisory.as_ref()?))) {
        let _ = writeln!(
            md,
            "> judge `{}` is advisory: {}; {}.\n",
            code(name),
            escape(why),
            crate::results::judges::ADVISORY_HINT
        );
    }
    if let Some(section) = &results.regression {
        md.push_str(&regression_section(section, max_rows));
    }
    md.push_str(&variant_sections::variants_section(results, max_rows));
    for (server, drift) in &results.mcp_drift {
        md.push_str(&drift_section(server, drift, max_rows.max(20)));
    }
    md.push_str(&eras_section(results));
    for (server, lint) in &results.mcp_lint {
        md.push_str(&lint_section(server, lint, max_rows.max(20)));
    }
    md.push_str(&failing_section(results, max_rows, excerpts));
    if let Some(card) = &results.scorecard {
        md.push_str(&scorecard_section(card));
    }
    md.push_str(&flaky_section(results, max_rows.max(5)));
    md.push_str(&hooks_section(results));
    md.push_str(&cleanup_section(results, max_rows.max(5)));
    md.push_str(&tags_section(results));
    md.push_str(&cost_section(results));
    md
}

/// The verdict as a heading, the outcome's detail, the totals line and adaptive trials.
fn verdict_section(results: &Results) -> String {
    let t = &results.totals;
    let mut md = String::new();
    let outcome = &results.verdict.outcome;
    let icon = match outcome {
        RunOutcome::Passed => "✅",
        RunOutcome::Failed { .. } => "❌",
        RunOutcome::Deferred { .. } => "⏸️",
        RunOutcome::Interrupted { .. } | RunOutcome::Incomplete { .. } | RunOutcome::Aborted { .. } => "⚠️",
        RunOutcome::PreflightFailed { .. } | RunOutcome::Invalid { .. } => "⛔",
    };
    let _ = writeln!(md, "## {icon} evalgate: `{}` {}\n", escape(&results.suite.id), outcome.label());
    match outcome.detail().filter(|_| !matches!(outcome, RunOutcome::Failed { .. })) {
        Some(detail) if detail.contains('\n') => {
            let _ = writeln!(md, "{}\n", fenced(&detail));
        }
        Some(detail) => {
            let _ = writeln!(md, "{}\n", escape(&detail));
        }
        None => {}
    }
    let mut line = format!("**{}/{} tasks passed**", t.passed, t.tasks);
    for (n, what) in [(t.failed, "failed"), (t.errors, "errored"), (t.skipped, "skipped"), (t.flaky, "flaky")] {
        if n > 0 {
            let _ = write!(line, " · {n} {what}");
        }
    }
    let _ = write!(line, " · score {:.2}", t.score);
    if let Some(cost) = t.cost_usd {
        let _ = write!(line, " · cost ${cost:.4}");
    }
    if let Some(p95) = t.p95_latency_ms {
        let _ = write!(line, " · p95 {p95} ms");
    }
    let _ = writeln!(md, "{line}\n");
    if results.tasks.iter().any(|t| t.trials_planned.is_some()) {
        let run: u64 = results.tasks.iter().map(|t| u64::from(t.repeat)).sum();
        let planned: u64 = results.tasks.iter().map(|t| u64::from(t.trials_planned.unwrap_or(t.repeat))).sum();
        let saved = 100 * (planned - run) / planned.max(1);
        let _ = writeln!(md, "Adaptive trials: {run} of {planned} run ({saved}% saved: tasks stopped once settled)\n");
    }
    if let Some(c) = &results.cassette {
        let _ = writeln!(md, "{}\n", cassette_line(c));
    }
    md
}

/// Where the model's answers came from: `Replayed from the cassette `c.jsonl`: 8 answers
/// recorded 2026-11-20 (model gpt-4o-mini), $0 spent (…)`.
fn cassette_line(c: &crate::cassette::Usage) -> String {
    let mut parts = Vec::new();
    if c.replayed > 0 {
        let when = match (&c.recorded_from, &c.recorded_to) {
            (Some(a), Some(b)) if a != b => format!("recorded {a} to {b}"),
            (Some(a), _) => format!("recorded {a}"),
            _ => String::new(),
        };
        let models = c.models.iter().map(|m| format!("`{}`", code(m))).collect::<Vec<_>>().join(", ");
        let models = if models.is_empty() { String::new() } else { format!(" (model {models})") };
        parts.push(format!(
            "Replayed from the cassette `{}`: {} answer(s) {}{models}, $0 spent on them (costs shown are the recorded answers')",
            code(&c.path),
            c.replayed,
            escape(&when)
        ));
    }
    if c.through_endpoint > 0 {
        parts.push(format!(
            "{} of them answered a command agent's requests through its model endpoint: only those were seen; \
             requests the agent sent by another route were neither replayed nor counted",
            c.through_endpoint
        ));
    }
    if c.recorded > 0 {
        parts.push(format!("Recorded {} answer(s) into the cassette `{}`", c.recorded, code(&c.path)));
    }
    if c.missed > 0 {
        parts.push(format!("{} request(s) not in the cassette: their tasks errored (never asked live)", c.missed));
    }
    if c.refused > 0 {
        parts.push(format!(
            "{} answer(s) not recorded: they held a secret in a form that cannot be redacted (a replay of them misses)",
            c.refused
        ));
    }
    if parts.is_empty() {
        parts.push(format!("Cassette `{}`: nothing replayed or recorded", code(&c.path)));
    }
    parts.join(" · ")
}

fn gate_section(checks: &[GateCheck]) -> String {
    format!("### Gate\n\n{}\n", gate_table(checks))
}

/// The baseline comparison, or why there is none.
fn regression_section(section: &RegressionSection, max_rows: usize) -> String {
    match (&section.comparison, &section.warning) {
        (Some(cmp), _) => comparison_section(section, cmp, max_rows.max(5)),
        (None, Some(warning)) => format!("### Compared with baseline\n\n⚠️ {}\n\n", escape(warning)),
        (None, None) => String::new(),
    }
}

/// Failed and errored tasks: a row each (`max_rows` at most) and, with `excerpts`, the
/// output of each.
fn failing_section(results: &Results, max_rows: usize, excerpts: bool) -> String {
    let mut md = String::new();
    let failing: Vec<&TaskResult> =
        results.tasks.iter().filter(|t| matches!(t.status, Status::Failed | Status::Error)).collect();
    if !failing.is_empty() {
        let _ = writeln!(md, "### Failing tasks\n\n| task | status | score | reason |\n|---|---|---|---|");
        for task in failing.iter().take(max_rows) {
            let status = if task.status == Status::Failed { "❌ failed" } else { "💥 error" };
            let reason = task.reason.as_deref().unwrap_or("");
            let _ = writeln!(
                md,
                "| `{}` | {status} | {} | {} |",
                code(&task.id),
                task.score_label(),
                escape(&cut(reason, 300))
            );
        }
        if failing.len() > max_rows {
            let _ = writeln!(md, "\n…and {} more failing tasks: see `results.json`.", failing.len() - max_rows);
        }
        md.push('\n');
        if excerpts {
            for task in failing.iter().take(max_rows) {
                let Some(output) = task.last_trial().and_then(|t| t.output.as_deref()).filter(|o| !o.trim().is_empty())
                else {
                    continue;
                };
                // Inside HTML, where Markdown's escapes would show.
                let _ = writeln!(md, "{}", details("Output of", &task.id, &cut(output, OUTPUT_EXCERPT)));
            }
        }
    }
    md
}

fn flaky_section(results: &Results, max_rows: usize) -> String {
    let mut md = String::new();
    let flaky: Vec<&TaskResult> = results.tasks.iter().filter(|t| t.flaky).collect();
    if !flaky.is_empty() {
        let _ = writeln!(md, "### Flaky tasks\n\n| task | trials passed | required | verdict |\n|---|---|---|---|");
        for task in flaky.iter().take(max_rows) {
            let passed = task.trials.iter().filter(|t| t.status == Status::Passed).count();
            let _ = writeln!(
                md,
                "| `{}` | {passed}/{} | {} | {} |",
                code(&task.id),
                task.trials.len(),
                task.min_pass,
                task.status.label()
            );
        }
        md.push('\n');
    }
    md
}

fn hooks_section(results: &Results) -> String {
    let mut md = String::new();
    let hooks: Vec<String> = results
        .hooks
        .iter()
        .filter(|s| s.status != Status::Passed)
        .map(|s| format!("| {} | {} |", escape(&s.label()), escape(&cut(s.failure.as_deref().unwrap_or(""), 300))))
        .collect();
    if !hooks.is_empty() {
        let _ = writeln!(md, "### Hook failures\n\n| step | failure |\n|---|---|");
        for row in &hooks {
            let _ = writeln!(md, "{row}");
        }
        md.push('\n');
    }
    md
}

fn cleanup_section(results: &Results, max_rows: usize) -> String {
    let mut md = String::new();
    let cleanup: Vec<String> = results
        .tasks
        .iter()
        .flat_map(|t| t.trials.iter().flat_map(move |trial| trial.steps.iter().map(move |s| (t, s))))
        .filter(|(_, s)| s.phase == Phase::Cleanup && s.status != Status::Passed)
        .map(|(t, s)| {
            format!(
                "| `{}` | {} | {} |",
                code(&t.id),
                escape(&s.label()),
                escape(&cut(s.failure.as_deref().unwrap_or(""), 200))
            )
        })
        .collect();
    if !cleanup.is_empty() {
        let _ = writeln!(md, "### Cleanup failures (logged, not gated)\n\n| task | step | failure |\n|---|---|---|");
        for row in cleanup.iter().take(max_rows) {
            let _ = writeln!(md, "{row}");
        }
        md.push('\n');
    }
    md
}

/// Per tag, as `results::by_tag` scores it.
fn tags_section(results: &Results) -> String {
    let mut md = String::new();
    let tags = crate::results::by_tag(&results.tasks);
    if !tags.is_empty() {
        let _ = writeln!(md, "### By tag\n\n| tag | passed | score |\n|---|---|---|");
        for tag in &tags {
            let _ = writeln!(md, "| {} | {}/{} | {:.2} |", escape(tag.tag), tag.passed, tag.tasks, tag.score);
        }
        md.push('\n');
    }
    md
}

fn cost_section(results: &Results) -> String {
    let t = &results.totals;
    let mut md = String::new();
    let _ = writeln!(md, "### Cost and latency\n\n| | |\n|---|---|");
    let _ = writeln!(md, "| total cost | {} |", cost(t));
    let _ = writeln!(md, "| p95 latency | {} |", t.p95_latency_ms.map_or("n/a".into(), |p| format!("{p} ms")));
    if let Some(tokens) = t.total_tokens {
        let _ = writeln!(md, "| tokens | {tokens} |");
    }
    let _ = writeln!(md, "| wall time | {:.1} s |", results.duration_ms as f64 / 1000.0);
    md
}

/// The run's cost: `$0.0123`, `$0.0123 (unknown for 1 task)`, `not reported`.
pub(crate) fn cost(t: &crate::results::Totals) -> String {
    match (t.cost_usd, t.tasks_without_cost) {
        (Some(c), 0) => format!("${c:.4}"),
        (Some(c), n) => format!("${c:.4} (unknown for {n} {})", crate::gate::plural(n, "task", "tasks")),
        (None, _) => "not reported".into(),
    }
}

/// The adversarial scorecard: per category, and the expected/actual action confusion table.
pub fn scorecard_section(card: &Scorecard) -> String {
    let pct = |x: Option<f64>| x.map_or("–".to_owned(), |v| format!("{:.0}%", v * 100.0));
    let mut md = String::from(
        "### Adversarial scorecard\n\n| category | tasks | passed | detection | policy | false positives |\n|---|---|---|---|---|---|\n",
    );
    let rows = card.categories.iter().map(|(k, v)| (k.as_str(), v)).chain([("**overall**", &card.overall)]);
    for (name, s) in rows {
        let fp = if s.false_positive_rate.is_some() {
            format!("{} ({})", s.false_positives, pct(s.false_positive_rate))
        } else {
            "–".to_owned()
        };
        let _ = writeln!(
            md,
            "| {name} | {} | {} | {} | {} | {fp} |",
            s.tasks,
            s.passed,
            pct(s.detection_rate),
            pct(s.policy_accuracy)
        );
    }
    if !card.confusion.is_empty() {
        let actions: Vec<&str> = SafetyAction::ALL.to_vec();
        let _ = writeln!(md, "\nExpected (rows) against actual (columns) action:\n");
        let _ = writeln!(md, "| expected \\ actual | {} |", actions.join(" | "));
        let _ = writeln!(md, "|---|{}", "---|".repeat(actions.len()));
        for (expected, row) in &card.confusion {
            let cells: Vec<String> = actions.iter().map(|a| row.get(*a).copied().unwrap_or(0).to_string()).collect();
            let _ = writeln!(md, "| {} | {} |", escape(expected), cells.join(" | "));
        }
    }
    md.push('\n');
    md
}

#[cfg(test)]
mod tests {
    use super::escape;

    /// The one cost text both reports show (the HTML report said "unknown for 1 tasks").
    #[test]
    fn the_cost_counts_tasks_in_agreeing_words() {
        let totals = |cost_usd, tasks_without_cost| crate::results::Totals {
            cost_usd,
            tasks_without_cost,
            ..crate::results::totals(&[])
        };
        assert_eq!(super::cost(&totals(Some(0.5), 0)), "$0.5000");
        assert_eq!(super::cost(&totals(Some(0.5), 1)), "$0.5000 (unknown for 1 task)");
        assert_eq!(super::cost(&totals(Some(0.5), 2)), "$0.5000 (unknown for 2 tasks)");
        assert_eq!(super::cost(&totals(None, 2)), "not reported");
    }

    #[test]
    fn escapes_tables_html_code_and_mentions() {
        assert_eq!(escape("a|b <script> `x` @team\nnext"), "a\\|b &lt;script&gt; \\`x\\` @\u{200b}team next");
    }

    /// Hostile text in every place a results file, an agent or a baseline puts text, rendered
    /// by a GFM renderer as GitHub's is configured (tables, autolinks, strikethrough, tag
    /// filter, raw HTML let through as GitHub lets some): it makes no element that the same
    /// report with plain text makes none of — no link, image, heading, emphasis, table cell,
    /// `<details>` end or mention.
    #[test]
    fn hostile_text_renders_as_text_in_gfm() {
        use crate::results::testing::{results, task};
        use crate::results::{GraderResult, Status, TrialResult};
        const HOSTILE: &str = "x](https://t.example/a) ![px](https://t.example/px.png) [ok](https://t.example) \
            <img src=https://t.example/i.png> </details></pre> # ✅ All gates passed @octocat www.t.example \
            https://t.example/auto `code` **bold** _em_ ~~del~~ \\| a | b | <!-- x --> &lt;b&gt;";
        let html = |text: &str| {
            let mut failing = task(&format!("id-{text}"), Status::Failed);
            failing.reason = Some(format!("reason {text}\n# heading {text}"));
            let mut trial = TrialResult::empty();
            trial.status = Status::Failed;
            trial.output = Some(format!("output {text}\n## ✅ passed\n{text}"));
            trial.graders.push(GraderResult {
                name: format!("g {text}"),
                kind: "contains".into(),
                status: Status::Failed,
                score: 0.0,
                weight: 1.0,
                required: false,
                reason: format!("grader {text}"),
                evidence: None,
                cached: false,
                advisory: false,
            });
            failing.trials.push(trial);
            let md = super::render(&results(vec![failing, task("plain", Status::Passed)]));
            let mut options = comrak::Options::default();
            options.extension.table = true;
            options.extension.autolink = true;
            options.extension.strikethrough = true;
            options.extension.tagfilter = true;
            options.render.r#unsafe = true;
            (comrak::markdown_to_html(&md, &options), md)
        };
        let (plain, _) = html("plain words");
        let (hostile, md) = html(HOSTILE);
        for tag in
            ["<a ", "<img", "<h", "<strong", "<em", "<del", "<code", "<td", "<tr", "</details>", "</pre>", "<!--"]
        {
            let (want, got) = (plain.matches(tag).count(), hostile.matches(tag).count());
            assert_eq!(got, want, "{tag} in the rendered summary:\n{hostile}\n\nfrom:\n{md}");
        }
        assert!(!hostile.contains("@octocat"), "{hostile}");
        assert!(hostile.contains("All gates passed"), "the text is still shown: {hostile}");
    }
}
