//! The two JSON reports: `results.json`, everything the run found, and `summary.json`, the
//! OpenWOP summary.

use super::Report;
use crate::results::Results;

/// `results.json`: everything the run found.
pub struct ResultsJson;

impl Report for ResultsJson {
    fn file_name(&self) -> &'static str {
        "results.json"
    }
    fn render(&self, results: &Results) -> String {
        pretty_json(results)
    }
}

/// `summary.json`: the OpenWOP `EvalSummary`.
pub struct SummaryJson;

impl Report for SummaryJson {
    fn file_name(&self) -> &'static str {
        "summary.json"
    }
    fn render(&self, results: &Results) -> String {
        pretty_json(&crate::results::summary::summary(results))
    }
}

/// Pretty JSON with a final newline (a results file must never fail to serialize).
pub fn pretty_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"cannot serialize: {e}\"}}")) + "\n"
}
