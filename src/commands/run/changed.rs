//! `--changed-since BASE`: the base run, read before anything runs (a results.json, a
//! directory holding one, or fetched as `--baseline github:base` is), a suite's plan split
//! into the tasks that run and those carried forward, and the audit of the carried.
//! Whatever goes wrong with the base runs every task, saying why.

use std::collections::BTreeMap;
use std::path::Path;

use crate::cli::ChangedFlags;
use crate::fingerprint::changes;
use crate::github::baseline_artifact as github;
use crate::plan::{Plan, PlannedTask};
use crate::results::carry::{Carried, CarriedFrom, ChangedSince, TaskFingerprint};
use crate::results::{Results, Status, TaskResult};
use crate::run::dispatcher::EventSink;
use crate::run::events::RunEvent;
use crate::suite::model::Suite;

/// The base run as given, and its results or why they cannot be carried from.
pub(super) struct Base {
    given: String,
    run: Result<Results, String>,
}

/// `--changed-since`'s base for `suite` (`None`: not asked for).
pub(super) fn load_base(suite: &Suite, flags: &ChangedFlags) -> Option<Base> {
    let asked = flags.changed_since.as_ref()?;
    let mut given = asked.display().to_string();
    let path = if given == github::SOURCE {
        match github::fetch_once() {
            Ok(fetched) => {
                given = format!("{}: {}", github::SOURCE, fetched.describe());
                fetched.results_for(&suite.id)
            }
            Err(e) => return Some(Base { given, run: Err(format!("no base run from {}: {e}", github::SOURCE)) }),
        }
    } else if asked.is_dir() {
        let own = asked.join(&suite.id).join("results.json");
        if own.is_file() { own } else { asked.join("results.json") }
    } else {
        asked.clone()
    };
    let run = read(&path).and_then(|r| match r.suite.id == suite.id {
        true => Ok(r),
        false => Err(format!("the base run {} is of suite `{}`, not `{}`", path.display(), r.suite.id, suite.id)),
    });
    Some(Base { given, run })
}

fn read(path: &Path) -> Result<Results, String> {
    let text = crate::files::read::text(path, crate::files::read::RESULTS)
        .map_err(|e| format!("cannot read the base run {}: {e}", path.display()))?;
    crate::results::validate::parse(&text)
        .map_err(|p| format!("the base run {} is not a valid results file: {}", path.display(), p.join("; ")))
}

/// A plan split: what `--changed-since` recorded, the tasks carried (with their place in
/// the plan, to run them after all when the audit finds a mismatch) and the audited ones'
/// carried verdicts.
pub(super) struct Split {
    pub section: ChangedSince,
    carried: Vec<(PlannedTask, Carried)>,
    audited: Vec<(String, Status)>,
}

/// Splits `plan` against `base`: the tasks whose fingerprint (`prints`, by id) changed,
/// and the audit's sample of the others, stay in the plan; the rest are carried. `now`:
/// this run's start; `commit`: the commit under test.
pub(super) fn split(
    plan: &mut Plan,
    suite: &Suite,
    prints: &BTreeMap<String, TaskFingerprint>,
    base: Base,
    flags: &ChangedFlags,
    now: &str,
    commit: Option<&str>,
) -> Split {
    let audit_rate = flags.audit_rate.unwrap_or(changes::DEFAULT_AUDIT_RATE);
    let audit_seed = flags.audit_seed.unwrap_or_else(|| changes::seed_of(commit.unwrap_or(now)));
    let mut section = ChangedSince { base: base.given, audit_rate, audit_seed, ..ChangedSince::default() };
    let id = |p: &PlannedTask| suite.tasks[p.index].id.clone();
    let everything = |mut section: ChangedSince, why: String| {
        crate::errln!("--changed-since: every task runs: {why}");
        section.ran = plan.tasks.iter().map(|p| (id(p), "every task runs".to_owned())).collect();
        section.everything = Some(why);
        Split { section, carried: Vec::new(), audited: Vec::new() }
    };
    let base = match base.run {
        Ok(base) => base,
        Err(why) => return everything(section, why),
    };
    section.from = Some(CarriedFrom::of(&base));
    let behind = base.plan.as_ref().and_then(|p| p.commit.as_deref()).and_then(|c| commits_behind(c, &suite.dir));
    let max_age = flags.max_carry_age.unwrap_or(changes::DEFAULT_MAX_AGE);
    let max_commits = flags.max_carry_commits.unwrap_or(changes::DEFAULT_MAX_COMMITS);
    if let Some(why) = changes::expired(&base, now, max_age, behind, max_commits) {
        return everything(section, why);
    }
    let mut carried = Vec::new();
    let was: std::collections::HashMap<&str, &TaskResult> = base.tasks.iter().map(|t| (t.id.as_str(), t)).collect();
    for planned in &plan.tasks {
        let task = id(planned);
        let chosen = match prints.get(&task) {
            Some(print) => changes::choose(&base, was.get(task.as_str()).copied(), print),
            None => Err("no fingerprint".to_owned()),
        };
        match chosen {
            Ok(carry) => carried.push((*planned, carry)),
            Err(why) => {
                section.ran.insert(task, why);
            }
        }
    }
    let sample = changes::audit_sample(carried.iter().map(|(_, c)| c.id()), audit_rate, audit_seed);
    let (audit, carried): (Vec<_>, Vec<_>) = carried.into_iter().partition(|(_, c)| sample.contains(c.id()));
    section.audited = audit.iter().map(|(_, c)| c.id().to_owned()).collect();
    for id in &section.audited {
        section.ran.insert(id.clone(), "the audit: a carried verdict checked".to_owned());
    }
    section.carried = carried.iter().map(|(_, c)| c.id().to_owned()).collect();
    let audited: Vec<(String, Status)> = audit.iter().map(|(_, c)| (c.id().to_owned(), c.status())).collect();
    let kept: std::collections::HashSet<usize> = carried.iter().map(|(p, _)| p.index).collect();
    plan.tasks.retain(|p| !kept.contains(&p.index));
    Split { section, carried, audited }
}

impl Split {
    /// After the run: when an audited task's fresh verdict is not its carried one, every
    /// carried task must run after all. Returns their plan (dealt after `ran` tasks), and
    /// records why.
    pub(super) fn audit(&mut self, fresh: &[TaskResult], plan: &Plan) -> Option<Plan> {
        let found = changes::mismatches(self.audited.iter().map(|(id, s)| (id.as_str(), *s)), fresh);
        if found.is_empty() {
            return None;
        }
        let listed: Vec<String> =
            found.iter().map(|(id, was, now)| format!("{id} ({} carried, {} now)", was.label(), now.label())).collect();
        let why = format!("the audit found a stale carry: {}; every carried task runs", listed.join(", "));
        crate::errln!("--changed-since: {why}");
        self.section.everything = Some(why);
        if self.carried.is_empty() {
            return None;
        }
        let rest: Vec<PlannedTask> = self.carried.drain(..).map(|(planned, _)| planned).collect();
        for id in std::mem::take(&mut self.section.carried) {
            self.section.ran.insert(id, "the audit found a stale carry".to_owned());
        }
        Some(Plan {
            tasks: rest,
            agent: plan.agent.clone(),
            shard: plan.shard,
            fail_fast: plan.fail_fast,
            notes: Vec::new(),
            deselected: Vec::new(),
            selected: Vec::new(),
            selection: Vec::new(),
        })
    }

    /// The carried tasks' results: each made by `Carried::take`.
    pub(super) fn carried(&mut self) -> impl Iterator<Item = TaskResult> + '_ {
        self.carried.drain(..).map(|(_, carried)| carried.into_result())
    }
}

/// Commits from `commit` to `HEAD` in the repository holding `dir`, when git can tell (a
/// shallow clone without the base commit cannot). `commit` is a results file's text: only
/// a hexadecimal object name is asked about.
fn commits_behind(commit: &str, dir: &Path) -> Option<u64> {
    if !(7..=64).contains(&commit.len()) || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-list", "--count", &format!("{commit}..HEAD")])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// The events of a second dispatch (the carried tasks, run after an audit mismatch), with
/// their tasks numbered after the first's, to the same reporters; the run had started.
pub(super) struct After<'a> {
    pub sink: &'a mut dyn EventSink,
    pub by: usize,
}

impl EventSink for After<'_> {
    fn event(&mut self, event: RunEvent) {
        let by = self.by;
        let event = match event {
            RunEvent::RunStarted { .. } => return,
            RunEvent::TaskStarted { index, id } => RunEvent::TaskStarted { index: index + by, id },
            RunEvent::TrialStarted { index, trial } => RunEvent::TrialStarted { index: index + by, trial },
            RunEvent::TrialRetry { index, trial, attempt, reason } => {
                RunEvent::TrialRetry { index: index + by, trial, attempt, reason }
            }
            RunEvent::TrialFinished { index, trial, result } => {
                RunEvent::TrialFinished { index: index + by, trial, result }
            }
            RunEvent::TaskFinished { index, result } => RunEvent::TaskFinished { index: index + by, result },
            RunEvent::TaskSkipped { index, result } => RunEvent::TaskSkipped { index: index + by, result },
            RunEvent::CancelRequested { signals } => RunEvent::CancelRequested { signals },
            RunEvent::RunFinished { results } => RunEvent::RunFinished { results },
        };
        self.sink.event(event);
    }

    fn wake_at(&self) -> Option<tokio::time::Instant> {
        self.sink.wake_at()
    }

    fn catch_up(&mut self) {
        self.sink.catch_up();
    }
}
