//! Raw suite → validated model. Checks what serde cannot (ids, names, ranges, templates,
//! paths) and records every problem rather than stopping at the first.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::sync::Arc;

use super::load::LoadOptions;
use super::model::{
    Agent, Cassettes, CommandAgent, DEFAULT_MAX_TURNS, DEFAULT_TASK_TIMEOUT, EnvRequirements, Level, LlmAgent,
    McpServer, Prompt, RegressionConfig, Suite, Task, ToolCallSpec,
};
use super::raw::{RawAgent, RawStep, RawSuite, RawTask};
use crate::grade::Grader;
use crate::llm::spec::llm_spec;
use crate::source::Position;
use crate::source::unknown;
use crate::source::{KeyPath, ValidateCx};
use crate::step::compile_steps;
use crate::template::{JsonTemplate, Scope};
use crate::values::{NonNegative, Rate};

pub fn validate(raw: RawSuite, options: &LoadOptions, cx: &mut ValidateCx) -> Option<Suite> {
    if raw.evalgate != 1 {
        cx.error(
            &KeyPath::root("evalgate"),
            format!("unsupported format version {}; this evalgate reads version 1", raw.evalgate),
        );
    }
    if !is_id(&raw.suite, false) {
        cx.error(
            &KeyPath::root("suite"),
            format!(
                "invalid suite id `{}`: use lowercase letters, digits, `.` and `-`, starting with a letter or digit",
                raw.suite
            ),
        );
    }
    if let Some(v) = &raw.version
        && !is_semver(v)
    {
        cx.error(&KeyPath::root("version"), format!("invalid version `{v}`: expected MAJOR.MINOR.PATCH, e.g. 1.0.0"));
    }

    cx.vars = raw.vars.into_iter().map(|(k, v)| (k, v.0)).collect();
    for (k, v) in &options.vars {
        cx.vars.insert(k.clone(), v.clone());
    }

    let env = EnvRequirements {
        commands: raw.env.required_commands,
        python_modules: raw.env.required_python_modules,
        env_vars: raw.env.required_env,
        files: raw
            .env
            .required_files
            .into_iter()
            .map(|f| {
                let p = cx.resolve_path(&f);
                (f, p)
            })
            .collect(),
    };

    let mcp_servers: BTreeMap<String, McpServer> =
        raw.mcp_servers.iter().filter_map(|(name, s)| Some((name.clone(), mcp_server(cx, name, s)?))).collect();
    cx.mcp_servers = raw.mcp_servers.keys().cloned().collect();
    let judge = raw.judge.as_ref().and_then(|j| crate::llm::calibration::judge_spec(cx, j, &KeyPath::root("judge")));
    cx.has_judge = raw.judge.is_some();
    let raw_agents = raw.variants.is_some().then(|| raw.agents.clone());
    let agents = compile_agents(cx, raw.agents);

    let trials = Trials::of(raw.defaults.repeat, raw.defaults.min_pass);
    check_trials(cx, trials, &KeyPath::root("defaults"));
    let defaults = TaskDefaults {
        agents: &agents,
        agent: raw.defaults.agent.as_deref(),
        timeout: raw.defaults.timeout.map(|d| d.0),
        trials,
    };

    let regression = raw.regression.map(|r| RegressionConfig {
        baseline: r.baseline.as_deref().map(|b| cx.resolve_path(b)),
        baseline_written: r.baseline,
        required: r.required,
        max_baseline_age: r.max_baseline_age.map(|d| d.0),
        budget: r.budget,
        paired: r.paired,
        noise: r.noise.as_deref().map(|n| cx.resolve_path(n)),
    });

    // Hook outputs are in reach of every task; after_all also sees before_all's.
    let hooks = KeyPath::root("hooks");
    let before_all = compile_steps(cx, &raw.hooks.before_all, &hooks.key("before_all"), Scope::Hook);
    let hook_outputs = cx.step_outputs.clone();
    let after_all = compile_steps(cx, &raw.hooks.after_all, &hooks.key("after_all"), Scope::Hook);
    no_preflight(cx, &raw.hooks.after_all, &hooks.key("after_all"));

    // A suite may gate an MCP server on conformance alone.
    if raw.tasks.is_empty() && raw.mcp_servers.values().all(|s| s.conformance.is_none()) {
        cx.error(&KeyPath::root("tasks"), "the suite has no tasks");
    }
    let variants = match (&raw.variants, raw_agents) {
        (Some(v), Some(raw_agents)) => {
            let written = raw.source.get("variants").cloned().unwrap_or_default();
            let base_vars = cx.vars.clone();
            super::variants::compile(cx, v, &base_vars, &raw_agents, &raw.mcp_servers, &written)
        }
        _ => None,
    };
    let mut arm_servers = Vec::new();
    let tasks = match &variants {
        None => compile_tasks(cx, raw.tasks, &defaults, &hook_outputs, &mcp_servers),
        Some((_, inputs)) => {
            let base_vars = cx.vars.clone();
            let before = cx.diagnostics.len();
            let mut arms = Vec::new();
            for arm in inputs {
                cx.vars.clone_from(&arm.vars);
                let (arm_tasks, servers) = arm_tasks(cx, arm, &raw.tasks, &defaults, &hook_outputs, &mcp_servers);
                arms.push(arm_tasks);
                arm_servers.extend(servers);
            }
            cx.vars = base_vars;
            dedup_diagnostics(cx, before);
            super::variants::interleave(arms)
        }
    };
    let mut mcp_servers = mcp_servers;
    mcp_servers
        .extend(arm_servers.into_iter().map(|s| (format!("{}@{}", s.name, s.arm.clone().unwrap_or_default()), s)));

    let cassettes = raw.cassettes.map(|c| Cassettes {
        path: c.path.map_or_else(|| Cassettes::default_path(&cx.dir, &raw.suite), |p| cx.dir.join(p)),
        mode: c.mode.resolved(),
    });
    Some(Suite {
        id: raw.suite,
        version: raw.version,
        description: raw.description,
        modes: raw.modes,
        file: cx.file.clone(),
        dir: cx.dir.clone(),
        env,
        vars: cx.vars.clone(),
        agents,
        mcp_servers,
        variants: variants.map(|(v, _)| v),
        judge,
        pricing: raw.pricing,
        thresholds: raw.thresholds,
        regression,
        retries: raw.defaults.retries.unwrap_or(0),
        before_all: before_all?,
        after_all: after_all?,
        cassettes,
        tasks,
        definition_context: super::definition::suite_context(&raw.source, &cx.vars),
    })
}

fn compile_agents(cx: &mut ValidateCx, raw: BTreeMap<String, RawAgent>) -> BTreeMap<String, Arc<Agent>> {
    raw.into_iter()
        .filter_map(|(name, agent)| {
            let agent = validate_agent(cx, &name, agent)?;
            Some((name, Arc::new(agent)))
        })
        .collect()
}

/// The tasks as written, validated in order; a task that uses a server with a protocol
/// list once per era.
fn compile_tasks(
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

/// One arm's tasks (`TASK@ARM`), compiled with its variables, agents and servers (`cx.vars`
/// is the arm's already), and the servers it replaces.
fn arm_tasks(
    cx: &mut ValidateCx,
    arm: &super::variants::ArmInputs,
    raw_tasks: &[RawTask],
    defaults: &TaskDefaults,
    hook_outputs: &BTreeMap<String, std::collections::BTreeSet<String>>,
    suite_servers: &BTreeMap<String, McpServer>,
) -> (Vec<Task>, Vec<McpServer>) {
    let arm_path = KeyPath::root("variants").key("arms").key(&arm.name);
    let mut servers = suite_servers.clone();
    let mut replaced = Vec::new();
    let lists = |s: &McpServer| !s.protocol.eras().is_empty();
    for (name, raw) in &arm.mcp_servers {
        let path = arm_path.key("mcp_servers").key(name);
        if suite_servers.values().any(lists) {
            cx.error(
                &path,
                "an arm cannot replace a server in a suite whose servers have a protocol list (not supported yet)",
            );
            continue;
        }
        if let Some(mut server) = mcp_server_at(cx, name, raw, &path) {
            if lists(&server) {
                cx.error(&path.key("protocol"), "an arm's server runs at one protocol version, not a list");
            }
            server.arm = Some(arm.name.clone());
            replaced.push(server.clone());
            servers.insert(name.clone(), server);
        }
    }
    let agents = compile_agents(cx, arm.agents.clone());
    let arm_defaults = TaskDefaults { agents: &agents, ..*defaults };
    let mut tasks = compile_tasks(cx, raw_tasks.to_vec(), &arm_defaults, hook_outputs, &servers);
    let agent = arm.agent.as_ref().and_then(|a| agents.get(a));
    for task in &mut tasks {
        task.id = format!("{}@{}", task.id, arm.name);
        task.arm = Some(arm.name.clone());
        // The arm's overrides are part of what its tasks measure.
        let mut json = task.source.json();
        if let serde_json::Value::Object(map) = &mut json {
            map.insert("variant".into(), arm.written.clone());
        }
        task.source = super::definition::TaskSource::Json(json);
        if let Some(agent) = agent.filter(|_| !matches!(*task.agent, Agent::Call(_))) {
            if matches!(task.level, Level::Invocation | Level::Scenario) && !matches!(**agent, Agent::Llm(_)) {
                cx.error(
                    &arm_path.key("agent"),
                    format!(
                        "`{}` is a command agent, but task `{}` needs a model agent (level {})",
                        agent.name(),
                        task.id,
                        task.level
                    ),
                );
            }
            task.agent = agent.clone();
        }
    }
    (tasks, replaced)
}

/// Drops the diagnostics after `from` that repeat one already recorded: each arm compiles
/// the suite's tasks and agents again, and their problems are reported once.
fn dedup_diagnostics(cx: &mut ValidateCx, from: usize) {
    let mut seen: rustc_hash::FxHashSet<(String, String)> =
        cx.diagnostics[..from].iter().map(|d| (d.key_path.clone(), d.message.clone())).collect();
    let later = cx.diagnostics.split_off(from);
    cx.diagnostics.extend(later.into_iter().filter(|d| seen.insert((d.key_path.clone(), d.message.clone()))));
}

fn validate_agent(cx: &mut ValidateCx, name: &str, raw: RawAgent) -> Option<Agent> {
    let path = KeyPath::root("agents").key(name);
    let mcp = raw.mcp.clone().unwrap_or_default();
    for (i, server) in mcp.iter().enumerate() {
        cx.known_mcp_server(&path.key("mcp").index(i), server);
    }
    let Some(command) = &raw.command else {
        if raw.provider.is_none() {
            cx.error(&path, "an agent needs `command` (a CLI) or `provider` and `model` (a model)");
            return None;
        }
        if raw.stdin || !raw.env.is_empty() || raw.workdir.is_some() {
            cx.error(&path, "`stdin`, `env` and `workdir` belong to command agents");
        }
        if raw.cache_repeats == Some(true) && raw.cache != Some(true) {
            cx.error(&path.key("cache_repeats"), "`cache_repeats` needs `cache: true`");
        }
        let spec = llm_spec(cx, &raw.llm(), &path);
        return Some(Agent::Llm(LlmAgent {
            name: name.to_owned(),
            spec: spec?,
            max_turns: raw.max_turns.unwrap_or(DEFAULT_MAX_TURNS),
            cache_repeats: raw.cache_repeats.unwrap_or(false),
            mcp,
        }));
    };
    let model_keys = raw
        .llm()
        .keys()
        .into_iter()
        .chain([("max_turns", raw.max_turns.is_some()), ("cache_repeats", raw.cache_repeats.is_some())]);
    if let Some((key, _)) = model_keys.into_iter().find(|(_, set)| *set) {
        cx.error(&path.key(key), format!("`{key}` belongs to model agents, and this one has a `command`"));
    }
    if command.is_empty() {
        cx.error(&path.key("command"), "the command is empty");
    }
    let command = cx.templates(command, Scope::Agent, &path.key("command"));
    if let Some(first) = &command.as_ref().and_then(|c| c.first().cloned())
        && first.vars().next().is_some()
    {
        cx.error(&path.key("command").index(0), "the program name cannot use variables");
    }
    let env = cx.env_templates(&raw.env, Scope::Agent, &path.key("env"));
    Some(Agent::Command(CommandAgent {
        name: name.to_owned(),
        mcp,
        command: command?,
        stdin: raw.stdin,
        env,
        workdir: raw.workdir.map_or_else(|| cx.dir.clone(), |w| cx.resolve_path(&w)),
        timeout: raw.timeout.map(|d| d.0),
    }))
}

pub(super) fn mcp_server(cx: &mut ValidateCx, name: &str, raw: &super::raw::RawMcpServer) -> Option<McpServer> {
    mcp_server_at(cx, name, raw, &KeyPath::root("mcp_servers").key(name))
}

/// The server `name` as written at `path` (the suite's, or an arm's replacement).
fn mcp_server_at(cx: &mut ValidateCx, name: &str, raw: &super::raw::RawMcpServer, path: &KeyPath) -> Option<McpServer> {
    let path = path.clone();
    let url = match (&raw.command, &raw.url) {
        (Some(c), None) if c.is_empty() => {
            cx.error(&path.key("command"), "the command is empty");
            return None;
        }
        (Some(_), None) => None,
        (None, Some(url)) => Some(cx.template(url, Scope::Hook, &path.key("url"))?),
        _ => {
            cx.error(&path, "an MCP server has either `command` (stdio) or `url` (streamable HTTP)");
            return None;
        }
    };
    if raw.url.is_some() && (!raw.env.is_empty() || raw.cwd.is_some()) {
        cx.error(&path, "`env` and `cwd` belong to stdio servers (`command`)");
    }
    if raw.command.is_some() && !raw.headers.is_empty() {
        cx.error(&path.key("headers"), "`headers` belong to HTTP servers (`url`)");
    }
    let auth = raw.auth.as_ref().map(|auth| super::mcp_auth::compile(cx, auth, &path, raw.url.is_some(), &raw.headers));
    let protocol = match raw.protocol.as_ref().map(crate::mcp::protocol::Protocol::parse) {
        None => crate::mcp::protocol::Protocol::Auto,
        Some(Ok(protocol)) => protocol,
        Some(Err(why)) => {
            cx.error(&path.key("protocol"), why);
            return None;
        }
    };
    // An `auth` that did not compile is reported; the server is not built.
    let auth = match auth {
        Some(compiled) => Some(compiled?),
        None => None,
    };
    Some(McpServer {
        name: name.to_owned(),
        command: raw.command.clone(),
        env: cx.env_templates(&raw.env, Scope::Hook, &path.key("env")),
        cwd: raw.cwd.as_ref().map_or_else(|| cx.dir.clone(), |c| cx.resolve_path(c)),
        url,
        headers: cx.env_templates(&raw.headers, Scope::Hook, &path.key("headers")),
        auth,
        allow_side_effects: raw.allow_side_effects,
        cassette: raw.cassette,
        snapshot: raw.snapshot.as_ref().map(|s| (cx.resolve_path(s), s.clone())),
        fail_on: raw.drift.fail_on,
        protocol,
        lint: raw.lint.as_ref().and_then(crate::mcp::lint::RawLint::settings),
        arm: None,
        conformance: match &raw.conformance {
            Some(c) => Some(c.compile(cx, &path.key("conformance"), raw.url.is_some())?),
            None => None,
        },
    })
}

/// What a task takes from the suite when it does not say: the agents it may name, and
/// `defaults`.
struct TaskDefaults<'a> {
    agents: &'a BTreeMap<String, Arc<Agent>>,
    agent: Option<&'a str>,
    timeout: Option<std::time::Duration>,
    trials: Trials,
}

fn validate_task(cx: &mut ValidateCx, raw: RawTask, path: &KeyPath, defaults: &TaskDefaults) -> Option<Task> {
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
fn no_preflight(cx: &mut ValidateCx, steps: &[RawStep], list: &KeyPath) {
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
            let arguments = JsonTemplate::compile(cx, &arguments, Scope::Task, &path.key("call").key("arguments"));
            arguments.map(|arguments| {
                Arc::new(Agent::Call(ToolCallSpec {
                    server: call.server.clone(),
                    tool: call.tool.clone(),
                    arguments,
                    name: format!("{}.{}", call.server, call.tool),
                    expect_error: call.expect.is_error,
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
fn task_eras(
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
struct Trials {
    /// Trials at most.
    repeat: Option<NonZeroU32>,
    /// Adaptive: the trials to start with.
    adaptive: Option<NonZeroU32>,
    min_pass: Option<NonZeroU32>,
}

impl Trials {
    fn of(repeat: Option<super::raw::RawRepeat>, min_pass: Option<NonZeroU32>) -> Trials {
        let (repeat, adaptive) = repeat.map(super::raw::RawRepeat::split).unzip();
        Trials { repeat, adaptive: adaptive.flatten(), min_pass }
    }
}

fn check_trials(cx: &mut ValidateCx, t: Trials, path: &KeyPath) {
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

pub(super) fn is_id(id: &str, allow_underscore: bool) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-' || (allow_underscore && c == '_')
        })
}

fn is_semver(v: &str) -> bool {
    let parts: Vec<&str> = v.split('.').collect();
    parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::{LoadError, LoadOptions, load_suite};

    /// Every error points at the line of the key it names: a key path the position lookup
    /// misses (a wrong key, a list counted wrong) would leave it without one.
    #[test]
    fn every_validation_error_points_at_the_line_of_its_key() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/invalid/every_check.yaml");
        let Err(LoadError::Invalid { diagnostics }) = load_suite(&file, &LoadOptions::default()) else {
            panic!("the fixture must be invalid");
        };
        assert!(diagnostics.len() >= 50, "the fixture no longer breaks every check: {}", diagnostics.len());
        let source = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = source.lines().collect();
        for d in &diagnostics {
            let shown = format!("{}: {}", d.key_path, d.message);
            let position = d.position.unwrap_or_else(|| panic!("no line for {shown}"));
            // A path ending at a key (not at a list item) is found on that key's line, or on
            // the next when its value is a block below it.
            let last = d.key_path.rsplit('.').next().unwrap_or_default();
            if !last.ends_with(']') {
                let (line, above) = (lines[position.line - 1], lines[position.line - 2]);
                let found = line.contains(last) || above.trim_end().ends_with(&format!("{last}:"));
                assert!(found, "{shown}: line {} is `{line}`", position.line);
            }
        }
    }
}
