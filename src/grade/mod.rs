//! Graders: each turns what the agent did into a score in 0..1, a verdict and a reason.
//! One file a grader (or a family sharing code), registered in `registry.rs`.

mod budget;
mod command;
mod grader;
mod input;
mod json;
mod json_schema;
mod judge;
mod kind;
mod no_leak;
mod registry;
mod safety;
mod text;
mod tools;
mod world;

pub use grader::{GRADER_COMMON_KEYS, Grader, RawGrader, RawGraderCommon};
pub use input::{GradeInput, GradeResult, Graded};
pub use kind::{CompileGrader, Grade};
pub use registry::{Check, RawGraderKind};
pub use safety::SafetyAction;
