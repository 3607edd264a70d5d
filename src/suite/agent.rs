//! Agents: a command (any CLI that takes a prompt and prints an answer) or a model behind
//! a provider; as written, compiled, and checked (for the suite and for a variant arm).

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::llm::spec::{LlmSpec, embeds_model, llm_spec};
use crate::source::{KeyPath, ValidateCx};
use crate::template::{Scope, Template};
use crate::values::RawDuration;

crate::llm::spec::model_keys!(embeds_model! {
    /// An agent: a command (any CLI that takes a prompt and prints an answer on stdout), a
    /// coding agent over the Agent Client Protocol (`acp`), or a model reached through a
    /// provider (`provider` + `model`).
    pub struct RawAgent read as RawAgentWritten = "RawAgentWritten" {
        /// argv; may use `{prompt}` and `{prompt_file}`.
        pub command: Option<Vec<String>>,
        /// A coding agent spoken to over the Agent Client Protocol.
        pub acp: Option<super::acp_agent::RawAcp>,
        /// An HTTP endpoint: one request a trial, its answer the output.
        pub http: Option<super::http_agent::RawHttpAgent>,
        /// Write the prompt to the agent's stdin.
        #[serde(default)]
        pub stdin: bool,
        /// Environment variables of the command; values may use `{env.NAME}`.
        #[serde(default)]
        pub env: BTreeMap<String, String>,
        /// The command's (or ACP session's) working directory, relative to the suite (default:
    /// the suite's directory).
        pub workdir: Option<String>,
        /// How long a task may run this agent (default: `defaults.timeout`, else 5m).
        pub timeout: Option<RawDuration>,
        /// Turns of the tool-calling loop (scenario level, default 8).
        pub max_turns: Option<NonZeroU32>,
        /// MCP servers whose tools the model is offered (invocation and scenario levels).
        pub mcp: Option<Vec<String>>,
        /// With `cache: true`, serve a repeated task's trials after the first from the cache as
        /// well (default false: cached repeats are not independent trials).
        pub cache_repeats: Option<bool>,
        /// Function tools the model is offered whose calls are never run: it answers once,
        /// and its output is then its calls as the provider's API gave them (OpenAI chat:
        /// the `tool_calls` list), which promptfoo's `is-valid-openai-tools-call` checks.
        pub declared_tools: Option<Vec<RawDeclaredTool>>,
        /// With `declared_tools`: `auto` (the default: the model chooses), `none`,
        /// `required`, or `{name: TOOL}`.
        pub tool_choice: Option<crate::llm::types::ToolChoice>,
    }
});

/// A function tool a model agent declares (`declared_tools`): offered, never run.
#[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawDeclaredTool {
    /// The function's name.
    pub name: String,
    /// What it does, as the model is told.
    pub description: Option<String>,
    /// The JSON Schema of its arguments (an object); none: the function takes none.
    pub parameters: Option<serde_json::Value>,
}

/// A system under test.
#[derive(Debug)]
pub enum Agent {
    Command(CommandAgent),
    /// A coding agent over the Agent Client Protocol.
    Acp(super::acp_agent::AcpAgent),
    Llm(LlmAgent),
    /// An HTTP endpoint, one request a trial.
    Http(super::http_agent::HttpAgent),
    /// An execution-level task's one `tools/call`.
    Call(ToolCallSpec),
}

impl Agent {
    pub fn name(&self) -> &str {
        match self {
            Agent::Command(a) => &a.name,
            Agent::Acp(a) => &a.name,
            Agent::Llm(a) => &a.name,
            Agent::Http(a) => &a.name,
            Agent::Call(c) => &c.name,
        }
    }

    pub fn timeout(&self) -> Option<Duration> {
        match self {
            Agent::Command(a) => a.timeout,
            Agent::Acp(a) => a.timeout,
            Agent::Llm(a) => a.spec.timeout,
            Agent::Http(a) => a.timeout,
            Agent::Call(_) => None,
        }
    }
}

#[derive(Debug)]
pub struct ToolCallSpec {
    pub server: String,
    pub tool: String,
    /// Strings are templates, rendered for each trial.
    pub arguments: crate::template::JsonTemplate,
    /// `server.tool`, shown as the agent.
    pub name: String,
    /// `call.expect.is_error`: the tool must return a tool error.
    pub expect_error: bool,
    /// Where `arguments` are written: their key path and line, for preflight's check of
    /// them against the tool's input schema.
    pub arguments_at: (crate::source::KeyPath, Option<usize>),
}

#[derive(Debug)]
pub struct CommandAgent {
    pub name: String,
    /// MCP servers reached through evalgate's recording proxy.
    pub mcp: Vec<String>,
    pub command: Vec<Template>,
    pub stdin: bool,
    pub env: Vec<(String, Template)>,
    pub workdir: PathBuf,
    pub timeout: Option<Duration>,
}

/// The built-in model agent.
#[derive(Debug)]
pub struct LlmAgent {
    pub name: String,
    pub spec: LlmSpec,
    pub max_turns: NonZeroU32,
    /// With `cache: true`, trials after a task's first are served from the cache too.
    pub cache_repeats: bool,
    /// MCP servers whose tools the model is offered.
    pub mcp: Vec<String>,
    /// Function tools offered and never run (`declared_tools`), with `tool_choice`.
    pub declared_tools: Vec<crate::llm::types::ToolDef>,
    pub tool_choice: Option<crate::llm::types::ToolChoice>,
}

/// Turns of a model agent's tool-calling loop when it sets no `max_turns`.
pub const DEFAULT_MAX_TURNS: NonZeroU32 = NonZeroU32::new(8).unwrap();

pub(super) fn compile_agents(cx: &mut ValidateCx, raw: BTreeMap<String, RawAgent>) -> BTreeMap<String, Arc<Agent>> {
    raw.into_iter()
        .filter_map(|(name, agent)| {
            let agent = validate_agent(cx, &name, agent)?;
            Some((name, Arc::new(agent)))
        })
        .collect()
}

pub(super) fn validate_agent(cx: &mut ValidateCx, name: &str, raw: RawAgent) -> Option<Agent> {
    let path = KeyPath::root("agents").key(name);
    let mcp = raw.mcp.clone().unwrap_or_default();
    for (i, server) in mcp.iter().enumerate() {
        cx.known_mcp_server(&path.key("mcp").index(i), server);
    }
    if let Some(acp) = &raw.acp {
        let given = [
            ("command", raw.command.is_some()),
            ("http", raw.http.is_some()),
            ("stdin", raw.stdin),
            ("env", !raw.env.is_empty()),
            ("max_turns", raw.max_turns.is_some()),
            ("cache_repeats", raw.cache_repeats.is_some()),
            ("declared_tools", raw.declared_tools.is_some()),
            ("tool_choice", raw.tool_choice.is_some()),
        ];
        let keys = raw.model.given().into_iter().chain(given.into_iter().filter_map(|(k, given)| given.then_some(k)));
        for key in keys {
            let said =
                if key == "env" || key == "model" { format!(" (write it in `acp.{key}`)") } else { String::new() };
            cx.error(&path.key(key), format!("`{key}` does not belong to an ACP agent{said}"));
        }
        let workdir = raw.workdir.as_ref().map_or_else(|| cx.dir.clone(), |w| cx.resolve_path(w));
        let rest = (mcp, workdir, raw.timeout.map(|d| d.0));
        return super::acp_agent::compile_acp(cx, name, acp, &path.key("acp"), rest).map(Agent::Acp);
    }
    if let Some(http) = &raw.http {
        let given = [
            ("command", raw.command.is_some()),
            ("stdin", raw.stdin),
            ("env", !raw.env.is_empty()),
            ("workdir", raw.workdir.is_some()),
            ("max_turns", raw.max_turns.is_some()),
            ("mcp", raw.mcp.is_some()),
            ("cache_repeats", raw.cache_repeats.is_some()),
        ];
        let keys = raw.model.given().into_iter().chain(given.into_iter().filter_map(|(k, given)| given.then_some(k)));
        for key in keys {
            cx.error(&path.key(key), format!("`{key}` does not belong to an http agent"));
        }
        let timeout = raw.timeout.map(|d| d.0);
        return super::http_agent::compile_http(cx, name, http, &path.key("http"), timeout).map(Agent::Http);
    }
    let Some(command) = &raw.command else {
        if raw.model.provider.is_none() {
            cx.error(
                &path,
                "an agent needs `command` (a CLI), `acp` (an ACP agent), `http` (an HTTP endpoint) or `provider` and `model` (a model)",
            );
            return None;
        }
        if raw.stdin || !raw.env.is_empty() || raw.workdir.is_some() {
            cx.error(&path, "`stdin`, `env` and `workdir` belong to command agents");
        }
        if raw.cache_repeats == Some(true) && raw.model.cache != Some(true) {
            cx.error(&path.key("cache_repeats"), "`cache_repeats` needs `cache: true`");
        }
        let spec = llm_spec(cx, &raw.model, raw.timeout, &path);
        let declared_tools = declared_tools(cx, &raw, &path);
        return Some(Agent::Llm(LlmAgent {
            name: name.to_owned(),
            spec: spec?,
            max_turns: raw.max_turns.unwrap_or(DEFAULT_MAX_TURNS),
            cache_repeats: raw.cache_repeats.unwrap_or(false),
            mcp,
            declared_tools,
            tool_choice: raw.tool_choice,
        }));
    };
    let model_keys = raw.model.given().into_iter().chain(
        [
            ("max_turns", raw.max_turns.is_some()),
            ("cache_repeats", raw.cache_repeats.is_some()),
            ("declared_tools", raw.declared_tools.is_some()),
            ("tool_choice", raw.tool_choice.is_some()),
        ]
        .into_iter()
        .filter_map(|(key, given)| given.then_some(key)),
    );
    if let Some(key) = model_keys.into_iter().next() {
        cx.error(&path.key(key), format!("`{key}` belongs to model agents, and this one has a `command`"));
    }
    let command = command_argv(cx, command, Scope::Agent, &path.key("command"));
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

/// A model agent's `declared_tools` and `tool_choice`, checked: names given once, arguments
/// schemas objects, a chosen tool declared, and no MCP servers beside them (whose calls run).
fn declared_tools(cx: &mut ValidateCx, raw: &RawAgent, path: &KeyPath) -> Vec<crate::llm::types::ToolDef> {
    use crate::llm::types::{ToolChoice, ToolDef};
    let declared = raw.declared_tools.clone().unwrap_or_default();
    let at = path.key("declared_tools");
    if raw.declared_tools.is_some() && raw.mcp.as_ref().is_some_and(|m| !m.is_empty()) {
        cx.error(&at, "`declared_tools` are never run and `mcp` tools are: give one or the other");
    }
    let mut tools: Vec<ToolDef> = Vec::new();
    for (i, tool) in declared.into_iter().enumerate() {
        if tool.name.is_empty() || tools.iter().any(|t| t.name == tool.name) {
            cx.error(&at.index(i).key("name"), format!("the tool name `{}` is empty or given twice", tool.name));
        }
        if tool.parameters.as_ref().is_some_and(|p| !p.is_object()) {
            cx.error(&at.index(i).key("parameters"), "`parameters` is a JSON Schema object");
        }
        let parameters = tool.parameters.unwrap_or(serde_json::Value::Null);
        tools.push(ToolDef { name: tool.name, description: tool.description.unwrap_or_default(), parameters });
    }
    match &raw.tool_choice {
        Some(_) if raw.declared_tools.is_none() => {
            cx.error(&path.key("tool_choice"), "`tool_choice` needs `declared_tools`");
        }
        Some(ToolChoice::Tool { name }) if !tools.iter().any(|t| &t.name == name) => {
            cx.error(&path.key("tool_choice").key("name"), format!("`{name}` is not among `declared_tools`"));
        }
        _ => {}
    }
    tools
}

/// A program's argv as written at `path` (an agent's or an MCP server's `command`): not
/// empty, compiled as an argv list (no value is the program or code it runs; `{vars.X}`
/// bound), and the program's name uses no variable.
pub(super) fn command_argv(
    cx: &mut ValidateCx,
    command: &[String],
    scope: Scope,
    path: &KeyPath,
) -> Option<Vec<Template>> {
    if command.is_empty() {
        cx.error(path, "the command is empty");
    }
    let argv = cx.argv(command, scope, path);
    if argv.as_ref().and_then(|a| a.first()).is_some_and(|program| program.vars().next().is_some()) {
        cx.error(&path.index(0), "the program name cannot use variables");
    }
    argv
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::RawAgent;
    use crate::llm::spec::RawJudge;
    use crate::llm::spec::RawModel;

    fn keys_of<T: schemars::JsonSchema>() -> BTreeSet<String> {
        let schema = schemars::schema_for!(T);
        schema.get("properties").and_then(serde_json::Value::as_object).unwrap().keys().cloned().collect()
    }

    /// The model keys are written once (`llm::spec::model_keys!`); agents and judges read
    /// them all, beside their own.
    #[test]
    fn agents_and_judges_have_the_same_model_keys() {
        let model: BTreeSet<String> = RawModel::KEYS.iter().map(|k| (*k).to_owned()).collect();
        let judge_only = ["timeout", "calibration", "embedding"];
        let mut expected = model.clone();
        expected.extend(judge_only.map(String::from));
        assert_eq!(keys_of::<RawJudge>(), expected);
        let agent_only = [
            "command",
            "acp",
            "http",
            "stdin",
            "env",
            "workdir",
            "timeout",
            "max_turns",
            "mcp",
            "cache_repeats",
            "declared_tools",
            "tool_choice",
        ];
        let mut expected = model;
        expected.extend(agent_only.map(String::from));
        assert_eq!(keys_of::<RawAgent>(), expected);
    }
}
