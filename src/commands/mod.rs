//! Commands that work on results files rather than suites.

pub mod compare;
pub mod merge;
pub mod report;
