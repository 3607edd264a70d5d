//! GitHub Actions: the step summary, step outputs, annotations and masks.

pub mod actions;
pub mod commands;
pub mod comment;
pub mod event;
