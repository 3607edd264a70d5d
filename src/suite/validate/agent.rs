//! Agents and MCP servers, as a suite (or a variant arm) defines them.

use super::super::model::{Agent, CommandAgent, DEFAULT_MAX_TURNS, LlmAgent, McpServer};
use super::super::raw::RawAgent;
use crate::llm::spec::llm_spec;
use crate::source::{KeyPath, ValidateCx};
use crate::template::{Scope, Template};

pub(super) fn validate_agent(cx: &mut ValidateCx, name: &str, raw: RawAgent) -> Option<Agent> {
    let path = KeyPath::root("agents").key(name);
    let mcp = raw.mcp.clone().unwrap_or_default();
    for (i, server) in mcp.iter().enumerate() {
        cx.known_mcp_server(&path.key("mcp").index(i), server);
    }
    let Some(command) = &raw.command else {
        if raw.model.provider.is_none() {
            cx.error(&path, "an agent needs `command` (a CLI) or `provider` and `model` (a model)");
            return None;
        }
        if raw.stdin || !raw.env.is_empty() || raw.workdir.is_some() {
            cx.error(&path, "`stdin`, `env` and `workdir` belong to command agents");
        }
        if raw.cache_repeats == Some(true) && raw.model.cache != Some(true) {
            cx.error(&path.key("cache_repeats"), "`cache_repeats` needs `cache: true`");
        }
        let spec = llm_spec(cx, &raw.model, raw.timeout, &path);
        return Some(Agent::Llm(LlmAgent {
            name: name.to_owned(),
            spec: spec?,
            max_turns: raw.max_turns.unwrap_or(DEFAULT_MAX_TURNS),
            cache_repeats: raw.cache_repeats.unwrap_or(false),
            mcp,
        }));
    };
    let model_keys = raw.model.given().into_iter().chain(
        [("max_turns", raw.max_turns.is_some()), ("cache_repeats", raw.cache_repeats.is_some())]
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

pub(in crate::suite) fn mcp_server(
    cx: &mut ValidateCx,
    name: &str,
    raw: &super::super::raw::RawMcpServer,
) -> Option<McpServer> {
    mcp_server_at(cx, name, raw, &KeyPath::root("mcp_servers").key(name))
}

/// A program's argv as written at `path` (an agent's or an MCP server's `command`): not
/// empty, compiled as an argv list (no value is the program or code it runs; `{vars.X}`
/// bound), and the program's name uses no variable.
fn command_argv(cx: &mut ValidateCx, command: &[String], scope: Scope, path: &KeyPath) -> Option<Vec<Template>> {
    if command.is_empty() {
        cx.error(path, "the command is empty");
    }
    let argv = cx.argv(command, scope, path);
    if argv.as_ref().and_then(|a| a.first()).is_some_and(|program| program.vars().next().is_some()) {
        cx.error(&path.index(0), "the program name cannot use variables");
    }
    argv
}

/// The server `name` as written at `path` (the suite's, or an arm's replacement).
pub(super) fn mcp_server_at(
    cx: &mut ValidateCx,
    name: &str,
    raw: &super::super::raw::RawMcpServer,
    path: &KeyPath,
) -> Option<McpServer> {
    let path = path.clone();
    let (command, url) = match (&raw.command, &raw.url) {
        // Rendered as an agent's command is: `{vars.X}` at load, `{env.X}` when it starts.
        (Some(c), None) => (Some(command_argv(cx, c, Scope::Hook, &path.key("command"))?), None),
        (None, Some(url)) => (None, Some(cx.template(url, Scope::Hook, &path.key("url"))?)),
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
    let auth =
        raw.auth.as_ref().map(|auth| super::super::mcp_auth::compile(cx, auth, &path, raw.url.is_some(), &raw.headers));
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
        command,
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
