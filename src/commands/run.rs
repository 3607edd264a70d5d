//! `evalgate run`: claim the out directory, load and plan, preflight, run each suite with
//! its reporters, gate, publish. Every way the run can end leaves reports that say how, and
//! every suite, run or stopped before it ran, is published to GitHub the same way.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use super::suites::{Planned, install_redactor, load_and_plan, preflight_all, print_plan, uses_of};
use crate::cassette::Cassette;
use crate::cli::RunArgs;
use crate::error::{Error, runtime};
use crate::files::display_path;
use crate::gate::finalize;
use crate::github::annotations;
use crate::github::publisher::Publisher;
use crate::llm::cache::ResponseCache;
use crate::llm::pricing::{Price, PriceTable};
use crate::llm::runtime::LlmRuntime;
use crate::report::reporter::{EventLogReporter, Fanout, FileReports};
use crate::report::terminal::TerminalReporter;
use crate::report::writer::{ClaimedDir, OutputPaths, ReportFlags};
use crate::results::{PlanFingerprint, Results, SuiteInfo};
use crate::run::dispatcher::{Dispatched, Dispatcher, EventSink, Services};
use crate::run::events::RunEvent;
use crate::run::lanes::Concurrency;
use crate::run::signal::Stop;
use crate::suite::model::Suite;

mod changed;
mod config;
mod mcp;
mod refused;
mod regression;
mod stopped;

use config::RunConfig;
pub use refused::refused_run;
use regression::{RegressionPlan, plan_regression, update_baseline};
use stopped::{not_run, record_stop, skeleton, suite_info};

pub fn run(args: &RunArgs, stop: &Stop) -> Result<i32, Error> {
    let config = RunConfig::new(args);
    if config.dry_run {
        one_file_per_report(&config)?;
        let mut planned = load_and_plan(&config.select, &config.selection)?;
        install_redactor(&uses_of(&planned));
        for p in &mut planned {
            super::cassettes::open(&mut p.suite, config.cassette)?;
        }
        preflight_all(&uses_of(&planned))?;
        planned.iter().for_each(print_plan);
        return Ok(crate::exit::SUCCESS);
    }
    let runtime = runtime()?;
    let code = run_claimed(&config, &runtime, stop);
    // Not waiting for the blocking pool: a load abandoned at a signal may be blocked for
    // ever, and nothing else there is ours to wait for. What the run started is killed by
    // the frame it runs in (`commands::frame`).
    runtime.shutdown_background();
    code
}

fn run_claimed(config: &RunConfig, runtime: &tokio::runtime::Runtime, stop: &Stop) -> Result<i32, Error> {
    // Claimed first: whatever happens next, the previous run's reports are gone and this
    // run's say how it ended.
    let claimed = match ClaimedDir::claim(&config.out) {
        Ok(claimed) => claimed,
        Err(e) => {
            let stopped = Stopped::named(config, Some(e.into()));
            return runtime.block_on(stopped_early(config, None, stopped, stop));
        }
    };
    // Signals are answered from here to the end, in every phase: loading, the run, the
    // reports and the PR comment (the frame listens for them from the start).
    runtime.block_on(async {
        // Loading runs on the blocking pool (it may start a runtime of its own, for an MCP
        // server's `evals/list`), so a signal meanwhile stops the run here, with reports
        // that say so; what the abandoned load started is killed at the exit, with the rest.
        let owned = config.clone();
        let loading = tokio::task::spawn_blocking(move || prepare(&owned));
        let prepared = tokio::select! {
            loaded = loading => loaded.unwrap_or_else(|e| Err(Stopped::named(config, Some(Error::Internal(e.to_string()))))),
            () = stop.cancel.cancelled() => Err(Stopped::named(config, None)),
        };
        match prepared {
            Ok(prepared) => execute(config, prepared, &claimed, stop).await,
            Err(stopped) => stopped_early(config, Some(&claimed), stopped, stop).await,
        }
    })
}

/// `--junit`, `--markdown`, `--json` and `--html` name one file: with several suites they cannot.
fn one_file_per_report(config: &RunConfig) -> Result<(), Error> {
    if config.select.suites.len() > 1 && config.reports.any() {
        return Err(Error::Usage(format!(
            "{} name one file; with several suites, reports go to OUT/SUITE-ID/",
            ReportFlags::NAMES
        )));
    }
    Ok(())
}

/// Everything decided before the first task: plans, where their reports go (proven
/// writable), baselines, prices.
struct Prepared {
    planned: Vec<Planned>,
    paths: Vec<OutputPaths>,
    regressions: Vec<RegressionPlan>,
    prices: BTreeMap<String, Price>,
    /// Each suite's cassette, read.
    cassettes: Vec<Option<Arc<Cassette>>>,
    /// Each suite's `--changed-since` base, read.
    bases: Vec<Option<changed::Base>>,
}

/// Why the run stopped before any suite ran (`None`: a signal), and the suites it knew of
/// by then.
struct Stopped {
    error: Option<Error>,
    suites: Vec<SuiteInfo>,
}

impl Stopped {
    /// Before the suites loaded: each is known by its file and the id the file declares
    /// (`evalgate` when it cannot be read), so its reports and its PR comment are the ones
    /// a run of it wrote before.
    fn named(config: &RunConfig, error: Option<Error>) -> Stopped {
        let files = if config.select.suites.is_empty() {
            vec![PathBuf::from("evalgate.yaml")]
        } else {
            config.select.suites.clone()
        };
        let mut suites: Vec<SuiteInfo> = Vec::new();
        for file in files {
            let id = crate::suite::declared_id(&file).unwrap_or_else(|| "evalgate".into());
            if suites.iter().all(|s| s.id != id) {
                suites.push(SuiteInfo {
                    id,
                    version: None,
                    description: None,
                    file: display_path(&file),
                    modes: vec![],
                });
            }
        }
        Stopped { error, suites }
    }

    fn loaded(planned: &[Planned], error: Error) -> Stopped {
        Stopped { error: Some(error), suites: planned.iter().map(|p| suite_info(&p.suite)).collect() }
    }
}

fn prepare(config: &RunConfig) -> Result<Prepared, Stopped> {
    one_file_per_report(config).map_err(|e| Stopped::named(config, Some(e)))?;
    let mut planned = load_and_plan(&config.select, &config.selection).map_err(|e| Stopped::named(config, Some(e)))?;
    // The redactor and the runner's masks first, before anything can print a secret.
    let secrets = install_redactor(&uses_of(&planned));
    if config.github {
        crate::github::masks::add_masks(&secrets);
    }
    // Each suite's cassette, read, its mode decided (preflight reads it: a replay needs no key).
    let cassettes: Result<Vec<_>, _> =
        planned.iter_mut().map(|p| super::cassettes::open(&mut p.suite, config.cassette)).collect();
    let cassettes = cassettes.map_err(|e| Stopped::loaded(&planned, e))?;
    let stopped = |e| Stopped::loaded(&planned, e);
    // A report that could not be written (a directory in its place, a read-only or missing
    // directory) stops the run before anything runs: exit 4, as a write error at the end.
    let paths = paths_of(config, &planned.iter().map(|p| p.suite.id.as_str()).collect::<Vec<_>>());
    if let Some(clash) = paths.iter().find_map(OutputPaths::clash) {
        return Err(stopped(Error::Usage(clash)));
    }
    paths.iter().try_for_each(OutputPaths::prepare).map_err(|e| stopped(e.into()))?;
    let regressions =
        planned.iter().map(|p| plan_regression(&p.suite, config)).collect::<Result<Vec<_>, _>>().map_err(stopped)?;
    let prices = read_prices(config.pricing.as_deref()).map_err(stopped)?;
    preflight_all(&uses_of(&planned)).map_err(stopped)?;
    let bases = planned.iter().map(|p| changed::load_base(&p.suite, &config.changed)).collect();
    Ok(Prepared { planned, paths, regressions, prices, cassettes, bases })
}

/// The run stopped before any suite ran (exit 2 or 3, or 4 when the out directory could
/// not be claimed): each suite's reports, when the directory is ours, and what GitHub shows
/// of it say why. The error's own problems are annotated where they are, once.
async fn stopped_early(
    config: &RunConfig,
    claimed: Option<&ClaimedDir>,
    stopped: Stopped,
    stop: &Stop,
) -> Result<i32, Error> {
    let Stopped { error, suites } = stopped;
    let mut results: Vec<Results> = suites.into_iter().map(|s| not_run(s, error.as_ref())).collect();
    let paths = paths_of(config, &results.iter().map(|r| r.suite.id.as_str()).collect::<Vec<_>>());
    // The stop's own error stays the one reported (the gate's precedence: invalid and
    // preflight before aborted); a report that cannot be written as well is a warning.
    let written = claimed.map_or(Ok(()), |claimed| {
        claimed.record(&paths.iter().collect::<Vec<_>>())?;
        // Every report that can be written is: the one in the way does not stop the others.
        paths.iter().zip(&results).try_for_each(|(p, r)| {
            let prepared = p.prepare();
            p.write_reports(r).and(prepared)
        })
    });
    if let Err(e) = written {
        crate::errln!("warning: {e}");
    }
    let mut publisher = Publisher::new(config.github, config.comment, results.len()).stopped_by(stop.clone());
    if let Err(e) = publisher.write_outputs(results.iter().zip(&paths)) {
        crate::errln!("warning: {e}");
    }
    // A report that cannot be written (found before the run) is each suite's, on its file,
    // as when found at the end; other errors are annotated where they are, once.
    let on_each_suite = matches!(error, Some(Error::Write(_)));
    let mut problems = match &error {
        Some(error) if !on_each_suite => annotations::of_error(error),
        _ => Vec::new(),
    };
    for r in &mut results {
        let problems = if on_each_suite { annotations::of_results(r) } else { std::mem::take(&mut problems) };
        publisher.publish(r, &problems).await;
    }
    error.map_or(Ok(crate::exit::ABORTED), Err)
}

/// Where each suite's reports go: `--out` itself for one suite, `OUT/SUITE-ID/` for several.
fn paths_of(config: &RunConfig, suite_ids: &[&str]) -> Vec<OutputPaths> {
    let several = suite_ids.len() > 1;
    suite_ids
        .iter()
        .map(|id| match several {
            true => OutputPaths::new(&config.out.join(id), &ReportFlags::default()),
            false => OutputPaths::new(&config.out, &config.reports),
        })
        .map(|paths| paths.within(&config.out))
        .collect()
}

async fn execute(config: &RunConfig, prepared: Prepared, claimed: &ClaimedDir, stop: &Stop) -> Result<i32, Error> {
    let Prepared { planned, paths, regressions, prices, cassettes, bases } = prepared;
    let github = config.github;
    let mut publisher = Publisher::new(github, config.comment, planned.len()).stopped_by(stop.clone());
    // The first error aborts the run: the suites after it do not start.
    let mut error: Option<Error> = claimed.record(&paths.iter().collect::<Vec<_>>()).err().map(Error::from);
    let jobs = match config.jobs {
        Some(n) => Concurrency::jobs(n as usize),
        None => Concurrency::for_cores(std::thread::available_parallelism().map_or(1, usize::from)),
    };
    let (limit, allowed) = crate::process::tasks_within_open_file_limit();
    // The defaults fit themselves to the limit silently; an explicit `-j` is answered.
    if config.jobs.is_some() && jobs.total > allowed {
        crate::errln!(
            "the open-file limit ({limit}) allows {allowed} task(s) at once: running {allowed}, not {} (raise it with `ulimit -n`)",
            jobs.total
        );
    }
    let jobs = jobs.within(allowed);
    let mut terminal = TerminalReporter::new(config.verbosity);
    let mut suites: Vec<(Results, &OutputPaths)> = Vec::new();
    // Each suite's `events.jsonl`, ended once the run's outcome is settled, below.
    let mut logs: Vec<Option<EventLogReporter>> = Vec::new();
    let suites_of = planned.into_iter().zip(&paths).zip(regressions).zip(cassettes).zip(bases);
    for ((((p, paths), regression), cassette), base) in suites_of {
        let results = if error.is_some() || stop.cancel.is_cancelled() {
            let results = not_run(suite_info(&p.suite), error.as_ref());
            if let Err(e) = paths.write_reports(&results) {
                error.get_or_insert(e.into());
            }
            logs.push(None);
            results
        } else {
            let llm = Arc::new(llm_runtime(&p.suite, config, &prices).with_cassette(cassette));
            let (update_baseline, update_snapshot) = (config.update_baseline, config.update_snapshot);
            let suite_run = SuiteRun {
                planned: p,
                paths,
                regression,
                llm,
                stop: stop.clone(),
                jobs,
                update_baseline,
                update_snapshot,
                base,
                changed: &config.changed,
            };
            let (results, failed, log) = suite_run.run(&mut terminal, github).await;
            error = error.or(failed);
            logs.push(log);
            results
        };
        suites.push((results, paths));
    }
    // Nothing is published before the run's end is settled: an error that aborted a suite,
    // or step outputs that cannot be written, aborts the whole run, and every report already
    // written says so before GitHub is shown any of them.
    if let Some(e) = &error {
        abort_all(&mut suites, e);
    }
    if let Err(e) = publisher.write_outputs(suites.iter().map(|(r, p)| (r, *p))) {
        crate::errln!("evalgate: {e}; the run is aborted");
        let e = Error::from(e);
        abort_all(&mut suites, &e);
        error.get_or_insert(e);
    }
    let mut stopped = false;
    for (results, paths) in &mut suites {
        let problems = annotations::of_results(results);
        // A signal while the comment was posted (abandoned): the run did not end as its
        // reports said, so they are written again, interrupted.
        if publisher.publish(results, &problems).await {
            stopped = true;
            if let Err(e) = paths.write_reports(results) {
                error.get_or_insert(e.into());
            }
        }
    }
    // The step outputs said otherwise: written again, their last values are these.
    if stopped && let Err(e) = publisher.write_outputs(suites.iter().map(|(r, p)| (r, *p))) {
        error.get_or_insert(e.into());
    }
    // Settled: each log's last event says what its reports say.
    let ended: Vec<_> =
        suites.iter().zip(logs).filter_map(|((results, _), log)| log?.complete(results).err()).collect();
    if let Some(e) = ended.into_iter().next() {
        let e = Error::from(e);
        abort_all(&mut suites, &e);
        error.get_or_insert(e);
    }
    let overall = crate::gate::overall(suites.iter().map(|(r, _)| &r.verdict.outcome));
    let code = overall.map_or(crate::exit::SUCCESS, |o| crate::gate::exit_code(o, crate::gate::Decided::InRun));
    error.map_or(Ok(code), Err)
}

/// The run is aborted by `e`: every suite's results record it and every report is
/// rewritten to say so (one that cannot be is a warning: `e` is the error reported).
fn abort_all(suites: &mut [(Results, &OutputPaths)], e: &Error) {
    for (results, paths) in suites {
        record_stop(results, e);
        // The terminal may have shown the suite's verdict before: its last word is this one.
        crate::errln!("{} {}", results.verdict.outcome.label().to_uppercase(), results.suite.id);
        if let Err(w) = paths.write_reports(results) {
            crate::errln!("warning: {w}");
        }
    }
}

/// One suite's run, as prepared before anything runs.
struct SuiteRun<'a> {
    planned: Planned,
    paths: &'a OutputPaths,
    regression: RegressionPlan,
    llm: Arc<LlmRuntime>,
    stop: Stop,
    jobs: Concurrency,
    update_baseline: bool,
    update_snapshot: bool,
    /// `--changed-since`'s base, and its limits.
    base: Option<changed::Base>,
    changed: &'a crate::cli::ChangedFlags,
}

impl SuiteRun<'_> {
    /// The suite's results, whatever happened, the error that aborted it, if one did (a
    /// report or the baseline that could not be written): its results then say so, and its
    /// event log, to be ended when the run's outcome is settled.
    async fn run(
        self,
        terminal: &mut TerminalReporter,
        github: bool,
    ) -> (Results, Option<Error>, Option<EventLogReporter>) {
        let SuiteRun {
            planned,
            paths,
            regression,
            llm,
            stop,
            jobs,
            update_baseline: update,
            update_snapshot,
            base,
            changed,
        } = self;
        let Planned { suite, mut plan } = planned;
        let started = Instant::now();
        let suite = Arc::new(suite);
        let mut results = skeleton(suite_info(&suite));
        results.thresholds = suite.thresholds.clone();
        results.judges = super::judge::judges(&suite);
        results.variants = suite.variants.as_ref().map(|v| v.section(suite.regression.as_ref()));
        results.regression = regression.section;
        if let Some(section) = results.regression.as_mut() {
            section.deselected.clone_from(&plan.deselected);
        }
        results.shard = plan.shard;
        // A pull request's head, not the merge commit GitHub made: what `comment --pr` checks.
        let commit = crate::github::event::head_sha();
        results.plan = Some(PlanFingerprint { commit: commit.clone(), ..plan.fingerprint(&suite) });
        // Every planned task's fingerprint, recorded on its result; with `--changed-since`,
        // the tasks whose fingerprint the base run shares are carried, not planned.
        let replayed = llm
            .cassette
            .as_deref()
            .filter(|_| suite.cassettes.as_ref().is_some_and(|c| c.mode != crate::cassette::Mode::Record));
        let indices: Vec<usize> = plan.tasks.iter().map(|t| t.index).collect();
        let prints: BTreeMap<String, crate::results::carry::TaskFingerprint> = indices
            .iter()
            .map(|&i| suite.tasks[i].id.clone())
            .zip(crate::fingerprint::fingerprints(&suite, &indices, replayed))
            .collect();
        let planned_tasks = plan.tasks.len();
        let mut split = base.map(|base| {
            changed::split(&mut plan, &suite, &prints, base, changed, &results.started_at, commit.as_deref())
        });

        let mut events =
            match EventLogReporter::create(paths, &results, regression.baseline.as_ref().map(|b| b.run_id.as_str())) {
                Ok(events) => events,
                Err(e) => {
                    let e = Error::from(e);
                    record_stop(&mut results, &e);
                    return (results, Some(e), None);
                }
            };
        let mut fanout = Fanout { cancel: Some(stop.cancel.clone()), ..Fanout::default() };
        // The log group before the terminal: it ends the group at `RunFinished` before the
        // terminal prints the gate table and verdict, which then stay in view.
        if github {
            fanout.reporters.push(Box::new(crate::github::actions::LogGroup));
        }
        fanout.reporters.push(Box::new(&mut *terminal));
        fanout.reporters.push(Box::new(&mut events));
        fanout.reporters.push(Box::new(FileReports::new(paths, results.clone(), planned_tasks)));

        let servers = tokio::select! {
            servers = async {
                let servers = crate::preflight::start_servers(&suite, llm.cassette.as_ref()).await?;
                match crate::preflight::start_extensions(&suite).await {
                    Ok(extensions) => Ok((servers, extensions)),
                    Err(e) => {
                        servers.close().await;
                        Err(e)
                    }
                }
            } => Some(servers),
            () = stop.cancel.cancelled() => None,
        };
        let mut conformance_tasks = Vec::new();
        let dispatched = match servers {
            Some(Ok((servers, extensions))) => {
                let servers = Arc::new(servers);
                let extensions = Arc::new(extensions);
                mcp::record_servers(&mut results, &suite, &servers, update_snapshot).await;
                let services = Services { llm: llm.clone(), servers: servers.clone(), extensions: extensions.clone() };
                let mut dispatched =
                    Dispatcher::new(suite.clone(), &plan, jobs, stop.clone(), &mut fanout).run(services).await;
                // A stale carry the audit found: every carried task runs after all.
                let rerun = split.as_mut().and_then(|s| s.audit(&dispatched.tasks, &plan));
                if let Some(rerun) = rerun.filter(|_| !stop.cancel.is_cancelled()) {
                    let services =
                        Services { llm: llm.clone(), servers: servers.clone(), extensions: extensions.clone() };
                    let mut after = changed::After { sink: &mut fanout, by: plan.tasks.len() };
                    let again =
                        Dispatcher::new(suite.clone(), &rerun, jobs, stop.clone(), &mut after).run(services).await;
                    dispatched.tasks.extend(again.tasks);
                    dispatched.hooks.extend(again.hooks);
                    dispatched.interrupted |= again.interrupted;
                }
                // After the tasks, on the servers they used; a sharded run has the
                // conformance checks once, in its first shard.
                if plan.shard.is_none_or(|s| s.index == 1) && !stop.cancel.is_cancelled() {
                    tokio::select! {
                        (tasks, runs) = mcp::conformance(&suite) => {
                            conformance_tasks = tasks;
                            results.mcp_conformance = runs;
                        }
                        () = stop.cancel.cancelled() => {}
                    }
                }
                servers.close().await;
                extensions.shutdown().await;
                results.extensions = extensions.infos();
                dispatched
            }
            // The terminal's summary shows the reason, under PREFLIGHT FAILED.
            Some(Err(e)) => Dispatched { preflight_failure: Some(e.to_string()), ..Dispatched::default() },
            None => Dispatched { interrupted: true, ..Dispatched::default() },
        };
        results.tasks = dispatched.tasks;
        for task in &mut results.tasks {
            task.fingerprint = prints.get(&task.id).cloned();
        }
        if let Some(split) = &mut split {
            // Not on a run that stopped before its tasks: nothing is carried into it.
            if !results.tasks.is_empty() || plan.tasks.is_empty() {
                results.tasks.extend(split.carried());
            }
            let order: BTreeMap<&str, usize> =
                suite.tasks.iter().enumerate().map(|(i, t)| (t.id.as_str(), i)).collect();
            results.tasks.sort_by_key(|t| order.get(t.id.as_str()).copied().unwrap_or(usize::MAX));
            results.changed_since = Some(split.section.clone());
        }
        results.tasks.append(&mut conformance_tasks);
        results.hooks = dispatched.hooks;
        results.interrupted = dispatched.interrupted || stop.cancel.is_cancelled();
        results.preflight_failure = dispatched.preflight_failure;
        if results.tasks.is_empty() && planned_tasks > 0 && results.preflight_failure.is_none() {
            results.incomplete.push(format!("none of the {} planned task(s) ran", plan.tasks.len()));
        }
        results.duration_ms = started.elapsed().as_millis() as u64;
        // What was recorded is written whatever the run ended with (an interrupted recording
        // keeps the answers it paid for).
        let cassette = llm.cassette.as_ref().map(|c| (c.usage(), c.save()));
        let (usage, saved) = cassette.unzip();
        results.cassette = usage;
        finalize(&mut results, regression.baseline.as_ref());
        // What leaves the run (reports, the comment, the baseline) carries no secret.
        let mut results = crate::redact::data(results);
        // Settled before the final reports, so they say when the run is aborted.
        let mut error = fanout.error.take().map(Error::from);
        if let Some(Err(e)) = saved {
            error = error.or(Some(e.into()));
        }
        if update && error.is_none() {
            error = update_baseline(&results, regression.path.as_deref()).err();
        }
        if let Some(e) = &error {
            record_stop(&mut results, e);
        }
        fanout.cancel = None; // the run is over: nothing left to cancel
        fanout.event(RunEvent::RunFinished { results: Box::new(results.clone()) });
        if let Some(e) = fanout.error.take().filter(|_| error.is_none()) {
            let e = Error::from(e);
            record_stop(&mut results, &e);
            error = Some(e);
        }
        drop(fanout);
        (results, error, Some(events))
    }
}

/// `--pricing FILE`: the same shape as the suite's `pricing:` block.
fn read_prices(path: Option<&std::path::Path>) -> Result<BTreeMap<String, Price>, Error> {
    let Some(path) = path else { return Ok(BTreeMap::new()) };
    let text = crate::yaml::read(path)
        .map_err(|e| Error::Usage(format!("cannot read pricing file {}: {e}", path.display())))?;
    crate::yaml::from_str(&text).map_err(|e| Error::Usage(format!("invalid pricing file {}: {e}", path.display())))
}

/// Prices (built-in, then the suite's, then `--pricing`) and the response cache under the
/// suite's `.evalgate/cache/` (unless `--no-cache`).
fn llm_runtime(suite: &Suite, config: &RunConfig, price_file: &BTreeMap<String, Price>) -> LlmRuntime {
    let mut prices = PriceTable::default();
    prices.overrides.extend(suite.pricing.clone());
    prices.overrides.extend(price_file.clone());
    let cache = config.cache.then(|| ResponseCache { dir: suite.dir.join(".evalgate").join("cache") });
    LlmRuntime::new(prices, cache)
}
