//! Foreign suite formats, turned into a native suite (as JSON) so everything downstream
//! works on the one model. One conversion serves the three uses: `imports` take its tasks,
//! environment requirements and hooks; a direct run and `evalgate convert` take it whole.
//!
//! Each format is one file implementing [`ForeignFormat`], listed once in [`FORMATS`].

mod agentv;
mod describe;
mod foreign_format;
mod mcp_evals;
mod mcpchecker;
mod native_text;
mod openwop;
mod promptfoo;
mod registry;

pub use describe::{Problems, describe};
pub use foreign_format::{ConvertCx, Converted, ForeignFormat, Origin, ServerListing, Unrunnable};
pub use native_text::glob_files;
pub use registry::{Detected, FORMATS, by_import_name, detect, import_names};
