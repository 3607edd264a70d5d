//! One trial of a conversation task: the scripted turns, then the simulated user's, each
//! answered by the agent with the history its kind carries, each turn graded; then the
//! whole-conversation graders and the verdict rule (docs/conversations.md). A trial is one
//! whole conversation, so trials, retries, variants and the gates see an ordinary trial.

use std::time::{Duration, Instant, SystemTime};

use serde_json::json;

use super::conversation_verdict::{Whole, conversation_verdict};
use super::simulated_user::{Move, next_move};
use super::task_attempt::{
    OUTPUT_EXCERPT, RunContext, STDERR_TAIL, failed_by_leak, grade_input, run_graders, score_task,
};
use crate::excerpt;
use crate::llm::types::{ChatMessage, MessageRole, Role};
use crate::results::{SimulatedUserRecord, SimulatorEnd, Status, TrialResult, TurnAuthor, TurnResult};
use crate::suite::model::{Agent, Conversation, Task, transcript};
use crate::sut::{AcpSession, AcpSut, AgentError, AgentRun, CommandSut, LlmSut, SystemUnderTest, Trace, Usage};
use crate::template::Bindings;
use crate::trace::TurnView;
use crate::workspace::TrialWorkspace;

/// The agent of a conversation, holding what its kind carries from turn to turn.
enum Speaker<'a> {
    /// A model agent: the message list, tool calls and results included, and the system
    /// prompt (the opening's last system message, else the agent's).
    Model(LlmSut<'a>, Vec<ChatMessage>, Option<String>),
    /// A command agent, run once per turn with the earlier turns in `$EVALGATE_CONVERSATION`.
    Command(CommandSut<'a>),
    /// An ACP agent: one session, a `session/prompt` a turn; with the last turn's outcome.
    Acp(AcpSut<'a>, Option<Box<(AcpSession<'a>, Result<String, String>)>>),
}

impl Speaker<'_> {
    /// The agent's answer to `bindings.prompt`, given the `opening` messages and the
    /// earlier `turns` (user message, answer), at most the last `window` messages of them
    /// (the system messages kept outside the window).
    async fn answer(
        &mut self,
        bindings: &Bindings,
        timeout: Duration,
        opening: &[(MessageRole, String)],
        turns: &[(String, String)],
        window: Option<usize>,
    ) -> Result<AgentRun, AgentError> {
        match self {
            Speaker::Model(sut, history, system) => {
                sut.converse(bindings, timeout, history, system.as_deref(), window).await
            }
            Speaker::Command(sut) => {
                let (system, said): (Vec<_>, Vec<_>) = opening
                    .iter()
                    .map(|(role, content)| (*role, content.as_str()))
                    .partition(|(role, _)| *role == MessageRole::System);
                let mut messages: Vec<(MessageRole, &str)> = said;
                messages.extend(turns.iter().flat_map(|(said, answered)| {
                    [(MessageRole::User, said.as_str()), (MessageRole::Assistant, answered.as_str())]
                }));
                if let Some(window) = window {
                    // From a user's message, as for a model agent.
                    let from = messages.len().saturating_sub(window);
                    let start = (from..messages.len()).find(|&i| messages[i].0 == MessageRole::User);
                    messages.drain(..start.unwrap_or(messages.len()));
                }
                let list: Vec<serde_json::Value> = system
                    .into_iter()
                    .chain(messages)
                    .map(|(role, content)| json!({"role": role, "content": content}))
                    .collect();
                let history = serde_json::Value::Array(list).to_string();
                CommandSut { conversation: Some(&history), ..*sut }.run(bindings, timeout).await
            }
            Speaker::Acp(sut, session) => {
                let started = Instant::now();
                let first = session.is_none();
                if first {
                    *session = Some(Box::new((sut.open(bindings, timeout).await?, Ok(String::new()))));
                }
                let (open, last) = &mut **session.as_mut().expect("opened");
                // The session holds the history: the opening is said once, before the first
                // turn's message, in the same prompt.
                let prompt = match first && !opening.is_empty() {
                    true => format!("{}\n\n{}", transcript(opening, &[]), bindings.prompt),
                    false => bindings.prompt.clone(),
                };
                *last = open.exchange(&prompt, timeout).await;
                let (mut run, error) = open.turn(last);
                run.latency = started.elapsed();
                match error {
                    None => Ok(run),
                    // An ACP session's errors are not scored (its transport, a timeout and a
                    // bad stop reason are not told apart here).
                    Some(reason) => Err(AgentError { reason, run: Some(run), agent_fault: false }),
                }
            }
        }
    }

    /// Ends what the agent holds across turns: an ACP session's whole run (its trace of
    /// every turn, the calls its servers received reconciled); none for the other kinds.
    async fn finish(self) -> Option<Result<AgentRun, AgentError>> {
        match self {
            Speaker::Acp(_, Some(open)) => {
                let (session, last) = *open;
                Some(session.finish(last).await)
            }
            _ => None,
        }
    }
}

/// Runs the conversation of `task` as one trial, into `trial`. `bindings` holds the setup's
/// outputs; each turn sets `prompt`, `agent.output` and `turns.N.output` as it goes.
pub(super) async fn run_conversation(
    ctx: &RunContext,
    servers: &crate::mcp::servers::Servers,
    task: &Task,
    conversation: &Conversation,
    (trial_index, workspace): (u32, Option<&TrialWorkspace>),
    bindings: &mut Bindings,
    trial: &mut TrialResult,
) {
    let cassette = ctx.llm.cassette.as_ref();
    let mut opening = Vec::with_capacity(conversation.opening.len());
    for (role, content) in &conversation.opening {
        match bindings.render(content) {
            Ok(text) => opening.push((*role, text)),
            Err(missing) => {
                trial.reason = Some(format!("the opening messages use {missing}"));
                return;
            }
        }
    }
    let speaker = match &**ctx.agent_for(task) {
        Agent::Llm(agent) => {
            // The system messages are the system prompt, as for a task's `messages`.
            let system = opening.iter().rev().find(|(role, _)| *role == MessageRole::System).map(|(_, s)| s.clone());
            let history = opening
                .iter()
                .filter_map(|(role, content)| match role {
                    MessageRole::System => None,
                    MessageRole::User => Some(ChatMessage::text(Role::User, content.clone())),
                    MessageRole::Assistant => Some(ChatMessage::text(Role::Assistant, content.clone())),
                })
                .collect();
            let sut = LlmSut { agent, task, trial: trial_index, llm: &ctx.llm, servers };
            Speaker::Model(sut, history, system.or_else(|| agent.spec.system.clone()))
        }
        Agent::Command(agent) => {
            let scratch_dir = workspace.map_or(&ctx.scratch_dir, |w| &w.io);
            Speaker::Command(CommandSut { agent, scratch_dir, servers, cassette, workspace, conversation: None })
        }
        Agent::Acp(agent) => Speaker::Acp(AcpSut { agent, servers, cassette, workspace }, None),
        Agent::Http(_) => {
            trial.reason =
                Some("a conversation needs an agent that keeps a session; an http agent makes one request".into());
            return;
        }
        Agent::Call(_) => {
            trial.reason = Some("a conversation needs an agent; an execution-level task calls a tool".into());
            return;
        }
    };
    let mut dialogue = Dialogue {
        speaker,
        opening,
        transcript: Vec::new(),
        runs: Vec::new(),
        failed: None,
        deadline: Instant::now() + task.timeout,
        window: conversation.window.map(|w| w.get() as usize),
        scored: matches!(conversation.verdict, crate::suite::model::Verdict::Score(_)),
    };
    let started_at = SystemTime::now();
    let mut stopped = false;
    let mut simulator_cost = Some(0.0);

    for (i, scripted) in conversation.turns.iter().enumerate() {
        if stopped {
            trial.turns.push(skipped_turn(i as u32 + 1, &bindings.render(&scripted.prompt).unwrap_or_default()));
            continue;
        }
        let prompt = match bindings.render(&scripted.prompt) {
            Ok(prompt) => prompt,
            Err(missing) => {
                trial.reason = Some(format!("turn {}: the prompt uses {missing}", i + 1));
                return;
            }
        };
        if dialogue.take_turn(prompt, TurnAuthor::Script, bindings, trial).await.is_err() {
            return;
        }
        let run = dialogue.runs.last().expect("the turn ran");
        // The turn's graders see the workspace as this turn left it, and its diff.
        if let Some(workspace) = workspace {
            workspace.after_agent().await;
        }
        let changes = workspace.map(TrialWorkspace::file_changes);
        let input = grade_input(ctx, task, run, bindings, (workspace, changes.as_ref()), started_at);
        let graded = run_graders(&scripted.graders, &input, None, false, trial).await;
        let turn = trial.turns.last_mut().expect("the turn ran");
        if turn.status == Status::Passed && !graded.is_empty() {
            (turn.status, turn.score, turn.reason) = score_task(&graded, scripted.threshold);
        }
        turn.graders = graded;
        stopped = conversation.stop_on_failure && turn.status != Status::Passed;
    }

    if let Some(user) = &conversation.simulated_user {
        let ended = loop {
            if stopped {
                break SimulatorEnd::Stopped;
            }
            if trial.turns.len() >= user.max_turns.get() as usize {
                break SimulatorEnd::MaxTurns;
            }
            let asked = next_move(&ctx.llm, user, &dialogue.transcript, OUTPUT_EXCERPT).await;
            simulator_cost = simulator_cost.zip(asked.cost_usd).map(|(a, b)| a + b);
            match asked.next {
                Ok(Move::End(end)) => break end,
                Ok(Move::Say(message)) => {
                    if dialogue.take_turn(message, TurnAuthor::SimulatedUser, bindings, trial).await.is_err() {
                        break SimulatorEnd::Stopped;
                    }
                }
                Err(reason) => {
                    trial.reason = Some(reason);
                    break SimulatorEnd::Stopped;
                }
            }
        };
        trial.simulated_user = Some(SimulatedUserRecord { model: user.name.clone(), ended });
    }
    // The simulator's calls are the evaluation's own spending, as a judge's are.
    match simulator_cost {
        Some(0.0) => {}
        Some(c) => *trial.judge_cost_usd.get_or_insert(0.0) += c,
        None => trial.judge_cost_unknown = true,
    }
    let Dialogue { speaker, opening, transcript, runs, failed, .. } = dialogue;
    let mut trace = merged(&runs);
    let mut replayed = !runs.is_empty() && runs.iter().all(|r| r.replayed);
    // An ACP session's own trace holds every turn, and what its servers received.
    match speaker.finish().await {
        Some(Ok(session)) => {
            (trace, replayed, trial.stderr) =
                (session.trace, session.replayed, excerpt::last(&session.stderr, STDERR_TAIL))
        }
        Some(Err(e)) => {
            trial.reason.get_or_insert(e.reason);
            if let Some(session) = e.run {
                (trace, replayed, trial.stderr) =
                    (session.trace, session.replayed, excerpt::last(&session.stderr, STDERR_TAIL));
            }
        }
        None => {}
    }
    // The checks after the agent (writes outside, the diff) run once it is gone, as for a
    // single prompt.
    if let Some(workspace) = workspace {
        workspace.after_agent().await;
    }
    let last = runs.last();
    trial.output = last.map(|r| excerpt::first(&r.output, OUTPUT_EXCERPT));
    trial.output_truncated = last.is_some_and(|r| r.output_truncated || r.output.chars().count() > OUTPUT_EXCERPT);
    trial.latency_ms = Some(runs.iter().map(|r| r.latency.as_millis() as u64).sum());
    trial.model.clone_from(&trace.model);
    trial.usage.clone_from(&trace.usage);
    trial.tool_calls = trace.calls().to_vec();
    trial.session.clone_from(&trace.session);
    trial.cached = !runs.is_empty() && runs.iter().all(|r| r.cached);
    trial.replayed = replayed;
    let conversation_json = serde_json::Value::Array(
        opening
            .iter()
            .map(|(role, content)| json!({"role": role, "content": content}))
            .chain(transcript.iter().flat_map(|(said, answered)| {
                [json!({"role": "user", "content": said}), json!({"role": "assistant", "content": answered})]
            }))
            .collect(),
    );
    trial.prompt = Some(excerpt::first(&conversation_json.to_string(), OUTPUT_EXCERPT));
    // The grader lists whose canaries count: the task's and each turn's.
    let lists =
        || std::iter::once(task.graders.as_slice()).chain(conversation.turns.iter().map(|t| t.graders.as_slice()));
    let errored = trial.turns.last().is_some_and(|t| t.status == Status::Error);
    if errored || trial.reason.is_some() {
        trial.status = Status::Error;
        trial.score = 0.0;
        // A canary leaked in any turn, the one that errored included, fails the trial.
        for run in runs.iter().chain(&failed) {
            if trial.status == Status::Error {
                failed_by_leak(lists(), bindings, run, trial);
            }
        }
        return;
    }

    // The whole-conversation graders: the last answer (or the transcript: `conversation.output`)
    // is the output, every turn's tool calls the trace, and the conversation (a JSON list of
    // `{role, content}`) the prompt.
    bindings.prompt = conversation_json.to_string();
    let mut trace = trace;
    trace.conversation = Some(
        transcript
            .iter()
            .zip(&runs)
            .enumerate()
            .map(|(i, ((prompt, output), run))| TurnView {
                turn: i as u32 + 1,
                prompt: prompt.clone(),
                output: output.clone(),
                tool_calls: run.trace.calls().to_vec(),
            })
            .collect(),
    );
    let output = conversation.output.of(&opening, &transcript);
    let last_run = AgentRun { trace, output, ..last.cloned().unwrap_or_default() };
    let whole: Whole = if task.graders.is_empty() {
        None
    } else {
        let changes = workspace.map(TrialWorkspace::file_changes);
        let input = grade_input(ctx, task, &last_run, bindings, (workspace, changes.as_ref()), started_at);
        let graded = run_graders(&task.graders, &input, None, false, trial).await;
        let threshold = match conversation.verdict {
            crate::suite::model::Verdict::Score(_) => None,
            _ => task.threshold,
        };
        let verdict = score_task(&graded, threshold);
        trial.graders = graded;
        Some(verdict)
    };
    let simulated = conversation.simulated_user.is_some();
    let (status, score, reason) =
        conversation_verdict(conversation.verdict, &trial.turns, whole, task.threshold, simulated);
    trial.status = status;
    trial.score = score;
    trial.reason = reason;
    // A canary leaked in any turn fails the conversation, whichever list its grader is in
    // (a whole-conversation `no_leak` reads the last answer; the others' are checked here).
    for (i, run) in runs.iter().enumerate() {
        let leaked: Vec<String> = lists()
            .flat_map(|list| crate::grade::leaked(list, bindings, &run.output, &run.trace))
            .map(|g| format!("`{}`", g.name))
            .collect();
        if !leaked.is_empty() {
            trial.status = Status::Failed;
            trial.score = 0.0;
            trial.reason = Some(format!("a canary of {} leaked in turn {}", leaked.join(", "), i + 1));
            break;
        }
    }
}

/// The conversation as it goes: the agent, what was said, and the agent's runs.
struct Dialogue<'a> {
    speaker: Speaker<'a>,
    /// The opening messages, rendered: the history the first turn follows.
    opening: Vec<(MessageRole, String)>,
    /// (user message, answer) of each turn answered.
    transcript: Vec<(String, String)>,
    runs: Vec<AgentRun>,
    /// What the agent did in a turn that errored, for the leak check.
    failed: Option<AgentRun>,
    deadline: Instant,
    window: Option<usize>,
    /// `verdict: {score: …}` (AgentV's rule): a turn whose answer failed scores 0 and the
    /// conversation goes on, instead of erroring the trial.
    scored: bool,
}

impl Dialogue<'_> {
    /// One turn: the agent asked `prompt`, its answer recorded in `trial.turns`; `Err` (the
    /// agent errored, recorded) ends the trial. Under `verdict: {score: …}`, an answer that
    /// failed (`AgentError::agent_fault`) is a failed turn (score 0) instead.
    async fn take_turn(
        &mut self,
        prompt: String,
        by: TurnAuthor,
        bindings: &mut Bindings,
        trial: &mut TrialResult,
    ) -> Result<(), ()> {
        let n = trial.turns.len() as u32 + 1;
        bindings.prompt = prompt;
        let left = self.deadline.saturating_duration_since(Instant::now());
        let outcome = self.speaker.answer(bindings, left, &self.opening, &self.transcript, self.window).await;
        let mut turn = TurnResult {
            turn: n,
            by,
            status: Status::Passed,
            score: 1.0,
            reason: None,
            prompt: Some(excerpt::first(&bindings.prompt, OUTPUT_EXCERPT)),
            output: None,
            output_truncated: false,
            latency_ms: None,
            tool_calls: Vec::new(),
            graders: Vec::new(),
        };
        let run = match outcome {
            Ok(run) => run,
            // Only the agent's own failure (`agent_fault`): a timeout, a cassette miss or a
            // broken setup stays an error, never a score.
            Err(e) if self.scored && e.agent_fault => AgentRun { failure: Some(e.reason), ..e.run.unwrap_or_default() },
            Err(e) => {
                turn.status = Status::Error;
                turn.score = 0.0;
                turn.reason = Some(e.reason.clone());
                if let Some(run) = &e.run {
                    turn.output = (!run.output.is_empty()).then(|| excerpt::first(&run.output, OUTPUT_EXCERPT));
                    turn.tool_calls = run.trace.calls().to_vec();
                }
                trial.turns.push(turn);
                trial.reason = Some(format!("turn {n}: {}", e.reason));
                self.failed = e.run;
                return Err(());
            }
        };
        turn.output = Some(excerpt::first(&run.output, OUTPUT_EXCERPT));
        turn.output_truncated = run.output_truncated || run.output.chars().count() > OUTPUT_EXCERPT;
        turn.latency_ms = Some(run.latency.as_millis() as u64);
        turn.tool_calls = run.trace.calls().to_vec();
        if let Some(failure) = &run.failure {
            // Ending without an answer (`max_turns` of its tool loop, a refusal) fails the turn.
            turn.status = Status::Failed;
            turn.score = 0.0;
            turn.reason = Some(failure.clone());
        }
        bindings.agent_output = Some(run.output.clone());
        bindings.turn_outputs.push(run.output.clone());
        self.transcript.push((bindings.prompt.clone(), run.output.clone()));
        trial.turns.push(turn);
        self.runs.push(run);
        Ok(())
    }
}

/// A scripted turn not run: the conversation stopped at a failed turn before it.
fn skipped_turn(n: u32, prompt: &str) -> TurnResult {
    TurnResult {
        turn: n,
        by: TurnAuthor::Script,
        status: Status::Skipped,
        score: 0.0,
        reason: Some("not run: an earlier turn failed (`stop_on_failure`)".into()),
        prompt: (!prompt.is_empty()).then(|| excerpt::first(prompt, OUTPUT_EXCERPT)),
        output: None,
        output_truncated: false,
        latency_ms: None,
        tool_calls: Vec::new(),
        graders: Vec::new(),
    }
}

/// The conversation's trace: every turn's tool calls in order, usage added up (a cost
/// unknown in any turn is unknown), the last model and session.
fn merged(runs: &[AgentRun]) -> Trace {
    let reported = runs.iter().any(|r| r.trace.tool_calls.is_some());
    let calls: Vec<_> = runs.iter().flat_map(|r| r.trace.calls().iter().cloned()).collect();
    let usages: Vec<Option<&Usage>> = runs.iter().map(|r| r.trace.usage.as_ref()).collect();
    let usage = usages.iter().any(Option::is_some).then(|| {
        let sum = |f: fn(&Usage) -> Option<u64>| {
            let values: Vec<u64> = usages.iter().flatten().filter_map(|u| f(u)).collect();
            (!values.is_empty()).then(|| values.iter().sum())
        };
        let cost = usages.iter().try_fold(0.0, |total, u| Some(total + u.as_ref()?.cost_usd?));
        Usage { input_tokens: sum(|u| u.input_tokens), output_tokens: sum(|u| u.output_tokens), cost_usd: cost }
    });
    Trace {
        no_answer: None,
        output: None,
        tool_calls: reported.then_some(calls),
        usage,
        model: runs.iter().rev().find_map(|r| r.trace.model.clone()),
        session: runs.iter().rev().find_map(|r| r.trace.session.clone()),
        conversation: None,
        declared: None,
    }
}
