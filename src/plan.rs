//! The plan: which tasks of a validated suite run, with which agent, how many times and in
//! which shard — worked out from the command line without touching the suite, and checked
//! again where the command line changes what the suite said (`--agent`).

use std::num::NonZeroU32;
use std::sync::Arc;

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::results::Shard;
use crate::suite::did_you_mean;
use crate::suite::model::{Agent, Level, Suite};

/// What the command line asks of every suite.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// `--filter GLOB` (any matches).
    pub filter: Vec<String>,
    /// `--tag TAG` (any matches).
    pub tags: Vec<String>,
    /// `--agent NAME`.
    pub agent: Option<String>,
    /// `--shard K/N`.
    pub shard: Option<Shard>,
    /// `--repeat N`, over each task's `repeat`.
    pub repeat: Option<NonZeroU32>,
    pub fail_fast: bool,
}

/// One suite's plan. Task indices point into `suite.tasks`, in suite order.
#[derive(Debug)]
pub struct Plan {
    pub tasks: Vec<PlannedTask>,
    /// `--agent`'s agent, for every task that has an agent.
    pub agent: Option<Arc<Agent>>,
    pub shard: Option<Shard>,
    pub fail_fast: bool,
    /// What the user should know about the plan (printed before the run).
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedTask {
    /// Index into `suite.tasks`.
    pub index: usize,
    /// Trials to run.
    pub repeat: NonZeroU32,
}

/// Why a selection cannot be planned (exit 2). The message names what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// `--filter`/`--tag` match no task of this suite (with several suites, the others may
    /// still run).
    #[error("{0}")]
    NothingSelected(String),
    #[error("{0}")]
    Invalid(String),
}

impl Selection {
    /// The compiled `--filter` globs; an invalid glob is an error.
    fn globs(&self) -> Result<GlobSet, PlanError> {
        let mut globs = GlobSetBuilder::new();
        for pattern in &self.filter {
            globs
                .add(Glob::new(pattern).map_err(|e| PlanError::Invalid(format!("invalid --filter `{pattern}`: {e}")))?);
        }
        globs.build().map_err(|e| PlanError::Invalid(e.to_string()))
    }

    fn selects(&self, globs: &GlobSet, id: &str, tags: &[String]) -> bool {
        (self.filter.is_empty() || globs.is_match(id))
            && (self.tags.is_empty() || tags.iter().any(|t| self.tags.contains(t)))
    }
}

/// Plans `suite` for `selection`. A selection that matches no task is an error that lists
/// the known tags or the nearest task ids; `--agent` is checked against each task's level.
pub fn plan(suite: &Suite, selection: &Selection) -> Result<Plan, PlanError> {
    let globs = selection.globs()?;
    let selected: Vec<usize> = (0..suite.tasks.len())
        .filter(|&i| selection.selects(&globs, &suite.tasks[i].id, &suite.tasks[i].tags))
        .collect();
    if selected.is_empty() && !suite.tasks.is_empty() {
        return Err(PlanError::NothingSelected(nothing_selected(suite, selection)));
    }
    let mut notes = Vec::new();
    let agent = match &selection.agent {
        None => None,
        Some(name) => {
            let (agent, note) = agent_override(suite, &selected, name)?;
            notes.extend(note);
            Some(agent)
        }
    };
    let tasks: Vec<PlannedTask> = selected
        .iter()
        .enumerate()
        .filter(|(position, _)| selection.shard.is_none_or(|s| *position % s.count as usize == (s.index - 1) as usize))
        .map(|(_, &index)| {
            let own = NonZeroU32::new(suite.tasks[index].repeat).unwrap_or(NonZeroU32::MIN);
            PlannedTask { index, repeat: selection.repeat.unwrap_or(own) }
        })
        .collect();
    if let Some(s) = selection.shard.filter(|_| tasks.is_empty()) {
        notes.push(format!("shard {} of {} of {} has no task", s.index, s.count, suite.id));
    }
    Ok(Plan { tasks, agent, shard: selection.shard, fail_fast: selection.fail_fast, notes })
}

/// `--agent NAME`: it must exist; it replaces the agent of every task that has one.
/// Execution-level tasks call a tool and have no agent: they keep running as written, and a
/// note says so. Invocation and scenario tasks need a model agent: a command agent is refused.
fn agent_override(suite: &Suite, selected: &[usize], name: &str) -> Result<(Arc<Agent>, Option<String>), PlanError> {
    let Some(agent) = suite.agents.get(name) else {
        let names: Vec<&str> = suite.agents.keys().map(String::as_str).collect();
        let help = did_you_mean(name, names.iter().copied())
            .map_or_else(|| format!("agents: {}", names.join(", ")), |s| format!("did you mean `{s}`?"));
        return Err(PlanError::Invalid(format!("--agent {name}: no such agent in {}; {help}", suite.file.display())));
    };
    let ids = |level: fn(&Level) -> bool| -> Vec<&str> {
        selected.iter().map(|&i| &suite.tasks[i]).filter(|t| level(&t.level)).map(|t| t.id.as_str()).collect()
    };
    if !matches!(**agent, Agent::Llm(_)) {
        let needs_model = ids(|l| matches!(l, Level::Invocation | Level::Scenario));
        if !needs_model.is_empty() {
            return Err(PlanError::Invalid(format!(
                "--agent {name} is a command agent, but these tasks need a model agent (level invocation or scenario): {}; \
                 pick a model agent or leave them out with --filter/--tag",
                needs_model.join(", ")
            )));
        }
    }
    let execution = ids(|l| *l == Level::Execution);
    let note = (!execution.is_empty()).then(|| {
        format!(
            "--agent {name} does not apply to {} execution-level task(s), which call a tool and have no agent; they run as written: {}",
            execution.len(),
            execution.join(", ")
        )
    });
    Ok((agent.clone(), note))
}

/// The error for a selection that matches nothing: what exists, or what is nearest.
fn nothing_selected(suite: &Suite, selection: &Selection) -> String {
    let mut text = format!("no task of {} ({}) matches", suite.id, suite.file.display());
    for f in &selection.filter {
        text.push_str(&format!(" --filter {f}"));
    }
    for t in &selection.tags {
        text.push_str(&format!(" --tag {t}"));
    }
    let mut known: Vec<&str> = suite.tasks.iter().flat_map(|t| t.tags.iter().map(String::as_str)).collect();
    known.sort_unstable();
    known.dedup();
    let ids = || suite.tasks.iter().map(|t| t.id.as_str());
    let mut help = Vec::new();
    for tag in &selection.tags {
        if let Some(near) = did_you_mean(tag, known.iter().copied()) {
            help.push(format!("did you mean --tag {near}?"));
        }
    }
    for filter in &selection.filter {
        if let Some(near) = did_you_mean(filter, ids()) {
            help.push(format!("did you mean --filter {near}?"));
        }
    }
    if help.is_empty() {
        if !selection.tags.is_empty() {
            help.push(if known.is_empty() {
                "no task has a tag".into()
            } else {
                format!("tags: {}", known.join(", "))
            });
        }
        if !selection.filter.is_empty() {
            let shown: Vec<&str> = ids().take(10).collect();
            let more = suite.tasks.len().saturating_sub(shown.len());
            let more = if more > 0 { format!(" (and {more} more; `evalgate list` shows them)") } else { String::new() };
            help.push(format!("task ids: {}{more}", shown.join(", ")));
        }
    }
    format!("{text}\n  help: {}", help.join("\n  help: "))
}
