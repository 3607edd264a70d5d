//! Commands that work on results files rather than suites.

pub mod compare;
pub mod convert;
pub mod init;
pub mod merge;
pub mod report;
