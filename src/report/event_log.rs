//! `events.jsonl`: OpenWOP eval events, one JSON object a line, written as the run goes.

use serde_json::{Value, json};

use crate::results::summary::{openwop_suite_id, openwop_task_id};
use crate::results::{Results, Status, TaskResult};

/// Where each event of one run is: the OpenWOP envelope (`eventId`, `runId`, `sequence` from
/// 0, `timestamp`) around a payload.
pub struct Envelope {
    pub run_id: String,
    pub sequence: u64,
}

impl Envelope {
    pub fn event(&mut self, kind: &str, payload: Value, at: &str) -> Value {
        let sequence = self.sequence;
        self.sequence += 1;
        json!({
            "eventId": format!("{}-{sequence}", self.run_id),
            "runId": self.run_id,
            "sequence": sequence,
            "type": kind,
            "timestamp": at,
            "payload": payload,
        })
    }
}

/// `eval.started`: the suite, its version (`0.0.0` when it declares none: OpenWOP requires
/// one), the planned task count, its modes and the baseline's run id when there is one.
pub fn started(results: &Results, task_count: usize, baseline_run_id: Option<&str>) -> Value {
    let mut payload = json!({
        "suiteId": openwop_suite_id(&results.suite.id),
        "suiteVersion": results.suite.version.as_deref().unwrap_or("0.0.0"),
        "taskCount": task_count,
        "modes": results.suite.modes,
    });
    if let Some(id) = baseline_run_id.filter(|id| !id.is_empty()) {
        payload["baselineRunId"] = json!(id);
    }
    payload
}

/// `eval.scored`, once per task that ran, after its trials.
pub fn scored(suite_id: &str, task: &TaskResult) -> Value {
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
    payload
}

/// `eval.completed`; `regressionVsBaseline` is the score delta (a number, as upstream), the
/// baseline's run id beside it.
pub fn completed(results: &Results) -> Value {
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
        payload["regressionVsBaseline"] = json!(r.score_delta);
        payload["baselineRunId"] = json!(r.baseline_run_id);
    }
    payload
}
