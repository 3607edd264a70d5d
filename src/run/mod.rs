//! Running a plan: the scheduler and one task's life.

pub mod dispatcher;
pub mod events;
pub mod lanes;
pub mod signal;
pub mod task_attempt;
