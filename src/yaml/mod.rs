//! The one YAML parser: a file is read once (by granit-parser, the parser under serde-saphyr)
//! into a tree whose every node keeps where its value is written, so the raw types
//! deserialize from the tree and any later error can point at the line. A value reached
//! through an alias or a merge key keeps the position of its definition. A foundation, not
//! part of `suite`: graders read YAML schema files with it too.

mod compose;
mod de;
mod document;
mod read_file;
pub use crate::source::Position;
pub use compose::MAX_DEPTH;
pub use de::NodeDeserializer;
pub use document::*;
pub use read_file::{MAX_FILE_BYTES, ReadError, decode, read};
