//! AgentV's `input` and `expected_output` read: as messages, as the question a judge is
//! shown, as text, with the files their content blocks name.

use serde_json::{Value, json};

use super::super::Problems;

/// AgentV's `input` as the messages a code grader reads (`shorthand-expansion.ts`): a
/// string is one user message, a message object is itself, an object without `role` is a
/// user message with that content.
pub(super) fn agentv_messages(input: &Value) -> Vec<Value> {
    match input {
        Value::String(s) => vec![json!({"role": "user", "content": s})],
        Value::Array(list) => list.iter().filter(|m| m.get("role").is_some()).cloned().collect(),
        Value::Object(o) if o.contains_key("role") => vec![input.clone()],
        other => vec![json!({"role": "user", "content": other})],
    }
}

/// AgentV's `question` of a test: the text of its input messages, each trimmed, joined
/// by a space (what its hooks get as `case_input`).
pub(super) fn question(input: &Value) -> String {
    let texts = input.as_array().into_iter().flatten().flat_map(|m| match &m["content"] {
        Value::String(s) => vec![s.trim().to_owned()],
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b.get("value").or_else(|| b.get("text")).and_then(Value::as_str))
            .map(|s| s.trim().to_owned())
            .collect(),
        _ => Vec::new(),
    });
    texts.filter(|t| !t.is_empty()).collect::<Vec<_>>().join(" ")
}

/// AgentV's `expected_output` as messages (`expandExpectedOutputShorthand`).
pub(super) fn expected_messages(expected: &Value) -> Vec<Value> {
    match expected {
        Value::String(s) => vec![json!({"role": "assistant", "content": s})],
        Value::Array(list) if list.first().is_some_and(|m| m.get("role").is_some()) => list.clone(),
        Value::Object(o) if o.contains_key("role") => vec![expected.clone()],
        other => vec![json!({"role": "assistant", "content": other})],
    }
}

/// `input` as messages `{role, content}`, the content as plain text (not yet a template).
pub(super) fn messages(input: &Value, at: &str, files: &Files, problems: &mut Problems) -> Vec<Value> {
    let one = |role: &str, content: &str| json!({"role": role, "content": content});
    match input {
        Value::String(s) => vec![one("user", s)],
        Value::Array(list) => list
            .iter()
            .enumerate()
            .filter_map(|(i, m)| {
                let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
                match content_text(m.get("content").unwrap_or(&Value::Null), Some(files)) {
                    Ok(text) => Some(one(role, &text)),
                    Err(e) => {
                        problems.push((format!("{at}/{i}/content"), e));
                        None
                    }
                }
            })
            .collect(),
        Value::Object(o) if o.contains_key("role") => messages(&Value::Array(vec![input.clone()]), at, files, problems),
        // An object without `role` is structured user content.
        other => vec![one("user", &other.to_string())],
    }
}

/// Where `file` content blocks are read from, and how AgentV 4.42.4 shows them
/// (`formatting/segment-formatter.ts`): a model gets the file embedded,
/// `<file path="PATH">` … `</file>`; an agent or command (its `cli` target) gets a
/// reference to it, `<file: path="ABSOLUTE">`.
pub(super) struct Files<'a> {
    pub dir: &'a std::path::Path,
    pub embed: bool,
}

impl Files<'_> {
    fn block(&self, path: &str) -> Result<String, String> {
        // AgentV drops a block whose file is missing (with a warning): refused here instead.
        let file = self.find(path).ok_or_else(|| {
            format!("cannot find the file `{path}` beside the eval file or in a directory above it, up to the repository's root")
        })?;
        let text = crate::yaml::read(&file).map_err(|e| format!("cannot read the file `{path}`: {e}"))?;
        let shown = path.trim_start_matches(['/', '\\']);
        Ok(if self.embed {
            format!("<file path=\"{shown}\">\n{}\n</file>", text.replace("\r\n", "\n").trim())
        } else {
            format!("<file: path=\"{}\">", file.display())
        })
    }

    /// Where AgentV finds a file (`resolveFileReference`, `buildSearchRoots`): an absolute
    /// path as it is, then the path (its leading `/` trimmed) from the eval's directory and
    /// each directory above it, up to the repository's root.
    fn find(&self, path: &str) -> Option<std::path::PathBuf> {
        let shown = path.trim_start_matches(['/', '\\']);
        let absolute = std::path::Path::new(path).is_absolute().then(|| std::path::PathBuf::from(path));
        let mut above = self.dir.ancestors().scan(false, |past_root, dir| {
            (!*past_root).then(|| {
                *past_root = dir.join(".git").exists();
                dir.join(shown)
            })
        });
        absolute.into_iter().chain(&mut above).find(|p| p.is_file())
    }
}

/// A message's content: a string, or text blocks and (with `files`) file blocks.
fn content_text(content: &Value, files: Option<&Files>) -> Result<String, String> {
    match content {
        Value::String(s) => Ok(s.clone()),
        Value::Array(blocks) => {
            let mut parts = Vec::new();
            for b in blocks {
                let value = b.get("value").or_else(|| b.get("text")).and_then(Value::as_str).unwrap_or_default();
                match (b.get("type").and_then(Value::as_str), files) {
                    (Some("text"), _) => parts.push(value.to_owned()),
                    (Some("file"), Some(files)) => parts.push(files.block(value)?),
                    (other, _) => {
                        return Err(format!("`{}` content blocks are not supported", other.unwrap_or("untyped")));
                    }
                }
            }
            Ok(parts.join("\n"))
        }
        other => Ok(other.to_string()),
    }
}

/// `expected_output` as text: a string, the last message's content, or JSON.
pub(super) fn expected_text(expected: &Value, files: &Files) -> String {
    match expected {
        Value::String(s) => s.clone(),
        Value::Array(list) => {
            list.last().and_then(|m| content_text(&m["content"], Some(files)).ok()).unwrap_or_default()
        }
        other => other.to_string(),
    }
}
