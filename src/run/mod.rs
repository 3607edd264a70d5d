//! Running a plan: the scheduler, one task's life, steps and child processes.

pub mod events;
pub mod scheduler;
pub mod steps;
pub mod task;
