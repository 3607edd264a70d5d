//! Running a plan: the scheduler, one task's life, steps and child processes.

pub mod bindings;
pub mod dispatcher;
pub mod events;
pub mod process;
pub mod signal;
pub mod steps;
pub mod task;
