//! Suites: the native format, its loading and validation, and the validated model.

mod definition;
pub mod formats;
mod imports;
mod load;
mod load_error;
pub mod mcp_auth;
pub mod model;
pub mod raw;
pub mod uses;
mod validate;
pub mod variants;

pub use crate::source::{Diagnostic, ValidateCx};
pub use definition::TaskSource;
pub use load::{LoadOptions, declared_id, load_suite};
pub use load_error::LoadError;
