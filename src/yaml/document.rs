//! The YAML tree: a document's nodes with their positions, scalars typed as YAML 1.2 reads
//! them, and the lookup of a position by key path or JSON pointer (`Locate`).

use std::fmt;

use serde::de::DeserializeOwned;

use super::{NodeDeserializer, Position, compose};
use crate::source::Locate;

/// A parsed YAML file: the tree of its single document.
#[derive(Clone)]
pub struct Document {
    root: Node,
}

/// A node and where its value is written.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub value: Value,
    pub at: Position,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Scalar(Scalar),
    Sequence(Vec<Node>),
    Mapping(Vec<(Node, Node)>),
}

/// A scalar as written. A plain one is typed by the YAML 1.2 core schema when read as
/// "any value" (`5` a number, `true` a boolean, `~` null); read as a string it is its text.
#[derive(Debug, Clone, PartialEq)]
pub struct Scalar {
    pub text: String,
    pub plain: bool,
}

/// What a scalar means when nothing says which type it should have.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Resolved<'a> {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(&'a str),
}

impl Scalar {
    pub fn resolve(&self) -> Resolved<'_> {
        let text = self.text.as_str();
        if !self.plain {
            return Resolved::Str(text);
        }
        match text {
            "" | "~" | "null" | "Null" | "NULL" => Resolved::Null,
            "true" | "True" | "TRUE" => Resolved::Bool(true),
            "false" | "False" | "FALSE" => Resolved::Bool(false),
            _ => number(text).unwrap_or(Resolved::Str(text)),
        }
    }
}

/// A core-schema number: decimal, `0x`/`0o` integers, floats and `.inf`/`.nan`.
fn number(text: &str) -> Option<Resolved<'_>> {
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    let negative = text.starts_with('-');
    let radix = |digits: &str, radix| {
        let n = u64::from_str_radix(digits, radix).ok()?;
        Some(if negative { Resolved::Int(0i64.checked_sub_unsigned(n)?) } else { Resolved::UInt(n) })
    };
    if let Some(hex) = unsigned.strip_prefix("0x") {
        return radix(hex, 16);
    }
    if let Some(octal) = unsigned.strip_prefix("0o") {
        return radix(octal, 8);
    }
    if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return Some(match (text.parse::<i64>(), text.parse::<u64>()) {
            (Ok(n), _) if negative => Resolved::Int(n),
            (_, Ok(n)) => Resolved::UInt(n),
            _ => Resolved::Float(text.parse().ok()?),
        });
    }
    match unsigned {
        ".inf" | ".Inf" | ".INF" => {
            return Some(Resolved::Float(if negative { f64::NEG_INFINITY } else { f64::INFINITY }));
        }
        ".nan" | ".NaN" | ".NAN" if unsigned == text => return Some(Resolved::Float(f64::NAN)),
        _ => {}
    }
    let numeric = unsigned.bytes().any(|b| b.is_ascii_digit())
        && unsigned.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'));
    if numeric { text.parse().ok().map(Resolved::Float) } else { None }
}

/// Why a text is not a YAML document, and where.
#[derive(Debug)]
pub struct SyntaxError {
    pub message: String,
    pub position: Option<Position>,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some(p) => write!(f, "{} (line {}, column {})", self.message, p.line, p.column),
            None => f.write_str(&self.message),
        }
    }
}

/// Deserializes `text` into `T`, for a file whose positions are not needed after the parse;
/// an error names the key path and where it is.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, SyntaxError> {
    let doc = Document::parse(text)?;
    serde_path_to_error::deserialize(doc.de(doc.root())).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        match path.as_str() {
            "." => SyntaxError { message, position: Some(doc.root().at) },
            _ => SyntaxError { message: format!("{path}: {message}"), position: doc.value(&path) },
        }
    })
}

impl Document {
    pub fn parse(source: &str) -> Result<Self, SyntaxError> {
        Ok(Document { root: compose::compose(source)? })
    }

    pub fn root(&self) -> &Node {
        &self.root
    }

    /// A deserializer over `node`, which must be a node of this document.
    pub fn de<'a>(&'a self, node: &'a Node) -> NodeDeserializer<'a> {
        NodeDeserializer::new(node)
    }

    /// The node at a key path such as `tasks[2].grade[0].value` and, when it is a mapping
    /// entry, its key. A key may itself contain dots: the longest key that fits is taken.
    fn lookup(&self, path: &str) -> Option<(Option<&Node>, &Node)> {
        let mut node = &self.root;
        let mut key = None;
        let mut rest = path;
        while !rest.is_empty() {
            if let Some(index) = rest.strip_prefix('[') {
                let (n, after) = index.split_once(']')?;
                let Value::Sequence(items) = &node.value else { return None };
                node = items.get(n.parse::<usize>().ok()?)?;
                key = None;
                rest = after;
                continue;
            }
            let name = rest.strip_prefix('.').unwrap_or(rest);
            let Value::Mapping(entries) = &node.value else { return None };
            let (k, v, after) = entries
                .iter()
                .filter_map(|(k, v)| {
                    let after = name.strip_prefix(k.text())?;
                    (after.is_empty() || after.starts_with(['.', '['])).then_some((k, v, after.len()))
                })
                .max_by_key(|&(_, _, after)| std::cmp::Reverse(after))?;
            key = Some(k);
            node = v;
            rest = &name[name.len() - after..];
        }
        Some((key, node))
    }

    /// The position of the key a JSON pointer (`/tests/0/type`) names, else of the nearest
    /// node enclosing it: a missing key is reported where it should have been.
    pub fn pointer(&self, pointer: &str) -> Option<Position> {
        let mut found = None;
        for path in crate::json::dotted_prefixes(pointer) {
            match self.key(&path) {
                Some(p) => found = Some(p),
                None => break,
            }
        }
        found
    }
}

/// Key paths are looked up in the tree, so the compile context finds every position of
/// the suite it reads.
impl Locate for Document {
    /// The position of the value at `path`.
    fn value(&self, path: &str) -> Option<Position> {
        self.lookup(path).map(|(_, value)| value.at)
    }

    /// The position of the key at `path` (for "unknown key" errors), else of its value.
    fn key(&self, path: &str) -> Option<Position> {
        let (key, value) = self.lookup(path)?;
        Some(key.unwrap_or(value).at)
    }
}

impl Node {
    pub fn new(value: Value, at: Position) -> Self {
        Node { value, at }
    }

    pub fn scalar(scalar: Scalar, at: Position) -> Self {
        Node { value: Value::Scalar(scalar), at }
    }

    /// A scalar's text (a key, say); a collection's is empty.
    pub fn text(&self) -> &str {
        match &self.value {
            Value::Scalar(s) => &s.text,
            Value::Sequence(_) | Value::Mapping(_) => "",
        }
    }

    pub fn is_mapping(&self) -> bool {
        matches!(self.value, Value::Mapping(_))
    }

    pub fn is_sequence(&self) -> bool {
        matches!(self.value, Value::Sequence(_))
    }

    /// The value of a mapping's entry whose key is `key`.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Mapping(entries) => entries.iter().find(|(k, _)| k.text() == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// A sequence's items.
    pub fn items(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Sequence(items) => Some(items),
            _ => None,
        }
    }

    pub fn into_entries(self) -> Option<Vec<(Node, Node)>> {
        match self.value {
            Value::Mapping(entries) => Some(entries),
            _ => None,
        }
    }

    /// How many nodes this one holds, itself included.
    pub fn size(&self) -> usize {
        1 + match &self.value {
            Value::Scalar(_) => 0,
            Value::Sequence(items) => items.iter().map(Node::size).sum(),
            Value::Mapping(entries) => entries.iter().map(|(k, v)| k.size() + v.size()).sum(),
        }
    }

    /// An empty collection of this node's kind, standing in for it at the same place.
    pub fn hollow(&self) -> Node {
        match self.value {
            Value::Sequence(_) => self.with(Value::Sequence(Vec::new())),
            _ => self.with(Value::Mapping(Vec::new())),
        }
    }

    /// `value` at this node's place: part of a mapping checked on its own, say.
    pub fn with(&self, value: Value) -> Node {
        Node { value, at: self.at }
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    fn at(line: usize, column: usize) -> Option<Position> {
        Some(Position { line, column })
    }

    #[test]
    fn finds_keys_and_values_by_path() {
        let src = "\
suite: demo
tasks:
  - id: a
    grade:
      - {type: contains, value: x}
  - id: b
";
        let doc = Document::parse(src).unwrap();
        assert_eq!(doc.key("suite"), at(1, 1));
        assert_eq!(doc.value("tasks[0]"), at(3, 5));
        assert_eq!(doc.value("tasks[1].id"), at(6, 9));
        assert_eq!(doc.key("tasks[0].grade[0].value"), at(5, 26));
        assert_eq!(doc.value("tasks[0].grade[0].value"), at(5, 33));
        assert_eq!(doc.value("tasks[2]"), None);
        assert_eq!(doc.pointer("/tasks/0/grade/0/nothing"), at(5, 9));
    }

    #[test]
    fn a_key_with_dots_is_found_whole() {
        let src = "\
env:
  a: 1
  a.b: 2
";
        let doc = Document::parse(src).unwrap();
        assert_eq!(doc.value("env.a.b"), at(3, 8));
        assert_eq!(doc.value("env.a"), at(2, 6));
    }

    #[test]
    fn aliased_and_merged_values_keep_where_they_are_written() {
        let src = "\
base: &b
  x: 1
  list: &l [p, q]
use:
  <<: *b
  y: 2
again: *l
";
        let doc = Document::parse(src).unwrap();
        assert_eq!(doc.value("use.x"), at(2, 6));
        assert_eq!(doc.key("use.x"), at(2, 3));
        assert_eq!(doc.value("use.list[1]"), at(3, 16));
        assert_eq!(doc.value("use.y"), at(6, 6));
        assert_eq!(doc.value("again[0]"), at(3, 13));
    }

    #[test]
    fn a_scalar_read_as_a_string_is_its_text() {
        #[derive(serde::Deserialize)]
        struct Strings {
            version: String,
            id: String,
            flag: String,
            empty: String,
            number: f64,
        }
        let src = "\
version: 1.10
id: 007
flag: true
empty:
number: 1.10
";
        let doc = Document::parse(src).unwrap();
        let s = Strings::deserialize(doc.de(doc.root())).unwrap();
        assert_eq!((s.version.as_str(), s.id.as_str(), s.flag.as_str(), s.empty.as_str()), ("1.10", "007", "true", ""));
        assert!((s.number - 1.1).abs() < f64::EPSILON);
    }

    #[test]
    fn yes_is_a_string_and_a_syntax_error_is_located() {
        let doc = Document::parse("a: yes\n").unwrap();
        assert_eq!(serde_json::Value::deserialize(doc.de(doc.root())).unwrap(), serde_json::json!({"a": "yes"}));
        let src = "\
a: [b
c: d
";
        let e = Document::parse(src).err().unwrap();
        assert_eq!(e.position, at(2, 2));
        assert!(!e.message.contains("line"), "{}", e.message);
    }

    #[test]
    fn from_str_names_the_key_and_its_place() {
        let src = "\
a: 1
b: x
";
        let e = from_str::<std::collections::BTreeMap<String, f64>>(src).unwrap_err();
        assert_eq!(e.to_string(), "b: invalid type: string \"x\", expected f64 (line 2, column 4)");
    }

    #[test]
    fn plain_scalars_follow_the_core_schema() {
        let plain = |text: &str| Scalar { text: text.into(), plain: true };
        assert_eq!(plain("0x1F").resolve(), Resolved::UInt(31));
        assert_eq!(plain("-12").resolve(), Resolved::Int(-12));
        assert_eq!(plain("1e3").resolve(), Resolved::Float(1000.0));
        assert_eq!(plain("-.inf").resolve(), Resolved::Float(f64::NEG_INFINITY));
        assert_eq!(plain("1.2.3").resolve(), Resolved::Str("1.2.3"));
        assert_eq!(plain("infinity").resolve(), Resolved::Str("infinity"));
        assert_eq!(plain("Null").resolve(), Resolved::Null);
        assert_eq!(Scalar { text: "5".into(), plain: false }.resolve(), Resolved::Str("5"));
    }

    #[test]
    fn a_merge_key_does_not_override_an_explicit_key_and_duplicates_are_refused() {
        let src = "\
a: &a {x: 1, y: 2}
b:
  y: 3
  <<: *a
";
        let doc = Document::parse(src).unwrap();
        let b: serde_json::Value = serde_json::Value::deserialize(doc.de(doc.root())).unwrap();
        assert_eq!(b["b"], serde_json::json!({"y": 3, "x": 1}));
        let src = "\
a: 1
b: 2
a: 3
";
        let e = Document::parse(src).err().unwrap();
        assert_eq!((e.message.as_str(), e.position), ("duplicate key `a`", at(3, 1)));
    }

    #[test]
    fn a_complex_key_is_refused_where_it_is_written() {
        let explicit = "\
a: 1
? [b, c]
: 2
";
        let flow = "\
a:
  {x: 1}: 2
";
        for (src, place) in [(explicit, at(2, 3)), (flow, at(2, 3))] {
            let e = Document::parse(src).err().unwrap();
            assert_eq!(
                (e.message.as_str(), e.position),
                ("a list or mapping as a key (`? [a, b]`): keys are plain text", place),
                "{src}"
            );
        }
    }
}
