//! Positions in a suite file for the compile context: a shallow index built on every load,
//! the full one only when the first error needs it.

use std::cell::OnceCell;

use super::positions::PositionIndex;
use crate::source::{Locate, Position};

pub struct FilePositions<'a> {
    source: &'a str,
    /// Positions down to the tasks (for JUnit and annotations).
    shallow: PositionIndex,
    full: OnceCell<PositionIndex>,
}

impl<'a> FilePositions<'a> {
    pub fn new(source: &'a str) -> Self {
        FilePositions { source, shallow: PositionIndex::build_to_depth(source, 2), full: OnceCell::new() }
    }

    fn full(&self) -> &PositionIndex {
        self.full.get_or_init(|| PositionIndex::build(self.source))
    }
}

impl Locate for FilePositions<'_> {
    fn value(&self, path: &str) -> Option<Position> {
        self.shallow.value(path).or_else(|| self.full().value(path))
    }

    fn key(&self, path: &str) -> Option<Position> {
        self.full().key(path)
    }
}
