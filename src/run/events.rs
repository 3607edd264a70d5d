//! Typed events the scheduler emits; the dispatcher fans them out to the reporters.

use crate::results::TaskResult;

#[derive(Debug, Clone)]
pub enum RunEvent {
    Started { suite_id: String, tasks: usize },
    TaskStarted { index: usize, id: String },
    TaskFinished { index: usize, result: Box<TaskResult> },
    Finished { interrupted: bool },
}
