//! The Markdown summary: verdict first, the gate table, failing tasks with reasons, a tag
//! breakdown, cost and latency. Model output is escaped and cut so the whole stays under
//! a PR comment's 65,536 characters.

mod baseline_sections;
mod changed_sections;
mod escape;
mod markdown_summary;
mod mcp_sections;
pub(crate) mod variant_sections;
pub use baseline_sections::{comparison_report, comparison_section};
pub(crate) use escape::code;
pub use escape::escape;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use escape::{escape_block, fenced};
pub use markdown_summary::*;
