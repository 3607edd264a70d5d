//! `::add-mask::` for the values of the environment variables a suite reads, so the runner
//! hides them in the log whatever prints them later (an agent's stderr, a grader's reason).

use super::workflow_command::command;

/// One line per distinct value (each line of a multi-line value), set and non-blank only.
pub fn mask_lines<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut lines: Vec<String> = names
        .into_iter()
        .filter_map(|n| std::env::var(n).ok())
        .filter(|v| !v.trim().is_empty())
        // The runner masks line by line, so a multi-line secret (a PEM key) needs each line.
        .flat_map(|v| {
            v.lines().filter(|l| !l.trim().is_empty()).map(|l| command("add-mask", &[], l)).collect::<Vec<_>>()
        })
        .collect();
    lines.sort();
    lines.dedup();
    lines
}
