//! Appends the Markdown summary to `$GITHUB_STEP_SUMMARY`, within the runner's 1 MiB a step.

use super::actions::{append, runner_file};
use crate::report::markdown;
use crate::report::writer::WriteError;
use crate::results::Results;

/// The runner refuses a step summary over 1 MiB (and then shows none of it); keep a margin.
pub const MAX_BYTES: usize = 1_000_000;

/// Appends `results`' summary, sharing the room left in the file with the `suites_left - 1`
/// suites still to come, so the last one is not the one cut.
pub fn append_summary(results: &Results, suites_left: usize) -> Result<(), WriteError> {
    let Some(path) = runner_file("GITHUB_STEP_SUMMARY") else { return Ok(()) };
    let used = std::fs::metadata(&path).map_or(0, |m| usize::try_from(m.len()).unwrap_or(usize::MAX));
    let room = MAX_BYTES.saturating_sub(used) / suites_left.max(1);
    let link = super::report_link::line().map_or(String::new(), |l| format!("{l}\n\n"));
    let mut text = render_within_bytes(results, room.saturating_sub(link.len()));
    if !text.is_empty() {
        text.push('\n');
        text.push_str(&link);
    }
    append(&path, &text)
}

/// `render_within` counts characters; the limit is in bytes. Shrink the character budget
/// until the UTF-8 fits (a few rounds: the renderer drops detail in large steps).
pub fn render_within_bytes(results: &Results, max_bytes: usize) -> String {
    // Below this, not even the verdict and the gate table fit: write nothing rather than a
    // summary cut mid-table.
    if max_bytes < 200 {
        return String::new();
    }
    let mut chars = max_bytes.saturating_sub(1);
    loop {
        let text = markdown::render_within(results, chars);
        if text.len() < max_bytes || chars == 0 {
            return text;
        }
        chars = (chars * max_bytes / text.len()).saturating_sub(1);
    }
}
