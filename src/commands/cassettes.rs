//! `evalgate cassettes prune`: the entries of a cassette that whole runs of every suite using
//! it did not ask, listed (`--dry-run`) or removed. Which requests a suite makes is known
//! only by running it (an answer decides the next request), so the runs' results say which
//! entries they used, and each entry names the suites whose recording runs asked it: an
//! entry goes only when every one of those suites' whole runs is given and none asked it.
//!
//! And [`open`]: the suite's cassette as every command that asks a model opens it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use crate::cassette::{Cassette, Mode};
use crate::cli::{CassetteFlags, CassettesCommand, PruneArgs};
use crate::commands::results_file::read_results;
use crate::error::Error;
use crate::files::display_path;
use crate::results::{NotRun, Results, Status};
use crate::suite::model::Suite;

/// The suite's cassette, read, with its mode decided: a flag of the command line over the
/// suite's `cassettes:` mode, set on the suite too (preflight reads it there: a replayed
/// run needs no key). `None`: the suite has no cassette and no flag asks for one. The one
/// place a command line's cassette flags are read and a suite's cassette is opened.
pub fn open(suite: &mut Suite, flags: CassetteFlags) -> Result<Option<Arc<Cassette>>, Error> {
    suite.apply_cassette_flag(flags.mode());
    let Some(c) = &suite.cassettes else { return Ok(None) };
    read(&c.path, c.mode, &suite.id).map(|cassette| Some(Arc::new(cassette.normalizing(c.normalize.clone()))))
}

/// The cassette file at `path`, for a run of `suite` in `mode`; named in messages as shown.
fn read(path: &Path, mode: Mode, suite: &str) -> Result<Cassette, Error> {
    Cassette::open(path, display_path(path), mode, suite).map_err(|e| Error::Usage(e.to_string()))
}

pub fn cassettes(command: &CassettesCommand) -> Result<i32, Error> {
    match command {
        CassettesCommand::Prune(args) => prune(args),
    }
}

fn prune(args: &PruneArgs) -> Result<i32, Error> {
    // Per results file: its suite and the keys its run did not ask.
    let mut runs: Vec<(String, BTreeSet<String>)> = Vec::new();
    let mut named: Option<(String, String)> = None;
    for file in &args.results {
        let results = read_results(file)?;
        let shown = file.display();
        let Some(usage) = &results.cassette else {
            return Err(Error::Usage(format!("{shown}: the run used no cassette")));
        };
        if let Some(why) = not_whole(&results) {
            return Err(Error::Usage(format!(
                "{shown} is not a whole run of the suite ({why}): entries it did not ask may still be used; \
                 prune from a whole run's results"
            )));
        }
        match &named {
            Some((first, path)) if args.cassette.is_none() && *path != usage.path => {
                return Err(Error::Usage(format!(
                    "{first} used the cassette {path} and {shown} used {}: prune one cassette at a time (--cassette)",
                    usage.path
                )));
            }
            Some(_) => {}
            None => named = Some((shown.to_string(), usage.path.clone())),
        }
        runs.push((results.suite.id.clone(), usage.unused.iter().cloned().collect()));
    }
    let Some((_, used_path)) = named else { return Err(Error::Usage("no results file given".into())) };
    let path = args.cassette.clone().unwrap_or_else(|| used_path.into());
    let cassette = read(&path, Mode::Replay, "")?;
    let ran: BTreeSet<&str> = runs.iter().map(|(suite, _)| suite.as_str()).collect();
    let mut stale = Vec::new();
    // Entries no given run asked, kept: per suite that uses them and was not given, how many;
    // and those that name no suite (recorded before entries did).
    let mut others: BTreeMap<&str, usize> = BTreeMap::new();
    let mut unnamed = 0;
    for (key, entry) in cassette.entries() {
        if !runs.iter().all(|(_, unused)| unused.contains(key)) {
            continue;
        }
        let missing: Vec<&str> = entry.suites.iter().map(String::as_str).filter(|s| !ran.contains(s)).collect();
        if entry.suites.is_empty() {
            unnamed += 1;
        } else if missing.is_empty() {
            stale.push(key.clone());
        } else {
            missing.into_iter().for_each(|suite| *others.entry(suite).or_default() += 1);
        }
    }
    for key in &stale {
        let entry = &cassette.entries()[key];
        let model = entry.model.as_deref().unwrap_or("-");
        crate::outln!("{key}  {}  {model}  recorded {}", entry.kind, entry.recorded);
    }
    let verb = if args.dry_run { "would remove" } else { "removed" };
    if !args.dry_run && !stale.is_empty() {
        cassette.prune(&stale)?;
    }
    crate::outln!("{verb} {} of {} entries from {}", stale.len(), cassette.entries().len(), path.display());
    for (suite, n) in others {
        crate::outln!("kept {n} entr(ies) suite `{suite}` also asked: give a whole run of it too (--results)");
    }
    if unnamed > 0 {
        crate::outln!(
            "kept {unnamed} entr(ies) that name no suite (recorded before evalgate noted which suites ask an entry): \
             a recording run of each suite using the file notes them"
        );
    }
    Ok(crate::exit::SUCCESS)
}

/// Why `results` is no evidence that every task of its suite ran and asked all it would,
/// if it is none: a part of the suite, a run stopped early (interrupted, a budget, a failed
/// `preflight: true` hook), a missing shard, or a task or trial that did not run whole.
fn not_whole(results: &Results) -> Option<String> {
    if results.shard.is_some() {
        return Some("one shard of it".into());
    }
    let Some(plan) = &results.plan else { return Some("its results record no plan".into()) };
    if !plan.selection.is_empty() {
        return Some(format!("a selection of it ({})", plan.selection.join(" ")));
    }
    if results.interrupted {
        return Some("interrupted".into());
    }
    let stopped = [
        (&results.preflight_failure, "a `preflight: true` hook failed"),
        (&results.invalid, "it was invalid"),
        (&results.aborted, "it was aborted"),
    ];
    if let Some((_, why)) = stopped.iter().find(|(what, _)| what.is_some()) {
        return Some((*why).to_owned());
    }
    if !results.incomplete.is_empty() {
        return Some(results.incomplete.join("; "));
    }
    if results.tasks.is_empty() {
        return Some("no task ran".into());
    }
    results.tasks.iter().find_map(|task| {
        let id = &task.id;
        let ran =
            matches!(task.status, Status::Passed | Status::Failed) || task.not_run == Some(NotRun::ExpectedFailure);
        if !ran {
            let why = task.reason.as_deref().unwrap_or(task.status.label());
            return Some(format!("task `{id}` did not run whole ({why})"));
        }
        if task.trials_planned.is_some_and(|planned| planned > task.repeat) {
            return Some(format!("task `{id}` stopped its trials once settled, and later ones may ask more"));
        }
        let errored = task.trials.iter().any(|t| t.status == Status::Error);
        errored.then(|| format!("a trial of task `{id}` errored, and may not have asked all it would"))
    })
}
