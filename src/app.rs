//! The commands: load, preflight, plan, run, report, gate. `main` maps the outcome to an
//! exit code from `exit`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use clap::Parser;
use globset::{Glob, GlobSetBuilder};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::cli::{Cli, Command, RunArgs, SelectArgs};
use crate::exit;
use crate::gate::GateVerdict;
use crate::llm::cache::ResponseCache;
use crate::llm::pricing::{Price, PriceTable};
use crate::llm::runtime::LlmRuntime;
use crate::preflight::{PreflightError, preflight};
use crate::report::terminal::{TerminalReporter, Verbosity};
use crate::report::writer::{EventLog, OutputPaths, WriteError, write_atomic};
use crate::report::{events, junit, markdown};
use crate::results::regression::{Baseline, BaselineError};
use crate::results::{
    RESULTS_FORMAT, RegressionSection, Results, Shard, Status, SuiteInfo, TaskResult, Totals, finalize, summary,
};
use crate::run::events::RunEvent;
use crate::run::scheduler::{RunOptions, Services, schedule};
use crate::run::task::display_path;
use crate::suite::model::Suite;
use crate::suite::{LoadError, LoadOptions, did_you_mean, load_suite};
use std::collections::BTreeMap;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n\n"))]
    Preflight(Vec<PreflightError>),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error("internal error: {0}")]
    Internal(String),
}

impl AppError {
    pub fn exit_code(&self) -> i32 {
        match self {
            AppError::Usage(_) | AppError::Load(_) => exit::INVALID_INPUT,
            AppError::Preflight(_) => exit::PREFLIGHT_FAILED,
            AppError::Write(_) | AppError::Internal(_) => exit::ABORTED,
        }
    }
}

/// Runs the command line and returns the process exit code.
pub fn main(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { exit::INVALID_INPUT } else { exit::SUCCESS };
            let _ = e.print();
            return code;
        }
    };
    let outcome = match cli.command {
        Command::Schema => schema(),
        Command::List(select) => list(&select),
        Command::Check(select) => check(&select),
        Command::Run(args) => run(&args),
        Command::Compare(args) => crate::commands::compare::compare(&args),
        Command::Merge(args) => crate::commands::merge::merge(&args),
        Command::Report(args) => crate::commands::report::report(&args),
        Command::Convert(args) => crate::commands::convert::convert(&args),
        Command::Comment(args) => comment(&args),
        Command::Init => crate::commands::init::init(),
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{}", error_text(&e));
            e.exit_code()
        }
    }
}

fn error_text(e: &AppError) -> String {
    match e {
        AppError::Load(LoadError::Invalid { .. }) | AppError::Preflight(_) => e.to_string(),
        _ => format!("error: {e}"),
    }
}

fn comment(args: &crate::cli::CommentArgs) -> Result<i32, AppError> {
    let results = crate::commands::compare::read_results(&args.results)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| AppError::Internal(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(crate::github::comment::comment(&results, args.pr));
    // Commenting reports, it never gates: `report --gate` is for the verdict.
    Ok(exit::SUCCESS)
}

fn schema() -> Result<i32, AppError> {
    let schema = schemars::schema_for!(crate::suite::raw::RawSuite);
    let text = serde_json::to_string_pretty(&schema).map_err(|e| AppError::Internal(e.to_string()))?;
    println!("{text}");
    Ok(exit::SUCCESS)
}

/// A loaded suite and the indices of its tasks that survive the filters.
struct Planned {
    suite: Suite,
    plan: Vec<usize>,
}

fn load_all(select: &SelectArgs) -> Result<Vec<Planned>, AppError> {
    let files = if select.suites.is_empty() { vec![PathBuf::from("evalgate.yaml")] } else { select.suites.clone() };
    let options = LoadOptions { vars: select.vars.clone() };
    let mut globs = GlobSetBuilder::new();
    for pattern in &select.filter {
        let glob = Glob::new(pattern).map_err(|e| AppError::Usage(format!("invalid --filter `{pattern}`: {e}")))?;
        globs.add(glob);
    }
    let globs = globs.build().map_err(|e| AppError::Usage(e.to_string()))?;
    let mut planned = Vec::new();
    let mut diagnostics = Vec::new();
    for file in files {
        match load_suite(&file, &options) {
            Ok(mut suite) => {
                if let Some(name) = &select.agent {
                    let Some(agent) = suite.agents.get(name).cloned() else {
                        let names: Vec<&str> = suite.agents.keys().map(String::as_str).collect();
                        let help = did_you_mean(name, names.iter().copied()).map_or_else(
                            || format!("agents: {}", names.join(", ")),
                            |s| format!("did you mean `{s}`?"),
                        );
                        return Err(AppError::Usage(format!(
                            "--agent {name}: no such agent in {}; {help}",
                            file.display()
                        )));
                    };
                    for task in &mut suite.tasks {
                        task.agent = agent.clone();
                    }
                }
                let plan = (0..suite.tasks.len())
                    .filter(|&i| {
                        let task = &suite.tasks[i];
                        (select.filter.is_empty() || globs.is_match(&task.id))
                            && (select.tag.is_empty() || task.tags.iter().any(|t| select.tag.contains(t)))
                    })
                    .collect();
                planned.push(Planned { suite, plan });
            }
            Err(LoadError::Invalid { diagnostics: d }) => diagnostics.extend(d),
            Err(e) => return Err(e.into()),
        }
    }
    if !diagnostics.is_empty() {
        return Err(LoadError::Invalid { diagnostics }.into());
    }
    Ok(planned)
}

fn preflight_all(planned: &[Planned]) -> Result<(), AppError> {
    let failures: Vec<PreflightError> = planned.iter().filter_map(|p| preflight(&p.suite).err()).collect();
    if failures.is_empty() { Ok(()) } else { Err(AppError::Preflight(failures)) }
}

fn list(select: &SelectArgs) -> Result<i32, AppError> {
    let planned = load_all(select)?;
    for p in &planned {
        print_plan(p);
    }
    // The process ends now; freeing a large suite piece by piece would only cost time.
    std::mem::forget(planned);
    Ok(exit::SUCCESS)
}

fn print_plan(p: &Planned) {
    let file = display_path(&p.suite.file);
    for &i in &p.plan {
        let task = &p.suite.tasks[i];
        let tags = if task.tags.is_empty() { String::new() } else { format!(" [{}]", task.tags.join(", ")) };
        println!("{}/{}  {file}:{}{tags}", p.suite.id, task.id, task.position.line);
    }
}

fn check(select: &SelectArgs) -> Result<i32, AppError> {
    let planned = load_all(select)?;
    preflight_all(&planned)?;
    if planned.iter().any(|p| !p.suite.mcp_servers.is_empty()) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| AppError::Internal(format!("cannot start the async runtime: {e}")))?;
        runtime.block_on(async {
            for p in &planned {
                let servers =
                    crate::preflight::start_servers(&p.suite).await.map_err(|e| AppError::Preflight(vec![e]))?;
                servers.close().await;
            }
            Ok::<(), AppError>(())
        })?;
    }
    if !select.quiet {
        for p in &planned {
            eprintln!(
                "ok: {} ({}): {} task(s), {} agent(s); preflight passed",
                p.suite.id,
                display_path(&p.suite.file),
                p.suite.tasks.len(),
                p.suite.agents.len()
            );
        }
    }
    std::mem::forget(planned);
    Ok(exit::SUCCESS)
}

fn run(args: &RunArgs) -> Result<i32, AppError> {
    let mut planned = load_all(&args.select)?;
    if let Some((k, n)) = args.shard {
        for p in &mut planned {
            p.plan = p
                .plan
                .iter()
                .enumerate()
                .filter(|(i, _)| i % n as usize == (k - 1) as usize)
                .map(|(_, &t)| t)
                .collect();
        }
    }
    if planned.len() > 1 && (args.junit.is_some() || args.markdown.is_some() || args.json.is_some()) {
        return Err(AppError::Usage(
            "--junit, --markdown and --json name one file; with several suites, reports go to OUT/SUITE-ID/".into(),
        ));
    }
    let github = crate::github::actions::enabled(args.github, args.no_github);
    if github {
        // Masks first, before anything else can print a secret.
        let names: std::collections::BTreeSet<String> =
            planned.iter().flat_map(|p| crate::github::masks::suite_env_names(&p.suite)).collect();
        for line in crate::github::masks::mask_lines(names.iter().map(String::as_str)) {
            println!("{line}");
        }
    }
    let regressions = planned.iter().map(|p| plan_regression(&p.suite, args)).collect::<Result<Vec<_>, _>>()?;
    let price_file = read_prices(args.pricing.as_deref())?;
    preflight_all(&planned)?;
    if args.dry_run {
        for p in &planned {
            print_plan(p);
        }
        return Ok(exit::SUCCESS);
    }
    let paths: Vec<OutputPaths> = planned
        .iter()
        .map(|p| {
            if planned.len() > 1 {
                OutputPaths::new(&args.out.join(&p.suite.id), None, None, None)
            } else {
                OutputPaths::new(&args.out, args.junit.clone(), args.markdown.clone(), args.json.clone())
            }
        })
        .collect();
    for p in &paths {
        p.prepare()?;
    }

    let jobs = args.jobs.map_or_else(|| std::thread::available_parallelism().map_or(1, usize::from), |j| j as usize);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| AppError::Internal(format!("cannot start the async runtime: {e}")))?;
    let verbosity = match (args.select.quiet, args.select.verbose) {
        (true, _) => Verbosity::Quiet,
        (_, true) => Verbosity::Verbose,
        _ => Verbosity::Normal,
    };
    runtime.block_on(async {
        let cancel = CancellationToken::new();
        spawn_signal_handler(cancel.clone());
        let mut code = exit::SUCCESS;
        let mut step = github.then(|| crate::github::actions::GitHubStep::new(planned.len()));
        for ((p, paths), regression) in planned.into_iter().zip(&paths).zip(regressions) {
            let options = RunOptions { jobs, fail_fast: args.fail_fast, repeat: args.repeat };
            let shard = args.shard.map(|(index, count)| Shard { index, count });
            if shard.is_some() && p.plan.is_empty() {
                eprintln!(
                    "notice: shard {} of {} of {} has no task",
                    shard.map_or(0, |s| s.index),
                    shard.map_or(0, |s| s.count),
                    p.suite.id
                );
            }
            let baseline_path = regression.path.clone();
            let llm = Arc::new(llm_runtime(&p.suite, args, &price_file)?);
            let run = SuiteRun { planned: p, paths, regression, shard, llm, github: step.as_mut() };
            let results = run_suite(run, options, verbosity, cancel.clone()).await?;
            if args.comment {
                crate::github::comment::comment(&results, None).await;
            }
            if args.update_baseline && results.verdict.passed && !results.interrupted {
                if let Some(path) = &baseline_path {
                    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                        std::fs::create_dir_all(dir).map_err(|source| WriteError { path: dir.to_owned(), source })?;
                    }
                    write_atomic(path, erased::Json::to_pretty(&results).as_bytes())?;
                    eprintln!("baseline updated: {}", path.display());
                }
            } else if args.update_baseline {
                eprintln!("the run did not pass: the baseline was not updated");
            }
            if let Some(reason) = &results.preflight_failure {
                eprintln!("preflight failed for {}: {reason}\nno task ran", results.suite.file);
            }
            let suite_code = if results.preflight_failure.is_some() {
                exit::PREFLIGHT_FAILED
            } else if results.interrupted {
                exit::ABORTED
            } else if results.shard.is_some() {
                // A shard's tasks are part of a whole: `merge` then `report --gate` decides.
                eprintln!("gate deferred: merge the shards' results and run `evalgate report --gate`");
                exit::SUCCESS
            } else if results.verdict.passed {
                exit::SUCCESS
            } else {
                exit::GATE_FAILED
            };
            code = code.max(suite_code);
            if results.interrupted {
                break;
            }
        }
        if let Some(step) = &step {
            step.finish()?;
        }
        Ok(code)
    })
}

fn spawn_signal_handler(cancel: CancellationToken) {
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) else {
            return;
        };
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        eprintln!("evalgate: interrupted; cancelling running tasks, running their cleanup and writing results");
        cancel.cancel();
    });
}

/// `--pricing FILE`: the same shape as the suite's `pricing:` block.
fn read_prices(path: Option<&std::path::Path>) -> Result<BTreeMap<String, Price>, AppError> {
    let Some(path) = path else { return Ok(BTreeMap::new()) };
    let text = std::fs::read_to_string(path)
        .map_err(|e| AppError::Usage(format!("cannot read pricing file {}: {e}", path.display())))?;
    serde_yaml::from_str(&text).map_err(|e| AppError::Usage(format!("invalid pricing file {}: {e}", path.display())))
}

/// Prices (built-in, then the suite's, then `--pricing`) and the response cache under the
/// suite's `.evalgate/cache/` (unless `--no-cache`).
fn llm_runtime(suite: &Suite, args: &RunArgs, price_file: &BTreeMap<String, Price>) -> Result<LlmRuntime, AppError> {
    let mut prices = PriceTable::default();
    prices.overrides.extend(suite.pricing.clone());
    prices.overrides.extend(price_file.clone());
    let cache = (!args.no_cache).then(|| ResponseCache { dir: suite.dir.join(".evalgate").join("cache") });
    Ok(LlmRuntime::new(prices, cache))
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
fn plan_regression(suite: &Suite, args: &RunArgs) -> Result<RegressionPlan, AppError> {
    let config = suite.regression.as_ref();
    let path = args.baseline.clone().or_else(|| config.and_then(|c| c.baseline.clone()));
    if args.update_baseline && path.is_none() {
        return Err(AppError::Usage(format!(
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
            return Err(AppError::Usage(format!(
                "baseline {} is for suite `{}`, not `{}`",
                path.display(),
                b.suite_id,
                suite.id
            )));
        }
        Ok(b) => Some(b),
        Err(e @ BaselineError::Missing(_)) => {
            let note = if section.required { "the regression gate fails" } else { "the regression gate is skipped" };
            eprintln!("warning: {e}; {note}");
            section.warning = Some(e.to_string());
            None
        }
        Err(e) => return Err(AppError::Usage(e.to_string())),
    };
    Ok(RegressionPlan { section: Some(section), baseline, path: Some(path) })
}

/// One suite's run, as prepared before anything runs.
struct SuiteRun<'a> {
    planned: Planned,
    paths: &'a OutputPaths,
    regression: RegressionPlan,
    shard: Option<Shard>,
    llm: Arc<LlmRuntime>,
    /// Under GitHub Actions: the step this suite publishes to.
    github: Option<&'a mut crate::github::actions::GitHubStep>,
}

async fn run_suite(
    run: SuiteRun<'_>,
    options: RunOptions,
    verbosity: Verbosity,
    cancel: CancellationToken,
) -> Result<Results, AppError> {
    let SuiteRun { planned, paths, regression, shard, llm, github } = run;
    let servers =
        Arc::new(crate::preflight::start_servers(&planned.suite).await.map_err(|e| AppError::Preflight(vec![e]))?);
    let started = Instant::now();
    let started_at = now();
    let suite = Arc::new(planned.suite);
    let plan = planned.plan;
    let mut log = EventLog::create(&paths.events)?;
    log.append(&events::started(&suite.id, suite.version.as_deref(), plan.len(), &started_at))?;
    let mut terminal = TerminalReporter::new(verbosity);

    if github.is_some() {
        // Fold the per-task lines; the verdict printed after the group stays in view.
        println!("::group::evalgate: tasks of {}", suite.id);
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    let services = Services { llm, servers: servers.clone() };
    let scheduler = tokio::spawn(schedule(suite.clone(), plan.clone(), options, tx, cancel.clone(), services));
    let mut slots: Vec<Option<TaskResult>> = vec![None; plan.len()];
    let mut interrupted = false;
    while let Some(event) = rx.recv().await {
        terminal.handle(&event);
        match event {
            RunEvent::Started { .. } | RunEvent::TaskStarted { .. } => {}
            RunEvent::TaskFinished { index, result } => {
                if result.status != Status::Skipped {
                    log.append(&events::scored(&suite.id, &result, &now()))?;
                }
                slots[index] = Some(*result);
            }
            RunEvent::Finished { interrupted: i } => interrupted = i,
        }
    }
    if github.is_some() {
        println!("::endgroup::");
    }
    let outcome = scheduler.await.map_err(|e| AppError::Internal(format!("the scheduler stopped: {e}")));
    servers.close().await;
    let outcome = outcome?;

    let tasks: Vec<TaskResult> = slots
        .into_iter()
        .zip(&plan)
        .map(|(slot, &i)| {
            slot.unwrap_or_else(|| {
                let mut lost =
                    crate::run::task::skipped(&suite, &suite.tasks[i], "internal error: the task's result was lost");
                lost.status = Status::Error;
                lost
            })
        })
        .collect();
    let mut results = Results {
        format: RESULTS_FORMAT.into(),
        evalgate_version: env!("CARGO_PKG_VERSION").into(),
        run_id: run_id(),
        thresholds: suite.thresholds.clone(),
        regression: regression.section,
        shard,
        suite: SuiteInfo {
            id: suite.id.clone(),
            version: suite.version.clone(),
            description: suite.description.clone(),
            file: display_path(&suite.file),
            modes: suite.modes.clone(),
        },
        started_at,
        duration_ms: started.elapsed().as_millis() as u64,
        interrupted,
        preflight_failure: outcome.preflight_failure,
        hooks: outcome.hooks,
        mcp_servers: servers.by_name.iter().map(|(n, s)| (n.clone(), s.info.clone())).collect(),
        tasks,
        totals: Totals::default(),
        scorecard: None,
        verdict: GateVerdict { passed: false, checks: Vec::new() },
    };
    finalize(&mut results, regression.baseline.as_ref());
    write_reports(&results, paths)?;
    if let Some(step) = github {
        step.after_suite(&results, paths)?;
    }
    log.append(&events::completed(&results, &now()))?;
    terminal.summary(&results);
    Ok(results)
}

pub fn write_reports(results: &Results, paths: &OutputPaths) -> Result<(), AppError> {
    let json = |v: &dyn erased::Json| v.to_pretty();
    write_atomic(&paths.results, json(results).as_bytes())?;
    write_atomic(&paths.summary, json(&summary::summary(results)).as_bytes())?;
    write_atomic(&paths.junit, junit::render(results).as_bytes())?;
    write_atomic(&paths.markdown, markdown::render(results).as_bytes())?;
    Ok(())
}

mod erased {
    /// Pretty JSON of any serializable value (a results file must never fail to serialize).
    pub trait Json {
        fn to_pretty(&self) -> String;
    }
    impl<T: serde::Serialize> Json for T {
        fn to_pretty(&self) -> String {
            serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"cannot serialize: {e}\"}}"))
                + "\n"
        }
    }
}

/// `$GITHUB_RUN_ID` (with the attempt) when set, else the start time.
fn run_id() -> String {
    match (std::env::var("GITHUB_RUN_ID"), std::env::var("GITHUB_RUN_ATTEMPT")) {
        (Ok(id), Ok(attempt)) if !id.is_empty() => format!("{id}.{attempt}"),
        (Ok(id), _) if !id.is_empty() => id,
        _ => format!("local-{}", humantime::format_rfc3339_seconds(SystemTime::now())),
    }
}

fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}
