//! `events.jsonl`: OpenWOP eval events, one JSON object a line, written as the run goes.

use serde_json::{Value, json};

use crate::results::summary::{openwop_suite_id, openwop_task_id};
use crate::results::{Results, Status, TaskResult};

pub fn started(suite_id: &str, suite_version: Option<&str>, task_count: usize, at: &str) -> Value {
    json!({
        "type": "eval.started",
        "timestamp": at,
        "payload": {
            "suiteId": openwop_suite_id(suite_id),
            "suiteVersion": suite_version.unwrap_or("0.0.0"),
            "taskCount": task_count,
        }
    })
}

pub fn scored(suite_id: &str, task: &TaskResult, at: &str) -> Value {
    let mut payload = json!({
        "suiteId": openwop_suite_id(suite_id),
        "taskId": openwop_task_id(&task.id),
        "score": task.score,
        "passed": task.status == Status::Passed,
        "status": task.status.label(),
    });
    if let Some(cost) = task.cost_usd() {
        payload["costUsd"] = json!(cost);
    }
    if let Some(latency) = task.latency_ms() {
        payload["latencyMs"] = json!(latency);
    }
    json!({"type": "eval.scored", "timestamp": at, "payload": payload})
}

pub fn completed(results: &Results, at: &str) -> Value {
    let s = crate::results::summary::summary(results);
    let mut payload = json!({
        "suiteId": s.suite_id,
        "suiteVersion": s.suite_version,
        "aggregateScore": s.aggregate_score,
        "passed": s.passed,
        "taskCount": s.task_count,
        "passedCount": s.passed_count,
    });
    if let Some(cost) = s.total_cost_usd {
        payload["totalCostUsd"] = json!(cost);
    }
    if let Some(r) = &s.regression {
        payload["regressionVsBaseline"] = json!({"baselineRunId": r.baseline_run_id, "scoreDelta": r.score_delta});
    }
    json!({"type": "eval.completed", "timestamp": at, "payload": payload})
}
