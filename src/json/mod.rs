//! JSON paths and expectations, shared by graders and steps. A leaf: it imports nothing
//! above it.

mod case;
mod expect;
mod path;
mod strict;

pub use case::snake_case_deep;
pub use expect::{JsonKind, PathExpect, compact, first_difference, is_subset, json_eq};
pub use path::{JsonPath, dotted, dotted_prefixes};
pub use strict::{given_twice, parse_noting_duplicates, parse_strict};
