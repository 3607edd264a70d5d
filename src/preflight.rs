//! Preflight: everything the environment must provide, checked before any task runs.
//! Every miss is listed at once.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use crate::grade::Grader;
use crate::llm::spec::LlmSpec;
use std::sync::Arc;

use crate::cassette::Cassette;
use crate::mcp::servers::{ServerSpec, Servers};
use crate::suite::model::{Agent, Suite};
use crate::suite::uses::{Place, suite_uses};
use crate::template::Var;
use crate::uses::{Uses, render_static};
use crate::workspace::Isolation;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Miss {
    pub kind: &'static str,
    pub name: String,
    pub detail: String,
}

#[derive(Debug, thiserror::Error)]
pub struct PreflightError {
    pub file: String,
    pub misses: Vec<Miss>,
}

impl fmt::Display for PreflightError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "preflight failed for {}: {} missing", self.file, self.misses.len())?;
        for m in &self.misses {
            writeln!(f, "  - {} `{}`: {}", m.kind, m.name, m.detail)?;
        }
        write!(f, "nothing ran")
    }
}

/// Each server with `lint`, at each protocol version it was started at: its tool list held
/// to the spec (`mcp::lint`), by the name results record it under.
pub async fn lint_servers(
    suite: &Suite,
    servers: &crate::mcp::servers::Servers,
) -> std::collections::BTreeMap<String, crate::mcp::lint::Lint> {
    let mut lints = std::collections::BTreeMap::new();
    for (name, server) in &servers.instances {
        let Some(settings) = suite.mcp_servers.get(&server.name).and_then(|s| s.lint) else { continue };
        if server.down.is_some() {
            continue;
        }
        lints.insert(name.clone(), crate::mcp::lint::lint(server, settings, crate::mcp::servers::START_TIMEOUT).await);
    }
    lints
}

/// Starts the suite's MCP servers and checks every tool the suite names exists (with a
/// "did you mean" from the real list) and that its server does not refuse it (a destructive
/// tool without `allow_side_effects`): a step or grader that would be refused at run time
/// is reported before anything runs. The servers stay up for the run.
pub async fn start_servers(suite: &Suite, cassette: Option<&Arc<Cassette>>) -> Result<Servers, PreflightError> {
    let file = suite.file.display().to_string();
    let specs = suite
        .mcp_servers
        .values()
        .map(|s| ServerSpec { cassette: cassette.filter(|_| s.cassette).cloned(), ..s.spec() });
    let servers = Servers::start(specs).await.map_err(|(name, e)| PreflightError {
        file: file.clone(),
        misses: vec![Miss { kind: "MCP server", name, detail: format!("did not start: {e}") }],
    })?;
    let mut misses = Vec::new();
    for (place, uses) in suite_uses(suite) {
        for &(server_name, tool) in &uses.mcp_tools {
            let Some(server) = servers.by_name.get(server_name) else { continue };
            if !server.tools.iter().any(|t| t.name == tool) {
                misses.push(unknown_tool(server_name, server, tool, place));
            } else if let Some(why) = server.refusal(tool) {
                misses.push(Miss {
                    kind: "MCP tool",
                    name: format!("{server_name}.{tool}"),
                    detail: format!("{why} ({place})"),
                });
            }
        }
        named_tools(&uses, &servers, place, &mut misses);
    }
    call_arguments(suite, &servers, &mut misses);
    if misses.is_empty() {
        Ok(servers)
    } else {
        servers.close().await;
        Err(PreflightError { file, misses })
    }
}

/// How long an extension has to start and send its manifest.
const EXTENSION_START: std::time::Duration = std::time::Duration::from_secs(30);

/// Starts the suite's extensions (each binary found, and a pinned one verified, first) and
/// checks every operation a step calls against its manifest: an operation it does not list
/// and arguments as written that its schema refuses are reported before anything runs. The
/// extensions stay up for the run; on a miss every one started is shut down.
pub async fn start_extensions(suite: &Suite) -> Result<crate::extension::Running, PreflightError> {
    use crate::extension::{Extension, Launch, package, params};
    let mut running = crate::extension::Running::default();
    if suite.extensions.is_empty() {
        return Ok(running);
    }
    let file = suite.file.display().to_string();
    let miss = |name: &str, detail: String| Miss { kind: "extension", name: name.to_owned(), detail };
    let private = tempfile::Builder::new().prefix("evalgate-extensions-").tempdir().map_err(|e| PreflightError {
        file: file.clone(),
        misses: vec![miss("*", format!("cannot create a private directory for the binaries: {e}"))],
    })?;
    let cache = package::cache_dir();
    let env = crate::template::env_only;
    let mut misses = Vec::new();
    for (name, spec) in &suite.extensions {
        let pin = match &spec.sha256 {
            Some(Err(why)) => {
                misses.push(miss(name, why.clone()));
                continue;
            }
            Some(Ok(sum)) => Some(sum.as_str()),
            None => None,
        };
        let program = match package::resolve(&spec.package, pin, &cache, private.path()) {
            Ok(program) => program,
            Err(why) => {
                misses.push(miss(name, format!("{} ({why})", spec.written)));
                continue;
            }
        };
        let launch = Launch {
            alias: name.clone(),
            program,
            env: spec.env.iter().map(|(k, t)| (k.clone(), t.render(&env))).collect(),
            cwd: spec.dir.clone(),
            config: spec.config.render(&env),
        };
        match Extension::start(&launch, EXTENSION_START).await {
            Ok(extension) => {
                running.by_name.insert(name.clone(), extension);
                let verified = pin.map(|sum| format!("sha256:{}", sum.strip_prefix("sha256:").unwrap_or(sum)));
                running.packages.insert(name.clone(), (spec.written.clone(), verified));
            }
            Err(e) => misses.push(miss(name, format!("did not start: {e}"))),
        }
    }
    for (place, uses) in suite_uses(suite) {
        for call in &uses.extension_calls {
            let Some(extension) = running.get(call.name) else { continue };
            for problem in params::preflight(call, &extension.manifest) {
                let name = format!("{}.{}", call.name, call.operation);
                misses.push(Miss { kind: "extension operation", name, detail: format!("{problem} ({place})") });
            }
        }
    }
    if misses.is_empty() {
        running.private = Some(private);
        Ok(running)
    } else {
        running.shutdown().await;
        Err(PreflightError { file, misses })
    }
}

/// The tools named (not called) where `uses` are, each found in its server's list (named as
/// `server.tool` or with `server:`); a bare name is looked for in the servers a model agent
/// is offered (`Uses::offered`), whose only tools they are. Only calling a tool can be
/// refused: naming a destructive one (to check it was not called) is fine.
fn named_tools(uses: &Uses<'_>, servers: &Servers, place: Place<'_>, misses: &mut Vec<Miss>) {
    for &(server, tool) in &uses.tool_names {
        let (server_name, tool) = match (server, tool.split_once('.')) {
            (Some(s), _) => (s, tool),
            (None, Some((s, t))) if servers.by_name.contains_key(s) => (s, t),
            (None, _) => {
                if uses.offered.is_empty() {
                    continue;
                }
                let lists: Vec<&str> = (uses.offered.iter())
                    .filter_map(|n| servers.by_name.get(*n))
                    .flat_map(|s| s.tools.iter().map(|t| t.name.as_str()))
                    .collect();
                if !lists.contains(&tool) {
                    misses.push(Miss {
                        kind: "MCP tool",
                        name: tool.to_owned(),
                        detail: format!(
                            "no server of its agent (`{}`) has such a tool ({place}); {}",
                            uses.offered.join("`, `"),
                            help(tool, &lists)
                        ),
                    });
                }
                continue;
            }
        };
        let Some(server) = servers.by_name.get(server_name) else { continue };
        if !server.tools.iter().any(|t| t.name == tool) {
            misses.push(unknown_tool(server_name, server, tool, place));
        }
    }
}

/// Each task `call`'s arguments against its tool's input schema (`mcp::tool_arguments`),
/// located at their file, key path and line: a renamed parameter the server would drop.
fn call_arguments(suite: &Suite, servers: &Servers, misses: &mut Vec<Miss>) {
    for task in &suite.tasks {
        let Agent::Call(call) = &*task.agent else { continue };
        let Some(tool) = servers.by_name.get(&call.server).and_then(|s| s.tools.iter().find(|t| t.name == call.tool))
        else {
            continue;
        };
        let (path, line) = &call.arguments_at;
        // An imported task is located in its own file, at the task's line.
        let (file, line) = match &task.origin {
            Some((file, task_line)) => (file.clone(), Some(*task_line)),
            None => (suite.file.display().to_string(), *line),
        };
        let at = match line {
            Some(line) => format!("{file}:{line}: {path}"),
            None => format!("{file}: {path}"),
        };
        let crate::template::JsonTemplate::Object(fields) = &call.arguments else { continue };
        // A value is known now when no template is in it.
        let arguments: Vec<(&str, Option<serde_json::Value>)> = fields
            .iter()
            .map(|(k, v)| {
                let known = v.templates().iter().all(|t| t.vars().next().is_none());
                (k.as_str(), known.then(|| v.render(&|_| String::new())))
            })
            .collect();
        for problem in crate::mcp::tool_arguments::problems(&tool.input_schema, &arguments) {
            let miss = Miss { kind: "MCP tool arguments", name: call.name.clone(), detail: format!("{at}: {problem}") };
            // A task of several arms or eras is one `call` in the file: one miss.
            if !misses.contains(&miss) {
                misses.push(miss);
            }
        }
    }
}

fn unknown_tool(server_name: &str, server: &crate::mcp::servers::Server, tool: &str, place: Place<'_>) -> Miss {
    let names: Vec<&str> = server.tools.iter().map(|t| t.name.as_str()).collect();
    Miss {
        kind: "MCP tool",
        name: format!("{server_name}.{tool}"),
        detail: format!("server `{server_name}` has no such tool ({place}); {}", help(tool, &names)),
    }
}

/// "did you mean `x`?", else the tools there are.
fn help(name: &str, names: &[&str]) -> String {
    crate::source::unknown(name, names.iter().copied()).help("its tools", "it has no tool")
}

/// `uses`: the suite's [`suite_uses`], folded once for preflight and the redactor.
pub fn preflight(suite: &Suite, uses: &[(Place<'_>, Uses<'_>)]) -> Result<(), PreflightError> {
    let mut misses = Vec::new();
    for command in &suite.env.commands {
        if which::which_in(command, std::env::var_os("PATH"), &suite.dir).is_err() {
            misses.push(Miss { kind: "command", name: command.clone(), detail: "not found on PATH".into() });
        }
    }
    if !suite.env.python_modules.is_empty() {
        python_modules(&suite.env.python_modules, &suite.dir, &mut misses);
    }
    environment(suite, uses, &mut misses);
    for (written, path) in &suite.env.files {
        if !path.exists() {
            misses.push(Miss {
                kind: "file",
                name: written.clone(),
                detail: format!("{} does not exist", path.display()),
            });
        }
    }
    let models = suite.agents.values().filter_map(|a| match &**a {
        Agent::Llm(l) => Some((format!("agent `{}`", l.name), &l.spec)),
        Agent::Command(_) | Agent::Acp(_) | Agent::Http(_) | Agent::Call(_) => None,
    });
    let judges = suite.judge.iter().map(|j| ("the judge".to_owned(), j));
    // A replayed run asks no model: it needs no key (a fork's pull request has none).
    let replayed = suite.cassettes.as_ref().is_some_and(|c| !c.mode.live());
    // A judge's embedding model is asked with its own key.
    let judges = judges.chain(grader_judges(suite)).flat_map(|(who, spec)| {
        let embedding = spec.embedding.as_deref().map(|e| (format!("{who}'s embedding model"), e));
        std::iter::once((who, spec)).chain(embedding)
    });
    for (who, spec) in models.chain(judges).filter(|_| !replayed) {
        if std::env::var_os(&spec.api_key_env).is_none_or(|v| v.is_empty()) {
            // The name only: the values of keys are never printed.
            misses.push(Miss {
                kind: "API key",
                name: spec.api_key_env.clone(),
                detail: format!("is not set ({who}, {} {})", spec.provider.label(), spec.model),
            });
        }
    }
    programs(suite, uses, &mut misses);
    // A workspace that confines its agent needs the sandbox: never a silent run without it.
    let confined = suite.tasks.iter().filter_map(|t| t.workspace.as_ref()).find(|w| w.isolation == Isolation::Bwrap);
    if confined.is_some()
        && let Err(detail) = crate::workspace::probe()
    {
        misses.push(Miss { kind: "sandbox", name: "bubblewrap".into(), detail });
    }
    let graders = suite.tasks.iter().flat_map(|t| t.all_graders());
    let required = graders.filter_map(|g| g.advisory(suite.judge.as_ref())).filter(|c| c.required);
    for c in required.map(|c| (&c.name, c)).collect::<BTreeMap<_, _>>().into_values() {
        // `calibration: required`: a judge that may not gate stops the run.
        let why = c.advisory.clone().unwrap_or_default();
        misses.push(Miss { kind: "judge calibration", name: c.name.clone(), detail: format!("{why} (required)") });
    }
    if misses.is_empty() { Ok(()) } else { Err(PreflightError { file: suite.file.display().to_string(), misses }) }
}

/// Every variable read as `{env.X}` (anywhere: an agent, a server, a step, a grader's
/// value, a judge's header) or required by `env`, set; and set non-empty where an empty
/// value makes a check vacuous (a `contains` value, a canary). Misses name the places.
fn environment(suite: &Suite, uses: &[(Place<'_>, Uses<'_>)], misses: &mut Vec<Miss>) {
    let mut places: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for name in &suite.env.env_vars {
        places.entry(name).or_default().push("`env.required_env`".into());
    }
    // A replayed http agent sends nothing: its `{env.NAME}` are not read (its key holds them as written).
    let replayed = suite.cassettes.as_ref().is_some_and(|c| !c.mode.live());
    let unread = |place: &Place<'_>| {
        replayed
            && matches!(place, Place::Agent(name) if matches!(suite.agents.get(*name).map(|a| &**a), Some(Agent::Http(_))))
    };
    for (place, uses) in uses.iter().filter(|(place, _)| !unread(place)) {
        for name in uses.env_vars() {
            let list = places.entry(name).or_default();
            let place = place.to_string();
            if !list.contains(&place) {
                list.push(place);
            }
        }
    }
    for (name, places) in &places {
        if std::env::var_os(name).is_none() {
            // Only the name is reported: values of environment variables are never printed.
            misses.push(Miss {
                kind: "environment variable",
                name: (*name).to_owned(),
                detail: format!("is not set (used by {})", list(places)),
            });
        }
    }
    for (place, uses) in uses {
        for (template, what) in &uses.non_empty {
            let names: Vec<&str> = template
                .vars()
                .filter_map(|v| match v {
                    Var::Env(n) => Some(n.as_str()),
                    _ => None,
                })
                .collect();
            let all_set = names.iter().all(|n| std::env::var_os(n).is_some());
            if !names.is_empty() && all_set && render_static(template).is_some_and(|v| v.trim().is_empty()) {
                misses.push(Miss {
                    kind: "environment variable",
                    name: names.join(", "),
                    detail: format!("is set but empty: {what} in {place} would then be found in any output"),
                });
            }
        }
    }
}

/// Every program the suite starts (agents, MCP servers, command graders), found: all
/// listed in this one round, each once with the places that start it.
fn programs(suite: &Suite, uses: &[(Place<'_>, Uses<'_>)], misses: &mut Vec<Miss>) {
    let mut missing: BTreeMap<(&str, String, String), Vec<String>> = BTreeMap::new();
    let mut looked_up: BTreeMap<(String, &Path), Option<String>> = BTreeMap::new();
    // A server replayed from the cassette is never started: its program need not be here.
    let replayed = |place: &Place<'_>| match place {
        Place::McpServer(name) => {
            suite.cassettes.as_ref().is_some_and(|c| !c.mode.live())
                && suite.mcp_servers.get(*name).is_some_and(|s| s.cassette)
        }
        _ => false,
    };
    for (place, uses) in uses.iter().filter(|(place, _)| !replayed(place)) {
        for program in &uses.programs {
            let Some(name) = program.name() else { continue };
            let workdir = program.workdir.unwrap_or(&suite.dir);
            let detail =
                looked_up.entry((name.clone(), workdir)).or_insert_with(|| missing_program(&name, workdir)).clone();
            if let Some(detail) = detail {
                let places = missing.entry((program.what, name, detail)).or_default();
                let place = place.to_string();
                if !places.contains(&place) {
                    places.push(place);
                }
            }
        }
    }
    for ((kind, name, detail), places) in missing {
        misses.push(Miss { kind, name, detail: format!("{detail} ({})", list(&places)) });
    }
}

/// "a, b, c and 2 more"
fn list(places: &[String]) -> String {
    const SHOWN: usize = 3;
    let mut text = places.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if places.len() > SHOWN {
        text.push_str(&format!(" and {} more", places.len() - SHOWN));
    }
    text
}

/// Judges set on single graders.
fn grader_judges(suite: &Suite) -> impl Iterator<Item = (String, &LlmSpec)> {
    suite.tasks.iter().flat_map(|t| {
        let judges = t.all_graders().map(Grader::uses).collect::<Uses>().own_judges().collect::<Vec<_>>();
        judges.into_iter().map(move |j| (format!("the judge of task `{}`", t.id), j))
    })
}

fn missing_program(program: &str, workdir: &Path) -> Option<String> {
    if program.contains('/') {
        let path = workdir.join(program);
        if !path.is_file() {
            return Some(format!("{} does not exist", path.display()));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = path.metadata().map(|m| m.permissions().mode()).unwrap_or(0);
            if mode & 0o111 == 0 {
                return Some(format!("{} is not executable (chmod +x)", path.display()));
            }
        }
        None
    } else {
        which::which(program).err().map(|_| "not found on PATH".to_owned())
    }
}

fn python_modules(modules: &[String], dir: &Path, misses: &mut Vec<Miss>) {
    let python = ["python3", "python"].into_iter().find(|p| which::which(p).is_ok());
    let Some(python) = python else {
        for m in modules {
            misses.push(Miss {
                kind: "python module",
                name: m.clone(),
                detail: "no python3 on PATH to import it".into(),
            });
        }
        return;
    };
    // One interpreter checks every module and prints the missing ones.
    let script = "import importlib.util, sys\nfor m in sys.argv[1:]:\n    try:\n        ok = importlib.util.find_spec(m) is not None\n    except Exception:\n        ok = False\n    if not ok:\n        print(m)\n";
    let out = std::process::Command::new(python).arg("-c").arg(script).args(modules).current_dir(dir).output();
    match out {
        Ok(out) if out.status.success() => {
            for m in String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.is_empty()) {
                misses.push(Miss {
                    kind: "python module",
                    name: m.to_owned(),
                    detail: format!("cannot be imported by {python}"),
                });
            }
        }
        Ok(out) => misses.push(Miss {
            kind: "python module",
            name: modules.join(", "),
            detail: format!("{python} failed: {}", String::from_utf8_lossy(&out.stderr).trim()),
        }),
        Err(e) => misses.push(Miss {
            kind: "python module",
            name: modules.join(", "),
            detail: format!("cannot run {python}: {e}"),
        }),
    }
}
