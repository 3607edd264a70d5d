//! Suites: the native format, its loading and validation, and the validated model.

mod context;
mod diagnostic;
pub mod formats;
mod load;
mod load_error;
pub mod model;
pub mod positions;
pub mod raw;
mod raw_step;
mod step;
mod suggest;
pub mod template;
mod validate;
pub mod validate_step;

pub use context::ValidateCx;
pub use diagnostic::Diagnostic;
pub use load::{LoadOptions, load_suite};
pub use load_error::LoadError;
pub use suggest::did_you_mean;
pub use validate::llm_spec as validate_llm_spec;
