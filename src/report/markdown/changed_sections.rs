//! The Markdown of `--changed-since`: what ran and why, what was carried forward and from
//! which run (a carried task did not run here; its verdict is the base run's).

use std::fmt::Write;

use super::escape::{code, escape};
use crate::results::Results;

/// The section, when the run had `--changed-since`: the line, then the tasks that ran with
/// why and the carried ones with where from, `max_rows` of each.
pub fn changed_section(results: &Results, max_rows: usize) -> String {
    let Some(changed) = &results.changed_since else { return String::new() };
    let mut md = format!("> {}\n\n", escape(&changed.line(&results.started_at)));
    if changed.everything.is_none() && !changed.ran.is_empty() {
        let _ = writeln!(md, "| ran | why |\n|---|---|");
        for (id, why) in changed.ran.iter().take(max_rows) {
            let _ = writeln!(md, "| `{}` | {} |", code(id), escape(why).replace('|', "\\|"));
        }
        more(&mut md, changed.ran.len(), max_rows);
        md.push('\n');
    }
    let carried: Vec<_> = results.tasks.iter().filter_map(|t| Some((t, t.carried.as_ref()?))).collect();
    if !carried.is_empty() {
        let _ = writeln!(
            md,
            "<details><summary>Carried forward ({}), not run</summary>\n\n| task | verdict | from |\n|---|---|---|",
            carried.len()
        );
        for (task, from) in carried.iter().take(max_rows) {
            let from = escape(&from.label(&results.started_at)).replace('|', "\\|");
            let _ = writeln!(md, "| `{}` | {} (carried) | {from} |", code(&task.id), task.status.label());
        }
        more(&mut md, carried.len(), max_rows);
        md.push_str("\n</details>\n\n");
    }
    md
}

fn more(md: &mut String, total: usize, shown: usize) {
    if total > shown {
        let _ = writeln!(md, "\n… and {} more", total - shown);
    }
}
