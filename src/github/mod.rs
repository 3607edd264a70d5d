//! GitHub: what evalgate does under GitHub Actions (step summary, step outputs,
//! annotations, masks, log groups) and the sticky pull-request comment.

pub mod action_outputs;
pub mod actions;
pub mod annotations;
pub mod api;
pub mod baseline_artifact;
pub mod event;
pub mod masks;
pub mod pr_comment;
pub mod publisher;
pub mod report_link;
pub mod step_summary;
pub mod workflow_command;
