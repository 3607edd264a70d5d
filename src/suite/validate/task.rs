//! A task: its trials, its agent (or the tool its `call` names), its prompt, steps and
//! graders, and the protocol eras it runs at.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::sync::Arc;

use super::super::model::{Agent, DEFAULT_TASK_TIMEOUT, Level, McpServer, Prompt, Task, ToolCallSpec};
use super::super::raw::{RawStep, RawTask};
use super::is_id;
use crate::grade::Grader;
use crate::source::unknown;
use crate::source::{KeyPath, Position, ValidateCx};
use crate::step::compile_steps;
use crate::template::{JsonTemplate, Scope};
use crate::values::{NonNegative, Rate};

/// What a task takes from the suite when it does not say: the agents it may name, and
/// `defaults`.
pub(super) struct TaskDefaults<'a> {
    pub(super) agents: &'a BTreeMap<String, Arc<Agent>>,
    pub(super) agent: Option<&'a str>,
    pub(super) timeout: Option<std::time::Duration>,
    pub(super) trials: Trials,
}

pub(super) fn validate_task(
    cx: &mut ValidateCx,
    raw: RawTask,
    path: &KeyPath,
    defaults: &TaskDefaults,
) -> Option<Task> {
    let trials = task_trials(cx, &raw, path, defaults.trials);
    let repeat = trials.repeat.unwrap_or(NonZeroU32::MIN);
    if !is_id(&raw.id, true) {
        cx.error(&path.key("id"), format!("invalid task id `{}`: use lowercase letters, digits, `.`, `_` and `-`, starting with a letter or digit", raw.id));
    }
    let level = raw.level.unwrap_or_default();
    let agent = task_agent(cx, &raw, level, path, defaults);
    no_preflight(cx, &raw.setup, &path.key("setup"));
    no_preflight(cx, &raw.cleanup, &path.key("cleanup"));
    // Setup first: its outputs are in reach of the prompt, the graders and cleanup.
    let setup = compile_steps(cx, &raw.setup, &path.key("setup"), Scope::Task);
    let prompt = task_prompt(cx, &raw, level, path);
    let cleanup = compile_steps(cx, &raw.cleanup, &path.key("cleanup"), Scope::AfterAgent);
    if raw.grade.is_empty() {
        cx.error(path, "the task has no graders: add at least one under `grade`");
    }
    let graders: Vec<Option<Grader>> =
        raw.grade.into_iter().enumerate().map(|(j, g)| Grader::from_raw(cx, g, &path.key("grade").index(j))).collect();
    let position = cx.value_position(path).unwrap_or(Position { line: 1, column: 1 });
    let agent = agent?;
    let timeout = raw.timeout.map(|d| d.0).or(agent.timeout()).or(defaults.timeout).unwrap_or(DEFAULT_TASK_TIMEOUT);
    Some(Task {
        id: raw.id,
        description: raw.description,
        tags: raw.tags,
        category: raw.category,
        severity: raw.severity.unwrap_or_default(),
        position,
        origin: None,
        agent,
        prompt: prompt?,
        setup: setup?,
        graders: graders.into_iter().collect::<Option<Vec<_>>>()?,
        cleanup: cleanup?,
        threshold: raw.threshold.map(Rate::get),
        weight: raw.weight.map_or(1.0, NonNegative::get),
        timeout,
        repeat,
        adaptive: trials.adaptive,
        min_pass: trials.min_pass,
        level,
        fixtures: raw.fixtures.map(|f| f.tool_responses).unwrap_or_default(),
        fixtures_only: raw.fixtures_only,
        golden: raw.golden,
        source: raw.source,
        era: None,
        arm: None,
    })
}

/// `preflight` means something only on a `before_all` hook: not on the steps of `list`.
pub(super) fn no_preflight(cx: &mut ValidateCx, steps: &[RawStep], list: &KeyPath) {
    for (i, step) in steps.iter().enumerate() {
        if step.preflight {
            cx.error(&list.index(i).key("preflight"), "`preflight` applies to `before_all` hooks");
        }
    }
}

/// The task's trials: its own `repeat` and `min_pass`, else `defaults`'.
fn task_trials(cx: &mut ValidateCx, raw: &RawTask, path: &KeyPath, defaults: Trials) -> Trials {
    let own = Trials::of(raw.repeat, raw.min_pass);
    let trials = Trials {
        repeat: own.repeat.or(defaults.repeat),
        adaptive: if own.repeat.is_some() { own.adaptive } else { defaults.adaptive },
        min_pass: raw.min_pass.or(defaults.min_pass),
    };
    check_trials(cx, own, path);
    let repeat = trials.repeat.unwrap_or(NonZeroU32::MIN);
    // More required passes than trials can never pass, and must not quietly become fewer.
    if let Some(m) = trials.min_pass.filter(|m| *m > repeat)
        && (raw.repeat.is_none() || raw.min_pass.is_none())
    {
        let (at, from) =
            if raw.min_pass.is_some() { (path.key("min_pass"), "") } else { (path.clone(), " (from `defaults`)") };
        cx.error(&at, format!("`min_pass` ({m}){from} is more than the task's {repeat} trial(s); set `repeat`"));
    }
    trials
}

/// What runs the task: the tool its `call` names (execution level), else its agent, the
/// default agent or the suite's only one.
fn task_agent(
    cx: &mut ValidateCx,
    raw: &RawTask,
    level: Level,
    path: &KeyPath,
    defaults: &TaskDefaults,
) -> Option<Arc<Agent>> {
    let call = task_call(cx, raw, level, path);
    let agent = match (&raw.agent, defaults.agent) {
        _ if level == Level::Execution => call,
        (Some(name), _) => check_agent_name(cx, name, &path.key("agent"), defaults.agents),
        (None, Some(name)) => defaults.agents.get(name).cloned(),
        (None, None) if defaults.agents.len() == 1 => defaults.agents.values().next().cloned(),
        (None, None) => {
            let msg = if defaults.agents.is_empty() {
                "no agent to run this task: define one under `agents`"
            } else {
                "no agent for this task: set `agent` here or `defaults.agent`"
            };
            cx.error(path, msg);
            None
        }
    };
    if matches!(level, Level::Invocation | Level::Scenario)
        && agent.as_ref().is_some_and(|a| !matches!(**a, Agent::Llm(_)))
    {
        cx.error(&path.key("level"), format!("the `{level}` level needs a model agent (`provider` and `model`)"));
    }
    agent
}

/// An execution-level task's `call`: the MCP tool it calls in place of an agent.
fn task_call(cx: &mut ValidateCx, raw: &RawTask, level: Level, path: &KeyPath) -> Option<Arc<Agent>> {
    match (level, &raw.call) {
        (Level::Execution, Some(call)) => {
            cx.known_mcp_server(&path.key("call").key("server"), &call.server);
            if raw.agent.is_some() {
                cx.error(&path.key("agent"), "an execution-level task calls a tool; it has no agent");
            }
            let arguments = serde_json::Value::Object(call.arguments.clone());
            let at = path.key("call").key("arguments");
            let arguments_at = (at.clone(), cx.value_position(&at).map(|p| p.line));
            let arguments = JsonTemplate::compile(cx, &arguments, Scope::Task, &at);
            arguments.map(|arguments| {
                Arc::new(Agent::Call(ToolCallSpec {
                    server: call.server.clone(),
                    tool: call.tool.clone(),
                    arguments,
                    name: format!("{}.{}", call.server, call.tool),
                    expect_error: call.expect.is_error,
                    arguments_at,
                }))
            })
        }
        (Level::Execution, None) => {
            cx.error(path, "an execution-level task needs `call: {server, tool, arguments}`");
            None
        }
        (_, Some(_)) => {
            cx.error(&path.key("call"), "`call` belongs to `level: execution` tasks");
            None
        }
        (_, None) => None,
    }
}

/// The task's `prompt` or `messages` (an execution-level task, which has no agent, needs none).
fn task_prompt(cx: &mut ValidateCx, raw: &RawTask, level: Level, path: &KeyPath) -> Option<Prompt> {
    match (&raw.prompt, &raw.messages) {
        (Some(p), None) => cx.template(p, Scope::Task, &path.key("prompt")).map(Prompt::Text),
        (None, Some(messages)) => {
            let mut parsed = Vec::new();
            for (j, m) in messages.iter().enumerate() {
                let content = cx.template(&m.content, Scope::Task, &path.key("messages").index(j).key("content"));
                parsed.push(content.map(|c| (m.role, c)));
            }
            parsed.into_iter().collect::<Option<Vec<_>>>().map(Prompt::Messages)
        }
        (Some(_), Some(_)) => {
            cx.error(path, "set either `prompt` or `messages`, not both");
            None
        }
        (None, None) if level == Level::Execution => Some(Prompt::Text(crate::template::Template::literal(""))),
        (None, None) => {
            cx.error(path, "the task has no `prompt` (or `messages`)");
            None
        }
    }
}

/// The one server with a protocol list `task` uses (by its call, its agent's `mcp`, its
/// steps and graders), with the eras it runs at; none when it uses no such server. Two such
/// servers in one task is an error: a task runs once per era of one list.
pub(super) fn task_eras(
    cx: &mut ValidateCx,
    task: &Task,
    servers: &BTreeMap<String, McpServer>,
    path: &KeyPath,
) -> Option<(String, Vec<String>)> {
    let mut used: Vec<&str> = match &*task.agent {
        Agent::Call(call) => vec![call.server.as_str()],
        Agent::Command(a) => a.mcp.iter().map(String::as_str).collect(),
        Agent::Llm(a) => a.mcp.iter().map(String::as_str).collect(),
    };
    let steps = task.setup.iter().chain(&task.cleanup).map(crate::step::Step::uses);
    for uses in steps.chain(task.graders.iter().map(crate::grade::Grader::uses)) {
        used.extend(uses.mcp_tools.iter().map(|(server, _)| *server));
    }
    used.sort_unstable();
    used.dedup();
    let listed: Vec<&str> =
        used.into_iter().filter(|s| servers.get(*s).is_some_and(|s| !s.protocol.eras().is_empty())).collect();
    match listed.as_slice() {
        [] => None,
        [one] => Some(((*one).to_owned(), servers[*one].protocol.eras().to_vec())),
        [first, second, ..] => {
            cx.error(
                path,
                format!(
                    "task `{}` uses two MCP servers with a protocol list (`{first}`, `{second}`): a task runs once per protocol version of one server; give the other one version",
                    task.id
                ),
            );
            None
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Trials {
    /// Trials at most.
    repeat: Option<NonZeroU32>,
    /// Adaptive: the trials to start with.
    adaptive: Option<NonZeroU32>,
    min_pass: Option<NonZeroU32>,
}

impl Trials {
    pub(super) fn of(repeat: Option<super::super::raw::RawRepeat>, min_pass: Option<NonZeroU32>) -> Trials {
        let (repeat, adaptive) = repeat.map(super::super::raw::RawRepeat::split).unzip();
        Trials { repeat, adaptive: adaptive.flatten(), min_pass }
    }
}

pub(super) fn check_trials(cx: &mut ValidateCx, t: Trials, path: &KeyPath) {
    if let (Some(r), Some(m)) = (t.repeat, t.min_pass)
        && m > r
    {
        cx.error(&path.key("min_pass"), format!("`min_pass` ({m}) is more than `repeat` ({r})"));
    }
}

fn check_agent_name(
    cx: &mut ValidateCx,
    name: &str,
    path: &KeyPath,
    agents: &BTreeMap<String, Arc<Agent>>,
) -> Option<Arc<Agent>> {
    if let Some(agent) = agents.get(name) {
        return Some(agent.clone());
    }
    let help = unknown(name, agents.keys().map(String::as_str)).help("expected one of", "the suite defines no agents");
    cx.error(path, format!("unknown agent `{name}`")).help = Some(help);
    None
}
