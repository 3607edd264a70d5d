//! `evalgate run`: claim the out directory, load and plan, preflight, run each suite with
//! its reporters, gate, publish. Every way the run can end leaves reports that say how.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use super::suites::{Planned, install_redactor, load_and_plan, preflight_all, print_plan};
use crate::cli::RunArgs;
use crate::error::{Error, runtime};
use crate::gate::{finalize, regate};
use crate::llm::cache::ResponseCache;
use crate::llm::pricing::{Price, PriceTable};
use crate::llm::runtime::LlmRuntime;
use crate::plan::Selection;
use crate::report::pretty_json;
use crate::report::reporter::{EventLogReporter, Fanout, FileReports, now};
use crate::report::terminal::{TerminalReporter, Verbosity};
use crate::report::writer::{ClaimedDir, OutputPaths, WriteError, write_atomic};
use crate::results::regression::{Baseline, BaselineError};
use crate::results::{GateVerdict, RESULTS_FORMAT, RegressionSection, Results, RunOutcome, SuiteInfo, Totals};
use crate::run::dispatcher::{Dispatched, Dispatcher, EventSink, Services};
use crate::run::events::RunEvent;
use crate::run::signal::Stop;
use crate::run::task::display_path;
use crate::suite::model::Suite;

pub fn run(args: &RunArgs) -> Result<i32, Error> {
    let selection = Selection::for_run(&args.select, args.shard, args.repeat, args.fail_fast);
    if args.select.suites.len() > 1 && (args.junit.is_some() || args.markdown.is_some() || args.json.is_some()) {
        return Err(Error::Usage(
            "--junit, --markdown and --json name one file; with several suites, reports go to OUT/SUITE-ID/".into(),
        ));
    }
    if args.dry_run {
        let planned = load_and_plan(&args.select, &selection)?;
        install_redactor(&planned);
        preflight_all(&planned)?;
        planned.iter().for_each(print_plan);
        return Ok(crate::exit::SUCCESS);
    }
    // Claimed first: whatever happens next, the previous run's reports are gone and this
    // run's say how it ended.
    let claimed = ClaimedDir::claim(&args.out)?;
    let top = paths_for(args, &args.out, true);
    match prepare(args, &selection) {
        Ok(prepared) => execute(args, prepared, &claimed),
        Err(e) => {
            let outcome = match &e {
                Error::Usage(_) | Error::Load(_) => RunOutcome::Invalid { reason: e.to_string() },
                Error::Preflight(_) => RunOutcome::PreflightFailed { reason: e.to_string() },
                _ => return Err(e),
            };
            claimed.record(&[&top])?;
            top.prepare()?;
            top.write_reports(&stopped_early(args, outcome))?;
            Err(e)
        }
    }
}

/// Everything decided before the first task: plans, baselines, prices.
struct Prepared {
    planned: Vec<Planned>,
    regressions: Vec<RegressionPlan>,
    prices: BTreeMap<String, Price>,
}

fn prepare(args: &RunArgs, selection: &Selection) -> Result<Prepared, Error> {
    let planned = load_and_plan(&args.select, selection)?;
    // The redactor and the runner's masks first, before anything can print a secret.
    let secrets = install_redactor(&planned);
    if crate::github::actions::enabled(args.github, args.no_github) {
        crate::github::masks::add_masks(&secrets);
    }
    let regressions = planned.iter().map(|p| plan_regression(&p.suite, args)).collect::<Result<Vec<_>, _>>()?;
    let prices = read_prices(args.pricing.as_deref())?;
    preflight_all(&planned)?;
    Ok(Prepared { planned, regressions, prices })
}

fn paths_for(args: &RunArgs, dir: &std::path::Path, named_files: bool) -> OutputPaths {
    let named = |p: &Option<PathBuf>| if named_files { p.clone() } else { None };
    OutputPaths::new(
        dir,
        &[
            ("results.json", named(&args.json)),
            ("junit.xml", named(&args.junit)),
            ("summary.md", named(&args.markdown)),
        ],
    )
}

/// The results of a run that stopped before any suite ran (exit 2 or 3).
fn stopped_early(args: &RunArgs, outcome: RunOutcome) -> Results {
    let file = args.select.suites.first().map_or_else(|| "evalgate.yaml".into(), |f| display_path(f));
    let mut results =
        skeleton(SuiteInfo { id: "evalgate".into(), version: None, description: None, file, modes: vec![] });
    match outcome {
        RunOutcome::Invalid { reason } => results.invalid = Some(reason),
        RunOutcome::PreflightFailed { reason } => results.preflight_failure = Some(reason),
        _ => {}
    }
    regate(&mut results);
    results
}

fn skeleton(suite: SuiteInfo) -> Results {
    Results {
        format: RESULTS_FORMAT.into(),
        evalgate_version: env!("CARGO_PKG_VERSION").into(),
        run_id: run_id(),
        thresholds: None,
        regression: None,
        shard: None,
        suite,
        started_at: now(),
        duration_ms: 0,
        interrupted: false,
        preflight_failure: None,
        invalid: None,
        incomplete: Vec::new(),
        hooks: Vec::new(),
        mcp_servers: BTreeMap::new(),
        tasks: Vec::new(),
        totals: Totals::default(),
        scorecard: None,
        verdict: GateVerdict::new(RunOutcome::Incomplete { reason: "not gated yet".into() }, Vec::new()),
    }
}

fn execute(args: &RunArgs, prepared: Prepared, claimed: &ClaimedDir) -> Result<i32, Error> {
    let Prepared { planned, regressions, prices } = prepared;
    let several = planned.len() > 1;
    let paths: Vec<OutputPaths> = planned
        .iter()
        .map(|p| {
            if several { paths_for(args, &args.out.join(&p.suite.id), false) } else { paths_for(args, &args.out, true) }
        })
        .collect();
    claimed.record(&paths.iter().collect::<Vec<_>>())?;
    for p in &paths {
        p.prepare()?;
    }
    let jobs = args.jobs.map_or_else(|| std::thread::available_parallelism().map_or(1, usize::from), |j| j as usize);
    let verbosity = match (args.select.quiet, args.select.verbose) {
        (true, _) => Verbosity::Quiet,
        (_, true) => Verbosity::Verbose,
        _ => Verbosity::Normal,
    };
    let github = crate::github::actions::enabled(args.github, args.no_github);
    let runtime = runtime()?;
    let stop = Stop::default();
    runtime.block_on(async {
        stop.listen();
        let mut code = crate::exit::SUCCESS;
        let mut terminal = TerminalReporter::new(verbosity);
        let mut step = github.then(|| crate::github::actions::GitHubStep::new(planned.len()));
        for ((p, paths), regression) in planned.into_iter().zip(&paths).zip(regressions) {
            if stop.cancel.is_cancelled() {
                break;
            }
            let llm = Arc::new(llm_runtime(&p.suite, args, &prices));
            let baseline_path = regression.path.clone();
            let suite_run = SuiteRun { planned: p, paths, regression, llm, stop: stop.clone(), jobs };
            let results = suite_run.run(&mut terminal, step.as_mut()).await?;
            if args.comment {
                crate::github::comment::comment(&results, None).await;
            }
            update_baseline(args, &results, baseline_path.as_deref())?;
            code = code.max(results.verdict.outcome.exit_code());
        }
        if let Some(step) = &step {
            step.finish()?;
        }
        Ok(code)
    })
}

fn update_baseline(args: &RunArgs, results: &Results, path: Option<&std::path::Path>) -> Result<(), Error> {
    if !args.update_baseline {
        return Ok(());
    }
    let Some(path) = path.filter(|_| results.verdict.passed) else {
        crate::errln!("the run did not pass: the baseline was not updated");
        return Ok(());
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| WriteError { path: dir.to_owned(), source })?;
    }
    write_atomic(path, pretty_json(results).as_bytes())?;
    crate::errln!("baseline updated: {}", path.display());
    Ok(())
}

/// One suite's run, as prepared before anything runs.
struct SuiteRun<'a> {
    planned: Planned,
    paths: &'a OutputPaths,
    regression: RegressionPlan,
    llm: Arc<LlmRuntime>,
    stop: Stop,
    jobs: usize,
}

impl SuiteRun<'_> {
    async fn run(
        self,
        terminal: &mut TerminalReporter,
        github: Option<&mut crate::github::actions::GitHubStep>,
    ) -> Result<Results, Error> {
        let SuiteRun { planned, paths, regression, llm, stop, jobs } = self;
        let Planned { suite, plan } = planned;
        let started = Instant::now();
        let suite = Arc::new(suite);
        let mut results = skeleton(SuiteInfo {
            id: suite.id.clone(),
            version: suite.version.clone(),
            description: suite.description.clone(),
            file: display_path(&suite.file),
            modes: suite.modes.iter().map(ToString::to_string).collect(),
        });
        results.thresholds = suite.thresholds.clone();
        results.regression = regression.section;
        results.shard = plan.shard;

        let mut fanout = Fanout::default();
        fanout.reporters.push(Box::new(&mut *terminal));
        fanout.reporters.push(Box::new(EventLogReporter::create(paths, &suite.id, suite.version.as_deref())?));
        fanout.reporters.push(Box::new(FileReports::new(paths, results.clone(), plan.tasks.len())));
        if let Some(step) = github {
            fanout.reporters.push(Box::new(crate::github::actions::GitHubReporter { step, paths }));
        }

        let servers = tokio::select! {
            servers = crate::preflight::start_servers(&suite) => Some(servers),
            () = stop.cancel.cancelled() => None,
        };
        let dispatched = match servers {
            Some(Ok(servers)) => {
                let servers = Arc::new(servers);
                results.mcp_servers = servers.by_name.iter().map(|(n, s)| (n.clone(), s.info.clone())).collect();
                let services = Services { llm, servers: servers.clone() };
                let dispatched =
                    Dispatcher::new(suite.clone(), &plan, jobs, stop.clone(), &mut fanout).run(services).await;
                servers.close().await;
                dispatched
            }
            // The terminal's summary shows the reason, under PREFLIGHT FAILED.
            Some(Err(e)) => Dispatched { preflight_failure: Some(e.to_string()), ..Dispatched::default() },
            None => Dispatched { interrupted: true, ..Dispatched::default() },
        };
        results.tasks = dispatched.tasks;
        results.hooks = dispatched.hooks;
        results.interrupted = dispatched.interrupted || stop.cancel.is_cancelled();
        results.preflight_failure = dispatched.preflight_failure;
        if results.tasks.is_empty() && !plan.tasks.is_empty() && results.preflight_failure.is_none() {
            results.incomplete.push(format!("none of the {} planned task(s) ran", plan.tasks.len()));
        }
        results.duration_ms = started.elapsed().as_millis() as u64;
        finalize(&mut results, regression.baseline.as_ref());
        // What leaves the run (reports, the comment, the baseline) carries no secret.
        let results = crate::redact::data(results);
        fanout.event(RunEvent::RunFinished { results: Box::new(results.clone()) });
        if let Some(e) = fanout.error {
            return Err(e.into());
        }
        Ok(results)
    }
}

/// `--pricing FILE`: the same shape as the suite's `pricing:` block.
fn read_prices(path: Option<&std::path::Path>) -> Result<BTreeMap<String, Price>, Error> {
    let Some(path) = path else { return Ok(BTreeMap::new()) };
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Usage(format!("cannot read pricing file {}: {e}", path.display())))?;
    crate::yaml::from_str(&text).map_err(|e| Error::Usage(format!("invalid pricing file {}: {e}", path.display())))
}

/// Prices (built-in, then the suite's, then `--pricing`) and the response cache under the
/// suite's `.evalgate/cache/` (unless `--no-cache`).
fn llm_runtime(suite: &Suite, args: &RunArgs, price_file: &BTreeMap<String, Price>) -> LlmRuntime {
    let mut prices = PriceTable::default();
    prices.overrides.extend(suite.pricing.clone());
    prices.overrides.extend(price_file.clone());
    let cache = (!args.no_cache).then(|| ResponseCache { dir: suite.dir.join(".evalgate").join("cache") });
    LlmRuntime::new(prices, cache)
}

/// The baseline side of a run: the regression section to record and the baseline itself.
struct RegressionPlan {
    section: Option<RegressionSection>,
    baseline: Option<Baseline>,
    /// Where `--update-baseline` writes.
    path: Option<PathBuf>,
}

/// Resolves the baseline (`--baseline` over `regression.baseline`) and loads it before
/// anything runs: a missing file is a warning (a failed check with `required: true`); an
/// unreadable one, or one for another suite, is invalid input.
fn plan_regression(suite: &Suite, args: &RunArgs) -> Result<RegressionPlan, Error> {
    let config = suite.regression.as_ref();
    let path = args.baseline.clone().or_else(|| config.and_then(|c| c.baseline.clone()));
    if args.update_baseline && path.is_none() {
        return Err(Error::Usage(format!(
            "--update-baseline needs a baseline path: --baseline FILE or `regression.baseline` in {}",
            suite.file.display()
        )));
    }
    let Some(path) = path else {
        return Ok(RegressionPlan { section: None, baseline: None, path: None });
    };
    let mut section = RegressionSection {
        baseline: Some(args.baseline.as_ref().map_or_else(
            || config.and_then(|c| c.baseline_written.clone()).unwrap_or_default(),
            |p| p.display().to_string(),
        )),
        required: config.is_some_and(|c| c.required),
        budget: config.map(|c| c.budget).unwrap_or_default(),
        comparison: None,
        warning: None,
    };
    let baseline = match Baseline::load(&path) {
        Ok(b) if !b.is_for_suite(&suite.id) => {
            return Err(Error::Usage(format!(
                "baseline {} is for suite `{}`, not `{}`",
                path.display(),
                b.suite_id,
                suite.id
            )));
        }
        Ok(b) => Some(b),
        Err(e @ BaselineError::Missing(_)) => {
            let note = if section.required { "the regression gate fails" } else { "the regression gate is skipped" };
            crate::errln!("warning: {e}; {note}");
            section.warning = Some(e.to_string());
            None
        }
        Err(e) => return Err(Error::Usage(e.to_string())),
    };
    Ok(RegressionPlan { section: Some(section), baseline, path: Some(path) })
}

/// `$GITHUB_RUN_ID` (with the attempt) when set, else the start time.
fn run_id() -> String {
    match (std::env::var("GITHUB_RUN_ID"), std::env::var("GITHUB_RUN_ATTEMPT")) {
        (Ok(id), Ok(attempt)) if !id.is_empty() => format!("{id}.{attempt}"),
        (Ok(id), _) if !id.is_empty() => id,
        _ => format!("local-{}", humantime::format_rfc3339_seconds(SystemTime::now())),
    }
}
