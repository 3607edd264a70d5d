//! Where every key and value of a YAML document is, by key path (`tasks[0].grade[1].type`),
//! so that errors found after deserialization still point at a line and column.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser};

/// A 1-based line and column in a source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

#[derive(Debug, Default)]
pub struct PositionIndex {
    keys: HashMap<String, Position>,
    values: HashMap<String, Position>,
}

enum Frame {
    Mapping { key: Option<String>, expect_key: bool },
    Sequence { index: usize },
}

impl PositionIndex {
    /// Indexes `source`; a document the scanner rejects yields an empty index (the YAML
    /// deserializer reports the syntax error itself).
    pub fn build(source: &str) -> Self {
        let mut index = PositionIndex::default();
        let mut stack: Vec<Frame> = Vec::new();
        for event in Parser::new_from_str(source) {
            let Ok((event, span)) = event else { break };
            let pos = Position { line: span.start.line(), column: span.start.col() + 1 };
            match event {
                Event::Scalar(..) | Event::MappingStart(..) | Event::SequenceStart(..) | Event::Alias(_) => {
                    let is_key = matches!(stack.last(), Some(Frame::Mapping { expect_key: true, .. }));
                    if is_key {
                        let key = match &event {
                            Event::Scalar(text, ..) => text.to_string(),
                            _ => String::from("?"),
                        };
                        if let Some(Frame::Mapping { key: k, expect_key }) = stack.last_mut() {
                            *k = Some(key);
                            *expect_key = false;
                        }
                        index.keys.entry(path_of(&stack)).or_insert(pos);
                    } else {
                        index.values.entry(path_of(&stack)).or_insert(pos);
                    }
                    match event {
                        Event::MappingStart(..) => stack.push(Frame::Mapping { key: None, expect_key: true }),
                        Event::SequenceStart(..) => stack.push(Frame::Sequence { index: 0 }),
                        _ if !is_key => advance(&mut stack),
                        _ => {}
                    }
                }
                Event::MappingEnd | Event::SequenceEnd => {
                    stack.pop();
                    advance(&mut stack);
                }
                _ => {}
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
}

/// After a complete value: the enclosing mapping expects a key, a sequence moves on.
fn advance(stack: &mut [Frame]) {
    match stack.last_mut() {
        Some(Frame::Mapping { expect_key, .. }) => *expect_key = true,
        Some(Frame::Sequence { index }) => *index += 1,
        None => {}
    }
}

fn path_of(stack: &[Frame]) -> String {
    let mut path = String::new();
    for frame in stack {
        match frame {
            Frame::Mapping { key: Some(key), .. } => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Frame::Mapping { key: None, .. } => {}
            Frame::Sequence { index } => {
                path.push('[');
                path.push_str(&index.to_string());
                path.push(']');
            }
        }
    }
    path
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
    }
}
