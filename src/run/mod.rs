//! Running a plan: the scheduler and one task's life.

mod conversation_run;
mod conversation_verdict;
pub mod dispatcher;
pub mod events;
pub mod lanes;
pub mod signal;
mod simulated_user;
pub mod task_attempt;
