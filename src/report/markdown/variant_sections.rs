//! The variants' sections of the Markdown summary: each arm against the control, then the
//! matrix of tasks × arms, the tasks whose arms differ first.

use std::fmt::Write;

use super::{code, escape};
use crate::results::arm_comparison::{Matrix, MeanDifference, VariantsSection};
use crate::results::baseline_comparison::TrialCount;
use crate::results::paired_rates::points;
use crate::results::{GateCheck, Results, Status, TaskResult};

/// Both sections, or nothing for a run without variants.
pub(super) fn variants_section(results: &Results, max_rows: usize) -> String {
    let Some(variants) = &results.variants else { return String::new() };
    let mut md = arms_table(results, variants);
    md.push_str(&matrix(results, variants, max_rows));
    md
}

/// One arm's line of the arms table, as text (each report escapes it its way).
#[derive(Debug, serde::Serialize)]
pub(crate) struct ArmRow {
    pub name: String,
    pub control: bool,
    pub rate: String,
    /// Empty for the control.
    pub difference: String,
    pub verdict: String,
    pub mde: String,
    pub cost: String,
    pub latency: String,
    /// Whether the arm's gate held, and its budget.
    pub gate: Option<(bool, String)>,
}

/// The arms that ran, each with its comparison with the control.
pub(crate) fn arm_rows(results: &Results, variants: &VariantsSection) -> Vec<ArmRow> {
    let mut rows = Vec::new();
    for arm in &variants.arms {
        let tasks: Vec<&TaskResult> =
            results.tasks.iter().filter(|t| t.variant.as_deref() == Some(arm.name.as_str())).collect();
        if tasks.is_empty() {
            continue;
        }
        let rate = tasks.iter().map(|t| TrialCount::of(t).rate()).sum::<f64>() / tasks.len() as f64;
        let mut row = ArmRow {
            name: arm.name.clone(),
            control: arm.name == variants.control,
            rate: format!("{rate:.2}"),
            difference: String::new(),
            verdict: String::new(),
            mde: String::new(),
            cost: String::new(),
            latency: String::new(),
            gate: gate_of(&results.verdict.checks, &arm.name, &variants.control),
        };
        if let Some(c) = &arm.comparison {
            row.difference = format!("{} ({} to {})", points(c.delta), points(c.ci_low), points(c.ci_high));
            row.verdict = c.verdict.label().to_owned();
            row.mde = c.mde.map_or("—".into(), |m| format!("{:.1}", m * 100.0));
            row.cost = difference(c.cost_usd.as_ref(), "USD", 4);
            row.latency = difference(c.latency_ms.as_ref(), "ms", 0);
        }
        rows.push(row);
    }
    rows
}

fn arms_table(results: &Results, variants: &VariantsSection) -> String {
    let mut md = format!(
        "### Variants against the control `{}`\n\n| arm | pass rate | difference, points (interval) | verdict | detectable | cost / trial | latency | gate |\n|---|---|---|---|---|---|---|---|\n",
        code(&variants.control)
    );
    for row in arm_rows(results, variants) {
        let name =
            if row.control { format!("`{}` (control)", code(&row.name)) } else { format!("`{}`", code(&row.name)) };
        let gate = row.gate.map_or(String::new(), |(passed, budget)| {
            format!("{} {}", if passed { "✅" } else { "❌" }, escape(&budget))
        });
        let _ = writeln!(
            md,
            "| {name} | {} | {} | {} | {} | {} | {} | {gate} |",
            row.rate, row.difference, row.verdict, row.mde, row.cost, row.latency
        );
    }
    let confidence = (1.0 - variants.statistics.alpha()) * 100.0;
    let _ = writeln!(
        md,
        "\nDifferences are arm − control on the tasks both ran, with {confidence:.0}% intervals (docs/variants.md).\n"
    );
    md
}

/// Whether the gate checks of `arm` held, and their budgets; `None` without a gate.
fn gate_of(checks: &[GateCheck], arm: &str, control: &str) -> Option<(bool, String)> {
    let name = format!("variant {arm} vs {control}");
    let own: Vec<&GateCheck> = checks
        .iter()
        .filter(|c| c.name == name || c.name.strip_prefix(&name).is_some_and(|r| r.starts_with(": ")))
        .collect();
    let budgets: Vec<&str> = own.iter().map(|c| c.budget.as_str()).collect();
    (!own.is_empty()).then(|| (own.iter().all(|c| c.passed), budgets.join("; ")))
}

/// "+2 ms (−1 to +5)", or "—".
fn difference(d: Option<&MeanDifference>, unit: &str, decimals: usize) -> String {
    let Some(d) = d else { return "—".into() };
    let interval = match (d.ci_low, d.ci_high) {
        (Some(low), Some(high)) => format!(" ({} to {})", signed(low, decimals), signed(high, decimals)),
        _ => String::new(),
    };
    format!("{} {unit}{interval}", signed(d.delta, decimals))
}

fn signed(x: f64, decimals: usize) -> String {
    let text = format!("{:.decimals$}", x.abs());
    if text.chars().all(|c| c == '0' || c == '.') {
        text
    } else if x < 0.0 {
        format!("−{text}")
    } else {
        format!("+{text}")
    }
}

/// Tasks × arms: each cell the task's status and passing trials on that arm; tasks whose
/// arms differ come first.
pub(crate) fn matrix(results: &Results, variants: &VariantsSection, max_rows: usize) -> String {
    let matrix = Matrix::new(variants, &results.tasks);
    let cell = |t: &Option<&TaskResult>| match t {
        None => "—".to_owned(),
        Some(t) => {
            let count = TrialCount::of(t);
            format!("{} {}/{}", mark(t.status), count.passed, count.ran)
        }
    };
    let differing = matrix.rows.iter().filter(|r| r.differs).count();
    let mut md = format!(
        "#### Tasks × arms ({differing} of {} task(s) differ between arms; those first)\n\n| task |",
        matrix.rows.len()
    );
    for arm in &matrix.arms {
        let _ = write!(md, " `{}` |", code(arm));
    }
    md.push_str("\n|---|");
    md.push_str(&"---|".repeat(matrix.arms.len()));
    md.push('\n');
    let shown = max_rows.max(20);
    for row in matrix.rows.iter().take(shown) {
        let cells: Vec<String> = row.cells.iter().map(cell).collect();
        let _ = writeln!(md, "| `{}` | {} |", code(row.id), cells.join(" | "));
    }
    if matrix.rows.len() > shown {
        let _ = writeln!(md, "\n… and {} more task(s) (results.json has them all)", matrix.rows.len() - shown);
    }
    md.push('\n');
    md
}

fn mark(status: Status) -> &'static str {
    match status {
        Status::Passed => "✅",
        Status::Failed => "❌",
        Status::Error => "⚠️",
        Status::Skipped => "⏭️",
    }
}

#[cfg(test)]
mod tests {
    use crate::policy::{ArmGate, Control, PairedPolicy};
    use crate::results::arm_comparison::{ArmSection, VariantsSection};
    use crate::results::testing::{results, task};
    use crate::results::{Status, TaskResult};

    fn on(arm: &str, id: &str, status: Status) -> TaskResult {
        TaskResult { variant: Some(arm.into()), ..task(&format!("{id}@{arm}"), status) }
    }

    /// Arm names and task ids from a results file are hostile: rendered as text in code
    /// spans, never a table break, HTML or a mention; the differing task comes first.
    #[test]
    fn the_matrix_puts_differences_first_and_escapes_names() {
        let hostile = "b|<img src=x>@team`";
        let mut tasks = Vec::new();
        for i in 0..12 {
            tasks.push(on("a", &format!("t{i}"), Status::Passed));
            tasks.push(on(hostile, &format!("t{i}"), if i == 7 { Status::Failed } else { Status::Passed }));
        }
        let mut run = results(tasks);
        let gate = ArmGate { not_worse_than: Some(Control::Control), ..ArmGate::default() };
        run.variants = Some(VariantsSection {
            control: "a".into(),
            statistics: PairedPolicy::default(),
            arms: vec![
                ArmSection { name: "a".into(), gate: None, comparison: None },
                ArmSection { name: hostile.into(), gate: Some(gate), comparison: None },
            ],
        });
        crate::gate::regate(&mut run);
        let md = super::variants_section(&run, 50);
        // Inside a code span HTML is text; the pipe, the backtick and the mention are broken.
        assert_eq!(md.matches("`b\\|<img src=x>@\u{200b}team'`").count(), 2, "{md}");
        assert!(!md.contains("@team") && !md.contains("b|"), "{md}");
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| `t")).collect();
        assert_eq!(rows[0], "| `t7` | ✅ 1/1 | ❌ 0/1 |", "{md}");
        assert_eq!(rows.len(), 12);
        assert!(md.contains("1 of 12 task(s) differ"), "{md}");
        // Every row of the arms table has its eight cells.
        let table: Vec<&str> = md.lines().filter(|l| l.starts_with("| `")).take(2).collect();
        for row in table {
            assert_eq!(row.replace("\\|", "").matches('|').count(), 9, "{row}");
        }
    }
}
