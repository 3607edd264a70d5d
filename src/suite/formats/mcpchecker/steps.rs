//! A task's phases (setup, verify, cleanup), its prompt, and each step by type: the
//! dispatcher to `local_steps` and `remote_steps`, plus the step kinds that nest others.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::task::{Alias, Phase, TaskCx, Version};
use super::templates::scalar;
use crate::suite::formats::native_text::{literal, task_id};

impl TaskCx<'_> {
    pub(super) fn phase(&mut self, spec: &Value, base: &str, key: &str, phase: Phase) -> Vec<Value> {
        let mut out = Vec::new();
        for (i, raw) in spec.get(key).and_then(Value::as_array).into_iter().flatten().enumerate() {
            let at = format!("{base}/{key}/{i}");
            if let Some(mut converted) = self.step(raw, &at, phase) {
                if phase == Phase::Verify && converted.get("type").is_none() {
                    converted = json!({"type": "steps", "steps": [converted]});
                }
                if phase == Phase::Verify && converted.get("name").is_none() {
                    converted["name"] = json!(format!("{key}[{i}] {}", step_type(raw).unwrap_or_default()));
                }
                out.push(converted);
            }
        }
        out
    }

    pub(super) fn prompt(&mut self, spec: &Value, base: &str) -> String {
        let at = format!("{base}/prompt");
        let text = match spec.get("prompt") {
            Some(Value::String(s)) if self.version == Version::Portable => s.clone(),
            Some(p) if p.get("inline").is_some() => scalar(&p["inline"]),
            Some(p) if p.get("file").is_some() => {
                let path = self.file.parent().unwrap_or(Path::new("")).join(scalar(&p["file"]));
                match crate::files::read::text(&path, crate::files::read::TEXT) {
                    Ok(text) => text,
                    Err(e) => {
                        self.problem(&format!("{at}/file"), format!("cannot read {}: {e}", path.display()));
                        return String::new();
                    }
                }
            }
            _ => {
                self.problem(&at, "a task needs a prompt (`inline` or `file`)");
                return String::new();
            }
        };
        if self.version == Version::V1Alpha1 { literal(&text) } else { self.template(&text, &at).unwrap_or_default() }
    }

    /// A native step, or a grader when it can only be one (`llmJudge`, `protocol: json`).
    fn step(&mut self, raw: &Value, at: &str, phase: Phase) -> Option<Value> {
        let Some(kind) = step_type(raw) else {
            self.problem(at, "each step must have exactly one type");
            return None;
        };
        let body = &raw[kind.as_str()];
        let at = format!("{at}/{}", kind.replace('/', "~1"));
        // v1alpha2 keeps `id` beside the type; the portable format inside the body.
        let id = raw.get("id").or_else(|| body.get("id")).and_then(Value::as_str).map(task_id);
        let mut step = match kind.as_str() {
            "script" => self.script(body, &at, phase)?,
            "llmJudge" | "llm" => {
                if phase != Phase::Verify {
                    self.problem(&at, "an LLM judge can only verify");
                    return None;
                }
                self.judge = true;
                let mut grader = json!({"type": "llm"});
                for key in ["contains", "exact"] {
                    if let Some(text) = body.get(key) {
                        grader[key] = json!(self.template(&scalar(text), &format!("{at}/{key}"))?);
                    }
                }
                if (grader.get("contains").is_some()) == (grader.get("exact").is_some()) {
                    self.problem(&at, "set exactly one of `contains` and `exact`");
                    return None;
                }
                return Some(grader);
            }
            "http" => self.http(body, &at, phase)?,
            "command" if self.version == Version::Portable => self.command(body, &at)?,
            "file" if self.version == Version::Portable => self.file_step(body, &at)?,
            "foreach" if self.version == Version::Portable => {
                let var = body.get("var").and_then(Value::as_str).unwrap_or_default().to_owned();
                let items = match body.get("in") {
                    Some(Value::String(t)) => json!(self.template(t, &format!("{at}/in"))?),
                    Some(Value::Array(items)) => {
                        json!(items.iter().map(scalar).map(|s| literal(&s)).collect::<Vec<_>>())
                    }
                    _ => {
                        self.problem(&format!("{at}/in"), "expected a list or a template");
                        return None;
                    }
                };
                self.locals.push(var.clone());
                let steps = self.steps(body.get("steps"), &format!("{at}/steps"), phase);
                self.locals.pop();
                json!({"foreach": {"var": var, "in": items, "steps": steps?}})
            }
            "anyOf" if self.version == Version::Portable => {
                json!({"any_of": self.steps(Some(body), &at, phase)?})
            }
            "group" if self.version == Version::Portable => {
                let setup = self.steps(body.get("setup"), &format!("{at}/setup"), Phase::Setup);
                let steps = self.steps(body.get("steps"), &format!("{at}/steps"), phase);
                let cleanup = self.steps(body.get("cleanup"), &format!("{at}/cleanup"), Phase::Cleanup);
                json!({"group": {"setup": setup?, "steps": steps?, "cleanup": cleanup?}})
            }
            "extension" => {
                let package = body.get("package").and_then(Value::as_str).unwrap_or("?");
                self.problem(&at, format!("extensions are not supported: step `extension` runs `{package}`"));
                return None;
            }
            dotted if dotted.contains('.') => {
                let (alias, op) = dotted.split_once('.').expect("contains a dot");
                match self.aliases.get(alias) {
                    Some(Alias::Server(server)) => {
                        let server = server.clone();
                        self.mcp(body, &at, &server, op, dotted, phase)?
                    }
                    Some(Alias::Extension(name)) => {
                        // mcpchecker sends an extension's arguments as written (no templates).
                        let args = super::templates::literal_json(body);
                        let mut step = json!({"extension": {"name": name, "operation": op, "args": args}});
                        if phase == Phase::Setup && self.version != Version::Portable {
                            // Its outputs are found by step type, as an MCP step's are.
                            let id = format!("{}-{}", task_id(alias), self.outputs_by_type.len() + 1);
                            self.outputs_by_type.insert(dotted.to_owned(), id.clone());
                            self.extension_outputs.insert(id.clone(), Default::default());
                            step["id"] = json!(id);
                        }
                        step
                    }
                    None => {
                        let message =
                            format!("step `{dotted}`: `{alias}` is not in `requires` (an mcpServer or extension)");
                        self.problem(&at, message);
                        return None;
                    }
                }
            }
            other => {
                self.problem(&at, format!("unknown step type `{other}`"));
                return None;
            }
        };
        if step.get("type").is_some() {
            return Some(step);
        }
        if let Some(id) = id.filter(|_| step.get("id").is_none()) {
            step["id"] = json!(id);
        }
        if body.get("continueOnError").and_then(Value::as_bool) == Some(true) {
            step["continue_on_error"] = json!(true);
        }
        Some(step)
    }

    fn steps(&mut self, list: Option<&Value>, at: &str, phase: Phase) -> Option<Vec<Value>> {
        let before = self.problems.len();
        let mut out = Vec::new();
        for (i, raw) in list.and_then(Value::as_array).into_iter().flatten().enumerate() {
            let at = format!("{at}/{i}");
            match self.step(raw, &at, phase) {
                Some(s) if s.get("type").is_some() => {
                    self.problem(&at, "an LLM judge or `protocol: json` script cannot be nested in other steps")
                }
                Some(s) => out.push(s),
                None => {}
            }
        }
        (self.problems.len() == before).then_some(out)
    }

    /// Portable `outputs: {NAME: "{stdout}"}`, with its spellings mapped to native ones.
    pub(super) fn outputs(&mut self, body: &Value, at: &str, step: &mut Value, renames: &[(&str, &str)]) {
        let Some(outputs) = body.get("outputs").and_then(Value::as_object) else { return };
        if self.version != Version::Portable {
            return;
        }
        let mut out = Map::new();
        for (name, spec) in outputs {
            let spec = scalar(spec);
            let spec = renames.iter().find(|(from, _)| *from == spec).map_or(spec.clone(), |(_, to)| (*to).to_owned());
            out.insert(name.clone(), json!(spec));
        }
        if step.get("id").is_none() && body.get("id").is_none() {
            self.problem(&format!("{at}/outputs"), "a step with `outputs` needs an `id`");
        }
        step["outputs"] = Value::Object(out);
    }
}

/// The one type key of a step map (besides `id`).
fn step_type(raw: &Value) -> Option<String> {
    let keys: Vec<&String> = raw.as_object()?.keys().filter(|k| *k != "id").collect();
    match keys.as_slice() {
        [one] => Some((*one).clone()),
        _ => None,
    }
}
