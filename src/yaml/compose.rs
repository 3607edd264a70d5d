//! Building a [`Node`] tree from the events of granit-parser (the parser under serde-saphyr):
//! anchors, aliases and merge keys resolved as YAML 1.2 says, each node at the place its
//! value is written. Composing the tree here, not through serde-saphyr's `Spanned`, reads a
//! large suite in less than half the time; the budget below does what serde-saphyr's would.

use granit_parser::{ErrorKind, Event, Options, Parser, ScalarStyle, ScanError, Span, Tag};
use rustc_hash::{FxHashMap, FxHashSet};

use super::{Node, Position, Scalar, SyntaxError, Value};

/// Nodes that aliases may copy in one file: far beyond what shared defaults need, far below
/// what an alias bomb asks for.
const MAX_ALIASED_NODES: usize = 250_000;
/// Nesting deeper than this is refused before it can exhaust the stack (the scanner stops at
/// the same depth, so flow and block nesting fail alike and at once).
pub const MAX_DEPTH: usize = 128;

type Events<'s> = Parser<'s, granit_parser::StrInput<'s>>;

/// The single document of `source` (a null one for a file with none).
pub fn compose(source: &str) -> Result<Node, SyntaxError> {
    let mut options = Options::default();
    options.flow_nesting_limit = MAX_DEPTH;
    options.block_nesting_limit = MAX_DEPTH;
    let events = Parser::new_from_str_with_options(source, options);
    let mut composer = Composer { events, anchors: FxHashMap::default(), aliased: 0 };
    let mut root = None;
    while let Some((event, span)) = composer.next()? {
        match event {
            Event::DocumentStart(..) if root.is_some() => {
                return Err(error(span, "a second YAML document: a suite file holds one"));
            }
            Event::DocumentStart(..) => {
                let (event, span) = composer.require()?;
                root = Some(composer.node(event, span, 0)?);
            }
            Event::StreamEnd => break,
            _ => {}
        }
    }
    Ok(root
        .unwrap_or_else(|| Node::scalar(Scalar { text: String::new(), plain: true }, Position { line: 1, column: 1 })))
}

struct Composer<'s> {
    events: Events<'s>,
    /// Each anchored node and how many nodes it holds.
    anchors: FxHashMap<usize, (Node, usize)>,
    /// Nodes copied by aliases so far.
    aliased: usize,
}

impl<'s> Composer<'s> {
    fn next(&mut self) -> Result<Option<(Event<'s>, Span)>, SyntaxError> {
        self.events.next().transpose().map_err(|e| scan_error(&e))
    }

    fn require(&mut self) -> Result<(Event<'s>, Span), SyntaxError> {
        self.next()?.ok_or_else(|| SyntaxError { message: "unexpected end of the file".into(), position: None })
    }

    fn node(&mut self, event: Event<'s>, span: Span, depth: usize) -> Result<Node, SyntaxError> {
        if depth > MAX_DEPTH {
            return Err(error(span, &too_deep()));
        }
        let at = position(span);
        let (node, anchor) = match event {
            Event::Scalar(text, style, anchor, tag) => {
                untagged(tag.as_deref(), "str", span)?;
                // A quoted or block scalar, or one tagged `!!str`, is a string whatever it says.
                let plain = style == ScalarStyle::Plain && tag.is_none();
                // The parser reports a value left empty (`key:`) as `~`; read as a string it is "".
                let empty = span.start.index() == span.end.index();
                let text = if empty { String::new() } else { text.into_owned() };
                (Node::scalar(Scalar { text, plain }, at), anchor)
            }
            Event::SequenceStart(_, anchor, tag) => {
                untagged(tag.as_deref(), "seq", span)?;
                let mut items = Vec::new();
                loop {
                    let (event, span) = self.require()?;
                    if matches!(event, Event::SequenceEnd) {
                        break;
                    }
                    items.push(self.node(event, span, depth + 1)?);
                }
                // The tree lives as long as the suite (tasks read their source from it):
                // no spare capacity (a one-item list would keep room for four).
                items.shrink_to_fit();
                (Node::new(Value::Sequence(items), at), anchor)
            }
            Event::MappingStart(_, anchor, tag) => {
                untagged(tag.as_deref(), "map", span)?;
                (Node::new(Value::Mapping(self.mapping(depth)?), at), anchor)
            }
            Event::Alias(id) => {
                let Some((node, size)) = self.anchors.get(&id) else {
                    return Err(error(span, "an alias to an anchor not defined before it"));
                };
                self.aliased += size;
                if self.aliased > MAX_ALIASED_NODES {
                    return Err(error(
                        span,
                        &format!(
                            "refused: aliases expand this file past {MAX_ALIASED_NODES} copied nodes; is it a \"YAML bomb\"?"
                        ),
                    ));
                }
                return Ok(node.clone());
            }
            _ => return Err(error(span, "unexpected YAML event")),
        };
        if anchor != 0 {
            self.anchors.insert(anchor, (node.clone(), node.size()));
        }
        Ok(node)
    }

    /// A mapping's entries: explicit ones first, then those its merge keys (`<<`) bring that
    /// it does not set itself (an earlier merged mapping wins over a later one).
    fn mapping(&mut self, depth: usize) -> Result<Vec<(Node, Node)>, SyntaxError> {
        let mut entries = Keys::default();
        let mut merged = Keys::default();
        loop {
            let (event, span) = self.require()?;
            if matches!(event, Event::MappingEnd) {
                break;
            }
            let key = self.node(event, span, depth + 1)?;
            // Every reader takes a key as text: a list or mapping as a key (`? [a, b]`) has
            // none, so it is refused here, where its place is known.
            if !matches!(key.value, Value::Scalar(_)) {
                let message = "a list or mapping as a key (`? [a, b]`): keys are plain text";
                return Err(SyntaxError { message: message.into(), position: Some(key.at) });
            }
            let (event, span) = self.require()?;
            let value = self.node(event, span, depth + 1)?;
            if matches!(&key.value, Value::Scalar(s) if s.plain && s.text == "<<") {
                let sources = match value.value {
                    Value::Mapping(entries) => vec![entries],
                    Value::Sequence(items) if items.iter().all(Node::is_mapping) => {
                        items.into_iter().filter_map(|n| n.into_entries()).collect()
                    }
                    _ => return Err(error(span, "a merge key (`<<`) takes a mapping or a list of mappings")),
                };
                for (k, v) in sources.into_iter().flatten() {
                    if !merged.contains(&k) {
                        merged.push(k, v);
                    }
                }
            } else if entries.contains(&key) {
                let message = format!("duplicate key `{}`", key.text());
                return Err(SyntaxError { message, position: Some(key.at) });
            } else {
                entries.push(key, value);
            }
        }
        for (k, v) in merged.entries {
            if !entries.contains(&k) {
                entries.push(k, v);
            }
        }
        let mut entries = entries.entries;
        entries.shrink_to_fit();
        Ok(entries)
    }
}

/// A mapping's entries, with a set of their keys once there are enough to need one.
#[derive(Default)]
struct Keys {
    entries: Vec<(Node, Node)>,
    index: FxHashSet<String>,
}

impl Keys {
    const INDEXED_FROM: usize = 16;

    fn contains(&self, key: &Node) -> bool {
        let text = key.text();
        if self.entries.len() < Self::INDEXED_FROM {
            self.entries.iter().any(|(k, _)| k.text() == text)
        } else {
            self.index.contains(text)
        }
    }

    fn push(&mut self, key: Node, value: Node) {
        if self.entries.len() + 1 == Self::INDEXED_FROM {
            self.index.extend(self.entries.iter().map(|(k, _)| k.text().to_owned()));
        }
        if self.entries.len() + 1 >= Self::INDEXED_FROM {
            self.index.insert(key.text().to_owned());
        }
        self.entries.push((key, value));
    }
}

/// A tag is refused unless it is the core-schema tag of what it tags (`!!str`, `!!seq`,
/// `!!map`): evalgate expands no tag, so `!include file` must not silently read as the text
/// `file`.
fn untagged(tag: Option<&Tag>, core: &str, span: Span) -> Result<(), SyntaxError> {
    match tag {
        Some(tag) if !tag.is_yaml_core_schema_tag(core) => {
            // As written (`!!binary`, `!include`), not resolved (`tag:yaml.org,2002:binary`).
            let written = format!("{}{}", tag.original_handle(), tag.suffix());
            let message =
                format!("unsupported YAML tag `{written}`: evalgate expands no tags (only `!!{core}` is allowed here)");
            Err(error(span, &message))
        }
        _ => Ok(()),
    }
}

fn too_deep() -> String {
    format!("nested more than {MAX_DEPTH} levels deep (the limit)")
}

fn position(span: Span) -> Position {
    Position { line: span.start.line().max(1), column: span.start.col() + 1 }
}

fn error(span: Span, message: &str) -> SyntaxError {
    SyntaxError { message: message.to_owned(), position: Some(position(span)) }
}

fn scan_error(e: &ScanError) -> SyntaxError {
    let marker = e.marker();
    let message = if matches!(e.kind(), ErrorKind::RecursionLimitExceeded) { too_deep() } else { e.info() };
    SyntaxError { message, position: Some(Position { line: marker.line().max(1), column: marker.col() + 1 }) }
}
