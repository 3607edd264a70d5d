//! `mcp_servers`: an MCP server as written (stdio `command` or streamable HTTP `url`),
//! compiled and checked, for the suite or as a variant arm's replacement, and how to reach it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;

use super::agent::command_argv;
use crate::source::{KeyPath, ValidateCx};
use crate::template::{Scope, Template};

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMcpServer {
    /// stdio: the server's argv.
    pub command: Option<Vec<String>>,
    /// stdio: environment variables of the server; values may use `{env.NAME}`.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// stdio: the server's working directory, relative to the suite.
    pub cwd: Option<String>,
    /// Streamable HTTP: the endpoint, e.g. http://127.0.0.1:3001/mcp.
    pub url: Option<String>,
    /// Streamable HTTP: headers of every request; values may use `{env.NAME}`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Streamable HTTP: OAuth without a browser, for CI: evalgate fetches an access token
    /// (`client_credentials`) and sends it on every request.
    pub auth: Option<super::mcp_auth::RawAuth>,
    /// Tools annotated `destructiveHint: true` (and tools the server does not list) may be
    /// called: by execution-level tasks, steps, graders and agents. Default false: they are
    /// not offered to agents and every call to one is refused.
    #[serde(default)]
    pub allow_side_effects: bool,
    /// Its handshake, `tools/list` and `tools/call` results go through the suite's cassette:
    /// recorded with `--record`, replayed without starting it (docs/cassettes.md).
    #[serde(default)]
    pub cassette: bool,
    /// A tools lock file (`evalgate mcp snapshot`), relative to the suite: the run compares
    /// the server's live tool surface with it and gates on the drift (`--update-snapshot`
    /// rewrites it).
    pub snapshot: Option<String>,
    /// How much drift from `snapshot` fails the gate.
    #[serde(default)]
    pub drift: RawDrift,
    /// The MCP protocol versions to speak: `auto` (default: `server/discover`, falling back
    /// to `initialize`), one version (`2025-11-25`), or a list: every task that uses the
    /// server then runs once per version (`task@2025-11-25`), reported per version.
    pub protocol: Option<crate::mcp::protocol::RawProtocol>,
    /// Hold the server's `tools/list` to the spec, as a gate check (on `run` and `check`):
    /// valid JSON Schemas of objects, unique names that follow the name rules, the
    /// 2026-07-28 cache hints, and annotation heuristics (a tool whose name or description
    /// says it writes, deletes or sends should be annotated so).
    pub lint: Option<crate::mcp::lint::RawLint>,
    /// Gate on the official MCP conformance suite (`@modelcontextprotocol/conformance`).
    pub conformance: Option<crate::mcp::conformance::RawConformance>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawDrift {
    /// The least class of change that fails: `breaking` (default: a tool or parameter
    /// removed, a parameter made required, a type narrowed, an output field removed),
    /// `review` (also a description or annotation changed, a tool added) or `never`.
    #[serde(default)]
    pub fail_on: crate::mcp::surface::FailOn,
}

#[derive(Debug, Clone)]
pub struct McpServer {
    pub name: String,
    /// stdio: the argv, `{vars.X}` bound; `{env.X}` is rendered when it starts.
    pub command: Option<Vec<Template>>,
    pub env: Vec<(String, Template)>,
    pub cwd: PathBuf,
    pub url: Option<Template>,
    pub headers: Vec<(String, Template)>,
    /// `auth.client_credentials`: the token every request carries (HTTP servers only).
    pub auth: Option<super::mcp_auth::ClientCredentialsSpec>,
    pub allow_side_effects: bool,
    /// `cassette: true`: its traffic goes through the suite's cassette.
    pub cassette: bool,
    /// The tools lock file to gate drift on: resolved, and as written.
    pub snapshot: Option<(PathBuf, String)>,
    pub fail_on: crate::mcp::surface::FailOn,
    pub protocol: crate::mcp::protocol::Protocol,
    /// `lint`: how its tool list is linted, if it is.
    pub lint: Option<crate::mcp::lint::Settings>,
    /// `conformance`: the official conformance suite's checks become tasks.
    pub conformance: Option<crate::mcp::conformance::Conformance>,
    /// The arm whose tasks see this server in place of the suite's of the same name.
    pub arm: Option<String>,
}

impl McpServer {
    /// What starting it takes.
    pub fn spec(&self) -> crate::mcp::servers::ServerSpec {
        crate::mcp::servers::ServerSpec {
            name: self.name.clone(),
            endpoint: self.endpoint(),
            allow_side_effects: self.allow_side_effects,
            protocol: self.protocol.clone(),
            cassette: None,
            arm: self.arm.clone(),
        }
    }

    /// How to reach it, with `{env.X}` rendered (an unset variable renders empty).
    pub fn endpoint(&self) -> crate::mcp::session::Endpoint {
        use crate::mcp::session::Endpoint;
        let env = crate::template::env_only;
        match (&self.command, &self.url) {
            (Some(command), _) => Endpoint::Stdio {
                command: command.iter().map(|t| t.render(&env)).collect(),
                env: self.env.iter().map(|(k, t)| (k.clone(), t.render(&env))).collect(),
                cwd: self.cwd.clone(),
            },
            (None, url) => Endpoint::Http {
                url: url.as_ref().map(|t| t.render(&env)).unwrap_or_default(),
                headers: self.headers.iter().map(|(k, t)| (k.clone(), t.render(&env))).collect(),
                auth: self.auth.as_ref().map(|a| a.render(&env)),
            },
        }
    }
}

pub(in crate::suite) fn mcp_server(cx: &mut ValidateCx, name: &str, raw: &RawMcpServer) -> Option<McpServer> {
    mcp_server_at(cx, name, raw, &KeyPath::root("mcp_servers").key(name))
}

/// The server `name` as written at `path` (the suite's, or an arm's replacement).
pub(super) fn mcp_server_at(cx: &mut ValidateCx, name: &str, raw: &RawMcpServer, path: &KeyPath) -> Option<McpServer> {
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
