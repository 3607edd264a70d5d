//! What a whole suite uses, kind by kind, each with the place a message names: the fold
//! behind preflight's environment checks, the `::add-mask::` lines and the redactor.

use super::model::{Agent, McpServer, Suite, Task};
use crate::grade::Grader;
use crate::llm::spec::LlmSpec;
use crate::redact::Secret;
use crate::step::Step;
use crate::template::Template;
use crate::uses::{Program, ProgramCommand, SecretKind, Uses, render_static};

/// Where something is used, as a message names it (its `Display`): "task `t1`", "agent
/// `a`". Named only when a message needs it: a suite of 10,000 tasks is folded on every
/// `check` and run, and most places are never named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place<'a> {
    Agent(&'a str),
    McpServer(&'a str),
    Extension(&'a str),
    Judge,
    Hooks,
    Task(&'a str),
}

impl std::fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Agent(name) => write!(f, "agent `{name}`"),
            Place::McpServer(name) => write!(f, "MCP server `{name}`"),
            Place::Extension(name) => write!(f, "extension `{name}`"),
            Place::Judge => f.write_str("the judge"),
            Place::Hooks => f.write_str("hooks"),
            Place::Task(id) => write!(f, "task `{id}`"),
        }
    }
}

/// Everything the suite uses, by place, in suite order.
pub fn suite_uses(suite: &Suite) -> Vec<(Place<'_>, Uses<'_>)> {
    let mut all = Vec::new();
    for agent in suite.agents.values() {
        all.push((Place::Agent(agent.name()), agent_uses(agent)));
    }
    for server in suite.mcp_servers.values() {
        all.push((Place::McpServer(&server.name), server_uses(server)));
    }
    for (name, extension) in &suite.extensions {
        let env = extension.env.iter().map(|(_, t)| t);
        all.push((Place::Extension(name), Uses::templates(extension.config.templates().into_iter().chain(env))));
    }
    if let Some(judge) = &suite.judge {
        all.push((Place::Judge, model_uses(judge)));
    }
    let hooks: Uses = suite.before_all.iter().chain(&suite.after_all).map(Step::uses).collect();
    all.push((Place::Hooks, hooks));
    all.extend(suite.tasks.iter().map(|t| (Place::Task(&t.id), task_uses(t))));
    all
}

fn agent_uses(agent: &Agent) -> Uses<'_> {
    match agent {
        Agent::Command(a) => program_uses("agent command", &a.command, &a.env, &a.workdir),
        Agent::Acp(a) => program_uses("ACP agent command", &a.command, &a.env, &a.workdir),
        Agent::Llm(a) => model_uses(&a.spec),
        // Its secrets are the `{env.NAME}` it reads: a header as written is the suite's text,
        // and hiding a value rendered without its variables would hide a piece of the key.
        Agent::Http(a) => Uses::templates(a.templates().chain(a.headers.iter().map(|(_, t)| t))),
        // Its arguments belong to its task.
        Agent::Call(_) => Uses::default(),
    }
}

/// An agent program's argv and variables, and the program looked up in `workdir`.
fn program_uses<'a>(
    what: &'static str,
    command: &'a [Template],
    env: &'a [(String, Template)],
    workdir: &'a std::path::Path,
) -> Uses<'a> {
    Uses {
        programs: vec![Program { what, command: ProgramCommand::Argv0(&command[0]), workdir: Some(workdir) }],
        ..Uses::templates(command.iter().chain(env.iter().map(|(_, t)| t)))
    }
}

/// A model's endpoint and headers (whose values are secrets), its API key and its
/// calibration file; a judge's embedding model's too.
fn model_uses(spec: &LlmSpec) -> Uses<'_> {
    let mut uses = Uses::templates(&spec.base_url).and(Uses::headers(&spec.headers));
    uses.secret_env.push(&spec.api_key_env);
    uses.files.extend(spec.calibration.iter().map(|c| c.file.as_path()));
    match &spec.embedding {
        Some(embedding) => uses.and(model_uses(embedding)),
        None => uses,
    }
}

/// What one task reaches: its own uses with its agent's, those of the MCP servers it
/// calls, names or is offered (and the server of its protocol era), and the suite's
/// judge's when a grader asks it. What a task's fingerprint is built from.
pub struct TaskReach<'a> {
    pub uses: Uses<'a>,
    /// The MCP servers it reaches, by name.
    pub servers: std::collections::BTreeSet<&'a str>,
    /// A grader asks the suite's judge.
    pub suite_judge: bool,
}

pub fn task_reach<'a>(suite: &'a Suite, task: &'a Task) -> TaskReach<'a> {
    let own = task_uses(task);
    let mut servers: std::collections::BTreeSet<&str> = own.mcp_tools.iter().map(|(s, _)| *s).collect();
    servers.extend(own.offered.iter().copied());
    servers.extend(own.tool_names.iter().filter_map(|(s, _)| *s));
    servers.extend(task.era.as_ref().map(|era| era.server.as_str()));
    let suite_judge = own.judges.iter().any(|j| matches!(j, crate::uses::Judge::SuiteDefault));
    let mut uses = own.and(agent_uses(&task.agent));
    for server in servers.iter().filter_map(|name| suite.mcp_servers.get(*name)) {
        uses = uses.and(server_uses(server));
    }
    if let Some(judge) = suite.judge.as_ref().filter(|_| suite_judge) {
        uses = uses.and(model_uses(judge));
    }
    TaskReach { uses, servers, suite_judge }
}

fn server_uses(server: &McpServer) -> Uses<'_> {
    let argv = server.command.iter().flatten();
    let mut uses = Uses::templates(server.url.iter().chain(argv).chain(server.env.iter().map(|(_, t)| t)))
        .and(Uses::headers(&server.headers));
    // Looked up with the agents' programs, not only when the servers start after preflight.
    let program = server.command.iter().flatten().next();
    uses.programs = program
        .map(|p| Program { what: "MCP server command", command: ProgramCommand::Argv0(p), workdir: Some(&server.cwd) })
        .into_iter()
        .collect();
    match &server.auth {
        Some(auth) => uses.and(auth.uses()),
        None => uses,
    }
}

/// The task's prompt, steps, graders (and their own judges' models), tool call and the
/// servers its model agent is offered.
fn task_uses(task: &Task) -> Uses<'_> {
    let steps = task.setup.iter().chain(&task.cleanup).map(Step::uses);
    let mut uses: Uses = steps.chain(task.all_graders().map(Grader::uses)).collect();
    let judges: Vec<Uses> = uses.own_judges().map(model_uses).collect();
    uses = judges.into_iter().fold(uses, Uses::and).and(Uses::templates(task.prompt.templates()));
    if let Some(conversation) = &task.conversation {
        uses = uses.and(Uses::templates(conversation.turns.iter().map(|t| &t.prompt)));
        // The simulated user's model is asked as an agent's is: its key, its URL.
        if let Some(user) = &conversation.simulated_user {
            uses = uses.and(model_uses(&user.spec));
        }
    }
    match &*task.agent {
        Agent::Call(call) => {
            uses.mcp_tools.push((&call.server, &call.tool));
            uses.and(Uses::templates(call.arguments.templates()))
        }
        Agent::Llm(agent) => Uses { offered: agent.mcp.iter().map(String::as_str).collect(), ..uses },
        Agent::Command(_) | Agent::Acp(_) | Agent::Http(_) => uses,
    }
}

/// The secret values the suites carry, as set now: every `{env.X}` read anywhere, the
/// required variables and API keys, header values and canaries (those that depend on a
/// task are not known before it runs). Canaries are numbered across the run.
/// `suites`: each with its [`suite_uses`].
pub fn secrets<'a>(suites: impl IntoIterator<Item = (&'a Suite, &'a [(Place<'a>, Uses<'a>)])>) -> Vec<Secret> {
    let mut secrets = Vec::new();
    let mut canaries: Vec<String> = Vec::new();
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty()).map(|v| Secret::env(name, v));
    for (suite, all) in suites {
        secrets.extend(suite.env.env_vars.iter().filter_map(|n| env(n)));
        for (_, uses) in all {
            secrets.extend(uses.env_vars().chain(uses.secret_env.iter().copied()).filter_map(env));
            for secret in &uses.secrets {
                let Some(value) = render_static(secret.template).filter(|v| !v.is_empty()) else { continue };
                let placeholder = match secret.kind {
                    SecretKind::Header(name) => format!("[secret:header {name}]"),
                    SecretKind::Canary => {
                        let n = canaries.iter().position(|c| *c == value).unwrap_or_else(|| {
                            canaries.push(value.clone());
                            canaries.len() - 1
                        });
                        format!("[canary #{}]", n + 1)
                    }
                };
                secrets.push(Secret { value, placeholder });
            }
        }
    }
    secrets.sort_by(|a, b| a.value.cmp(&b.value));
    secrets.dedup_by(|a, b| a.value == b.value);
    secrets
}
