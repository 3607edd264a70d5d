//! What GitHub shows of a run: the step summary, annotations and step outputs under
//! GitHub Actions, and the sticky pull-request comment with `--comment`.

use super::actions::GitHubStep;
use super::annotations::Annotation;
use crate::report::writer::{OutputPaths, WriteError};
use crate::results::Results;

/// Every suite of an `evalgate run` goes through `publish` once, whatever its outcome
/// (passed, failed, invalid, preflight failed, interrupted, aborted), so nothing GitHub
/// shows is left over from an earlier run.
pub struct Publisher {
    step: Option<GitHubStep>,
    comment: bool,
}

impl Publisher {
    /// `github`: act as a GitHub Action (`actions::enabled`); `comment`: `--comment`;
    /// `suites`: how many will be published (they share the step summary's room).
    pub fn new(github: bool, comment: bool, suites: usize) -> Publisher {
        Publisher { step: github.then(|| GitHubStep::new(suites)), comment }
    }

    /// The step outputs of every suite, which later steps read: written before anything
    /// else is published, so a failure to write them (the run is then aborted, exit 4) is
    /// what the step summary and the comment published after it say.
    pub fn write_outputs(&self, suites: &[(&Results, &OutputPaths)]) -> Result<(), WriteError> {
        if self.step.is_none() {
            return Ok(());
        }
        GitHubStep::write_outputs(suites)
    }

    /// One suite: its step summary, `annotations` and its sticky comment. Nothing here
    /// changes the gate: a step summary or a comment that cannot be written is a warning.
    pub async fn publish(&mut self, results: &Results, annotations: &[Annotation]) {
        if let Some(step) = &mut self.step {
            step.after_suite(results, annotations);
        }
        if self.comment {
            super::comment::comment(results, None).await;
        }
    }
}
