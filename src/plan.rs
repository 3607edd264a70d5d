//! The plan: which tasks of a validated suite run, with which agent, how many times and in
//! which shard — worked out from the command line without touching the suite, and checked
//! again where the command line changes what the suite said (`--agent`).

use std::num::NonZeroU32;
use std::sync::Arc;

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::results::{PlanFingerprint, Shard};
use crate::source::unknown;
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
    /// `--variant NAME` (repeatable): the arms of `variants` to run (the control always runs).
    pub variants: Vec<String>,
    /// `--shard K/N`.
    pub shard: Option<Shard>,
    /// `--repeat N`, over each task's `repeat`.
    pub repeat: Option<NonZeroU32>,
    /// `--repeat auto`: every task's trials are adaptive.
    pub adaptive: bool,
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
    /// The suite's tasks `--filter`/`--tag` left out (not those in other shards): a baseline's
    /// task among them is not missing.
    pub deselected: Vec<String>,
    /// Every selected task (indices into `suite.tasks`), before `--shard` dealt them out.
    pub selected: Vec<usize>,
    /// The selection as given on the command line, for the fingerprint.
    pub selection: Vec<String>,
}

impl Plan {
    /// What this plan is, shard aside: every selected task's id and definition hash and the
    /// selection (`commit` is the caller's to add). Worked out for a run only: `check` and
    /// `list` do not hash every task.
    pub fn fingerprint(&self, suite: &Suite) -> PlanFingerprint {
        use sha2::{Digest, Sha256};
        let mut hash = Sha256::new();
        for &index in &self.selected {
            let task = &suite.tasks[index];
            hash.update(format!("{} {}\n", task.id, suite.task_definition(task, task.agent.name())));
        }
        PlanFingerprint {
            definitions: hash.finalize()[..8].iter().map(|b| format!("{b:02x}")).collect(),
            tasks: self.selected.len(),
            selection: self.selection.clone(),
            commit: None,
        }
    }
}

/// The order a plan's first trials start in: `(planned task, trial)`, task by task, except
/// that the arms of one task (neighbours in the plan, `arm_of` naming the task each is an
/// arm of) go trial by trial — trial 0 on every arm, then trial 1 — so that drift over the
/// run (a model endpoint slowing, a cache warming) hits every arm alike.
pub fn trial_order(queued: &[u32], arm_of: impl Fn(usize) -> Option<String>) -> Vec<(usize, u32)> {
    let mut order = Vec::with_capacity(queued.iter().map(|&q| q as usize).sum());
    let mut start = 0;
    while start < queued.len() {
        let group = arm_of(start);
        let end = (start + 1..queued.len()).find(|&i| group.is_none() || arm_of(i) != group).unwrap_or(queued.len());
        let most = queued[start..end].iter().copied().max().unwrap_or(0);
        for trial in 0..most {
            order.extend((start..end).filter(|&i| trial < queued[i]).map(|i| (i, trial)));
        }
        start = end;
    }
    order
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedTask {
    /// Index into `suite.tasks`.
    pub index: usize,
    /// Trials to run (at most, when adaptive).
    pub repeat: NonZeroU32,
    /// Adaptive trials: the trials to start with.
    pub adaptive: Option<NonZeroU32>,
}

/// The error rate of adaptive trials' anytime-valid test (`stats::settled`).
pub const ADAPTIVE_ALPHA: f64 = 0.05;

impl PlannedTask {
    /// The adaptive design its trials follow (`None`: all `repeat` trials run). `min_pass`
    /// is the task's (every trial by default), out of `repeat`.
    pub fn design(&self, min_pass: Option<NonZeroU32>) -> Option<crate::stats::Design> {
        let (min, max) = (self.adaptive?.get(), self.repeat.get());
        let min_pass = min_pass.map_or(max, |m| m.get().min(max));
        (min < max).then_some(crate::stats::Design { min, max, min_pass, alpha: ADAPTIVE_ALPHA })
    }
}

/// `--repeat auto`'s most trials for a task that has one trial.
pub const AUTO_MAX_TRIALS: NonZeroU32 = NonZeroU32::new(8).unwrap();

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

    /// The selection as it was given: `--filter GLOB`, `--tag TAG`, `--agent NAME`,
    /// `--repeat N|auto`, `--fail-fast`.
    fn described(&self) -> Vec<String> {
        let mut given: Vec<String> = self.filter.iter().map(|f| format!("--filter {f}")).collect();
        given.extend(self.tags.iter().map(|t| format!("--tag {t}")));
        given.extend(self.agent.iter().map(|a| format!("--agent {a}")));
        given.extend(self.variants.iter().map(|v| format!("--variant {v}")));
        given.extend(self.repeat.iter().map(|r| format!("--repeat {r}")));
        given.extend(self.adaptive.then(|| "--repeat auto".to_owned()));
        given.extend(self.fail_fast.then(|| "--fail-fast".to_owned()));
        given
    }

    /// Whether the task is selected: `--filter` matches its id (or, on an arm, the id
    /// without `@ARM`: every arm of a task), `--tag` one of its tags, and its arm is among
    /// `arms` (`None`: every arm).
    fn selects(&self, globs: &GlobSet, task: &crate::suite::model::Task, arms: Option<&[&str]>) -> bool {
        let written = task.arm.as_ref().and_then(|arm| task.id.strip_suffix(&format!("@{arm}")));
        (self.filter.is_empty() || globs.is_match(&task.id) || written.is_some_and(|id| globs.is_match(id)))
            && (self.tags.is_empty() || task.tags.iter().any(|t| self.tags.contains(t)))
            && task.arm.as_deref().is_none_or(|arm| arms.is_none_or(|arms| arms.contains(&arm)))
    }

    /// The arms `--variant` selects, the control always among them (`None`: every arm);
    /// an error for `--variant` on a suite without `variants`, or a name that is no arm.
    fn arms<'s>(&self, suite: &'s Suite) -> Result<Option<Vec<&'s str>>, PlanError> {
        if self.variants.is_empty() {
            return Ok(None);
        }
        let Some(variants) = &suite.variants else {
            return Err(PlanError::Invalid(format!(
                "--variant {}: {} has no `variants`",
                self.variants[0],
                suite.file.display()
            )));
        };
        let mut arms = vec![variants.control.as_str()];
        for name in &self.variants {
            let Some(arm) = variants.names().find(|a| a == name) else {
                let help = unknown(name, variants.names()).help("arms", "no arm is defined");
                return Err(PlanError::Invalid(format!(
                    "--variant {name}: no such arm in {} (`variants.arms`); {help}",
                    suite.file.display()
                )));
            };
            arms.push(arm);
        }
        Ok(Some(arms))
    }
}

/// Plans `suite` for `selection`. A selection that matches no task is an error that lists
/// the known tags or the nearest task ids; `--agent` is checked against each task's level.
pub fn plan(suite: &Suite, selection: &Selection) -> Result<Plan, PlanError> {
    let globs = selection.globs()?;
    let arms = selection.arms(suite)?;
    if let (Some(agent), Some(_)) = (&selection.agent, &suite.variants) {
        return Err(PlanError::Invalid(format!(
            "--agent {agent} would run every arm of `variants` with one agent; set `agent:` on an arm and select arms with --variant"
        )));
    }
    let selected: Vec<usize> =
        (0..suite.tasks.len()).filter(|&i| selection.selects(&globs, &suite.tasks[i], arms.as_deref())).collect();
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
    if let Some(repeat) = selection.repeat {
        let short: Vec<String> = selected
            .iter()
            .map(|&i| &suite.tasks[i])
            .filter_map(|t| t.min_pass.filter(|m| *m > repeat).map(|m| format!("{} ({m})", t.id)))
            .collect();
        if !short.is_empty() {
            return Err(PlanError::Invalid(format!(
                "--repeat {repeat} is fewer trials than these tasks must pass (`min_pass`): {}",
                short.join(", ")
            )));
        }
    }
    let tasks: Vec<PlannedTask> = selected
        .iter()
        .enumerate()
        .filter(|(position, _)| selection.shard.is_none_or(|s| *position % s.count as usize == (s.index - 1) as usize))
        .map(|(_, &index)| {
            let task = &suite.tasks[index];
            match selection.repeat {
                Some(repeat) => PlannedTask { index, repeat, adaptive: None },
                None if selection.adaptive => PlannedTask {
                    index,
                    repeat: match task.repeat.get() {
                        1 => AUTO_MAX_TRIALS,
                        n => NonZeroU32::new(n.min(crate::stats::MOST_ADAPTIVE_TRIALS)).unwrap_or(AUTO_MAX_TRIALS),
                    },
                    adaptive: Some(task.adaptive.unwrap_or(NonZeroU32::MIN)),
                },
                None => PlannedTask { index, repeat: task.repeat, adaptive: task.adaptive },
            }
        })
        .collect();
    if let Some(s) = selection.shard.filter(|_| tasks.is_empty()) {
        notes.push(format!("shard {} of {} of {} has no task", s.index, s.count, suite.id));
    }
    // `selected` is in suite order: one walk beside it finds the rest (a `contains` per
    // task was quadratic, a tenth of `check`'s time at 10,000 tasks).
    let mut chosen = selected.iter().copied().peekable();
    let deselected = suite
        .tasks
        .iter()
        .enumerate()
        .filter(|&(i, _)| chosen.next_if_eq(&i).is_none())
        .map(|(_, t)| t.id.clone())
        .collect();
    Ok(Plan {
        tasks,
        agent,
        shard: selection.shard,
        fail_fast: selection.fail_fast,
        notes,
        deselected,
        selected,
        selection: selection.described(),
    })
}

/// `--agent NAME`: it must exist; it replaces the agent of every task that has one.
/// Execution-level tasks call a tool and have no agent: they keep running as written, and a
/// note says so. Invocation and scenario tasks need a model agent: a command agent is refused.
fn agent_override(suite: &Suite, selected: &[usize], name: &str) -> Result<(Arc<Agent>, Option<String>), PlanError> {
    let Some(agent) = suite.agents.get(name) else {
        let help = unknown(name, suite.agents.keys().map(String::as_str)).help("agents", "the suite defines no agents");
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
        help.extend(unknown(tag, known.iter().copied()).written(|s| format!("--tag {s}")).suggestion());
    }
    for filter in &selection.filter {
        help.extend(unknown(filter, ids()).written(|s| format!("--filter {s}")).suggestion());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::{LoadOptions, load_suite};

    /// A suite with a command agent, a model agent, and a task of every level.
    const SUITE: &str = "evalgate: 1
suite: t.plan
mcp_servers:
  srv: {command: [srv]}
agents:
  sh: {command: [echo, '{prompt}']}
  sh2: {command: [echo, '{prompt}']}
  model: {provider: openai, model: gpt-4o-mini, api_key_env: KEY, mcp: [srv]}
tasks:
  - {id: a1, prompt: x, agent: sh, tags: [smoke], grade: [{type: contains, value: x}]}
  - {id: a2, prompt: x, agent: sh, repeat: 3, min_pass: 2, grade: [{type: contains, value: x}]}
  - {id: call, level: execution, call: {server: srv, tool: echo}, grade: [{type: contains, value: x}]}
  - {id: talk, level: scenario, prompt: x, agent: model, grade: [{type: contains, value: x}]}
";

    fn suite() -> Suite {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evalgate.yaml");
        std::fs::write(&path, SUITE).unwrap();
        load_suite(&path, &LoadOptions::default()).unwrap()
    }

    fn ids(suite: &Suite, plan: &Plan) -> Vec<String> {
        plan.tasks.iter().map(|t| suite.tasks[t.index].id.clone()).collect()
    }

    #[test]
    fn every_shard_of_a_plan_has_its_fingerprint_and_another_selection_another() {
        let suite = suite();
        let fingerprint = |selection: Selection| plan(&suite, &selection).unwrap().fingerprint(&suite);
        let shard = |index| Selection { shard: Some(Shard { index, count: 2 }), ..Selection::default() };
        let whole = fingerprint(Selection::default());
        assert_eq!((whole.tasks, whole.selection.as_slice()), (4, &[][..]));
        assert_eq!(fingerprint(shard(1)), whole);
        assert_eq!(fingerprint(shard(2)), whole);
        let filtered = fingerprint(Selection { filter: vec!["a*".into()], ..shard(2) });
        assert_eq!((filtered.tasks, filtered.selection), (2, vec!["--filter a*".to_owned()]));
        assert_ne!(filtered.definitions, whole.definitions);
        let repeated = fingerprint(Selection { repeat: NonZeroU32::new(3), fail_fast: true, ..Selection::default() });
        assert_eq!(repeated.selection, ["--repeat 3", "--fail-fast"]);
        assert_eq!(repeated.definitions, whole.definitions, "the same tasks, asked the same");
    }

    #[test]
    fn filters_tags_shards_and_repeat_select_without_touching_the_suite() {
        let suite = suite();
        let all = plan(&suite, &Selection::default()).unwrap();
        assert_eq!(ids(&suite, &all), ["a1", "a2", "call", "talk"]);
        assert_eq!(all.tasks[1].repeat.get(), 3);
        let tagged = plan(&suite, &Selection { tags: vec!["smoke".into()], ..Selection::default() }).unwrap();
        assert_eq!(ids(&suite, &tagged), ["a1"]);
        let globbed = plan(&suite, &Selection { filter: vec!["a*".into()], ..Selection::default() }).unwrap();
        assert_eq!(ids(&suite, &globbed), ["a1", "a2"]);
        assert_eq!(globbed.deselected, ["call", "talk"]);
        // Shards deal the selected tasks round-robin; together they cover the plan once.
        let shard = |index| Selection { shard: Some(Shard { index, count: 3 }), ..Selection::default() };
        assert_eq!(ids(&suite, &plan(&suite, &shard(1)).unwrap()), ["a1", "talk"]);
        assert_eq!(ids(&suite, &plan(&suite, &shard(2)).unwrap()), ["a2"]);
        // Tasks dealt to other shards are not left out: the merged results hold them.
        assert!(plan(&suite, &shard(2)).unwrap().deselected.is_empty());
        assert_eq!(ids(&suite, &plan(&suite, &shard(3)).unwrap()), ["call"]);
        let err = plan(&suite, &Selection { repeat: NonZeroU32::new(1), ..Selection::default() }).unwrap_err();
        assert_eq!(err.to_string(), "--repeat 1 is fewer trials than these tasks must pass (`min_pass`): a2 (2)");
        let repeated = plan(&suite, &Selection { repeat: NonZeroU32::new(2), ..Selection::default() }).unwrap();
        assert!(repeated.tasks.iter().all(|t| t.repeat.get() == 2));
        assert_eq!(suite.tasks[1].repeat.get(), 3, "the suite is never changed by a plan");
    }

    #[test]
    fn an_empty_selection_names_the_nearest_or_what_exists() {
        let suite = suite();
        let err = plan(&suite, &Selection { tags: vec!["smok".into()], ..Selection::default() }).unwrap_err();
        assert!(
            matches!(&err, PlanError::NothingSelected(m) if m.ends_with("help: did you mean `--tag smoke`?")),
            "{err}"
        );
        let err = plan(&suite, &Selection { tags: vec!["zzz".into()], ..Selection::default() }).unwrap_err();
        assert!(err.to_string().ends_with("help: tags: smoke"), "{err}");
        let err = plan(&suite, &Selection { filter: vec!["tlak".into()], ..Selection::default() }).unwrap_err();
        assert!(err.to_string().ends_with("help: did you mean `--filter talk`?"), "{err}");
        let err = plan(&suite, &Selection { filter: vec!["[".into()], ..Selection::default() }).unwrap_err();
        assert!(matches!(err, PlanError::Invalid(_)));
    }

    #[test]
    fn agent_keeps_execution_tasks_and_refuses_a_command_agent_for_model_levels() {
        let suite = suite();
        // A command agent cannot run a scenario task: refused, naming it.
        let err = plan(&suite, &Selection { agent: Some("sh2".into()), ..Selection::default() }).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--agent sh2 is a command agent, but these tasks need a model agent (level invocation or scenario): talk; \
             pick a model agent or leave them out with --filter/--tag"
        );
        // Leaving the scenario out, the execution task keeps its tool call, and says so.
        let selection =
            Selection { agent: Some("sh2".into()), filter: vec!["a*".into(), "call".into()], ..Selection::default() };
        let planned = plan(&suite, &selection).unwrap();
        assert_eq!(planned.agent.as_ref().map(|a| a.name().to_owned()).as_deref(), Some("sh2"));
        assert_eq!(planned.notes.len(), 1);
        assert!(planned.notes[0].contains("does not apply to 1 execution-level task(s)"), "{:?}", planned.notes);
        assert!(planned.notes[0].ends_with(": call"));
        let err = plan(&suite, &Selection { agent: Some("shh".into()), ..Selection::default() }).unwrap_err();
        assert!(err.to_string().ends_with("did you mean `sh`?"), "{err}");
    }

    const VARIANTS: &str = "evalgate: 1
suite: t.variants
vars: {word: x}
agents:
  sh: {command: [echo, '{vars.word}']}
  other: {command: [printf, '{vars.word}']}
defaults: {agent: sh}
variants:
  control: a
  arms:
    a: {}
    b: {vars: {word: y}}
    c: {agent: other}
tasks:
  - {id: one, prompt: x, grade: [{type: contains, value: x}]}
  - {id: two, prompt: x, repeat: 2, grade: [{type: contains, value: x}]}
";

    fn variants_suite() -> Suite {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evalgate.yaml");
        std::fs::write(&path, VARIANTS).unwrap();
        load_suite(&path, &LoadOptions::default()).unwrap()
    }

    #[test]
    fn variants_run_every_task_on_every_selected_arm_with_the_control_always() {
        let suite = variants_suite();
        let all = plan(&suite, &Selection::default()).unwrap();
        assert_eq!(ids(&suite, &all), ["one@a", "one@b", "one@c", "two@a", "two@b", "two@c"]);
        let arms: Vec<_> = all.tasks.iter().map(|t| suite.tasks[t.index].arm.clone().unwrap()).collect();
        assert_eq!(arms, ["a", "b", "c", "a", "b", "c"]);
        assert_eq!(suite.tasks[2].agent.name(), "other", "arm c runs its agent");
        // `--variant b`: b and the control; the rest is left out, not missing.
        let b = plan(&suite, &Selection { variants: vec!["b".into()], ..Selection::default() }).unwrap();
        assert_eq!(ids(&suite, &b), ["one@a", "one@b", "two@a", "two@b"]);
        assert_eq!(b.deselected, ["one@c", "two@c"]);
        assert_eq!(b.selection, ["--variant b"]);
        // `--filter` on the id as written selects it on every arm.
        let one = plan(&suite, &Selection { filter: vec!["one".into()], ..Selection::default() }).unwrap();
        assert_eq!(ids(&suite, &one), ["one@a", "one@b", "one@c"]);
        let err = plan(&suite, &Selection { variants: vec!["bb".into()], ..Selection::default() }).unwrap_err();
        assert!(err.to_string().starts_with("--variant bb: no such arm in "), "{err}");
        assert!(err.to_string().ends_with("did you mean `b`?"), "{err}");
        let err = plan(&suite, &Selection { agent: Some("sh".into()), ..Selection::default() }).unwrap_err();
        assert!(err.to_string().contains("would run every arm of `variants` with one agent"), "{err}");
        let err = plan(&self::suite(), &Selection { variants: vec!["b".into()], ..Selection::default() }).unwrap_err();
        assert!(err.to_string().ends_with("has no `variants`"), "{err}");
    }

    #[test]
    fn the_arms_of_a_task_start_trial_by_trial() {
        // Planned: x@a, x@b (2 trials each), y (1 trial), z@a, z@b (3 and 1).
        let arm_of = |i: usize| [Some("x"), Some("x"), None, Some("z"), Some("z")][i].map(str::to_owned);
        let order = trial_order(&[2, 2, 1, 3, 1], arm_of);
        assert_eq!(order, [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (3, 0), (4, 0), (3, 1), (3, 2)]);
        // Without arms, task by task as before.
        assert_eq!(trial_order(&[2, 1], |_| None), [(0, 0), (0, 1), (1, 0)]);
    }
}
