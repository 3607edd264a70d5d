//! Reports: each file report is a pure function from results to bytes, listed once in
//! [`REPORTS`]; `writer` is the one place that puts them into files; `terminal` and
//! `events` follow the run as it goes.

pub mod event_log;
pub mod html;
mod json_reports;
pub mod junit;
pub mod markdown;
pub mod reporter;
pub mod terminal;
pub mod writer;

pub use json_reports::{ResultsJson, SummaryJson, pretty_json};

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
