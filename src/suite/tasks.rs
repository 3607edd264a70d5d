//! Tasks: what the agent is asked and how its answer is graded, as written and compiled,
//! with their trials, their agent (or the tool a `call` names) and the protocol eras each
//! runs at.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::agent::{Agent, ToolCallSpec};
use super::definition::TaskSource;
use super::ids::is_id;
use super::mcp_server::McpServer;
use super::trials::{RawRepeat, Trials, check_trials};
use crate::grade::Grader;
pub use crate::grade::RawGrader;
use crate::llm::types::MessageRole;
use crate::policy::{Category, Severity};
use crate::source::{KeyPath, Position, ValidateCx, unknown};
use crate::step::{RawStep, Step, compile_steps};
use crate::template::{JsonTemplate, Scope, Template};
use crate::values::{NonNegative, Rate, RawDuration, display_as_written};

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTask {
    /// Task id: `[a-z0-9][a-z0-9._-]*`, unique in the suite.
    pub id: String,
    /// What the task checks, shown in reports.
    pub description: Option<String>,
    /// Labels that `--tag` selects by.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Where untrusted text entered (adversarial tasks).
    pub category: Option<Category>,
    /// The severity of a finding when the task fails (default high).
    pub severity: Option<Severity>,
    /// Agent name (default: `defaults.agent`).
    pub agent: Option<String>,
    /// How the system under test is exercised (default `agent`).
    pub level: Option<Level>,
    /// The tool call of an execution-level task.
    pub call: Option<RawCall>,
    /// Canned tool responses that replace live calls in a scenario.
    pub fixtures: Option<RawFixtures>,
    /// A tool call no fixture matches is an error.
    #[serde(default)]
    pub fixtures_only: bool,
    /// What the agent is asked; may use `{vars.NAME}`, `{env.NAME}` and setup outputs.
    pub prompt: Option<String>,
    /// A conversation instead of a `prompt` (given to command agents as JSON); with `turns`,
    /// the history the first turn follows (a system prompt, an earlier exchange).
    pub messages: Option<Vec<RawMessage>>,
    /// A multi-turn conversation instead of a `prompt`: each turn a user message with its
    /// own graders (docs/conversations.md).
    pub turns: Option<Vec<super::conversation::RawTurn>>,
    /// How a conversation's verdict comes from its turns, whether a failed turn stops it,
    /// and how much history the agent is given.
    pub conversation: Option<super::conversation::RawConversation>,
    /// A model that plays the user from a persona and a goal, after the scripted `turns`
    /// (or from the start), up to `max_turns`.
    pub simulated_user: Option<super::conversation::RawSimulatedUser>,
    /// Steps run before the agent.
    #[serde(default)]
    pub setup: Vec<RawStep>,
    /// How the answer is graded: the task's score is the graders' weighted mean. In a
    /// conversation: the whole-conversation graders, run after the last turn.
    #[serde(default)]
    pub grade: Vec<RawGrader>,
    /// Steps run after grading, whatever happened.
    #[serde(default)]
    pub cleanup: Vec<RawStep>,
    /// Pass when the weighted score reaches this (required graders must still pass).
    pub threshold: Option<Rate>,
    /// The task's weight in the aggregate score (default 1).
    pub weight: Option<NonNegative>,
    /// How long the task may run (default: the agent's, then `defaults.timeout`, else 5m).
    pub timeout: Option<RawDuration>,
    /// Trials (default: `defaults.repeat`, else 1), or `{min, max, adaptive: true}`: start
    /// with `min` and add trials only while pass/fail against `min_pass` is unsettled.
    pub repeat: Option<RawRepeat>,
    /// Trials that must pass (default: all).
    pub min_pass: Option<NonZeroU32>,
    /// Against a baseline: when every trial passed there and not every trial passes now, the
    /// gate fails (the check `golden tasks vs baseline`), whatever the paired test says.
    #[serde(default)]
    pub golden: bool,
    /// Files the task's verdict depends on that no key names (what its agent, a script or
    /// a server reads), as globs relative to the suite: their content joins the task's
    /// fingerprint, so `--changed-since` runs the task when one changes.
    #[serde(default)]
    pub inputs: Vec<String>,
    /// A workspace made fresh for every trial of this task, in place of the suite's.
    pub workspace: Option<super::workspace::RawWorkspace>,
    /// The task as written, for its definition hash.
    #[serde(skip)]
    #[schemars(skip)]
    pub source: TaskSource,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMessage {
    /// Who speaks.
    pub role: MessageRole,
    /// What is said; may use variables as the prompt does.
    pub content: String,
}

/// `level: execution`: one `tools/call` with fixed arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCall {
    /// The MCP server (a key of `mcp_servers`).
    pub server: String,
    /// The tool's name.
    pub tool: String,
    /// The call's arguments.
    #[serde(default)]
    pub arguments: serde_json::Map<String, serde_json::Value>,
    /// What the call must return.
    #[serde(default)]
    pub expect: RawCallExpect,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCallExpect {
    /// `true`: the tool must return a tool error (`isError: true`), and the graders grade its
    /// message as the output (a result that is not an error fails the task). Default false:
    /// a tool error is data the graders see, and says so in their reasons.
    #[serde(default)]
    pub is_error: bool,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawFixtures {
    /// Responses to the tool calls they match, in order of preference.
    #[serde(default)]
    pub tool_responses: Vec<RawToolResponse>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawToolResponse {
    /// `server.tool` (or `tool`).
    pub tool: String,
    /// Matches calls whose arguments contain these.
    pub arguments: Option<serde_json::Value>,
    /// The tool result: `{content: [...], structuredContent?, isError?}`, or any value (sent as JSON text).
    pub response: serde_json::Value,
}

#[derive(Debug)]
pub struct Task {
    pub id: String,
    pub description: Option<String>,
    pub tags: Vec<String>,
    pub category: Option<Category>,
    pub severity: Severity,
    /// Where the task starts in the suite file.
    pub position: Position,
    /// For an imported task: its file (relative to the suite's directory) and line.
    pub origin: Option<(String, usize)>,
    pub agent: Arc<Agent>,
    pub prompt: Prompt,
    /// A multi-turn task's turns and rules (its `prompt` is then empty).
    pub conversation: Option<super::conversation::Conversation>,
    pub setup: Vec<Step>,
    pub graders: Vec<Grader>,
    pub cleanup: Vec<Step>,
    pub threshold: Option<f64>,
    pub weight: f64,
    pub timeout: Duration,
    pub repeat: NonZeroU32,
    /// Adaptive trials (`repeat: {min, max, adaptive: true}`): the trials to start with;
    /// `repeat` is then the most.
    pub adaptive: Option<NonZeroU32>,
    /// `None`: every trial must pass.
    pub min_pass: Option<NonZeroU32>,
    /// Against a baseline: any drop from "every trial passed" fails the gate.
    pub golden: bool,
    /// `inputs:` globs, relative to the suite's directory, each checked at load.
    pub inputs: Vec<String>,
    pub level: Level,
    pub fixtures: Vec<RawToolResponse>,
    pub fixtures_only: bool,
    /// The task as written, for its definition hash.
    pub source: TaskSource,
    /// The workspace each trial runs in (the task's own, else the suite's).
    pub workspace: Option<Arc<crate::workspace::WorkspaceSpec>>,
    /// The protocol era it runs at, when it uses a server with a protocol list (its id
    /// then ends in `@ERA`).
    pub era: Option<crate::mcp::protocol::TaskEra>,
    /// The arm of `variants` it runs on (its id then ends in `@ARM`).
    pub arm: Option<String>,
}

impl Task {
    /// Every grader of the task: its own, then its conversation's turns'.
    pub fn all_graders(&self) -> impl Iterator<Item = &Grader> {
        self.graders.iter().chain(self.conversation.iter().flat_map(|c| c.turn_graders()))
    }
}

/// How the system under test is exercised: `agent` (any agent given the prompt),
/// `execution` (one MCP `tools/call`, no model), `invocation` (one completion with the
/// tools offered; the calls are graded, not executed) or `scenario` (the tool-calling loop
/// until a final answer or `max_turns`).
// The variants carry no doc comments: the schema then lists them as a plain `enum`, whose
// values a validator's message names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    #[default]
    Agent,
    Execution,
    Invocation,
    Scenario,
}

/// What the agent is asked: a prompt, or a conversation (given to command agents as JSON).
#[derive(Debug)]
pub enum Prompt {
    Text(Template),
    Messages(Vec<(MessageRole, Template)>),
}

impl Prompt {
    pub fn render(&self, lookup: &dyn Fn(&crate::template::Var) -> String) -> String {
        match self {
            Prompt::Text(t) => t.render(lookup),
            Prompt::Messages(messages) => {
                let list: Vec<_> = messages
                    .iter()
                    .map(|(role, content)| serde_json::json!({"role": role, "content": content.render(lookup)}))
                    .collect();
                serde_json::Value::Array(list).to_string()
            }
        }
    }

    pub fn templates(&self) -> Vec<&Template> {
        match self {
            Prompt::Text(t) => vec![t],
            Prompt::Messages(m) => m.iter().map(|(_, t)| t).collect(),
        }
    }
}

/// Default task timeout when neither the task, the agent nor `defaults` sets one.
pub const DEFAULT_TASK_TIMEOUT: Duration = Duration::from_secs(300);

/// What a task takes from the suite when it does not say: the agents it may name, and
/// `defaults`.
pub(super) struct TaskDefaults<'a> {
    /// The suite's `workspace`.
    pub(super) workspace: Option<&'a Arc<crate::workspace::WorkspaceSpec>>,
    pub(super) agents: &'a BTreeMap<String, Arc<Agent>>,
    /// The suite's judge (a simulated user's default model).
    pub(super) judge: Option<&'a crate::llm::spec::LlmSpec>,
    pub(super) agent: Option<&'a str>,
    pub(super) timeout: Option<std::time::Duration>,
    pub(super) trials: Trials,
}

/// The tasks as written, validated in order; a task that uses a server with a protocol
/// list once per era.
pub(super) fn compile_tasks(
    cx: &mut ValidateCx,
    raw_tasks: Vec<RawTask>,
    defaults: &TaskDefaults,
    hook_outputs: &BTreeMap<String, std::collections::BTreeSet<String>>,
    mcp_servers: &BTreeMap<String, McpServer>,
) -> Vec<Task> {
    let mut seen = rustc_hash::FxHashSet::default();
    let mut tasks = Vec::with_capacity(raw_tasks.len());
    let any_eras = mcp_servers.values().any(|s| !s.protocol.eras().is_empty());
    for (i, task) in raw_tasks.into_iter().enumerate() {
        let path = KeyPath::root("tasks").index(i);
        if !seen.insert(task.id.clone()) {
            cx.error(&path.key("id"), format!("duplicate task id `{}`", task.id));
        }
        cx.step_outputs.clone_from(hook_outputs);
        let origin = cx.task_origins.get(&i).cloned();
        // Only a suite with a protocol list needs a second copy of a task as written.
        let copy = any_eras.then(|| task.clone());
        let Some(mut task) = validate_task(cx, task, &path, defaults) else {
            continue;
        };
        task.origin = origin;
        let (Some(copy), Some((server, eras))) = (copy, task_eras(cx, &task, mcp_servers, &path)) else {
            tasks.push(task);
            continue;
        };
        // The task runs once per era of its server's protocol list, as `id@era`.
        for era in eras {
            cx.step_outputs.clone_from(hook_outputs);
            let Some(mut copy) = validate_task(cx, copy.clone(), &path, defaults) else {
                break;
            };
            copy.id = format!("{}@{era}", task.id);
            copy.origin.clone_from(&task.origin);
            copy.era = Some(crate::mcp::protocol::TaskEra { server: server.clone(), version: era });
            tasks.push(copy);
        }
    }

    tasks
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
    let keys = super::conversation::ConversationKeys {
        turns: raw.turns.as_deref(),
        conversation: raw.conversation.as_ref(),
        simulated_user: raw.simulated_user.as_ref(),
        prompt: raw.prompt.is_some(),
        messages: raw.messages.as_deref(),
        whole_graders: !raw.grade.is_empty(),
    };
    // Leaves the turns in reach of the whole-conversation graders and cleanup set on `cx`.
    let conversation = super::conversation::compile_conversation(cx, &keys, path, defaults.agents, defaults.judge);
    let prompt = match conversation {
        Some(_) => Some(Prompt::Text(Template::literal(""))),
        None => task_prompt(cx, &raw, level, path),
    };
    let cleanup = compile_steps(cx, &raw.cleanup, &path.key("cleanup"), Scope::AfterAgent);
    if raw.grade.is_empty() && conversation.is_none() {
        cx.error(path, "the task has no graders: add at least one under `grade`");
    }
    let graders: Vec<Option<Grader>> =
        raw.grade.into_iter().enumerate().map(|(j, g)| Grader::from_raw(cx, g, &path.key("grade").index(j))).collect();
    cx.turns = None;
    let windowed = matches!(&conversation, Some(Ok(c)) if c.window.is_some());
    if windowed && agent.as_deref().is_some_and(|a| matches!(a, Agent::Acp(_))) {
        let at = path.key("conversation").key("window");
        cx.error(&at, "an ACP agent keeps its own history in its session: `window` cannot shorten it");
    }
    if conversation.is_some() && matches!(level, Level::Execution | Level::Invocation) {
        cx.error(&path.key("level"), "a conversation runs at the `agent` or `scenario` level");
    }
    for (j, input) in raw.inputs.iter().enumerate() {
        if let Err(e) = glob::Pattern::new(input) {
            cx.error(&path.key("inputs").index(j), format!("invalid glob `{input}`: {e}"));
        }
    }
    let position = cx.value_position(path).unwrap_or(Position { line: 1, column: 1 });
    let agent = agent?;
    let workspace = match raw.workspace {
        Some(w) => Some(Arc::new(super::workspace::compile_workspace(cx, w, &path.key("workspace"))?)),
        None => defaults.workspace.cloned(),
    };
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
        conversation: match conversation {
            Some(c) => Some(c.ok()?),
            None => None,
        },
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
        inputs: raw.inputs,
        source: raw.source,
        workspace,
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
        Agent::Http(_) => Vec::new(),
        Agent::Command(a) => a.mcp.iter().map(String::as_str).collect(),
        Agent::Acp(a) => a.mcp.iter().map(String::as_str).collect(),
        Agent::Llm(a) => a.mcp.iter().map(String::as_str).collect(),
    };
    let steps = task.setup.iter().chain(&task.cleanup).map(crate::step::Step::uses);
    for uses in steps.chain(task.all_graders().map(crate::grade::Grader::uses)) {
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

display_as_written!(Level);
