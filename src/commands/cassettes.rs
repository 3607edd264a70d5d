//! `evalgate cassettes prune`: the entries of a cassette a whole run did not ask, listed
//! (`--dry-run`) or removed. Which requests a suite makes is known only by running it (an
//! answer decides the next request), so the run's results say which entries it used.

use crate::cassette::{Cassette, Mode};
use crate::cli::{CassettesCommand, PruneArgs};
use crate::commands::compare::read_results;
use crate::error::Error;
use crate::results::Status;

pub fn cassettes(command: &CassettesCommand) -> Result<i32, Error> {
    match command {
        CassettesCommand::Prune(args) => prune(args),
    }
}

fn prune(args: &PruneArgs) -> Result<i32, Error> {
    let results = read_results(&args.results)?;
    let shown = args.results.display();
    let Some(usage) = &results.cassette else {
        return Err(Error::Usage(format!("{shown}: the run used no cassette")));
    };
    // A part of the suite did not ask what the rest would: its unused entries are not stale.
    let partial = if results.shard.is_some() {
        Some("one shard of it".to_owned())
    } else if let Some(selection) = results.plan.as_ref().filter(|p| !p.selection.is_empty()) {
        Some(format!("a selection of it ({})", selection.selection.join(" ")))
    } else if results.interrupted {
        Some("interrupted".to_owned())
    } else {
        let errored = results.tasks.iter().find(|t| t.status == Status::Error);
        errored.map(|t| format!("task `{}` errored, and may not have asked all it would", t.id))
    };
    if let Some(why) = partial {
        return Err(Error::Usage(format!(
            "{shown} is not a whole run of the suite ({why}): entries it did not ask may still be used; \
             prune from a whole run's results"
        )));
    }
    let path = args.cassette.clone().unwrap_or_else(|| usage.path.clone().into());
    let cassette =
        Cassette::open(&path, path.display().to_string(), Mode::Replay).map_err(|e| Error::Usage(e.to_string()))?;
    let stale: Vec<String> = usage.unused.iter().filter(|k| cassette.entries().contains_key(*k)).cloned().collect();
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
    Ok(crate::exit::SUCCESS)
}
