//! Loading the suites named on the command line and planning each, for `list`, `check`
//! and `run`.

use std::path::PathBuf;

use crate::cli::SelectArgs;
use crate::error::Error;
use crate::files::display_path;
use crate::plan::{Plan, PlanError, Selection, plan};
use crate::preflight::{PreflightError, preflight};
use crate::redact::Secret;
use crate::results::Shard;
use crate::source::{Diagnostic, Locate, Nowhere, ValidateCx};
use crate::suite::model::Suite;
use crate::suite::uses::{Place, suite_uses};
use crate::suite::{LoadError, LoadOptions, load_suite};
use crate::uses::Uses;

/// A loaded suite and its plan.
pub struct Planned {
    pub suite: Suite,
    pub plan: Plan,
}

/// The selection of `list`, `check` and `run` (`run` adds shard, repeat and fail-fast).
pub fn selection(select: &SelectArgs) -> Selection {
    Selection {
        filter: select.filter.clone(),
        tags: select.tag.clone(),
        agent: select.agent.clone(),
        variants: select.variants.clone(),
        ..Selection::default()
    }
}

impl Selection {
    pub fn for_run(
        select: &SelectArgs,
        shard: Option<(u32, u32)>,
        repeat: Option<crate::cli::RepeatArg>,
        fail_fast: bool,
    ) -> Selection {
        use crate::cli::RepeatArg;
        Selection {
            shard: shard.map(|(index, count)| Shard { index, count }),
            repeat: match repeat {
                Some(RepeatArg::Fixed(n)) => Some(n),
                _ => None,
            },
            adaptive: repeat == Some(RepeatArg::Auto),
            fail_fast,
            ..selection(select)
        }
    }
}

/// A planned suite and what it uses ([`suite_uses`]).
pub type SuiteUses<'a> = (&'a Suite, Vec<(Place<'a>, Uses<'a>)>);

/// Each planned suite with what it uses, folded once for the redactor and preflight: a
/// suite of 10,000 tasks is folded in milliseconds, twice in twice that.
pub fn uses_of(planned: &[Planned]) -> Vec<SuiteUses<'_>> {
    planned.iter().map(|p| (&p.suite, suite_uses(&p.suite))).collect()
}

/// Installs the redactor for the secrets the suites carry, and returns them.
pub fn install_redactor(suites: &[SuiteUses<'_>]) -> Vec<Secret> {
    let secrets = crate::suite::uses::secrets(suites.iter().map(|(suite, uses)| (*suite, uses.as_slice())));
    crate::redact::install(secrets.clone());
    secrets
}

/// Loads every suite (all their problems listed together), then plans each. With several
/// suites, one whose tasks the filters all leave out is dropped with a note, unless every
/// suite is; a selection that matches nothing anywhere is invalid.
pub fn load_and_plan(select: &SelectArgs, selection: &Selection) -> Result<Vec<Planned>, Error> {
    let files = if select.suites.is_empty() { vec![PathBuf::from("evalgate.yaml")] } else { select.suites.clone() };
    let options = LoadOptions { vars: select.vars.clone(), ..LoadOptions::default() };
    let mut suites = Vec::new();
    let mut diagnostics = Vec::new();
    for file in files {
        match load_suite(&file, &options) {
            Ok(suite) => suites.push(suite),
            Err(LoadError::Invalid { diagnostics: d }) => diagnostics.extend(d),
            Err(e) => return Err(e.into()),
        }
    }
    diagnostics.extend(shared_ids(&suites));
    if !diagnostics.is_empty() {
        return Err(LoadError::Invalid { diagnostics }.into());
    }
    let mut planned = Vec::new();
    let mut nothing = Vec::new();
    for suite in suites {
        match plan(&suite, selection) {
            Ok(plan) => planned.push(Planned { suite, plan }),
            Err(PlanError::NothingSelected(why)) => nothing.push(why),
            Err(e) => return Err(e.into()),
        }
    }
    if planned.is_empty() && !nothing.is_empty() {
        return Err(Error::Usage(nothing.join("\n")));
    }
    for why in nothing {
        crate::errln!("note: {}", why.lines().next().unwrap_or_default());
    }
    for p in &planned {
        for note in &p.plan.notes {
            crate::errln!("note: {note}");
        }
    }
    Ok(planned)
}

/// Each suite of a run has its own id: its reports go to `OUT/ID/`, its results are matched
/// with baselines and comments by it. A second suite with an id already taken is an error at
/// its `suite:` key.
fn shared_ids(suites: &[Suite]) -> Vec<Diagnostic> {
    let mut problems = Vec::new();
    for (i, suite) in suites.iter().enumerate() {
        let Some(first) = suites[..i].iter().find(|s| s.id == suite.id) else { continue };
        let message = format!(
            "`{}` is also the id of {}: each suite of a run needs its own id (its reports go to OUT/{}/)",
            suite.id,
            display_path(&first.file),
            suite.id
        );
        let text = crate::yaml::read(&suite.file).unwrap_or_default();
        let positions: Box<dyn Locate> = match crate::yaml::Document::parse(&text) {
            Ok(doc) => Box::new(doc),
            Err(_) => Box::new(Nowhere),
        };
        let cx = ValidateCx::new(&suite.file, suite.dir.clone(), &text, positions);
        let at = crate::source::KeyPath::root("suite");
        let problem = cx.diagnostic_at(&at, cx.value_position(&at), message);
        problems.push(problem);
    }
    problems
}

pub fn preflight_all(suites: &[SuiteUses<'_>]) -> Result<(), Error> {
    let failures: Vec<PreflightError> =
        suites.iter().filter_map(|(suite, uses)| preflight(suite, uses).err()).collect();
    if failures.is_empty() { Ok(()) } else { Err(Error::Preflight(failures)) }
}

/// `SUITE/TASK  FILE:LINE [tags]`, one line a planned task.
pub fn print_plan(p: &Planned) {
    let file = display_path(&p.suite.file);
    for planned in &p.plan.tasks {
        let task = &p.suite.tasks[planned.index];
        let tags = if task.tags.is_empty() { String::new() } else { format!(" [{}]", task.tags.join(", ")) };
        // An imported task is where it is written: its own file and line.
        let (file, line) = match &task.origin {
            Some((origin, line)) => (display_path(&p.suite.dir.join(origin)), *line),
            None => (file.clone(), task.position.line),
        };
        crate::outln!("{}/{}  {file}:{line}{tags}", p.suite.id, task.id);
    }
    // Conformance checks are known once the tool has run: one line for each server's.
    if p.plan.shard.is_none_or(|s| s.index == 1) {
        let servers: Vec<_> =
            p.suite.mcp_servers.iter().filter_map(|(n, s)| Some((n, s.conformance.as_ref()?))).collect();
        for (name, conformance) in &servers {
            let prefix = if servers.len() > 1 { format!("conformance/{name}") } else { "conformance".to_owned() };
            crate::outln!("{}/{prefix}/*  {file}:{} [conformance]", p.suite.id, conformance.line);
        }
    }
}
