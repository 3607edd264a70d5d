//! The terminal: a progress bar on a TTY, one plain line per finished task otherwise
//! (CI logs), then a short summary and the verdict. Colours only on a TTY.

use std::io::IsTerminal;

use console::{Style, Term};
use indicatif::{ProgressBar, ProgressStyle};

use super::reporter::Reporter;
use super::writer::WriteError;
use crate::excerpt::excerpt;
use crate::results::{Mark, Results, RunOutcome, Status, TaskFlags, TaskResult};
use crate::run::events::RunEvent;

/// How much of a task's reason its line shows: a failure's reason is a grader's summary; an
/// error's is all there is to go on (a cassette miss names the request, the nearest recorded
/// one and where the two part), so it is shown up to its difference.
const REASON: usize = 200;
const ERROR_REASON: usize = 600;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verbosity {
    Quiet,
    Normal,
    Verbose,
}

pub struct TerminalReporter {
    verbosity: Verbosity,
    bar: Option<ProgressBar>,
    colors: bool,
}

impl Reporter for TerminalReporter {
    fn handle(&mut self, event: &RunEvent) -> Result<(), WriteError> {
        match event {
            RunEvent::RunStarted { suite_id, tasks } => self.started(suite_id, *tasks),
            RunEvent::TaskStarted { id, .. } => {
                if let Some(bar) = &self.bar {
                    bar.set_message(id.clone());
                }
            }
            RunEvent::TrialRetry { index: _, trial, attempt, reason } if self.verbosity == Verbosity::Verbose => {
                self.line(format!("RETRY trial {} (attempt {attempt}): {}", trial + 1, excerpt(reason, REASON)));
            }
            RunEvent::TaskFinished { result, .. } | RunEvent::TaskSkipped { result, .. } => self.task_done(result),
            RunEvent::RunFinished { results } => self.summary(results),
            RunEvent::TrialStarted { .. }
            | RunEvent::TrialRetry { .. }
            | RunEvent::TrialFinished { .. }
            | RunEvent::CancelRequested { .. } => {}
        }
        Ok(())
    }
}

impl TerminalReporter {
    pub fn new(verbosity: Verbosity) -> Self {
        let tty = std::io::stderr().is_terminal();
        console::set_colors_enabled_stderr(tty);
        TerminalReporter { verbosity, bar: None, colors: tty }
    }

    fn started(&mut self, suite_id: &str, tasks: usize) {
        if self.verbosity != Verbosity::Quiet {
            self.line(format!("{} {suite_id}: {tasks} task(s)", self.style(Style::new().bold(), "Running")));
        }
        if self.colors && self.verbosity != Verbosity::Quiet {
            let bar = ProgressBar::new(tasks as u64);
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            self.bar = Some(bar);
        }
    }

    fn task_done(&mut self, result: &TaskResult) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
        let show = match self.verbosity {
            Verbosity::Quiet => result.status != Status::Passed && result.status != Status::Skipped,
            _ => true,
        };
        if show {
            let line = self.task_line(result);
            self.line(line);
        }
    }

    fn summary(&mut self, results: &Results) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        let t = &results.totals;
        let mut lines = Vec::new();
        if self.verbosity != Verbosity::Quiet {
            lines.push(String::new());
            let width = results.verdict.checks.iter().map(|c| c.name.chars().count()).max().unwrap_or(0);
            for c in &results.verdict.checks {
                let mark = c.mark();
                let mark = match mark {
                    Mark::Held => self.style(Style::new().green(), mark.word()),
                    Mark::Failed => self.style(Style::new().red(), mark.word()),
                    Mark::NotChecked => self.style(Style::new().yellow(), mark.word()),
                };
                lines.push(format!("  {mark} {:<width$} budget {:<12} actual {}", c.name, c.budget, c.actual));
            }
        }
        let outcome = &results.verdict.outcome;
        let word = outcome.label().to_uppercase();
        let verdict = match outcome {
            RunOutcome::Passed => self.style(Style::new().green().bold(), &word),
            RunOutcome::Failed { .. }
            | RunOutcome::PreflightFailed { .. }
            | RunOutcome::Invalid { .. }
            | RunOutcome::Aborted { .. } => self.style(Style::new().red().bold(), &word),
            RunOutcome::Interrupted { .. } | RunOutcome::Incomplete { .. } | RunOutcome::Deferred { .. } => {
                self.style(Style::new().yellow().bold(), &word)
            }
        };
        lines.push(format!(
            "{verdict} {}: {}/{} passed, {} failed, {} {}, {} skipped, score {:.2} in {:.1}s",
            results.suite.id,
            t.passed,
            t.tasks,
            t.failed,
            t.errors,
            crate::gate::plural(t.errors, "error", "errors"),
            t.skipped,
            t.score,
            results.duration_ms as f64 / 1000.0
        ));
        if let Some(detail) = outcome.detail().filter(|_| !matches!(outcome, RunOutcome::Failed { .. })) {
            lines.push(format!("  {detail}"));
        }
        if let Some(changed) = &results.changed_since {
            lines.push(format!("  {}", changed.line(&results.started_at)));
            let carried = results.tasks.iter().filter_map(|t| Some((t, t.carried.as_ref()?)));
            for (task, from) in carried.filter(|_| self.verbosity == Verbosity::Verbose) {
                let label = self.style(Style::new().cyan(), "CARRY");
                lines.push(format!(
                    "  {label} {} {}: from {}",
                    task.status.label(),
                    task.id,
                    from.label(&results.started_at)
                ));
            }
        }
        for line in crate::results::judges::advisory_lines(&results.judges) {
            lines.push(format!("  {line}"));
        }
        for line in crate::results::eras::lines(&crate::results::eras::eras(results)) {
            lines.push(format!("  MCP protocol: {line}"));
        }
        if let Some(section) = &results.regression {
            if let Some(line) = section.test.as_ref().and_then(|t| t.inconclusive_line(&section.statistics)) {
                lines.push(format!("  {} {line}", self.style(Style::new().yellow().bold(), "warning:")));
            }
            if let Some(line) = section.flags.as_ref().and_then(TaskFlags::suspect_line) {
                lines.push(format!("  {} {line}", self.style(Style::new().yellow().bold(), "suspect:")));
            }
            if let Some(line) = section.flags.as_ref().and_then(TaskFlags::untested_line) {
                lines.push(format!("  note: {line}"));
            }
        }
        for line in lines {
            self.line(line);
        }
    }

    fn task_line(&self, task: &TaskResult) -> String {
        let (label, style) = match task.status {
            Status::Passed => ("PASS ", Style::new().green()),
            Status::Failed => ("FAIL ", Style::new().red()),
            Status::Error => ("ERROR", Style::new().red().bold()),
            Status::Skipped => ("SKIP ", Style::new().yellow()),
        };
        let mut line = format!("{} {} [{}] {}", self.style(style, label), task.id, task.score_label(), timings(task));
        if let Some(reason) = &task.reason {
            let max = if task.status == Status::Error { ERROR_REASON } else { REASON };
            line.push_str(&format!(": {}", excerpt(reason, max)));
        }
        if self.verbosity == Verbosity::Verbose {
            for g in task.last_trial().map(|t| t.graders.as_slice()).unwrap_or_default() {
                line.push_str(&format!("\n      {} {} [{:.2}] {}", g.status.label(), g.name, g.score, g.reason));
            }
        }
        line
    }

    fn style(&self, style: Style, text: &str) -> String {
        if self.colors { style.apply_to(text).to_string() } else { text.to_owned() }
    }

    fn line(&self, text: String) {
        let text = crate::redact::stream_line(&text).into_owned();
        match &self.bar {
            Some(bar) => bar.println(text),
            None => {
                let _ = Term::stderr().write_line(&text);
            }
        }
    }
}

/// `agent 479 ms · total 1.2 s`: the agent's latency (mean over trials) and the task's
/// whole time (setup, agent, graders, cleanup, every trial).
fn timings(task: &TaskResult) -> String {
    let total = format!("total {}", duration(task.duration_ms));
    match task.latency_ms() {
        Some(agent) => format!("agent {} · {total}", duration(agent)),
        None => total,
    }
}

/// `479 ms`, `1.2 s`.
pub fn duration(ms: u64) -> String {
    if ms < 1000 { format!("{ms} ms") } else { format!("{:.1} s", ms as f64 / 1000.0) }
}
