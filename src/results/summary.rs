//! The OpenWOP `EvalSummary` (RFC 0081 field names and constraints, content-free).
//!
//! OpenWOP ids are stricter than ours: a suite id must look like `org.evals.name` and task ids
//! allow only `[a-z0-9-]`. An id that does not fit is mapped: suite `x` becomes
//! `local.evals.x` (dots in `x` turned into `-`), and `.`/`_` in task ids become `-`.

use serde::Serialize;

use super::run_results::{Results, Status};
use crate::policy::Severity;

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalSummary {
    pub suite_id: String,
    pub suite_version: String,
    pub aggregate_score: f64,
    pub passed: bool,
    pub task_count: usize,
    pub passed_count: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_cost_usd: Option<f64>,
    pub tasks: Vec<TaskSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regression: Option<RegressionSummary>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RegressionSummary {
    pub baseline_run_id: String,
    pub score_delta: f64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskSummary {
    pub task_id: String,
    pub score: f64,
    pub passed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_valid: Option<bool>,
    /// Failed adversarial tasks: the category and severity only (content-free).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub safety_findings: Vec<SafetyFinding>,
}

#[derive(Debug, Serialize)]
pub struct SafetyFinding {
    pub kind: String,
    pub severity: Severity,
}

pub fn summary(results: &Results) -> EvalSummary {
    let tasks: Vec<TaskSummary> = results
        .tasks
        .iter()
        .filter(|t| t.status != Status::Skipped)
        .map(|t| TaskSummary {
            task_id: openwop_task_id(&t.id),
            score: clamp(t.score.get()),
            passed: t.status == Status::Passed,
            cost_usd: t.cost_usd().map(|c| c.max(0.0)),
            latency_ms: t.latency_ms(),
            schema_valid: t.last_trial().and_then(|trial| {
                let schema: Vec<bool> = trial
                    .graders
                    .iter()
                    .filter(|g| g.kind == "json_schema")
                    .map(|g| g.status == Status::Passed)
                    .collect();
                (!schema.is_empty()).then(|| schema.iter().all(|ok| *ok))
            }),
            safety_findings: match (&t.category, t.status) {
                (Some(kind), Status::Failed | Status::Error) => {
                    vec![SafetyFinding { kind: kind.to_string(), severity: t.severity.unwrap_or_default() }]
                }
                _ => Vec::new(),
            },
        })
        .collect();
    EvalSummary {
        suite_id: openwop_suite_id(&results.suite.id),
        suite_version: results.suite.version.clone().unwrap_or_else(|| "0.0.0".into()),
        aggregate_score: clamp(results.totals.score),
        passed: results.verdict.passed,
        task_count: tasks.len(),
        passed_count: tasks.iter().filter(|t| t.passed).count(),
        total_cost_usd: results.totals.cost_usd.map(|c| c.max(0.0)),
        tasks,
        regression: results.regression.as_ref().and_then(|r| r.comparison.as_ref()).map(|c| RegressionSummary {
            baseline_run_id: if c.baseline_run_id.is_empty() { "baseline".into() } else { c.baseline_run_id.clone() },
            score_delta: c.score_delta.clamp(-1.0, 1.0),
        }),
    }
}

fn clamp(score: f64) -> f64 {
    if score.is_finite() { score.clamp(0.0, 1.0) } else { 0.0 }
}

pub fn openwop_suite_id(id: &str) -> String {
    let fits = id.split_once(".evals.").is_some_and(|(org, name)| {
        !org.is_empty()
            && !name.is_empty()
            && org.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    });
    if fits { id.to_owned() } else { format!("local.evals.{}", id.replace(['.', '_'], "-")) }
}

/// A task id in OpenWOP's shape (`^[a-z0-9][a-z0-9-]*$`), one-to-one so two tasks never
/// share one: an id that is already plain (words of `a-z0-9` joined by single hyphens) is
/// kept; any other is escaped (`-` as `-h`, `.` as `-d`, `_` as `-u`) and marked with a
/// final `--x`, which no plain id has.
pub fn openwop_task_id(id: &str) -> String {
    let plain = id
        .split('-')
        .all(|word| !word.is_empty() && word.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()));
    if plain {
        return id.to_owned();
    }
    let mut out = String::with_capacity(id.len() + 8);
    for c in id.chars() {
        match c {
            '-' => out.push_str("-h"),
            '.' => out.push_str("-d"),
            '_' => out.push_str("-u"),
            c if c.is_ascii_lowercase() || c.is_ascii_digit() => out.push(c),
            // Native ids have no other character; a results file from elsewhere might.
            c => out.push_str(&format!("-{:x}-", c as u32)),
        }
    }
    out.push_str("--x");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_mapped_into_openwop_shape() {
        assert_eq!(openwop_suite_id("acme.evals.support-bot"), "acme.evals.support-bot");
        assert_eq!(openwop_suite_id("quick.start"), "local.evals.quick-start");
        assert_eq!(openwop_suite_id("acme.evals.a.b"), "local.evals.acme-evals-a-b");
        assert_eq!(openwop_task_id("refund-policy-2"), "refund-policy-2");
        assert_eq!(openwop_task_id("a.b_c"), "a-db-uc--x");
    }

    #[test]
    fn task_ids_map_one_to_one_into_openwop_shape() {
        let pattern = regex::Regex::new("^[a-z0-9][a-z0-9-]*$").unwrap();
        let ids = ["a.b", "a_b", "a-b", "a--b", "a-", "a-db", "a-db--x", "a.b-", "a_b.c", "x", "a-ub", "a-u"];
        let mapped: std::collections::BTreeSet<String> = ids.iter().map(|id| openwop_task_id(id)).collect();
        assert_eq!(mapped.len(), ids.len(), "{mapped:?}");
        assert!(mapped.iter().all(|m| pattern.is_match(m)), "{mapped:?}");
        // Exhaustively over short ids of the native alphabet.
        let alphabet = ['a', '1', '-', '.', '_'];
        let mut all = vec![String::new()];
        for _ in 0..4 {
            all = all.iter().flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}"))).collect();
            let ids: Vec<&String> = all.iter().filter(|s| s.starts_with(['a', '1'])).collect();
            let mapped: std::collections::BTreeSet<String> = ids.iter().map(|id| openwop_task_id(id)).collect();
            assert_eq!(mapped.len(), ids.len());
        }
    }
}
