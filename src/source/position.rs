//! A place in the user's file, and what can find one by key path.

/// A 1-based line and column in a source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// Finds where a key path (`tasks[0].grade[1].type`) is in the file being compiled. The
/// loader supplies it, so the compile context does not depend on how the file was parsed.
pub trait Locate {
    /// Where the value at `path` starts.
    fn value(&self, path: &str) -> Option<Position>;
    /// Where the key of `path` is (for an unknown key, say).
    fn key(&self, path: &str) -> Option<Position>;
}

/// A borrowed locator: the loader keeps the parsed file, which it still reads from, and
/// lends it to the compile context.
impl<T: Locate + ?Sized> Locate for &T {
    fn value(&self, path: &str) -> Option<Position> {
        (**self).value(path)
    }
    fn key(&self, path: &str) -> Option<Position> {
        (**self).key(path)
    }
}

/// Knows no position: for a suite converted from another format, whose key paths are not
/// in any file.
pub struct Nowhere;

impl Locate for Nowhere {
    fn value(&self, _: &str) -> Option<Position> {
        None
    }
    fn key(&self, _: &str) -> Option<Position> {
        None
    }
}
