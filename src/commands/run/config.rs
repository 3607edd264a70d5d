//! A run's configuration: its command line resolved once, before anything runs, and then
//! passed whole (ripgrep's low-args → high-args split: `cli::RunArgs` is what clap parsed,
//! `RunConfig` what the run acts on). No function of the run reads a raw flag: each
//! decision a flag takes part in (GitHub or not, how much the terminal says, the selection,
//! the cassette's mode) is made here or in the one place that owns it
//! (`commands::cassettes::open` for the cassette, `regression::plan_regression` for the
//! baseline), each once. What is decided per suite (its cassette, its baseline, its report
//! paths, prices) is `Prepared`, made from this by `prepare`.

use std::path::PathBuf;

use crate::cli::{CassetteFlags, ChangedFlags, RunArgs, SelectArgs};
use crate::plan::Selection;
use crate::policy::PairedPolicy;
use crate::report::terminal::Verbosity;
use crate::report::writer::ReportFlags;

/// What a run acts on, resolved from its command line.
#[derive(Debug, Clone)]
pub(crate) struct RunConfig {
    /// The suites named, and their filters (loading reads them).
    pub select: SelectArgs,
    /// What is asked of every suite: filters, shard, repeat, fail-fast.
    pub selection: Selection,
    pub out: PathBuf,
    pub reports: ReportFlags,
    pub dry_run: bool,
    /// Acting as a GitHub Action (`--github`, `--no-github`, else `GITHUB_ACTIONS`).
    pub github: bool,
    pub comment: bool,
    /// `-j`: `None` fits the defaults to the machine, silently.
    pub jobs: Option<u32>,
    pub verbosity: Verbosity,
    pub baseline: Option<PathBuf>,
    pub update_baseline: bool,
    /// `--changed-since` and its limits (`changed::load_base` reads them).
    pub changed: ChangedFlags,
    pub update_snapshot: bool,
    pub paired: PairedPolicy,
    /// The response cache is read and written (no `--no-cache`).
    pub cache: bool,
    pub cassette: CassetteFlags,
    pub pricing: Option<PathBuf>,
}

impl RunConfig {
    /// The one place a run reads its command line.
    pub fn new(args: &RunArgs) -> RunConfig {
        let RunArgs {
            select,
            jobs,
            out,
            reports,
            fail_fast,
            dry_run,
            shard,
            repeat,
            baseline,
            update_baseline,
            changed,
            update_snapshot,
            paired,
            github,
            no_github,
            comment,
            no_cache,
            cassette,
            pricing,
        } = args.clone();
        let verbosity = match (select.quiet, select.verbose) {
            (true, _) => Verbosity::Quiet,
            (_, true) => Verbosity::Verbose,
            _ => Verbosity::Normal,
        };
        RunConfig {
            selection: Selection::for_run(&select, shard, repeat, fail_fast),
            select,
            out,
            reports,
            dry_run,
            github: crate::github::actions::enabled(github, no_github),
            comment,
            jobs,
            verbosity,
            baseline,
            update_baseline,
            changed,
            update_snapshot,
            paired,
            cache: !no_cache,
            cassette,
            pricing,
        }
    }
}
