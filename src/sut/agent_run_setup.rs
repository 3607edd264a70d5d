//! What a trial of an agent process (a command agent, an ACP agent) sets up around it, one
//! function each so both kinds get the same: its working directory, recording proxies to
//! its MCP servers, and the cassette's model endpoint with the variables that point at it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::AgentError;
use super::model_endpoint::{Ended, ModelEndpoint};
use crate::cassette::Cassette;
use crate::mcp::proxy::Proxy;
use crate::mcp::servers::Servers;
use crate::template::{Bindings, Template};
use crate::trace::ToolCall;

/// An agent's argv and variables, rendered for the trial.
pub struct Rendered {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// `command` and `env` rendered for the trial; a step output they use that was not
/// captured is missing (the agent must not run without it).
pub fn render_command(
    bindings: &Bindings,
    command: &[Template],
    env: &[(String, Template)],
) -> Result<Rendered, crate::template::Missing<Rendered>> {
    bindings.render_with(|lookup| Rendered {
        argv: command.iter().map(|t| t.render(lookup)).collect(),
        env: env.iter().map(|(k, t)| (k.clone(), t.render(lookup))).collect(),
    })
}

/// A recording proxy to each of `names`, with its name.
pub async fn start_proxies(servers: &Servers, names: &[String]) -> Result<Vec<(String, Proxy)>, AgentError> {
    let mut proxies = Vec::new();
    for name in names {
        let server = servers.by_name.get(name).cloned().ok_or_else(|| AgentError {
            reason: format!("MCP server `{name}` is not running"),
            run: None,
            agent_fault: false,
        })?;
        let proxy = Proxy::start(server).await.map_err(|e| AgentError {
            reason: format!("cannot start the MCP proxy: {e}"),
            run: None,
            agent_fault: false,
        })?;
        proxies.push((name.clone(), proxy));
    }
    Ok(proxies)
}

/// Stops the proxies; the calls they saw, in the order they were made.
pub fn proxied_calls(proxies: Vec<(String, Proxy)>) -> Vec<ToolCall> {
    let mut proxied: Vec<_> = proxies.into_iter().flat_map(|(_, proxy)| proxy.stop()).collect();
    proxied.sort_by_key(|(at, _)| *at);
    proxied.into_iter().map(|(_, call)| call).collect()
}

/// The cassette's model endpoint for one agent run in `cwd` with variables `env`, when the
/// suite has a cassette: the run's directory and home (its `HOME`, else evalgate's) are
/// volatile text in its requests.
pub async fn start_endpoint(
    cassette: Option<&Arc<Cassette>>,
    cwd: &Path,
    env: &[(String, String)],
) -> Result<Option<ModelEndpoint>, AgentError> {
    let Some(cassette) = cassette else { return Ok(None) };
    let home = env.iter().find(|(k, _)| k == "HOME").map(|(_, v)| PathBuf::from(v));
    let home = home.or_else(|| std::env::var_os("HOME").map(PathBuf::from));
    let volatile = crate::cassette::Volatile::of_run(cwd, home.as_deref()).with(&cassette.normalize);
    let endpoint = ModelEndpoint::start(cassette.clone(), volatile).await.map_err(|e| AgentError {
        reason: format!("cannot start the model endpoint: {e}"),
        run: None,
        agent_fault: false,
    })?;
    Ok(Some(endpoint))
}

/// The agent's variables under the endpoint's: its model calls must not go around it.
pub fn env_under_endpoint(endpoint: Option<&ModelEndpoint>, env: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut all = endpoint.map(ModelEndpoint::env).unwrap_or_default();
    all.extend(env.into_iter().filter(|(k, _)| endpoint.is_none() || !ModelEndpoint::sets(k)));
    all
}

/// The error of a run whose model requests the cassette did not hold: it fails the task,
/// whatever the agent made of the 500 it got.
pub fn missed(ended: Option<&Ended>, agent: &str) -> Option<String> {
    let ended = ended?;
    let miss = ended.misses.first()?;
    let more = match ended.misses.len() - 1 {
        0 => String::new(),
        more => format!(" (and {more} more)"),
    };
    Some(format!("agent `{agent}`: {miss}{more}"))
}

/// The agent's own files, for an agent that runs in a workspace: each argv word that names a
/// file relative to its configured `workdir` (its script) is made absolute, as the working
/// directory is now the workspace, and returned to be readable inside the sandbox.
pub fn own_files(argv: Vec<String>, workdir: &Path) -> (Vec<String>, Vec<PathBuf>) {
    let mut files = Vec::new();
    let argv = argv
        .into_iter()
        .map(|word| {
            let path = workdir.join(&word);
            if word.is_empty() || !path.is_file() {
                return word;
            }
            if Path::new(&word).is_absolute() {
                files.push(path);
                return word;
            }
            files.push(path.clone());
            path.display().to_string()
        })
        .collect();
    (argv, files)
}
