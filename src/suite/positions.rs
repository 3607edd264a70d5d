//! Where every key and value of a YAML document is, by key path (`tasks[0].grade[1].type`),
//! so that errors found after deserialization still point at a line and column.

use rustc_hash::FxHashMap;
use saphyr_parser::{Event, Parser};

pub use crate::source::Position;

#[derive(Debug, Default)]
pub struct PositionIndex {
    keys: FxHashMap<String, Position>,
    values: FxHashMap<String, Position>,
}

/// An open mapping or sequence; `base` is the length of its own path in the path buffer.
enum Frame {
    Mapping { base: usize, expect_key: bool },
    Sequence { base: usize, index: usize },
}

impl PositionIndex {
    /// Indexes every key and value of `source`; a document the scanner rejects yields a
    /// partial index (the YAML deserializer reports the syntax error itself).
    pub fn build(source: &str) -> Self {
        Self::build_to_depth(source, usize::MAX)
    }

    /// Indexes only nodes at most `depth` levels deep (`tasks[3]` is depth 2): cheap enough
    /// for every load, where the full index is only needed to report an error.
    pub fn build_to_depth(source: &str, depth: usize) -> Self {
        let mut index = PositionIndex::default();
        let mut stack: Vec<Frame> = Vec::new();
        let mut path = String::new();
        for event in Parser::new_from_str(source) {
            let Ok((event, span)) = event else { break };
            let pos = Position { line: span.start.line(), column: span.start.col() + 1 };
            let is_node = matches!(
                event,
                Event::Scalar(..) | Event::MappingStart(..) | Event::SequenceStart(..) | Event::Alias(_)
            );
            if is_node && stack.len() > depth {
                match event {
                    Event::MappingStart(..) => stack.push(Frame::Mapping { base: path.len(), expect_key: true }),
                    Event::SequenceStart(..) => stack.push(Frame::Sequence { base: path.len(), index: 0 }),
                    _ => advance(&mut stack),
                }
            } else if is_node {
                match stack.last_mut() {
                    Some(Frame::Mapping { base, expect_key: expect_key @ true }) => {
                        *expect_key = false;
                        path.truncate(*base);
                        if *base > 0 {
                            path.push('.');
                        }
                        match &event {
                            Event::Scalar(text, ..) => path.push_str(text),
                            _ => path.push('?'),
                        }
                        index.keys.entry(path.clone()).or_insert(pos);
                        // A complex key's own children are not indexed.
                        if matches!(event, Event::MappingStart(..) | Event::SequenceStart(..)) {
                            stack.push(Frame::Mapping { base: path.len(), expect_key: true });
                        }
                        continue;
                    }
                    Some(Frame::Sequence { base, index: i }) => {
                        path.truncate(*base);
                        path.push('[');
                        path.push_str(&i.to_string());
                        path.push(']');
                    }
                    _ => {}
                }
                index.values.entry(path.clone()).or_insert(pos);
                match event {
                    Event::MappingStart(..) => stack.push(Frame::Mapping { base: path.len(), expect_key: true }),
                    Event::SequenceStart(..) => stack.push(Frame::Sequence { base: path.len(), index: 0 }),
                    _ => advance(&mut stack),
                }
            } else if matches!(event, Event::MappingEnd | Event::SequenceEnd) {
                stack.pop();
                advance(&mut stack);
            }
        }
        index
    }

    /// The position of the key at `path` (for "unknown key" errors), else of its value.
    pub fn key(&self, path: &str) -> Option<Position> {
        self.keys.get(path).or_else(|| self.values.get(path)).copied()
    }

    /// The position of the value at `path`, else of its key.
    pub fn value(&self, path: &str) -> Option<Position> {
        self.values.get(path).or_else(|| self.keys.get(path)).copied()
    }

    /// The position of the key a JSON pointer (`/tests/0/type`) names, else of the nearest
    /// node enclosing it: a missing key is reported where it should have been.
    pub fn pointer(&self, pointer: &str) -> Option<Position> {
        let mut path = String::new();
        let mut found = None;
        for segment in pointer.split('/').skip(1) {
            let segment = segment.replace("~1", "/").replace("~0", "~");
            match segment.parse::<usize>() {
                Ok(n) => path.push_str(&format!("[{n}]")),
                Err(_) if path.is_empty() => path.push_str(&segment),
                Err(_) => path.push_str(&format!(".{segment}")),
            }
            match self.key(&path) {
                Some(p) => found = Some(p),
                None => break,
            }
        }
        found
    }
}

/// After a complete value: the enclosing mapping expects a key, a sequence moves on.
fn advance(stack: &mut [Frame]) {
    match stack.last_mut() {
        Some(Frame::Mapping { expect_key, .. }) => *expect_key = true,
        Some(Frame::Sequence { index, .. }) => *index += 1,
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_keys_and_values_by_path() {
        let src = "suite: demo\ntasks:\n  - id: a\n    grade:\n      - {type: contains, value: x}\n  - id: b\n";
        let index = PositionIndex::build(src);
        assert_eq!(index.key("suite"), Some(Position { line: 1, column: 1 }));
        assert_eq!(index.value("tasks[0]"), Some(Position { line: 3, column: 5 }));
        assert_eq!(index.value("tasks[1].id"), Some(Position { line: 6, column: 9 }));
        assert_eq!(index.key("tasks[0].grade[0].value"), Some(Position { line: 5, column: 26 }));
        assert_eq!(index.value("tasks[0].grade[0].value"), Some(Position { line: 5, column: 33 }));
        let shallow = PositionIndex::build_to_depth(src, 2);
        assert_eq!(shallow.value("tasks[1]"), Some(Position { line: 6, column: 5 }));
        assert_eq!(shallow.value("tasks[1].id"), None);
    }
}
