//! Raw suite → validated model. Checks what serde cannot (ids, names, ranges, templates,
//! paths) and records every problem rather than stopping at the first.

use std::collections::BTreeMap;
use std::sync::Arc;

mod agent;
mod task;

pub(super) use agent::mcp_server;
use agent::{mcp_server_at, validate_agent};
use task::{TaskDefaults, Trials, check_trials, no_preflight, task_eras, validate_task};

use super::load::LoadOptions;
use super::model::{Agent, Cassettes, EnvRequirements, Level, McpServer, RegressionConfig, Suite, Task};
use super::raw::{RawAgent, RawSuite, RawTask};
use crate::source::{KeyPath, ValidateCx};
use crate::step::compile_steps;
use crate::template::Scope;

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
    let judge =
        raw.judge.as_ref().and_then(|j| crate::llm::judge_calibration::judge_spec(cx, j, &KeyPath::root("judge")));
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
