//! MCP evals (the `evals/list` proposal) from a JSON file `{evals: [...]}`: each `Eval`
//! `{id, name, description?, gradingType, input, expected}` becomes a native task whose
//! level is `input.type`, against the importing suite's server and agent.
//!
//! - `execution`: `input {toolName, arguments}` → `call`; `exact-match` compares the result
//!   with `expected`: a string with `equals`, anything else with `json` deep equality.
//! - `invocation`: `input {messages}` → the model's first tool call must be
//!   `expected {toolName, arguments}` (`tool_called` with the arguments as a subset).
//! - `scenario`: `input {messages, maxTurns}` → judged (`llm-as-judge` only): the answer must
//!   contain, in meaning, `expected` (its text, or its JSON).
//! - `llm-as-judge` on the other levels → an `llm` grader on `expected`.
//! - `scenario` with `exact-match` is invalid (the proposal says so).

use serde_json::{Value, json};

use super::native_text::{literal, placeholder_model, task_id};
use super::{ConvertCx, Converted, ForeignFormat, Origin, Problems, ServerListing, Unrunnable};
use crate::mcp::extensions::EVALS;
use crate::mcp::pages::Pages;
use crate::mcp::servers::START_TIMEOUT;
use crate::mcp::session::{Endpoint, McpSession, connect};

pub struct McpEvals;

impl ForeignFormat for McpEvals {
    fn name(&self) -> &'static str {
        "MCP evals"
    }

    fn import_name(&self) -> &'static str {
        "mcp-evals"
    }

    fn detect(&self, doc: &Value) -> bool {
        doc.get("evals").is_some_and(Value::is_array)
    }

    fn convert(&self, doc: &Value, cx: &ConvertCx) -> Result<Converted, Problems> {
        convert(doc, cx)
    }

    fn unrunnable(&self, doc: &Value) -> Option<Unrunnable> {
        validate(doc).is_empty().then_some(Unrunnable {
            why: "MCP evals do not say how to reach their server",
            import_keys: "server: NAME, agent: NAME",
        })
    }

    fn server_listing(&self) -> Option<ServerListing> {
        Some(fetch)
    }
}

/// The native suite: one task per eval, against the importing suite's server.
fn convert(doc: &Value, cx: &ConvertCx) -> Result<Converted, Problems> {
    let problems = validate(doc);
    if !problems.is_empty() {
        return Err(problems);
    }
    // On its own (`evalgate convert`), placeholders to point at the real server and model.
    let server = cx.server.unwrap_or("server");
    let tasks = tasks(doc, server, Some(cx.agent.unwrap_or("agent")));
    let origins =
        (0..tasks.len()).map(|i| Origin { file: cx.file.to_owned(), at: format!("evals[{i}]"), line: None }).collect();
    let mut suite = json!({"evalgate": 1, "suite": "mcp-evals"});
    if cx.server.is_none() {
        suite["mcp_servers"] = json!({"server": {"command": ["./server.sh"]}});
        let mut model = placeholder_model();
        model["mcp"] = json!(["server"]);
        suite["agents"] = json!({"agent": model});
        if tasks.iter().any(|t| t["grade"][0]["type"] == "llm") {
            suite["judge"] = placeholder_model();
        }
    }
    suite["tasks"] = Value::Array(tasks);
    Ok(Converted { suite, origins })
}

/// `{evals: [...]}` read from a live server with `evals/list`, following `nextCursor`.
fn fetch(endpoint: &Endpoint) -> Result<Value, String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let session = connect(endpoint, None, START_TIMEOUT).await.map_err(|e| format!("did not start: {e}"))?;
        let listed = list_all(&session).await;
        session.close().await;
        listed
    })
}

async fn list_all(session: &dyn McpSession) -> Result<Value, String> {
    let mut evals = Vec::new();
    let mut pages = Pages::new("evals/list");
    let mut params = json!({});
    loop {
        let page = tokio::time::timeout(START_TIMEOUT, session.request("evals/list", params))
            .await
            .map_err(|_| "`evals/list` did not answer".to_owned())?
            .map_err(|e| {
                if advertises_evals(session) {
                    e.0
                } else {
                    format!("{} (the server does not advertise the `{EVALS}` extension)", e.0)
                }
            })?;
        let Some(page_evals) = page.get("evals").and_then(Value::as_array) else {
            let text = page.to_string();
            return Err(format!(
                "`evals/list` answered without an `evals` array: {}",
                crate::excerpt::excerpt(&text, 200)
            ));
        };
        evals.extend(page_evals.iter().cloned());
        let cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
        match pages.next(page.to_string().len(), cursor)? {
            None => return Ok(json!({"evals": evals})),
            Some(cursor) => params = json!({"cursor": cursor}),
        }
    }
}

/// Whether the server advertised `evals/list` as the [`EVALS`] extension.
fn advertises_evals(session: &dyn McpSession) -> bool {
    session.info().extensions.iter().any(|e| e == EVALS)
}

/// Every problem, as `(JSON pointer, message)`.
fn validate(doc: &Value) -> Problems {
    let mut problems = Vec::new();
    let Some(evals) = doc.get("evals").and_then(Value::as_array) else {
        return vec![(String::new(), "an MCP evals file is `{\"evals\": [...]}`".into())];
    };
    let mut seen = std::collections::HashSet::new();
    for (i, e) in evals.iter().enumerate() {
        let at = format!("/evals/{i}");
        match e.get("id").and_then(Value::as_str) {
            Some(id) if !seen.insert(id.to_owned()) => {
                problems.push((format!("{at}/id"), format!("duplicate id `{id}`")))
            }
            Some(_) => {}
            None => problems.push((format!("{at}/id"), "missing `id`".into())),
        }
        let grading = e.get("gradingType").and_then(Value::as_str);
        if !matches!(grading, Some("exact-match" | "llm-as-judge")) {
            problems.push((format!("{at}/gradingType"), "expected `exact-match` or `llm-as-judge`".into()));
        }
        match e.pointer("/input/type").and_then(Value::as_str) {
            Some("execution") if e.pointer("/input/toolName").and_then(Value::as_str).is_none() => {
                problems.push((format!("{at}/input"), "an execution eval needs `toolName`".into()));
            }
            Some("invocation" | "scenario") if e.pointer("/input/messages").and_then(Value::as_array).is_none() => {
                problems.push((format!("{at}/input"), "needs `messages`".into()));
            }
            Some("scenario") if grading == Some("exact-match") => {
                problems.push((format!("{at}/gradingType"), "a scenario cannot be graded by `exact-match`".into()));
            }
            Some("invocation") if grading == Some("exact-match") && e.pointer("/expected/toolName").is_none() => {
                problems.push((format!("{at}/expected"), "an exact-match invocation needs `expected.toolName`".into()));
            }
            Some("execution" | "invocation" | "scenario") => {}
            _ => problems.push((format!("{at}/input/type"), "expected `invocation`, `execution` or `scenario`".into())),
        }
        if e.get("expected").is_none() {
            problems.push((format!("{at}/expected"), "missing `expected`".into()));
        }
    }
    problems
}

/// Native tasks against `server`, run by `agent` where a model is needed.
fn tasks(doc: &Value, server: &str, agent: Option<&str>) -> Vec<Value> {
    doc["evals"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let id = task_id(e["id"].as_str().unwrap_or_default());
            let level = e["input"]["type"].as_str().unwrap_or_default();
            let expected = &e["expected"];
            let judged = e["gradingType"] == "llm-as-judge";
            let mut task = json!({"id": id, "level": level});
            if let Some(d) = e.get("description").or_else(|| e.get("name")).and_then(Value::as_str) {
                task["description"] = json!(d);
            }
            let judge_text = match expected {
                Value::String(s) => literal(s),
                other => literal(&other.to_string()),
            };
            let grader = if level == "execution" {
                task["call"] = json!({"server": server, "tool": e["input"]["toolName"], "arguments": e["input"].get("arguments").cloned().unwrap_or(json!({}))});
                match (judged, expected) {
                    (true, _) => json!({"type": "llm", "contains": judge_text}),
                    (false, Value::String(s)) => json!({"type": "equals", "value": literal(s)}),
                    (false, v) => json!({"type": "json", "equals": v}),
                }
            } else {
                task["agent"] = json!(agent);
                task["messages"] = Value::Array(
                    e["input"]["messages"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|m| json!({"role": m["role"], "content": literal(m["content"].as_str().unwrap_or_default())}))
                        .collect(),
                );
                match (level, judged) {
                    ("invocation", false) => {
                        let mut g = json!({"type": "tool_called", "tool": format!("{server}.{}", expected["toolName"].as_str().unwrap_or_default())});
                        if let Some(args) = expected.get("arguments") {
                            g["arguments"] = args.clone();
                        }
                        g
                    }
                    _ => json!({"type": "llm", "contains": judge_text}),
                }
            };
            task["grade"] = json!([grader]);
            task
        })
        .collect()
}
