//! What GitHub shows of a run: the step summary, annotations and step outputs under
//! GitHub Actions, and the sticky pull-request comment with `--comment`.

use super::actions::GitHubStep;
use super::annotations::Annotation;
use crate::report::writer::{OutputPaths, WriteError};
use crate::results::Results;
use crate::run::signal::Stop;

/// Every suite of an `evalgate run` goes through `publish` once, whatever its outcome
/// (passed, failed, invalid, preflight failed, interrupted, aborted), so nothing GitHub
/// shows is left over from an earlier run.
pub struct Publisher {
    step: Option<GitHubStep>,
    comment: bool,
    /// A signal during the comment abandons it; the rest is written.
    stop: Stop,
}

impl Publisher {
    /// `github`: act as a GitHub Action (`actions::enabled`); `comment`: `--comment`;
    /// `suites`: how many will be published (they share the step summary's room).
    pub fn new(github: bool, comment: bool, suites: usize) -> Publisher {
        Publisher { step: github.then(|| GitHubStep::new(suites)), comment, stop: Stop::default() }
    }

    /// Abandons a comment when `stop` sees a signal while it is posted.
    #[must_use]
    pub fn stopped_by(mut self, stop: Stop) -> Publisher {
        self.stop = stop;
        self
    }

    /// The step outputs of every suite, which later steps read: written before anything
    /// else is published, so a failure to write them (the run is then aborted, exit 4) is
    /// what the step summary and the comment published after it say. Written again, they
    /// replace the values before (the runner keeps an output's last value).
    pub fn write_outputs<'a>(
        &self,
        suites: impl IntoIterator<Item = (&'a Results, &'a OutputPaths)>,
    ) -> Result<(), WriteError> {
        if self.step.is_none() {
            return Ok(());
        }
        GitHubStep::write_outputs(suites)
    }

    /// One suite: its sticky comment, then its step summary and `annotations`. Nothing here
    /// changes the gate: a step summary or a comment that cannot be written is a warning. A
    /// signal while the comment is posted abandons it and makes the suite's results
    /// interrupted (`true`), so that the step summary says so, and the caller writes the
    /// reports and the step outputs again.
    pub async fn publish(&mut self, results: &mut Results, annotations: &[Annotation]) -> bool {
        let mut stopped = false;
        if self.comment {
            tokio::select! {
                biased;
                () = self.stop.next_signal() => {
                    crate::errln!("evalgate: interrupted: the pull-request comment of `{}` is not posted", results.suite.id);
                    stopped = !results.interrupted;
                    if stopped {
                        results.interrupted = true;
                        crate::gate::regate(results);
                    }
                }
                // Without `--pr` the pull request is the event's own: never refused.
                _ = super::pr_comment::comment(results, None) => {}
            }
        }
        if let Some(step) = &mut self.step {
            step.after_suite(results, annotations);
        }
        stopped
    }
}
