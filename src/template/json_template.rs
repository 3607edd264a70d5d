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

    /// The value as it is known at load, for checks made before any task runs: a string
    /// holding a placeholder as its source (its JSON pointer in the second part: its value
    /// is known only when rendered), every other value as it will be sent (suite `vars`
    /// bound).
    pub fn as_known(&self) -> (Value, Vec<String>) {
        let mut templated = Vec::new();
        let value = self.known_at(String::new(), &mut templated);
        (value, templated)
    }

    fn known_at(&self, at: String, templated: &mut Vec<String>) -> Value {
        match self {
            JsonTemplate::Literal(v) => v.clone(),
            JsonTemplate::String(t) if t.vars().next().is_some() => {
                templated.push(at);
                Value::String(t.source().to_owned())
            }
            JsonTemplate::String(t) => Value::String(t.render(&|_| String::new())),
            JsonTemplate::Array(items) => Value::Array(
                items.iter().enumerate().map(|(i, v)| v.known_at(format!("{at}/{i}"), templated)).collect(),
            ),
            JsonTemplate::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, v)| {
                        let pointer = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                        (k.clone(), v.known_at(pointer, templated))
                    })
                    .collect(),
            ),
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
