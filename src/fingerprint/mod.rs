//! Running only what changed: each task's fingerprint (everything that can change its
//! verdict) and `--changed-since`'s choices (run, carry, audit) against a base run.

pub mod changes;
mod task_inputs;

pub use task_inputs::fingerprints;
