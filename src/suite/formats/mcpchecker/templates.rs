//! mcpchecker text as native template text: its references (`{env.X}`, `${X}`,
//! `{steps.…}`, …) mapped onto native variables, everything else made literal. In a shell
//! command, `${X}` and braces that are no reference are the shell's and reach it unchanged.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Value, json};

use super::task::{TaskCx, Version};
use crate::suite::formats::native_text::literal;
use crate::template::ShellReader;

impl TaskCx<'_> {
    /// An mcpchecker template as a native one; `None` (with a problem) for a reference
    /// evalgate has no equivalent of.
    pub(super) fn template(&mut self, text: &str, at: &str) -> Option<String> {
        self.render(text, at, false)
    }

    /// A shell command mcpchecker pastes values into, converted by evalgate's rule
    /// (`template::ShellReader`): each value reaches the shell as a variable set in the
    /// step's `env` (`EVALGATE_VALUE_N`), referred to where the script reads it with
    /// certainty, refused (a problem here, in the mcpchecker file) where it would be misread
    /// or run. `${X}` and braces that are no reference are the shell's, unchanged. Returns
    /// the native script (literal text) and the variables to set.
    pub(super) fn shell_command(&mut self, text: &str, at: &str) -> Option<(String, Vec<(String, String)>)> {
        let (mut script, mut values) = (String::new(), Vec::<(String, String)>::new());
        let mut reader = ShellReader::default();
        let mut last = 0;
        for m in REF.find_iter(text) {
            let shell_text = &text[last..m.start()];
            reader.read(shell_text);
            script.push_str(&literal(shell_text));
            last = m.end();
            let native = self.render(m.as_str(), at, true)?;
            if native == literal(m.as_str()) {
                reader.read(m.as_str());
                script.push_str(&native);
                continue;
            }
            let name = match values.iter().find(|(_, v)| *v == native) {
                Some((name, _)) => name.clone(),
                None => {
                    let name = format!("EVALGATE_VALUE_{}", values.len() + 1);
                    values.push((name.clone(), native));
                    name
                }
            };
            match reader.reference(&name) {
                Ok(reference) => script.push_str(&reference),
                Err(refused) => {
                    self.problem(at, format!("`{}` {}: {}", m.as_str(), refused.why, refused.help));
                    return None;
                }
            }
        }
        reader.read(&text[last..]);
        script.push_str(&literal(&text[last..]));
        if let Err(refused) = reader.finish() {
            self.problem(at, format!("a value {}: {}", refused.why, refused.help));
            return None;
        }
        Some((script, values))
    }

    fn render(&mut self, text: &str, at: &str, shell: bool) -> Option<String> {
        let mut out = String::new();
        let mut last = 0;
        for caps in REF.captures_iter(text) {
            let whole = caps.get(0).expect("a match");
            out.push_str(&text[last..whole.start()]);
            last = whole.end();
            if let Some(var) = caps.get(1) {
                if shell {
                    out.push_str(&literal(whole.as_str()));
                    continue;
                }
                if caps.get(2).is_some() {
                    self.problem(at, format!("`{}`: defaults in `${{…}}` are not supported", whole.as_str()));
                    return None;
                }
                out.push_str(&format!("{{env.{}}}", var.as_str()));
                continue;
            }
            // In a shell command, braces that are no reference are the shell's: `awk '{print
            // $1}'`, `jsonpath='{.spec.x}'`, `jq '{a: .b}'`.
            let reference = caps.get(3).map(|m| m.as_str()).filter(|inner| !shell || is_reference(inner, &self.locals));
            if shell && reference.is_none() {
                out.push_str(&literal(whole.as_str()));
                continue;
            }
            let Some(inner) = reference else {
                self.problem(
                    at,
                    format!("a lone `{}` (mcpchecker templates have no escape for braces)", whole.as_str()),
                );
                return None;
            };
            let native = match inner.split_once('.') {
                Some(("random", "id" | "port")) | Some(("agent", "output")) => format!("{{{inner}}}"),
                Some(("agent", "prompt")) => "{prompt}".to_owned(),
                Some(("env", name)) => match self.env.iter().find(|(k, _)| k == name) {
                    Some((_, value)) => value.clone(),
                    None => format!("{{env.{name}}}"),
                },
                Some(("task", "name")) if self.version == Version::Portable => literal(&self.name),
                Some(("steps", rest)) if self.version == Version::Portable => format!("{{steps.{rest}}}"),
                Some(("steps", rest)) => {
                    let found = rest.rsplit_once('.').and_then(|(kind, key)| {
                        let id = self.outputs_by_type.get(kind)?;
                        if let Some(read) = self.extension_outputs.get_mut(id) {
                            read.insert(key.to_owned());
                        }
                        Some(format!("{{steps.{id}.outputs.{key}}}"))
                    });
                    match found {
                        Some(reference) => reference,
                        None => {
                            let message = format!(
                                "`{{{inner}}}` refers to no earlier MCP tool or extension step in setup (only those have outputs here)"
                            );
                            self.problem(at, message);
                            return None;
                        }
                    }
                }
                None if self.locals.iter().any(|l| l == inner) => format!("{{{inner}}}"),
                _ => {
                    self.problem(at, format!("unknown reference `{{{inner}}}`"));
                    return None;
                }
            };
            out.push_str(&native);
        }
        out.push_str(&text[last..]);
        Some(out)
    }
}

/// A reference in mcpchecker text: `${X}`, `{…}`, or a lone brace.
static REF: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}|\{([^{}]*)\}|[{}]").expect("valid regex"));

/// Whether `{inner}` names one of mcpchecker's namespaces or a loop variable.
fn is_reference(inner: &str, locals: &[String]) -> bool {
    let namespace = inner.split_once('.').map_or(inner, |(ns, _)| ns);
    matches!(namespace, "random" | "agent" | "env" | "task" | "steps") || locals.iter().any(|l| l == inner)
}

/// A JSON value whose strings are literal text in a native template.
pub(super) fn literal_json(value: &Value) -> Value {
    match value {
        Value::String(s) => json!(literal(s)),
        Value::Array(items) => Value::Array(items.iter().map(literal_json).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), literal_json(v))).collect()),
        other => other.clone(),
    }
}

pub(super) fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
