//! `::error` annotations on the suite file for failing and erroring tasks, so they show on
//! the pull request's diff.

use std::path::PathBuf;

use super::workflow_command::command;
use crate::results::{Results, Status};

/// The runner shows 10 error annotations a step; the rest are counted in one notice.
pub const MAX_ANNOTATIONS: usize = 10;

/// At most `room` annotations (what is left of the step's 10), in suite order: the first
/// failures are the ones a reader meets first in the file. Returns the lines and how many
/// annotations they use.
pub fn annotations(results: &Results, room: usize) -> (Vec<String>, usize) {
    let failing: Vec<_> = results.tasks.iter().filter(|t| matches!(t.status, Status::Failed | Status::Error)).collect();
    let mut lines: Vec<String> = failing
        .iter()
        .take(room)
        .map(|t| {
            let kind = if t.status == Status::Failed { "failed" } else { "error" };
            let reason = t.reason.as_deref().unwrap_or(kind);
            command(
                "error",
                &[
                    ("file", repo_relative(&t.file)),
                    ("line", t.line.to_string()),
                    ("title", format!("{} ({kind})", t.id)),
                ],
                reason,
            )
        })
        .collect();
    let used = lines.len();
    if failing.len() > used {
        lines.push(command(
            "notice",
            &[],
            &format!(
                "{} more failing tasks of {} are not annotated; see the step summary",
                failing.len() - used,
                results.suite.id
            ),
        ));
    }
    (lines, used)
}

/// GitHub places an annotation only with a repository-relative path; ours are relative to
/// the working directory, which need not be the workspace root.
fn repo_relative(file: &str) -> String {
    let Ok(workspace) = std::env::var("GITHUB_WORKSPACE") else { return file.to_owned() };
    let abs = std::path::absolute(file).unwrap_or_else(|_| PathBuf::from(file));
    let workspace = std::fs::canonicalize(&workspace).unwrap_or_else(|_| PathBuf::from(&workspace));
    // Canonical on both sides: a symlinked temp dir (macOS /tmp) must still match.
    let abs = abs.parent().and_then(|d| Some(std::fs::canonicalize(d).ok()?.join(abs.file_name()?))).unwrap_or(abs);
    abs.strip_prefix(&workspace).map_or_else(|_| file.to_owned(), |p| p.display().to_string())
}
