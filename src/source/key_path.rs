//! A key path in the user's file (`tasks[3].grade[0].value`), built key by key and index by
//! index, so that it has the shape the position lookup reads.

use std::fmt;

/// Where a value is in the suite as written: a diagnostic finds its line by it. Built with
/// [`KeyPath::key`] and [`KeyPath::index`], never by formatting text, so a misplaced dot or
/// bracket cannot make a path the lookup silently misses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyPath(String);

impl KeyPath {
    /// A top-level key (`tasks`, `defaults`).
    pub fn root(key: &str) -> KeyPath {
        KeyPath(key.to_owned())
    }

    /// A path as the YAML deserializer reports it (already `a.b[0].c`), or an empty one for
    /// the document itself.
    pub fn parsed(path: &str) -> KeyPath {
        KeyPath(path.to_owned())
    }

    /// The value under `key` in the mapping at this path.
    #[must_use]
    pub fn key(&self, key: &str) -> KeyPath {
        if self.0.is_empty() {
            return KeyPath::root(key);
        }
        KeyPath(format!("{}.{key}", self.0))
    }

    /// Item `i` of the sequence at this path.
    #[must_use]
    pub fn index(&self, i: usize) -> KeyPath {
        KeyPath(format!("{}[{i}]", self.0))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::KeyPath;

    #[test]
    fn reads_as_the_key_paths_in_messages() {
        let grader = KeyPath::root("tasks").index(3).key("grade").index(0);
        assert_eq!(grader.key("value").to_string(), "tasks[3].grade[0].value");
        assert_eq!(KeyPath::default().key("judge").as_str(), "judge");
    }
}
