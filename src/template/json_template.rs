//! JSON values whose strings are templates: an `http` step's `json` body, an `mcp` step's
//! `arguments` and an execution-level task's `call.arguments`.

use serde_json::Value;

use super::{Scope, Template, Var};
use crate::source::{KeyPath, ValidateCx};

/// A JSON value whose strings are templates.
#[derive(Debug)]
pub enum JsonTemplate {
    Literal(Value),
    String(Template),
    Array(Vec<JsonTemplate>),
    Object(Vec<(String, JsonTemplate)>),
}

impl JsonTemplate {
    pub fn compile(cx: &mut ValidateCx, value: &Value, scope: Scope, path: &KeyPath) -> Option<JsonTemplate> {
        match value {
            Value::String(s) => cx.template(s, scope, path).map(JsonTemplate::String),
            Value::Array(items) => {
                let items: Vec<Option<JsonTemplate>> = items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| JsonTemplate::compile(cx, v, scope, &path.index(i)))
                    .collect();
                items.into_iter().collect::<Option<Vec<_>>>().map(JsonTemplate::Array)
            }
            Value::Object(map) => {
                let fields: Vec<Option<(String, JsonTemplate)>> = map
                    .iter()
                    .map(|(k, v)| JsonTemplate::compile(cx, v, scope, &path.key(k)).map(|t| (k.clone(), t)))
                    .collect();
                fields.into_iter().collect::<Option<Vec<_>>>().map(JsonTemplate::Object)
            }
            other => Some(JsonTemplate::Literal(other.clone())),
        }
    }

    pub fn render(&self, lookup: &dyn Fn(&Var) -> String) -> Value {
        match self {
            JsonTemplate::Literal(v) => v.clone(),
            JsonTemplate::String(t) => Value::String(t.render(lookup)),
            JsonTemplate::Array(items) => Value::Array(items.iter().map(|i| i.render(lookup)).collect()),
            JsonTemplate::Object(fields) => {
                Value::Object(fields.iter().map(|(k, v)| (k.clone(), v.render(lookup))).collect())
            }
        }
    }

    pub fn templates(&self) -> Vec<&Template> {
        match self {
            JsonTemplate::Literal(_) => Vec::new(),
            JsonTemplate::String(t) => vec![t],
            JsonTemplate::Array(items) => items.iter().flat_map(JsonTemplate::templates).collect(),
            JsonTemplate::Object(fields) => fields.iter().flat_map(|(_, v)| v.templates()).collect(),
        }
    }
}
