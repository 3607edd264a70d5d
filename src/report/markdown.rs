//! The Markdown summary: verdict first, the gate table, failing tasks with reasons, a tag
//! breakdown, cost and latency. Model output is escaped and cut so the whole stays under
//! a PR comment's 65,536 characters.

use std::fmt::Write;

use crate::excerpt::cut;
use crate::grade::SafetyAction;
use crate::results::regression::Comparison;
use crate::results::scorecard::Scorecard;
use crate::results::{GateCheck, RunOutcome};
use crate::results::{Phase, RegressionSection, Results, Status, TaskResult};

/// GitHub's limit for a comment body.
pub const MAX_CHARS: usize = 65_536;
/// Characters of output shown per failing task.
const OUTPUT_EXCERPT: usize = 500;

/// `summary.md`.
pub struct Markdown;

impl super::Report for Markdown {
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
    if let Some(section) = &results.regression {
        md.push_str(&regression_section(section, max_rows));
    }
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
    md
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
            let _ =
                writeln!(md, "| `{}` | {status} | {:.2} | {} |", code(&task.id), task.score, escape(&cut(reason, 300)));
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
                let _ = writeln!(
                    md,
                    "<details><summary>Output of <code>{}</code></summary>\n\n<pre>{}</pre>\n</details>\n",
                    // Inside HTML, where Markdown's escapes would show.
                    escape_block(&task.id),
                    escape_block(&cut(output, OUTPUT_EXCERPT))
                );
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

/// A server's `tools/list` lint findings, worst first.
fn lint_section(server: &str, lint: &crate::mcp::lint::Lint, max_rows: usize) -> String {
    let mut md = format!("### MCP tools/list lint of `{}` (protocol {})\n\n", code(server), lint.protocol_version);
    if lint.findings.is_empty() {
        md.push_str("No finding.\n\n");
        return md;
    }
    for finding in lint.findings.iter().take(max_rows) {
        let mark = if lint.fail_on.fails(finding.level) { "❌" } else { "⚠️" };
        let level = match finding.level {
            crate::mcp::lint::Level::Error => "error",
            crate::mcp::lint::Level::Review => "review",
        };
        let tool = if finding.tool.is_empty() { String::new() } else { format!("`{}`: ", code(&finding.tool)) };
        let _ = writeln!(md, "- {mark} {level}: {tool}{}", escape(&finding.what));
    }
    if lint.findings.len() > max_rows {
        let _ = writeln!(md, "- … and {} more (results.json has them all)", lint.findings.len() - max_rows);
    }
    md.push('\n');
    md
}

/// Per protocol version, for the tasks of a server with a protocol list.
fn eras_section(results: &Results) -> String {
    let eras = crate::results::eras::eras(results);
    if eras.is_empty() {
        return String::new();
    }
    let mut md =
        String::from("### MCP protocol versions\n\n| server | version | tasks passed | verdict |\n|---|---|---|---|\n");
    for era in &eras {
        let verdict = match &era.first_failure {
            None if era.passes() => "✅ passes".to_owned(),
            None => "⚠️ did not finish".to_owned(),
            Some(why) => format!("❌ fails: {}", escape(&cut(why, 300))),
        };
        let _ =
            writeln!(md, "| `{}` | {} | {}/{} | {verdict} |", code(&era.server), era.version, era.passed, era.tasks);
    }
    md.push('\n');
    md
}

/// A server's tool surface against its snapshot: each change, the worst first (`diff`'s order).
fn drift_section(server: &str, drift: &crate::mcp::surface::Drift, max_rows: usize) -> String {
    use crate::mcp::surface::Class;
    let mut md = format!("### MCP tool surface of `{}` vs `{}`\n\n", code(server), code(&drift.snapshot));
    if let Some(error) = &drift.error {
        let _ = writeln!(md, "❌ {}\n", escape(error));
        return md;
    }
    if drift.changes.is_empty() {
        md.push_str(if drift.updated { "Snapshot written.\n\n" } else { "No change.\n\n" });
        return md;
    }
    for change in drift.changes.iter().take(max_rows) {
        let mark = match (drift.fail_on.fails(change.class), change.class) {
            (true, _) => "❌",
            (false, Class::Info) => "ℹ️",
            (false, _) => "⚠️",
        };
        let tool = if change.tool.is_empty() { String::new() } else { format!("`{}`: ", code(&change.tool)) };
        let _ = writeln!(md, "- {mark} {}: {tool}{}", change.class, escape(&change.what));
    }
    if drift.changes.len() > max_rows {
        let _ = writeln!(md, "- … and {} more (results.json has them all)", drift.changes.len() - max_rows);
    }
    if drift.updated {
        md.push_str("\nThe snapshot was updated with this surface.\n");
    }
    md.push('\n');
    md
}

/// "Compared with baseline": the paired test's verdict in one line and what the suite can
/// detect, then score delta, new failures, fixes, largest drops, cost and p95 latency change,
/// added, missing, changed and removed tasks.
pub fn comparison_section(section: &RegressionSection, cmp: &Comparison, max_rows: usize) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "### Compared with baseline\n");
    if let Some(test) = &section.test {
        let _ = writeln!(
            md,
            "**Paired test:** {}  \n{}\n",
            escape(&test.headline(&section.statistics)),
            escape(&test.power_line(&section.statistics))
        );
        if let Some(line) = test.inconclusive_line(&section.statistics) {
            let _ = writeln!(md, "> ⚠️ {}\n", escape(&line));
        }
    }
    if let Some(flags) = &section.flags {
        if !flags.golden_dropped.is_empty() {
            let ids: Vec<String> = flags.golden_dropped.iter().map(|id| format!("`{}`", code(id))).collect();
            let _ = writeln!(md, "❌ **Golden task(s) no longer always passing:** {}\n", ids.join(", "));
        }
        if let Some(line) = flags.suspect_line() {
            let _ = writeln!(md, "**Suspect:** {}\n", escape(&line));
        }
        if let Some(line) = flags.untested_line() {
            let _ = writeln!(md, "Note: {}\n", escape(&line));
        }
    }
    // A fetched baseline says where it came from: the commit and its age.
    let fetched = section.baseline.as_deref().and_then(|b| b.strip_prefix(crate::results::regression::GITHUB_BASE));
    if let Some(from) = fetched {
        let _ = writeln!(md, "Baseline from the base branch{}  ", escape(from));
    }
    let _ = writeln!(
        md,
        "Baseline `{}`: score {:.2} → {:.2} (**{:+.2}**)",
        code(&cmp.baseline_run_id),
        cmp.baseline_score,
        cmp.score,
        cmp.score_delta
    );
    let mut lines = Vec::new();
    let list = |ids: &[String]| {
        let shown: Vec<String> = ids.iter().take(max_rows).map(|id| format!("`{}`", code(id))).collect();
        let more = if ids.len() > max_rows { format!(" and {} more", ids.len() - max_rows) } else { String::new() };
        format!("{}{more}", shown.join(", "))
    };
    if !cmp.new_failures.is_empty() {
        lines.push(format!("- ❌ newly failing ({}): {}", cmp.new_failures.len(), list(&cmp.new_failures)));
    }
    if !cmp.fixed.is_empty() {
        lines.push(format!("- ✅ fixed ({}): {}", cmp.fixed.len(), list(&cmp.fixed)));
    }
    if !cmp.score_drops.is_empty() {
        let drops: Vec<String> = cmp
            .score_drops
            .iter()
            .take(5)
            .map(|(id, base, now)| format!("`{}` {base:.2} → {now:.2}", code(id)))
            .collect();
        lines.push(format!("- largest score drops: {}", drops.join(", ")));
    }
    match (cmp.baseline_cost_usd, cmp.cost_usd, cmp.cost_change_pct()) {
        (Some(b), Some(n), Some(pct)) => lines.push(format!("- cost ${b:.4} → ${n:.4} ({pct:+.1}%)")),
        (b, n, _) if b.is_some() || n.is_some() => lines.push(format!(
            "- cost {} → {}",
            b.map_or("unknown".into(), |b| format!("${b:.4}")),
            n.map_or("unknown".into(), |n| format!("${n:.4}"))
        )),
        _ => {}
    }
    if let (Some(b), Some(n)) = (cmp.baseline_p95_latency_ms, cmp.p95_latency_ms) {
        let pct = cmp.p95_change_pct().map_or(String::new(), |p| format!(" ({p:+.1}%)"));
        lines.push(format!("- p95 latency {b} ms → {n} ms{pct}"));
    }
    if !cmp.added.is_empty() {
        lines.push(format!("- added (not gated): {}", list(&cmp.added)));
    }
    match &section.test {
        Some(test) => {
            if !test.missing.is_empty() {
                lines.push(format!("- ❌ missing from this run ({}): {}", test.missing.len(), list(&test.missing)));
            }
            if !test.not_comparable.is_empty() {
                lines.push(format!("- changed definition, not compared: {}", list(&test.not_comparable)));
            }
        }
        None if !cmp.removed.is_empty() => lines.push(format!("- removed (not gated): {}", list(&cmp.removed))),
        None => {}
    }
    if !lines.is_empty() {
        md.push('\n');
        md.push_str(&lines.join("\n"));
        md.push('\n');
    }
    md.push('\n');
    md
}

/// The output of `evalgate compare`: verdict, the budget checks and the comparison.
pub fn comparison_report(suite_id: &str, section: &RegressionSection, checks: &[GateCheck]) -> String {
    let passed = checks.iter().all(|c| c.passed);
    let not_judged = checks.iter().any(|c| !c.passed && c.name == crate::gate::CANDIDATE_RUN);
    let mut md = format!(
        "## {} evalgate compare: `{}` {}\n\n",
        if passed { "✅" } else { "❌" },
        escape(suite_id),
        match (passed, not_judged) {
            (true, _) => "no regression",
            (false, true) => "not judged: the candidate did not run as planned",
            (false, false) => "regressed",
        }
    );
    md.push_str(&gate_table(checks));
    md.push('\n');
    if let Some(cmp) = &section.comparison {
        md.push_str(&comparison_section(section, cmp, 50));
    }
    md
}

/// The gate checks as a table: check, budget, actual, ✅/❌.
fn gate_table(checks: &[GateCheck]) -> String {
    let mut md = String::from("| check | budget | actual | |\n|---|---|---|---|\n");
    for c in checks {
        let mark = if c.passed { "✅" } else { "❌" };
        let _ = writeln!(md, "| {} | {} | {} | {mark} |", escape(&c.name), escape(&c.budget), escape(&c.actual));
    }
    md
}

/// Escapes text that is not evalgate's own (ids, reasons, outputs, baseline fields) for a
/// table cell or paragraph of GitHub-flavoured Markdown: it renders as the same text and as
/// nothing else — no table break, HTML, code span, emphasis, link or image (`[`, `![`), bare
/// URL link (`https://`, `www.`), @mention or heading; one line.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            // GitHub links mentions in the rendered text, whatever escaping came before.
            '@' => out.push_str("@\u{200b}"),
            '\n' | '\r' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '!' | '#' | '~' | '|' => {
                out.push('\\');
                out.push(c);
            }
            // A bare URL is linked in the rendered text too: `://` and `www.` are broken.
            '/' if out.ends_with(':') => out.push_str("\u{200b}/"),
            '.' if out.get(out.len().saturating_sub(3)..).is_some_and(|w| w.eq_ignore_ascii_case("www")) => {
                out.push_str("\u{200b}.");
            }
            c => out.push(c),
        }
    }
    out
}

/// `text` as a fenced code block: the fence is longer than any run of backticks in it, so
/// nothing inside can close it (CommonMark); inside, text is shown as is (no entities).
pub(crate) fn fenced(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}text\n{text}\n{fence}")
}

/// Escapes text for a `<pre>` block: HTML and mentions, newlines kept.
pub(crate) fn escape_block(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('@', "@\u{200b}")
}

/// For text inside a code span (in a table cell, often): a backtick would close it and
/// cannot be escaped there, a `|` would end the cell (GFM splits cells before code spans,
/// and reads `\|` as a pipe inside them), a line break would end the row.
fn code(text: &str) -> String {
    text.replace('`', "'").replace('|', "\\|").replace(['\n', '\r'], " ").replace('@', "@\u{200b}")
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
