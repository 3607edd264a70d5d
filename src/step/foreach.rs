//! `foreach` steps: run steps once per item of a list, with the item as `{VAR}`.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::leaf::plain;
use super::sequence::{fail, sequence};
use super::{CompileStep, Leaf, RawStep, RunStep, Step, StepEnv, compile_steps};
use crate::excerpt::excerpt;
use crate::results::{Status, StepResult};
use crate::source::{KeyPath, ValidateCx};
use crate::template::{Bindings, Scope, Template};
use crate::uses::Uses;
use crate::values::Scalar;

/// Run `steps` once per item of `in`, with the item as `{VAR}`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawForeach {
    /// The item's name in templates: `var: ns` makes `{ns}`.
    pub var: String,
    /// A list, or a template that renders to a JSON array (e.g. an earlier step's output).
    #[serde(rename = "in")]
    pub items: RawForeachItems,
    /// Run in order for each item; the first failing iteration fails the step.
    pub steps: Vec<RawStep>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawForeachItems {
    List(Vec<Scalar>),
    Template(String),
}

#[derive(Debug)]
pub struct ForeachAction {
    pub var: String,
    pub items: ForeachItems,
    pub steps: Vec<Step>,
}

#[derive(Debug)]
pub enum ForeachItems {
    List(Vec<Template>),
    /// Renders to a JSON array.
    Json(Template),
}

/// Names a loop variable cannot take: the template language's own.
const RESERVED: [&str; 8] = ["vars", "env", "task", "random", "steps", "prompt", "prompt_file", "agent"];

impl CompileStep for RawForeach {
    type Action = ForeachAction;

    fn compile(&self, cx: &mut ValidateCx, path: &KeyPath, scope: Scope) -> Option<ForeachAction> {
        let valid_name = self.var.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && self.var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid_name || RESERVED.contains(&self.var.as_str()) {
            cx.error(&path.key("var"), format!("`{}` cannot name a loop variable", self.var));
            return None;
        }
        let items = match &self.items {
            RawForeachItems::List(items) => {
                let texts: Vec<String> = items.iter().map(|s| s.0.clone()).collect();
                cx.templates(&texts, scope, &path.key("in")).map(ForeachItems::List)
            }
            RawForeachItems::Template(t) => cx.template(t, scope, &path.key("in")).map(ForeachItems::Json),
        };
        cx.locals.push(self.var.clone());
        let body = compile_steps(cx, &self.steps, &path.key("steps"), scope);
        cx.locals.pop();
        if self.steps.is_empty() {
            cx.error(&path.key("steps"), "`foreach` needs at least one step");
        }
        Some(ForeachAction { var: self.var.clone(), items: items?, steps: body? })
    }
}

impl RunStep for ForeachAction {
    async fn execute(
        &self,
        _: Option<Duration>,
        env: StepEnv<'_>,
        b: &mut Bindings,
        result: &mut StepResult,
    ) -> Option<Leaf> {
        let rendered = match &self.items {
            ForeachItems::List(items) => {
                b.render_with(|lookup| items.iter().map(|t| t.render(lookup)).collect()).map(Ok).map_err(|m| m.to_string())
            }
            ForeachItems::Json(t) => b
                .render(t)
                .map(|text| match serde_json::from_str::<Value>(text.trim()) {
                    Ok(Value::Array(values)) => Ok(values.iter().map(plain).collect()),
                    _ => Err(format!("`in` is not a JSON array: {:?}", excerpt(&text, 80))),
                })
                .map_err(|m| m.to_string()),
        };
        result.action = format!("foreach {}", self.var);
        let items: Vec<String> = match rendered {
            Ok(Ok(items)) => items,
            Ok(Err(not_an_array)) => {
                fail(result, not_an_array);
                return None;
            }
            Err(missing) => {
                result.status = Status::Error;
                result.failure = Some(missing);
                return None;
            }
        };
        result.action = format!("foreach {} in {} item(s)", self.var, items.len());
        for (i, item) in items.iter().enumerate() {
            b.locals.push((self.var.clone(), item.clone()));
            let outcome = sequence(&self.steps, env, b, &mut result.children).await;
            b.locals.pop();
            if let Err(reason) = outcome {
                let failure = format!("iteration {} ({} = {:?}): {reason}", i + 1, self.var, excerpt(item, 60));
                fail(result, failure);
                return None;
            }
        }
        None
    }

    fn uses(&self) -> Uses<'_> {
        let items = match &self.items {
            ForeachItems::Json(t) => Uses::templates([t]),
            ForeachItems::List(items) => Uses::templates(items),
        };
        items.and(self.steps.iter().map(Step::uses).collect())
    }
}
