//! The `json_schema` grader: the output validates against a JSON Schema.

use serde_json::Value;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{CompileGrader, Grade, GradeInput, GradeResult, Graded, JudgeCall};
use crate::excerpt::excerpt;
use crate::source::{KeyPath, ValidateCx};
use crate::uses::Uses;

/// The output validates against `schema` or `schema_file`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawJsonSchema {
    /// A JSON Schema, inline.
    pub schema: Option<Value>,
    /// A JSON or YAML file holding the schema, relative to the suite.
    pub schema_file: Option<String>,
}

#[derive(Debug)]
pub struct SchemaCheck {
    validator: jsonschema::Validator,
    /// The schema is `{}` or `true`: the check is "the output is JSON" (AgentV's
    /// `is-json`), so output that is not JSON is what it looks at, and `negate` may invert it.
    any_json: bool,
    /// `schema_file`, resolved: read at load, and part of the task's fingerprint.
    file: Option<std::path::PathBuf>,
}

impl CompileGrader for RawJsonSchema {
    type Check = SchemaCheck;

    fn compile(self, cx: &mut ValidateCx, path: &KeyPath) -> Option<SchemaCheck> {
        let mut schema_file = None;
        let (schema, key) = match (self.schema, self.schema_file) {
            (Some(schema), None) => (schema, "schema"),
            (None, Some(file)) => {
                let key = path.key("schema_file");
                let full = cx.resolve_path(&file);
                let text = match crate::yaml::read(&full) {
                    Ok(t) => t,
                    Err(e) => {
                        cx.error(&key, format!("cannot read schema file {}: {e}", full.display()));
                        return None;
                    }
                };
                schema_file = Some(full.clone());
                match serde_json::from_str(&text).or_else(|_| crate::yaml::from_str(&text)) {
                    Ok(schema) => (schema, "schema_file"),
                    Err(e) => {
                        cx.error(&key, format!("schema file {} is neither JSON nor YAML: {e}", full.display()));
                        return None;
                    }
                }
            }
            _ => {
                cx.error(path, "a `json_schema` grader needs exactly one of `schema` or `schema_file`");
                return None;
            }
        };
        let any_json = schema == Value::Bool(true) || schema.as_object().is_some_and(serde_json::Map::is_empty);
        match jsonschema::validator_for(&schema) {
            Ok(validator) => Some(SchemaCheck { validator, any_json, file: schema_file }),
            Err(e) => {
                cx.error(&path.key(key), format!("invalid JSON Schema: {e}"));
                None
            }
        }
    }
}

impl Grade for SchemaCheck {
    async fn grade(&self, input: &GradeInput<'_>, _: &mut Vec<JudgeCall>) -> GradeResult {
        let instance: Value = match serde_json::from_str(input.output.trim()) {
            Ok(v) => v,
            Err(e) => {
                let reason = format!("output is not JSON ({e}): {:?}", excerpt(input.output, 80));
                return Ok(if self.any_json { Graded::fail(reason) } else { Graded::unobserved(reason) });
            }
        };
        let errors: Vec<String> = self
            .validator
            .iter_errors(&instance)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() { e.to_string() } else { format!("{at}: {e}") }
            })
            .collect();
        Ok(if errors.is_empty() {
            Graded::pass("output matches the schema")
        } else {
            Graded::fail(format!("output does not match the schema: {}", excerpt(&errors.join("; "), 200)))
                .with_evidence(Value::from(errors))
        })
    }

    fn uses(&self) -> Uses<'_> {
        Uses { files: self.file.iter().map(std::path::PathBuf::as_path).collect(), ..Uses::default() }
    }
}
