//! A foreign file's problems, each a JSON pointer into the file and a message, shown at the
//! line and column the pointer names.

use crate::source::Position;
use crate::yaml::Document;

/// Problems with a foreign file, as `(JSON pointer, message)`.
pub type Problems = Vec<(String, String)>;

/// `problems` as lines `SHOWN:LINE:COLUMN: POINTER: message`, each at the node its pointer
/// names in `doc` (see [`Document::pointer`]); `SHOWN: POINTER: message` without a
/// document, as for evals a server listed.
pub fn describe(problems: &Problems, doc: Option<&Document>, shown: &str) -> Vec<String> {
    problems
        .iter()
        .map(|(pointer, message)| {
            let at = if pointer.is_empty() { "/" } else { pointer };
            match doc {
                Some(doc) => {
                    let p = doc.pointer(pointer).unwrap_or(Position { line: 1, column: 1 });
                    format!("{shown}:{}:{}: {at}: {message}", p.line, p.column)
                }
                None => format!("{shown}: {at}: {message}"),
            }
        })
        .collect()
}
