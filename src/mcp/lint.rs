//! `mcp_servers.NAME.lint`: a server's `tools/list` held to the spec, as a gate check.
//!
//! **Errors** break what the spec requires of a tool list: every `inputSchema` and
//! `outputSchema` is a valid JSON Schema (2020-12 unless it names another draft) of an
//! object; names are unique and follow the name rules (1 to 128 of `A-Z a-z 0-9 _ - .`);
//! at 2026-07-28 every page of the list carries `ttlMs` and `cacheScope`; and, when asked
//! (`invalid_input: true`), invalid arguments come back as a tool error (`isError: true`),
//! not a JSON-RPC error, from 2025-11-25 on. **Review** findings are the annotation
//! heuristics: a tool whose name or description says it writes, deletes or sends, without an
//! annotation that says so; or one that says it only reads.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::protocol::{input_errors_are_tool_errors, is_stateless};
use super::servers::{CallError, Server};
use super::session::{ToolInfo, is_error, result_output};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Review,
    Error,
}

/// `lint.fail_on`: the least level of finding that fails the gate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailOn {
    #[default]
    Error,
    Review,
    Never,
}

impl FailOn {
    pub fn fails(self, level: Level) -> bool {
        match self {
            FailOn::Error => level == Level::Error,
            FailOn::Review => true,
            FailOn::Never => false,
        }
    }
}

/// `lint` as written: `true`, or its settings.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawLint {
    On(bool),
    With(RawLintSettings),
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawLintSettings {
    /// The least level of finding that fails the gate: `error` (default), `review` (also the
    /// annotation heuristics) or `never` (list them only).
    #[serde(default)]
    pub fail_on: FailOn,
    /// Also call each tool that takes arguments once with arguments its `inputSchema`
    /// rejects, and expect a tool error (`isError: true`), not a JSON-RPC error (the
    /// 2025-11-25 rule, so a model can read the error and correct itself). Off by default:
    /// it calls the server's tools (never one its side-effect guard refuses).
    #[serde(default)]
    pub invalid_input: bool,
}

/// A server's lint settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub fail_on: FailOn,
    pub invalid_input: bool,
}

impl RawLint {
    pub fn settings(&self) -> Option<Settings> {
        match self {
            RawLint::On(false) => None,
            RawLint::On(true) => Some(Settings { fail_on: FailOn::Error, invalid_input: false }),
            RawLint::With(s) => Some(Settings { fail_on: s.fail_on, invalid_input: s.invalid_input }),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    pub level: Level,
    /// The tool it is about (empty: the list as a whole).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool: String,
    pub what: String,
}

impl Finding {
    pub fn line(&self) -> String {
        match self.tool.as_str() {
            "" => self.what.clone(),
            tool => format!("`{tool}`: {}", self.what),
        }
    }
}

/// One server's lint, as results record it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Lint {
    pub protocol_version: String,
    pub fail_on: FailOn,
    /// Worst first.
    pub findings: Vec<Finding>,
}

impl Lint {
    pub fn failing(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| self.fail_on.fails(f.level))
    }
}

/// Lints `server`'s tool list; with `invalid_input`, calls its tools (each within `timeout`).
pub async fn lint(server: &Server, settings: Settings, timeout: Duration) -> Lint {
    let version = server.info.protocol_version.clone();
    let mut findings = surface(&server.tools, &version, server.cache_hints);
    if settings.invalid_input && input_errors_are_tool_errors(&version) {
        for tool in server.callable_tools() {
            let Some(arguments) = invalid_arguments(&tool.input_schema) else { continue };
            findings.extend(invalid_input(server, tool, arguments, timeout).await);
        }
    }
    findings.sort_by_key(|f| std::cmp::Reverse(f.level));
    Lint { protocol_version: version, fail_on: settings.fail_on, findings }
}

/// The checks that need no call: schemas, names, cache hints, annotations.
pub fn surface(tools: &[ToolInfo], version: &str, cache_hints: bool) -> Vec<Finding> {
    let mut findings = Vec::new();
    let error = |tool: &str, what: String| Finding { level: Level::Error, tool: tool.to_owned(), what };
    if is_stateless(version) && !cache_hints {
        findings.push(error("", format!("tools/list does not carry `ttlMs` and `cacheScope` (required at {version})")));
    }
    for (i, tool) in tools.iter().enumerate() {
        let name = tool.name.as_str();
        if tools[..i].iter().any(|t| t.name == name) {
            findings.push(error(name, "is listed twice: tool names must be unique".into()));
        }
        if let Some(why) = bad_name(name) {
            findings.push(error(name, why));
        }
        if let Some(why) = bad_schema(&tool.input_schema) {
            findings.push(error(name, format!("inputSchema {why}")));
        }
        if let Some(why) = tool.output_schema.as_ref().and_then(bad_schema) {
            findings.push(error(name, format!("outputSchema {why}")));
        }
        findings.extend(annotations(tool));
    }
    findings
}

/// The spec's tool-name rules (2025-11-25): 1 to 128 characters of `A-Z a-z 0-9 _ - .`.
fn bad_name(name: &str) -> Option<String> {
    let len = name.chars().count();
    if !(1..=128).contains(&len) {
        return Some(format!("the name has {len} characters: tool names have 1 to 128"));
    }
    let bad: String = name.chars().filter(|c| !(c.is_ascii_alphanumeric() || "_-.".contains(*c))).collect();
    (!bad.is_empty()).then(|| format!("the name has characters outside `A-Z a-z 0-9 _ - .`: {bad:?}"))
}

/// Why `schema` is not a valid JSON Schema of an object, if it is not.
fn bad_schema(schema: &Value) -> Option<String> {
    if !schema.is_object() {
        return Some(format!("is not a JSON Schema object: {}", crate::excerpt::excerpt(&schema.to_string(), 80)));
    }
    if let Some(uri) = schema.get("$schema").and_then(Value::as_str)
        && jsonschema::Draft::from_schema_uri(uri) == jsonschema::Draft::Unknown
    {
        return Some(format!("names a `$schema` evalgate does not know: {uri}"));
    }
    if let Err(e) = jsonschema::meta::validate(schema) {
        let at = crate::json::dotted(&e.instance_path().to_string());
        let at = if at.is_empty() { String::new() } else { format!(" at {at}") };
        return Some(format!("is not a valid JSON Schema{at}: {e}"));
    }
    if let Err(e) = jsonschema::validator_for(schema) {
        return Some(format!("does not compile: {e}"));
    }
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => None,
        Some(t) => Some(format!("has type {t}: it must describe an object (`type: object`)")),
        None => Some("has no `type`: it must describe an object (`type: object`)".into()),
    }
}

/// Words that say a tool changes something outside itself.
const EFFECTS: &[&str] = &[
    "write",
    "delete",
    "remove",
    "rm",
    "drop",
    "destroy",
    "erase",
    "purge",
    "wipe",
    "truncate",
    "update",
    "put",
    "post",
    "create",
    "insert",
    "send",
    "email",
    "mail",
    "publish",
    "deploy",
    "move",
    "rename",
    "kill",
    "terminate",
    "upload",
    "push",
    "transfer",
    "pay",
    "charge",
    "refund",
    "cancel",
    "reset",
    "edit",
    "modify",
    "patch",
    "append",
    "save",
    "commit",
    "merge",
    "approve",
    "revoke",
    "grant",
    "invite",
    "notify",
    "archive",
    "overwrite",
    "execute",
    "exec",
    "shutdown",
    "restart",
    "book",
    "order",
    "submit",
    "install",
    "uninstall",
    "set",
];

/// The effect word a name (`delete_file`, `sendEmail`, `files.write`) or a description's
/// first word ("Deletes …") carries, if any.
fn effect(tool: &ToolInfo) -> Option<String> {
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    for c in tool.name.chars() {
        if c.is_ascii_uppercase() && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if c.is_ascii_alphanumeric() {
            word.push(c.to_ascii_lowercase());
        } else if !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
    }
    words.extend((!word.is_empty()).then_some(word));
    let first = tool.description.split_whitespace().next().unwrap_or_default().to_lowercase();
    let first = first.trim_matches(|c: char| !c.is_alphanumeric());
    let described = [first.strip_suffix("es"), first.strip_suffix('s'), Some(first)];
    words
        .iter()
        .map(|w| (w.as_str(), "name"))
        .chain(described.into_iter().flatten().map(|w| (w, "description")))
        .find(|(w, _)| EFFECTS.contains(w))
        .map(|(w, place)| format!("its {place} says `{w}`"))
}

/// The annotation heuristics (review): hints are the server's claims, never trusted, but a
/// tool that says it writes should say so in its annotations too, and one that says it only
/// reads should not have a name or description that says otherwise.
fn annotations(tool: &ToolInfo) -> Option<Finding> {
    let why = effect(tool)?;
    let hint = |key: &str| tool.annotations.get(key).and_then(Value::as_bool);
    let what = match (hint("readOnlyHint"), hint("destructiveHint")) {
        (Some(true), _) => format!(
            "is annotated readOnlyHint: true, but {why}: a client that trusts the hint would call it without asking"
        ),
        (Some(false), _) | (_, Some(_)) => return None,
        (None, None) => format!(
            "{why} but it has no `destructiveHint` or `readOnlyHint: false`: clients cannot tell it has effects"
        ),
    };
    Some(Finding { level: Level::Review, tool: tool.name.clone(), what })
}

/// Arguments `schema` rejects: without a required property, or with a property of the
/// wrong type; `None` when the schema accepts anything evalgate could send.
pub fn invalid_arguments(schema: &Value) -> Option<Value> {
    let required = schema.get("required").and_then(Value::as_array).filter(|r| !r.is_empty());
    if required.is_some() {
        return Some(json!({}));
    }
    let properties = schema.get("properties")?.as_object()?;
    properties.iter().find_map(|(name, property)| {
        let wrong = match property.get("type")?.as_str()? {
            "string" => json!(12345),
            "number" | "integer" | "boolean" | "object" => json!("not of this type"),
            "array" => json!("not an array"),
            _ => return None,
        };
        Some(json!({ name: wrong }))
    })
}

async fn invalid_input(server: &Server, tool: &ToolInfo, arguments: Value, timeout: Duration) -> Option<Finding> {
    let sent = arguments.to_string();
    let what = match server.call(&tool.name, arguments, timeout).await {
        Ok(called) if is_error(&called.result) => return None,
        // Not validating is the tool's business (review); a protocol error breaks the rule.
        Ok(called) => {
            let what = format!(
                "accepted arguments its inputSchema rejects ({sent}) without a tool error: {}",
                crate::excerpt::excerpt(&result_output(&called.result), 120)
            );
            return Some(Finding { level: Level::Review, tool: tool.name.clone(), what });
        }
        Err(CallError::Refused(_)) => return None,
        Err(CallError::Rejected(e)) => format!(
            "answered arguments its inputSchema rejects ({sent}) with a protocol error, not a tool error (`isError: true`) a model can read and correct: {e}"
        ),
        Err(CallError::Failed(e)) => format!("failed on arguments its inputSchema rejects ({sent}): {e}"),
    };
    Some(Finding { level: Level::Error, tool: tool.name.clone(), what })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str, input: Value, annotations: Value) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            description: description.into(),
            input_schema: input,
            output_schema: None,
            annotations,
            destructive: false,
        }
    }

    const OBJECT: fn() -> Value = || json!({"type": "object"});

    #[test]
    fn schemas_names_and_cache_hints_are_held_to_the_spec() {
        let tools = [
            tool("ok", "Reads.", OBJECT(), Value::Null),
            tool("ok", "Reads again.", OBJECT(), Value::Null),
            tool("has space", "Reads.", OBJECT(), Value::Null),
            tool("typo", "Reads.", json!({"type": "objekt"}), Value::Null),
            tool("array", "Reads.", json!({"type": "array"}), Value::Null),
            tool("draft", "Reads.", json!({"$schema": "https://example.com/mine", "type": "object"}), Value::Null),
        ];
        let lines: Vec<String> = surface(&tools, "2026-07-28", false).iter().map(Finding::line).collect();
        assert_eq!(lines[0], "tools/list does not carry `ttlMs` and `cacheScope` (required at 2026-07-28)");
        assert_eq!(lines[1], "`ok`: is listed twice: tool names must be unique");
        assert_eq!(lines[2], "`has space`: the name has characters outside `A-Z a-z 0-9 _ - .`: \" \"");
        assert!(lines[3].starts_with("`typo`: inputSchema is not a valid JSON Schema at type: "), "{}", lines[3]);
        assert_eq!(lines[4], "`array`: inputSchema has type \"array\": it must describe an object (`type: object`)");
        assert_eq!(lines[5], "`draft`: inputSchema names a `$schema` evalgate does not know: https://example.com/mine");
        assert_eq!(lines.len(), 6);
        // Cache hints are a 2026-07-28 rule only.
        assert!(surface(&tools[..1], "2025-11-25", false).is_empty());
        assert!(surface(&tools[..1], "2026-07-28", true).is_empty());
    }

    #[test]
    fn tools_that_say_they_have_effects_should_be_annotated_so() {
        let finding = |name: &str, description: &str, annotations: Value| {
            annotations_of(&tool(name, description, OBJECT(), annotations))
        };
        fn annotations_of(t: &ToolInfo) -> Option<String> {
            annotations(t).map(|f| f.line())
        }
        assert_eq!(
            finding("delete_file", "Removes a file.", Value::Null).unwrap(),
            "`delete_file`: its name says `delete` but it has no `destructiveHint` or `readOnlyHint: false`: clients cannot tell it has effects"
        );
        assert!(finding("sendEmail", "", Value::Null).unwrap().contains("its name says `send`"));
        assert!(
            finding("notes", "Deletes every note.", Value::Null).unwrap().contains("its description says `delete`")
        );
        assert!(
            finding("wipe", "", json!({"readOnlyHint": true}))
                .unwrap()
                .contains("is annotated readOnlyHint: true, but")
        );
        assert_eq!(finding("wipe", "", json!({"destructiveHint": true})), None);
        assert_eq!(finding("wipe", "", json!({"readOnlyHint": false})), None);
        // Reading and adding numbers have no effect.
        assert_eq!(finding("get_weather", "Returns the weather.", Value::Null), None);
        assert_eq!(finding("add", "Add two integers.", Value::Null), None);
        assert_eq!(finding("settings", "Lists the settings.", Value::Null), None);
    }

    #[test]
    fn invalid_arguments_break_the_schema_they_are_made_for() {
        let schema = json!({"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}});
        assert_eq!(invalid_arguments(&schema), Some(json!({})));
        let optional = json!({"type": "object", "properties": {"message": {"type": "string"}}});
        let bad = invalid_arguments(&optional).unwrap();
        assert!(!jsonschema::is_valid(&optional, &bad));
        assert_eq!(invalid_arguments(&json!({"type": "object"})), None);
    }
}
