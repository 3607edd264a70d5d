//! The comparison with the baseline in the Markdown summary, and `compare`'s report: the
//! paired test's lines, the tasks that got worse and the gate table.

use std::fmt::Write;

use super::{code, escape};
use crate::results::baseline_comparison::Comparison;
use crate::results::{GateCheck, RegressionSection};

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
    let fetched =
        section.baseline.as_deref().and_then(|b| b.strip_prefix(crate::results::baseline_comparison::GITHUB_BASE));
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
    let passed = !checks.iter().any(GateCheck::failed);
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
pub(super) fn gate_table(checks: &[GateCheck]) -> String {
    let mut md = String::from("| check | budget | actual | |\n|---|---|---|---|\n");
    for c in checks {
        let mark = c.mark().emoji();
        let _ = writeln!(md, "| {} | {} | {} | {mark} |", escape(&c.name), escape(&c.budget), escape(&c.actual));
    }
    md
}
