//! Steps that call out: `http` requests and `<server>.<tool>` MCP tool calls, with the
//! checks of their answers.

use serde_json::{Map, Value, json};

use super::task::{Phase, TaskCx, Version};
use super::templates::{literal_json, scalar};
use crate::suite::formats::native_text::{literal, task_id};

impl TaskCx<'_> {
    pub(super) fn http(&mut self, body: &Value, at: &str, phase: Phase) -> Option<Value> {
        let url = self.template(&scalar(body.get("url")?), &format!("{at}/url"))?;
        let mut http = json!({"url": url});
        if let Some(m) = body.get("method").and_then(Value::as_str).filter(|m| !m.is_empty()) {
            http["method"] = json!(self.template(m, &format!("{at}/method"))?);
        }
        if let Some(headers) = body.get("headers").and_then(Value::as_object) {
            let mut out = Map::new();
            for (k, v) in headers {
                out.insert(k.clone(), json!(self.template(&scalar(v), &format!("{at}/headers/{k}"))?));
            }
            http["headers"] = Value::Object(out);
        }
        match body.get("body") {
            None => {}
            Some(Value::String(text)) => http["body"] = json!(literal(text)),
            Some(b) if b.get("json").is_some() => http["json"] = literal_json(&b["json"]),
            Some(b) if b.get("raw").is_some() => http["body"] = json!(literal(&scalar(&b["raw"]))),
            Some(_) => {
                self.problem(&format!("{at}/body"), "expected `json` or `raw`");
                return None;
            }
        }
        if let Some(t) = body.get("timeout") {
            http["timeout"] = t.clone();
        }
        let mut step = json!({"http": http});
        if let Some(expect) = body.get("expect") {
            let mut native = json!({});
            if let Some(status) = expect.get("status").filter(|s| s.as_u64() != Some(0)) {
                native["status"] = status.clone();
            }
            if let Some(b) = expect.get("body") {
                native["body"] = self.content_checks(b, &format!("{at}/expect/body"))?;
            }
            step["http"]["expect"] = native;
            if phase == Phase::Setup && self.version == Version::V1Alpha2 {
                // mcpchecker records a failed expectation in setup without stopping the task.
                step["continue_on_error"] = json!(true);
            }
        }
        self.outputs(body, at, &mut step, &[]);
        Some(step)
    }

    /// `{match, fields: [{path, match|equals|type|exists}]}` (mcpchecker) or
    /// `{contains, matches, json: {path, equals}}` (portable) as native body checks.
    fn content_checks(&mut self, checks: &Value, at: &str) -> Option<Value> {
        let mut out = json!({});
        if let Some(c) = checks.get("contains") {
            out["contains"] = json!(self.template(&scalar(c), &format!("{at}/contains"))?);
        }
        if let Some(m) = checks.get("match").or_else(|| checks.get("matches")) {
            out["matches"] = m.clone();
        }
        let fields: Vec<&Value> = match (checks.get("fields"), checks.get("json")) {
            (Some(Value::Array(f)), _) => f.iter().collect(),
            (_, Some(j)) => vec![j],
            _ => Vec::new(),
        };
        let mut json_checks = Vec::new();
        for field in fields {
            let mut check = json!({});
            if let Some(p) = field.get("path") {
                check["path"] = p.clone();
            }
            if let Some(m) = field.get("match").or_else(|| field.get("matches")) {
                check["matches"] = m.clone();
            }
            for key in ["equals", "exists"] {
                if let Some(v) = field.get(key) {
                    check[key] = v.clone();
                }
            }
            if let Some(t) = field.get("type").and_then(Value::as_str) {
                check["type"] = json!(if t == "bool" { "boolean" } else { t });
            }
            json_checks.push(check);
        }
        if !json_checks.is_empty() {
            out["json"] = Value::Array(json_checks);
        }
        Some(out)
    }

    /// `<server>.<tool>`: `{args, expect: {isError, content}}`; in setup its result is the
    /// output `content`, found by step type as mcpchecker does.
    pub(super) fn mcp(
        &mut self,
        body: &Value,
        at: &str,
        server: &str,
        tool: &str,
        kind: &str,
        phase: Phase,
    ) -> Option<Value> {
        let mut call =
            json!({"server": server, "tool": tool, "arguments": literal_json(body.get("args").unwrap_or(&json!({})))});
        if let Some(expect) = body.get("expect") {
            let mut native = json!({});
            if let Some(e) = expect.get("isError") {
                native["is_error"] = e.clone();
            }
            if let Some(c) = expect.get("content") {
                native["output"] = self.content_checks(c, &format!("{at}/expect/content"))?;
            }
            call["expect"] = native;
        }
        let mut step = json!({"mcp": call});
        if phase == Phase::Setup {
            let id = format!("{}-{}", task_id(server), self.outputs_by_type.len() + 1);
            self.outputs_by_type.insert(kind.to_owned(), id.clone());
            step["id"] = json!(id);
            step["outputs"] = json!({"content": "{response.body}"});
        }
        Some(step)
    }
}
