//! A foreign file's problems, each a JSON pointer into the file and a message, shown at the
//! line and column the pointer names.

use std::path::Path;

use crate::source::Position;
use crate::yaml::Document;

/// Problems with a foreign file, as `(JSON pointer, message)`. A pointer into another file
/// the first one pulled in (an mcpchecker task file) is written `FILE#/pointer`, with FILE
/// relative to the first file's directory; `FILE#/N:LINE/rest` points at LINE of a file that
/// is not a tree (a CSV row), shown as `/N/rest`.
pub type Problems = Vec<(String, String)>;

/// `problems` as lines `SHOWN:LINE:COLUMN: POINTER: message`, each at the node its pointer
/// names in `doc` (see [`Document::pointer`]), or in the file it names; `SHOWN: POINTER:
/// message` without a document, as for evals a server listed.
pub fn describe(problems: &Problems, doc: Option<&Document>, shown: &str) -> Vec<String> {
    problems
        .iter()
        .map(|(pointer, message)| {
            if let Some((file, pointer)) = pointer.split_once('#') {
                let path = Path::new(shown).parent().unwrap_or(Path::new("")).join(file);
                if let Some((head, rest)) = pointer.split_once(':') {
                    let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
                    if let Ok(at_line) = rest[..digits].parse() {
                        let shown_at = format!("{head}{}", &rest[digits..]);
                        return line(
                            &path.display().to_string(),
                            Some(Position { line: at_line, column: 1 }),
                            &shown_at,
                            message,
                        );
                    }
                }
                let text = crate::files::read::text(&path, crate::files::read::TEXT).unwrap_or_default();
                let position = if path.extension().is_some_and(|e| e == "jsonl") {
                    jsonl_position(&text, pointer)
                } else {
                    Document::parse(&text).ok().and_then(|d| d.pointer(pointer))
                };
                return line(&path.display().to_string(), position, pointer, message);
            }
            match doc {
                Some(doc) => {
                    line(shown, doc.pointer(pointer).or(Some(Position { line: 1, column: 1 })), pointer, message)
                }
                None => format!("{shown}: {}: {message}", if pointer.is_empty() { "/" } else { pointer }),
            }
        })
        .collect()
}

/// In a file of one JSON object a line, `/N/rest` is `/rest` in the N-th object.
fn jsonl_position(text: &str, pointer: &str) -> Option<Position> {
    let rest = pointer.strip_prefix('/')?;
    let (n, rest) = rest.split_once('/').map_or((rest, ""), |(n, r)| (n, r));
    let (line, object) = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).nth(n.parse().ok()?)?;
    let at_line = Position { line: line + 1, column: 1 };
    let inner = Document::parse(object).ok().and_then(|d| d.pointer(&format!("/{rest}")));
    Some(inner.map_or(at_line, |p| Position { line: line + 1, column: p.column }))
}

fn line(shown: &str, position: Option<Position>, pointer: &str, message: &str) -> String {
    let at = if pointer.is_empty() { "/" } else { pointer };
    let p = position.unwrap_or(Position { line: 1, column: 1 });
    format!("{shown}:{}:{}: {at}: {message}", p.line, p.column)
}
