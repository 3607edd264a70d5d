//! JSON paths and expectations, shared by graders and steps. A leaf: it imports nothing
//! above it.

mod expect;
mod path;

pub use expect::{JsonKind, PathExpect, compact, first_difference, is_subset, json_eq};
pub use path::{JsonPath, dotted};
