//! A server's tool surface, snapshotted and compared: `evalgate mcp snapshot` writes it
//! (`tools.lock.json`), `mcp_servers.NAME.snapshot` gates a run on how the live surface
//! drifted from it, and `evalgate mcp diff` prints the drift.
//!
//! Each change is classified by what it does to a client that worked against the snapshot:
//! **breaking** (a call or a reading of the result that worked may now fail: a tool removed,
//! a parameter removed or made required, a type narrowed, an enum value removed, an output
//! field removed), **review** (what a model reads changed: a description, an annotation, a
//! new tool), **info** (additive: an optional parameter, a wider type, a new output field).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::session::{ServerInfo, ToolInfo};

/// The lock file's format tag.
pub const FORMAT: &str = "evalgate-tools/1";

/// `tools.lock.json`: the surfaces of one or more servers, by the suite's server name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lock {
    pub format: String,
    pub servers: BTreeMap<String, Surface>,
}

/// One server's tools as a client sees them, ordered and stable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Surface {
    pub protocol_version: String,
    pub tools: BTreeMap<String, ToolSurface>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSurface {
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub annotations: Value,
}

impl Surface {
    pub fn of(info: &ServerInfo, tools: &[ToolInfo]) -> Surface {
        let tools = tools
            .iter()
            .map(|t| {
                (
                    t.name.clone(),
                    ToolSurface {
                        description: t.description.clone(),
                        input_schema: sorted(&t.input_schema),
                        output_schema: t.output_schema.as_ref().map(sorted),
                        annotations: sorted(&t.annotations),
                    },
                )
            })
            .collect();
        Surface { protocol_version: info.protocol_version.clone(), tools }
    }
}

impl Lock {
    pub fn read(path: &Path) -> Result<Lock, String> {
        let text = crate::files::read::text(path, crate::files::read::TEXT)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let lock: Lock =
            serde_json::from_str(&text).map_err(|e| format!("{}: not a tools lock file: {e}", path.display()))?;
        if lock.format != FORMAT {
            return Err(format!("{}: format `{}` is not `{FORMAT}`", path.display(), lock.format));
        }
        Ok(lock)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a lock serializes") + "\n"
    }
}

/// Objects with their keys sorted, recursively: the same surface is the same text.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&map[k]))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Declared least severe first: the derived order is the severity order (breaking > review >
/// info), which `FailOn` and the worst-first listing of changes (`diff`) read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    Info,
    Review,
    Breaking,
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Class::Info => "info",
            Class::Review => "review",
            Class::Breaking => "breaking",
        })
    }
}

/// `drift.fail_on`: the least class of change that fails the gate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailOn {
    #[default]
    Breaking,
    Review,
    Never,
}

impl FailOn {
    pub fn fails(self, class: Class) -> bool {
        match self {
            FailOn::Breaking => class >= Class::Breaking,
            FailOn::Review => class >= Class::Review,
            FailOn::Never => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Change {
    pub tool: String,
    pub class: Class,
    pub what: String,
}

/// How `now` differs from `was`, the worst first (`Class`'s order), then by tool name. The
/// protocol version counts only when both sides know it: an unknown one is no change.
pub fn diff(was: &Surface, now: &Surface) -> Vec<Change> {
    let mut changes = Vec::new();
    let mut add = |tool: &str, class, what: String| changes.push(Change { tool: tool.to_owned(), class, what });
    let known = |v: &str| !v.trim().is_empty();
    if known(&was.protocol_version) && known(&now.protocol_version) && was.protocol_version != now.protocol_version {
        add("", Class::Info, format!("protocol version {} → {}", was.protocol_version, now.protocol_version));
    }
    for (name, old) in &was.tools {
        let Some(new) = now.tools.get(name) else {
            add(name, Class::Breaking, "tool removed".into());
            continue;
        };
        if old.description != new.description {
            add(name, Class::Review, format!("description changed: {:?} → {:?}", old.description, new.description));
        }
        if old.annotations != new.annotations {
            add(name, Class::Review, format!("annotations changed: {} → {}", old.annotations, new.annotations));
        }
        for (class, what) in parameters(&old.input_schema, &new.input_schema) {
            add(name, class, what);
        }
        match (&old.output_schema, &new.output_schema) {
            (Some(_), None) => add(name, Class::Breaking, "outputSchema removed".into()),
            (None, Some(_)) => add(name, Class::Info, "outputSchema added".into()),
            (Some(o), Some(n)) => {
                for (class, what) in outputs(o, n) {
                    add(name, class, what);
                }
            }
            (None, None) => {}
        }
    }
    for name in now.tools.keys().filter(|n| !was.tools.contains_key(*n)) {
        add(name, Class::Review, "tool added".into());
    }
    // Stable: a tool's changes of one class keep the order they were found in.
    changes.sort_by(|a, b| b.class.cmp(&a.class).then(a.tool.cmp(&b.tool)));
    changes
}

fn properties(schema: &Value) -> BTreeMap<&str, &Value> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.as_str(), v)).collect())
        .unwrap_or_default()
}

fn required(schema: &Value) -> Vec<&str> {
    schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
}

/// The JSON types a schema allows (`type` as a string or a list); empty when unconstrained.
fn types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// A type change: narrowed (something accepted before is not now) or widened.
fn type_change(old: &Value, new: &Value) -> Option<(bool, String)> {
    let (was, now) = (types(old), types(new));
    if was == now {
        return None;
    }
    let allows =
        |set: &[&str], t: &str| set.is_empty() || set.contains(&t) || (t == "integer" && set.contains(&"number"));
    let narrowed = !now.is_empty() && (was.is_empty() || was.iter().any(|t| !allows(&now, t)));
    Some((narrowed, format!("type {} → {}", shown(&was), shown(&now))))
}

fn shown(types: &[&str]) -> String {
    if types.is_empty() { "any".into() } else { types.join(" | ") }
}

/// Input parameters: what a call that was valid against `old` may now be refused for.
fn parameters(old: &Value, new: &Value) -> Vec<(Class, String)> {
    let mut out = Vec::new();
    let (was, now) = (properties(old), properties(new));
    let (was_required, now_required) = (required(old), required(new));
    for (param, old_schema) in &was {
        let Some(new_schema) = now.get(param) else {
            out.push((Class::Breaking, format!("parameter `{param}` removed")));
            continue;
        };
        if let Some((narrowed, what)) = type_change(old_schema, new_schema) {
            let class = if narrowed { Class::Breaking } else { Class::Info };
            out.push((class, format!("parameter `{param}`: {what}")));
        }
        let values = |s: &Value| s.get("enum").and_then(Value::as_array).cloned();
        if let (Some(old_values), Some(new_values)) = (values(old_schema), values(new_schema)) {
            let removed: Vec<String> =
                old_values.iter().filter(|v| !new_values.contains(v)).map(Value::to_string).collect();
            if !removed.is_empty() {
                out.push((
                    Class::Breaking,
                    format!("parameter `{param}`: enum value(s) {} removed", removed.join(", ")),
                ));
            }
            if new_values.iter().any(|v| !old_values.contains(v)) {
                out.push((Class::Info, format!("parameter `{param}`: enum value(s) added")));
            }
        }
        if now_required.contains(param) && !was_required.contains(param) {
            out.push((Class::Breaking, format!("parameter `{param}` is now required")));
        } else if was_required.contains(param) && !now_required.contains(param) {
            out.push((Class::Info, format!("parameter `{param}` is now optional")));
        }
    }
    for param in now.keys().filter(|p| !was.contains_key(*p)) {
        if now_required.contains(param) {
            out.push((Class::Breaking, format!("new required parameter `{param}`")));
        } else {
            out.push((Class::Info, format!("new optional parameter `{param}`")));
        }
    }
    out
}

/// Output fields: what a reader of the structured result relied on.
fn outputs(old: &Value, new: &Value) -> Vec<(Class, String)> {
    let mut out = Vec::new();
    let (was, now) = (properties(old), properties(new));
    for (field, old_schema) in &was {
        match now.get(field) {
            None => out.push((Class::Breaking, format!("output field `{field}` removed"))),
            Some(new_schema) => {
                // For a reader, any type change of a field it reads can break it.
                if let Some((_, what)) = type_change(old_schema, new_schema) {
                    out.push((Class::Breaking, format!("output field `{field}`: {what}")));
                }
            }
        }
    }
    for field in now.keys().filter(|f| !was.contains_key(*f)) {
        out.push((Class::Info, format!("new output field `{field}`")));
    }
    out
}

/// A run's comparison of one server's live surface with its snapshot (`results.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Drift {
    /// The lock file, as written in the suite.
    pub snapshot: String,
    pub fail_on: FailOn,
    pub changes: Vec<Change>,
    /// `--update-snapshot` rewrote the lock file with the live surface.
    #[serde(default)]
    pub updated: bool,
    /// Why there was nothing to compare with (no such file, not a lock, no such server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Drift {
    /// Compares `live` with `server`'s entry in the lock at `path`; with `update`, writes
    /// `live` there instead (keeping the file's other servers) and records what changed.
    pub fn check(server: &str, live: &Surface, path: &Path, written: &str, fail_on: FailOn, update: bool) -> Drift {
        let mut drift =
            Drift { snapshot: written.to_owned(), fail_on, changes: Vec::new(), updated: false, error: None };
        let lock = if path.exists() { Lock::read(path).map(Some) } else { Ok(None) };
        let mut lock = match lock {
            Ok(lock) => lock,
            Err(e) => {
                drift.error = Some(e);
                return drift;
            }
        };
        if let Some(was) = lock.as_ref().and_then(|l| l.servers.get(server)) {
            drift.changes = diff(was, live);
        }
        if update {
            let lock = lock.get_or_insert_with(|| Lock { format: FORMAT.into(), servers: BTreeMap::new() });
            lock.servers.insert(server.to_owned(), live.clone());
            match crate::files::write_atomic(path, lock.to_json().as_bytes()) {
                Ok(()) => drift.updated = true,
                Err(e) => drift.error = Some(e.to_string()),
            }
        } else if lock.is_none() {
            drift.error = Some(format!("{written} does not exist: write it with `evalgate run --update-snapshot`"));
        } else if lock.as_ref().is_some_and(|l| !l.servers.contains_key(server)) {
            drift.error = Some(format!(
                "{written} has no surface for server `{server}`: `evalgate run --update-snapshot` adds it"
            ));
        }
        drift
    }
}

impl Change {
    /// `breaking: \`tool\`: parameter …`, for the terminal, `mcp diff` and the gate check.
    pub fn line(&self) -> String {
        if self.tool.is_empty() {
            format!("{}: {}", self.class, self.what)
        } else {
            format!("{}: `{}`: {}", self.class, self.tool, self.what)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(description: &str, input: Value, output: Option<Value>) -> ToolSurface {
        ToolSurface {
            description: description.into(),
            input_schema: input,
            output_schema: output,
            annotations: Value::Null,
        }
    }

    fn surface(tools: Vec<(&str, ToolSurface)>) -> Surface {
        Surface {
            protocol_version: "2025-11-25".into(),
            tools: tools.into_iter().map(|(n, t)| (n.into(), t)).collect(),
        }
    }

    fn classes(changes: &[Change]) -> Vec<(String, Class, String)> {
        changes.iter().map(|c| (c.tool.clone(), c.class, c.what.clone())).collect()
    }

    #[test]
    fn each_change_is_classified_by_what_it_does_to_a_client() {
        let input = json!({"type": "object", "required": ["city"], "properties": {
            "city": {"type": "string"}, "units": {"type": "string", "enum": ["c", "f"]}, "days": {"type": "integer"}}});
        let output = json!({"type": "object", "properties": {"temp": {"type": "number"}, "wind": {"type": "number"}}});
        let was = Surface {
            protocol_version: "2025-06-18".into(),
            ..surface(vec![
                ("weather", tool("Weather for a city.", input, Some(output))),
                ("old", tool("Gone soon.", json!({}), None)),
            ])
        };
        let input = json!({"type": "object", "required": ["city", "units"], "properties": {
            "city": {"type": ["string", "null"]}, "units": {"type": "string", "enum": ["c"]}, "days": {"type": "string"},
            "lang": {"type": "string"}}});
        let output =
            json!({"type": "object", "properties": {"temp": {"type": "string"}, "humidity": {"type": "number"}}});
        let now = surface(vec![
            ("weather", tool("Weather for a city, in Celsius.", input, Some(output))),
            ("new", tool("New.", json!({}), None)),
        ]);
        let changes = diff(&was, &now);
        let expected = [
            ("old", Class::Breaking, "tool removed"),
            ("weather", Class::Breaking, "parameter `days`: type integer → string"),
            ("weather", Class::Breaking, "parameter `units`: enum value(s) \"f\" removed"),
            ("weather", Class::Breaking, "parameter `units` is now required"),
            ("weather", Class::Breaking, "output field `temp`: type number → string"),
            ("weather", Class::Breaking, "output field `wind` removed"),
            ("new", Class::Review, "tool added"),
            (
                "weather",
                Class::Review,
                "description changed: \"Weather for a city.\" → \"Weather for a city, in Celsius.\"",
            ),
            ("", Class::Info, "protocol version 2025-06-18 → 2025-11-25"),
            ("weather", Class::Info, "parameter `city`: type string → string | null"),
            ("weather", Class::Info, "new optional parameter `lang`"),
            ("weather", Class::Info, "new output field `humidity`"),
        ];
        let expected: Vec<(String, Class, String)> =
            expected.iter().map(|(t, c, w)| (t.to_string(), *c, w.to_string())).collect();
        assert_eq!(classes(&changes), expected);
        assert!(FailOn::Breaking.fails(Class::Breaking) && !FailOn::Breaking.fails(Class::Review));
        assert!(FailOn::Review.fails(Class::Review) && !FailOn::Review.fails(Class::Info));
        assert!(!FailOn::Never.fails(Class::Breaking));
    }

    #[test]
    fn the_severity_order_is_breaking_then_review_then_info() {
        assert!(Class::Breaking > Class::Review && Class::Review > Class::Info);
        let mut classes = vec![Class::Info, Class::Breaking, Class::Review];
        classes.sort_by(|a, b| b.cmp(a));
        assert_eq!(classes, [Class::Breaking, Class::Review, Class::Info]);
    }

    /// Only a version known on both sides changes: a lock or a handshake without one (empty)
    /// would otherwise report "protocol version" on every run.
    #[test]
    fn an_unknown_protocol_version_is_no_change() {
        let known = surface(Vec::new());
        let unknown = Surface { protocol_version: String::new(), ..known.clone() };
        assert_eq!(diff(&unknown, &known), []);
        assert_eq!(diff(&known, &unknown), []);
        assert_eq!(diff(&known, &known), []);
    }

    #[test]
    fn the_same_surface_in_another_key_order_is_no_change_and_the_same_text() {
        let a = ToolInfo {
            name: "t".into(),
            description: "d".into(),
            input_schema: json!({"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "string"}}}),
            output_schema: None,
            annotations: json!({"readOnlyHint": true, "destructiveHint": false}),
            destructive: false,
        };
        let b = ToolInfo {
            input_schema: json!({"properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "type": "object"}),
            annotations: json!({"destructiveHint": false, "readOnlyHint": true}),
            ..a.clone()
        };
        let info = ServerInfo { protocol_version: "2025-11-25".into(), ..ServerInfo::default() };
        let (sa, sb) = (Surface::of(&info, &[a]), Surface::of(&info, &[b]));
        assert!(diff(&sa, &sb).is_empty());
        let lock = |s: Surface| Lock { format: FORMAT.into(), servers: [("x".to_owned(), s)].into() }.to_json();
        assert_eq!(lock(sa), lock(sb));
    }
}
