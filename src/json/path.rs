//! Dotted JSON paths such as `result.items[0].name` (a leading `$.` is allowed).

use std::fmt;

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPath {
    source: String,
    segments: Vec<Segment>,
}

impl JsonPath {
    pub fn parse(source: &str) -> Result<Self, String> {
        let body = source.strip_prefix('$').unwrap_or(source);
        let body = body.strip_prefix('.').unwrap_or(body);
        let mut segments = Vec::new();
        let mut key = String::new();
        let mut chars = body.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '.' => {
                    if key.is_empty() && !matches!(segments.last(), Some(Segment::Index(_))) {
                        return Err(format!("empty key in JSON path `{source}`"));
                    }
                    if !key.is_empty() {
                        segments.push(Segment::Key(std::mem::take(&mut key)));
                    }
                }
                '[' => {
                    if !key.is_empty() {
                        segments.push(Segment::Key(std::mem::take(&mut key)));
                    }
                    let digits: String = chars.by_ref().take_while(|&c| c != ']').collect();
                    let index = digits
                        .trim()
                        .parse()
                        .map_err(|_| format!("invalid index `[{digits}]` in JSON path `{source}`"))?;
                    segments.push(Segment::Index(index));
                }
                _ => key.push(c),
            }
        }
        if !key.is_empty() {
            segments.push(Segment::Key(key));
        }
        Ok(JsonPath { source: source.to_owned(), segments })
    }

    pub fn get<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        self.segments.iter().try_fold(value, |v, segment| match segment {
            Segment::Key(k) => v.get(k.as_str()),
            Segment::Index(i) => v.get(*i),
        })
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// A JSON pointer as people write the path: `/items/0/price` → `items[0].price`.
pub fn dotted(pointer: &str) -> String {
    dotted_prefixes(pointer).last().unwrap_or_default()
}

/// Each leading part of a JSON pointer's path, written as [`dotted`] writes it:
/// `/items/0/price` → `items`, `items[0]`, `items[0].price`.
pub fn dotted_prefixes(pointer: &str) -> impl Iterator<Item = String> + '_ {
    let mut path = String::new();
    pointer.split('/').skip(1).map(move |segment| {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        match segment.parse::<usize>() {
            Ok(n) => path.push_str(&format!("[{n}]")),
            Err(_) if path.is_empty() => path.push_str(&segment),
            Err(_) => path.push_str(&format!(".{segment}")),
        }
        path.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn walks_keys_and_indices() {
        let v = json!({"a": {"items": [{"name": "x"}, {"name": "y"}]}});
        assert_eq!(JsonPath::parse("a.items[1].name").unwrap().get(&v), Some(&json!("y")));
        assert_eq!(JsonPath::parse("$.a.items[0]").unwrap().get(&v), Some(&json!({"name": "x"})));
        assert_eq!(JsonPath::parse("a.missing").unwrap().get(&v), None);
        assert!(JsonPath::parse("a..b").is_err());
        assert!(JsonPath::parse("a[x]").is_err());
    }
}
