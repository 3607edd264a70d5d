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
            let _ = writeln!(md, "| `{}` | {} |", code(id), escape(why));
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
            let from = escape(&from.label(&results.started_at));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::carry::ChangedSince;
    use crate::results::{Status, testing};

    #[test]
    fn a_reason_from_the_base_is_escaped_once() {
        let mut results = testing::results(vec![testing::task("a", Status::Passed)]);
        results.changed_since = Some(ChangedSince {
            base: "base.json".into(),
            from: None,
            everything: None,
            ran: [("a".to_owned(), "changed: file:a|b.txt @here".to_owned())].into(),
            carried: Vec::new(),
            audited: Vec::new(),
            audit_rate: 0.1,
            audit_seed: 1,
        });
        let md = changed_section(&results, 10);
        assert!(md.contains("| `a` | changed: file:a\\|b.txt @\u{200b}here |"), "{md}");
    }
}
