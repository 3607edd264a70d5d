//! A compiled step: its common keys and its action; and how a raw step compiles (the
//! common checks here, the action by its kind).

use std::collections::BTreeSet;
use std::time::Duration;

use super::outputs::compile_outputs;
use super::{ACTION_KEYS, Action, OutputSpec, RawStep};
use crate::source::{KeyPath, ValidateCx};
use crate::template::Scope;
use crate::uses::Uses;

#[derive(Debug)]
pub struct Step {
    pub id: Option<String>,
    pub continue_on_error: bool,
    /// A failing `before_all` hook marked so means the environment is not ready (exit 3).
    pub preflight: bool,
    pub timeout: Option<Duration>,
    pub outputs: Vec<(String, OutputSpec)>,
    pub action: Action,
}

impl Step {
    /// What this step (and the steps inside it) uses.
    pub fn uses(&self) -> Uses<'_> {
        self.action.uses()
    }
}

/// Compiles a list of steps in order; each step's id and outputs come into reach of the
/// steps after it (and, through `cx.step_outputs`, of whatever the caller compiles next).
pub fn compile_steps(cx: &mut ValidateCx, raw: &[RawStep], path: &KeyPath, scope: Scope) -> Option<Vec<Step>> {
    let steps: Vec<Option<Step>> =
        raw.iter().enumerate().map(|(i, s)| compile_step(cx, s, &path.index(i), scope)).collect();
    steps.into_iter().collect()
}

pub fn compile_step(cx: &mut ValidateCx, raw: &RawStep, path: &KeyPath, scope: Scope) -> Option<Step> {
    let present = raw.action_keys();
    if present.len() != 1 {
        let message = if present.is_empty() {
            let (last, rest) = ACTION_KEYS.split_last().expect("kinds are listed");
            let rest: Vec<String> = rest.iter().map(|k| format!("`{k}`")).collect();
            format!("the step has nothing to do: add one of {} or `{last}`", rest.join(", "))
        } else {
            format!("a step does one thing, but this one has {}", present.join(" and "))
        };
        cx.error(path, message);
        return None;
    }
    let is_run = raw.run.is_some() || raw.argv.is_some();
    for (key, set) in
        [("env", !raw.env.is_empty()), ("workdir", raw.workdir.is_some()), ("expect", raw.expect.is_some())]
    {
        if set && !is_run {
            let hint = if key == "expect" { format!("; put it inside `{}`", present[0]) } else { String::new() };
            cx.error(&path.key(key), format!("`{key}` belongs to `run` steps{hint}"));
        }
    }
    if let Some(id) = &raw.id
        && cx.step_outputs.contains_key(id)
    {
        cx.error(&path.key("id"), format!("duplicate step id `{id}`"));
    }
    let action = raw.compile_action(cx, path, scope);
    let outputs = compile_outputs(cx, raw, path, present[0], raw.captures());
    if let Some(id) = &raw.id {
        let names: BTreeSet<String> = outputs.iter().flatten().map(|(n, _)| n.clone()).collect();
        cx.step_outputs.insert(id.clone(), names);
    }
    Some(Step {
        id: raw.id.clone(),
        continue_on_error: raw.continue_on_error,
        preflight: raw.preflight,
        timeout: raw.timeout.map(|d| d.0),
        outputs: outputs?,
        action: action?,
    })
}
