//! Where in the user's file: positions, diagnostics, "did you mean" suggestions, and the
//! compile context that kinds record their problems in. A leaf: it imports nothing above it.

mod context;
mod diagnostic;
mod key_path;
mod position;
mod suggest;

pub use context::ValidateCx;
pub use diagnostic::Diagnostic;
pub use key_path::KeyPath;
pub use position::{Locate, Nowhere, Position};
pub use suggest::{Unknown, unknown};
