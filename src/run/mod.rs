//! Running a plan: the scheduler, one task's life, steps and child processes.

pub mod dispatcher;
pub mod events;
pub mod signal;
pub mod steps;
pub mod task;
