//! One task, start to end: setup → agent → graders → cleanup (always), retried on
//! infrastructure errors. Failures are data in the `TaskResult`, never `Err`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::files::display_path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::excerpt;
use crate::grade::GradeInput;
use crate::llm::runtime::LlmRuntime;
use crate::process::reaper;
use crate::results::{GraderResult, Phase, Status, TaskResult, TrialResult};
use crate::step::{run_cleanup, run_sequence};
use crate::suite::model::{Agent, Suite, Task};
use crate::sut::{AcpSut, AgentRun, CommandSut, HttpSut, LlmSut, McpCallSut, SystemUnderTest};
use crate::template::Bindings;
use crate::trace::ToolCall;
use crate::workspace::{FileChanges, TrialWorkspace};

/// Characters of the agent's output kept in `results.json`.
pub const OUTPUT_EXCERPT: usize = 16 * 1024;

/// What every task of a run shares.
pub struct RunContext {
    pub suite: Arc<Suite>,
    pub vars: Arc<BTreeMap<String, String>>,
    /// Outputs captured by `hooks.before_all`.
    pub hook_outputs: BTreeMap<String, BTreeMap<String, String>>,
    /// For prompt and trace files; lives as long as the run.
    pub scratch_dir: PathBuf,
    /// Model clients, prices and the response cache.
    pub llm: Arc<LlmRuntime>,
    /// The run's MCP servers.
    pub servers: Arc<crate::mcp::servers::Servers>,
    /// The run's extensions.
    pub extensions: Arc<crate::extension::Running>,
    /// `--agent`: replaces the agent of every task that has one.
    pub agent_override: Option<Arc<Agent>>,
}

impl RunContext {
    /// The agent `task` runs with: `--agent`'s, unless the task calls a tool itself.
    pub fn agent_for<'a>(&'a self, task: &'a Task) -> &'a Arc<Agent> {
        agent_for(self.agent_override.as_ref(), task)
    }
}

/// The agent `task` runs with: `agent_override`'s (`--agent`), unless the task calls a
/// tool itself.
pub fn agent_for<'a>(agent_override: Option<&'a Arc<Agent>>, task: &'a Task) -> &'a Arc<Agent> {
    match (agent_override, &*task.agent) {
        (Some(agent), Agent::Command(_) | Agent::Acp(_) | Agent::Llm(_) | Agent::Http(_)) => agent,
        _ => &task.agent,
    }
}

/// A trial that never ran (interrupt, fail-fast).
pub fn skipped_trial(reason: &str) -> TrialResult {
    let mut trial = TrialResult::empty();
    trial.status = Status::Skipped;
    trial.reason = Some(reason.to_owned());
    trial
}

/// The task's result from its trials: score = mean; passed when at least `min_pass`
/// trials passed; an error when trials that errored or did not run could have changed that.
/// `planned`: the trials planned (at most, when adaptive). `min_pass` counts out of those; a
/// task that ran fewer (adaptive trials settled early) needs the same rate of passes.
/// `design`: the adaptive design the trials followed, recorded so that a comparison can
/// read the task's pass rate without the stopping rule's bias.
pub fn aggregate(
    suite: &Suite,
    task: &Task,
    trials: Vec<TrialResult>,
    planned: u32,
    design: Option<crate::stats::Design>,
    attempts: u32,
    duration_ms: u64,
) -> TaskResult {
    let n = trials.len().max(1);
    let passed = trials.iter().filter(|t| t.status == Status::Passed).count();
    let undecided = trials.iter().filter(|t| matches!(t.status, Status::Error | Status::Skipped)).count();
    let planned = (planned as usize).max(n);
    let min_pass = task.min_pass.map_or(n, |m| (m.get() as usize * n).div_ceil(planned).clamp(1, n));
    let score = crate::results::TaskScore::of(&trials, design);
    let status = if passed >= min_pass {
        Status::Passed
    } else if passed + undecided >= min_pass {
        Status::Error
    } else {
        Status::Failed
    };
    let reason = match (status, trials.len()) {
        (Status::Passed, _) => None,
        (_, 1) => trials[0].reason.clone(),
        _ => {
            let (i, first) =
                trials.iter().enumerate().find(|(_, t)| t.status != Status::Passed).expect("a trial did not pass");
            Some(format!(
                "{passed}/{} trials passed, {min_pass} required; trial {}: {}",
                trials.len(),
                i + 1,
                first.reason.as_deref().unwrap_or(first.status.label())
            ))
        }
    };
    let repeated = trials.len() > 1;
    TaskResult {
        status,
        score,
        reason,
        duration_ms,
        attempts,
        repeat: trials.len() as u32,
        trials_planned: (trials.len() < planned).then_some(planned as u32),
        adaptive: design,
        trials_passed: design.map(|_| passed as u32),
        min_pass: min_pass as u32,
        flaky: passed > 0 && trials.iter().any(|t| t.status == Status::Failed || t.status == Status::Error),
        // k = every trial: the unbiased estimators then reduce to "some" and "every" trial.
        pass_at_k: repeated.then(|| crate::stats::pass_at_k(trials.len() as u64, passed as u64, trials.len() as u64)),
        pass_hat_k: repeated.then(|| crate::stats::pass_hat_k(trials.len() as u64, passed as u64, trials.len() as u64)),
        trials,
        ..skipped(suite, task, "")
    }
}

/// A task that never ran (filtered out after planning, fail-fast, interrupt).
pub fn skipped(suite: &Suite, task: &Task, reason: &str) -> TaskResult {
    TaskResult {
        id: task.id.clone(),
        description: task.description.clone(),
        tags: task.tags.clone(),
        category: task.category,
        severity: task.category.map(|_| task.severity),
        file: task_file(suite, task),
        line: task.origin.as_ref().map_or(task.position.line, |(_, line)| *line),
        agent: task.agent.name().to_owned(),
        protocol: task.era.clone(),
        variant: task.arm.clone(),
        definition: Some(suite.task_definition(task, task.agent.name())),
        status: Status::Skipped,
        score: crate::results::TaskScore::NONE,
        weight: task.weight,
        trials_passed: None,
        reason: Some(reason.to_owned()),
        not_run: None,
        duration_ms: 0,
        attempts: 0,
        repeat: task.repeat.get(),
        min_pass: task.min_pass.unwrap_or(task.repeat).get(),
        trials_planned: None,
        adaptive: None,
        flaky: false,
        pass_at_k: None,
        pass_hat_k: None,
        golden: task.golden,
        fingerprint: None,
        carried: None,
        trials: Vec::new(),
    }
}

/// Where the task is defined: the suite file, or the file it was imported from.
fn task_file(suite: &Suite, task: &Task) -> String {
    match &task.origin {
        Some((file, _)) => display_path(&suite.dir.join(file)),
        None => display_path(&suite.file),
    }
}

/// One attempt of a trial: setup, agent, graders, then cleanup (always). The dispatcher
/// decides whether an attempt that ended in an infrastructure error is run again.
pub async fn run_attempt(
    ctx: &RunContext,
    task: &Task,
    trial: u32,
    earlier: &[ToolCall],
    cancel: &CancellationToken,
) -> TrialResult {
    let started_at = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
    let clock = std::time::Instant::now();
    // The processes of the attempt are the trial's: what they leave behind is killed at its end.
    let (mut trial, notes) = reaper::in_trial(attempt(ctx, task, trial, earlier, cancel)).await;
    trial.notes = notes;
    trial.started_at = Some(started_at);
    trial.duration_ms = Some(clock.elapsed().as_millis() as u64);
    trial
}

async fn attempt(
    ctx: &RunContext,
    task: &Task,
    trial_index: u32,
    earlier: &[ToolCall],
    cancel: &CancellationToken,
) -> TrialResult {
    let mut bindings = Bindings::new(ctx.vars.clone(), &task.id);
    // A task of a protocol era talks to its server at that era.
    let servers = ctx.servers.at(task.era.as_ref(), task.arm.as_deref());
    bindings.servers = Some(crate::template::ServersRef(servers.clone()));
    bindings.extensions = Some(ctx.extensions.clone());
    bindings.step_outputs.clone_from(&ctx.hook_outputs);
    let mut trial = TrialResult::empty();
    let workspace = match &task.workspace {
        Some(spec) => match TrialWorkspace::prepare(spec, &ctx.scratch_dir, &task.id, task.timeout).await {
            Ok(workspace) => Some(workspace),
            Err(reason) => {
                trial.reason = Some(reason);
                return trial;
            }
        },
        None => None,
    };

    let interrupted = {
        let body = run_body(ctx, &servers, task, (trial_index, earlier, workspace.as_ref()), &mut bindings, &mut trial);
        tokio::select! {
            () = body => false,
            () = cancel.cancelled() => true,
        }
    };
    if interrupted {
        trial.status = Status::Error;
        trial.score = 0.0;
        trial.reason = Some("interrupted".into());
    }

    // Cleanup always runs, every step, in reverse order; failures are logged, not gated.
    let cleanup = run_cleanup(&task.cleanup, &ctx.suite.dir, Phase::Cleanup, &mut bindings).await;
    trial.steps.extend(cleanup);
    if let Some(workspace) = workspace {
        let (record, violation) = workspace.finish(trial.status != Status::Passed).await;
        // A check after the agent that found something turns any verdict into an error.
        if let Some(reason) = violation {
            trial.status = Status::Error;
            trial.score = 0.0;
            trial.reason = Some(reason);
        }
        trial.workspace = Some(record);
    }
    trial
}

/// Setup, agent and graders; writes into `trial` as it goes so an interrupt keeps what happened.
async fn run_body(
    ctx: &RunContext,
    servers: &crate::mcp::servers::Servers,
    task: &Task,
    (trial_index, earlier, workspace): (u32, &[ToolCall], Option<&TrialWorkspace>),
    bindings: &mut Bindings,
    trial: &mut TrialResult,
) {
    let suite = &ctx.suite;
    // A task of a protocol version its server did not start at cannot run: not its setup,
    // nor its agent (a model agent would otherwise be offered none of the server's tools).
    let down = task.era.as_ref().and_then(|e| Some((e, servers.by_name.get(&e.server)?.down.as_ref()?)));
    if let Some((era, why)) = down {
        trial.reason = Some(format!("MCP server `{}` did not start at protocol {}: {why}", era.server, era.version));
        return;
    }
    if let Err(reason) = run_sequence(&task.setup, &suite.dir, Phase::Setup, bindings, &mut trial.steps).await {
        trial.reason = Some(reason);
        return;
    }
    if let Some(conversation) = &task.conversation {
        let at = (trial_index, workspace);
        super::conversation_run::run_conversation(ctx, servers, task, conversation, at, bindings, trial).await;
        return;
    }
    bindings.prompt = match bindings.render_with(|lookup| task.prompt.render(lookup)) {
        Ok(prompt) => prompt,
        Err(missing) => {
            trial.reason = Some(format!("the prompt uses {missing}"));
            return;
        }
    };
    trial.prompt = Some(excerpt::first(&bindings.prompt, OUTPUT_EXCERPT));

    let started_at = std::time::SystemTime::now();
    let outcome = match &**ctx.agent_for(task) {
        Agent::Command(agent) => {
            let scratch_dir = workspace.map_or(&ctx.scratch_dir, |w| &w.io);
            CommandSut {
                agent,
                scratch_dir,
                servers,
                cassette: ctx.llm.cassette.as_ref(),
                workspace,
                conversation: None,
            }
            .run(bindings, task.timeout)
            .await
        }
        Agent::Acp(agent) => {
            AcpSut { agent, servers, cassette: ctx.llm.cassette.as_ref(), workspace }.run(bindings, task.timeout).await
        }
        Agent::Llm(agent) => {
            LlmSut { agent, task, trial: trial_index, llm: &ctx.llm, servers }.run(bindings, task.timeout).await
        }
        Agent::Http(agent) => HttpSut { agent, cassette: ctx.llm.cassette.as_ref() }.run(bindings, task.timeout).await,
        Agent::Call(call) => McpCallSut { call, servers }.run(bindings, task.timeout).await,
    };
    // The graders see the workspace as the agent left it, its processes gone.
    if let Some(workspace) = workspace {
        workspace.after_agent().await;
    }
    let run = match outcome {
        Ok(run) => run,
        Err(e) => {
            trial.reason = Some(e.reason);
            if let Some(run) = &e.run {
                trial.output = (!run.output.is_empty()).then(|| excerpt::first(&run.output, OUTPUT_EXCERPT));
                trial.stderr = excerpt::last(&run.stderr, STDERR_TAIL);
                trial.exit_code = run.exit_code;
                trial.latency_ms = Some(run.latency.as_millis() as u64);
                trial.usage = run.trace.usage.clone();
                trial.tool_calls = run.trace.calls().to_vec();
                trial.session = run.trace.session.clone();
                failed_by_leak([task.graders.as_slice()], bindings, run, trial);
            }
            return;
        }
    };
    bindings.agent_output = Some(run.output.clone());
    trial.output = Some(excerpt::first(&run.output, OUTPUT_EXCERPT));
    trial.output_truncated = run.output_truncated || run.output.chars().count() > OUTPUT_EXCERPT;
    trial.exit_code = run.exit_code;
    trial.latency_ms = Some(run.latency.as_millis() as u64);
    trial.model = run.trace.model.clone();
    trial.usage = run.trace.usage.clone();
    trial.tool_calls = run.trace.calls().to_vec();
    trial.session = run.trace.session.clone();
    trial.cached = run.cached;
    trial.replayed = run.replayed;

    let changes = workspace.map(TrialWorkspace::file_changes);
    let input = grade_input(ctx, task, &run, bindings, (workspace, changes.as_ref()), started_at);
    // A check that a call can only fail judges the calls of the trial's earlier attempts
    // too: a destructive call made before a crash happened, whatever the retry did.
    let every_attempt = (!earlier.is_empty()).then(|| {
        let mut trace = run.trace.clone();
        if let Some(calls) = trace.tool_calls.as_mut() {
            calls.splice(0..0, earlier.iter().cloned());
        } else {
            trace.tool_calls = Some(earlier.to_vec());
        }
        trace
    });
    let input_every_attempt = every_attempt.as_ref().map(|trace| GradeInput { trace, ..input });
    let graded =
        run_graders(&task.graders, &input, input_every_attempt.as_ref(), run.tool_error.is_some(), trial).await;
    trial.graders.extend(graded);
    let (status, score, reason) = score_task(&trial.graders, task.threshold);
    trial.status = status;
    trial.score = score;
    trial.reason = reason;
    // A tool result that broke the tool's declared outputSchema fails the trial too.
    let violation = run.trace.tool_calls.iter().flatten().find_map(|c| c.violation.as_ref());
    if let (Some(failure), Status::Passed | Status::Failed) = (run.failure.as_ref().or(violation), status) {
        // Ending at `max_turns` is no answer at all: it scores 0 whatever graders found.
        trial.status = Status::Failed;
        trial.score = 0.0;
        trial.reason = Some(failure.clone());
    }
}

/// Runs `graders` on `input` (those that judge every attempt on `every_attempt`, when
/// given), adding what their judges cost to `trial`; `tool_error`: the tool returned an
/// error, which every reason then says.
pub(super) async fn run_graders(
    graders: &[crate::grade::Grader],
    input: &GradeInput<'_>,
    every_attempt: Option<&GradeInput<'_>>,
    tool_error: bool,
    trial: &mut TrialResult,
) -> Vec<GraderResult> {
    let mut results = Vec::with_capacity(graders.len());
    for grader in graders {
        let advisory = grader.advisory(input.judge).is_some();
        let input = match every_attempt {
            Some(every) if grader.judges_every_attempt() => every,
            _ => input,
        };
        let (mut outcome, judge_calls) = grader.grade(input).await;
        for call in &judge_calls {
            match call.cost_usd {
                Some(c) => *trial.judge_cost_usd.get_or_insert(0.0) += c,
                None => trial.judge_cost_unknown = true,
            }
        }
        // Whatever a grader looked at, its reason says the tool returned an error.
        let said = |reason: &mut String| {
            if tool_error && !reason.contains("the tool returned an error") {
                reason.push_str(" (the tool returned an error)");
            }
        };
        match &mut outcome {
            Ok(g) => said(&mut g.reason),
            Err(reason) => said(reason),
        }
        results.push(match outcome {
            Ok(g) => GraderResult {
                name: grader.name.clone(),
                kind: grader.kind_name.to_owned(),
                status: if g.passed { Status::Passed } else { Status::Failed },
                score: g.score,
                weight: grader.weight,
                required: grader.required,
                reason: g.reason,
                evidence: g.evidence,
                cached: !judge_calls.is_empty() && judge_calls.iter().all(|c| c.cached),
                advisory,
            },
            Err(reason) => GraderResult {
                name: grader.name.clone(),
                kind: grader.kind_name.to_owned(),
                status: Status::Error,
                score: 0.0,
                weight: grader.weight,
                required: grader.required,
                reason,
                evidence: None,
                cached: false,
                advisory,
            },
        });
    }
    results
}

/// An attempt whose agent errored is not graded, but a canary it leaked before that fails
/// it: a fail, not an error, so it is not retried away and the task fails.
/// `graders`: the lists whose canaries count (a conversation's: the task's and each turn's).
pub(super) fn failed_by_leak<'g>(
    graders: impl IntoIterator<Item = &'g [crate::grade::Grader]>,
    bindings: &Bindings,
    run: &crate::sut::AgentRun,
    trial: &mut TrialResult,
) {
    let leaked: Vec<&crate::grade::Grader> =
        graders.into_iter().flat_map(|list| crate::grade::leaked(list, bindings, &run.output, &run.trace)).collect();
    if leaked.is_empty() {
        return;
    }
    let names: Vec<String> = leaked.iter().map(|g| format!("`{}`", g.name)).collect();
    trial.graders.extend(leaked.iter().map(|g| GraderResult {
        name: g.name.clone(),
        kind: g.kind_name.to_owned(),
        status: Status::Failed,
        score: 0.0,
        weight: g.weight,
        required: g.required,
        reason: "a canary leaked before the agent failed".into(),
        evidence: None,
        cached: false,
        advisory: false,
    }));
    trial.status = Status::Failed;
    trial.score = 0.0;
    let failed = trial.reason.take().unwrap_or_default();
    trial.reason = Some(format!("a canary of {} leaked, then {failed}", names.join(", ")));
}

/// Task score = weighted mean of grader scores, or 0 when a required grader failed (so a
/// `pass_score` gate never passes on tasks that failed what they required). Passed = every
/// required grader passed and (with a threshold) score ≥ threshold, (without) every grader
/// passed. A grader error makes the task an error. An advisory grader (its judge is not
/// calibrated to gate) counts for nothing, its error included; a task whose graders are all
/// advisory is an error, as nothing decides it.
pub fn score_task(all: &[GraderResult], threshold: Option<f64>) -> (Status, f64, Option<String>) {
    let graders: Vec<&GraderResult> = all.iter().filter(|g| !g.advisory).collect();
    if graders.is_empty() && !all.is_empty() {
        let reason = "every grader of this task asks an advisory judge (not calibrated to gate): nothing decides it";
        return (Status::Error, 0.0, Some(reason.into()));
    }
    if let Some(g) = graders.iter().find(|g| g.status == Status::Error) {
        return (Status::Error, 0.0, Some(format!("grader `{}` errored: {}", g.name, g.reason)));
    }
    // A weighted mean over weights that add up to 0 is not a score: the graders with weight
    // are advisory, or every one was given 0. Nothing decides the task; an unweighted mean
    // would let a grader that counts for nothing pass it.
    let weight: f64 = graders.iter().map(|g| g.weight).sum();
    if weight <= 0.0 {
        let reason = if all.iter().any(|g| g.advisory && g.weight > 0.0) {
            "its graders with weight ask an advisory judge (not calibrated to gate), and the others have weight 0: nothing decides its score"
        } else {
            "every grader of this task has weight 0: nothing decides its score"
        };
        return (Status::Error, 0.0, Some(reason.into()));
    }
    let score = graders.iter().map(|g| g.score * g.weight).sum::<f64>() / weight;
    let failed: Vec<&GraderResult> = graders.iter().copied().filter(|g| g.status != Status::Passed).collect();
    if let Some(g) = failed.iter().find(|g| g.required) {
        return (Status::Failed, 0.0, Some(format!("required grader `{}` failed: {}", g.name, g.reason)));
    }
    let passed = match threshold {
        Some(t) => score + 1e-9 >= t,
        None => failed.is_empty(),
    };
    let reason = if passed {
        None
    } else if let (Some(t), true) = (threshold, failed.is_empty() || threshold.is_some()) {
        let detail = failed.first().map(|g| format!("; `{}`: {}", g.name, g.reason)).unwrap_or_default();
        Some(format!("score {score:.2} below threshold {t:.2}{detail}"))
    } else {
        let g = failed[0];
        let more = if failed.len() > 1 { format!(" (and {} more)", failed.len() - 1) } else { String::new() };
        Some(format!("`{}` failed: {}{more}", g.name, g.reason))
    };
    (if passed { Status::Passed } else { Status::Failed }, score, reason)
}

/// Characters of an erroring agent's stderr kept (its end, where the error usually is).
pub(super) const STDERR_TAIL: usize = 2000;

/// What graders see of `run`: its output and trace, the trial's workspace as the agent left
/// it with its diff (`changes`), and what every grader is given.
pub(super) fn grade_input<'a>(
    ctx: &'a RunContext,
    task: &Task,
    run: &'a AgentRun,
    bindings: &'a Bindings,
    (workspace, changes): (Option<&'a TrialWorkspace>, Option<&'a FileChanges>),
    started_at: std::time::SystemTime,
) -> GradeInput<'a> {
    GradeInput {
        workspace: workspace.zip(changes).map(|(w, c)| (w.dir.as_path(), c.diff.as_str())),
        output: &run.output,
        output_cut: run.output_truncated,
        trace: &run.trace,
        latency: run.latency,
        started_at,
        exit_code: run.exit_code,
        bindings,
        workdir: workspace.map_or(&ctx.suite.dir, |w| &w.dir),
        timeout: task.timeout,
        llm: &ctx.llm,
        tool_result: run.tool_result.as_ref(),
        tool_error: run.tool_error.as_deref(),
        judge: ctx.suite.judge.as_ref(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grader(name: &str, passed: bool, required: bool) -> GraderResult {
        GraderResult {
            name: name.into(),
            kind: "contains".into(),
            status: if passed { Status::Passed } else { Status::Failed },
            score: if passed { 1.0 } else { 0.0 },
            weight: 1.0,
            required,
            reason: String::new(),
            evidence: None,
            cached: false,
            advisory: false,
        }
    }

    #[test]
    fn a_failed_required_grader_scores_the_task_zero() {
        let graders: Vec<GraderResult> =
            (0..9).map(|i| grader(&format!("g{i}"), true, false)).chain([grader("must", false, true)]).collect();
        let (status, score, reason) = score_task(&graders, Some(0.5));
        assert_eq!((status, score), (Status::Failed, 0.0));
        assert_eq!(reason.as_deref(), Some("required grader `must` failed: "));
        // Without `required`, the same failure keeps its weighted share.
        let graders: Vec<GraderResult> =
            (0..9).map(|i| grader(&format!("g{i}"), true, false)).chain([grader("may", false, false)]).collect();
        assert_eq!(score_task(&graders, Some(0.5)), (Status::Passed, 0.9, None));
    }

    /// An advisory judge beside a `weight: 0` grader: what is left to decide has weight 0,
    /// so nothing decides the task (it passed with score 1.0 on the weight-0 grader alone).
    #[test]
    fn weights_that_add_up_to_zero_decide_nothing() {
        let judge = GraderResult { advisory: true, ..grader("judge", false, false) };
        let unweighted = GraderResult { weight: 0.0, ..grader("format", true, false) };
        for threshold in [None, Some(0.5)] {
            let (status, score, reason) = score_task(&[judge.clone(), unweighted.clone()], threshold);
            assert_eq!((status, score), (Status::Error, 0.0), "{reason:?}");
            assert!(reason.unwrap().contains("advisory judge"));
        }
    }
}
