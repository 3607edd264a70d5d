//! `report.html`: one self-contained file to understand a run in a browser. The verdict and
//! gate first, charts (inline SVG from `charts`), the regression and the adversarial
//! scorecard, then every task with a drill-down (prompt, trace, output, graders, steps).
//!
//! Everything comes from `Results` (already redacted by the writer) through a view model
//! into a minijinja template that escapes every value; the only script is a constant
//! allowed by its hash in the Content-Security-Policy, which also forbids every request, so
//! hostile output can neither run nor call home. Long texts are cut to a budget that keeps
//! a 1,000-task report small (docs/reports.md).

mod charts;
mod cutter;
mod page;
mod sections;
mod task;

pub(crate) use page::escape;
pub use page::{Html, render};

/// Characters of one long text (an output, a tool result) kept at most, and at least when
/// the report is large: the budget below is shared between all texts.
const TEXT_MAX: usize = 8_000;
const TEXT_MIN: usize = 300;
/// Characters of text the whole report aims to hold (it stays under 5 MB with its markup).
const TEXT_BUDGET: usize = 3_000_000;
/// Texts longer than this are shown collapsed.
const COLLAPSE_AT: usize = 600;
