//! Under GitHub Actions: append the Markdown summary to `$GITHUB_STEP_SUMMARY`, write the
//! step outputs to `$GITHUB_OUTPUT`, annotate failing tasks, mask every secret the run reads.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::commands::command;
use crate::report::markdown;
use crate::report::writer::{OutputPaths, WriteError};
use crate::results::{Results, Status};

/// Annotations printed; the rest are counted in one notice.
pub const MAX_ANNOTATIONS: usize = 10;
/// The step summary limit is 1 MiB; four bytes a character at worst keeps under it.
const SUMMARY_CHARS: usize = 1024 * 1024 / 4;

/// Whether to act as a GitHub Action: `--github` / `--no-github`, else `GITHUB_ACTIONS=true`.
pub fn enabled(github: bool, no_github: bool) -> bool {
    if no_github {
        return false;
    }
    github || std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true")
}

/// `::add-mask::` lines for the values of these variables (set and non-empty only).
pub fn masks<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut lines: Vec<String> = names
        .into_iter()
        .filter_map(|n| std::env::var(n).ok())
        .filter(|v| !v.trim().is_empty())
        .flat_map(|v| v.lines().map(|l| command("add-mask", &[], l)).collect::<Vec<_>>())
        .collect();
    lines.sort();
    lines.dedup();
    lines
}

/// Annotations for failing and erroring tasks, at most `MAX_ANNOTATIONS`, then a notice.
pub fn annotations(results: &Results) -> Vec<String> {
    let failing: Vec<_> = results.tasks.iter().filter(|t| matches!(t.status, Status::Failed | Status::Error)).collect();
    let mut lines: Vec<String> = failing
        .iter()
        .take(MAX_ANNOTATIONS)
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
    if failing.len() > MAX_ANNOTATIONS {
        lines.push(command(
            "notice",
            &[],
            &format!("{} more failing tasks are not annotated; see the step summary", failing.len() - MAX_ANNOTATIONS),
        ));
    }
    lines
}

/// The path as the repository sees it: relative to `$GITHUB_WORKSPACE` when under it.
fn repo_relative(file: &str) -> String {
    let Ok(workspace) = std::env::var("GITHUB_WORKSPACE") else { return file.to_owned() };
    let abs = std::path::absolute(file).unwrap_or_else(|_| PathBuf::from(file));
    abs.strip_prefix(&workspace).map_or_else(|_| file.to_owned(), |p| p.display().to_string())
}

/// Appends the summary and writes the outputs (each only when its variable is set).
pub fn publish(results: &Results, paths: &OutputPaths) -> Result<(), WriteError> {
    if let Some(path) = env_path("GITHUB_STEP_SUMMARY") {
        append(&path, markdown::render_within(results, SUMMARY_CHARS).as_bytes())?;
    }
    if let Some(path) = env_path("GITHUB_OUTPUT") {
        let display = |p: &Path| p.display().to_string();
        let outputs = [
            ("passed", (results.verdict.passed && !results.interrupted).to_string()),
            ("score", format!("{:.4}", results.totals.score)),
            ("pass-rate", format!("{:.4}", results.totals.pass_rate)),
            ("cost-usd", results.totals.cost_usd.map_or_else(String::new, |c| format!("{c:.6}"))),
            ("results-path", display(&paths.results)),
            ("junit-path", display(&paths.junit)),
            ("summary-path", display(&paths.markdown)),
        ];
        let mut text = String::new();
        for (name, value) in outputs {
            // The heredoc form with a random delimiter is safe for any value.
            let delimiter = format!("ghadelimiter_{:016x}", fastrand::u64(..));
            text.push_str(&format!("{name}<<{delimiter}\n{value}\n{delimiter}\n"));
        }
        append(&path, text.as_bytes())?;
    }
    Ok(())
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

fn append(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let err = |source| WriteError { path: path.to_owned(), source };
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(err)?;
    file.write_all(bytes).map_err(err)
}
