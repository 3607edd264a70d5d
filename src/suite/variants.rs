//! `variants:`: arms of one suite run side by side — each overrides what differs (the
//! agent, the model and its parameters, variables, MCP servers, the agents' environment) —
//! and each arm is compared with the control arm (docs/variants.md). The validator builds
//! every task once per arm, as `TASK@ARM`, from the suite as written with the arm's
//! overrides applied, so everything downstream sees ordinary tasks with unique ids.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::raw::{RawAgent, RawMcpServer};
pub use crate::policy::ArmGate;
use crate::results::arm_comparison::{ArmSection, VariantsSection};
use crate::source::{KeyPath, ValidateCx, unknown};
use crate::values::Scalar;

/// Arms of the suite, each run on every task, compared with the control arm.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawVariants {
    /// The arm every other arm is compared with (`gate: {not_worse_than: control}`).
    pub control: String,
    /// The arms, by name (`[a-z0-9][a-z0-9.-]*`); an arm with no key runs the suite as written.
    pub arms: BTreeMap<String, RawArm>,
}

/// What one arm changes; a key it does not set is the suite's.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawArm {
    /// Run every task that has an agent with this one of the suite's `agents`.
    pub agent: Option<String>,
    /// Over every model agent of the suite: the model and its parameters.
    pub model: Option<RawModelOverride>,
    /// Over the suite's `vars` (each must be one of them; `--var` does not change an arm's).
    #[serde(default)]
    pub vars: BTreeMap<String, Scalar>,
    /// In place of the suite's MCP servers of the same names (e.g. another release).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, RawMcpServer>,
    /// Over every command agent's `env`; values may use `{env.NAME}`.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Gate this arm against the control arm.
    pub gate: Option<ArmGate>,
}

/// A model agent's keys an arm may change.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawModelOverride {
    /// The model name, as the provider spells it.
    pub model: Option<String>,
    /// Sampling temperature, 0 to 2.
    pub temperature: Option<f64>,
    /// Most tokens of one completion.
    pub max_tokens: Option<u32>,
    /// Sampling seed.
    pub seed: Option<u64>,
    /// The system prompt.
    pub system: Option<String>,
}

/// The validated `variants:`.
#[derive(Debug, Clone, PartialEq)]
pub struct Variants {
    pub control: String,
    /// Every arm, control included, in name order.
    pub arms: Vec<Arm>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Arm {
    pub name: String,
    pub gate: Option<ArmGate>,
}

impl Variants {
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.arms.iter().map(|a| a.name.as_str())
    }

    /// What `results.json` records of the arms before they are compared: the paired test's
    /// settings are the suite's `regression` statistics.
    pub fn section(&self, regression: Option<&super::model::RegressionConfig>) -> VariantsSection {
        VariantsSection {
            control: self.control.clone(),
            statistics: regression.map(|r| r.paired).unwrap_or_default(),
            arms: self
                .arms
                .iter()
                .map(|a| ArmSection { name: a.name.clone(), gate: a.gate, comparison: None })
                .collect(),
        }
    }
}

/// What an arm compiles its tasks with: the suite's pieces with the arm's overrides.
pub struct ArmInputs {
    pub name: String,
    pub vars: BTreeMap<String, String>,
    pub agents: BTreeMap<String, RawAgent>,
    /// The MCP servers it replaces.
    pub mcp_servers: BTreeMap<String, RawMcpServer>,
    /// `agent:`: the agent that runs every task with one.
    pub agent: Option<String>,
    /// The arm as written (JSON), for its tasks' definition hashes.
    pub written: serde_json::Value,
}

/// Checks `variants:` against the suite and works out each arm's inputs (`None` when the
/// arms cannot be built; every problem is recorded at its key path).
pub fn compile(
    cx: &mut ValidateCx,
    raw: &RawVariants,
    vars: &BTreeMap<String, String>,
    agents: &BTreeMap<String, RawAgent>,
    servers: &BTreeMap<String, RawMcpServer>,
    written: &serde_json::Value,
) -> Option<(Variants, Vec<ArmInputs>)> {
    let root = KeyPath::root("variants");
    let arms_path = root.key("arms");
    if raw.arms.len() < 2 {
        cx.error(&arms_path, "variants need at least two arms: a control and one to compare with it");
    }
    if !raw.arms.contains_key(&raw.control) {
        let help = unknown(&raw.control, raw.arms.keys().map(String::as_str)).help("arms", "no arm is defined");
        cx.error(&root.key("control"), format!("the control `{}` is not one of the arms", raw.control)).help =
            Some(help);
    }
    let before = cx.diagnostics.len();
    let mut variants = Variants { control: raw.control.clone(), arms: Vec::new() };
    let mut inputs = Vec::new();
    for (name, arm) in &raw.arms {
        let path = arms_path.key(name);
        if !super::validate::is_id(name, false) {
            cx.error(&path, format!("invalid arm name `{name}`: use lowercase letters, digits, `.` and `-`"));
        }
        if let Some(gate) = &arm.gate {
            check_gate(cx, gate, name == &raw.control, &path.key("gate"));
        }
        inputs.push(arm_inputs(cx, name, arm, &path, vars, agents, servers, written));
        variants.arms.push(Arm { name: name.clone(), gate: arm.gate });
    }
    (cx.diagnostics.len() == before).then_some((variants, inputs))
}

fn check_gate(cx: &mut ValidateCx, gate: &ArmGate, is_control: bool, path: &KeyPath) {
    if is_control {
        cx.error(path, "the control arm is what the others are gated against: it has no `gate`");
    }
    match (gate.not_worse_than, gate.better_than) {
        (Some(_), Some(_)) => {
            cx.error(path, "a gate is either `not_worse_than: control` or `better_than: control`, not both");
        }
        (None, None) if gate.max_cost_increase_pct.is_none() && gate.max_p95_latency_increase_pct.is_none() => {
            cx.error(
                path,
                "a gate needs `not_worse_than: control` (with `margin`), `better_than: control`, \
                 `max_cost_increase_pct` or `max_p95_latency_increase_pct`",
            );
        }
        (None, None) if gate.margin.is_some() => {
            cx.error(&path.key("margin"), "`margin` belongs to `not_worse_than`");
        }
        (None, Some(_)) if gate.margin.is_some() => {
            cx.error(&path.key("margin"), "`margin` belongs to `not_worse_than`");
        }
        _ => {}
    }
}

#[allow(clippy::too_many_arguments)]
fn arm_inputs(
    cx: &mut ValidateCx,
    name: &str,
    arm: &RawArm,
    path: &KeyPath,
    vars: &BTreeMap<String, String>,
    agents: &BTreeMap<String, RawAgent>,
    servers: &BTreeMap<String, RawMcpServer>,
    written: &serde_json::Value,
) -> ArmInputs {
    let mut arm_vars = vars.clone();
    for (key, value) in &arm.vars {
        if !vars.contains_key(key) {
            let help = unknown(key, vars.keys().map(String::as_str)).help("vars", "the suite defines no `vars`");
            cx.error(&path.key("vars").key(key), format!("the suite has no variable `{key}` to override")).help =
                Some(help);
        }
        arm_vars.insert(key.clone(), value.0.clone());
    }
    for key in arm.mcp_servers.keys() {
        if !servers.contains_key(key) {
            let help =
                unknown(key, servers.keys().map(String::as_str)).help("servers", "the suite defines no `mcp_servers`");
            cx.error(&path.key("mcp_servers").key(key), format!("the suite has no MCP server `{key}` to replace"))
                .help = Some(help);
        }
    }
    if let Some(agent) = &arm.agent
        && !agents.contains_key(agent)
    {
        let help = unknown(agent, agents.keys().map(String::as_str)).help("agents", "the suite defines no agents");
        cx.error(&path.key("agent"), format!("unknown agent `{agent}`")).help = Some(help);
    }
    let mut arm_agents = agents.clone();
    let is_model = |a: &RawAgent| a.command.is_none();
    if arm.model.is_some() && !agents.values().any(is_model) {
        cx.error(&path.key("model"), "the suite has no model agent (`provider` and `model`) whose model to change");
    }
    if !arm.env.is_empty() && agents.values().all(is_model) {
        cx.error(&path.key("env"), "the suite has no command agent whose `env` to change");
    }
    for agent in arm_agents.values_mut() {
        match &arm.model {
            Some(m) if is_model(agent) => {
                agent.model = m.model.clone().or(agent.model.take());
                agent.temperature = m.temperature.or(agent.temperature);
                agent.max_tokens = m.max_tokens.or(agent.max_tokens);
                agent.seed = m.seed.or(agent.seed);
                agent.system = m.system.clone().or(agent.system.take());
            }
            _ if !is_model(agent) => agent.env.extend(arm.env.clone()),
            _ => {}
        }
    }
    ArmInputs {
        name: name.to_owned(),
        vars: arm_vars,
        agents: arm_agents,
        mcp_servers: arm.mcp_servers.clone(),
        agent: arm.agent.clone(),
        written: written.get("arms").and_then(|a| a.get(name)).cloned().unwrap_or_default(),
    }
}

/// The arms' tasks (each arm's in suite order) in one list, task by task: `a@x`, `a@y`,
/// `b@x`, `b@y`, so reports read each task's arms side by side and the plan starts them
/// together.
pub fn interleave(arms: Vec<Vec<super::model::Task>>) -> Vec<super::model::Task> {
    let mut arms: Vec<_> = arms.into_iter().map(Vec::into_iter).collect();
    let mut tasks = Vec::new();
    loop {
        let before = tasks.len();
        tasks.extend(arms.iter_mut().filter_map(Iterator::next));
        if tasks.len() == before {
            return tasks;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::suite::{LoadError, LoadOptions, load_suite};

    /// The diagnostics of a suite with these `variants` (key path, line, message).
    fn problems(variants: &str) -> Vec<(String, usize, String)> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evalgate.yaml");
        let suite = format!(
            "evalgate: 1\nsuite: s\nvars: {{word: x}}\nagents:\n  sh: {{command: [echo]}}\ndefaults: {{agent: sh}}\n\
             variants:\n{variants}tasks:\n  - {{id: t, prompt: x, grade: [{{type: contains, value: x}}]}}\n"
        );
        std::fs::write(&path, suite).unwrap();
        match load_suite(&path, &LoadOptions::default()) {
            Err(LoadError::Invalid { diagnostics }) => {
                diagnostics.into_iter().map(|d| (d.key_path, d.position.map_or(0, |p| p.line), d.message)).collect()
            }
            other => panic!("{:?}", other.map(|s| s.tasks.len())),
        }
    }

    #[test]
    fn arms_that_override_what_the_suite_lacks_are_refused_where_written() {
        let found = problems(
            "  control: z\n  arms:\n    a: {vars: {wrod: y}, model: {model: m}}\n    b: {agent: nope, mcp_servers: {fs: {command: [x]}}}\n    c: {gate: {better_than: control, margin: 0.1}}\n",
        );
        let paths: Vec<(&str, usize)> = found.iter().map(|(p, l, _)| (p.as_str(), *l)).collect();
        assert_eq!(
            paths,
            [
                ("variants.control", 8),
                ("variants.arms.a.vars.wrod", 10),
                ("variants.arms.a.model", 10),
                ("variants.arms.b.mcp_servers.fs", 11),
                ("variants.arms.b.agent", 11),
                ("variants.arms.c.gate.margin", 12),
            ],
            "{found:#?}"
        );
        assert_eq!(found[0].2, "the control `z` is not one of the arms");
        assert_eq!(found[1].2, "the suite has no variable `wrod` to override");
        assert!(found[2].2.starts_with("the suite has no model agent"));
        let control = problems("  control: a\n  arms:\n    a: {gate: {not_worse_than: control}}\n");
        let messages: Vec<&str> = control.iter().map(|(_, _, m)| m.as_str()).collect();
        assert_eq!(
            messages,
            [
                "variants need at least two arms: a control and one to compare with it",
                "the control arm is what the others are gated against: it has no `gate`"
            ]
        );
    }

    #[test]
    fn an_arms_server_runs_at_one_protocol_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evalgate.yaml");
        let suite = "evalgate: 1\nsuite: s\nmcp_servers:\n  fx: {command: [srv]}\nvariants:\n  control: a\n  arms:\n    a: {}\n    \
                     b: {mcp_servers: {fx: {command: [srv2], protocol: [2025-06-18, 2025-11-25]}}}\ntasks:\n  \
                     - {id: t, level: execution, call: {server: fx, tool: x}, grade: [{type: contains, value: x}]}\n";
        std::fs::write(&path, suite).unwrap();
        let Err(LoadError::Invalid { diagnostics }) = load_suite(&path, &LoadOptions::default()) else { panic!() };
        let found: Vec<(&str, &str)> = diagnostics.iter().map(|d| (d.key_path.as_str(), d.message.as_str())).collect();
        assert_eq!(
            found,
            [("variants.arms.b.mcp_servers.fx.protocol", "an arm's server runs at one protocol version, not a list")]
        );
    }
}
