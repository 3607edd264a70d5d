//! The raw suite compiled into the suite: the suite's own keys checked, then each concept
//! compiled by its file (agents, MCP servers, hooks, tasks, variant arms), every problem
//! recorded rather than stopping at the first.

use std::collections::BTreeMap;

use super::agent::compile_agents;
use super::ids::{is_id, is_semver};
use super::mcp_server::{McpServer, mcp_server};
use super::model::{Cassettes, EnvRequirements, RegressionConfig, Suite};
use super::raw::RawSuite;
use super::tasks::{TaskDefaults, compile_tasks, no_preflight};
use super::trials::{Trials, check_trials};
use super::variants::{arm_tasks, dedup_diagnostics};
use crate::source::{KeyPath, ValidateCx};
use crate::step::compile_steps;
use crate::template::Scope;

/// Options that come from the command line rather than the file.
#[derive(Debug, Default, Clone)]
pub struct LoadOptions {
    /// `--var KEY=VALUE` overrides.
    pub vars: Vec<(String, String)>,
    /// A suite with no tasks loads: what `mcp tools|snapshot|diff` need is its servers, and
    /// a server's tools are listed before the first task is written. Every other command
    /// refuses such a suite.
    pub servers_only: bool,
}

impl LoadOptions {
    /// The options of a command that needs only the suite's MCP servers.
    pub fn servers_only() -> LoadOptions {
        LoadOptions { servers_only: true, ..LoadOptions::default() }
    }
}

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
    let extensions = super::extension_config::compile_extensions(cx, &raw.extensions);
    let judge =
        raw.judge.as_ref().and_then(|j| crate::llm::judge_calibration::judge_spec(cx, j, &KeyPath::root("judge")));
    cx.has_judge = raw.judge.is_some();
    let raw_agents = raw.variants.is_some().then(|| raw.agents.clone());
    let agents = compile_agents(cx, raw.agents);

    let trials = Trials::of(raw.defaults.repeat, raw.defaults.min_pass);
    check_trials(cx, trials, &KeyPath::root("defaults"));
    let workspace = raw
        .workspace
        .clone()
        .and_then(|w| super::workspace::compile_workspace(cx, w, &KeyPath::root("workspace")))
        .map(std::sync::Arc::new);
    let defaults = TaskDefaults {
        workspace: workspace.as_ref(),
        agents: &agents,
        judge: judge.as_ref(),
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
    if raw.tasks.is_empty() && !options.servers_only && raw.mcp_servers.values().all(|s| s.conformance.is_none()) {
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

    let cassettes = raw.cassettes.map(|c| {
        let at = KeyPath::root("cassettes").key("normalize");
        let normalize: Vec<_> = c
            .normalize
            .iter()
            .enumerate()
            .filter_map(|(i, n)| match regex::Regex::new(&n.pattern) {
                Ok(re) if re.is_match("") => {
                    cx.error(
                        &at.index(i).key("pattern"),
                        "the pattern matches the empty string: it would rewrite every request",
                    );
                    None
                }
                Ok(re) => Some((re, n.replace.clone())),
                Err(e) => {
                    cx.error(&at.index(i).key("pattern"), format!("not a regular expression: {e}"));
                    None
                }
            })
            .collect();
        Cassettes {
            path: c.path.map_or_else(|| Cassettes::default_path(&cx.dir, &raw.suite), |p| cx.dir.join(p)),
            mode: c.mode.resolved(),
            normalize,
        }
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
        extensions,
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::suite::{LoadError, LoadOptions, load_suite};

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
