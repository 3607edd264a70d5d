//! The JSON a `command` grader reads on stdin: evalgate's own keys, the portable task
//! format's (`task`, `agent`, `mcp.callHistory`) and AgentV 4.42.4's code-grader payload
//! (`criteria`, `expected_output`, `output`, `messages`, `input_files`, `input`, `metadata`,
//! `trace`, `trace_summary`, `token_usage`, `cost_usd`, `duration_ms`, `start_time`,
//! `end_time`, `file_changes`, `workspace_path`, `config`), so a grader written against any
//! of the three reads what it expects. AgentV builds its payload in camelCase and converts
//! every key to snake_case (`toSnakeCaseDeep`); the AgentV part here is built the same way.

use std::time::SystemTime;

use serde_json::{Map, Value, json};

use super::GradeInput;
use crate::json::snake_case_deep;

/// The whole stdin context; `extra` (the grader's `context`) is merged last.
pub fn context(input: &GradeInput<'_>, extra: &Map<String, Value>) -> Value {
    let b = input.bindings;
    let calls = input.trace.calls();
    let history: Vec<_> = calls
        .iter()
        .map(|c| json!({"serverName": c.server, "toolName": c.name, "arguments": c.arguments, "result": c.result}))
        .collect();
    let mut context = json!({
        "task": {"id": b.task_id, "name": b.task_id, "prompt": b.prompt},
        "prompt": b.prompt,
        "output": input.output,
        "exit_code": input.exit_code,
        "latency_ms": input.latency.as_millis() as u64,
        "tool_calls": calls,
        "usage": input.trace.usage,
        "model": input.trace.model,
        "agent": {"output": input.output, "exitCode": input.exit_code},
        "mcp": {"callHistory": {"toolCalls": history, "resourceReads": [], "promptGets": []}},
    });
    let map = context.as_object_mut().expect("an object");
    // A conversation's whole-conversation graders: every turn, its answer and tool calls.
    if let Some(turns) = &input.trace.conversation {
        map.insert("conversation".into(), json!({"turns": turns}));
    }
    let input_messages = extra.get("input").cloned().unwrap_or_else(|| json!([{"role": "user", "content": b.prompt}]));
    map.extend(agentv(input, &input_messages));
    map.extend(extra.clone());
    context
}

/// AgentV's payload (code-grader.ts at v4.42.4), with the transcript evalgate knows: the
/// input messages and one assistant message carrying the answer and the tool calls.
fn agentv(input: &GradeInput<'_>, input_messages: &Value) -> Map<String, Value> {
    let duration_ms = input.latency.as_millis() as u64;
    let start = rfc3339(input.started_at);
    let end = rfc3339(input.started_at + input.latency);
    let usage = input.trace.usage.as_ref();
    let token_usage = usage
        .filter(|u| u.input_tokens.is_some() || u.output_tokens.is_some())
        .map(|u| json!({"input": u.input_tokens.unwrap_or(0), "output": u.output_tokens.unwrap_or(0)}));
    let cost_usd = usage.and_then(|u| u.cost_usd);

    let calls = input.trace.calls();
    let tool_calls: Vec<Value> = calls
        .iter()
        .map(|c| {
            let mut call = json!({"tool": c.name, "input": c.arguments});
            if let Some(result) = &c.result {
                call["output"] = result.clone();
            }
            if let Some(ms) = c.duration_ms {
                call["durationMs"] = json!(ms);
            }
            call
        })
        .collect();
    let mut answer = json!({"role": "assistant", "content": input.output});
    if !tool_calls.is_empty() {
        answer["toolCalls"] = Value::Array(tool_calls);
    }
    let mut messages: Vec<Value> = input_messages.as_array().cloned().unwrap_or_default();
    messages.push(answer);

    let mut counts = Map::new();
    let mut durations = Map::new();
    for c in calls {
        let n = counts.get(&c.name).and_then(Value::as_u64).unwrap_or(0);
        counts.insert(c.name.clone(), json!(n + 1));
        if let Some(ms) = c.duration_ms {
            let list = durations.entry(c.name.clone()).or_insert_with(|| json!([]));
            list.as_array_mut().expect("a list").push(json!(ms));
        }
    }
    let mut summary = json!({
        "eventCount": calls.len(),
        "toolCalls": counts,
        "errorCount": 0,
        "llmCallCount": 1,
    });
    if !durations.is_empty() {
        summary["toolDurations"] = Value::Object(durations);
    }
    let mut trace = summary.clone();
    trace["messages"] = json!(messages);
    trace["events"] = json!(events(&messages));
    trace["durationMs"] = json!(duration_ms);
    trace["startTime"] = json!(start);
    trace["endTime"] = json!(end);
    if let Some(t) = &token_usage {
        trace["tokenUsage"] = t.clone();
    }
    if let Some(c) = cost_usd {
        trace["costUsd"] = json!(c);
    }
    trace["metadata"] = json!({"evalCaseId": input.bindings.task_id});

    let payload = json!({
        "criteria": "",
        "expectedOutput": [],
        "output": input.output,
        "messages": messages,
        "inputFiles": [],
        "input": input_messages,
        "metadata": null,
        "trace": trace,
        "traceSummary": summary,
        "tokenUsage": token_usage,
        "costUsd": cost_usd,
        "durationMs": duration_ms,
        "startTime": start,
        "endTime": end,
        // AgentV's `git diff` against the workspace's baseline: null when nothing changed.
        "fileChanges": input.workspace.map(|(_, diff)| diff.trim()).filter(|d| !d.is_empty()),
        "workspacePath": input.workspace.map(|(dir, _)| dir.display().to_string()),
        "config": null,
    });
    match snake_case_deep(payload) {
        Value::Object(map) => map,
        _ => unreachable!("an object stays an object"),
    }
}

/// AgentV's trace events for the transcript: one `message` event a message, a `tool_call`
/// (and `tool_result`) event a tool call, and the `final_response`.
fn events(messages: &[Value]) -> Vec<Value> {
    let mut events = Vec::new();
    let mut ordinal = 0;
    let mut next = || {
        ordinal += 1;
        ordinal - 1
    };
    for (i, m) in messages.iter().enumerate() {
        let id = format!("message-{i}");
        events.push(json!({"eventId": id, "ordinal": next(), "type": "message",
            "message": {"role": m["role"], "content": m["content"]}, "metadata": {"messageIndex": i}}));
        for (t, call) in m.get("toolCalls").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let tool_id = format!("{id}-tool-{t}");
            let tool =
                json!({"name": call["tool"], "input": call["input"], "output": call.get("output"), "status": "ok"});
            events.push(json!({"eventId": tool_id, "parentEventId": id, "ordinal": next(), "type": "tool_call",
                "tool": tool, "metadata": {"messageIndex": i, "toolIndex": t}}));
            if let Some(output) = call.get("output") {
                events.push(
                    json!({"eventId": format!("{tool_id}-result"), "parentEventId": tool_id, "ordinal": next(),
                    "type": "tool_result", "tool": {"name": call["tool"], "output": output, "status": "ok"},
                    "metadata": {"messageIndex": i, "toolIndex": t}}),
                );
            }
        }
    }
    if let Some(last) = messages.len().checked_sub(1) {
        events.push(json!({"eventId": "final-response", "parentEventId": format!("message-{last}"), "ordinal": next(),
            "type": "final_response", "message": {"role": "assistant", "content": messages[last]["content"]},
            "metadata": {"messageIndex": last}}));
    }
    events
}

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}
