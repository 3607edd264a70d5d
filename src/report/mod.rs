//! Reports: each file report is a pure function from results to bytes, listed once in
//! [`REPORTS`]; `writer` is the one place that puts them into files; `terminal` and
//! `events` follow the run as it goes.

pub mod events;
pub mod html;
pub mod junit;
pub mod markdown;
pub mod reporter;
pub mod terminal;
pub mod writer;

use crate::results::Results;

/// A file report rendered from a run's results.
pub trait Report: Sync {
    /// The file name in the out directory, and the key `--junit`/`--markdown`/`--json`/`--html` name.
    fn file_name(&self) -> &'static str;
    fn render(&self, results: &Results) -> String;
    /// Whether it is rewritten as tasks finish. A report that is not is written when the run
    /// starts (incomplete, never green) and when it ends: JUnit and the HTML report cost two
    /// thirds of a 10,000-task run's CPU when they were rewritten with the others.
    fn streamed(&self) -> bool {
        true
    }
    /// Whether it renders on a thread of its own, beside the others (the HTML page, which
    /// costs as much as all of them).
    fn renders_aside(&self) -> bool {
        false
    }
}

/// Every file report, in the order they are written (`results.json` first: the others can
/// be rendered again from it).
pub static REPORTS: &[&dyn Report] = &[&ResultsJson, &SummaryJson, &junit::Junit, &markdown::Markdown, &html::Html];

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
